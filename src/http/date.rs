//! HTTP-dates: formatting (`Sun, 22 Nov 2026 01:47:34 GMT`), parsing the
//! three RFC 9110 §5.6.7 formats, and a per-second cache of the `Date` value.
//!
//! Owns: conversions between Unix seconds and HTTP-date text.
//! Must not: read the clock; callers pass the time in.
//!
//! Parsing follows nginx's `ngx_parse_http_time`, which differs from the RFC:
//! the weekday is skipped, not checked, and a two-digit RFC 850 year below 70
//! means 20xx. Formatting and parsing are written here rather than taken from
//! `httpdate`, whose formatter panics on years past 9999 — a file's mtime is
//! disk input and must not be able to crash a worker.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Seconds in a day.
const SECS_PER_DAY: i64 = 86_400;
/// The last second nginx-style four-digit years can show: 9999-12-31 23:59:59.
const MAX_FORMATTED_SECS: i64 = 253_402_300_799;
/// Month names in HTTP-date order.
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
/// Weekday names, starting from Thursday 1970-01-01 (day 0).
const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];

/// Formats Unix seconds as an IMF-fixdate. Times outside year 1970..=9999
/// are clamped to those bounds.
pub fn format_unix(secs: i64) -> String {
    let secs = secs.clamp(0, MAX_FORMATTED_SECS);
    let days = secs / SECS_PER_DAY;
    let rem = secs % SECS_PER_DAY;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[(days % 7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Formats a `SystemTime` as an IMF-fixdate (sub-second part dropped).
pub fn format_system_time(time: SystemTime) -> String {
    format_unix(unix_secs(time))
}

/// Whole Unix seconds of a `SystemTime`, negative before 1970.
pub fn unix_secs(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// Parses an HTTP-date in any of the three formats of RFC 9110 §5.6.7
/// (IMF-fixdate, RFC 850, asctime) into Unix seconds, like nginx's
/// `ngx_parse_http_time`. Returns `None` for anything else.
pub fn parse_http_date(text: &str) -> Option<i64> {
    let s = text.trim().as_bytes();
    // Skip the weekday: up to the first ',' (IMF/RFC 850) or ' ' (asctime).
    let sep = s.iter().position(|&c| c == b',' || c == b' ')?;
    let mut p = Cursor { s, i: sep + 1 };
    let (day, month, year): (i64, i64, Option<i64>);
    if s[sep] == b',' {
        p.skip_spaces();
        day = p.digits(2)?;
        match p.next()? {
            b' ' => {
                month = p.month()?;
                p.expect(b' ')?;
                year = Some(p.digits(4)?);
            }
            b'-' => {
                month = p.month()?;
                p.expect(b'-')?;
                let yy = p.digits(2)?;
                year = Some(if yy < 70 { 2000 + yy } else { 1900 + yy });
            }
            _ => return None,
        }
    } else {
        // asctime: "Nov  6 08:49:37 1994"; the day may be space-padded.
        p.skip_spaces();
        month = p.month()?;
        // nginx skips the byte after the month unchecked, then one space
        // (`Nov\x1f14` is the 14th).
        p.next()?;
        if p.s.get(p.i) == Some(&b' ') {
            p.i += 1;
        }
        day = p.digits(2).or_else(|| p.digits(1))?;
        year = None;
    }
    p.expect(b' ')?;
    let hour = p.digits(2)?;
    p.expect(b':')?;
    let min = p.digits(2)?;
    p.expect(b':')?;
    let sec = p.digits(2)?;
    // asctime puts the year after the time.
    let year = match year {
        Some(year) => year,
        None => {
            p.expect(b' ')?;
            p.digits(4)?
        }
    };
    if hour > 23 || min > 59 || sec > 59 || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(days * SECS_PER_DAY + hour * 3600 + min * 60 + sec)
}

/// A `Date` header value rebuilt at most once per second, as nginx caches
/// `ngx_cached_http_time`.
#[derive(Debug, Default)]
pub struct DateCache {
    /// The Unix second `text` was built for; `None` before first use.
    secs: Option<i64>,
    /// The formatted date for `secs`.
    text: String,
    /// The monotonic span during which `text` is current, from the reading
    /// that made it to the end of its second ([`DateCache::get_at`]).
    current: Option<(Instant, Instant)>,
}

impl DateCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The HTTP-date for `now`, reformatted only when the second changed.
    pub fn get(&mut self, now: SystemTime) -> &str {
        let secs = unix_secs(now);
        if self.secs != Some(secs) {
            self.secs = Some(secs);
            self.text = format_unix(secs);
        }
        &self.text
    }

    /// The HTTP-date at the monotonic time `mono`: while `mono` falls in
    /// the second the text was made for, the text as it is (one
    /// comparison, no wall-clock arithmetic, as a request needs it);
    /// otherwise `wall()` — the wall-clock time matching `mono` — is asked.
    /// A change of the wall clock shows at the next second at the latest.
    pub fn get_at(&mut self, mono: Instant, wall: impl FnOnce() -> SystemTime) -> &str {
        if let Some((from, until)) = self.current
            && mono >= from
            && mono < until
        {
            return &self.text;
        }
        let now = wall();
        let into_second = now.duration_since(UNIX_EPOCH).map_or(Duration::ZERO, |d| {
            Duration::from_nanos(u64::from(d.subsec_nanos()))
        });
        self.current = Some((mono, mono + (Duration::from_secs(1) - into_second)));
        self.get(now)
    }
}

/// A byte cursor for the date parser.
struct Cursor<'a> {
    /// The whole input.
    s: &'a [u8],
    /// The next byte to read.
    i: usize,
}

impl Cursor<'_> {
    fn next(&mut self) -> Option<u8> {
        let c = *self.s.get(self.i)?;
        self.i += 1;
        Some(c)
    }

    fn expect(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    fn skip_spaces(&mut self) {
        while self.s.get(self.i) == Some(&b' ') {
            self.i += 1;
        }
    }

    /// Exactly `n` decimal digits, not followed by another digit.
    fn digits(&mut self, n: usize) -> Option<i64> {
        let field = self.s.get(self.i..self.i + n)?;
        if !field.iter().all(u8::is_ascii_digit)
            || self.s.get(self.i + n).is_some_and(u8::is_ascii_digit)
        {
            return None;
        }
        self.i += n;
        Some(
            field
                .iter()
                .fold(0, |acc, &d| acc * 10 + i64::from(d - b'0')),
        )
    }

    /// A three-letter month name, as 1..=12, read as nginx's
    /// `ngx_parse_http_time` reads it: by its first letter, and the second
    /// or third where the first is shared (`N\x1fv` is November).
    fn month(&mut self) -> Option<i64> {
        let name = self.s.get(self.i..self.i + 3)?;
        let index = match name[0] {
            b'J' if name[1] == b'a' => 0,
            b'J' if name[2] == b'n' => 5,
            b'J' => 6,
            b'F' => 1,
            b'M' if name[2] == b'r' => 2,
            b'M' => 4,
            b'A' if name[1] == b'p' => 3,
            b'A' => 7,
            b'S' => 8,
            b'O' => 9,
            b'N' => 10,
            b'D' => 11,
            _ => return None,
        };
        self.i += 3;
        Some(index + 1)
    }
}

/// A broken-down UTC time: what `ngx_gmtime` gives (a directory listing's
/// dates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Civil {
    /// The year, e.g. 2026.
    pub year: i64,
    /// 1..=12.
    pub month: i64,
    /// 1..=31.
    pub day: i64,
    /// 0..=23.
    pub hour: i64,
    /// 0..=59.
    pub minute: i64,
    /// 0..=59.
    pub second: i64,
}

/// The month's three-letter English name, for `month` 1..=12.
pub fn month_name(month: i64) -> &'static str {
    MONTHS[((month - 1).clamp(0, 11)) as usize]
}

