//! Timestamps for log lines, cached per thread and per second.
//!
//! glibc's `localtime_r` takes a process-wide lock; formatting per line from
//! every worker would make the loops contend on it. Each thread instead keeps
//! the strings of the current second and recomputes them when the second
//! changes (as nginx's `ngx_time_update` does once per loop iteration).

use crate::sys::time::LocalTime;
use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

/// The current second in the three formats the logs use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timestamps {
    /// Seconds since the epoch these strings describe.
    pub epoch: i64,
    /// `2026/11/22 01:47:34`: error log.
    pub error_log: String,
    /// `22/Nov/2026:01:47:34 +0000`: `$time_local`.
    pub time_local: String,
    /// `2026-11-22T01:47:34+00:00`: `$time_iso8601`.
    pub iso8601: String,
}

impl Timestamps {
    fn of(t: &LocalTime) -> Timestamps {
        Timestamps {
            epoch: t.epoch,
            error_log: t.error_log(),
            time_local: t.time_local(),
            iso8601: t.iso8601(),
        }
    }

    /// Used only if `localtime_r` fails on the very first call (it cannot for
    /// present-day times): the epoch in UTC.
    fn fallback() -> Timestamps {
        Timestamps {
            epoch: 0,
            error_log: "1970/01/01 00:00:00".to_owned(),
            time_local: "01/Jan/1970:00:00:00 +0000".to_owned(),
            iso8601: "1970-01-01T00:00:00+00:00".to_owned(),
        }
    }
}

thread_local! {
    static CACHED: RefCell<Option<Timestamps>> = const { RefCell::new(None) };
}

/// Calls `f` with the timestamps of the current second.
pub fn with_now<R>(f: impl FnOnce(&Timestamps) -> R) -> R {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    CACHED.with(|c| {
        let mut c = c.borrow_mut();
        let stale = c.as_ref().is_none_or(|t| t.epoch != now);
        if stale {
            match LocalTime::from_epoch(now) {
                Ok(t) => *c = Some(Timestamps::of(&t)),
                // Keep the previous second's strings rather than fail a log line.
                Err(_) if c.is_some() => {}
                Err(_) => *c = Some(Timestamps::fallback()),
            }
        }
        let t = c.get_or_insert_with(Timestamps::fallback);
        f(t)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_strings_describe_the_current_second() {
        let (a, epoch) = with_now(|t| (t.clone(), t.epoch));
        let fresh = Timestamps::of(&LocalTime::from_epoch(epoch).unwrap());
        assert_eq!(a, fresh);
        assert_eq!(a.error_log.len(), 19);
        assert_eq!(a.time_local.len(), 26);
        assert_eq!(a.iso8601.len(), 25);
    }
}
