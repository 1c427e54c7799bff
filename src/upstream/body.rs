//! The body of an upstream response: where it ends, its payload, and
//! whether the connection may carry another request after it.
//!
//! Owns: decoding a body framed by length, chunks or the upstream's close,
//! as nginx 1.22.1's proxy filters do (`ngx_http_proxy_copy_filter`,
//! `ngx_http_proxy_chunked_filter` and their non-buffered twins), and
//! nginx's keep-alive rule for the upstream connection (`u->keepalive`).
//! Must not: read sockets, allocate per chunk, or log: the caller feeds the
//! bytes it read, gets the payload as ranges of them (or slices through a
//! callback), and logs [`BodyDecoder::warning`] or a [`BodyError`].
//!
//! The chunked parser is nginx's `ngx_http_parse_chunked`, not the request
//! body's [`crate::http::chunked`]: nginx is lenient with an upstream (a
//! bare LF ends a line, chunk extensions and trailers may hold any byte and
//! have no length limit; they are skipped, not stored), while nowait's
//! request decoder is strict on purpose.

use std::fmt;
use std::ops::Range;

use super::head::{Framing, ResponseHead, framing};

mod chunked;
#[cfg(test)]
mod tests;

use chunked::Chunked;

/// Why a body could not be read to its end. nginx ends the response to the
/// client there (it cannot send an error: the head is already out) and
/// closes the upstream connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyError {
    /// `ngx_http_parse_chunked` refused the framing.
    InvalidChunked,
    /// The upstream closed before the length or the last chunk.
    PrematureClose,
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BodyError::InvalidChunked => "upstream sent invalid chunked response",
            BodyError::PrematureClose => "upstream prematurely closed connection",
        })
    }
}

impl std::error::Error for BodyError {}

/// What nginx warns when bytes follow a body of known length (an empty
/// one included: 204, 304, HEAD, `Content-Length: 0`).
pub const EXTRA_AFTER_LENGTH: &str =
    "upstream sent more data than specified in \"Content-Length\" header";
/// What nginx warns when bytes follow the last chunk.
pub const EXTRA_AFTER_CHUNKS: &str = "upstream sent data after final chunk";

/// One step of decoding: how much input it took and where the payload in
/// it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Input bytes consumed (framing and payload, or extra data dropped).
    pub consumed: usize,
    /// The payload found, a range of the input within `..consumed`;
    /// empty when the step took framing bytes only.
    pub data: Range<usize>,
}

/// Where the body stands after [`BodyDecoder::decode`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// The body has ended (length reached, last chunk and trailer read).
    pub complete: bool,
    /// Bytes followed the body's end; they were dropped, not payload.
    pub extra_data: bool,
}

/// Where the decoder is.
#[derive(Clone, Debug)]
enum State {
    /// This many payload bytes left.
    Length(u64),
    /// Inside chunked framing.
    Chunked(Chunked),
    /// Payload until the upstream closes.
    UntilClose,
    /// The body has ended.
    Done,
}

/// Decodes one response body fed in pieces, without allocating.
#[derive(Clone, Debug)]
pub struct BodyDecoder {
    /// How the body ends.
    framing: Framing,
    /// The decoding state.
    state: State,
    /// The head said the upstream closes after this response.
    connection_close: bool,
    /// Payload bytes seen.
    received: u64,
    /// Bytes followed the end of the body.
    extra_data: bool,
}

impl BodyDecoder {
    /// A decoder for a body with `framing`, on a connection the upstream
    /// has not announced it will close.
    pub fn new(framing: Framing) -> BodyDecoder {
        let state = match framing {
            Framing::Empty | Framing::Length(0) => State::Done,
            Framing::Length(n) => State::Length(n),
            Framing::Chunked => State::Chunked(Chunked::default()),
            Framing::UntilClose => State::UntilClose,
        };
        BodyDecoder {
            framing,
            state,
            connection_close: false,
            received: 0,
            extra_data: false,
        }
    }

