//! One certificate's staple (nginx's `ngx_ssl_stapling_t`): the response
//! handshakes send while it is valid, and when to ask the responder again
//! — as `ngx_ssl_stapling_ocsp_handler` sets it: before the response
//! expires, but not sooner than in five minutes and at least every hour;
//! five minutes after a failure.
//!
//! Handshakes read it from the handshake pool's threads while one fetch
//! on a loop updates it: a read lock taken once per handshake, and a mutex
//! around the refresh state, held for a comparison.

use std::sync::{Arc, Mutex, MutexGuard, RwLock};

/// How long after a failure the responder is asked again (nginx's
/// `now + 300`).
pub const RETRY_AFTER_ERROR: i64 = 300;
/// The soonest a good response is refreshed.
pub const REFRESH_MIN: i64 = 300;
/// The latest a good response is refreshed.
pub const REFRESH_MAX: i64 = 3600;
/// How long before `nextUpdate` a response is refreshed.
pub const REFRESH_BEFORE_EXPIRY: i64 = 300;

/// A response to staple.
#[derive(Debug, PartialEq, Eq)]
pub struct Stapled {
    /// The `OCSPResponse`'s DER, as sent.
    pub der: Vec<u8>,
    /// Stapled while the clock is at most this (seconds since the epoch).
    pub valid: i64,
}

/// When to fetch.
#[derive(Debug, Default)]
struct Refresh {
    /// A fetch is under way (`staple->loading`).
    loading: bool,
    /// No fetch before this (`staple->refresh`); 0: at the first
    /// handshake.
    at: i64,
}

/// A certificate's staple.
#[derive(Debug, Default)]
pub struct Staple {
    current: RwLock<Option<Arc<Stapled>>>,
    refresh: Mutex<Refresh>,
}

impl Staple {
    /// No response yet.
    pub fn new() -> Staple {
        Staple::default()
    }

    /// A response stapled for good (`ssl_stapling_file`: read once,
    /// never refreshed).
    pub fn fixed(der: Vec<u8>) -> Staple {
        Staple {
            current: RwLock::new(Some(Arc::new(Stapled {
                der,
                valid: i64::MAX,
            }))),
            refresh: Mutex::new(Refresh {
                loading: false,
                at: i64::MAX,
            }),
        }
    }

    /// The response to staple at `now`, if one is valid.
    pub fn current(&self, now: i64) -> Option<Arc<Stapled>> {
        let current = self.current.read().unwrap_or_else(|e| e.into_inner());
        current.as_ref().filter(|s| s.valid >= now).cloned()
    }

    fn state(&self) -> MutexGuard<'_, Refresh> {
        self.refresh.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a fetch should start at `now`; if so it is under way from
    /// now on, and must end in [`Staple::store`], [`Staple::failed`] or
    /// [`Staple::abandoned`].
    pub fn begin(&self, now: i64) -> bool {
        let mut s = self.state();
        if s.loading || s.at >= now {
            return false;
        }
        s.loading = true;
        true
    }

    /// A fetch at `now` brought `der`, valid until `valid`.
    pub fn store(&self, der: Vec<u8>, valid: i64, now: i64) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) =
            Some(Arc::new(Stapled { der, valid }));
        let mut s = self.state();
        s.loading = false;
        s.at = valid
            .saturating_sub(REFRESH_BEFORE_EXPIRY)
            .min(now + REFRESH_MAX)
            .max(now + REFRESH_MIN);
    }

    /// A fetch at `now` failed: the current response (if any) stays, and
    /// the responder is asked again later.
    pub fn failed(&self, now: i64) {
        let mut s = self.state();
        s.loading = false;
        s.at = now + RETRY_AFTER_ERROR;
    }

    /// A fetch ended without an outcome (its loop stopped): the next
    /// handshake may start another.
    pub fn abandoned(&self) {
        self.state().loading = false;
    }

    /// When the next fetch may start (for tests and the log).
    pub fn refresh_at(&self) -> i64 {
        self.state().at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    #[test]
    fn the_first_handshake_starts_one_fetch() {
        let s = Staple::new();
        assert!(s.current(NOW).is_none());
        assert!(s.begin(NOW));
        assert!(!s.begin(NOW), "one fetch at a time");
        s.failed(NOW);
        assert!(
            !s.begin(NOW + RETRY_AFTER_ERROR),
            "five minutes after a failure"
        );
        assert!(s.begin(NOW + RETRY_AFTER_ERROR + 1));
        s.abandoned();
        assert!(s.begin(NOW + RETRY_AFTER_ERROR + 1));
    }

    #[test]
    fn a_response_is_refreshed_within_an_hour_and_before_it_expires() {
        let s = Staple::new();
        assert!(s.begin(NOW));
        s.store(vec![1], NOW + 7 * 86400, NOW);
        assert_eq!(s.refresh_at(), NOW + REFRESH_MAX);
        assert_eq!(
            s.current(NOW + 7 * 86400).map(|c| c.der.clone()),
            Some(vec![1])
        );
        assert!(
            s.current(NOW + 7 * 86400 + 1).is_none(),
            "not after nextUpdate"
        );
        assert!(s.begin(NOW + REFRESH_MAX + 1));
        s.store(vec![2], NOW + 1000, NOW);
        assert_eq!(s.refresh_at(), NOW + 1000 - REFRESH_BEFORE_EXPIRY);
        assert!(s.begin(NOW + 1000));
        s.store(vec![3], NOW + 60, NOW);
        assert_eq!(
            s.refresh_at(),
            NOW + REFRESH_MIN,
            "never sooner than five minutes"
        );
        assert!(s.begin(NOW + 1000));
        s.store(vec![4], i64::MAX, NOW);
        assert_eq!(s.refresh_at(), NOW + REFRESH_MAX, "no nextUpdate: hourly");
    }

    #[test]
    fn a_failed_refresh_keeps_the_staple() {
        let s = Staple::new();
        assert!(s.begin(NOW));
        s.store(vec![1], NOW + 86400, NOW);
        assert!(s.begin(NOW + REFRESH_MAX + 1));
        s.failed(NOW + REFRESH_MAX + 1);
        assert!(s.current(NOW + REFRESH_MAX + 1).is_some());
    }

    #[test]
    fn a_file_is_stapled_for_good_and_never_fetched() {
        let s = Staple::fixed(vec![9]);
        assert!(s.current(i64::MAX).is_some());
        assert!(!s.begin(NOW));
    }
}
