//! Request heads: the request line, the header fields, and the values derived
//! from them once (host, body framing, keep-alive, conditionals).
//!
//! Owns: turning the bytes of a request head into a [`RequestHead`] or a
//! [`HeadError`] that says which status to answer and what to log, with the
//! request-smuggling defences of nginx 1.22 (`ngx_http_request.c`).
//! Must not: read the socket or enforce buffer sizes; the caller calls
//! [`parse_head`] again when more bytes arrive and [`oversized_head_error`]
//! when the head outgrows `large_client_header_buffers`.
//!
//! The request line is parsed here (RFC 9112 §3) rather than by `httparse`,
//! so that `HTTP/1.2` (served as 1.1), `HTTP/2.0` (505) and runs of spaces
//! are treated as nginx treats them; header fields are parsed by
//! `httparse::parse_headers` (RFC 9112 §5), which refuses obsolete line
//! folding and bytes not allowed in field names and values.

pub use crate::http::head_error::HeadError;
use crate::http::uri::{self, RequestUri};

/// The header fields a first parse has room for (see [`parse_head`]).
const FEW_HEADERS: usize = 24;

/// A request method. nginx accepts any token of `A-Z`, `_` and `-`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// GET.
    Get,
    /// HEAD: like GET without a body in the response.
    Head,
    /// POST.
    Post,
    /// PUT.
    Put,
    /// DELETE.
    Delete,
    /// OPTIONS.
    Options,
    /// TRACE: refused with 405 while the head is read, as nginx does.
    Trace,
    /// PATCH.
    Patch,
    /// CONNECT: refused with 405 while the head is read (nginx ≥ 1.21.1).
    Connect,
    /// Any other token (WebDAV methods, `FOO`); static files answer 405.
    Other(String),
}

impl Method {
    fn from_token(token: &str) -> Method {
        match token {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "DELETE" => Method::Delete,
            "OPTIONS" => Method::Options,
            "TRACE" => Method::Trace,
            "PATCH" => Method::Patch,
            "CONNECT" => Method::Connect,
            other => Method::Other(other.to_string()),
        }
    }

    /// The method as written in the request line.
    pub fn as_str(&self) -> &str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Trace => "TRACE",
            Method::Patch => "PATCH",
            Method::Connect => "CONNECT",
            Method::Other(token) => token,
        }
    }
}

/// The protocol version of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    /// A request line without a version (`GET /path`): nginx answers with
    /// the body alone, no status line and no headers.
    Http09,
    /// HTTP/1.0.
    Http10,
    /// HTTP/1.1, and any HTTP/1.x above it (nginx serves `HTTP/1.2` as 1.1).
    Http11,
}

/// The header fields of a request as received, in order, names' case
/// preserved; values with surrounding whitespace removed, as bytes, since
/// obs-text (0x80–0xFF) is allowed. All of them live in one buffer: two
/// allocations per request, not two per field.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fields {
    /// Names and values, one after the other.
    bytes: Vec<u8>,
    /// Per field: where its name starts, where its value starts (the name's
    /// end), where its value ends.
    spans: Vec<[u32; 3]>,
}

impl Fields {
    /// [`Fields::push`] for a name kept from a line that is not a token
    /// (`ignore_invalid_headers off`).
    fn push_str(&mut self, name: &[u8], value: &[u8]) {
        self.push(&String::from_utf8_lossy(name), value);
    }

    fn push(&mut self, name: &str, value: &[u8]) {
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(name.as_bytes());
        let mid = self.bytes.len() as u32;
        self.bytes.extend_from_slice(value);
        self.spans.push([start, mid, self.bytes.len() as u32]);
    }

    /// Each field's name and value, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.spans.iter().map(|&[a, b, c]| {
            let name = &self.bytes[a as usize..b as usize];
            // Names are tokens (checked by the parser): ASCII.
            (
                std::str::from_utf8(name).unwrap_or_default(),
                &self.bytes[b as usize..c as usize],
            )
        })
    }

    /// How many fields there are.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

