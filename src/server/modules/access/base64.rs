//! Base64 as nginx reads it (`ngx_decode_base64`): input ends at the first
//! `=` whatever follows, padding may be missing, and only a length that
//! leaves one stray character is refused. Basic credentials and `{SSHA}`
//! hashes decode through this, so that nowait accepts exactly what nginx
//! accepts; encoding is the standard alphabet with padding.

use base64::Engine;

/// The value of a base64 character, if it is one.
fn value(c: u8) -> Option<u8> {
    match c {
        b'+' => Some(62),
        b'/' => Some(63),
        _ => common_value(c),
    }
}

/// The value of a base64url character (`-` and `_` for `+` and `/`).
fn url_value(c: u8) -> Option<u8> {
    match c {
        b'-' => Some(62),
        b'_' => Some(63),
        _ => common_value(c),
    }
}

/// The value of a letter or digit, the same in both alphabets.
fn common_value(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        _ => None,
    }
}

/// Decodes `src` as `ngx_decode_base64_internal` does.
pub fn decode(src: &[u8]) -> Option<Vec<u8>> {
    decode_with(src, value)
}

/// Decodes base64url `src` as `ngx_decode_base64url` does (`secure_link`).
pub fn decode_url(src: &[u8]) -> Option<Vec<u8>> {
    decode_with(src, url_value)
}

/// `ngx_decode_base64_internal` with the alphabet `value` gives.
fn decode_with(src: &[u8], value: fn(u8) -> Option<u8>) -> Option<Vec<u8>> {
    let end = src.iter().position(|&c| c == b'=').unwrap_or(src.len());
    let vals: Vec<u8> = src[..end]
        .iter()
        .map(|&c| value(c))
        .collect::<Option<_>>()?;
    if vals.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(vals.len() / 4 * 3 + 2);
    for q in vals.chunks(4) {
        if q.len() > 1 {
            out.push(q[0] << 2 | q[1] >> 4);
        }
        if q.len() > 2 {
            out.push(q[1] << 4 | q[2] >> 2);
        }
        if q.len() > 3 {
            out.push(q[2] << 6 | q[3]);
        }
    }
    Some(out)
}

/// Encodes `src` in the standard alphabet with padding.
pub fn encode(src: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(src)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_as_nginx() {
        assert_eq!(decode(b"dXNlcjpwYXNz").unwrap(), b"user:pass");
        assert_eq!(decode(b"Zm9vCg==").unwrap(), b"foo\n");
        assert_eq!(decode(b"Zm9vCg").unwrap(), b"foo\n", "padding optional");
        assert_eq!(decode(b"Zm9vCg=garbage").unwrap(), b"foo\n");
        assert_eq!(decode(b"Zm9vC"), None, "one stray character");
        assert_eq!(decode(b"Zm9v_g=="), None);
        assert_eq!(decode(b"").unwrap(), b"");
    }

    #[test]
    fn decodes_base64url_as_nginx() {
        assert_eq!(decode_url(b"Zm9v_-8").unwrap(), b"foo\xff\xef");
        assert_eq!(decode_url(b"Zm9v_-8=").unwrap(), b"foo\xff\xef");
        assert_eq!(decode_url(b"Zm9v+/8"), None, "the standard alphabet's own");
    }

    #[test]
    fn encodes_standard() {
        assert_eq!(encode(b"foo\n"), "Zm9vCg==");
    }
}
