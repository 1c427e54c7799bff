//! nginx 1.22.1's two head state machines, byte for byte:
//! `ngx_http_parse_request_line` and `ngx_http_parse_header_line`
//! (`src/http/ngx_http_parse.c`), so that nowait refuses, accepts and
//! splits a request head exactly where nginx does — including a refusal
//! found before the line is complete (`"` alone is a 400 at once). The
//! header-line machine serves upstream responses too
//! ([`upstream_header_line`]), as nginx's one function does.
//!
//! Owns: the syntax of the request line and of one header line.
//! Must not: interpret anything (targets, versions, fields): `request`
//! does, with `uri`.

use crate::http::head_error::HeadError;

/// A request line nginx accepted; positions are in the scanned buffer.
#[derive(Debug, PartialEq, Eq)]
pub struct ScannedLine<'a> {
    /// The method token (`A-Z`, `_`, `-`).
    pub method: &'a [u8],
    /// The target as sent: from `/` or the scheme to the space or line end.
    pub target: &'a [u8],
    /// `Some((major, minor))`, or `None` for a line without a version
    /// (HTTP/0.9). nginx caps the minor at 999 and the major at 1.
    pub version: Option<(u16, u16)>,
    /// Where the line ends (after its LF), leading empty lines included.
    pub end: usize,
}

/// The states of `ngx_http_parse_request_line` (IPv6 literals, ports and
/// the URI's own states folded where they decide nothing but flags).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Line {
    Start,
    Method,
    SpacesBeforeUri,
    Schema,
    SchemaSlash,
    SchemaSlashSlash,
    HostStart,
    Host,
    HostEnd,
    HostIpLiteral,
    Port,
    Uri,
    Http09,
    H,
    Ht,
    Htt,
    Http,
    FirstMajorDigit,
    MajorDigit,
    FirstMinorDigit,
    MinorDigit,
    SpacesAfterDigit,
    AlmostDone,
}

/// nginx's largest minor version before one more digit is refused.
const MAX_MINOR_BEFORE_DIGIT: u16 = 99;

