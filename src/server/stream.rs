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

use crate::body::{Source, chunked};
use crate::config::model::TempPath;
use crate::io::client_stream::ClientStream;
use crate::io::temp::TempFile;

use super::send::{SendError, SendParams, Written};

/// The read-ahead when the caller sets none.
pub const DEFAULT_READ_AHEAD: usize = 64 * 1024;

/// The most one read from the temp file takes back.
const READ_BACK: u64 = 64 * 1024;

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

    /// Writes what the socket takes now, at most `max` bytes; `Ok(0)` when
    /// it takes nothing.
    fn try_write(&self, stream: &ClientStream, max: usize) -> std::io::Result<usize> {
        let mut left = max;
        let slices: Vec<IoSlice<'_>> = self
            .pieces
            .iter()
            .take(MAX_IOV)
            .map_while(|b| {
                if left == 0 {
                    return None;
                }
                let take = b.len().min(left);
                left -= take;
                Some(IoSlice::new(&b[..take]))
            })
            .collect();
        match stream.try_write_vectored(&slices) {
            Ok(n) => Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(0),
            Err(e) => Err(e),
        }
    }
}

/// Where a buffered body spills when the read-ahead memory is full
/// (`proxy_temp_path`, `proxy_max_temp_file_size`,
/// `proxy_temp_file_write_size`): the upstream is then read on, into a temp
/// file written through the file layer, and the client is fed from it.
///
/// The reply carries only the limits; the directory is the location's
/// `proxy_temp_path`, lent by the configuration when the body is sent
/// ([`SpillTo`]), so that no path is copied per response.
#[derive(Clone, Copy, Debug)]
pub struct Spill {
    /// The most bytes the file may hold (nginx's default 1024m).
    pub max: u64,
    /// How much is gathered before one write.
    pub write_size: usize,
}

/// A [`Spill`] with its directory, for the send.
#[derive(Clone, Copy, Debug)]
pub struct SpillTo<'a> {
    /// The temp directory and its levels.
    pub dir: &'a TempPath,
    /// The limits.
    pub limits: Spill,
}

impl Queue {
    /// Queues a piece of payload, framed for the client.
    fn push_payload(&mut self, piece: Bytes, chunked_framing: bool) {
        if piece.is_empty() {
            return;
        }
        if chunked_framing {
            let mut head = Vec::with_capacity(10);
            chunked::chunk_head(piece.len(), &mut head);
            self.push(Bytes::from(head));
            self.push(piece);
            self.push(Bytes::from_static(chunked::CHUNK_END));
        } else {
            self.push(piece);
        }
    }
}

/// The spilled part of a body: a temp file read back in order, and what is
/// gathered for its next write.
struct Spilled {
    file: Option<TempFile>,
    /// Bytes of the file already moved to the queue.
    read: u64,
    /// Payload read from the source and not yet written to the file.
    pending: Vec<u8>,
}

impl Spilled {
    /// Bytes the file holds that the client has not been given.
    fn unread(&self) -> u64 {
        self.file.as_ref().map_or(0, |f| f.len - self.read)
    }

    /// Whether payload waits outside the queue (order: file, then pending).
    fn active(&self) -> bool {
        self.unread() > 0 || !self.pending.is_empty()
    }
}

