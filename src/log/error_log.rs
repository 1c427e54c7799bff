//! [`ErrorLog`]: nginx's error-log lines, and the stderr form used before
//! the configuration is loaded.
//!
//! ```text
//! 2026/11/22 01:47:34 [error] 12345#12346: *7 open() "/x" failed (2: No such file or directory), client: 127.0.0.1, server: localhost, request: "GET /x HTTP/1.1", host: "localhost"
//! nowait: [emerg] unknown directive "foo" in /etc/nowait/nowait.conf:12
//! ```
//!
//! The message (including nginx's `, client: ..., request: ...` context) is
//! the caller's; this file adds the time, level, `pid#tid` and `*connection`.

use super::clock;
use super::level::Level;
use super::writer::LogWriter;
use crate::sys::process::{getpid, gettid};
use std::cell::{Cell, RefCell};
use std::fmt;
use std::io::Write;
use std::sync::Arc;

/// Longest error-log line in bytes, newline excluded; longer messages are cut
/// (nginx's `NGX_MAX_ERROR_STR`), so one runaway message cannot fill a buffer.
pub const MAX_LINE: usize = 2048;

/// One error-log destination and its threshold.
#[derive(Clone, Debug)]
struct Sink {
    writer: Arc<LogWriter>,
    threshold: Level,
}

/// An error log: one or more destinations, each with its own threshold
/// (nginx allows several `error_log` directives on one level). Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct ErrorLog {
    sinks: Vec<Sink>,
}

thread_local! {
    /// Reused line buffer: formatting allocates nothing once warmed up.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// `gettid()`, once per thread.
    static TID: Cell<u32> = const { Cell::new(0) };
}

fn tid() -> u32 {
    TID.with(|t| {
        if t.get() == 0 {
            t.set(gettid());
        }
        t.get()
    })
}

impl ErrorLog {
    /// An error log that writes nothing (until [`ErrorLog::add`]).
    pub fn new() -> ErrorLog {
        ErrorLog::default()
    }

    /// Adds a destination receiving messages at `threshold` or more severe.
    pub fn add(&mut self, writer: Arc<LogWriter>, threshold: Level) {
        self.sinks.push(Sink { writer, threshold });
    }

    /// The destinations' writers.
    pub fn writers(&self) -> impl Iterator<Item = &Arc<LogWriter>> {
        self.sinks.iter().map(|s| &s.writer)
    }

    /// Whether any destination takes `level`: check before building an
    /// expensive message (`debug`).
    pub fn enabled(&self, level: Level) -> bool {
        self.sinks.iter().any(|s| level.passes(s.threshold))
    }

    /// Each destination with the number of the last line it accepted, to
    /// await with [`LogWriter::written`]: a connection about to close waits
    /// (briefly) for its request's error lines, as nginx writes them before
    /// it answers. A destination that took no line answers at once.
    pub fn pending(&self) -> Vec<(Arc<LogWriter>, u64)> {
        self.sinks
            .iter()
            .map(|s| (Arc::clone(&s.writer), s.writer.last_accepted()))
            .collect()
    }

    /// Logs `msg` at `level`, for connection number `conn` if any. Never
    /// blocks: a full destination drops the line (see [`LogWriter`]).
    pub fn log(&self, level: Level, conn: Option<u64>, msg: fmt::Arguments<'_>) {
        if !self.enabled(level) {
            return;
        }
        SCRATCH.with(|buf| {
            let mut buf = buf.borrow_mut();
            buf.clear();
            clock::with_now(|t| {
                format_line(&mut buf, &t.error_log, level, getpid(), tid(), conn, msg)
            });
            for s in self.sinks.iter().filter(|s| level.passes(s.threshold)) {
                s.writer.write_line_now(&buf);
            }
        });
    }
}

/// Formats one error-log line (without the newline) into `out`, cut at
/// [`MAX_LINE`] bytes on a character boundary.
pub fn format_line(
    out: &mut Vec<u8>,
    time: &str,
    level: Level,
    pid: u32,
    tid: u32,
    conn: Option<u64>,
    msg: fmt::Arguments<'_>,
) {
    let start = out.len();
    // Writing into a Vec cannot fail.
    let _ = write!(out, "{time} [{level}] {pid}#{tid}: ");
    if let Some(c) = conn {
        let _ = write!(out, "*{c} ");
    }
    let _ = out.write_fmt(msg);
    if out.len() - start > MAX_LINE {
        let mut end = start + MAX_LINE;
        // Back up to a UTF-8 boundary: never leave half a character.
        while end > start && (out[end] & 0xC0) == 0x80 {
            end -= 1;
        }
        out.truncate(end);
    }
}

/// `nowait: [level] message`: how messages read before an error log exists
/// (configuration errors, `-t` results), as nginx prints `nginx: [emerg] ...`.
pub fn startup_message(level: Level, msg: fmt::Arguments<'_>) -> String {
    format!("{}: [{level}] {msg}", crate::NAME)
}

/// The error log named by `-e`, opened before the configuration is read
/// (nginx's `ngx_log_init`): start-up messages go there as well as to
/// stderr, so a configuration that fails to load leaves its reason in the
/// log an operator (or nginx's test harness) reads.
static STARTUP_FILE: std::sync::Mutex<Option<std::fs::File>> = std::sync::Mutex::new(None);

/// Opens `path` (created, appended to) as the start-up error log. The
/// error is nginx's `could not open error log file: open() "…" failed (…)`,
/// which the caller prints as an alert and goes on without the file.
pub fn open_startup_file(path: &std::path::Path) -> Result<(), String> {
    let f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| {
            format!(
                "could not open error log file: open() \"{}\" failed ({})",
                path.display(),
                crate::sys::error::errno_text(&e)
            )
        })?;
    *STARTUP_FILE.lock().unwrap_or_else(|p| p.into_inner()) = Some(f);
    Ok(())
}

