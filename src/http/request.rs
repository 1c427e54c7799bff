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
//! The syntax is nginx's: the request line is scanned by nginx's own state
//! machine (`head_scan`), which refuses a wrong byte as soon as it arrives
//! and decides 400 against 505 as nginx does; header fields are parsed by
//! `httparse::parse_headers` where nginx would read them the same way, and
//! by nginx's header-line machine everywhere else (see
//! [`parse_head_with`]).

pub use crate::http::head_error::HeadError;
use crate::http::head_scan::{self, HeaderLine, ScannedLine};
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
    /// The method a request line's token names. The token's bytes are
    /// matched as they are: nginx's machine took only `A-Z`, `_` and `-`,
    /// so the known methods need no conversion to text first.
    fn from_token(token: &[u8]) -> Method {
        match token {
            b"GET" => Method::Get,
            b"HEAD" => Method::Head,
            b"POST" => Method::Post,
            b"PUT" => Method::Put,
            b"DELETE" => Method::Delete,
            b"OPTIONS" => Method::Options,
            b"TRACE" => Method::Trace,
            b"PATCH" => Method::Patch,
            b"CONNECT" => Method::Connect,
            other => Method::Other(String::from_utf8_lossy(other).into_owned()),
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
///
/// The request line is scanned by nginx's state machine
/// ([`head_scan::request_line`]), so a wrong byte is refused as soon as it
/// arrives. The header section goes to `httparse` first: when it parses
/// the whole section and the section holds no tab, nginx would accept it
/// with the same fields (`httparse` is stricter everywhere else, and trims
/// tabs around values where nginx trims only spaces). Anything else —
/// an incomplete section, a refusal, a tab — is scanned line by line by
/// nginx's own machine ([`head_scan::header_line`]), whose verdict is
/// nginx's; the complete lines of an incomplete section are checked at
/// once (an invalid or repeated `Host` is a 400 before the head ends).
pub fn parse_head_with(
    buf: &[u8],
    rules: HeaderRules,
) -> Result<Option<(RequestHead, usize)>, HeadError> {
    let Some(scanned) = head_scan::request_line(buf)? else {
        return Ok(None);
    };
    let line_end = scanned.end;
    let line = parse_request_line(&scanned)?;
    if line.version == Version::Http09 {
        // No headers follow an HTTP/0.9 request line.
        let head = build_head(line, Fields::default())?;
        return Ok(Some((head, line_end)));
    }
    let section = &buf[line_end..];
    let (headers_len, headers) = match fast_fields(section, rules) {
        Some(found) => found,
        None => match scan_fields(section, rules)? {
            Some(found) => found,
            None => return Ok(None),
        },
    };
    let head = build_head(line, headers)?;
    Ok(Some((head, line_end + headers_len)))
}

/// Slots enough for every header line `bytes` can hold: a line ends with
/// `\n`, so there are no more lines than newlines (plus one unfinished).
fn line_slots(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&c| c == b'\n').count() + 1
}

/// The header section by `httparse`, when nginx would read it the same
/// way (see [`parse_head_with`]); `None`: ask nginx's machine.
fn fast_fields(section: &[u8], rules: HeaderRules) -> Option<(usize, Fields)> {
    // Most heads have a handful of fields: a small array on the stack is
    // tried first (preparing a slot per line costs more than parsing a
    // short head); only a head with more fields is parsed again with a slot
    // for every line its bytes hold. How many fields a request may carry is
    // the server's `max_headers`, checked once the server is known; the
    // head's size is bounded by `large_client_header_buffers`.
    let mut few = [httparse::EMPTY_HEADER; FEW_HEADERS];
    let mut all = Vec::new();
    let mut parsed = httparse::parse_headers(section, &mut few);
    if let Err(httparse::Error::TooManyHeaders) = parsed {
        all.resize(line_slots(section), httparse::EMPTY_HEADER);
        parsed = httparse::parse_headers(section, &mut all);
    }
    match parsed {
        Ok(httparse::Status::Complete((len, parsed)))
            if memchr::memchr(b'\t', &section[..len]).is_none() =>
        {
            Some((len, collect_headers(parsed, len, rules)))
        }
        _ => None,
    }
}

/// The header section by nginx's state machine: `Ok(None)` while it is
/// incomplete (the complete lines checked as nginx checks each line).
fn scan_fields(section: &[u8], rules: HeaderRules) -> Result<Option<(usize, Fields)>, HeadError> {
    let mut fields = Fields::default();
    let mut pos = 0;
    loop {
        match head_scan::header_line(section, pos, rules.underscores) {
            HeaderLine::Field {
                name,
                value,
                invalid,
                next,
            } => {
                pos = next;
                if invalid && rules.ignore_invalid {
                    continue;
                }
                fields.push_str(&section[name.0..name.1], &section[value.0..value.1]);
            }
            // Only an upstream's head has lines nginx skips.
            HeaderLine::Ignored { next } => pos = next,
            HeaderLine::End { next } => return Ok(Some((next, fields))),
            HeaderLine::Partial => {
                walk_fields(&fields)?;
                return Ok(None);
            }
            HeaderLine::Invalid { .. } => return Err(HeadError::InvalidHeaderLine),
        }
    }
}

/// Owned header fields, without those nginx ignores under `rules`;
/// `section_len`, the bytes they were parsed from, is room enough for
/// their names and values (each name is checked once, not once more to
/// size the buffers).
fn collect_headers(
    parsed: &[httparse::Header<'_>],
    section_len: usize,
    rules: HeaderRules,
) -> Fields {
    let mut fields = Fields {
        bytes: Vec::with_capacity(section_len),
        spans: Vec::with_capacity(parsed.len()),
    };
    for h in parsed.iter().filter(|h| rules.keeps(h.name.as_bytes())) {
        fields.push(h.name, trim_spaces(h.value));
    }
    fields
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

/// Interprets a request line nginx's machine accepted (RFC 9112 §3):
/// the target is parsed (nginx's `ngx_http_process_request_uri`), the
/// version mapped: 1.0 → 1.0, 1.x → 1.1, none → 0.9.
fn parse_request_line(scanned: &ScannedLine<'_>) -> Result<RequestLine, HeadError> {
    let uri = uri::parse_target(scanned.target).map_err(HeadError::InvalidUri)?;
    let version = match scanned.version {
        None => Version::Http09,
        Some((1, 0)) => Version::Http10,
        Some(_) => Version::Http11,
    };
    let method = Method::from_token(scanned.method);
    Ok(RequestLine {
        method,
        version,
        uri,
    })
}

/// How nginx frames its answer to a head it refused: `(head_only,
/// http09)`. After a complete request line without a version nginx
/// answers the HTTP/0.9 way, the page alone (its `r->http_version` is 9);
/// once the method `HEAD` is read, with the head alone (`header_only`).
/// Before either, with a status line and the page.
pub fn error_framing(buf: &[u8]) -> (bool, bool) {
    let line_start = buf
        .iter()
        .position(|&c| c != b'\r' && c != b'\n')
        .unwrap_or(buf.len());
    let http09 = match head_scan::request_line(buf) {
        Ok(Some(line)) => line.version.is_none(),
        Err(HeadError::Invalid09Method) => true,
        _ => false,
    };
    (!http09 && buf[line_start..].starts_with(b"HEAD "), http09)
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

/// The place of `name` in [`UNIQUE_HEADERS`]; a name not there fails the
/// build (it is evaluated in `const` blocks).
const fn unique_index(name: &str) -> usize {
    let mut i = 0;
    while i < UNIQUE_HEADERS.len() {
        let (a, b) = (UNIQUE_HEADERS[i].as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("not a unique header")
}

/// What the header lines said, as nginx's per-line handlers
/// (`ngx_http_headers_in`) record it.
struct Seen<'a> {
    /// The `Host` value.
    host_header: Option<&'a [u8]>,
    /// The `Host` value validated.
    valid_host: Option<String>,
    /// `Some(true)`: keep-alive, `Some(false)`: close.
    connection: Option<bool>,
    /// The value of each of [`UNIQUE_HEADERS`].
    first: [Option<&'a [u8]>; UNIQUE_HEADERS.len()],
    /// The first `Range`.
    range: Option<String>,
    /// The first `User-Agent`.
    user_agent: Option<String>,
    /// The first `Referer`.
    referer: Option<String>,
}

/// Runs nginx's per-line checks over `headers` in order: an invalid or
/// repeated `Host`, a repeated unique header (`ngx_http_process_host`,
/// `ngx_http_process_unique_header_line`). They apply to each line as it
/// arrives, before the head is complete.
fn walk_fields(headers: &Fields) -> Result<Seen<'_>, HeadError> {
    let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
    let mut seen = Seen {
        host_header: None,
        valid_host: None,
        connection: None,
        first: [None; UNIQUE_HEADERS.len()],
        range: None,
        user_agent: None,
        referer: None,
    };
    for (name, value) in headers.iter() {
        if name.eq_ignore_ascii_case("Host") {
            if seen.host_header.is_some() {
                return Err(HeadError::DuplicateHost);
            }
            seen.host_header = Some(value);
            seen.valid_host = Some(uri::validate_host(value).ok_or(HeadError::InvalidHost)?);
        } else if let Some(i) = UNIQUE_HEADERS
            .iter()
            .position(|u| name.eq_ignore_ascii_case(u))
        {
            if let Some(prev) = seen.first[i] {
                return Err(HeadError::DuplicateHeader {
                    name: name.to_string(),
                    previous: text(prev),
                    value: text(value),
                });
            }
            seen.first[i] = Some(value);
        } else if name.eq_ignore_ascii_case("Connection") {
            // nginx: a substring match, "close" first; the last header wins.
            let v = value.to_ascii_lowercase();
            if contains(&v, b"close") {
                seen.connection = Some(false);
            } else if contains(&v, b"keep-alive") {
                seen.connection = Some(true);
            }
        } else if name.eq_ignore_ascii_case("Range") {
            seen.range.get_or_insert_with(|| text(value));
        } else if name.eq_ignore_ascii_case("User-Agent") {
            seen.user_agent.get_or_insert_with(|| text(value));
        } else if name.eq_ignore_ascii_case("Referer") {
            seen.referer.get_or_insert_with(|| text(value));
        }
    }
    Ok(seen)
}

/// Derives the head's fields and applies nginx's checks, in nginx's order
/// (`ngx_http_process_request_headers`, then `ngx_http_process_request_header`).
fn build_head(line: RequestLine, headers: Fields) -> Result<RequestHead, HeadError> {
    let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
    let Seen {
        host_header,
        valid_host,
        connection,
        first,
        range,
        user_agent,
        referer,
    } = walk_fields(&headers)?;
    // The names are looked up when compiling, not per request.
    macro_rules! unique {
        ($name:literal) => {
            first[const { unique_index($name) }]
        };
    }

    if host_header.is_none() && line.version == Version::Http11 {
        return Err(HeadError::MissingHost);
    }
    let content_length = match unique!("Content-Length") {
        Some(v) => Some(parse_content_length(v).ok_or(HeadError::InvalidContentLength)?),
        None => None,
    };
    let mut chunked = false;
    if let Some(te) = unique!("Transfer-Encoding") {
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
        && unique!("Expect").is_some_and(|v| v.eq_ignore_ascii_case(b"100-continue"));
    let host = match &line.uri.host {
        Some(h) => Some(h.clone()),
        None => valid_host,
    };
    let owned = |v: Option<&[u8]>| v.map(text);
    // Dates are read byte by byte (nginx's `ngx_parse_http_time` skips the
    // byte after an asctime month unchecked): a byte above 0x7F stays one
    // byte (`?`, which no date allows), where U+FFFD would take three and
    // move what follows.
    let date = |v: Option<&[u8]>| {
        v.map(|v| {
            v.iter()
                .map(|&b| if b.is_ascii() { b as char } else { '?' })
                .collect()
        })
    };
    Ok(RequestHead {
        if_modified_since: date(unique!("If-Modified-Since")),
        if_unmodified_since: date(unique!("If-Unmodified-Since")),
        if_none_match: owned(unique!("If-None-Match")),
        if_match: owned(unique!("If-Match")),
        if_range: owned(unique!("If-Range")),
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

/// Strips the spaces (not tabs: nginx keeps them) around a field value.
fn trim_spaces(v: &[u8]) -> &[u8] {
    let start = v.iter().position(|&c| c != b' ').unwrap_or(v.len());
    let end = v.iter().rposition(|&c| c != b' ').map_or(start, |e| e + 1);
    &v[start..end]
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