    /// The decoder for the body after `head`, an answer to a HEAD request
    /// or not ([`framing`]); it remembers whether `head` closes the
    /// connection, for [`BodyDecoder::keepalive`].
    pub fn for_response(head: &ResponseHead, request_was_head: bool) -> BodyDecoder {
        BodyDecoder {
            connection_close: head.connection_close,
            ..BodyDecoder::new(framing(head, request_was_head))
        }
    }

    /// The framing being decoded.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// Takes framing bytes from `input` up to the next run of payload and
    /// that run. Call again with the rest of the input until it is all
    /// consumed. Bytes after the body's end are consumed and dropped at
    /// once, and remembered as extra data.
    pub fn step(&mut self, input: &[u8]) -> Result<Step, BodyError> {
        let step = match &mut self.state {
            State::Done => {
                self.extra_data |= !input.is_empty();
                Step {
                    consumed: input.len(),
                    data: 0..0,
                }
            }
            State::UntilClose => Step {
                consumed: input.len(),
                data: 0..input.len(),
            },
            State::Length(left) => {
                let take = (*left).min(input.len() as u64) as usize;
                *left -= take as u64;
                if *left == 0 {
                    self.state = State::Done;
                }
                Step {
                    consumed: take,
                    data: 0..take,
                }
            }
            State::Chunked(chunked) => {
                let step = chunked.step(input)?;
                if chunked.is_done() {
                    self.state = State::Done;
                }
                step
            }
        };
        self.received += step.data.len() as u64;
        Ok(step)
    }

    /// Consumes all of `input`, handing each run of payload to `out`.
    pub fn decode(
        &mut self,
        input: &[u8],
        mut out: impl FnMut(&[u8]),
    ) -> Result<Progress, BodyError> {
        let mut pos = 0;
        while pos < input.len() {
            let step = self.step(&input[pos..])?;
            if !step.data.is_empty() {
                out(&input[pos..][step.data]);
            }
            pos += step.consumed;
        }
        Ok(Progress {
            complete: self.is_complete(),
            extra_data: self.extra_data,
        })
    }

    /// The upstream closed the connection: the end of an until-close body,
    /// an error for any other body not complete yet.
    pub fn eof(&mut self) -> Result<(), BodyError> {
        match self.state {
            State::Done => Ok(()),
            State::UntilClose => {
                self.state = State::Done;
                Ok(())
            }
            _ => Err(BodyError::PrematureClose),
        }
    }

    /// Whether the body has ended.
    pub fn is_complete(&self) -> bool {
        matches!(self.state, State::Done)
    }

    /// The payload bytes still to come, when the body is framed by a
    /// length (`None` for chunked or close-delimited bodies).
    pub fn length_left(&self) -> Option<u64> {
        match self.state {
            State::Length(left) => Some(left),
            _ => None,
        }
    }

    /// Payload bytes decoded so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Whether bytes followed the body's end.
    pub fn extra_data(&self) -> bool {
        self.extra_data
    }

    /// What nginx warns (at `warn`) about this body, if anything: the
    /// extra data after it.
    pub fn warning(&self) -> Option<&'static str> {
        match (self.extra_data, self.framing) {
            (false, _) => None,
            (true, Framing::Chunked) => Some(EXTRA_AFTER_CHUNKS),
            (true, _) => Some(EXTRA_AFTER_LENGTH),
        }
    }

    /// Whether the upstream connection may carry another request once this
    /// body is read, nginx's `u->keepalive`: the body ended where its
    /// framing said (never for an until-close body), nothing followed it,
    /// and the head did not announce a close (`Connection: close`, or
    /// HTTP/1.0). The caller also needs the request sent in full, and must
    /// not reuse a connection it tunnelled (101).
    pub fn keepalive(&self) -> bool {
        self.is_complete()
            && !self.extra_data
            && !self.connection_close
            && self.framing != Framing::UntilClose
    }
}
