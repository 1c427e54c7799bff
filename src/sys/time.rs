//! Local time (`localtime_r`) and the three timestamp formats nginx logs use:
//!
//! | use | format | example |
//! |---|---|---|
//! | error log | `%Y/%m/%d %H:%M:%S` | `2026/11/22 01:47:34` |
//! | `$time_local` | `%d/%b/%Y:%H:%M:%S %z` | `22/Nov/2026:01:47:34 +0000` |
//! | `$time_iso8601` | `%Y-%m-%dT%H:%M:%S%:z` | `2026-11-22T01:47:34+00:00` |
//!
//! `localtime_r` takes glibc's time-zone lock, so callers that log per
//! request should cache the result per second (the log clock does).

use std::fmt::Write as _;
use std::io;
use std::time::{SystemTime, UNIX_EPOCH};

/// Month abbreviations of `$time_local` (English, whatever the locale).
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A broken-down local time, from `localtime_r`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalTime {
    /// Seconds since the epoch this was computed from.
    pub epoch: i64,
    /// Full year, e.g. 2026.
    pub year: i32,
    /// Month, 1–12.
    pub month: u8,
    /// Day of the month, 1–31.
    pub day: u8,
    /// Hour, 0–23.
    pub hour: u8,
    /// Minute, 0–59.
    pub minute: u8,
    /// Second, 0–60 (a leap second is possible).
    pub second: u8,
    /// Offset east of UTC in seconds (`tm_gmtoff`), e.g. 3600 for +0100.
    pub gmtoff: i32,
}

impl LocalTime {
    /// `localtime_r(epoch)`. Fails with `EOVERFLOW` for years libc cannot hold.
    pub fn from_epoch(epoch: i64) -> io::Result<LocalTime> {
        let t = epoch as libc::time_t;
        let mut tm = std::mem::MaybeUninit::<libc::tm>::uninit();
        // SAFETY: `t` and `tm` are live for the call; localtime_r fills `tm`
        // and returns a pointer to it, or null on failure.
        let ret = unsafe { libc::localtime_r(&t, tm.as_mut_ptr()) };
        if ret.is_null() {
            return Err(io::Error::from_raw_os_error(libc::EOVERFLOW));
        }
        // SAFETY: non-null return means `tm` was filled.
        let tm = unsafe { tm.assume_init() };
        Ok(LocalTime {
            epoch,
            year: tm.tm_year + 1900,
            month: (tm.tm_mon + 1) as u8,
            day: tm.tm_mday as u8,
            hour: tm.tm_hour as u8,
            minute: tm.tm_min as u8,
            second: tm.tm_sec as u8,
            gmtoff: tm.tm_gmtoff as i32,
        })
    }

    /// The local time of `t`, truncated to the second.
    pub fn from_system_time(t: SystemTime) -> io::Result<LocalTime> {
        let epoch = match t.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_secs() as i64,
            Err(e) => -(e.duration().as_secs_f64().ceil() as i64),
        };
        LocalTime::from_epoch(epoch)
    }

    /// The local time now.
    pub fn now() -> io::Result<LocalTime> {
        LocalTime::from_system_time(SystemTime::now())
    }

    /// `2026/11/22 01:47:34`: the error log's timestamp.
    pub fn error_log(&self) -> String {
        format!(
            "{:04}/{:02}/{:02} {:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    /// `22/Nov/2026:01:47:34 +0000`: `$time_local`.
    pub fn time_local(&self) -> String {
        let mut s = format!(
            "{:02}/{}/{:04}:{:02}:{:02}:{:02} ",
            self.day,
            MONTHS[usize::from(self.month.clamp(1, 12) - 1)],
            self.year,
            self.hour,
            self.minute,
            self.second
        );
        self.write_offset(&mut s, "");
        s
    }

    /// `2026-11-22T01:47:34+00:00`: `$time_iso8601`.
    pub fn iso8601(&self) -> String {
        let mut s = format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        );
        self.write_offset(&mut s, ":");
        s
    }

    /// `+0100` or `-03:30`, hours and minutes separated by `sep`.
    fn write_offset(&self, s: &mut String, sep: &str) {
        let sign = if self.gmtoff < 0 { '-' } else { '+' };
        let off = self.gmtoff.unsigned_abs() / 60;
        let _ = write!(s, "{sign}{:02}{sep}{:02}", off / 60, off % 60);
    }
}

/// The largest result [`strftime`] produces (nginx's `NGX_HTTP_SSI_DATE_LEN`).
pub const STRFTIME_MAX: usize = 2048;