/// A parsed request head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHead {
    /// The request method.
    pub method: Method,
    /// The target parsed: `$uri`, `$args`, absolute-form host, and the
    /// target exactly as received (`$request_uri`).
    pub uri: RequestUri,
    /// The protocol version.
    pub version: Version,
    /// All header fields in order.
    pub headers: Fields,
    /// The host to route on: the absolute-form target's host if any, else
    /// the `Host` header; validated, lowercased, port and final dot removed.
    pub host: Option<String>,
    /// The `Content-Length` value, if sent.
    pub content_length: Option<u64>,
    /// Whether the body is `Transfer-Encoding: chunked`.
    pub chunked: bool,
    /// Whether the connection may be kept after this request: HTTP/1.1 unless
    /// `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`.
    pub keep_alive: bool,
    /// `Expect: 100-continue` on an HTTP/1.1 request: answer
    /// `HTTP/1.1 100 Continue` before reading the body.
    pub expect_continue: bool,
    /// `If-Modified-Since`.
    pub if_modified_since: Option<String>,
    /// `If-Unmodified-Since`.
    pub if_unmodified_since: Option<String>,
    /// `If-None-Match`.
    pub if_none_match: Option<String>,
    /// `If-Match`.
    pub if_match: Option<String>,
    /// `If-Range`.
    pub if_range: Option<String>,
    /// `Range` (the first one, as nginx).
    pub range: Option<String>,
    /// `User-Agent` (the first one).
    pub user_agent: Option<String>,
    /// `Referer` (the first one).
    pub referer: Option<String>,
}

impl RequestHead {
    /// The value of the first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// Whether the request announces a body (`Content-Length` > 0 or chunked).
    pub fn has_body(&self) -> bool {
        self.chunked || self.content_length.is_some_and(|n| n > 0)
    }
}

/// Parses a request head from the start of `buf`.
///
/// `Ok(None)`: the head is incomplete, read more. `Ok(Some((head, len)))`:
/// `len` bytes of `buf` were the head; a body or the next request follows.
/// Errors in the request line are reported as soon as the line is complete,
/// as nginx does, even if the headers are not.
pub fn parse_head(buf: &[u8]) -> Result<Option<(RequestHead, usize)>, HeadError> {
    parse_head_with(buf, HeaderRules::default())
}

/// Which header names a server accepts: nginx's `ignore_invalid_headers`
/// and `underscores_in_headers`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderRules {
    /// A line whose name has characters other than letters, digits and
    /// `-` (or `_`, see below) is dropped; off: kept.
    pub ignore_invalid: bool,
    /// `_` is a valid name character.
    pub underscores: bool,
}

impl Default for HeaderRules {
    /// nginx's defaults: invalid lines ignored, `_` invalid.
    fn default() -> Self {
        HeaderRules {
            ignore_invalid: true,
            underscores: false,
        }
    }
}

impl HeaderRules {
    /// Whether a field named `name` is kept (nginx's `r->invalid_header`
    /// with `ignore_invalid_headers`).
    fn keeps(self, name: &[u8]) -> bool {
        if !self.ignore_invalid {
            return true;
        }
        name.iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'-' || (c == b'_' && self.underscores))
    }
}

/// [`parse_head`] under a server's [`HeaderRules`].
pub fn parse_head_with(
    buf: &[u8],
    rules: HeaderRules,
) -> Result<Option<(RequestHead, usize)>, HeadError> {
    // RFC 9112 §2.2: ignore empty lines before the request line.
    let start = buf
        .iter()
        .position(|&c| c != b'\r' && c != b'\n')
        .unwrap_or(buf.len());
    let Some(line_len) = buf[start..].iter().position(|&c| c == b'\n') else {
        return Ok(None);
    };
    let line_end = start + line_len + 1;
    let line = trim_cr(&buf[start..start + line_len]);
    let line = parse_request_line(line)?;
    if line.version == Version::Http09 {
        // No headers follow an HTTP/0.9 request line.
        let head = build_head(line, Fields::default())?;
        return Ok(Some((head, line_end)));
    }

    // Most heads have a handful of fields: a small array on the stack is
    // tried first (preparing a slot per line costs more than parsing a
    // short head); only a head with more fields is parsed again with a slot
    // for every line its bytes hold. How many fields a request may carry is
    // the server's `max_headers`, checked once the server is known; the
    // head's size is bounded by `large_client_header_buffers`.
    let mut few = [httparse::EMPTY_HEADER; FEW_HEADERS];
    let mut all = Vec::new();
    let mut parsed = httparse::parse_headers(&buf[line_end..], &mut few);
    if let Err(httparse::Error::TooManyHeaders) = parsed {
        all.resize(line_slots(&buf[line_end..]), httparse::EMPTY_HEADER);
        parsed = httparse::parse_headers(&buf[line_end..], &mut all);
    }
    let (headers_len, headers) = match parsed {
        Ok(httparse::Status::Complete((len, parsed))) => (len, collect_headers(parsed, rules)),
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooManyHeaders),
        Err(httparse::Error::HeaderName | httparse::Error::Token) => {
            // A name outside a token, or a line without a colon: nginx
            // skips such lines (`ignore_invalid_headers on`) or keeps them
            // (`off`); a name starting with a colon or holding a control
            // character is refused either way. Parse again with them
            // removed, or made into tokens nginx would keep.
            let Some((len, kept, extra)) = invalid_lines(&buf[line_end..], rules)? else {
                return Ok(None);
            };
            let mut slots = vec![httparse::EMPTY_HEADER; line_slots(&kept)];
            match httparse::parse_headers(&kept, &mut slots) {
                Ok(httparse::Status::Complete((_, parsed))) => {
                    let mut fields = collect_headers(parsed, rules);
                    for (name, value) in &extra {
                        fields.push_str(name, trim_ows(value));
                    }
                    (len, fields)
                }
                Ok(httparse::Status::Partial) => return Err(HeadError::InvalidHeaderLine),
                Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooManyHeaders),
                Err(_) => return Err(HeadError::InvalidHeaderLine),
            }
        }
        Err(_) => return Err(HeadError::InvalidHeaderLine),
    };
    let head = build_head(line, headers)?;
    Ok(Some((head, line_end + headers_len)))
}

