//! `limit_rate` and `limit_rate_after`: pacing a response to the client, as
//! nginx's write filter does (`ngx_http_write_filter_module.c`).
//!
//! Owns: how many bytes the next write may carry and how long to wait
//! before it. Must not: write (the senders ask it before each write).
//!
//! nginx's arithmetic, kept: the bytes allowed so far are
//! `rate × (whole seconds since the request began + 1)` past the first
//! `limit_rate_after` bytes (the head counts); none allowed means waiting
//! `−allowance × 1000 / rate + 1` ms; and after each write the next waits
//! for the time the bytes just written take at the rate.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// The pace of one response.
#[derive(Debug)]
pub struct Pace {
    /// Bytes per second (> 0).
    rate: u64,
    /// Bytes sent at full speed first.
    after: u64,
    /// When the request began (nginx's `r->start_sec`).
    start: Instant,
    /// Bytes written so far, head included (nginx's `c->sent`).
    sent: Cell<u64>,
    /// No write before this.
    next: Cell<Option<Instant>>,
}

impl Pace {
    /// A pace of `rate` bytes per second after `after` bytes, for a request
    /// that began at `start`; `None` when `rate` is 0 (no limit).
    pub fn new(rate: u64, after: u64, start: Instant) -> Option<Pace> {
        (rate > 0).then(|| Pace {
            rate,
            after,
            start,
            sent: Cell::new(0),
            next: Cell::new(None),
        })
    }

    /// How many bytes may be written at `now`, or how long to wait first.
    pub fn allowance(&self, now: Instant) -> Result<u64, Duration> {
        if let Some(at) = self.next.get() {
            if at > now {
                return Err(at - now);
            }
        }
        let secs = now.saturating_duration_since(self.start).as_secs() + 1;
        let limit = (self.rate.saturating_mul(secs) as i128)
            - (self.sent.get() as i128 - self.after as i128);
        if limit <= 0 {
            let ms = (-limit) * 1000 / self.rate as i128 + 1;
            return Err(Duration::from_millis(ms as u64));
        }
        Ok(limit as u64)
    }

    /// Records `n` bytes written at `now`: the next write waits for them.
    pub fn wrote(&self, n: usize, now: Instant) {
        let before = self.sent.get().saturating_sub(self.after);
        let sent = self.sent.get() + n as u64;
        self.sent.set(sent);
        let after = sent.saturating_sub(self.after);
        let ms = (after - before) * 1000 / self.rate;
        if ms > 0 {
            self.next.set(Some(now + Duration::from_millis(ms)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_second_and_the_free_bytes_go_at_once() {
        let t0 = Instant::now();
        let p = Pace::new(1000, 256, t0).unwrap();
        assert_eq!(p.allowance(t0), Ok(1256));
        p.wrote(200, t0);
        // Within `after`: no wait.
        assert_eq!(p.allowance(t0), Ok(1056));
        p.wrote(1056, t0);
        // 1000 bytes past `after` take a second.
        assert_eq!(p.allowance(t0), Err(Duration::from_millis(1000)));
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(p.allowance(t1), Ok(1000));
    }

    #[test]
    fn no_rate_no_pace() {
        assert!(Pace::new(0, 0, Instant::now()).is_none());
    }

    #[test]
    fn an_exhausted_allowance_waits_as_nginx() {
        let t0 = Instant::now();
        let p = Pace::new(100, 0, t0).unwrap();
        p.sent.set(150);
        // 100 allowed in the first second, 150 sent: 50 over, 501 ms.
        assert_eq!(p.allowance(t0), Err(Duration::from_millis(501)));
    }
}