/// Sends `head`, then `source`, counting into `w` (the head in `total`
/// only). With [`SendParams::postpone`] set, nothing is written until that
/// much waits or the body has ended.
pub async fn send_stream_after(
    stream: &ClientStream,
    head: Vec<u8>,
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
    let mut spill = Spilled {
        file: None,
        read: 0,
        pending: Vec::new(),
    };
    let mut ended = false;
    let mut framing_closed = false;
    let mut failure = None;
    // `send_timeout` runs from the last write; the timer is armed only when
    // the loop waits for the socket (a response written at once never
    // touches the timer wheel).
    let mut due = tokio::time::Instant::from_std(crate::metrics::timed::now()) + p.timeout;
    let mut deadline = pin!(tokio::time::sleep_until(due));
    let mut armed = due;
    // Head bytes still in the queue (counted in `total` only).
    let mut head_left = head.len();
    let mut first_write = head_left > 0;
    q.push(Bytes::from(head));
    // A failure met before the head went out: it takes effect once the
    // head is written, as when the head was sent before the first poll
    // (output that is not gathered, see `SendParams::postpone`).
    let mut early = None;
    if head_left > 0 {
        // What the source has now joins the head in the first write (a
        // small response is one `writev()`, as nginx's write filter sends
        // the postponed header with the first buffer).
        while q.bytes < limit {
            let now = std::future::poll_fn(|cx| {
                std::task::Poll::Ready(match source.poll_chunk(cx) {
                    std::task::Poll::Ready(r) => Some(r),
                    std::task::Poll::Pending => None,
                })
            })
            .await;
            match now {
                Some(Ok(Some(piece))) => q.push_payload(piece, p.chunked),
                Some(Ok(None)) => {
                    ended = true;
                    break;
                }
                Some(Err(e)) => {
                    if p.postpone > 0 {
                        // Gathered output: the head waited for the body
                        // before, too, and goes out (or not) as it did.
                        failure = Some(e);
                    } else {
                        early = Some(e);
                    }
                    break;
                }
                None => break,
            }
        }
    }
    // `limit_rate`: when the pace allows nothing yet, writing waits here.
    let mut paced = pin!(tokio::time::sleep(std::time::Duration::ZERO));
    let mut pacing = false;
    loop {
        if head_left == 0 && early.is_some() {
            failure = early.take();
        }
        if failure
            .as_ref()
            .is_some_and(|e: &crate::body::SourceError| e.terminate)
        {
            // The request is terminated: what waits is dropped, as nginx
            // closes the connection without flushing.
            break;
        }
        let gathering = p.postpone > 0
            && !source.flushes()
            && !ended
            && failure.is_none()
            && q.bytes < p.postpone
            && q.bytes < limit
            && !spill.active();
        // Write what the socket (and the pace) takes without waiting.
        while q.bytes > 0 && !gathering && !pacing {
            let max = match p.pace.map(|pace| pace.allowance(std::time::Instant::now())) {
                None => usize::MAX,
                Some(Ok(n)) => usize::try_from(n).unwrap_or(usize::MAX),
                Some(Err(wait)) => {
                    paced.as_mut().reset(tokio::time::Instant::now() + wait);
                    pacing = true;
                    break;
                }
            };
            match q.try_write(stream, max).map_err(SendError::Io)? {
                0 => break,
                n => {
                    q.consume(n);
                    let head_part = n.min(head_left);
                    head_left -= head_part;
                    w.total += head_part as u64;
                    w.count(n - head_part);
                    if let Some(c) = p.sent_so_far {
                        c.set(w.total);
                    }
                    if let Some(pace) = p.pace {
                        pace.wrote(n, std::time::Instant::now());
                    }
                    if std::mem::take(&mut first_write) {
                        crate::metrics::worker::ttfb(crate::metrics::timed::since(p.start));
                    }
                    due = tokio::time::Instant::from_std(crate::metrics::timed::now()) + p.timeout;
                }
            }
        }
        // Feed the queue from the spill, in order, when it has room.
        if q.bytes < limit && spill.active() {
            if spill.unread() > 0 {
                let file = spill.file.as_ref().expect("unread bytes have a file");
                let want = ((limit - q.bytes) as u64)
                    .min(READ_BACK)
                    .min(spill.unread()) as usize;
                let piece = p
                    .files
                    .read_temp(file, spill.read, want)
                    .await
                    .map_err(SendError::File)?;
                if piece.len() < want {
                    return Err(SendError::Truncated(super::send::Truncation::Read {
                        path: file.path.clone(),
                        got: piece.len(),
                        wanted: want,
                    }));
                }
                spill.read += piece.len() as u64;
                q.push_payload(Bytes::from(piece), p.chunked);
            } else {
                let piece = std::mem::take(&mut spill.pending);
                q.push_payload(Bytes::from(piece), p.chunked);
            }
            continue;
        }
        if ended && !spill.active() && !framing_closed {
            framing_closed = true;
            if p.chunked {
                q.push(Bytes::from((p.trailer)(w)));
                continue;
            }
        }
        if (framing_closed || failure.is_some()) && q.bytes == 0 && !spill.active() {
            break;
        }
        // Gathered enough for one write to the temp file.
        if let Some(sp) = &p.spill {
            if spill.pending.len() >= sp.limits.write_size
                || (ended && !spill.pending.is_empty() && spill.file.is_some())
            {
                let file = match &mut spill.file {
                    Some(f) => f,
                    None => spill.file.insert(
                        p.files
                            .create_temp(sp.dir, false)
                            .await
                            .map_err(SendError::File)?,
                    ),
                };
                let data: std::sync::Arc<[u8]> = std::mem::take(&mut spill.pending).into();
                p.files
                    .append_temp(file, data)
                    .await
                    .map_err(SendError::File)?;
                continue;
            }
        }
        let room_in_queue = q.bytes < limit && !spill.active();
        let room_in_spill = p.spill.as_ref().is_some_and(|sp| {
            let held = spill.file.as_ref().map_or(0, |f| f.len) + spill.pending.len() as u64;
            held < sp.limits.max && spill.pending.len() < sp.limits.write_size
        });
        let can_read =
            !ended && failure.is_none() && early.is_none() && (room_in_queue || room_in_spill);
        let must_write = q.bytes > 0 && !gathering && !pacing;
        if !can_read && !must_write && !pacing {
            // Nothing to read (ended or full) and nothing to write: the
            // spill is all that is left, handled above.
            continue;
        }
        if must_write && armed != due {
            deadline.as_mut().reset(due);
            armed = due;
        }
        tokio::select! {
            biased;
            r = std::future::poll_fn(|cx| source.poll_chunk(cx)), if can_read => {
                if q.bytes == 0 {
                    // The client's clock starts when there is something to send.
                    due = tokio::time::Instant::from_std(crate::metrics::timed::now()) + p.timeout;
                }
                match r {
                    Ok(Some(piece)) if room_in_queue => q.push_payload(piece, p.chunked),
                    Ok(Some(piece)) => spill.pending.extend_from_slice(&piece),
                    Ok(None) => ended = true,
                    Err(e) => failure = Some(e),
                }
            },
            r = stream.writable(), if must_write => r.map_err(SendError::Io)?,
            _ = deadline.as_mut(), if must_write => return Err(SendError::TimedOut),
            _ = paced.as_mut(), if pacing => {
                pacing = false;
                due = tokio::time::Instant::from_std(crate::metrics::timed::now()) + p.timeout;
            }
            // A client that closes while the pace holds the write back ends
            // the response (nginx's `ngx_http_test_reading`).
            _ = super::send::client_gone(stream), if pacing => {
                return Err(SendError::Io(std::io::ErrorKind::ConnectionAborted.into()));
            }
        }
    }
    match failure {
        Some(e) => Err(SendError::Source(e)),
        None => Ok(()),
    }
}