/// Slots enough for every header line `bytes` can hold: a line ends with
/// `\n`, so there are no more lines than newlines (plus one unfinished).
fn line_slots(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&c| c == b'\n').count() + 1
}

/// Owned header fields, without those nginx ignores under `rules`.
fn collect_headers(parsed: &[httparse::Header<'_>], rules: HeaderRules) -> Fields {
    let kept = || parsed.iter().filter(|h| rules.keeps(h.name.as_bytes()));
    let mut fields = Fields {
        bytes: Vec::with_capacity(kept().map(|h| h.name.len() + h.value.len()).sum()),
        spans: Vec::with_capacity(kept().count()),
    };
    for h in kept() {
        fields.push(h.name, trim_ows(h.value));
    }
    fields
}

/// Whether `c` may appear in a field name (RFC 9110 §5.6.2 `tchar`).
fn is_tchar(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)
}

/// A field kept from a line `httparse` refuses: its name and raw value.
type ExtraField = (Vec<u8>, Vec<u8>);

/// What [`invalid_lines`] found: the section's length, the lines left for
/// `httparse`, and the fields kept apart.
type Sorted = (usize, Vec<u8>, Vec<ExtraField>);

/// The header section (up to and including its empty line) without the
/// lines whose names are not tokens, the section's length in the original
/// bytes, and those lines' fields when `rules` keep them
/// (`ignore_invalid_headers off`); `Ok(None)` while the section is
/// incomplete. A name that starts with `:` or holds a control character is
/// refused, as nginx's parser refuses it; other bad lines (obsolete
/// folding, bad bytes in values) are kept for `httparse` to refuse.
fn invalid_lines(section: &[u8], rules: HeaderRules) -> Result<Option<Sorted>, HeadError> {
    let mut kept = Vec::with_capacity(section.len());
    let mut extra = Vec::new();
    let mut pos = 0;
    loop {
        let Some(nl) = section[pos..].iter().position(|&c| c == b'\n') else {
            return Ok(None);
        };
        let nl = nl + pos;
        let line = &section[pos..=nl];
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        pos = nl + 1;
        if body.is_empty() {
            kept.extend_from_slice(line);
            return Ok(Some((pos, kept, extra)));
        }
        let folded = matches!(body[0], b' ' | b'\t');
        if folded {
            kept.extend_from_slice(line);
            continue;
        }
        let (name, value) = match body.iter().position(|&c| c == b':') {
            None => (body, &b""[..]),
            Some(colon) => (&body[..colon], &body[colon + 1..]),
        };
        if name.is_empty() || name.iter().any(|&c| c <= b' ' || c == 0x7f) {
            return Err(HeadError::InvalidHeaderLine);
        }
        if value.contains(&0) || body.contains(&b'\r') {
            kept.extend_from_slice(line);
            continue;
        }
        if name.iter().all(|&c| is_tchar(c)) && body.contains(&b':') {
            kept.extend_from_slice(line);
        } else if rules.keeps(name) {
            extra.push((name.to_vec(), value.to_vec()));
        }
    }
}

