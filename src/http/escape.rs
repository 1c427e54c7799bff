//! The two escapings a `rewrite` applies, exactly as nginx's
//! `ngx_escape_uri(…, NGX_ESCAPE_ARGS)` and `ngx_unescape_uri(…,
//! NGX_UNESCAPE_REDIRECT)` (`src/core/ngx_string.c`): captures copied into
//! arguments or a redirect are escaped again when the request's own URI was
//! written escaped, and a redirect's text is then unescaped where that is
//! safe for a `Location` header.
//!
//! Pure byte work: no I/O, no allocation beyond the result.

/// Characters `NGX_ESCAPE_ARGS` escapes, one bit per byte value: controls,
/// space, `"`, `#`, `%`, `&`, `+`, `;`, `<`, `>`, `?`, `\`, `^`, `` ` ``,
/// `{`, `|`, `}`, DEL and every byte above 0x7F.
const ARGS: [u32; 8] = [
    0xffff_ffff,
    0xd800_086d,
    0x5000_0000,
    0xb800_0001,
    0xffff_ffff,
    0xffff_ffff,
    0xffff_ffff,
    0xffff_ffff,
];

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Appends `src` to `out`, escaping as `NGX_ESCAPE_ARGS` does (`%XX`,
/// uppercase hex).
pub fn escape_args(src: &[u8], out: &mut Vec<u8>) {
    for &c in src {
        if ARGS[usize::from(c >> 5)] & (1 << (c & 0x1f)) != 0 {
            out.extend_from_slice(&[b'%', HEX[usize::from(c >> 4)], HEX[usize::from(c & 0xf)]]);
        } else {
            out.push(c);
        }
    }
}

/// `ngx_unescape_uri(…, NGX_UNESCAPE_REDIRECT)` over all of `src`, with
/// nginx's quirks: an escape decodes only to a byte above `%` and below
/// DEL (others stay escaped); unescaping stops after the first `?`, written
/// or decoded from `%3F`, and the rest is
/// kept as it is; a `%` followed by a non-hex byte is dropped, and a valid
/// first digit followed by an invalid one drops both.
pub fn unescape_redirect(src: &[u8]) -> Vec<u8> {
    enum State {
        Usual,
        Quoted,
        QuotedSecond(u8),
    }
    let mut out = Vec::with_capacity(src.len());
    let mut state = State::Usual;
    let mut i = 0;
    while i < src.len() {
        let ch = src[i];
        i += 1;
        match state {
            State::Usual => {
                if ch == b'?' {
                    out.push(ch);
                    break;
                }
                if ch == b'%' {
                    state = State::Quoted;
                } else {
                    out.push(ch);
                }
            }
            State::Quoted => match hex(ch) {
                Some(d) => state = State::QuotedSecond(d),
                None => {
                    state = State::Usual;
                    out.push(ch);
                }
            },
            State::QuotedSecond(first) => {
                state = State::Usual;
                let Some(d) = hex(ch) else {
                    continue;
                };
                let decoded = (first << 4) + d;
                if decoded == b'?' {
                    out.push(decoded);
                    break;
                }
                if decoded > b'%' && decoded < 0x7f {
                    out.push(decoded);
                } else {
                    out.extend_from_slice(&src[i - 3..i]);
                }
            }
        }
    }
    out.extend_from_slice(&src[i..]);
    out
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        _ => {
            let l = c | 0x20;
            (b'a'..=b'f').contains(&l).then(|| l - b'a' + 10)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &[u8]) -> String {
        let mut out = Vec::new();
        escape_args(s, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn args_escaping_as_nginx() {
        assert_eq!(esc(b"a b&c=d+e;f?g#h%i"), "a%20b%26c=d%2Be%3Bf%3Fg%23h%25i");
        assert_eq!(esc(b"/x/y.z-_~!$'()*,:@[]"), "/x/y.z-_~!$'()*,:@[]");
        assert_eq!(
            esc(b"<>\"\\^`{|}\x7f\x01\xff"),
            "%3C%3E%22%5C%5E%60%7B%7C%7D%7F%01%FF"
        );
    }

    fn unesc(s: &str) -> String {
        String::from_utf8(unescape_redirect(s.as_bytes())).unwrap()
    }

    #[test]
    fn redirect_unescaping_as_nginx() {
        assert_eq!(unesc("/a%41b"), "/aAb");
        // Bytes at or below `%` and from DEL up stay escaped.
        assert_eq!(unesc("/a%20b%25c%7F"), "/a%20b%25c%7F");
        // Unescaping stops after a `?`.
        assert_eq!(unesc("/a?b=%41"), "/a?b=%41");
        assert_eq!(unesc("/a%3Fb%41"), "/a?b%41");
        assert_eq!(unesc("/a%3f%41"), "/a?%41");
        // Invalid escapes.
        assert_eq!(unesc("/a%zz"), "/azz");
        assert_eq!(unesc("/a%4zb"), "/ab");
    }
}