/// `strftime(fmt)` of `epoch` in UTC (`gmt`) or local time, as the SSI
/// module's `$date_gmt` and `$date_local` format it (the C locale: nowait
/// never calls `setlocale`). `fmt` ends at its first NUL byte, as nginx
/// copies it; an empty result (an empty format, or one longer than
/// [`STRFTIME_MAX`]) is `None`, as nginx's variable then fails.
pub fn strftime(fmt: &[u8], epoch: i64, gmt: bool) -> Option<Vec<u8>> {
    let end = fmt.iter().position(|&c| c == 0).unwrap_or(fmt.len());
    let fmt = std::ffi::CString::new(&fmt[..end]).ok()?;
    let t = epoch as libc::time_t;
    let mut tm = std::mem::MaybeUninit::<libc::tm>::uninit();
    // SAFETY: `t` and `tm` are live for the call; gmtime_r/localtime_r fill
    // `tm` and return a pointer to it, or null on failure.
    let ret = unsafe {
        if gmt {
            libc::gmtime_r(&t, tm.as_mut_ptr())
        } else {
            libc::localtime_r(&t, tm.as_mut_ptr())
        }
    };
    if ret.is_null() {
        return None;
    }
    // SAFETY: a non-null return means `tm` was filled.
    let tm = unsafe { tm.assume_init() };
    let mut buf = vec![0u8; STRFTIME_MAX];
    // SAFETY: `buf` has `STRFTIME_MAX` writable bytes, `fmt` is a
    // NUL-terminated string and `tm` a filled broken-down time; strftime
    // writes at most `STRFTIME_MAX` bytes and returns how many (0 when the
    // result did not fit or is empty).
    let n = unsafe {
        libc::strftime(
            buf.as_mut_ptr().cast::<libc::c_char>(),
            STRFTIME_MAX,
            fmt.as_ptr(),
            &tm,
        )
    };
    if n == 0 {
        return None;
    }
    buf.truncate(n);
    Some(buf)
}

/// `$time_local` of `t`: `22/Nov/2026:01:47:34 +0000`.
pub fn format_time_local(t: SystemTime) -> io::Result<String> {
    Ok(LocalTime::from_system_time(t)?.time_local())
}

/// `$time_iso8601` of `t`: `2026-11-22T01:47:34+00:00`.
pub fn format_time_iso8601(t: SystemTime) -> io::Result<String> {
    Ok(LocalTime::from_system_time(t)?.iso8601())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strftime_formats_in_utc_and_stops_at_nul() {
        let fmt = b"%A, %d-%b-%Y %H:%M:%S %Z";
        assert_eq!(
            strftime(fmt, 0, true).as_deref(),
            Some(&b"Thursday, 01-Jan-1970 00:00:00 GMT"[..])
        );
        assert_eq!(strftime(b"%Y\0%m", 0, true).as_deref(), Some(&b"1970"[..]));
        assert_eq!(strftime(b"", 0, true), None);
    }

    fn sample(gmtoff: i32) -> LocalTime {
        LocalTime {
            epoch: 0,
            year: 2026,
            month: 11,
            day: 22,
            hour: 1,
            minute: 47,
            second: 34,
            gmtoff,
        }
    }

    #[test]
    fn formats_match_nginx() {
        let t = sample(0);
        assert_eq!(t.error_log(), "2026/11/22 01:47:34");
        assert_eq!(t.time_local(), "22/Nov/2026:01:47:34 +0000");
        assert_eq!(t.iso8601(), "2026-11-22T01:47:34+00:00");
    }

    #[test]
    fn offsets_east_and_west() {
        assert_eq!(sample(3600).time_local(), "22/Nov/2026:01:47:34 +0100");
        assert_eq!(
            sample(-(3 * 3600 + 1800)).iso8601(),
            "2026-11-22T01:47:34-03:30"
        );
        assert_eq!(
            sample(5 * 3600 + 45 * 60).iso8601(),
            "2026-11-22T01:47:34+05:45"
        );
    }

    #[test]
    fn localtime_agrees_with_its_offset() {
        // Whatever the zone, local fields minus the offset give back the epoch.
        let epoch = 1_795_312_054; // 2026-11-22T01:47:34Z
        let t = LocalTime::from_epoch(epoch).unwrap();
        let days = days_from_civil(t.year, t.month, t.day);
        let local = days * 86_400
            + i64::from(t.hour) * 3600
            + i64::from(t.minute) * 60
            + i64::from(t.second);
        assert_eq!(local - i64::from(t.gmtoff), epoch);
        assert_eq!(t.epoch, epoch);
        let via_system_time =
            LocalTime::from_system_time(UNIX_EPOCH + std::time::Duration::from_secs(epoch as u64))
                .unwrap();
        assert_eq!(via_system_time, t);
        assert!(format_time_local(SystemTime::now()).unwrap().len() == 26);
        assert!(format_time_iso8601(SystemTime::now()).unwrap().len() == 25);
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's algorithm).
    fn days_from_civil(y: i32, m: u8, d: u8) -> i64 {
        let y = i64::from(if m <= 2 { y - 1 } else { y });
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let m = i64::from(m);
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }
}