/// Says which error an oversized, still incomplete head deserves, as nginx
/// does when `large_client_header_buffers` run out: 414 while the request
/// line is unfinished, else 494 ("Request Header Or Cookie Too Large").
pub fn oversized_head_error(buf: &[u8]) -> HeadError {
    let start = buf
        .iter()
        .position(|&c| c != b'\r' && c != b'\n')
        .unwrap_or(buf.len());
    if buf[start..].contains(&b'\n') {
        HeadError::HeaderTooLarge
    } else {
        HeadError::UriTooLarge
    }
}

/// The three parts of a request line.
struct RequestLine {
    /// The method token.
    method: Method,
    /// The version, `Http09` when absent.
    version: Version,
    /// The target parsed; done with the line so its errors come first.
    uri: RequestUri,
}

/// Parses `method SP target SP HTTP/x.y` (RFC 9112 §3), accepting runs of
/// spaces between the parts as nginx does.
fn parse_request_line(line: &[u8]) -> Result<RequestLine, HeadError> {
    let mut parts = line.split(|&c| c == b' ').filter(|p| !p.is_empty());
    let method = parts.next().ok_or(HeadError::InvalidRequest)?;
    if !method
        .iter()
        .all(|&c| c.is_ascii_uppercase() || c == b'_' || c == b'-')
    {
        return Err(HeadError::InvalidMethod);
    }
    let target = parts.next().ok_or(HeadError::InvalidRequest)?;
    // Controls, DEL and anything but plain spaces (already split) are refused.
    if target.iter().any(|&c| c < 0x21 || c == 0x7f) {
        return Err(HeadError::InvalidRequest);
    }
    let raw_version = parts.next();
    if parts.next().is_some() {
        return Err(HeadError::InvalidRequest);
    }
    // As nginx, the target is judged before the version: `PRI * HTTP/2.0`
    // (an HTTP/2 preface) is a 400, not a 505.
    let uri = uri::parse_target(target).map_err(HeadError::InvalidUri)?;
    let version = match raw_version {
        None => Version::Http09,
        Some(v) => parse_version(v)?,
    };
    // Methods are ASCII by the check above.
    let method = Method::from_token(&String::from_utf8_lossy(method));
    if version == Version::Http09 && method != Method::Get {
        return Err(HeadError::InvalidRequest);
    }
    Ok(RequestLine {
        method,
        version,
        uri,
    })
}

/// The most digits nginx reads in a version number (it caps each at 999).
const MAX_VERSION_DIGITS: usize = 3;

/// `HTTP/major.minor`: 1.0 → 1.0, 1.x → 1.1, 2+ → 505, 0.x or junk → 400.
fn parse_version(v: &[u8]) -> Result<Version, HeadError> {
    let numbers = v.strip_prefix(b"HTTP/").ok_or(HeadError::InvalidRequest)?;
    let dot = numbers
        .iter()
        .position(|&c| c == b'.')
        .ok_or(HeadError::InvalidRequest)?;
    let (major, minor) = (&numbers[..dot], &numbers[dot + 1..]);
    let number = |digits: &[u8]| -> Result<u32, HeadError> {
        if digits.is_empty()
            || digits.len() > MAX_VERSION_DIGITS
            || !digits.iter().all(u8::is_ascii_digit)
        {
            return Err(HeadError::InvalidRequest);
        }
        Ok(digits.iter().fold(0, |n, &d| n * 10 + u32::from(d - b'0')))
    };
    let (major, minor) = (number(major)?, number(minor)?);
    match (major, minor) {
        (0, _) => Err(HeadError::InvalidRequest),
        (1, 0) => Ok(Version::Http10),
        (1, _) => Ok(Version::Http11),
        _ => Err(HeadError::UnsupportedVersion),
    }
}

/// Headers nginx 1.22 refuses to see twice (`ngx_http_process_unique_header_line`).
const UNIQUE_HEADERS: &[&str] = &[
    "Content-Length",
    "Transfer-Encoding",
    "If-Modified-Since",
    "If-Unmodified-Since",
    "If-Match",
    "If-None-Match",
    "If-Range",
    "Expect",
    "Authorization",
];

