//! Request targets: origin-form and absolute-form, percent-decoding, and
//! normalization into nginx's `$uri`.
//!
//! Owns: turning the raw request target into `$uri` (decoded, normalized
//! path), `$args` and `$request_uri`, validating host names the way nginx's
//! `ngx_http_validate_host` does, and escaping paths for `Location` headers.
//! Must not: touch the file system or map paths to files.
//!
//! Paths are bytes, not `str`: `%FF` decodes to a byte that is not UTF-8,
//! and nginx serves such file names. Join them to a root with
//! `OsStr::from_bytes`.

use std::fmt;

/// Why a request target was refused; every case is answered with 400.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UriError {
    /// Neither origin-form (`/path`) nor absolute-form (`http://host/path`);
    /// includes `*`, which nginx refuses for every method.
    UnsupportedForm,
    /// A `%` not followed by two hex digits.
    BadEscape,
    /// `%00`: a NUL byte cannot be part of a file name.
    NulByte,
    /// `/..` climbing above the root.
    AboveRoot,
    /// The host of an absolute-form target is not a valid host name.
    InvalidHost,
}

impl fmt::Display for UriError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // nginx logs all of these as "client sent invalid request" (or
        // "invalid host in request line"); the detail is ours.
        let what = match self {
            UriError::UnsupportedForm => {
                "client sent invalid request (unsupported request target form)"
            }
            UriError::BadEscape => "client sent invalid request (bad percent-escape in URI)",
            UriError::NulByte => "client sent invalid request (NUL byte in URI)",
            UriError::AboveRoot => "client sent invalid request (URI climbs above the root)",
            UriError::InvalidHost => "client sent invalid host in request line",
        };
        f.write_str(what)
    }
}

impl std::error::Error for UriError {}

/// A parsed request target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestUri {
    /// `$uri`: the path percent-decoded, `//` runs merged and `.`/`..`
    /// segments resolved; always starts with `/`, keeps a trailing slash.
    pub path: Vec<u8>,
    /// `$args`: the raw (still encoded) query after the first `?`, or `None`
    /// when there is no `?` (nginx's `$is_args` is then empty).
    pub args: Option<Vec<u8>>,
    /// `$request_uri`: the target exactly as received, from the path on
    /// (nginx's `unparsed_uri`: an absolute-form target's scheme and
    /// authority are not part of it).
    pub request_uri: Vec<u8>,
    /// The host of an absolute-form target, validated and lowercased, port
    /// stripped. When present it overrides the `Host` header, as in nginx.
    pub host: Option<String>,
}

impl RequestUri {
    /// `$uri` as text, with invalid UTF-8 replaced; for logs and messages.
    pub fn path_lossy(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.path)
    }
}

impl RequestUri {
    /// `$uri` as nginx makes it under `merge_slashes off`: decoded, dot
    /// segments resolved, but `//` runs kept.
    pub fn path_keeping_slashes(&self) -> Result<Vec<u8>, UriError> {
        let parts = split_target(&self.request_uri)?;
        normalize(&percent_decode(parts.path)?, false)
    }
}

/// The parts of a request target, still raw.
struct TargetParts<'t> {
    /// The host of an absolute-form target, validated.
    host: Option<String>,
    /// The path (`/` when empty).
    path: &'t [u8],
    /// What follows `?`, up to a fragment.
    args: Option<&'t [u8]>,
    /// nginx's `unparsed_uri`: the target from its path on (an
    /// absolute-form target without its scheme and authority; `/` when
    /// nothing follows the authority).
    unparsed: &'t [u8],
}

/// Splits a request target into its parts.
fn split_target(target: &[u8]) -> Result<TargetParts<'_>, UriError> {
    let (host, rest) = match target.first() {
        Some(b'/') => (None, target),
        Some(c) if c.is_ascii_alphabetic() => {
            let (host, rest) = split_absolute(target)?;
            (Some(host), rest)
        }
        _ => return Err(UriError::UnsupportedForm),
    };
    let unparsed: &[u8] = if rest.is_empty() { b"/" } else { rest };
    // A fragment is never meant for the server: drop it with everything after.
    let rest = match rest.iter().position(|&c| c == b'#') {
        Some(i) => &rest[..i],
        None => rest,
    };
    let (raw_path, args) = match rest.iter().position(|&c| c == b'?') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let path: &[u8] = if raw_path.is_empty() { b"/" } else { raw_path };
    Ok(TargetParts {
        host,
        path,
        args,
        unparsed,
    })
}

