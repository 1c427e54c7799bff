//! Sending a streamed body (an upstream's response as it arrives) to the
//! client, reading ahead of a slow client up to a bound.
//!
//! The source is read while there is room: `read_ahead` bytes
//! (`proxy_buffers` with `proxy_buffering on`, one `proxy_buffer_size`
//! buffer with it off), so a slow client slows the upstream read once the
//! room is full — back-pressure, never unbounded memory — unless the body
//! may spill: then what is not busy for the client
//! (`proxy_busy_buffers_size`) goes to a temp file and the source is read
//! on ([`buffers`] keeps the memory, the file and that split). Pieces go
//! out in order, framed as `Transfer-Encoding: chunked` when the client
//! needs it (framed as they are read: the temp file holds them framed). A
//! source that fails mid-body stops the response: what was read is sent,
//! then the connection is closed without a last chunk, so the client never
//! takes a cut body for a complete one.

use std::pin::pin;

use bytes::Bytes;

use crate::body::Source;
use crate::io::client_stream::ClientStream;
use crate::io::temp::TempPath;

use crate::server::core::send::{SendError, SendParams, Written};

pub mod buffers;

use buffers::Buffers;

/// The read-ahead when the caller sets none.
pub const DEFAULT_READ_AHEAD: usize = 64 * 1024;

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
    /// How much is written to it at a time.
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
    let mut b = Buffers::new(limit, p.busy);
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
    b.q.push(Bytes::from(head));
    // A failure met before the head went out: it takes effect once the
    // head is written, as when the head was sent before the first poll
    // (output that is not gathered, see `SendParams::postpone`).
    let mut early = None;
    if head_left > 0 {
        // What the source has now joins the head in the first write (a
        // small response is one `writev()`, as nginx's write filter sends
        // the postponed header with the first buffer).
        while b.room() {
            let now = std::future::poll_fn(|cx| {
                std::task::Poll::Ready(match source.poll_chunk(cx) {
                    std::task::Poll::Ready(r) => Some(r),
                    std::task::Poll::Pending => None,
                })
            })
            .await;
            match now {
                Some(Ok(Some(piece))) => b.push_read(piece, p.chunked),
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
            && b.q.bytes() < p.postpone
            && b.room()
            && !b.waiting();
        // Write what the socket (and the pace) takes without waiting.
        while !b.q.is_empty() && !gathering && !pacing {
            let max = match p.pace.map(|pace| pace.allowance(std::time::Instant::now())) {
                None => usize::MAX,
                Some(Ok(n)) => usize::try_from(n).unwrap_or(usize::MAX),
                Some(Err(wait)) => {
                    paced.as_mut().reset(tokio::time::Instant::now() + wait);
                    pacing = true;
                    break;
                }
            };
            match b.q.try_write(stream, max).map_err(SendError::Io)? {
                0 => break,
                n => {
                    b.q.consume(n);
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
        // Feed the queue from the temp file, in order, as far as the busy
        // size lets it (all of memory once nothing more is read).
        let want = b.read_back_wanted(head_left, ended || failure.is_some());
        if want > 0 {
            let file = b.file.as_ref().expect("unread bytes have a file");
            let piece = p
                .files
                .read_temp(file, b.read_at(), want)
                .await
                .map_err(SendError::File)?;
            if piece.len() < want {
                return Err(SendError::Truncated(
                    crate::server::core::send::Truncation::Read {
                        path: file.path.clone(),
                        got: piece.len(),
                        wanted: want,
                    },
                ));
            }
            b.read_back(piece);
            continue;
        }
        if ended && !b.waiting() && !framing_closed {
            framing_closed = true;
            if p.chunked {
                b.q.push(Bytes::from((p.trailer)(w)));
                continue;
            }
        }
        if (framing_closed || failure.is_some()) && b.q.is_empty() && !b.waiting() {
            break;
        }
        // Memory is full and the socket takes nothing more: what is not
        // busy goes to the temp file, so that the source is read on.
        if let (Some(sp), false) = (&p.spill, ended || failure.is_some()) {
            let held = b.file.as_ref().map_or(0, |f| f.len);
            let room = sp.limits.max.saturating_sub(held);
            let max =
                usize::try_from(room).map_or(sp.limits.write_size, |r| r.min(sp.limits.write_size));
            let data = b.spill_out(head_left, max);
            if !data.is_empty() {
                let file = match &mut b.file {
                    Some(f) => f,
                    None => b.file.insert(
                        p.files
                            .create_temp(sp.dir, false)
                            .await
                            .map_err(SendError::File)?,
                    ),
                };
                let data: std::sync::Arc<[u8]> = data.into();
                p.files
                    .append_temp(file, data)
                    .await
                    .map_err(SendError::File)?;
                continue;
            }
        }
        let can_read = !ended && failure.is_none() && early.is_none() && b.room();
        let must_write = !b.q.is_empty() && !gathering && !pacing;
        if !can_read && !must_write && !pacing {
            // Nothing to read (ended or full) and nothing to write: the
            // temp file is all that is left, handled above.
            continue;
        }
        if must_write && armed != due {
            deadline.as_mut().reset(due);
            armed = due;
        }
        tokio::select! {
            biased;
            r = std::future::poll_fn(|cx| source.poll_chunk(cx)), if can_read => {
                if b.q.is_empty() {
                    // The client's clock starts when there is something to send.
                    due = tokio::time::Instant::from_std(crate::metrics::timed::now()) + p.timeout;
                }
                match r {
                    Ok(Some(piece)) => b.push_read(piece, p.chunked),
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
            _ = crate::server::core::send::client_gone(stream), if pacing => {
                return Err(SendError::Io(std::io::ErrorKind::ConnectionAborted.into()));
            }
        }
    }
    match failure {
        Some(e) => Err(SendError::Source(e)),
        None => Ok(()),
    }
}
