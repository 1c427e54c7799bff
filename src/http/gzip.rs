//! The pure parts of nginx's `ngx_http_gzip_ok` (`ngx_http_core_module.c`):
//! whether an `Accept-Encoding` accepts gzip, whether a `User-Agent` is the
//! MSIE 4–6 that `gzip_disable msie6` means, and the `Cache-Control`
//! tokens `gzip_proxied` looks for.
//!
//! Owns: the parsing, with nginx's quirks. Must not: read configuration or
//! requests; `server/filter/gzip.rs` puts the answers together.

/// `ngx_http_gzip_ok`'s test of `Accept-Encoding`: a value starting with
/// `gzip,` is taken at once; otherwise `gzip` must appear as a token (at
/// the start or after `,` or ` `), optionally with a quality that is not
/// zero (`ngx_http_gzip_accept_encoding`, `ngx_http_gzip_quantity`).
pub fn accepts_gzip(ae: &[u8]) -> bool {
    if ae.len() < 4 {
        return false;
    }
    if ae.starts_with(b"gzip,") {
        return true;
    }
    let mut start = 0;
    let p = loop {
        let Some(i) = find_ci(&ae[start..], b"gzip").map(|i| i + start) else {
            return false;
        };
        if i == 0 || matches!(ae[i - 1], b',' | b' ') {
            break i + 4;
        }
        start = i + 4;
    };
    let mut i = p;
    while i < ae.len() {
        let c = ae[i];
        i += 1;
        match c {
            b',' => return true,
            b';' => return quality(&ae[i..]),
            b' ' => continue,
            _ => return false,
        }
    }
    true
}

/// What follows `gzip;`: ` q=N` with N not zero, or nothing usable.
fn quality(rest: &[u8]) -> bool {
    let mut i = 0;
    while i < rest.len() {
        let c = rest[i];
        i += 1;
        match c {
            b'q' | b'Q' => {
                if i + 2 > rest.len() || rest[i] != b'=' {
                    return false;
                }
                return quantity(&rest[i + 1..]) > 0;
            }
            b' ' => continue,
            _ => return false,
        }
    }
    true
}

/// `ngx_http_gzip_quantity`: the quality in thousandths' worth nginx reads
/// (`1`, `0.5`, `0.001` …); 0 for zero or anything invalid.
fn quantity(p: &[u8]) -> u32 {
    let Some(&c) = p.first() else {
        return 0;
    };
    if c != b'0' && c != b'1' {
        return 0;
    }
    let mut q = u32::from(c - b'0') * 100;
    let Some(&c) = p.get(1) else {
        return q;
    };
    if c == b',' || c == b' ' {
        return q;
    }
    if c != b'.' {
        return 0;
    }
    let mut n = 0;
    for &c in &p[2..] {
        if c == b',' || c == b' ' {
            break;
        }
        if c.is_ascii_digit() {
            q += u32::from(c - b'0');
            n += 1;
            continue;
        }
        return 0;
    }
    if q > 100 || n > 3 { 0 } else { q }
}

/// The position of `needle` in `hay`, ignoring ASCII case.
fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

/// The position of `needle` in `hay`, exactly.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Whether a `User-Agent` is MSIE 4, 5 or 6 without SP2 (`SV1`), and not
/// Opera: the browsers `gzip_disable msie6` refuses
/// (`ngx_http_process_user_agent`).
pub fn is_msie6(ua: &[u8]) -> bool {
    if find(ua, b"Opera").is_some() {
        return false;
    }
    let Some(m) = find(ua, b"MSIE ") else {
        return false;
    };
    if m + 7 >= ua.len() || ua[m + 6] != b'.' {
        return false;
    }
    match ua[m + 5] {
        b'4' | b'5' => true,
        b'6' => find(&ua[m + 8..], b"SV1").is_none(),
        _ => false,
    }
}

/// Whether one of `values` (the lines of a header such as
/// `Cache-Control`) holds the token `name` (any case) standing alone, as
/// `ngx_http_parse_multi_header_lines` finds it.
pub fn has_token<'a>(values: impl IntoIterator<Item = &'a str>, name: &str) -> bool {
    let name = name.as_bytes();
    for v in values {
        let v = v.as_bytes();
        if name.len() > v.len() {
            continue;
        }
        let mut s = 0;
        while s < v.len() {
            if v.len() - s >= name.len() && v[s..s + name.len()].eq_ignore_ascii_case(name) {
                let mut e = s + name.len();
                while e < v.len() && v[e] == b' ' {
                    e += 1;
                }
                if e == v.len() || v[e] == b',' {
                    return true;
                }
                s = e;
            }
            while s < v.len() {
                let c = v[s];
                s += 1;
                if c == b';' || c == b',' {
                    break;
                }
            }
            while s < v.len() && v[s] == b' ' {
                s += 1;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_encoding_as_nginx() {
        for yes in [
            "gzip",
            "gzip,deflate",
            "deflate, gzip",
            "gzip;q=0.5",
            "gzip; q=1",
            "br, GZIP ;q=0.001",
            "x-gzip, gzip",
            "gzip;",
        ] {
            assert!(accepts_gzip(yes.as_bytes()), "{yes}");
        }
        for no in [
            "",
            "gzi",
            "deflate",
            "x-gzip",
            "gzip;q=0",
            "gzip;q=0.000",
            "gzip;q=1.5",
            "gzip;q=0.0001",
            "gzipx",
            "gzip;level=1",
        ] {
            assert!(!accepts_gzip(no.as_bytes()), "{no}");
        }
    }

    #[test]
    fn msie6_as_nginx() {
        assert!(is_msie6(
            b"Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)"
        ));
        assert!(is_msie6(b"Mozilla/4.0 (compatible; MSIE 5.5; Windows 98)"));
        assert!(!is_msie6(
            b"Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1)"
        ));
        assert!(!is_msie6(
            b"Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 6.0)"
        ));
        assert!(!is_msie6(b"Opera/9.0 (compatible; MSIE 6.0; Windows)"));
        assert!(!is_msie6(b"curl/8"));
    }

    #[test]
    fn cache_control_tokens() {
        assert!(has_token(["no-cache"], "no-cache"));
        assert!(has_token(["max-age=0, No-Cache"], "no-cache"));
        assert!(has_token(["public", "private"], "private"));
        assert!(!has_token(["no-cache=\"x\""], "no-cache"));
        assert!(!has_token(["no-cachex"], "no-cache"));
        assert!(!has_token(["max-age=0"], "no-store"));
    }
}