/// Unix seconds broken down in UTC.
pub fn civil(secs: i64) -> Civil {
    let days = secs.div_euclid(SECS_PER_DAY);
    let rem = secs.rem_euclid(SECS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    Civil {
        year,
        month,
        day,
        hour: rem / 3600,
        minute: rem % 3600 / 60,
        second: rem % 60,
    }
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date (year, month 1..=12, day 1..=31) of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn breaks_down_times() {
        let c = civil(1_795_312_054);
        assert_eq!(
            (c.year, c.month, c.day, c.hour, c.minute, c.second),
            (2026, 11, 22, 1, 47, 34)
        );
        assert_eq!(month_name(c.month), "Nov");
        let c = civil(-1);
        assert_eq!((c.year, c.month, c.day, c.hour), (1969, 12, 31, 23));
    }

    #[test]
    fn formats_like_httpdate() {
        for secs in [
            0u64,
            784_111_777,
            951_782_400,
            1_795_312_054,
            4_102_444_800,
            253_402_300_799,
        ] {
            let t = UNIX_EPOCH + Duration::from_secs(secs);
            assert_eq!(
                format_system_time(t),
                httpdate::fmt_http_date(t),
                "secs {secs}"
            );
        }
        assert_eq!(format_unix(1_795_312_054), "Sun, 22 Nov 2026 01:47:34 GMT");
    }

    #[test]
    fn format_clamps_out_of_range_times() {
        assert_eq!(format_unix(-5), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(format_unix(i64::MAX), "Fri, 31 Dec 9999 23:59:59 GMT");
    }

    #[test]
    fn parses_the_three_formats() {
        let want = Some(784_111_777);
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), want);
        assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), want);
        assert_eq!(parse_http_date("Sun Nov  6 08:49:37 1994"), want);
        assert_eq!(parse_http_date("Sun Nov 06 08:49:37 1994"), want);
        // nginx: two-digit years below 70 are 20xx.
        assert_eq!(
            parse_http_date("Sunday, 22-Nov-26 01:47:34 GMT"),
            Some(1_795_312_054)
        );
    }

    #[test]
    fn weekday_is_not_checked_like_nginx() {
        assert_eq!(
            parse_http_date("Mon, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "",
            "garbage",
            "Sun, 06 Nov 1994",
            "Sun, 06 Xov 1994 08:49:37 GMT",
            "Sun, 31 Feb 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:37 GMT",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 19945 08:49:37 GMT",
            "Sun, 29 Feb 1900 00:00:00 GMT",
            "Sun, 99999999999999999999 Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad:?}");
        }
        assert!(parse_http_date("Tue, 29 Feb 2000 00:00:00 GMT").is_some());
    }

    #[test]
    fn months_by_their_first_letters_as_nginx() {
        let nov = parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT");
        assert!(nov.is_some());
        assert_eq!(parse_http_date("Sun, 06 N\u{1f}v 1994 08:49:37 GMT"), nov);
        assert_eq!(parse_http_date("Sun Nov\u{1f}6 08:49:37 1994"), nov);
        assert_eq!(parse_http_date("Sun Nov  6 08:49:37 1994"), nov);
        assert_eq!(
            parse_http_date("Sun, 06 Foo 1994 08:49:37 GMT"),
            parse_http_date("Sun, 06 Feb 1994 08:49:37 GMT")
        );
        assert_eq!(
            parse_http_date("Sun, 06 Jux 1994 08:49:37 GMT"),
            parse_http_date("Sun, 06 Jul 1994 08:49:37 GMT")
        );
    }

    #[test]
    fn round_trips() {
        for secs in [0, 1, 86_399, 951_782_400, 1_795_312_054, MAX_FORMATTED_SECS] {
            assert_eq!(parse_http_date(&format_unix(secs)), Some(secs));
        }
    }

    #[test]
    fn cache_reformats_each_second() {
        let mut cache = DateCache::new();
        let t = UNIX_EPOCH + Duration::from_millis(784_111_777_100);
        assert_eq!(cache.get(t), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(
            cache.get(t + Duration::from_millis(800)),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
        assert_eq!(
            cache.get(t + Duration::from_secs(1)),
            "Sun, 06 Nov 1994 08:49:38 GMT"
        );
    }

    #[test]
    fn cache_asks_the_wall_clock_once_per_second_of_monotonic_time() {
        let mut cache = DateCache::new();
        let mono = Instant::now();
        // 08:49:37.100 at `mono`: current until 900 ms later.
        let wall = UNIX_EPOCH + Duration::from_millis(784_111_777_100);
        let at = |ms: u64| wall + Duration::from_millis(ms);
        assert_eq!(
            cache.get_at(mono, || at(0)),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
        let unasked = || -> SystemTime { panic!("the wall clock was read within the second") };
        let later = mono + Duration::from_millis(899);
        assert_eq!(
            cache.get_at(later, unasked),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
        // The second is over: the wall clock says which one it is now.
        let next = mono + Duration::from_millis(900);
        assert_eq!(
            cache.get_at(next, || at(900)),
            "Sun, 06 Nov 1994 08:49:38 GMT"
        );
        // The wall clock was set back meanwhile: followed at the next second.
        let after = next + Duration::from_secs(1);
        assert_eq!(
            cache.get_at(after, || UNIX_EPOCH + Duration::from_secs(784_111_000)),
            "Sun, 06 Nov 1994 08:36:40 GMT"
        );
        // A reading from before the span is not trusted to it.
        assert_eq!(
            cache.get_at(mono, || at(0)),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
    }
}
