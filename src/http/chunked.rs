//! An incremental decoder for chunked request bodies (RFC 9112 §7.1).
//!
//! Owns: the chunked framing state machine, its limits, and the body-size
//! check against `client_max_body_size`.
//! Must not: read the socket; the caller feeds whatever bytes arrived and
//! gets back how many were consumed and the data bytes found.
//!
//! ```text
//! chunked-body = *chunk last-chunk trailer-section CRLF
//! chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//! last-chunk   = 1*("0") [ chunk-ext ] CRLF
//! ```
//!
//! Lines must end in CRLF: a lone LF in chunk framing is refused, because
//! two parsers disagreeing on framing is how bodies get smuggled.

use std::fmt;

use crate::http::status::Status;

/// The longest chunk-size line (size, extensions, CRLF). nginx sets no
/// explicit bound; without one a peer could stream extensions forever.
pub const MAX_CHUNK_LINE: usize = 4096;

/// The most trailer-section bytes (the fields after the last chunk), the
/// size of one of nginx's large header buffers.
pub const MAX_TRAILER: usize = 8192;

/// Why a chunked body was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChunkedError {
    /// Bad framing: a non-hex size, a missing CRLF, a bare LF (400).
    Invalid(&'static str),
    /// A chunk size beyond what a 64-bit signed offset holds (400).
    SizeOverflow,
    /// A chunk-size line longer than [`MAX_CHUNK_LINE`] (400).
    LineTooLong,
    /// A trailer section longer than [`MAX_TRAILER`] (400).
    TrailerTooLarge,
    /// The declared chunks exceed `client_max_body_size` (413).
    TooLarge {
        /// Body bytes announced so far, including the chunk that overflowed.
        announced: u64,
    },
}

impl ChunkedError {
    /// The status to answer with.
    pub fn status(&self) -> Status {
        match self {
            ChunkedError::TooLarge { .. } => Status::REQUEST_ENTITY_TOO_LARGE,
            _ => Status::BAD_REQUEST,
        }
    }
}

impl fmt::Display for ChunkedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChunkedError::Invalid(what) => write!(f, "client sent invalid chunked body ({what})"),
            ChunkedError::SizeOverflow => {
                f.write_str("client sent invalid chunked body (chunk size too big)")
            }
            ChunkedError::LineTooLong => {
                write!(
                    f,
                    "client sent invalid chunked body (chunk line over {MAX_CHUNK_LINE} bytes)"
                )
            }
            ChunkedError::TrailerTooLarge => {
                write!(
                    f,
                    "client sent invalid chunked body (trailer over {MAX_TRAILER} bytes)"
                )
            }
            ChunkedError::TooLarge { announced } => {
                write!(
                    f,
                    "client intended to send too large chunked body: {announced} bytes"
                )
            }
        }
    }
}

impl std::error::Error for ChunkedError {}

/// Where the decoder is in the framing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Reading the hex chunk size; `digits` seen so far.
    Size { digits: usize },
    /// After the size: spaces/tabs (BWS) before `;` or CR.
    SizeEnd,
    /// Inside chunk extensions, up to CR.
    Extension,
    /// Saw the CR ending the size line; LF next.
    SizeLf,
    /// Inside chunk data; `remaining` bytes left.
    Data { remaining: u64 },
    /// After chunk data: CR next.
    DataCr,
    /// After chunk data and CR: LF next.
    DataLf,
    /// At the start of a trailer line (or the final CRLF).
    TrailerStart,
    /// Inside a trailer field line, up to CR.
    TrailerLine,
    /// Saw CR ending a trailer field line; LF next.
    TrailerLf,
    /// Saw CR of the final empty line; LF next.
    EndLf,
    /// The body is complete.
    Done,
}

/// Decodes a chunked body fed in pieces.
#[derive(Clone, Debug)]
pub struct ChunkedDecoder {
    /// The framing state.
    state: State,
    /// The size of the chunk being read, while in `Size`.
    size: u64,
    /// Body bytes announced by chunk sizes so far.
    announced: u64,
    /// Body bytes seen so far.
    body_len: u64,
    /// Bytes in the current chunk-size line.
    line_len: usize,
    /// Bytes in the trailer section.
    trailer_len: usize,
    /// `client_max_body_size`; `None` for no limit (nginx's `0`).
    max_body: Option<u64>,
}

impl ChunkedDecoder {
    /// A decoder refusing bodies over `max_body` bytes (`None`: no limit).
    pub fn new(max_body: Option<u64>) -> Self {
        ChunkedDecoder {
            state: State::Size { digits: 0 },
            size: 0,
            announced: 0,
            body_len: 0,
            line_len: 0,
            trailer_len: 0,
            max_body,
        }
    }

    /// Whether the whole body, trailer and final CRLF have been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Body (chunk-data) bytes seen so far.
    pub fn body_len(&self) -> u64 {
        self.body_len
    }