/// Scans the request line at the start of `buf` as nginx does:
/// `Ok(None)` while it is incomplete and nothing is wrong yet; the error
/// as soon as a byte is wrong (nginx's `NGX_HTTP_PARSE_INVALID_METHOD`,
/// `_INVALID_REQUEST`, `_INVALID_VERSION`, `_INVALID_09_METHOD`).
pub fn request_line(buf: &[u8]) -> Result<Option<ScannedLine<'_>>, HeadError> {
    use Line as S;
    let mut state = S::Start;
    let (mut start, mut method_end, mut target_start, mut target_end) = (0, 0, 0, 0);
    let (mut major, mut minor): (u16, u16) = (0, 0);
    let mut versioned = false;
    let mut p = 0;
    while p < buf.len() {
        let ch = buf[p];
        let lower = ch | 0x20;
        state = match state {
            S::Start => match ch {
                b'\r' | b'\n' => S::Start,
                c if c.is_ascii_uppercase() || c == b'_' || c == b'-' => {
                    start = p;
                    S::Method
                }
                _ => return Err(HeadError::InvalidMethod),
            },
            S::Method => match ch {
                b' ' => {
                    method_end = p;
                    S::SpacesBeforeUri
                }
                c if c.is_ascii_uppercase() || c == b'_' || c == b'-' => S::Method,
                _ => return Err(HeadError::InvalidMethod),
            },
            S::SpacesBeforeUri => match ch {
                b'/' => {
                    target_start = p;
                    S::Uri
                }
                b' ' => S::SpacesBeforeUri,
                _ if lower.is_ascii_lowercase() => {
                    target_start = p;
                    S::Schema
                }
                _ => return Err(HeadError::InvalidRequest),
            },
            S::Schema => match ch {
                b':' => S::SchemaSlash,
                b'+' | b'-' | b'.' => S::Schema,
                c if c.is_ascii_digit() || lower.is_ascii_lowercase() => S::Schema,
                _ => return Err(HeadError::InvalidRequest),
            },
            S::SchemaSlash if ch == b'/' => S::SchemaSlashSlash,
            S::SchemaSlashSlash if ch == b'/' => S::HostStart,
            S::SchemaSlash | S::SchemaSlashSlash => return Err(HeadError::InvalidRequest),
            S::HostStart if ch == b'[' => S::HostIpLiteral,
            S::HostStart | S::Host
                if lower.is_ascii_lowercase()
                    || ch.is_ascii_digit()
                    || ch == b'.'
                    || ch == b'-' =>
            {
                S::Host
            }
            S::HostStart | S::Host | S::HostEnd => match ch {
                b':' => S::Port,
                b'/' | b'?' => S::Uri,
                b' ' => {
                    target_end = p;
                    S::Http09
                }
                _ => return Err(HeadError::InvalidRequest),
            },
            S::HostIpLiteral => match ch {
                b']' => S::HostEnd,
                b':' | b'-' | b'.' | b'_' | b'~' => S::HostIpLiteral,
                b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' => {
                    S::HostIpLiteral
                }
                c if c.is_ascii_digit() || lower.is_ascii_lowercase() => S::HostIpLiteral,
                _ => return Err(HeadError::InvalidRequest),
            },
            S::Port => match ch {
                c if c.is_ascii_digit() => S::Port,
                b'/' | b'?' => S::Uri,
                b' ' => {
                    target_end = p;
                    S::Http09
                }
                _ => return Err(HeadError::InvalidRequest),
            },
            // sw_after_slash_in_uri, sw_check_uri and sw_uri refuse the
            // same bytes; they differ only in flags nginx keeps.
            S::Uri => match ch {
                b' ' => {
                    target_end = p;
                    S::Http09
                }
                b'\r' => {
                    target_end = p;
                    S::AlmostDone
                }
                b'\n' => {
                    target_end = p;
                    return done(buf, start, method_end, target_start, target_end, None, p);
                }
                c if c < 0x20 || c == 0x7f => return Err(HeadError::InvalidRequest),
                _ => S::Uri,
            },
            S::Http09 => match ch {
                b' ' => S::Http09,
                b'\r' => S::AlmostDone,
                b'\n' => return done(buf, start, method_end, target_start, target_end, None, p),
                b'H' => S::H,
                _ => return Err(HeadError::InvalidRequest),
            },
            S::H if ch == b'T' => S::Ht,
            S::Ht if ch == b'T' => S::Htt,
            S::Htt if ch == b'P' => S::Http,
            S::Http if ch == b'/' => S::FirstMajorDigit,
            S::H | S::Ht | S::Htt | S::Http => return Err(HeadError::InvalidRequest),
            S::FirstMajorDigit => match ch {
                b'1'..=b'9' => {
                    major = u16::from(ch - b'0');
                    versioned = true;
                    if major > 1 {
                        return Err(HeadError::UnsupportedVersion);
                    }
                    S::MajorDigit
                }
                _ => return Err(HeadError::InvalidRequest),
            },
            S::MajorDigit => match ch {
                b'.' => S::FirstMinorDigit,
                b'0'..=b'9' => {
                    major = major * 10 + u16::from(ch - b'0');
                    if major > 1 {
                        return Err(HeadError::UnsupportedVersion);
                    }
                    S::MajorDigit
                }
                _ => return Err(HeadError::InvalidRequest),
            },
            S::FirstMinorDigit => match ch {
                b'0'..=b'9' => {
                    minor = u16::from(ch - b'0');
                    S::MinorDigit
                }
                _ => return Err(HeadError::InvalidRequest),
            },
            S::MinorDigit => match ch {
                b'\r' => S::AlmostDone,
                b'\n' => {
                    let v = Some((major, minor));
                    return done(buf, start, method_end, target_start, target_end, v, p);
                }
                b' ' => S::SpacesAfterDigit,
                b'0'..=b'9' if minor <= MAX_MINOR_BEFORE_DIGIT => {
                    minor = minor * 10 + u16::from(ch - b'0');
                    S::MinorDigit
                }
                _ => return Err(HeadError::InvalidRequest),
            },
            S::SpacesAfterDigit => match ch {
                b' ' => S::SpacesAfterDigit,
                b'\r' => S::AlmostDone,
                b'\n' => {
                    let v = Some((major, minor));
                    return done(buf, start, method_end, target_start, target_end, v, p);
                }
                _ => return Err(HeadError::InvalidRequest),
            },
            S::AlmostDone => match ch {
                b'\n' => {
                    let v = versioned.then_some((major, minor));
                    return done(buf, start, method_end, target_start, target_end, v, p);
                }
                _ => return Err(HeadError::InvalidRequest),
            },
        };
        p += 1;
    }
    Ok(None)
}

