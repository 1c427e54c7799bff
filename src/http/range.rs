//! Byte ranges: the `Range` header (RFC 9110 §14.1.2), `If-Range`
//! (§13.1.5), and `multipart/byteranges` framing (§14.6), all as nginx's
//! `ngx_http_range_filter_module.c` does them.
//!
//! Owns: deciding 200 / 206 / 416 for a `Range` request and producing every
//! byte of a multipart body except the file data, so the caller can stream
//! the ranges from the file without buffering it.
//! Must not: read files.
//!
//! Where nginx differs from RFC 9110, nginx wins, on purpose:
//! - a header not starting with `bytes=` (case-insensitive) is ignored, but a
//!   syntax error after `bytes=` (`bytes=abc`, `bytes=1-2,`) answers 416;
//! - ranges that together ask for more bytes than the file has (overlaps,
//!   `bytes=0-,0-`) are ignored and the whole file is sent with 200;
//! - ranges are neither merged nor reordered;
//! - a range starting at 0 that selects nothing (an empty file) means 200.

use crate::http::date::parse_http_date;

/// The largest offset nginx accepts (its `off_t` maximum); bigger numbers
/// in a `Range` header answer 416.
const MAX_OFFSET: i64 = i64::MAX;

/// Digits of a multipart boundary: nginx prints `ngx_next_temp_number()`
/// zero-padded to `NGX_ATOMIC_T_LEN`, which is 20 on 64-bit builds
/// (`boundary=00000000000000000001`, as seen from nginx 1.22.1 on x86-64).
pub const BOUNDARY_DIGITS: usize = 20;

/// A range of bytes, `start` inclusive, `end` exclusive, inside the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteRange {
    /// The first byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

impl ByteRange {
    /// The number of bytes in the range (never zero).
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Always false: empty ranges are never produced.
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// The `Content-Range` value for this range of a `total`-byte file:
    /// `bytes START-LAST/TOTAL`.
    pub fn content_range(&self, total: u64) -> String {
        format!("bytes {}-{}/{}", self.start, self.end - 1, total)
    }
}

/// What to send for a request with a `Range` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RangeSpec {
    /// Ignore the header: 200 with the whole file and `Accept-Ranges: bytes`.
    Full,
    /// 206: one range (single part) or several (multipart), in request order.
    Satisfiable(Vec<ByteRange>),
    /// 416 with [`unsatisfiable_content_range`] and nginx's error page.
    Unsatisfiable,
}

/// `Content-Range` for a 416 answer: `bytes */TOTAL`.
pub fn unsatisfiable_content_range(total: u64) -> String {
    format!("bytes */{total}")
}

/// Evaluates a `Range` header against a file of `len` bytes, with nginx's
/// default `max_ranges` (unlimited).
pub fn parse_range(header: &str, len: u64) -> RangeSpec {
    parse_range_limited(header, len, None)
}

/// Like [`parse_range`] with nginx's `max_ranges`: `Some(0)` disables ranges,
/// more than `Some(n)` ranges answer 200 with the whole file.
pub fn parse_range_limited(header: &str, len: u64, max_ranges: Option<usize>) -> RangeSpec {
    let h = header.as_bytes();
    if max_ranges == Some(0) || h.len() < 7 || !h[..6].eq_ignore_ascii_case(b"bytes=") {
        return RangeSpec::Full;
    }
    match parse_set(
        &h[6..],
        i64::try_from(len).unwrap_or(MAX_OFFSET),
        max_ranges,
    ) {
        Parsed::Ranges(r) => RangeSpec::Satisfiable(r),
        Parsed::Declined => RangeSpec::Full,
        Parsed::NotSatisfiable => RangeSpec::Unsatisfiable,
    }
}

/// The outcome of [`parse_set`], named after nginx's return codes.
enum Parsed {
    /// NGX_OK.
    Ranges(Vec<ByteRange>),
    /// NGX_DECLINED: serve the whole file.
    Declined,
    /// NGX_HTTP_RANGE_NOT_SATISFIABLE.
    NotSatisfiable,
}

/// A cursor over the bytes after `bytes=`; the end reads as NUL, like the
/// NUL-terminated strings nginx's parser walks.
struct Cursor<'a> {
    /// The range set.
    s: &'a [u8],
    /// The next byte.
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> u8 {
        self.s.get(self.i).copied().unwrap_or(0)
    }

    fn bump(&mut self) -> u8 {
        let c = self.peek();
        self.i += 1;
        c
    }

    fn skip_spaces(&mut self) {
        while self.peek() == b' ' {
            self.i += 1;
        }
    }

    /// A run of digits, `None` past [`MAX_OFFSET`].
    fn number(&mut self) -> Option<i64> {
        let mut n: i64 = 0;
        while self.peek().is_ascii_digit() {
            n = n
                .checked_mul(10)?
                .checked_add(i64::from(self.bump() - b'0'))?;
        }
        Some(n)
    }
}