    /// Consumes bytes from `input`, handing each run of chunk data to
    /// `on_data`. Returns how many bytes were consumed: all of them, unless
    /// the body ended, in which case the rest (a pipelined request) is left.
    pub fn feed(
        &mut self,
        input: &[u8],
        mut on_data: impl FnMut(&[u8]),
    ) -> Result<usize, ChunkedError> {
        let mut i = 0;
        while i < input.len() && self.state != State::Done {
            if let State::Data { remaining } = self.state {
                let available = (input.len() - i) as u64;
                let take = remaining.min(available) as usize;
                on_data(&input[i..i + take]);
                i += take;
                self.body_len += take as u64;
                let remaining = remaining - take as u64;
                self.state = if remaining == 0 {
                    State::DataCr
                } else {
                    State::Data { remaining }
                };
                continue;
            }
            self.step(input[i])?;
            i += 1;
        }
        Ok(i)
    }

    /// Advances the framing state by one byte outside chunk data.
    fn step(&mut self, c: u8) -> Result<(), ChunkedError> {
        if matches!(
            self.state,
            State::Size { .. } | State::SizeEnd | State::Extension | State::SizeLf
        ) {
            self.line_len += 1;
            if self.line_len > MAX_CHUNK_LINE {
                return Err(ChunkedError::LineTooLong);
            }
        }
        if matches!(
            self.state,
            State::TrailerStart | State::TrailerLine | State::TrailerLf | State::EndLf
        ) {
            self.trailer_len += 1;
            if self.trailer_len > MAX_TRAILER {
                return Err(ChunkedError::TrailerTooLarge);
            }
        }
        self.state = match (self.state, c) {
            (State::Size { digits }, c) if c.is_ascii_hexdigit() => {
                let digit = u64::from((c as char).to_digit(16).unwrap_or(0));
                self.size = self
                    .size
                    .checked_mul(16)
                    .and_then(|s| s.checked_add(digit))
                    .filter(|&s| s <= i64::MAX as u64)
                    .ok_or(ChunkedError::SizeOverflow)?;
                State::Size { digits: digits + 1 }
            }
            (State::Size { digits: 0 }, _) => {
                return Err(ChunkedError::Invalid("chunk size expected"));
            }
            (State::Size { .. } | State::SizeEnd, b' ' | b'\t') => State::SizeEnd,
            (State::Size { .. } | State::SizeEnd, b';') => State::Extension,
            (State::Size { .. } | State::SizeEnd | State::Extension, b'\r') => State::SizeLf,
            (State::Size { .. } | State::SizeEnd, _) => {
                return Err(ChunkedError::Invalid("bad chunk size"));
            }
            (State::Extension, b'\n') => return Err(ChunkedError::Invalid("bare LF")),
            (State::Extension, c) if c == b'\t' || (c >= b' ' && c != 0x7f) => State::Extension,
            (State::Extension, _) => {
                return Err(ChunkedError::Invalid("control byte in chunk extension"));
            }
            (State::SizeLf, b'\n') => self.end_size_line()?,
            (State::SizeLf, _) => return Err(ChunkedError::Invalid("CR without LF")),
            (State::DataCr, b'\r') => State::DataLf,
            (State::DataLf, b'\n') => State::Size { digits: 0 },
            (State::DataCr | State::DataLf, _) => {
                return Err(ChunkedError::Invalid("CRLF expected after chunk data"));
            }
            (State::TrailerStart, b'\r') => State::EndLf,
            (State::EndLf, b'\n') => State::Done,
            (State::EndLf, _) => return Err(ChunkedError::Invalid("CRLF expected at end of body")),
            (State::TrailerLine, b'\r') => State::TrailerLf,
            (State::TrailerStart | State::TrailerLine, b'\n') => {
                return Err(ChunkedError::Invalid("bare LF"));
            }
            (State::TrailerStart | State::TrailerLine, c)
                if c == b'\t' || (c >= b' ' && c != 0x7f) || c >= 0x80 =>
            {
                State::TrailerLine
            }
            (State::TrailerStart | State::TrailerLine, _) => {
                return Err(ChunkedError::Invalid("control byte in trailer"));
            }
            (State::TrailerLf, b'\n') => State::TrailerStart,
            (State::TrailerLf, _) => return Err(ChunkedError::Invalid("CR without LF")),
            (State::Data { .. } | State::Done, _) => self.state,
        };
        Ok(())
    }