/// nginx's `done:` label: an HTTP/0.9 line must be a GET.
fn done(
    buf: &[u8],
    start: usize,
    method_end: usize,
    target_start: usize,
    target_end: usize,
    version: Option<(u16, u16)>,
    lf: usize,
) -> Result<Option<ScannedLine<'_>>, HeadError> {
    let method = &buf[start..method_end];
    if version.is_none() && method != b"GET" {
        return Err(HeadError::Invalid09Method);
    }
    Ok(Some(ScannedLine {
        method,
        target: &buf[target_start..target_end],
        version,
        end: lf + 1,
    }))
}

/// One line of the header section, positions relative to the buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum HeaderLine {
    /// A field: `name` and `value` as `(start, end)`; `invalid` when the
    /// name holds bytes other than letters, digits, `-` (and `_` when
    /// allowed): nginx's `r->invalid_header`. The next line at `next`.
    Field {
        /// The name's bounds.
        name: (usize, usize),
        /// The value's bounds, spaces (not tabs) around it excluded.
        value: (usize, usize),
        /// Whether `ignore_invalid_headers` drops it.
        invalid: bool,
        /// Where the next line starts.
        next: usize,
    },
    /// A line nginx skips in an upstream's head (a repeated status line:
    /// IIS); the next at `next`. Never in a client's.
    Ignored {
        /// Where the next line starts.
        next: usize,
    },
    /// The blank line ending the section; the body at `next`.
    End {
        /// Where the body starts.
        next: usize,
    },
    /// The line is not complete.
    Partial,
    /// nginx's `NGX_HTTP_PARSE_INVALID_HEADER`; an upstream's is logged
    /// from the line's start to `end` with the byte at `end` (nginx's
    /// `header_end`).
    Invalid {
        /// Where nginx's `header_end` points.
        end: usize,
    },
}

/// The states of `ngx_http_parse_header_line`.
#[derive(Clone, Copy)]
enum Field {
    Start,
    Name,
    SpaceBeforeValue,
    Value,
    SpaceAfterValue,
    IgnoreLine,
    AlmostDone,
    HeaderAlmostDone,
}

/// Scans the header line starting at `start`, byte by byte as nginx does
/// for a client request (`underscores_in_headers` is `underscores`).
pub fn header_line(buf: &[u8], start: usize, underscores: bool) -> HeaderLine {
    scan_header_line::<false>(buf, start, underscores)
}

/// Scans the header line starting at `start` as nginx does for an
/// upstream's response (`allow_underscores`, `r->upstream` set): a repeated
/// `HTTP/...` status line is [`HeaderLine::Ignored`].
pub fn upstream_header_line(buf: &[u8], start: usize) -> HeaderLine {
    scan_header_line::<true>(buf, start, true)
}

