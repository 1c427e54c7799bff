//! nginx's `ngx_http_parse_unsafe_uri`: the check a URI an upstream names
//! (`X-Accel-Redirect`) or an `ssi`/`proxy_store` path must pass before it
//! is used — no `..` segment, no NUL, not empty — with its arguments split
//! off at the first `?` and `%` escapes decoded (and the result checked
//! again).
//!
//! Pure: no I/O, no configuration.

/// A URI that passed: the path (decoded) and the arguments, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SafeUri {
    /// The path, `%` escapes decoded.
    pub path: Vec<u8>,
    /// What followed the first `?` (undecoded), if there was one.
    pub args: Option<Vec<u8>>,
}

/// Checks `uri` as nginx does; `None`: unsafe.
pub fn parse_unsafe_uri(uri: &[u8]) -> Option<SafeUri> {
    if uri.is_empty() || uri[0] == b'?' {
        return None;
    }
    let (path, args) = match uri.iter().position(|&c| c == b'?') {
        Some(q) => (&uri[..q], Some(uri[q + 1..].to_vec())),
        None => (uri, None),
    };
    check(path)?;
    let path = if path.contains(&b'%') {
        let decoded = unescape(path);
        check(&decoded)?;
        decoded
    } else {
        path.to_vec()
    };
    Some(SafeUri { path, args })
}

/// No leading `../`, no `/../` or trailing `/..`, no NUL.
fn check(p: &[u8]) -> Option<()> {
    let dotdot_at = |i: usize| {
        p.len() >= i + 2
            && p[i] == b'.'
            && p[i + 1] == b'.'
            && (p.len() == i + 2 || p[i + 2] == b'/')
    };
    if dotdot_at(0) {
        return None;
    }
    for (i, &c) in p.iter().enumerate() {
        if c == 0 {
            return None;
        }
        if c == b'/' && dotdot_at(i + 1) {
            return None;
        }
    }
    Some(())
}

/// `ngx_unescape_uri(…, 0)`: every `%XX` decoded; a `%` not followed by
/// two hex digits is dropped and what follows kept.
fn unescape(src: &[u8]) -> Vec<u8> {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(src.len());
    let mut i = 0;
    while i < src.len() {
        if src[i] == b'%' {
            match (
                src.get(i + 1).and_then(|&c| hex(c)),
                src.get(i + 2).and_then(|&c| hex(c)),
            ) {
                (Some(a), Some(b)) => {
                    out.push(a << 4 | b);
                    i += 3;
                }
                _ => i += 1,
            }
        } else {
            out.push(src[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_segments_and_nul_are_unsafe() {
        for bad in [
            &b".."[..],
            b"../foo",
            b"/foo/..",
            b"/a/../b",
            b"/foo/.%2e",
            b"",
            b"?x",
            b"/a%00",
        ] {
            assert_eq!(
                parse_unsafe_uri(bad),
                None,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn args_split_and_escapes_decoded() {
        assert_eq!(
            parse_unsafe_uri(b"/foo?bar"),
            Some(SafeUri {
                path: b"/foo".to_vec(),
                args: Some(b"bar".to_vec())
            })
        );
        assert_eq!(parse_unsafe_uri(b"/foo%20bar").unwrap().path, b"/foo bar");
        assert_eq!(parse_unsafe_uri(b"/a..b/..c").unwrap().path, b"/a..b/..c");
    }
}
