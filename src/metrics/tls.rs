//! TLS handshakes: how each ended, how long it took, and when each served
//! certificate expires. Process-wide, fed with plain values by the server's
//! handshake (`server::engine::tls::accept`) and by the generation that loaded the
//! certificates; this module imports nothing of `server/` or `tls/`.

use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;

/// How a handshake ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A full handshake.
    Full,
    /// A resumed session (ticket or session id).
    Resumed,
    /// The client's bytes were not an acceptable handshake (an alert).
    TlsError,
    /// The client closed or the socket failed.
    Closed,
    /// No progress within `client_header_timeout`.
    TimedOut,
    /// `ssl_reject_handshake`, or no certificate for the name.
    Rejected,
    /// The `ssl` pool's queue was full.
    PoolFull,
    /// Plain HTTP to a TLS port (answered 497).
    PlainHttp,
}

impl Outcome {
    /// Every outcome, in the order reported.
    pub const ALL: [Outcome; 8] = [
        Outcome::Full,
        Outcome::Resumed,
        Outcome::TlsError,
        Outcome::Closed,
        Outcome::TimedOut,
        Outcome::Rejected,
        Outcome::PoolFull,
        Outcome::PlainHttp,
    ];

    /// The label on the status page.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Full => "full",
            Outcome::Resumed => "resumed",
            Outcome::TlsError => "tls_error",
            Outcome::Closed => "closed",
            Outcome::TimedOut => "timed_out",
            Outcome::Rejected => "rejected",
            Outcome::PoolFull => "pool_full",
            Outcome::PlainHttp => "plain_http",
        }
    }
}

static COUNTS: [AtomicU64; 8] = [const { AtomicU64::new(0) }; 8];

/// Handshake times that succeeded, in microseconds (one process-wide
/// histogram: a handshake is rare beside a request, and its lock is held
/// for one record).
static TIMES: Mutex<Option<Histogram<u64>>> = Mutex::new(None);

/// The certificates served now: (server name, certificate file, notAfter
/// in seconds since the epoch), as the last generation loaded them.
static CERTS: Mutex<Vec<(String, String, i64)>> = Mutex::new(Vec::new());

/// Counts a handshake that ended with `outcome` after `took` (recorded in
/// the time histogram for the ones that succeeded).
pub fn handshake(outcome: Outcome, took: Duration) {
    COUNTS[outcome as usize].fetch_add(1, Ordering::Relaxed);
    if matches!(outcome, Outcome::Full | Outcome::Resumed) {
        let mut t = TIMES.lock().unwrap_or_else(|e| e.into_inner());
        let h = t.get_or_insert_with(|| {
            Histogram::new_with_bounds(1, 60_000_000, 2).expect("valid histogram bounds")
        });
        let _ = h.record(u64::try_from(took.as_micros()).unwrap_or(u64::MAX).max(1));
    }
}

/// Handshakes that ended with `outcome` since the process started.
pub fn count(outcome: Outcome) -> u64 {
    COUNTS[outcome as usize].load(Ordering::Relaxed)
}

/// The share of successful handshakes that resumed a session (0 before any).
pub fn resumption_ratio() -> f64 {
    let full = count(Outcome::Full);
    let resumed = count(Outcome::Resumed);
    if full + resumed == 0 {
        0.0
    } else {
        resumed as f64 / (full + resumed) as f64
    }
}

/// Replaces the list of certificates served (a generation starts).
pub fn set_certificates(list: Vec<(String, String, i64)>) {
    *CERTS.lock().unwrap_or_else(|e| e.into_inner()) = list;
}

/// Adds or updates one certificate served: one loaded by a handshake
/// (names with variables) or held for a server (an ACME order's).
pub fn note_certificate(server: &str, file: &str, not_after: i64) {
    let mut certs = CERTS.lock().unwrap_or_else(|e| e.into_inner());
    match certs.iter_mut().find(|(s, f, _)| s == server && f == file) {
        Some(entry) => entry.2 = not_after,
        None => certs.push((server.to_string(), file.to_string(), not_after)),
    }
}

/// Appends the TLS metrics in Prometheus text.
pub fn render(out: &mut String) {
    let _ = writeln!(
        out,
        "# HELP nowait_tls_handshakes_total TLS handshakes, by how they ended."
    );
    let _ = writeln!(out, "# TYPE nowait_tls_handshakes_total counter");
    for o in Outcome::ALL {
        let _ = writeln!(
            out,
            "nowait_tls_handshakes_total{{result=\"{}\"}} {}",
            o.name(),
            count(o)
        );
    }
    let _ = writeln!(
        out,
        "# HELP nowait_tls_resumption_ratio Share of the successful handshakes that resumed a session."
    );
    let _ = writeln!(out, "# TYPE nowait_tls_resumption_ratio gauge");
    let _ = writeln!(out, "nowait_tls_resumption_ratio {}", resumption_ratio());
    super::buckets::header(
        out,
        "nowait_tls_handshake_seconds",
        "Time from a TLS connection's first byte to its handshake's end (successful handshakes).",
    );
    let times = TIMES.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let empty;
    let h = match &times {
        Some(h) => h,
        None => {
            empty = Histogram::<u64>::new_with_bounds(1, 60_000_000, 2)
                .expect("valid histogram bounds");
            &empty
        }
    };
    super::buckets::series(out, "nowait_tls_handshake_seconds", "", h);
    let _ = writeln!(
        out,
        "# HELP nowait_tls_certificate_expiry_seconds When each served certificate stops being valid (Unix time)."
    );
    let _ = writeln!(out, "# TYPE nowait_tls_certificate_expiry_seconds gauge");
    for (server, file, not_after) in CERTS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        let _ = writeln!(
            out,
            "nowait_tls_certificate_expiry_seconds{{server=\"{}\",file=\"{}\"}} {not_after}",
            escape(server),
            escape(file)
        );
    }
}

/// A label value as the text format wants it.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_times_and_certificates_render() {
        handshake(Outcome::Full, Duration::from_millis(2));
        handshake(Outcome::Resumed, Duration::from_micros(300));
        handshake(Outcome::Closed, Duration::from_millis(1));
        set_certificates(vec![(
            "localhost".into(),
            "/etc/a\"b.crt".into(),
            4102444800,
        )]);
        let mut out = String::new();
        render(&mut out);
        assert!(
            out.contains("nowait_tls_handshakes_total{result=\"full\"}"),
            "{out}"
        );
        assert!(out.contains("nowait_tls_handshake_seconds_count"), "{out}");
        assert!(
            out.contains(
                "nowait_tls_certificate_expiry_seconds{server=\"localhost\",file=\"/etc/a\\\"b.crt\"} 4102444800"
            ),
            "{out}"
        );
        assert!(resumption_ratio() > 0.0 && resumption_ratio() < 1.0);
    }
}
