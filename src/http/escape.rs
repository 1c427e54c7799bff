//! The two escapings a `rewrite` applies, exactly as nginx's
//! `ngx_escape_uri(…, NGX_ESCAPE_ARGS)` and `ngx_unescape_uri(…,
//! NGX_UNESCAPE_REDIRECT)` (`src/core/ngx_string.c`): captures copied into
//! arguments or a redirect are escaped again when the request's own URI was
//! written escaped, and a redirect's text is then unescaped where that is
//! safe for a `Location` header. And the three a directory listing uses:
//! `NGX_ESCAPE_URI_COMPONENT` for links, `ngx_escape_html` and
//! `ngx_escape_json` for names.
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

/// Characters `NGX_ESCAPE_URI_COMPONENT` escapes: everything but ALPHA,
/// DIGIT, `-`, `.`, `_` and `~`.
const URI_COMPONENT: [u32; 8] = [
    0xffff_ffff,
    0xfc00_9fff,
    0x7800_0001,
    0xb800_0001,
    0xffff_ffff,
    0xffff_ffff,
    0xffff_ffff,
    0xffff_ffff,
];

/// How many bytes of `src` `NGX_ESCAPE_URI_COMPONENT` escapes.
pub fn uri_component_escapes(src: &[u8]) -> usize {
    src.iter()
        .filter(|&&c| URI_COMPONENT[usize::from(c >> 5)] & (1 << (c & 0x1f)) != 0)
        .count()
}

/// Appends `src` to `out`, escaping as `NGX_ESCAPE_URI_COMPONENT` does.
pub fn escape_uri_component(src: &[u8], out: &mut Vec<u8>) {
    for &c in src {
        if URI_COMPONENT[usize::from(c >> 5)] & (1 << (c & 0x1f)) != 0 {
            out.extend_from_slice(&[b'%', HEX[usize::from(c >> 4)], HEX[usize::from(c & 0xf)]]);
        } else {
            out.push(c);
        }
    }
}

/// The bytes `ngx_escape_html` adds to `src` (0: nothing to escape).
pub fn html_escapes(src: &[u8]) -> usize {
    src.iter()
        .map(|c| match c {
            b'<' | b'>' => 3,
            b'&' => 4,
            b'"' => 5,
            _ => 0,
        })
        .sum()
}

/// Appends `src` to `out` with `<`, `>`, `&` and `"` as entities
/// (`ngx_escape_html`).
pub fn escape_html(src: &[u8], out: &mut Vec<u8>) {
    for &c in src {
        match c {
            b'<' => out.extend_from_slice(b"&lt;"),
            b'>' => out.extend_from_slice(b"&gt;"),
            b'&' => out.extend_from_slice(b"&amp;"),
            b'"' => out.extend_from_slice(b"&quot;"),
            _ => out.push(c),
        }
    }
}

/// Appends `src` to `out` escaped for a JSON string (`ngx_escape_json`):
/// `\` and `"` get a backslash, control characters their short form or
/// `\u00XX`; every other byte (UTF-8 included) is copied.
pub fn escape_json(src: &[u8], out: &mut Vec<u8>) {
    for &c in src {
        if c > 0x1f {
            if c == b'\\' || c == b'"' {
                out.push(b'\\');
            }
            out.push(c);
            continue;
        }
        out.push(b'\\');
        match c {
            b'\n' => out.push(b'n'),
            b'\r' => out.push(b'r'),
            b'\t' => out.push(b't'),
            0x08 => out.push(b'b'),
            0x0c => out.push(b'f'),
            _ => out.extend_from_slice(&[
                b'u',
                b'0',
                b'0',
                b'0' + (c >> 4),
                HEX[usize::from(c & 0xf)],
            ]),
        }
    }
}

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
    fn listing_escapes_as_nginx() {
        let mut out = Vec::new();
        escape_uri_component(b"a-b.c_d~e:f?g%h i\xd1\x84", &mut out);
        assert_eq!(out, b"a-b.c_d~e%3Af%3Fg%25h%20i%D1%84");
        assert_eq!(uri_component_escapes(b"a:b?"), 2);
        let mut out = Vec::new();
        escape_html(b"<a href=\"x\">&'", &mut out);
        assert_eq!(out, b"&lt;a href=&quot;x&quot;&gt;&amp;'");
        assert_eq!(html_escapes(b"<>&\""), 3 + 3 + 4 + 5);
        let mut out = Vec::new();
        escape_json(b"a\"b\\c\n\x01\x1f/'\xd1\x84", &mut out);
        assert_eq!(out, b"a\\\"b\\\\c\\n\\u0001\\u001F/'\xd1\x84");
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
