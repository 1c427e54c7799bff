//! URIs a server writes itself (an SSI `include`): nginx's
//! `ngx_http_parse_unsafe_uri` and the plain `ngx_unescape_uri` it applies.
//! The URI is split at its first `?` (arguments), `%XX` escapes in the path
//! are decoded, and a path that could climb out of the root (`..` as a
//! segment) or holds a NUL is refused.
//!
//! Pure byte work.

/// Bytes that need no look in the first pass, one bit per byte value (the
/// `usual` table of `ngx_http_parse.c`): everything but controls, space,
/// `"`, `#`, `%`, `?`, and the path separator checks below.
const USUAL: [u32; 8] = [
    0x0000_0000,
    0x7fff_37d6,
    0xffff_ffff,
    0x7fff_ffff,
    0xffff_ffff,
    0xffff_ffff,
    0xffff_ffff,
    0xffff_ffff,
];

fn usual(c: u8) -> bool {
    USUAL[usize::from(c >> 5)] & (1 << (c & 0x1f)) != 0
}

/// The URI was refused: nginx logs `unsafe URI "…" was detected` with
/// this, the URI as far as it was processed (the decoded path, once
/// escapes were decoded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsafe(pub Vec<u8>);

/// Whether `p` (what follows a `/`, or the start) begins a `..` segment.
fn dot_dot(p: &[u8]) -> bool {
    p.len() >= 2 && p[0] == b'.' && p[1] == b'.' && (p.len() == 2 || p[2] == b'/')
}

/// Splits and checks `uri`: the decoded path and the arguments (`Some`
/// when a `?` was written, even with nothing after it).
pub fn parse(uri: &[u8]) -> Result<(Vec<u8>, Option<Vec<u8>>), Unsafe> {
    let refuse = |u: &[u8]| Err(Unsafe(u.to_vec()));
    if uri.is_empty() || uri[0] == b'?' || dot_dot(uri) {
        return refuse(uri);
    }
    let mut path_end = uri.len();
    let mut args = None;
    let mut quoted = false;
    let mut i = 0;
    while i < uri.len() {
        let ch = uri[i];
        i += 1;
        if ch == b'%' {
            quoted = true;
            continue;
        }
        if usual(ch) {
            continue;
        }
        if ch == b'?' {
            args = Some(uri[i..].to_vec());
            path_end = i - 1;
            break;
        }
        if ch == 0 {
            return refuse(uri);
        }
        if ch == b'/' && uri.len() - i + 1 > 2 && dot_dot(&uri[i..]) {
            return refuse(uri);
        }
    }
    let path = &uri[..path_end];
    if !quoted {
        return Ok((path.to_vec(), args));
    }
    let decoded = unescape(path);
    if dot_dot(&decoded) {
        return refuse(&decoded);
    }
    for (i, &ch) in decoded.iter().enumerate() {
        if ch == 0 {
            return refuse(&decoded);
        }
        if ch == b'/' && decoded.len() - i > 2 && dot_dot(&decoded[i + 1..]) {
            return refuse(&decoded);
        }
    }
    Ok((decoded, args))
}

/// `ngx_unescape_uri(…, 0)`: `%XX` decoded; a `%` followed by a non-hex
/// byte is dropped (the byte kept); a valid first digit followed by an
/// invalid one drops both.
pub fn unescape(src: &[u8]) -> Vec<u8> {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(src.len());
    let mut i = 0;
    while i < src.len() {
        let ch = src[i];
        i += 1;
        if ch != b'%' {
            out.push(ch);
            continue;
        }
        let Some(&first) = src.get(i) else {
            break;
        };
        i += 1;
        let Some(hi) = hex(first) else {
            out.push(first);
            continue;
        };
        let Some(&second) = src.get(i) else {
            break;
        };
        i += 1;
        if let Some(lo) = hex(second) {
            out.push(hi << 4 | lo);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(uri: &str) -> (String, Option<String>) {
        let (p, a) = parse(uri.as_bytes()).expect("safe");
        (
            String::from_utf8(p).unwrap(),
            a.map(|a| String::from_utf8(a).unwrap()),
        )
    }

    #[test]
    fn splits_and_decodes_as_nginx() {
        assert_eq!(ok("/a.html"), ("/a.html".into(), None));
        assert_eq!(ok("/a?b=1&c"), ("/a".into(), Some("b=1&c".into())));
        assert_eq!(ok("/a?"), ("/a".into(), Some(String::new())));
        assert_eq!(
            ok("/tes%741.html?x=%41"),
            ("/test1.html".into(), Some("x=%41".into()))
        );
        // A decoded `?` is part of the path.
        assert_eq!(ok("/u.html%3f"), ("/u.html?".into(), None));
        assert_eq!(ok("/a..b/..c"), ("/a..b/..c".into(), None));
    }

    #[test]
    fn refuses_what_climbs_out() {
        for bad in [
            "",
            "?a",
            "..",
            "../x",
            "/..",
            "/a/../b",
            "/%2e%2e/x",
            "/a%00b",
            "%2E%2E",
        ] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad}");
        }
        assert_eq!(parse(b"/%2e%2e/x?a"), Err(Unsafe(b"/../x".to_vec())));
        assert_eq!(parse(b"/../%41"), Err(Unsafe(b"/../%41".to_vec())));
    }

    #[test]
    fn unescape_keeps_nginx_s_quirks() {
        assert_eq!(unescape(b"%41%4a%zz%4z."), b"AJzz.");
        assert_eq!(unescape(b"a%"), b"a");
    }
}
