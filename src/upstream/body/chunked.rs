//! nginx 1.22.1's `ngx_http_parse_chunked`, for upstream response bodies.
//!
//! Owns: the chunked framing state machine (RFC 9112 §7.1, read as
//! leniently as nginx reads it: LF alone ends a line; extensions and
//! trailer fields are skipped whatever their bytes, with no length limit,
//! since nothing of them is kept).
//! Must not: keep anything of the framing but the current chunk's size.

use super::{BodyError, Step};

/// The largest chunk size nginx lets a digit be added to (`off_t` / 16).
const MAX_SIZE_BEFORE_DIGIT: u64 = i64::MAX as u64 / 16;
/// The largest chunk size nginx accepts (`NGX_MAX_OFF_T_VALUE - 5`).
const MAX_SIZE: u64 = i64::MAX as u64 - 5;

/// The states of `ngx_http_parse_chunked`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    /// Before a chunk's first size digit.
    #[default]
    ChunkStart,
    /// Inside the size digits.
    ChunkSize,
    /// After the size of a chunk with data: extensions, up to the line end.
    ChunkExtension,
    /// Saw CR ending a size line; LF next.
    ChunkExtensionAlmostDone,
    /// Inside chunk data.
    ChunkData,
    /// After chunk data: CR or LF next.
    AfterData,
    /// Saw CR after chunk data; LF next.
    AfterDataAlmostDone,
    /// After the last chunk's size (0): extensions, up to the line end.
    LastChunkExtension,
    /// Saw CR ending the last chunk's size line; LF next.
    LastChunkExtensionAlmostDone,
    /// At the start of a trailer line or of the final blank line.
    Trailer,
    /// Saw CR of the final blank line; LF next.
    TrailerAlmostDone,
    /// Inside a trailer field line.
    TrailerHeader,
    /// Saw CR ending a trailer field line; LF next.
    TrailerHeaderAlmostDone,
    /// The final blank line was read.
    Done,
}

/// The chunked framing state of one body.
#[derive(Clone, Debug, Default)]
pub(super) struct Chunked {
    /// Where the parser is.
    state: State,
    /// The current chunk's size while reading it, then its bytes left.
    size: u64,
}

impl Chunked {
    /// Whether the final blank line has been read.
    pub(super) fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Takes framing bytes up to the next run of chunk data and that run,
    /// or up to the end of the body, or all of `input`.
    pub(super) fn step(&mut self, input: &[u8]) -> Result<Step, BodyError> {
        for (i, &ch) in input.iter().enumerate() {
            if self.state == State::ChunkData {
                let take = self.size.min((input.len() - i) as u64);
                self.size -= take;
                if self.size == 0 {
                    self.state = State::AfterData;
                }
                let end = i + take as usize;
                return Ok(Step {
                    consumed: end,
                    data: i..end,
                });
            }
            self.state = self.next(ch)?;
            if self.state == State::Done {
                return Ok(Step {
                    consumed: i + 1,
                    data: i + 1..i + 1,
                });
            }
        }
        Ok(Step {
            consumed: input.len(),
            data: input.len()..input.len(),
        })
    }

    /// The state after `ch`, outside chunk data.
    fn next(&mut self, ch: u8) -> Result<State, BodyError> {
        let hex = (ch as char).to_digit(16).map(u64::from);
        Ok(match self.state {
            State::ChunkStart => {
                self.size = hex.ok_or(BodyError::InvalidChunked)?;
                State::ChunkSize
            }
            State::ChunkSize => {
                if self.size > MAX_SIZE_BEFORE_DIGIT {
                    return Err(BodyError::InvalidChunked);
                }
                match (hex, ch, self.size) {
                    (Some(d), _, _) => {
                        self.size = self.size * 16 + d;
                        if self.size > MAX_SIZE {
                            return Err(BodyError::InvalidChunked);
                        }
                        State::ChunkSize
                    }
                    (None, b'\r', 0) => State::LastChunkExtensionAlmostDone,
                    (None, b'\n', 0) => State::Trailer,
                    (None, b';' | b' ' | b'\t', 0) => State::LastChunkExtension,
                    (None, b'\r', _) => State::ChunkExtensionAlmostDone,
                    (None, b'\n', _) => State::ChunkData,
                    (None, b';' | b' ' | b'\t', _) => State::ChunkExtension,
                    _ => return Err(BodyError::InvalidChunked),
                }
            }
            State::ChunkExtension => match ch {
                b'\r' => State::ChunkExtensionAlmostDone,
                b'\n' => State::ChunkData,
                _ => State::ChunkExtension,
            },
            State::ChunkExtensionAlmostDone if ch == b'\n' => State::ChunkData,
            State::AfterData => match ch {
                b'\r' => State::AfterDataAlmostDone,
                b'\n' => State::ChunkStart,
                _ => return Err(BodyError::InvalidChunked),
            },
            State::AfterDataAlmostDone if ch == b'\n' => State::ChunkStart,
            State::LastChunkExtension => match ch {
                b'\r' => State::LastChunkExtensionAlmostDone,
                b'\n' => State::Trailer,
                _ => State::LastChunkExtension,
            },
            State::LastChunkExtensionAlmostDone if ch == b'\n' => State::Trailer,
            State::Trailer => match ch {
                b'\r' => State::TrailerAlmostDone,
                b'\n' => State::Done,
                _ => State::TrailerHeader,
            },
            State::TrailerAlmostDone if ch == b'\n' => State::Done,
            State::TrailerHeader => match ch {
                b'\r' => State::TrailerHeaderAlmostDone,
                b'\n' => State::Trailer,
                _ => State::TrailerHeader,
            },
            State::TrailerHeaderAlmostDone if ch == b'\n' => State::Trailer,
            // A CR not followed by LF; nothing is read after Done, and
            // ChunkData is handled by the caller.
            _ => return Err(BodyError::InvalidChunked),
        })
    }
}
