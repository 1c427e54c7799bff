//! Sending a streamed body (an upstream's response as it arrives) to the
//! client, reading ahead of a slow client up to a bound.
//!
//! The source is read while there is room: `read_ahead` bytes
//! (`proxy_buffers` with `proxy_buffering on`, one `proxy_buffer_size`
//! buffer with it off), so a slow client slows the upstream read once the
//! room is full — back-pressure, never unbounded memory. Pieces go out in
//! order, framed as `Transfer-Encoding: chunked` when the client needs it.
//! A source that fails mid-body stops the response: what was read is sent,
//! then the connection is closed without a last chunk, so the client never
//! takes a cut body for a complete one.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::pin::pin;

use bytes::Bytes;
use tokio::net::TcpStream;

use crate::body::{Source, chunked};

use super::send::{SendError, SendParams, Written};

/// The read-ahead when the caller sets none.
pub const DEFAULT_READ_AHEAD: usize = 64 * 1024;

/// The most pieces one `writev()` sends.
const MAX_IOV: usize = 64;

/// Pieces read and not yet written, framing included.
struct Queue {
    pieces: VecDeque<Bytes>,
    bytes: usize,
}

impl Queue {
    fn push(&mut self, b: Bytes) {
        if !b.is_empty() {
            self.bytes += b.len();
            self.pieces.push_back(b);
        }
    }

    /// Drops `n` written bytes from the front.
    fn consume(&mut self, mut n: usize) {
        self.bytes -= n;
        while n > 0 {
            let Some(front) = self.pieces.front_mut() else {
                return;
            };
            if front.len() <= n {
                n -= front.len();
                self.pieces.pop_front();
            } else {
                let _ = front.split_to(n);
                n = 0;
            }
        }
    }

    /// Writes what the socket takes now; `Ok(0)` when it takes nothing.
    fn try_write(&self, stream: &TcpStream) -> std::io::Result<usize> {
        let slices: Vec<IoSlice<'_>> = self
            .pieces
            .iter()
            .take(MAX_IOV)
            .map(|b| IoSlice::new(b))
            .collect();
        match stream.try_write_vectored(&slices) {
            Ok(n) => Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(0),
            Err(e) => Err(e),
        }
    }
}

/// Sends `source` after the head was written, counting into `w`.
pub async fn send_stream(
    stream: &TcpStream,
    source: &mut dyn Source,
    p: &SendParams<'_>,
    w: &mut Written,
) -> Result<(), SendError> {
    let limit = if p.read_ahead == 0 {
        DEFAULT_READ_AHEAD
    } else {
        p.read_ahead
    };
    let mut q = Queue {
        pieces: VecDeque::new(),
        bytes: 0,
    };
    let mut ended = false;
    let mut failure = None;
    let mut deadline = pin!(tokio::time::sleep(p.timeout));
    loop {
        // Write what the socket takes without waiting.
        while q.bytes > 0 {
            match q.try_write(stream).map_err(SendError::Io)? {
                0 => break,
                n => {
                    q.consume(n);
                    w.count(n);
                    deadline
                        .as_mut()
                        .reset(tokio::time::Instant::now() + p.timeout);
                }
            }
        }
        if (ended || failure.is_some()) && q.bytes == 0 {
            break;
        }
        let can_read = !ended && failure.is_none() && q.bytes < limit;
        let must_write = q.bytes > 0;
        tokio::select! {
            biased;
            r = std::future::poll_fn(|cx| source.poll_chunk(cx)), if can_read => {
                if q.bytes == 0 {
                    // The client's clock starts when there is something to send.
                    deadline.as_mut().reset(tokio::time::Instant::now() + p.timeout);
                }
                match r {
                Ok(Some(piece)) => {
                    if p.chunked {
                        let mut head = Vec::with_capacity(10);
                        chunked::chunk_head(piece.len(), &mut head);
                        if !piece.is_empty() {
                            q.push(Bytes::from(head));
                            q.push(piece);
                            q.push(Bytes::from_static(chunked::CHUNK_END));
                        }
                    } else {
                        q.push(piece);
                    }
                }
                Ok(None) => {
                    ended = true;
                    if p.chunked {
                        q.push(Bytes::from_static(chunked::LAST_CHUNK));
                    }
                }
                Err(e) => failure = Some(e),
                }
            },
            r = stream.writable(), if must_write => r.map_err(SendError::Io)?,
            _ = deadline.as_mut(), if must_write => return Err(SendError::TimedOut),
        }
    }
    match failure {
        Some(e) => Err(SendError::Source(e)),
        None => Ok(()),
    }
}
