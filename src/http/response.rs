//! Response heads, written in nginx's header order.
//!
//! Owns: the bytes of a status line and header block.
//! Must not: decide values (status, type, validators); the handler does.
//!
//! The order is the one `ngx_http_header_filter_module.c` writes and a live
//! nginx 1.22.1 shows: `Server`, `Date`, `Content-Type`, `Content-Length`,
//! `Last-Modified`, `Location`, `Transfer-Encoding`, `Connection`,
//! `Keep-Alive`, then the header list in the order filters pushed to it:
//! `ETag` (static handler), `add_header` values (headers filter), then
//! `Accept-Ranges` or `Content-Range` (range filter).

use crate::http::date::format_unix;
use crate::http::status::Status;

/// What a response head usually needs, so building one does not reallocate.
pub const HEAD_CAPACITY: usize = 512;

/// The interim answer to `Expect: 100-continue`, exactly as nginx sends it.
pub const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// A field of [`ResponseHead::extra`]: a name and a value.
pub trait ExtraField {
    /// The field's name.
    fn name(&self) -> &str;
    /// The field's value.
    fn value(&self) -> &str;
    /// Whether the field is known to hold no CR or LF (one an upstream
    /// sent: its parser ends names and values there), so that it is
    /// copied without the scan for them. `false` unless known.
    fn clean(&self) -> bool {
        false
    }
}

impl ExtraField for (&str, &str) {
    fn name(&self) -> &str {
        self.0
    }

    fn value(&self) -> &str {
        self.1
    }
}

/// Everything a response head can carry. Build with [`ResponseHead::new`]
/// (or [`ResponseHead::with_extra`]) and set the fields that apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponseHead<'a, F: ExtraField = (&'a str, &'a str)> {
    /// The status; nginx's 494 is written as 400.
    pub status: Status,
    /// The `Server` value: `nowait/VERSION`, or `nowait` (`server_tokens off`).
    pub server: &'a str,
    /// The `Date` value, preformatted (see `date::DateCache`).
    pub date: &'a str,
    /// `Content-Type`, including any `; charset=`.
    pub content_type: Option<&'a str>,
    /// `Content-Length`.
    pub content_length: Option<u64>,
    /// `Last-Modified` as Unix seconds; written only for 200, 206 and 304,
    /// as nginx drops it for every other status.
    pub last_modified: Option<i64>,
    /// `Location`, already absolute and escaped.
    pub location: Option<&'a str>,
    /// `Transfer-Encoding: chunked` (responses of unknown length).
    pub chunked: bool,
    /// `Connection: keep-alive` when true, `Connection: close` when false.
    pub keep_alive: bool,
    /// `Connection: upgrade` (a 101), whatever `keep_alive` says.
    pub upgrade: bool,
    /// `Keep-Alive: timeout=N`, sent with keep-alive only when
    /// `keepalive_timeout` has its second (header) parameter.
    pub keep_alive_header: Option<u64>,
    /// `Vary: Accept-Encoding` (`gzip_vary`), written after `Connection`
    /// as nginx's header filter writes it.
    pub vary_accept_encoding: bool,
    /// `ETag`, with quotes.
    pub etag: Option<&'a str>,
    /// The other fields, in order: an upstream's, `add_header`'s.
    pub extra: &'a [F],
    /// `Accept-Ranges: bytes` (full 200 responses of files).
    pub accept_ranges: bool,
    /// `Content-Range` (206 single part, 416).
    pub content_range: Option<&'a str>,
    /// The status line's text after `HTTP/1.1 ` as an upstream wrote it
    /// (`200 Fine`), passed on as nginx passes it; `None`: the status's own.
    pub status_line: Option<&'a str>,
}

impl<'a> ResponseHead<'a> {
    /// A head with only the status line, `Server`, `Date` and
    /// `Connection: close`.
    pub fn new(status: Status, server: &'a str, date: &'a str) -> Self {
        ResponseHead::with_extra(status, server, date, &[])
    }
}

impl<'a, F: ExtraField> ResponseHead<'a, F> {
    /// [`ResponseHead::new`] with `extra` fields of any [`ExtraField`]
    /// type (a reply's own, without making a list of `&str` pairs first).
    pub fn with_extra(status: Status, server: &'a str, date: &'a str, extra: &'a [F]) -> Self {
        ResponseHead {
            status,
            server,
            date,
            content_type: None,
            content_length: None,
            last_modified: None,
            location: None,
            chunked: false,
            keep_alive: false,
            upgrade: false,
            keep_alive_header: None,
            vary_accept_encoding: false,
            etag: None,
            extra,
            accept_ranges: false,
            content_range: None,
            status_line: None,
        }
    }