/// Writes [`startup_message`] and a newline to stderr, and the message in
/// the error log's format to the `-e` file if one is open; synchronously.
/// Only before the loops start (or on the way out): it may block.
pub fn write_startup_message(level: Level, msg: fmt::Arguments<'_>) {
    let line = startup_message(level, msg) + "\n";
    // Nowhere left to report a failing stderr.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    write_startup_file(level, msg);
}

/// Prints a message as nginx does before its logs are open: `nowait: …`.
/// A message with a level (`[emerg] …`) also goes to the `-e` error log,
/// as nginx's do.
pub fn say(msg: &str) {
    eprintln!("{}: {msg}", crate::NAME);
    if let Some((level, text)) = msg
        .strip_prefix('[')
        .and_then(|m| m.split_once("] "))
        .and_then(|(l, t)| Some((Level::from_name(l)?, t)))
    {
        write_startup_file(level, format_args!("{text}"));
    }
}

/// Writes one message to the `-e` file only (see [`write_startup_message`]).
pub fn write_startup_file(level: Level, msg: fmt::Arguments<'_>) {
    let mut guard = STARTUP_FILE.lock().unwrap_or_else(|p| p.into_inner());
    let Some(f) = guard.as_mut() else {
        return;
    };
    let time = crate::sys::time::LocalTime::now()
        .map(|t| t.error_log())
        .unwrap_or_default();
    let mut out = Vec::new();
    format_line(&mut out, &time, level, getpid(), tid(), None, msg);
    out.push(b'\n');
    let _ = f.write_all(&out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::writer::{DEFAULT_BUFFER_BYTES, Destination};

    #[test]
    fn line_matches_nginx_format() {
        let mut out = Vec::new();
        format_line(
            &mut out,
            "2026/11/22 01:47:34",
            Level::Error,
            12345,
            12346,
            Some(7),
            format_args!(
                "open() \"/x\" failed (2: No such file or directory), client: 127.0.0.1, server: localhost, request: \"GET /x HTTP/1.1\", host: \"localhost\""
            ),
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "2026/11/22 01:47:34 [error] 12345#12346: *7 open() \"/x\" failed (2: No such file or directory), client: 127.0.0.1, server: localhost, request: \"GET /x HTTP/1.1\", host: \"localhost\""
        );
        let mut out = Vec::new();
        format_line(
            &mut out,
            "2026/11/22 01:47:34",
            Level::Notice,
            1,
            2,
            None,
            format_args!("signal 1 (SIGHUP) received"),
        );
        assert_eq!(
            out,
            b"2026/11/22 01:47:34 [notice] 1#2: signal 1 (SIGHUP) received"
        );
    }

    #[test]
    fn long_lines_are_cut_on_a_character_boundary() {
        let mut out = Vec::new();
        let long = "é".repeat(MAX_LINE);
        format_line(
            &mut out,
            "t",
            Level::Error,
            1,
            2,
            None,
            format_args!("{long}"),
        );
        assert!(out.len() <= MAX_LINE);
        assert!(String::from_utf8(out).is_ok());
    }

    #[test]
    fn startup_form_names_the_program() {
        assert_eq!(
            startup_message(
                Level::Emerg,
                format_args!("unknown directive \"foo\" in /etc/x.conf:12")
            ),
            "nowait: [emerg] unknown directive \"foo\" in /etc/x.conf:12"
        );
    }

    #[test]
    fn thresholds_filter_per_destination() {
        let dir = std::env::temp_dir();
        let (pa, pb) = (
            dir.join(format!("nowait-errlog-a-{}.log", std::process::id())),
            dir.join(format!("nowait-errlog-b-{}.log", std::process::id())),
        );
        let a =
            Arc::new(LogWriter::open(Destination::File(pa.clone()), DEFAULT_BUFFER_BYTES).unwrap());
        let b =
            Arc::new(LogWriter::open(Destination::File(pb.clone()), DEFAULT_BUFFER_BYTES).unwrap());
        let mut log = ErrorLog::new();
        assert!(!log.enabled(Level::Emerg));
        log.add(Arc::clone(&a), Level::Error);
        log.add(Arc::clone(&b), Level::Info);
        assert!(log.enabled(Level::Info) && !log.enabled(Level::Debug));
        log.log(Level::Info, None, format_args!("client closed connection"));
        log.log(Level::Error, Some(3), format_args!("boom {}", 42));
        log.log(Level::Debug, None, format_args!("nowhere"));
        a.flush();
        b.flush();
        let (ta, tb) = (
            std::fs::read_to_string(&pa).unwrap(),
            std::fs::read_to_string(&pb).unwrap(),
        );
        std::fs::remove_file(&pa).unwrap();
        std::fs::remove_file(&pb).unwrap();
        let who = format!("{}#{}: ", getpid(), gettid());
        assert_eq!(ta.lines().count(), 1, "{ta}");
        assert!(ta.ends_with(&format!(" [error] {who}*3 boom 42\n")), "{ta}");
        assert_eq!(tb.lines().count(), 2, "{tb}");
        assert!(
            tb.lines()
                .next()
                .unwrap()
                .ends_with(&format!(" [info] {who}client closed connection"))
        );
        // The timestamp is the error-log form of some local time.
        let ts = &ta[..19];
        assert_eq!(
            (&ts[4..5], &ts[7..8], &ts[10..11], &ts[13..14]),
            ("/", "/", " ", ":")
        );
    }
}
