//! Per log destination: lines written, dropped and lost to failed writes,
//! as plain numbers for the status page. A log writer drops a line rather
//! than make a loop wait on a full buffer (`log/writer.rs`); these counters
//! are where that loss shows. The server feeds a [`LogSample`] per
//! destination when the page is made; this module does not know the log
//! writers' types.

use std::fmt::Write;

/// What the `log` label says for the writer of access logs whose file name
/// has variables (one queue for all the files it writes).
pub const DYNAMIC_LOG: &str = "(variables)";

/// One destination's numbers at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogSample {
    /// The file's path, `stderr`, or [`DYNAMIC_LOG`].
    pub log: String,
    /// Lines handed to `write()` successfully.
    pub written: u64,
    /// Lines dropped because the writer's buffer was full (or it had closed).
    pub dropped: u64,
    /// `write()` calls that failed (ENOSPC, EIO…); their lines are lost.
    pub write_errors: u64,
}

/// A counter of the section: name, help, and how to read it from a sample.
type Counter = (&'static str, &'static str, fn(&LogSample) -> u64);

/// The counters of the section.
const COUNTERS: [Counter; 3] = [
    (
        "nowait_log_lines_written_total",
        "Log lines written to a destination.",
        |s| s.written,
    ),
    (
        "nowait_log_lines_dropped_total",
        "Log lines dropped, never waited for: the destination's buffer was full (a slow disk).",
        |s| s.dropped,
    ),
    (
        "nowait_log_write_errors_total",
        "write() calls to a log destination that failed; their lines are lost.",
        |s| s.write_errors,
    ),
];

/// Appends the log section to the page (nothing without destinations).
pub fn render(out: &mut String, samples: &[LogSample]) {
    if samples.is_empty() {
        return;
    }
    for (name, help, get) in COUNTERS {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} counter");
        for s in samples {
            let _ = writeln!(out, "{name}{{log=\"{}\"}} {}", label(&s.log), get(s));
        }
    }
}

/// A label value escaped as the text format requires (`\`, `"`, newline).
fn label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_destination_has_its_three_counters() {
        let mut out = String::new();
        render(
            &mut out,
            &[
                LogSample {
                    log: "/var/log/a \"b\".log".into(),
                    written: 7,
                    dropped: 3,
                    write_errors: 1,
                },
                LogSample {
                    log: DYNAMIC_LOG.into(),
                    dropped: 2,
                    ..LogSample::default()
                },
            ],
        );
        assert!(out.contains("# TYPE nowait_log_lines_dropped_total counter\n"));
        assert!(
            out.contains("nowait_log_lines_dropped_total{log=\"/var/log/a \\\"b\\\".log\"} 3\n")
        );
        assert!(
            out.contains("nowait_log_lines_written_total{log=\"/var/log/a \\\"b\\\".log\"} 7\n")
        );
        assert!(
            out.contains("nowait_log_write_errors_total{log=\"/var/log/a \\\"b\\\".log\"} 1\n")
        );
        assert!(out.contains("nowait_log_lines_dropped_total{log=\"(variables)\"} 2\n"));
    }

    #[test]
    fn no_destinations_no_section() {
        let mut out = String::new();
        render(&mut out, &[]);
        assert_eq!(out, "");
    }
}
