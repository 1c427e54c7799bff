//! The head of an upstream's HTTP/1.x response, read as nginx 1.22.1's
//! proxy module reads it (`ngx_http_proxy_process_status_line`,
//! `ngx_http_proxy_process_header`), and the body framing it announces
//! (`ngx_http_proxy_input_filter_init`).
//!
//! Owns: the status line, the header fields (in order, names' case kept,
//! values as bytes), the few fields that decide framing and keep-alive
//! (`Content-Length`, `Transfer-Encoding`, `Connection`), and nginx's log
//! words for a head it refuses.
//! Must not: read sockets, enforce `proxy_buffer_size` (the caller does,
//! with [`check_head_size`]), or interpret headers that belong to the proxy
//! or the cache (`Location`, `Cache-Control`, `X-Accel-*`…): they are kept
//! for them in [`ResponseHead::headers`].
//!
//! nginx 1.22.1 is more lenient than RFC 9112 with an upstream, and so is
//! this parser: a header name may hold any byte but controls, space, DEL
//! and `:`; a line without a colon is a field with an empty value; a
//! repeated `HTTP/1.1 ...` line (sent by IIS) is skipped; control bytes but
//! NUL are kept in values. It refuses what nginx refuses: NUL, a CR not
//! followed by LF, whitespace before a name (obsolete folding) or inside it.
//!
//! Framing is judged as 1.22.1 does, without the refusals nginx 1.23 added:
//! the last `Content-Length` wins, an invalid one counts as absent (the body
//! then runs until the upstream closes), any `Transfer-Encoding` containing
//! "chunked" (`gzip, chunked` included) means chunked, and chunked wins
//! over `Content-Length`.

use std::fmt;

use crate::http::field_name::eq_ignore_case;

pub use text::FieldText;

mod fields;
mod status_line;
#[cfg(test)]
mod tests;
mod text;

/// A header field's name and value, as slices of a [`Headers`] list.
pub type Field<'a> = (&'a [u8], &'a [u8]);

/// The header fields of a response as received: in order, names' case
/// kept, values without the spaces around them (tabs are kept, as nginx
/// keeps them). All of them live in one buffer, shared by the clones: the
/// request keeps the last response's fields for `$upstream_http_*` without
/// copying them.
#[derive(Clone, Debug, Default)]
pub struct Headers {
    /// `None` until the first field (an empty list allocates nothing).
    fields: Option<std::sync::Arc<Fields>>,
}

/// Two lists are equal when they hold the same fields in the same order
/// (however they are stored).
impl PartialEq for Headers {
    fn eq(&self, other: &Headers) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Headers {}

/// The storage of [`Headers`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Fields {
    /// Names and values, one after the other.
    bytes: Bytes,
    /// Per field: where its name starts and ends, where its value starts
    /// and ends.
    spans: Vec<[u32; 4]>,
}

/// The names and values of [`Fields`]: text once the list is complete and
/// found to be valid UTF-8 (nearly always; checked once, by
/// [`Headers::seal`]), so that its fields can be lent out as text
/// ([`FieldText`]) without a check or a copy each.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Bytes {
    /// Being appended to, or not valid UTF-8.
    Raw(Vec<u8>),
    /// Sealed and valid UTF-8.
    Text(String),
}

impl Default for Bytes {
    fn default() -> Bytes {
        Bytes::Raw(Vec::new())
    }
}

impl Bytes {
    /// The bytes, whatever they are.
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Raw(b) => b,
            Bytes::Text(t) => t.as_bytes(),
        }
    }

    /// The bytes as text, when they were sealed as text.
    fn text(&self) -> Option<&str> {
        match self {
            Bytes::Raw(_) => None,
            Bytes::Text(t) => Some(t),
        }
    }

    /// The bytes to append to (text turns raw again until the next seal).
    fn raw_mut(&mut self) -> &mut Vec<u8> {
        if let Bytes::Text(t) = self {
            *self = Bytes::Raw(std::mem::take(t).into_bytes());
        }
        match self {
            Bytes::Raw(b) => b,
            Bytes::Text(_) => unreachable!("made raw above"),
        }
    }
}

impl Headers {
    /// The storage, to append to (copied first if shared).
    fn fields_mut(&mut self) -> &mut Fields {
        std::sync::Arc::make_mut(self.fields.get_or_insert_with(Default::default))
    }

    /// Appends a field (call [`Headers::seal`] once the list is complete).
    fn push(&mut self, name: &[u8], value: &[u8]) {
        let f = self.fields_mut();
        let bytes = f.bytes.raw_mut();
        let start = bytes.len() as u32;
        bytes.extend_from_slice(name);
        let mid = bytes.len() as u32;
        bytes.extend_from_slice(value);
        f.spans.push([start, mid, mid, bytes.len() as u32]);
    }

