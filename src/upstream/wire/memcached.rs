//! The memcached text protocol as nginx 1.22.1's memcached module speaks
//! it: the `get KEY\r\n` request with the key escaped as
//! `ngx_escape_uri(NGX_ESCAPE_MEMCACHED)` escapes it
//! (`ngx_http_memcached_create_request`), the `VALUE key flags length\r\n`
//! or `END\r\n` line read as bytes arrive
//! (`ngx_http_memcached_process_header`), and the value followed by its
//! `\r\nEND\r\n` trailer (`ngx_http_memcached_filter`). Pure and I/O-free:
//! the caller evaluates `$memcached_key` and owns the socket and the
//! response.

use std::fmt;
use std::ops::Range;

/// What follows the value: CRLF, then `END` CRLF.
pub const TRAILER: &[u8] = b"\r\nEND\r\n";
/// The largest number `ngx_atoi` and `ngx_atoof` accept (`NGX_MAX_INT_T_VALUE`,
/// `NGX_MAX_OFF_T_VALUE` on 64-bit Linux).
const MAX_NUMBER: u64 = i64::MAX as u64;
/// The hex digits `ngx_escape_uri` writes.
const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Whether `ngx_escape_uri(NGX_ESCAPE_MEMCACHED)` escapes `b`: control
/// characters, space and `%` (its table escapes nothing above 0x7f, nor
/// DEL).
fn escapes(b: u8) -> bool {
    b <= b' ' || b == b'%'
}

/// Why a request could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestError {
    /// `$memcached_key` is empty or not found.
    KeyNotSet,
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::KeyNotSet => f.write_str("the \"$memcached_key\" variable is not set"),
        }
    }
}

impl std::error::Error for RequestError {}

/// Appends `get KEY\r\n` for `key` (`$memcached_key`'s value) and returns
/// where the escaped key lies in `out`, which the response's `VALUE` line
/// must repeat ([`HeadReader::new`]).
pub fn request(out: &mut Vec<u8>, key: &[u8]) -> Result<Range<usize>, RequestError> {
    if key.is_empty() {
        return Err(RequestError::KeyNotSet);
    }
    out.extend_from_slice(b"get ");
    let start = out.len();
    for &b in key {
        if escapes(b) {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]);
        } else {
            out.push(b);
        }
    }
    let end = out.len();
    out.extend_from_slice(b"\r\n");
    Ok(start..end)
}

/// What the first line of the response said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    /// `VALUE`: the value follows; a 200.
    Value {
        /// The bytes of the line and its CRLF, after which the value starts.
        used: usize,
        /// The flags, when `memcached_gzip_flag` asked for them to be read.
        flags: Option<u64>,
        /// Whether the flags have a bit of `memcached_gzip_flag` set: the
        /// response gets `Content-Encoding: gzip`.
        gzip: bool,
        /// The value's length, the response's `Content-Length`.
        length: u64,
    },
    /// `END`: the key was not found (nginx's `[info] key: "K" was not
    /// found by memcached`); a 404, and the connection may be kept.
    NotFound {
        /// The bytes of the line and its CRLF.
        used: usize,
    },
}

/// A response line nginx refuses (a 502), in nginx's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadError {
    /// `VALUE` with another key.
    Key {
        /// The line without its CRLF.
        line: Vec<u8>,
        /// The key asked for.
        key: Vec<u8>,
    },
    /// Flags that are not a number (read only with `memcached_gzip_flag`).
    Flags {
        /// The line without its CRLF.
        line: Vec<u8>,
        /// The key asked for.
        key: Vec<u8>,
    },
    /// A length that is not a number.
    Length {
        /// The line without its CRLF.
        line: Vec<u8>,
        /// The key asked for.
        key: Vec<u8>,
    },
    /// Anything else: no CRLF, neither `VALUE` nor `END`, a field missing.
    Response {
        /// The line (without its CR when it had one).
        line: Vec<u8>,
    },
}

impl fmt::Display for HeadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        match self {
            HeadError::Key { line, key } => write!(
                f,
                "memcached sent invalid key in response \"{}\" for key \"{}\"",
                s(line),
                s(key)
            ),
            HeadError::Flags { line, key } => write!(
                f,
                "memcached sent invalid flags in response \"{}\" for key \"{}\"",
                s(line),
                s(key)
            ),
            HeadError::Length { line, key } => write!(
                f,
                "memcached sent invalid length in response \"{}\" for key \"{}\"",
                s(line),
                s(key)
            ),
            HeadError::Response { line } => {
                write!(f, "memcached sent invalid response: \"{}\"", s(line))
            }
        }
    }
}

impl std::error::Error for HeadError {}

/// Reads the response's first line as it arrives: give it the whole
/// buffer each time; it looks for the LF only in the bytes not yet seen.
#[derive(Debug, Clone)]
pub struct HeadReader {
    /// The escaped key the request asked for.
    key: Vec<u8>,
    /// `memcached_gzip_flag`: 0 leaves the flags unread.
    gzip_flag: u64,
    /// How many bytes of the buffer hold no LF.
    scanned: usize,
}