/// Parses a raw request target (the second word of the request line).
pub fn parse_target(target: &[u8]) -> Result<RequestUri, UriError> {
    let TargetParts {
        host,
        path: raw_path,
        args,
        unparsed,
    } = split_target(target)?;
    // Most paths have nothing to decode or merge: copy them once.
    let path = if is_plain(raw_path) {
        raw_path.to_vec()
    } else {
        normalize_path(&percent_decode(raw_path)?)?
    };
    Ok(RequestUri {
        path,
        args: args.map(<[u8]>::to_vec),
        request_uri: unparsed.to_vec(),
        host,
    })
}

/// Whether a path needs neither percent-decoding nor merging of `//`, `/.`
/// and `/..` segments, nor refusal (NUL): then it is its own normal form.
fn is_plain(path: &[u8]) -> bool {
    path.first() == Some(&b'/')
        && !path.iter().any(|&c| c == b'%' || c == 0)
        && !path
            .windows(2)
            .any(|w| w[0] == b'/' && (w[1] == b'/' || w[1] == b'.'))
}

/// Where the authority of an absolute-form target ends, as nginx's request
/// line parser reads it (`sw_host`, `sw_host_ip_literal`, `sw_port`): a
/// name of letters, digits, `.` and `-`, or a bracketed literal of
/// unreserved and sub-delimiter characters and `:`; then an optional port
/// of digits; then `/`, `?` or the end. `None`: anything else (400).
fn authority_end(after: &[u8]) -> Option<usize> {
    let mut i = 0;
    if after.first() == Some(&b'[') {
        i = 1;
        loop {
            let c = *after.get(i)?;
            i += 1;
            match c {
                b']' => break,
                c if c.is_ascii_alphanumeric() => {}
                b':' | b'-' | b'.' | b'_' | b'~' => {}
                b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' => {}
                _ => return None,
            }
        }
    } else {
        while after
            .get(i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-'))
        {
            i += 1;
        }
    }
    if after.get(i) == Some(&b':') {
        i += 1;
        while after.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    match after.get(i) {
        None | Some(b'/' | b'?') => Some(i),
        Some(_) => None,
    }
}

/// Splits `scheme://host[:port]rest` into the validated host and `rest`.
fn split_absolute(target: &[u8]) -> Result<(String, &[u8]), UriError> {
    // nginx accepts any scheme here (`sw_schema`): a letter, then
    // letters, digits, `+`, `-` and `.`.
    let scheme_end = target
        .iter()
        .position(|&c| !(c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.')))
        .ok_or(UriError::UnsupportedForm)?;
    let after = target[scheme_end..]
        .strip_prefix(b"://")
        .ok_or(UriError::UnsupportedForm)?;
    let auth_end = authority_end(after).ok_or(UriError::InvalidHost)?;
    let authority = &after[..auth_end];
    let host = validate_host(authority).ok_or(UriError::InvalidHost)?;
    Ok((host, &after[auth_end..]))
}

/// The bytes [`validate_host`] looks at: `.`, `:`, `[`, `]`, `/`, NUL,
/// spaces, controls and DEL; any other (a letter, a digit, other
/// punctuation, a non-ASCII byte) is passed over.
const HOST_SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = matches!(c as u8, b'.' | b':' | b'[' | b']' | b'/' | 0..=b' ' | 0x7f);
        c += 1;
    }
    t
};

/// Validates a host (`Host` header or absolute-form authority) like nginx's
/// `ngx_http_validate_host`: no `..`, no `/`, no NUL, spaces or controls;
/// the port (after `:`, or after `]` for `[v6]`) is cut off unchecked, one
/// trailing dot removed, the result lowercased and non-empty.
pub fn validate_host(host: &[u8]) -> Option<String> {
    #[derive(PartialEq)]
    enum State {
        Usual,
        Literal,
        Rest,
    }
    let mut state = State::Usual;
    let mut host_len = host.len();
    let mut dot_pos: Option<usize> = None;
    for (i, &c) in host.iter().enumerate() {
        // Nearly every byte of a host (letters, digits, '-') needs no look
        // at the state: one table lookup tells.
        if !HOST_SPECIAL[usize::from(c)] {
            continue;
        }
        match c {
            b'.' => {
                if i > 0 && dot_pos == Some(i - 1) {
                    return None;
                }
                dot_pos = Some(i);
            }
            b':' if state == State::Usual => {
                host_len = i;
                state = State::Rest;
            }
            b'[' if i == 0 => state = State::Literal,
            b']' if state == State::Literal => {
                host_len = i + 1;
                state = State::Rest;
            }
            b'/' | b'\0' => return None,
            c if c <= b' ' || c == 0x7f => return None,
            _ => {}
        }
    }
    if host_len > 0 && dot_pos == Some(host_len - 1) {
        host_len -= 1;
    }
    if host_len == 0 {
        return None;
    }
    let host = &host[..host_len];
    if let Ok(text) = std::str::from_utf8(host) {
        // The usual case, without the lossy conversion's scan and copy.
        return Some(text.to_ascii_lowercase());
    }
    Some(String::from_utf8_lossy(host).to_ascii_lowercase())
}

/// Decodes `%XX` escapes. A `%` without two hex digits and `%00` are errors.
pub fn percent_decode(raw: &[u8]) -> Result<Vec<u8>, UriError> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let c = raw[i];
        if c == b'%' {
            let hi = raw
                .get(i + 1)
                .and_then(|&h| hex_value(h))
                .ok_or(UriError::BadEscape)?;
            let lo = raw
                .get(i + 2)
                .and_then(|&l| hex_value(l))
                .ok_or(UriError::BadEscape)?;
            let byte = hi << 4 | lo;
            if byte == 0 {
                return Err(UriError::NulByte);
            }
            out.push(byte);
            i += 3;
        } else if c == 0 {
            return Err(UriError::NulByte);
        } else {
            out.push(c);
            i += 1;
        }
    }
    Ok(out)
}