    /// The list of a header section as `httparse` split it: the section's
    /// bytes copied at once, each field found in the copy by where it lies
    /// in `section` (call [`Headers::seal`] next). `None` if a field does not
    /// lie in `section`.
    fn from_section(section: &[u8], fields: &[httparse::Header<'_>]) -> Option<Headers> {
        if fields.is_empty() {
            return Some(Headers::default());
        }
        let base = section.as_ptr() as usize;
        let end = base + section.len();
        // Where `part` lies in `section`; an empty value may point anywhere,
        // so it is placed after its name.
        let within = |part: &[u8], empty_at: u32| -> Option<[u32; 2]> {
            if part.is_empty() {
                return Some([empty_at, empty_at]);
            }
            let at = part.as_ptr() as usize;
            (at >= base && at + part.len() <= end)
                .then(|| [(at - base) as u32, (at - base + part.len()) as u32])
        };
        let mut spans = Vec::with_capacity(fields.len());
        for f in fields {
            let [ns, ne] = within(f.name.as_bytes(), 0)?;
            let [vs, ve] = within(f.value, ne)?;
            spans.push([ns, ne, vs, ve]);
        }
        Some(Headers {
            fields: Some(std::sync::Arc::new(Fields {
                bytes: Bytes::Raw(section.to_vec()),
                spans,
            })),
        })
    }

    /// Checks once whether the complete list is valid UTF-8, for
    /// [`Headers::iter_text`] and [`Headers::shared_text`].
    fn seal(&mut self) {
        let Some(f) = self.fields.as_mut().and_then(std::sync::Arc::get_mut) else {
            return;
        };
        f.bytes = match std::mem::take(&mut f.bytes) {
            Bytes::Raw(raw) => match String::from_utf8(raw) {
                Ok(text) => Bytes::Text(text),
                // Not text: `from_utf8` gives the bytes back.
                Err(e) => Bytes::Raw(e.into_bytes()),
            },
            text => text,
        };
    }

    /// Each field's name and value, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Field<'_>> + '_ {
        let (bytes, spans): (&[u8], &[[u32; 4]]) = match &self.fields {
            Some(f) => (f.bytes.as_slice(), &f.spans),
            None => (&[], &[]),
        };
        spans.iter().map(move |&[a, b, c, d]| {
            (
                &bytes[a as usize..b as usize],
                &bytes[c as usize..d as usize],
            )
        })
    }

    /// [`Headers::iter`], with each name and value also as text when it is
    /// valid UTF-8 (nearly always: `None` for one that is not). The list's
    /// bytes are checked once, not field by field: a field of a list that
    /// is valid UTF-8 is valid too, unless it starts or ends inside a
    /// character (a name with a multi-byte character, its value starting
    /// with the rest), which `str::get` finds.
    pub fn iter_text(&self) -> impl Iterator<Item = (Field<'_>, Option<(&str, &str)>)> + '_ {
        let text = self.fields.as_ref().and_then(|f| f.bytes.text());
        let spans: &[[u32; 4]] = self.fields.as_ref().map_or(&[], |f| &f.spans);
        self.iter().zip(spans).map(move |(field, &[a, b, c, d])| {
            let text = text.and_then(|t| {
                Some((
                    t.get(a as usize..b as usize)?,
                    t.get(c as usize..d as usize)?,
                ))
            });
            (field, text)
        })
    }

    /// The name and value of field `i` as text that shares this list's
    /// storage (no copy), when the list is text and the field is too (see
    /// [`Headers::iter_text`]).
    pub fn shared_text(&self, i: usize) -> Option<(FieldText, FieldText)> {
        let f = self.fields.as_ref()?;
        let text = f.bytes.text()?;
        let &[a, b, c, d] = f.spans.get(i)?;
        // Both ends of each part on character boundaries.
        text.get(a as usize..b as usize)?;
        text.get(c as usize..d as usize)?;
        Some((
            FieldText::shared(f.clone(), a, b),
            FieldText::shared(f.clone(), c, d),
        ))
    }

    /// The value of the first field named `name` (ASCII case-insensitive).
    /// nginx keeps the first of most repeated response headers
    /// (`ngx_http_upstream_process_header_line`).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| v)
    }