    /// The size line is complete: start the chunk's data, or the trailer.
    fn end_size_line(&mut self) -> Result<State, ChunkedError> {
        let size = std::mem::take(&mut self.size);
        self.line_len = 0;
        if size == 0 {
            return Ok(State::TrailerStart);
        }
        self.announced = self.announced.saturating_add(size);
        if self.max_body.is_some_and(|max| self.announced > max) {
            return Err(ChunkedError::TooLarge {
                announced: self.announced,
            });
        }
        Ok(State::Data { remaining: size })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` in pieces of `step` bytes; returns data, consumed.
    fn decode(
        input: &[u8],
        step: usize,
        max: Option<u64>,
    ) -> Result<(Vec<u8>, usize, bool), ChunkedError> {
        let mut d = ChunkedDecoder::new(max);
        let mut data = Vec::new();
        let mut consumed = 0;
        for piece in input.chunks(step.max(1)) {
            let n = d.feed(piece, |b| data.extend_from_slice(b))?;
            consumed += n;
            if d.is_done() {
                break;
            }
        }
        assert_eq!(d.body_len(), data.len() as u64);
        Ok((data, consumed, d.is_done()))
    }

    const BODY: &[u8] = b"5\r\nhello\r\n6;name=val\r\n world\r\n0\r\n\r\n";

    #[test]
    fn decodes_in_any_split() {
        for step in [1, 2, 3, 7, 100] {
            let (data, consumed, done) = decode(BODY, step, None).unwrap();
            assert_eq!(data, b"hello world", "step {step}");
            assert_eq!(consumed, BODY.len());
            assert!(done);
        }
    }

    #[test]
    fn leaves_pipelined_bytes() {
        let mut input = BODY.to_vec();
        input.extend_from_slice(b"GET / HTTP/1.1\r\n");
        let (_, consumed, done) = decode(&input, 1000, None).unwrap();
        assert!(done);
        assert_eq!(consumed, BODY.len());
    }

    #[test]
    fn trailers_and_hex_case() {
        let input = b"A\r\n0123456789\r\nf\r\n0123456789abcde\r\n000\r\nX-T: 1\r\nY: 2\r\n\r\n";
        let (data, _, done) = decode(input, 4, None).unwrap();
        assert_eq!(data.len(), 25);
        assert!(done);
        assert!(decode(b"0 ; ext\r\n\r\n", 1, None).unwrap().2);
    }

    #[test]
    fn incomplete_is_not_done() {
        let (_, consumed, done) = decode(b"5\r\nhel", 100, None).unwrap();
        assert_eq!(consumed, 6);
        assert!(!done);
    }

    #[test]
    fn invalid_framing() {
        for bad in [
            &b"\r\n"[..],
            b"x\r\n",
            b"-1\r\n",
            b"+5\r\nhello\r\n",
            b"5\nhello\r\n",
            b"5\r\nhelloXX",
            b"5\r\nhello\n0\r\n\r\n",
            b"0\r\n\n",
            b"0\r\nX: 1\n\r\n",
            b"5 5\r\n",
            b"5;a\nb\r\n",
            b"5;\x01\r\n",
            b"0x5\r\n",
            b"0\r\nX\x00: 1\r\n\r\n",
        ] {
            let e = decode(bad, 100, None).unwrap_err();
            assert_eq!(
                e.status(),
                Status::BAD_REQUEST,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn huge_sizes() {
        assert_eq!(
            decode(b"8000000000000000\r\n", 100, None).unwrap_err(),
            ChunkedError::SizeOverflow
        );
        assert_eq!(
            decode(b"fffffffffffffffffff\r\n", 100, None).unwrap_err(),
            ChunkedError::SizeOverflow
        );
        // Leading zeros are fine up to the line limit.
        let mut zeros = vec![b'0'; MAX_CHUNK_LINE + 1];
        zeros.extend_from_slice(b"\r\n");
        assert_eq!(
            decode(&zeros, 100, None).unwrap_err(),
            ChunkedError::LineTooLong
        );
        let mut ext = b"1;".to_vec();
        ext.extend(std::iter::repeat_n(b'a', MAX_CHUNK_LINE));
        assert_eq!(
            decode(&ext, 1000, None).unwrap_err(),
            ChunkedError::LineTooLong
        );
    }

    #[test]
    fn trailer_limit() {
        let mut input = b"0\r\nX: ".to_vec();
        input.extend(std::iter::repeat_n(b'a', MAX_TRAILER));
        assert_eq!(
            decode(&input, 1000, None).unwrap_err(),
            ChunkedError::TrailerTooLarge
        );
    }

    #[test]
    fn body_limit_is_checked_on_declared_sizes() {
        assert!(decode(BODY, 100, Some(11)).is_ok());
        let e = decode(BODY, 100, Some(10)).unwrap_err();
        assert_eq!(e, ChunkedError::TooLarge { announced: 11 });
        assert_eq!(e.status(), Status::REQUEST_ENTITY_TOO_LARGE);
        assert_eq!(
            e.to_string(),
            "client intended to send too large chunked body: 11 bytes"
        );
        // Refused as soon as the size line arrives, before any data.
        assert!(decode(b"100\r\n", 100, Some(255)).is_err());
    }
}
