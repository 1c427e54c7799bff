//! Per upstream server: requests, failures, response time, for the status
//! page. Owned by the process (they survive reloads) and fed by the proxy
//! as each exchange with a server ends.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;

/// One upstream server's measurements.
#[derive(Debug)]
pub struct PeerMetrics {
    /// Exchanges begun with the server.
    requests: AtomicU64,
    /// Exchanges that failed (connect, send, timeout, invalid response).
    failures: AtomicU64,
    /// Time from the start of an exchange to its end, µs.
    response: Mutex<Histogram<u64>>,
}

impl Default for PeerMetrics {
    fn default() -> Self {
        PeerMetrics {
            requests: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            response: Mutex::new(super::worker::histogram()),
        }
    }
}

impl PeerMetrics {
    /// One exchange ended, `ok` or not, after `took`.
    pub fn record(&self, ok: bool, took: Duration) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.failures.fetch_add(1, Ordering::Relaxed);
        }
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.response
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .saturating_record(micros.max(1));
    }

    /// A copy of the figures, with the connection counts the caller knows.
    pub fn sample(&self, upstream: &str, peer: &str, active: u64, idle: u64) -> PeerSample {
        PeerSample {
            upstream: upstream.to_string(),
            peer: peer.to_string(),
            requests: self.requests.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            active,
            idle,
            response: self
                .response
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }
}

/// One upstream server's figures at one moment, as the status page shows
/// them.
#[derive(Clone, Debug)]
pub struct PeerSample {
    /// The upstream group.
    pub upstream: String,
    /// The server (`127.0.0.1:8081`).
    pub peer: String,
    /// Exchanges begun.
    pub requests: u64,
    /// Exchanges that failed.
    pub failures: u64,
    /// Connections in use now.
    pub active: u64,
    /// Idle keep-alive connections now.
    pub idle: u64,
    /// Exchange times, µs.
    pub response: Histogram<u64>,
}