/// nginx's `ngx_http_range_parse`, step for step, over `a-b`, `a-` and `-n`
/// specs separated by commas (spaces allowed around the numbers).
fn parse_set(set: &[u8], len: i64, max_ranges: Option<usize>) -> Parsed {
    let mut p = Cursor { s: set, i: 0 };
    let mut ranges = Vec::new();
    let mut size: i64 = 0;
    loop {
        let (mut start, mut end);
        p.skip_spaces();
        let suffix = p.peek() == b'-';
        if suffix {
            p.bump();
            start = 0;
        } else {
            if !p.peek().is_ascii_digit() {
                return Parsed::NotSatisfiable;
            }
            let Some(n) = p.number() else {
                return Parsed::NotSatisfiable;
            };
            start = n;
            p.skip_spaces();
            if p.bump() != b'-' {
                return Parsed::NotSatisfiable;
            }
            p.skip_spaces();
        }
        if !suffix && matches!(p.peek(), b',' | 0) {
            // "a-": to the end of the file.
            end = len;
        } else {
            if !p.peek().is_ascii_digit() {
                return Parsed::NotSatisfiable;
            }
            let Some(n) = p.number() else {
                return Parsed::NotSatisfiable;
            };
            end = n;
            p.skip_spaces();
            if !matches!(p.peek(), b',' | 0) {
                return Parsed::NotSatisfiable;
            }
            if suffix {
                // "-n": the last n bytes.
                start = if end < len { len - end } else { 0 };
                end = len - 1;
            }
            // Inclusive → exclusive, clipped to the file.
            end = if end >= len { len } else { end + 1 };
        }

        if start < end {
            let Some(total) = size.checked_add(end - start) else {
                return Parsed::NotSatisfiable;
            };
            size = total;
            // Both are within 0..=len here, so the casts cannot lose anything.
            ranges.push(ByteRange {
                start: start as u64,
                end: end as u64,
            });
            if max_ranges.is_some_and(|max| ranges.len() > max) {
                return Parsed::Declined;
            }
        } else if start == 0 {
            return Parsed::Declined;
        }
        // Ranges that start past the end are skipped, not fatal.
        if p.bump() != b',' {
            break;
        }
    }
    if ranges.is_empty() {
        Parsed::NotSatisfiable
    } else if size > len {
        Parsed::Declined
    } else {
        Parsed::Ranges(ranges)
    }
}

/// Whether an `If-Range` value lets the `Range` header apply (nginx's
/// rules): a value ending in `"` must equal the current ETag byte for byte
/// (so a weak `W/"…"` never matches); anything else must be an HTTP-date
/// equal to the file's mtime exactly.
pub fn if_range_matches(if_range: &str, etag: Option<&str>, last_modified: Option<i64>) -> bool {
    let v = if_range.trim();
    if v.len() >= 2 && v.ends_with('"') {
        return etag == Some(v);
    }
    match last_modified {
        Some(mtime) => parse_http_date(v) == Some(mtime),
        None => false,
    }
}

/// The framing of a `multipart/byteranges` body, computed up front.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Multipart {
    /// The response's `Content-Type` value.
    content_type: String,
    /// Each part's head (CRLF, boundary, part headers, blank line) and range.
    parts: Vec<(Vec<u8>, ByteRange)>,
    /// The closing `CRLF --BOUNDARY-- CRLF`.
    trailer: Vec<u8>,
    /// The whole body's length, for `Content-Length`.
    content_length: u64,
}

impl Multipart {
    /// Frames `ranges` of a `total`-byte file whose type is `content_type`
    /// (with any `; charset=`; empty or `None` omits the part header) under
    /// boundary number `boundary` (nginx uses a per-worker counter).
    pub fn new(
        ranges: &[ByteRange],
        content_type: Option<&str>,
        total: u64,
        boundary: u64,
    ) -> Multipart {
        let boundary = format!("{boundary:0width$}", width = BOUNDARY_DIGITS);
        let mut part_head = format!("\r\n--{boundary}\r\n");
        if let Some(ct) = content_type.filter(|ct| !ct.is_empty()) {
            part_head.push_str(&format!("Content-Type: {ct}\r\n"));
        }
        let trailer = format!("\r\n--{boundary}--\r\n").into_bytes();
        let mut content_length = trailer.len() as u64;
        let parts = ranges
            .iter()
            .map(|r| {
                let head = format!(
                    "{part_head}Content-Range: {}\r\n\r\n",
                    r.content_range(total)
                )
                .into_bytes();
                content_length += head.len() as u64 + r.len();
                (head, *r)
            })
            .collect();
        Multipart {
            content_type: format!("multipart/byteranges; boundary={boundary}"),
            parts,
            trailer,
            content_length,
        }
    }

    /// The response's `Content-Type`: `multipart/byteranges; boundary=…`.
    pub fn content_type(&self) -> &str {
        &self.content_type
    }

    /// The body length for `Content-Length`.
    pub fn content_length(&self) -> u64 {
        self.content_length
    }

    /// The parts in order: send the head bytes, then the range of the file.
    pub fn parts(&self) -> impl Iterator<Item = (&[u8], ByteRange)> {
        self.parts
            .iter()
            .map(|(head, range)| (head.as_slice(), *range))
    }

    /// The same parts with every range moved `offset` bytes into the file
    /// (a cached response's body starts after the entry's header); the
    /// `Content-Range` lines keep the body's own offsets.
    pub fn shifted(mut self, offset: u64) -> Multipart {
        for (_, r) in &mut self.parts {
            r.start += offset;
            r.end += offset;
        }
        self
    }

    /// The bytes that close the body, sent after the last part's data.
    pub fn trailer(&self) -> &[u8] {
        &self.trailer
    }
}

#[cfg(test)]
#[path = "range_tests.rs"]
mod tests;