impl HeadReader {
    /// A reader for the answer to a request for `escaped_key` (as
    /// [`request`] wrote it), with `memcached_gzip_flag`.
    pub fn new(escaped_key: &[u8], gzip_flag: u64) -> Self {
        HeadReader {
            key: escaped_key.to_vec(),
            gzip_flag,
            scanned: 0,
        }
    }

    /// The line's meaning once `buf` (everything received so far) holds
    /// its LF, `None` until then.
    pub fn read(&mut self, buf: &[u8]) -> Result<Option<Head>, HeadError> {
        let from = self.scanned.min(buf.len());
        let Some(lf) = buf[from..].iter().position(|&b| b == b'\n') else {
            self.scanned = buf.len();
            return Ok(None);
        };
        let lf = from + lf;
        let used = lf + 1;
        let Some(line) = buf[..lf].strip_suffix(b"\r") else {
            return Err(HeadError::Response {
                line: buf[..lf].to_vec(),
            });
        };
        if let Some(rest) = line.strip_prefix(b"VALUE ") {
            return self.value(line, rest, used).map(Some);
        }
        if line == b"END" {
            return Ok(Some(Head::NotFound { used }));
        }
        Err(HeadError::Response {
            line: line.to_vec(),
        })
    }

    /// Reads `rest`, what follows `VALUE ` on `line`.
    fn value(&self, line: &[u8], rest: &[u8], used: usize) -> Result<Head, HeadError> {
        let key_err = || HeadError::Key {
            line: line.to_vec(),
            key: self.key.clone(),
        };
        let rest = rest.strip_prefix(self.key.as_slice()).ok_or_else(key_err)?;
        let invalid = || HeadError::Response {
            line: line.to_vec(),
        };
        let rest = rest.strip_prefix(b" ").ok_or_else(invalid)?;
        // nginx scans the NUL-terminated line for the space after the
        // flags: a NUL before it ends the scan.
        let space = rest
            .iter()
            .take_while(|&&b| b != 0)
            .position(|&b| b == b' ')
            .ok_or_else(invalid)?;
        let (flags_text, length_text) = (&rest[..space], &rest[space + 1..]);
        let (flags, gzip) = if self.gzip_flag == 0 {
            (None, false)
        } else {
            let flags = atoi(flags_text).ok_or_else(|| HeadError::Flags {
                line: line.to_vec(),
                key: self.key.clone(),
            })?;
            (Some(flags), flags & self.gzip_flag != 0)
        };
        let length = atoi(length_text).ok_or_else(|| HeadError::Length {
            line: line.to_vec(),
            key: self.key.clone(),
        })?;
        Ok(Head::Value {
            used,
            flags,
            gzip,
            length,
        })
    }
}

/// `ngx_atoi`/`ngx_atoof`: decimal digits only, at least one, at most
/// [`MAX_NUMBER`].
fn atoi(text: &[u8]) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    text.iter().try_fold(0u64, |n, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        n.checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
            .filter(|&n| n <= MAX_NUMBER)
    })
}

/// The value's end (`ngx_http_memcached_filter`) was not `\r\nEND\r\n`.
/// nginx logs it and ends the response after the value, without keeping
/// the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrailerError;

impl fmt::Display for TrailerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("memcached sent invalid trailer")
    }
}

impl std::error::Error for TrailerError {}

/// What one piece of the value held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The value's bytes in the piece: a range of it.
    pub data: Range<usize>,
    /// `None` while more is to come; `Some(Ok)` once the trailer is read
    /// (the connection may be kept); `Some(Err)` for a bad trailer.
    pub end: Option<Result<(), TrailerError>>,
}

/// Reads the value after a [`Head::Value`] and checks its trailer, from
/// pieces of any size.
#[derive(Debug, Clone)]
pub struct ValueReader {
    /// Value bytes still to come.
    value_left: u64,
    /// Trailer bytes already matched.
    trailer_got: usize,
    /// Set once the trailer is read or found bad.
    done: bool,
}

impl ValueReader {
    /// A reader for a value of `length` bytes.
    pub fn new(length: u64) -> Self {
        ValueReader {
            value_left: length,
            trailer_got: 0,
            done: false,
        }
    }