/// `ngx_http_parse_header_line`; `UPSTREAM` is nginx's `r->upstream`.
fn scan_header_line<const UPSTREAM: bool>(
    buf: &[u8],
    start: usize,
    underscores: bool,
) -> HeaderLine {
    use Field as S;
    let mut state = S::Start;
    let mut invalid = false;
    // nginx's header_name_end, header_start, header_end.
    let (mut name_end, mut value_start, mut header_end) = (start, start, start);
    let name_byte = |c: u8| c.is_ascii_alphanumeric() || c == b'-';
    for (p, &ch) in buf.iter().enumerate().skip(start) {
        let field = |name_end, value_start, value_end, invalid| HeaderLine::Field {
            name: (start, name_end),
            value: (value_start, value_end),
            invalid,
            next: p + 1,
        };
        state = match state {
            S::Start => match ch {
                b'\r' => {
                    header_end = p;
                    S::HeaderAlmostDone
                }
                b'\n' => return HeaderLine::End { next: p + 1 },
                c if name_byte(c) => S::Name,
                b'_' => {
                    invalid = !underscores;
                    S::Name
                }
                // Obsolete folding, a control byte, an empty name.
                c if c <= b' ' || c == 0x7f || c == b':' => return HeaderLine::Invalid { end: p },
                _ => {
                    invalid = true;
                    S::Name
                }
            },
            S::Name => match ch {
                c if name_byte(c) => S::Name,
                b'_' => {
                    invalid |= !underscores;
                    S::Name
                }
                b':' => {
                    name_end = p;
                    S::SpaceBeforeValue
                }
                // A line without a colon: a field with an empty value.
                b'\r' => {
                    (name_end, value_start, header_end) = (p, p, p);
                    S::AlmostDone
                }
                b'\n' => return field(p, p, p, invalid),
                // IIS may send the duplicate "HTTP/1.1 ..." lines.
                b'/' if UPSTREAM && &buf[start..p] == b"HTTP" => S::IgnoreLine,
                c if c <= b' ' || c == 0x7f => return HeaderLine::Invalid { end: p },
                _ => {
                    invalid = true;
                    S::Name
                }
            },
            S::SpaceBeforeValue => match ch {
                b' ' => S::SpaceBeforeValue,
                b'\r' => {
                    (value_start, header_end) = (p, p);
                    S::AlmostDone
                }
                b'\n' => return field(name_end, p, p, invalid),
                0 => return HeaderLine::Invalid { end: p },
                _ => {
                    value_start = p;
                    S::Value
                }
            },
            S::Value => match ch {
                b' ' => {
                    header_end = p;
                    S::SpaceAfterValue
                }
                b'\r' => {
                    header_end = p;
                    S::AlmostDone
                }
                b'\n' => return field(name_end, value_start, p, invalid),
                0 => return HeaderLine::Invalid { end: p },
                _ => S::Value,
            },
            S::SpaceAfterValue => match ch {
                b' ' => S::SpaceAfterValue,
                b'\r' => S::AlmostDone,
                b'\n' => return field(name_end, value_start, header_end, invalid),
                0 => return HeaderLine::Invalid { end: p },
                _ => S::Value,
            },
            S::IgnoreLine => match ch {
                b'\n' => return HeaderLine::Ignored { next: p + 1 },
                _ => S::IgnoreLine,
            },
            S::AlmostDone => match ch {
                b'\n' => return field(name_end, value_start, header_end, invalid),
                b'\r' => S::AlmostDone,
                // nginx does not move header_end here: it shows the byte
                // where the value ended (the CR, or the first trailing
                // space), not the one after the CR.
                _ => return HeaderLine::Invalid { end: header_end },
            },
            S::HeaderAlmostDone => match ch {
                b'\n' => return HeaderLine::End { next: p + 1 },
                _ => return HeaderLine::Invalid { end: header_end },
            },
        };
    }
    HeaderLine::Partial
}

#[cfg(test)]
#[path = "head_scan_tests.rs"]
mod tests;