fn hex_value(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Normalizes a decoded absolute path: merges `//` runs (nginx's default
/// `merge_slashes on`) and removes dot segments per RFC 3986 §5.2.4, keeping
/// a trailing slash (`/a/b/..` → `/a/`). A `..` above the root is an error,
/// as in nginx, rather than being dropped as the RFC would.
pub fn normalize_path(path: &[u8]) -> Result<Vec<u8>, UriError> {
    normalize(path, true)
}

/// [`normalize_path`], merging `//` runs only when `merge` (nginx's
/// `merge_slashes`): unmerged, an empty segment is a segment, which `..`
/// removes like any other (`/a//../b` → `/a/b`).
fn normalize(path: &[u8], merge: bool) -> Result<Vec<u8>, UriError> {
    let Some(rest) = path.strip_prefix(b"/") else {
        return Err(UriError::UnsupportedForm);
    };
    let mut stack: Vec<&[u8]> = Vec::new();
    let mut trailing_slash = false;
    let mut segments = rest.split(|&c| c == b'/').peekable();
    while let Some(segment) = segments.next() {
        let last = segments.peek().is_none();
        trailing_slash = true;
        match segment {
            b"" if merge || last => {}
            b"." => {}
            b".." => {
                stack.pop().ok_or(UriError::AboveRoot)?;
            }
            _ => {
                stack.push(segment);
                trailing_slash = false;
            }
        }
    }
    let mut out = Vec::with_capacity(path.len());
    for segment in &stack {
        out.push(b'/');
        out.extend_from_slice(segment);
    }
    if trailing_slash || out.is_empty() {
        out.push(b'/');
    }
    Ok(out)
}

/// nginx's `ngx_escape_uri(…, NGX_ESCAPE_URI)`: escapes only what RFC 3986
/// forbids in a URI path (controls, space, `"`, `#`, `%`, `<`, `>`, `?`,
/// `\`, `^`, `` ` ``, `{`, `|`, `}`, DEL and bytes over 0x7F), as the proxy
/// writes a decoded URI to an upstream.
pub fn escape_uri(path: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &c in path {
        let escape = c <= 0x20
            || c >= 0x7f
            || matches!(
                c,
                b'"' | b'#' | b'%' | b'<' | b'>' | b'?' | b'\\' | b'^' | b'`' | b'{' | b'|' | b'}'
            );
        if escape {
            out.extend_from_slice(&[b'%', HEX[usize::from(c >> 4)], HEX[usize::from(c & 0xf)]]);
        } else {
            out.push(c);
        }
    }
}

/// Percent-encodes a path for a `Location` header: keeps RFC 3986 `pchar`s
/// and `/`, escapes everything else (spaces, `%`, `?`, `#`, quotes, controls
/// and non-ASCII bytes) as `%XX` with uppercase hex, as nginx's
/// `ngx_escape_uri` does.
pub fn percent_encode_path(path: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(path.len());
    for &c in path {
        let keep = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'@'
                    | b'/'
            );
        if keep {
            out.push(c as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(c >> 4)] as char);
            out.push(HEX[usize::from(c & 0xf)] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(target: &str) -> Result<String, UriError> {
        parse_target(target.as_bytes()).map(|u| String::from_utf8(u.path).unwrap())
    }

    #[test]
    fn origin_form_splits_args() {
        let u = parse_target(b"/a%20b/c.txt?x=%41&y").unwrap();
        assert_eq!(u.path, b"/a b/c.txt");
        assert_eq!(u.args.as_deref(), Some(&b"x=%41&y"[..]));
        assert_eq!(u.request_uri, b"/a%20b/c.txt?x=%41&y");
        assert_eq!(u.host, None);
        assert_eq!(parse_target(b"/?").unwrap().args.as_deref(), Some(&b""[..]));
        assert_eq!(parse_target(b"/").unwrap().args, None);
    }

    /// `merge_slashes off`: empty segments are kept, `..` removes one.
    #[test]
    fn unmerged_slashes() {
        let keep = |t: &str| {
            String::from_utf8(
                parse_target(t.as_bytes())
                    .unwrap()
                    .path_keeping_slashes()
                    .unwrap(),
            )
            .unwrap()
        };
        assert_eq!(keep("/foo//../bar"), "/foo/bar");
        assert_eq!(keep("/foo///../bar"), "/foo//bar");
        assert_eq!(keep("//a//b//"), "//a//b//");
        assert_eq!(keep("/a/./b/.."), "/a/");
        assert_eq!(keep("/"), "/");
        assert_eq!(keep("/a%2F%2Fb?x"), "/a//b");
    }

    #[test]
    fn encoded_question_mark_stays_in_path() {
        assert_eq!(path("/a%3Fb?c").unwrap(), "/a?b");
    }

    #[test]
    fn dot_segments_and_slashes() {
        assert_eq!(path("/a/b/../c").unwrap(), "/a/c");
        assert_eq!(path("/a/./b/").unwrap(), "/a/b/");
        assert_eq!(path("/a/b/..").unwrap(), "/a/");
        assert_eq!(path("/a/.").unwrap(), "/a/");
        assert_eq!(path("//a///b").unwrap(), "/a/b");
        assert_eq!(path("/a/..").unwrap(), "/");
        assert_eq!(path("/...").unwrap(), "/...");
        assert_eq!(path("/.hidden/..x").unwrap(), "/.hidden/..x");
        assert_eq!(path("/").unwrap(), "/");
    }

    #[test]
    fn encoded_dots_are_resolved_after_decoding() {
        assert_eq!(path("/dir/%2e%2e/a.txt").unwrap(), "/a.txt");
        assert_eq!(path("/dir/%2E%2e%2Fa.txt").unwrap(), "/a.txt");
        assert_eq!(path("/%2e%2e/etc/passwd"), Err(UriError::AboveRoot));
        assert_eq!(path("/a/%2e%2e%2f%2e%2e/x"), Err(UriError::AboveRoot));
    }

    #[test]
    fn climbing_above_root_is_refused() {
        assert_eq!(path("/.."), Err(UriError::AboveRoot));
        assert_eq!(path("/../a.txt"), Err(UriError::AboveRoot));
        assert_eq!(path("/a/../../b"), Err(UriError::AboveRoot));
    }

    #[test]
    fn bad_escapes_and_nul() {
        assert_eq!(path("/%zz"), Err(UriError::BadEscape));
        assert_eq!(path("/%"), Err(UriError::BadEscape));
        assert_eq!(path("/%4"), Err(UriError::BadEscape));
        assert_eq!(path("/%00"), Err(UriError::NulByte));
        assert_eq!(parse_target(b"/a\0b").unwrap_err(), UriError::NulByte);
        // Invalid escapes in args are not our business: nginx passes them on.
        assert!(parse_target(b"/a?%zz").is_ok());
    }

    #[test]
    fn non_utf8_bytes_survive() {
        assert_eq!(parse_target(b"/%FF").unwrap().path, vec![b'/', 0xff]);
    }

    #[test]
    fn absolute_form_sets_host() {
        let u = parse_target(b"http://Foo.COM:99/a.txt?x").unwrap();
        assert_eq!(u.host.as_deref(), Some("foo.com"));
        assert_eq!(u.path, b"/a.txt");
        assert_eq!(u.args.as_deref(), Some(&b"x"[..]));
        let u = parse_target(b"https://example.org").unwrap();
        assert_eq!(u.path, b"/");
        assert_eq!(u.host.as_deref(), Some("example.org"));
        let u = parse_target(b"http://[::1]:8080/x").unwrap();
        assert_eq!(u.host.as_deref(), Some("[::1]"));
    }

    #[test]
    fn refused_forms() {
        assert_eq!(path("*"), Err(UriError::UnsupportedForm));
        assert_eq!(path("example.com:443"), Err(UriError::UnsupportedForm));
        assert_eq!(path(""), Err(UriError::UnsupportedForm));
        assert_eq!(path("http:/x"), Err(UriError::UnsupportedForm));
        assert_eq!(path("http://a..b/"), Err(UriError::InvalidHost));
        assert_eq!(path("http:///x"), Err(UriError::InvalidHost));
        assert_eq!(path("http://user@host/x"), Err(UriError::InvalidHost));
    }

    #[test]
    fn fragment_is_dropped() {
        let u = parse_target(b"/a.txt#frag?x").unwrap();
        assert_eq!(u.path, b"/a.txt");
        assert_eq!(u.args, None);
    }

    #[test]
    fn host_validation_matches_nginx() {
        assert_eq!(
            validate_host(b"EXAMPLE.com.:8080").as_deref(),
            Some("example.com")
        );
        assert_eq!(validate_host(b"a:").as_deref(), Some("a"));
        assert_eq!(validate_host(b"a:xyz").as_deref(), Some("a"));
        assert_eq!(validate_host(b"[::1]:80").as_deref(), Some("[::1]"));
        assert_eq!(validate_host(b"a\\b").as_deref(), Some("a\\b"));
        for bad in [
            &b""[..],
            b"..",
            b"a..b",
            b"a/b",
            b"a b",
            b":80",
            b".",
            b"a\0b",
            b"a\x7fb",
            b"a\tb",
        ] {
            assert_eq!(
                validate_host(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn encoding_for_location() {
        assert_eq!(
            percent_encode_path(b"/a b/%?#\"x\"/"),
            "/a%20b/%25%3F%23%22x%22/"
        );
        assert_eq!(percent_encode_path(&[b'/', 0xff, 0x01]), "/%FF%01");
        let mut out = Vec::new();
        escape_uri(b"/a b/%?#[x]:@+&=\xff", &mut out);
        assert_eq!(out, b"/a%20b/%25%3F%23[x]:@+&=%FF");
        assert_eq!(
            percent_encode_path(b"/ok-._~:@!$&'()*+,;="),
            "/ok-._~:@!$&'()*+,;="
        );
    }
}

#[cfg(test)]
mod authority_tests {
    use super::authority_end;

    /// The hosts of nginx's http_host.t in absolute-form targets.
    #[test]
    fn authorities_as_nginx_reads_them() {
        for ok in [
            &b"example.com/"[..],
            b"example.com.:8080/",
            b"123.40.56.78:9000",
            b"[abcd::ef98:0:7654:321]:80/x",
            b"[v1.0:-._~!$&'()*+,;=:]/",
            b"example.com?a",
            b"",
        ] {
            assert!(
                authority_end(ok).is_some(),
                "{}",
                String::from_utf8_lossy(ok)
            );
        }
        for bad in [
            &b"example.com.:./"[..],
            b"123.40.56.78:9000:80/",
            b"[abcd::ef98:0:7654:321]./",
            b"extra[abcd::ef98:0:7654:321]/",
            b"[abcd::ef98:0:7654:321/",
            b"under_score/",
            b"host#frag",
        ] {
            assert!(
                authority_end(bad).is_none(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}

#[cfg(test)]
mod normalize_laws {
    use super::normalize_path;

    /// A law: a normalised path is a fixed point (normalising it again
    /// changes nothing) with no `.` or `..` segment and no `//`, over
    /// generated paths made of the bytes that matter.
    #[test]
    fn normalising_twice_changes_nothing() {
        const BYTES: &[u8] = b"//..ab%";
        let mut s: u64 = 0x2545_f491_4f6c_dd1d;
        let mut ok = 0;
        for _ in 0..50_000 {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            let mut r = s.wrapping_mul(0x2545_f491_4f6c_dd1d);
            let len = (r % 12) as usize;
            let mut p = vec![b'/'];
            for _ in 0..len {
                r = r.rotate_left(5) ^ 0x9e37_79b9;
                p.push(BYTES[(r % BYTES.len() as u64) as usize]);
            }
            if let Ok(once) = normalize_path(&p) {
                ok += 1;
                assert_eq!(normalize_path(&once).as_ref(), Ok(&once), "{p:?}");
                assert!(!once.windows(2).any(|w| w == b"//"), "{p:?} -> {once:?}");
                for seg in once.split(|&c| c == b'/') {
                    assert!(seg != b"." && seg != b"..", "{p:?} -> {once:?}");
                }
            }
        }
        assert!(ok > 10_000, "the generator reaches valid paths ({ok})");
    }
}