    /// The values of every field named `name`, in order.
    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| v)
    }

    /// How many fields there are.
    pub fn len(&self) -> usize {
        self.fields.as_ref().map_or(0, |f| f.spans.len())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A final (non-1xx, or 101) response head from an upstream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponseHead {
    /// The protocol version, `(major, minor)`: nginx accepts up to three
    /// digits each (`HTTP/1.1`, `HTTP/1.0`, even `HTTP/2.5`).
    pub version: (u16, u16),
    /// The status code: any three digits, as nginx takes them.
    pub status: u16,
    /// The status line from the code to its end without CRLF (`200 OK`,
    /// `404`, `403.1 Forbidden`): nginx's `headers_in.status_line`, which it
    /// sends on to the client as it came.
    pub status_line: Vec<u8>,
    /// Every header field, in order.
    pub headers: Headers,
    /// The body length: the last `Content-Length`'s value, `None` when
    /// there is none, it is not a number (nginx's `ngx_atoof` failing) or
    /// the body is chunked (nginx clears it then).
    pub content_length: Option<u64>,
    /// A `Transfer-Encoding` header contains "chunked" (case-insensitive).
    pub chunked: bool,
    /// The upstream will close after this response: an HTTP/1.0 (or lower)
    /// status line, or a `Connection` header containing "close". nginx
    /// 1.22 ignores `Connection: keep-alive` from an HTTP/1.0 upstream.
    pub connection_close: bool,
    /// The status is 101 Switching Protocols. nginx tunnels (both ways,
    /// raw bytes, until either side closes) only when the client asked for
    /// an upgrade too; otherwise the response is an ordinary one.
    pub upgrade: bool,
}

impl ResponseHead {
    /// The value of the first header named `name` (ASCII case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers.get(name)
    }

    /// The values of every header named `name`, in order.
    pub fn headers_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.headers.get_all(name)
    }
}

/// What a buffer starting with an upstream's answer holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeadParse {
    /// The head is not complete yet: read more (and check the size with
    /// [`check_head_size`]) and parse the whole buffer again.
    Partial,
    /// A final response head, `len` bytes long; the body (or the next
    /// bytes) follows.
    Complete {
        /// The parsed head.
        head: ResponseHead,
        /// How many bytes of the buffer the head took, blank line included.
        len: usize,
    },
    /// An interim 1xx head (any 1xx but 101), `len` bytes long, to drop
    /// before parsing again. RFC 9110 §15.2: a client must accept 1xx
    /// responses it did not ask for and wait for the final one. nginx 1.22
    /// does not: it takes a `100 Continue` for the final response and sends
    /// it to the client, with the real response as its body. nowait skips
    /// them.
    Interim {
        /// The 1xx status (100, 102, 103, …).
        status: u16,
        /// How many bytes of the buffer the interim head took.
        len: usize,
    },
    /// Not an HTTP/1.x status line: nginx logs `upstream sent no valid
    /// HTTP/1.0 header` ([`NO_VALID_HEADER`]) and relays everything the
    /// upstream sends, from its first byte, as the body: `$upstream_status`
    /// 200, read until the upstream closes, never kept alive. It writes
    /// those bytes to the client as they came, without a status line or
    /// headers of its own (it marks the request HTTP/0.9; its access log
    /// shows status 009). Decided as soon as a byte departs from
    /// `HTTP/d.d ddd`, before the line is complete.
    Http09,
}

/// What nginx logs (at `error`) when the answer is not HTTP/1.x.
pub const NO_VALID_HEADER: &str = "upstream sent no valid HTTP/1.0 header";

/// Why an upstream's response head was refused. nginx answers the client
/// 502 (or tries the next upstream: `proxy_next_upstream invalid_header`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeadError {
    /// A header line nginx's `ngx_http_parse_header_line` refuses: NUL, a
    /// CR alone, whitespace before or inside a name, a line starting with
    /// `:`.
    InvalidHeader {
        /// The line's bytes up to the offending one (nginx's
        /// `header_name_start` to `header_end`).
        text: Vec<u8>,
        /// The byte nginx shows as `\xNN`.
        byte: u8,
    },
    /// The head did not fit in `proxy_buffer_size` (see [`check_head_size`]).
    TooBig,
}

impl HeadError {
    /// The log message as nginx writes it, raw bytes included:
    /// `upstream sent invalid header: "X-A: a\x00..."`.
    pub fn message(&self) -> Vec<u8> {
        match self {
            HeadError::InvalidHeader { text, byte } => {
                let mut m = b"upstream sent invalid header: \"".to_vec();
                m.extend_from_slice(text);
                m.extend_from_slice(format!("\\x{byte:02x}...\"").as_bytes());
                m
            }
            HeadError::TooBig => b"upstream sent too big header".to_vec(),
        }
    }
}

impl fmt::Display for HeadError {
    /// [`HeadError::message`], with bytes that are not UTF-8 replaced.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.message()))
    }
}

impl std::error::Error for HeadError {}

