//! Parsers for the value syntaxes nginx's directives share: numbers, sizes
//! (`512k`, `256m`, `1024G`), times (`75s`, `1m`, `500ms`, `1h 30m`),
//! percentages (`33.3%`) and flags (`on`/`off`).
//!
//! Each returns `None` on bad input; the caller words the error because only
//! it knows the directive's name.

use std::time::Duration;

/// Parses a non-negative decimal integer (`ngx_atoi`), refusing overflow.
pub fn number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Parses a size: digits with an optional `k`, `m` or `g` suffix in either
/// case (`ngx_parse_offset`; nginx's plain sizes take only k and m, nowait
/// takes g everywhere because a larger unit can only be more explicit).
pub fn size(s: &str) -> Option<u64> {
    let (digits, scale) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1u64 << 10),
        b'm' | b'M' => (&s[..s.len() - 1], 1 << 20),
        b'g' | b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    number(digits)?.checked_mul(scale)
}

/// The largest time nginx accepts in a seconds slot (68 years).
const MAX_TIME: Duration = Duration::from_secs(i32::MAX as u64);

/// Parses a time as nginx does (`ngx_parse_time`): one or more
/// number+unit groups in decreasing order, units `ms s m h d w M y`; a bare
/// number means seconds. `ms` is refused where `allow_ms` is false (seconds
/// slots).
pub fn time(s: &str, allow_ms: bool) -> Option<Duration> {
    let b = s.as_bytes();
    if b.is_empty() {
        return None;
    }
    let mut i = 0;
    let mut total = Duration::ZERO;
    // Units must appear in decreasing order, each at most once.
    let mut last_rank = u8::MAX;
    while i < b.len() {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if start == i {
            return None;
        }
        let n: u64 = s[start..i].parse().ok()?;
        let (unit_ms, rank, len): (u64, u8, usize) = match (b.get(i), b.get(i + 1)) {
            (Some(b'y'), _) => (365 * 86_400_000, 8, 1),
            (Some(b'M'), _) => (30 * 86_400_000, 7, 1),
            (Some(b'w'), _) => (7 * 86_400_000, 6, 1),
            (Some(b'd'), _) => (86_400_000, 5, 1),
            (Some(b'h'), _) => (3_600_000, 4, 1),
            (Some(b'm'), Some(b's')) if allow_ms => (1, 1, 2),
            (Some(b'm'), Some(b's')) => return None,
            (Some(b'm'), _) => (60_000, 3, 1),
            (Some(b's'), _) => (1000, 2, 1),
            (None, _) if last_rank == u8::MAX => (1000, 2, 0),
            _ => return None,
        };
        if rank >= last_rank {
            return None;
        }
        last_rank = rank;
        i += len;
        total = total.checked_add(Duration::from_millis(n.checked_mul(unit_ms)?))?;
        while i < b.len() && b[i] == b' ' {
            i += 1;
        }
    }
    (total <= MAX_TIME).then_some(total)
}

/// Parses `on`/`off` (case-insensitive, as `ngx_conf_set_flag_slot`).
pub fn flag(s: &str) -> Option<bool> {
    if s.eq_ignore_ascii_case("on") {
        Some(true)
    } else if s.eq_ignore_ascii_case("off") {
        Some(false)
    } else {
        None
    }
}

/// Parses a percentage with at most two decimals (`33.3%`) into hundredths
/// of a percent, as `split_clients` does (`10000` is 100%).
pub fn percent(s: &str) -> Option<u32> {
    let body = s.strip_suffix('%')?;
    let (int, frac) = match body.split_once('.') {
        Some((i, f)) => (i, f),
        None => (body, ""),
    };
    if frac.len() > 2 || (!frac.is_empty() && !frac.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    let whole = number(int)?;
    let mut hundredths = frac.parse::<u32>().unwrap_or(0);
    if frac.len() == 1 {
        hundredths *= 10;
    }
    let v = whole.checked_mul(100)?.checked_add(hundredths as u64)?;
    (v <= 10_000).then_some(v as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(size("512k"), Some(512 * 1024));
        assert_eq!(size("256m"), Some(256 << 20));
        assert_eq!(size("1024G"), Some(1024 << 30));
        assert_eq!(size("10"), Some(10));
        assert_eq!(size("k"), None);
        assert_eq!(size("1x"), None);
        assert_eq!(size("-1"), None);
        assert_eq!(size("99999999999999999999k"), None);
        assert_eq!(size(""), None);
    }

    #[test]
    fn times() {
        assert_eq!(time("75s", false), Some(Duration::from_secs(75)));
        assert_eq!(time("75", false), Some(Duration::from_secs(75)));
        assert_eq!(time("1m", false), Some(Duration::from_secs(60)));
        assert_eq!(time("500ms", true), Some(Duration::from_millis(500)));
        assert_eq!(time("500ms", false), None);
        assert_eq!(time("1h 30m", false), Some(Duration::from_secs(5400)));
        assert_eq!(time("1h30m", false), Some(Duration::from_secs(5400)));
        assert_eq!(time("30m 1h", false), None);
        assert_eq!(time("1d", false), Some(Duration::from_secs(86400)));
        assert_eq!(time("s", false), None);
        assert_eq!(time("1x", false), None);
        assert_eq!(time("100y", false), None);
    }

    #[test]
    fn percents_and_flags() {
        assert_eq!(percent("33.3%"), Some(3330));
        assert_eq!(percent("0.5%"), Some(50));
        assert_eq!(percent("100%"), Some(10000));
        assert_eq!(percent("100.01%"), None);
        assert_eq!(percent("1.234%"), None);
        assert_eq!(percent("33"), None);
        assert_eq!(flag("ON"), Some(true));
        assert_eq!(flag("off"), Some(false));
        assert_eq!(flag("yes"), None);
    }
}
