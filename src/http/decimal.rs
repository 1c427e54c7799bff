//! Unsigned numbers in decimal without the formatting machinery: header
//! values (`Content-Length`), status codes, log contexts and hash keys are
//! written per request, where `format!` and `to_string` cost an allocation
//! and a trip through `fmt`.

/// Room for the digits of any `u64`.
pub const U64_DIGITS: usize = 20;

/// `n` in decimal, written at the end of `buf`; the digits written.
pub fn decimal(mut n: u64, buf: &mut [u8; U64_DIGITS]) -> &[u8] {
    let mut at = U64_DIGITS;
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// Appends `n` in decimal to `out`.
pub fn push_decimal(out: &mut Vec<u8>, n: u64) {
    let mut buf = [0u8; U64_DIGITS];
    out.extend_from_slice(decimal(n, &mut buf));
}

/// Reads a number as nginx's `ngx_atoof` and `ngx_atotm` do: decimal
/// digits only, at least one, at most `i64::MAX` (an `off_t`, a `time_t`);
/// `None` where nginx returns `NGX_ERROR`.
pub fn parse_signed_max(v: &[u8]) -> Option<u64> {
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    v.iter()
        .try_fold(0u64, |n, &d| {
            n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        })
        .filter(|&n| n <= i64::MAX as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_as_ngx_atoof() {
        assert_eq!(parse_signed_max(b"0"), Some(0));
        assert_eq!(
            parse_signed_max(b"9223372036854775807"),
            Some(i64::MAX as u64)
        );
        assert_eq!(parse_signed_max(b"9223372036854775808"), None);
        assert_eq!(parse_signed_max(b""), None);
        assert_eq!(parse_signed_max(b"1x"), None);
        assert_eq!(parse_signed_max(b"-1"), None);
    }

    #[test]
    fn writes_as_display_does() {
        for n in [0, 7, 10, 99, 100, 65_535, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            push_decimal(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
        }
    }
}