    /// Appends the head, ending with the blank line, to `out`.
    ///
    /// Like nginx's filters, a 304 or 204 never carries `Content-Type`,
    /// `Content-Length` or `Accept-Ranges`. CR and LF are removed from every
    /// value, so no value can end the head early.
    pub fn write(&self, out: &mut Vec<u8>) {
        let code = self.status.wire().code();
        let bodiless = code == 304 || code == 204;
        match self.status_line {
            Some(line) => {
                out.extend_from_slice(b"HTTP/1.1 ");
                out.extend(line.bytes().filter(|&b| b != b'\r' && b != b'\n'));
                out.extend_from_slice(b"\r\n");
            }
            None => self.status.write_status_line(out),
        }
        // Values nowait makes itself cannot hold CR or LF: they are copied
        // as they are (`trusted`); anything from a request or a
        // configuration goes through `field`, which drops CR and LF.
        trusted(out, b"Server: ", self.server.as_bytes());
        trusted(out, b"Date: ", self.date.as_bytes());
        if let Some(ct) = self.content_type.filter(|_| !bodiless) {
            value_field(out, b"Content-Type: ", ct);
        }
        if let Some(len) = self.content_length.filter(|_| !bodiless) {
            trusted(
                out,
                b"Content-Length: ",
                crate::http::decimal::decimal(len, &mut [0u8; crate::http::decimal::U64_DIGITS]),
            );
        }
        if let Some(mtime) = self
            .last_modified
            .filter(|_| matches!(code, 200 | 206 | 304))
        {
            LAST_MODIFIED.with(|c| {
                let mut c = c.borrow_mut();
                if c.0 != Some(mtime) {
                    *c = (Some(mtime), format_unix(mtime));
                }
                trusted(out, b"Last-Modified: ", c.1.as_bytes());
            });
        }
        if let Some(location) = self.location {
            value_field(out, b"Location: ", location);
        }
        if self.chunked {
            trusted(out, b"Transfer-Encoding: ", b"chunked");
        }
        if self.upgrade {
            trusted(out, b"Connection: ", b"upgrade");
        } else if self.keep_alive {
            trusted(out, b"Connection: ", b"keep-alive");
            if let Some(timeout) = self.keep_alive_header {
                trusted(
                    out,
                    b"Keep-Alive: timeout=",
                    crate::http::decimal::decimal(
                        timeout,
                        &mut [0u8; crate::http::decimal::U64_DIGITS],
                    ),
                );
            }
        } else {
            trusted(out, b"Connection: ", b"close");
        }
        if self.vary_accept_encoding {
            trusted(out, b"Vary: ", b"Accept-Encoding");
        }
        if let Some(etag) = self.etag {
            trusted(out, b"ETag: ", etag.as_bytes());
        }
        for f in self.extra {
            if f.clean() {
                out.extend_from_slice(f.name().as_bytes());
                out.extend_from_slice(b": ");
                out.extend_from_slice(f.value().as_bytes());
                out.extend_from_slice(b"\r\n");
            } else {
                field(out, f.name(), f.value());
            }
        }
        if self.accept_ranges && !bodiless {
            trusted(out, b"Accept-Ranges: ", b"bytes");
        }
        if let Some(range) = self.content_range {
            trusted(out, b"Content-Range: ", range.as_bytes());
        }
        out.extend_from_slice(b"\r\n");
    }

    /// The head as a new buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_bytes_with_room(0)
    }

    /// [`to_bytes`](Self::to_bytes) in a buffer with room for `body` more
    /// bytes after the head: a small body sent in the same write is
    /// appended without growing the buffer again.
    pub fn to_bytes_with_room(&self, body: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEAD_CAPACITY + body);
        self.write(&mut out);
        out
    }
}