/// The status that ends the head early and starts a tunnel.
pub const SWITCHING_PROTOCOLS: u16 = 101;
/// No Content: never a body.
pub const NO_CONTENT: u16 = 204;
/// Not Modified: never a body.
pub const NOT_MODIFIED: u16 = 304;

/// Parses the answer at the start of `buf`. Call it again on the whole
/// buffer when more bytes arrive (heads are small; nginx's default
/// `proxy_buffer_size` is one page).
pub fn parse_head(buf: &[u8]) -> Result<HeadParse, HeadError> {
    let line = match status_line::parse(buf) {
        status_line::Parsed::Partial => return Ok(HeadParse::Partial),
        status_line::Parsed::Invalid => return Ok(HeadParse::Http09),
        status_line::Parsed::Line(line) => line,
    };
    let mut headers = Headers::default();
    let Some(section_len) = fields::parse_section(&buf[line.len..], &mut headers)? else {
        return Ok(HeadParse::Partial);
    };
    let len = line.len + section_len;
    if (100..200).contains(&line.status) && line.status != SWITCHING_PROTOCOLS {
        return Ok(HeadParse::Interim {
            status: line.status,
            len,
        });
    }
    headers.seal();
    let (content_length, chunked, close_header) = framing_fields(&headers);
    let head = ResponseHead {
        // nginx: `http_version < NGX_HTTP_VERSION_11` → close.
        connection_close: close_header || line.version < (1, 1),
        upgrade: line.status == SWITCHING_PROTOCOLS,
        version: line.version,
        status: line.status,
        status_line: buf[line.text.clone()].to_vec(),
        headers,
        // nginx clears `content_length_n` when the response is chunked.
        content_length: if chunked { None } else { content_length },
        chunked,
    };
    Ok(HeadParse::Complete { head, len })
}

/// `Content-Length`, chunked, `Connection: close`, as the handlers of
/// nginx 1.22.1's `ngx_http_upstream_headers_in` table derive them.
fn framing_fields(headers: &Headers) -> (Option<u64>, bool, bool) {
    let (mut content_length, mut chunked, mut close) = (None, false, false);
    for (name, value) in headers.iter() {
        if eq_ignore_case(name, b"Content-Length") {
            // `ngx_http_upstream_process_content_length`: every occurrence
            // overwrites the last; no duplicate check in 1.22.1.
            content_length = atoof(value);
        } else if eq_ignore_case(name, b"Transfer-Encoding") {
            // `ngx_http_upstream_process_transfer_encoding`: a substring
            // search, so `gzip, chunked` (and `chunked, gzip`) is chunked.
            chunked |= contains_ignore_case(value, b"chunked");
        } else if eq_ignore_case(name, b"Connection") {
            // `ngx_http_upstream_process_connection`: a substring search.
            close |= contains_ignore_case(value, b"close");
        }
    }
    (content_length, chunked, close)
}

/// nginx's `ngx_atoof`.
fn atoof(v: &[u8]) -> Option<u64> {
    crate::http::decimal::parse_signed_max(v)
}

/// nginx's `ngx_strlcasestrn`: whether `needle` (lowercase) occurs in
/// `haystack`, ASCII case-insensitively.
fn contains_ignore_case(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

/// Says whether a head still incomplete after `buffered` bytes has outgrown
/// `proxy_buffer_size`: nginx reads the head into one buffer of that size
/// and gives up with `upstream sent too big header` when it is full and the
/// head is not complete (`ngx_http_upstream_process_header`). Interim heads
/// dropped before do not count.
pub fn check_head_size(buffered: usize, buffer_size: usize) -> Result<(), HeadError> {
    if buffered >= buffer_size {
        Err(HeadError::TooBig)
    } else {
        Ok(())
    }
}

/// How the body after a head ends, per `ngx_http_proxy_input_filter_init`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// No body: 204, 304, an answer to HEAD, or `Content-Length: 0`. Any
    /// byte after the head is extra data (the connection is not reused).
    Empty,
    /// Exactly this many bytes (`Content-Length`).
    Length(u64),
    /// Chunked transfer coding (RFC 9112 §7.1).
    Chunked,
    /// Everything until the upstream closes: no (valid) length, not chunked.
    UntilClose,
}

/// The framing of the body after `head`. For a 101 the caller tunnels
/// instead when the client asked for the upgrade (nginx's `u->upgrade`);
/// otherwise this framing applies to it as to any other status.
pub fn framing(head: &ResponseHead, request_was_head: bool) -> Framing {
    if head.status == NO_CONTENT || head.status == NOT_MODIFIED || request_was_head {
        Framing::Empty
    } else if head.chunked {
        Framing::Chunked
    } else {
        match head.content_length {
            Some(0) => Framing::Empty,
            Some(n) => Framing::Length(n),
            None => Framing::UntilClose,
        }
    }
}