/// Derives the head's fields and applies nginx's checks, in nginx's order
/// (`ngx_http_process_request_headers`, then `ngx_http_process_request_header`).
fn build_head(line: RequestLine, headers: Fields) -> Result<RequestHead, HeadError> {
    let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
    let mut host_header: Option<&[u8]> = None;
    let mut valid_host: Option<String> = None;
    let mut connection: Option<bool> = None; // Some(true): keep-alive, Some(false): close
    let mut first: [Option<&[u8]>; UNIQUE_HEADERS.len()] = [None; UNIQUE_HEADERS.len()];
    let (mut range, mut user_agent, mut referer) = (None, None, None);

    for (name, value) in headers.iter() {
        if name.eq_ignore_ascii_case("Host") {
            if host_header.is_some() {
                return Err(HeadError::DuplicateHost);
            }
            host_header = Some(value);
            valid_host = Some(uri::validate_host(value).ok_or(HeadError::InvalidHost)?);
        } else if let Some(i) = UNIQUE_HEADERS
            .iter()
            .position(|u| name.eq_ignore_ascii_case(u))
        {
            if let Some(prev) = first[i] {
                return Err(HeadError::DuplicateHeader {
                    name: name.to_string(),
                    previous: text(prev),
                    value: text(value),
                });
            }
            first[i] = Some(value);
        } else if name.eq_ignore_ascii_case("Connection") {
            // nginx: a substring match, "close" first; the last header wins.
            let v = value.to_ascii_lowercase();
            if contains(&v, b"close") {
                connection = Some(false);
            } else if contains(&v, b"keep-alive") {
                connection = Some(true);
            }
        } else if name.eq_ignore_ascii_case("Range") {
            range.get_or_insert_with(|| text(value));
        } else if name.eq_ignore_ascii_case("User-Agent") {
            user_agent.get_or_insert_with(|| text(value));
        } else if name.eq_ignore_ascii_case("Referer") {
            referer.get_or_insert_with(|| text(value));
        }
    }
    let unique = |name: &str| {
        let i = UNIQUE_HEADERS.iter().position(|u| *u == name)?;
        first[i]
    };

    if host_header.is_none() && line.version == Version::Http11 {
        return Err(HeadError::MissingHost);
    }
    let content_length = match unique("Content-Length") {
        Some(v) => Some(parse_content_length(v).ok_or(HeadError::InvalidContentLength)?),
        None => None,
    };
    let mut chunked = false;
    if let Some(te) = unique("Transfer-Encoding") {
        if line.version < Version::Http11 {
            return Err(HeadError::TransferEncodingInHttp10);
        }
        if !te.eq_ignore_ascii_case(b"chunked") {
            return Err(HeadError::UnknownTransferEncoding(text(te)));
        }
        if content_length.is_some() {
            return Err(HeadError::ContentLengthAndTransferEncoding);
        }
        chunked = true;
    }
    if matches!(line.method, Method::Trace | Method::Connect) {
        return Err(HeadError::MethodNotAllowed(line.method));
    }

    let keep_alive = match connection {
        Some(keep) => keep && line.version >= Version::Http10,
        None => line.version == Version::Http11,
    };
    let expect_continue = line.version == Version::Http11
        && unique("Expect").is_some_and(|v| v.eq_ignore_ascii_case(b"100-continue"));
    let host = match &line.uri.host {
        Some(h) => Some(h.clone()),
        None => valid_host,
    };
    let owned = |name: &str| unique(name).map(text);
    Ok(RequestHead {
        if_modified_since: owned("If-Modified-Since"),
        if_unmodified_since: owned("If-Unmodified-Since"),
        if_none_match: owned("If-None-Match"),
        if_match: owned("If-Match"),
        if_range: owned("If-Range"),
        method: line.method,
        uri: line.uri,
        version: line.version,
        host,
        content_length,
        chunked,
        keep_alive,
        expect_continue,
        range,
        user_agent,
        referer,
        headers,
    })
}

/// nginx's `ngx_atoof`: decimal digits only (no sign, no spaces inside),
/// at least one, at most `i64::MAX` (nginx's `off_t`).
fn parse_content_length(v: &[u8]) -> Option<u64> {
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut n: u64 = 0;
    for &d in v {
        n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    (n <= i64::MAX as u64).then_some(n)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Strips spaces and tabs around a field value (RFC 9112 §5.1 OWS).
fn trim_ows(v: &[u8]) -> &[u8] {
    let is_ows = |c: &u8| *c == b' ' || *c == b'\t';
    let start = v.iter().position(|c| !is_ows(c)).unwrap_or(v.len());
    let end = v.iter().rposition(|c| !is_ows(c)).map_or(start, |e| e + 1);
    &v[start..end]
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