/// A header line whose name and value nowait made itself (no CR or LF).
#[inline]
fn trusted(out: &mut Vec<u8>, name_colon: &[u8], value: &[u8]) {
    out.extend_from_slice(name_colon);
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

thread_local! {
    /// The last `Last-Modified` text made, by modification time: files are
    /// served again and again, their dates do not change.
    static LAST_MODIFIED: std::cell::RefCell<(Option<i64>, String)> =
        const { std::cell::RefCell::new((None, String::new())) };
}

/// Writes `name: value\r\n`, dropping CR and LF from both.
fn field(out: &mut Vec<u8>, name: &str, value: &str) {
    clean(out, name.as_bytes());
    out.extend_from_slice(b": ");
    clean(out, value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Writes a header line whose name nowait wrote itself (`name_colon`,
/// without CR or LF) and whose value may come from a request or a
/// configuration: CR and LF are dropped from the value only.
fn value_field(out: &mut Vec<u8>, name_colon: &[u8], value: &str) {
    out.extend_from_slice(name_colon);
    clean(out, value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Appends `b` without its CRs and LFs.
fn clean(out: &mut Vec<u8>, b: &[u8]) {
    if !has_cr_or_lf(b) {
        // The usual case, a copy; the filter pushes a byte at a time.
        out.extend_from_slice(b);
    } else {
        out.extend(b.iter().filter(|&&c| c != b'\r' && c != b'\n'));
    }
}

/// Whether `b` holds a CR or an LF, eight bytes at a time. Values are
/// short (a date, a type, a tag): a call to a SIMD search, or two scans
/// with `contains`, cost more than this one pass.
fn has_cr_or_lf(b: &[u8]) -> bool {
    /// A one in every byte.
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    /// The top bit of every byte.
    const TOPS: u64 = ONES << 7;
    // Whether a word has a zero byte: exact as to whether there is one
    // (the borrow can only spread above a zero byte).
    let has_zero = |w: u64| w.wrapping_sub(ONES) & !w & TOPS != 0;
    let mut words = b.chunks_exact(8);
    for c in &mut words {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        if has_zero(w ^ (ONES * u64::from(b'\r'))) || has_zero(w ^ (ONES * u64::from(b'\n'))) {
            return true;
        }
    }
    words.remainder().iter().any(|&c| c == b'\r' || c == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATE: &str = "Sun, 22 Nov 2026 01:51:45 GMT";
    const LM: i64 = 1_795_312_304; // Sun, 22 Nov 2026 01:51:44 GMT

    fn text<F: ExtraField>(head: &ResponseHead<'_, F>) -> String {
        String::from_utf8(head.to_bytes()).unwrap()
    }

    #[test]
    fn fields_lose_cr_and_lf() {
        let mut out = Vec::new();
        field(&mut out, "X-A", "plain");
        field(&mut out, "X-\rB", "one\r\nInjected: yes");
        field(&mut out, "X-C", "tail\n");
        assert_eq!(
            out,
            b"X-A: plain\r\nX-B: oneInjected: yes\r\nX-C: tail\r\n".to_vec()
        );
    }

    #[test]
    fn extra_fields_known_clean_are_copied_as_they_are() {
        /// A field that says it holds no CR or LF.
        struct Clean(&'static str, &'static str);
        impl ExtraField for Clean {
            fn name(&self) -> &str {
                self.0
            }
            fn value(&self) -> &str {
                self.1
            }
            fn clean(&self) -> bool {
                true
            }
        }
        let extra = [Clean("X-A", "1"), Clean("X-B", "2")];
        let h = ResponseHead::with_extra(Status::OK, "nowait", DATE, &extra);
        assert!(
            text(&h).ends_with("X-A: 1\r\nX-B: 2\r\n\r\n"),
            "{}",
            text(&h)
        );
        // Fields not known to be clean are scanned.
        let extra = [("X-A", "1\r\n")];
        let h = ResponseHead::with_extra(Status::OK, "nowait", DATE, &extra);
        assert!(text(&h).ends_with("X-A: 1\r\n\r\n"), "{}", text(&h));
    }

    #[test]
    fn cr_and_lf_found_at_every_place() {
        for len in 0..40 {
            let plain: Vec<u8> = (0..len).map(|i| b' ' + (i % 90) as u8).collect();
            assert!(!has_cr_or_lf(&plain), "{len}");
            // Bytes next to CR and LF (and above, with the top bit) are not
            // mistaken for them.
            let near: Vec<u8> = (0..len)
                .map(|i| [0x0b, 0x0c, 0x0e, 0x8a, 0x8d, 0xff][i % 6])
                .collect();
            assert!(!has_cr_or_lf(&near), "{len}");
            for at in 0..len {
                for byte in [b'\r', b'\n'] {
                    let mut v = plain.clone();
                    v[at] = byte;
                    assert!(has_cr_or_lf(&v), "{len} {at}");
                    let mut out = Vec::new();
                    clean(&mut out, &v);
                    v.remove(at);
                    assert_eq!(out, v);
                }
            }
        }
    }

    #[test]
    fn file_200_matches_nginx_order() {
        let extra = [("X-Test", "yes")];
        let mut h = ResponseHead::new(Status::OK, "nginx/1.22.1", DATE);
        h.content_type = Some("text/plain");
        h.content_length = Some(26);
        h.last_modified = Some(LM);
        h.etag = Some("\"6b024ab0-1a\"");
        h.extra = &extra;
        h.accept_ranges = true;
        // Byte for byte what nginx 1.22.1 sent with `add_header X-Test yes`.
        assert_eq!(
            text(&h),
            "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sun, 22 Nov 2026 01:51:45 GMT\r\n\
             Content-Type: text/plain\r\nContent-Length: 26\r\n\
             Last-Modified: Sun, 22 Nov 2026 01:51:44 GMT\r\nConnection: close\r\n\
             ETag: \"6b024ab0-1a\"\r\nX-Test: yes\r\nAccept-Ranges: bytes\r\n\r\n"
        );
    }

    #[test]
    fn redirect_and_keep_alive() {
        let extra = [("X-Test", "yes")];
        let mut h = ResponseHead::new(Status::MOVED_PERMANENTLY, "nowait", DATE);
        h.content_type = Some("text/html");
        h.content_length = Some(169);
        h.last_modified = Some(LM); // dropped: nginx sends it only for 200/206/304
        h.location = Some("http://x:18080/dir/");
        h.keep_alive = true;
        h.keep_alive_header = Some(60);
        h.extra = &extra;
        assert_eq!(
            text(&h),
            "HTTP/1.1 301 Moved Permanently\r\nServer: nowait\r\nDate: Sun, 22 Nov 2026 01:51:45 GMT\r\n\
             Content-Type: text/html\r\nContent-Length: 169\r\nLocation: http://x:18080/dir/\r\n\
             Connection: keep-alive\r\nKeep-Alive: timeout=60\r\nX-Test: yes\r\n\r\n"
        );
    }

    #[test]
    fn not_modified_drops_body_headers() {
        let mut h = ResponseHead::new(Status::NOT_MODIFIED, "nowait", DATE);
        h.content_type = Some("text/plain");
        h.content_length = Some(26);
        h.last_modified = Some(LM);
        h.etag = Some("\"x\"");
        h.accept_ranges = true;
        assert_eq!(
            text(&h),
            "HTTP/1.1 304 Not Modified\r\nServer: nowait\r\nDate: Sun, 22 Nov 2026 01:51:45 GMT\r\n\
             Last-Modified: Sun, 22 Nov 2026 01:51:44 GMT\r\nConnection: close\r\nETag: \"x\"\r\n\r\n"
        );
    }

    #[test]
    fn partial_and_unsatisfiable() {
        let mut h = ResponseHead::new(Status::PARTIAL_CONTENT, "nowait", DATE);
        h.content_type = Some("text/plain");
        h.content_length = Some(2);
        h.content_range = Some("bytes 0-1/26");
        assert!(text(&h).ends_with("Connection: close\r\nContent-Range: bytes 0-1/26\r\n\r\n"));
        let mut h = ResponseHead::new(Status::RANGE_NOT_SATISFIABLE, "nowait", DATE);
        h.content_range = Some("bytes */26");
        h.last_modified = Some(LM);
        let t = text(&h);
        assert!(t.starts_with("HTTP/1.1 416 Requested Range Not Satisfiable\r\n"));
        assert!(!t.contains("Last-Modified"));
    }

    #[test]
    fn header_too_large_is_written_as_400() {
        let h = ResponseHead::new(Status::REQUEST_HEADER_TOO_LARGE, "nowait", DATE);
        assert!(text(&h).starts_with("HTTP/1.1 400 Bad Request\r\n"));
    }

    #[test]
    fn values_cannot_inject_headers() {
        let extra = [("X-A", "1\r\nSet-Cookie: evil")];
        let mut h = ResponseHead::new(Status::OK, "nowait", DATE);
        h.extra = &extra;
        h.location = Some("/a\nb");
        h.content_type = Some("text/plain\r\nX-B: 2");
        let t = text(&h);
        assert!(t.contains("X-A: 1Set-Cookie: evil\r\n"));
        assert!(t.contains("Content-Type: text/plainX-B: 2\r\n"));
        assert!(t.contains("Location: /ab\r\n"));
        assert_eq!(t.matches("\r\n").count(), 8);
    }

    #[test]
    fn continue_line() {
        assert_eq!(CONTINUE, b"HTTP/1.1 100 Continue\r\n\r\n");
    }
}
