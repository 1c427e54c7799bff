//! When an order is worked on, as nginx-acme schedules it: a certificate
//! is renewed at a random point of a window around two thirds of its
//! lifetime (half of it for certificates valid 10 days or less), ±2% of
//! the lifetime; a failed attempt is tried again after 1, 10 and 100
//! minutes, then daily, each ±2%; the issuer's thread wakes at least 30
//! seconds apart.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The shortest sleep of an issuer's thread (`ACME_MIN_INTERVAL`).
pub const MIN_INTERVAL: Duration = Duration::from_secs(30);
/// The longest (`ACME_MAX_INTERVAL`).
pub const MAX_INTERVAL: Duration = Duration::from_secs(24 * 60 * 60);
/// The last retry interval (`RENEWAL_RETRY_MAX`).
pub const RETRY_MAX: Duration = Duration::from_secs(24 * 60 * 60);
/// Lifetimes above this renew at two thirds, others at half.
const SHORT_LIFETIME: i64 = 10 * 24 * 60 * 60;
/// The window's half width and the retries' jitter, in percent.
const JITTER_PCT: i64 = 2;

/// Seconds since the epoch.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A random number below `n` (0 for `n` 0).
fn random_below(n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let mut b = [0u8; 8];
    let _ = aws_lc_rs::rand::fill(&mut b);
    u64::from_ne_bytes(b) % n
}

/// nginx-acme's renewal window for a certificate valid from `start` to
/// `end` (`renewal_window_from_validity`).
pub fn renewal_window(start: i64, end: i64) -> (i64, i64) {
    let lifetime = (end - start).max(0);
    let at = if lifetime > SHORT_LIFETIME {
        lifetime * 2 / 3
    } else {
        lifetime / 2
    };
    let var = lifetime * JITTER_PCT / 100;
    let (lo, hi) = (start + at - var, start + at + var);
    (lo, hi.max(lo))
}

/// A random point of the window (`Interval::random_point`).
pub fn renewal_time(start: i64, end: i64) -> i64 {
    let (lo, hi) = renewal_window(start, end);
    lo + random_below((hi - lo) as u64) as i64
}

/// When to try again after `fails` failures before this one.
pub fn retry_time(fails: u32) -> i64 {
    let base = match fails {
        0 => 60,
        1 => 600,
        2 => 6000,
        _ => RETRY_MAX.as_secs() as i64,
    };
    let var = base * JITTER_PCT / 100;
    now() + base - var + random_below((var * 2) as u64) as i64
}

/// `2026-12-01T10:00:00Z`, as nginx-acme prints a time.
pub fn format(t: i64) -> String {
    let days = t.div_euclid(86400);
    let secs = t.rem_euclid(86400);
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_90_day_certificate_renews_near_day_60() {
        let day = 86400;
        let (lo, hi) = renewal_window(0, 90 * day);
        assert_eq!(lo, 60 * day - 90 * day * 2 / 100);
        assert_eq!(hi, 60 * day + 90 * day * 2 / 100);
        let t = renewal_time(0, 90 * day);
        assert!((lo..=hi).contains(&t));
    }

    #[test]
    fn a_short_certificate_renews_at_half_its_life() {
        assert_eq!(renewal_window(1000, 1100), (1048, 1052));
    }

    #[test]
    fn retries_back_off() {
        let n = now();
        assert!((n + 58..=n + 62).contains(&retry_time(0)));
        assert!((n + 588..=n + 612).contains(&retry_time(1)));
        assert!(retry_time(5) > n + 80_000);
    }

    #[test]
    fn times_are_printed_in_utc() {
        assert_eq!(format(0), "1970-01-01T00:00:00Z");
        assert_eq!(format(1_798_761_600), "2027-01-01T00:00:00Z");
    }
}