    /// Reads `input`, the next bytes from memcached. As nginx, bytes
    /// beyond the trailer make it invalid, and so does anything fed after
    /// the end.
    pub fn feed(&mut self, input: &[u8]) -> Step {
        if self.done {
            return Step {
                data: 0..0,
                end: Some(Err(TrailerError)),
            };
        }
        let take = usize::try_from(self.value_left)
            .unwrap_or(usize::MAX)
            .min(input.len());
        self.value_left -= take as u64;
        let data = 0..take;
        let rest = &input[take..];
        if self.value_left > 0 || (rest.is_empty() && self.trailer_got == 0) {
            return Step { data, end: None };
        }
        let expect = &TRAILER[self.trailer_got..];
        if rest.len() > expect.len() || !expect.starts_with(rest) {
            self.done = true;
            return Step {
                data,
                end: Some(Err(TrailerError)),
            };
        }
        self.trailer_got += rest.len();
        let end = if self.trailer_got == TRAILER.len() {
            self.done = true;
            Some(Ok(()))
        } else {
            None
        };
        Step { data, end }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What nginx sent for `set $memcached_key $uri` and
    /// `GET /m/a%20b%25c%09d%ff%7f`.
    const NGINX_GET: &[u8] = b"get /m/a%20b%25c%09d\xff\x7f\r\n";

    #[test]
    fn request_escapes_the_key_as_nginx() {
        let mut out = Vec::new();
        let key = request(&mut out, b"/m/a b%c\td\xff\x7f").unwrap();
        assert_eq!(out, NGINX_GET);
        assert_eq!(&out[key], b"/m/a%20b%25c%09d\xff\x7f");
    }

    #[test]
    fn an_empty_key_is_not_set() {
        let e = request(&mut Vec::new(), b"").unwrap_err();
        assert_eq!(e.to_string(), "the \"$memcached_key\" variable is not set");
    }

    #[test]
    fn value_line_is_read_once_its_lf_arrives() {
        let buf = b"VALUE k 3 12\r\nhello";
        let mut r = HeadReader::new(b"k", 0);
        for end in 0..13 {
            assert_eq!(r.read(&buf[..end]), Ok(None), "at {end}");
        }
        assert_eq!(
            r.read(buf),
            Ok(Some(Head::Value {
                used: 14,
                flags: None,
                gzip: false,
                length: 12
            }))
        );
    }

    #[test]
    fn gzip_flag_reads_the_flags() {
        let mut r = HeadReader::new(b"k", 2);
        assert_eq!(
            r.read(b"VALUE k 3 0\r\n"),
            Ok(Some(Head::Value {
                used: 13,
                flags: Some(3),
                gzip: true,
                length: 0
            }))
        );
        let e = HeadReader::new(b"k", 2)
            .read(b"VALUE k x 1\r\n")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "memcached sent invalid flags in response \"VALUE k x 1\" for key \"k\""
        );
        // Without memcached_gzip_flag the flags are not looked at.
        assert!(HeadReader::new(b"k", 0).read(b"VALUE k x 1\r\n").is_ok());
    }

    #[test]
    fn end_is_not_found() {
        let mut r = HeadReader::new(b"k", 0);
        assert_eq!(r.read(b"END\r\n"), Ok(Some(Head::NotFound { used: 5 })));
    }

    #[test]
    fn bad_lines_are_reported_in_nginx_words() {
        let cases: [(&[u8], &str); 7] = [
            (
                b"VALUE j 0 1\r\n",
                "memcached sent invalid key in response \"VALUE j 0 1\" for key \"k\"",
            ),
            (
                b"VALUE k 0 -1\r\n",
                "memcached sent invalid length in response \"VALUE k 0 -1\" for key \"k\"",
            ),
            (
                b"VALUE k 0 \r\n",
                "memcached sent invalid length in response \"VALUE k 0 \" for key \"k\"",
            ),
            (
                b"VALUE k 0 9223372036854775808\r\n",
                "memcached sent invalid length in response \"VALUE k 0 9223372036854775808\" for key \"k\"",
            ),
            (
                b"VALUE k 0\r\n",
                "memcached sent invalid response: \"VALUE k 0\"",
            ),
            (b"END\n", "memcached sent invalid response: \"END\""),
            (
                b"SERVER_ERROR out of memory\r\n",
                "memcached sent invalid response: \"SERVER_ERROR out of memory\"",
            ),
        ];
        for (line, text) in cases {
            let e = HeadReader::new(b"k", 0).read(line).unwrap_err();
            assert_eq!(e.to_string(), text);
        }
    }

    /// Feeds `input` in pieces of `step`, returning the value and the end.
    fn run(length: u64, input: &[u8], step: usize) -> (Vec<u8>, Option<Result<(), TrailerError>>) {
        let mut r = ValueReader::new(length);
        let mut value = Vec::new();
        for piece in input.chunks(step) {
            let s = r.feed(piece);
            value.extend_from_slice(&piece[s.data]);
            if s.end.is_some() {
                return (value, s.end);
            }
        }
        (value, None)
    }

    #[test]
    fn value_and_trailer_in_any_pieces() {
        let input = b"hello world\r\nEND\r\n";
        for step in 1..input.len() + 1 {
            assert_eq!(
                run(11, input, step),
                (b"hello world".to_vec(), Some(Ok(()))),
                "step {step}"
            );
        }
        assert_eq!(run(0, b"\r\nEND\r\n", 3), (Vec::new(), Some(Ok(()))));
    }

    #[test]
    fn a_bad_trailer_ends_after_the_value() {
        let (value, end) = run(2, b"hi\r\nEXD\r\n", 4);
        assert_eq!(value, b"hi");
        assert_eq!(end, Some(Err(TrailerError)));
        assert_eq!(TrailerError.to_string(), "memcached sent invalid trailer");
        // Bytes beyond the trailer spoil it too, as in nginx.
        assert_eq!(run(2, b"hi\r\nEND\r\nx", 64).1, Some(Err(TrailerError)));
    }
}
