//! Reading from a client connection: the request head within nginx's
//! limits and timeouts, the request body (read and dropped: static locations
//! take none), and the lingering close after a final response.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use tokio::time::Sleep;

use crate::http::chunked::ChunkedDecoder;
use crate::http::request::{self, RequestHead};
use crate::http::status::Status;
use crate::io::client_stream::ClientStream;

/// How long a request body may take between two reads (nginx's
/// `client_body_timeout` default).
pub const CLIENT_BODY_TIMEOUT: Duration = Duration::from_secs(60);
/// Lingering close: how long to keep reading after the last response
/// (nginx's `lingering_time`) and how long to wait for each read
/// (`lingering_timeout`), so that a client still sending does not get a
/// reset that destroys the response it has not read yet.
pub const LINGERING_TIME: Duration = Duration::from_secs(30);
/// See [`LINGERING_TIME`].
pub const LINGERING_TIMEOUT: Duration = Duration::from_secs(5);
/// What a chunked body may leave unparsed in the buffer, times four.
const DISCARD_BUFFER: usize = 16 * 1024;

/// How reading a head ended.
pub enum HeadRead {
    /// A complete head, its length in the buffer, and when its first byte
    /// was read (nginx creates the request, and starts `$request_time`, on
    /// the read that brings its first byte; a pipelined request begins when
    /// the one before it has ended).
    Head(Box<RequestHead>, usize, std::time::Instant),
    /// Nothing of a request is here and the socket has no byte: the
    /// connection waits for one parked ([`crate::server::engine::h1::park`]), without a task.
    Idle,
    /// The client closed, or the socket failed.
    Gone,
    /// A head began but did not complete within `client_header_timeout`.
    TimedOut,
    /// The head is invalid or too large: answer with this status and close.
    Bad(Status, String),
}

/// Reads until a complete head is in `buf`. Reads are tried first without
/// waiting; `buf` holds a buffer of the worker's pool only while it holds
/// bytes. With no byte of a head at all, returns [`HeadRead::Idle`] (the
/// caller parks the connection); with part of one, waits in the task for
/// the rest, bounded by `client_header_timeout` from then (a timer made
/// only for that). `stats` counts the connection as reading from the
/// head's first byte on.
pub async fn read_head(
    stream: &ClientStream,
    buf: &mut crate::server::engine::h1::conn_buf::ConnBuf,
    srv: &crate::config::inherit::SrvConf,
    stats: &mut crate::metrics::connections::Tracked,
) -> HeadRead {
    let (large_count, large_size) = srv.large_client_header_buffers;
    let max_line = large_size.max(srv.client_header_buffer_size) as usize;
    let max_total = (u64::from(large_count).saturating_mul(large_size))
        .max(srv.client_header_buffer_size) as usize;
    // `client_header_timeout` for the rest of a begun head, made when the
    // wait for it first begins.
    let mut timer: Option<Pin<Box<Sleep>>> = None;
    // When the request's first byte was read: now for bytes already here.
    let mut began = (!buf.is_empty()).then(crate::metrics::timed::now);
    loop {
        let started = !buf.is_empty();
        if started {
            // A request begins with its first byte (nginx's "reading").
            stats.reading();
            let rules = request::HeaderRules {
                ignore_invalid: srv.ignore_invalid_headers,
                underscores: srv.underscores_in_headers,
            };
            match request::parse_head_with(buf, rules) {
                Ok(Some((h, n))) => {
                    if n > srv.client_header_buffer_size as usize {
                        if let Some(e) = oversized(&buf[..n], max_line, max_total) {
                            return HeadRead::Bad(e.status(), e.to_string());
                        }
                    }
                    let began = began.unwrap_or_else(crate::metrics::timed::now);
                    return HeadRead::Head(Box::new(h), n, began);
                }
                Ok(None) => {}
                Err(e) => return HeadRead::Bad(e.status(), e.to_string()),
            }
            if let Some(e) = oversized(buf, max_line, max_total) {
                return HeadRead::Bad(e.status(), e.to_string());
            }
        }
        // A buffer only for bytes: tried first (no system call when the
        // reactor has seen nothing), given back if nothing came, so that a
        // connection waiting for a request holds none.
        buf.lend();
        match stream.recv(buf) {
            Ok(0) => return HeadRead::Gone,
            Ok(_) => {
                began.get_or_insert_with(crate::metrics::timed::now);
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if !started {
                    buf.release();
                    return HeadRead::Idle;
                }
            }
            Err(_) => return HeadRead::Gone,
        }
        let timer = timer.get_or_insert_with(|| {
            Box::pin(tokio::time::sleep_until(
                tokio::time::Instant::from_std(crate::metrics::timed::now())
                    + srv.client_header_timeout,
            ))
        });
        // Polled by hand rather than with `select!`: the socket's readiness
        // takes no waiter of its own (`poll_read_ready`).
        let woke = std::future::poll_fn(|cx| {
            if let Poll::Ready(r) = stream.poll_read_ready(cx) {
                return Poll::Ready(if r.is_ok() {
                    Woke::Readable
                } else {
                    Woke::Gone
                });
            }
            if timer.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Woke::TimedOut);
            }
            Poll::Pending
        })
        .await;
        match woke {
            Woke::Readable => {}
            Woke::TimedOut => return HeadRead::TimedOut,
            Woke::Gone => return HeadRead::Gone,
        }
    }
}

/// What ended a wait for bytes of a head.
enum Woke {
    /// The socket is readable.
    Readable,
    /// `client_header_timeout` passed with a head begun.
    TimedOut,
    /// The socket failed.
    Gone,
}

/// Whether a (possibly partial) head breaks `large_client_header_buffers`:
/// a line longer than one buffer, or more than all of them together. A
/// request line too long is 414, anything else 400 ("Request Header Or
/// Cookie Too Large"), as nginx decides.
fn oversized(head: &[u8], max_line: usize, max_total: usize) -> Option<request::HeadError> {
    for (i, line) in head.split(|&b| b == b'\n').enumerate() {
        if line.len() > max_line {
            let upto = if i == 0 {
                max_line.min(head.len())
            } else {
                head.len()
            };
            return Some(request::oversized_head_error(&head[..upto]));
        }
    }
    (head.len() > max_total).then(|| request::oversized_head_error(head))
}

/// Reads what is available into `buf`, waiting for readability.
async fn read_some(stream: &ClientStream, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    buf.reserve(4096);
    loop {
        stream.readable().await?;
        match stream.try_read_buf(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

/// Reads into `scratch`, waiting for readability.
async fn read_into(stream: &ClientStream, scratch: &mut [u8]) -> std::io::Result<usize> {
    loop {
        stream.readable().await?;
        match stream.try_read(scratch) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

/// A request body being read and dropped.
pub enum BodyDiscard {
    /// No body, or all of it dropped.
    Done,
    /// `Content-Length`: this many bytes are left.
    Length(u64),
    /// Chunked framing.
    Chunked(ChunkedDecoder),
}

impl BodyDiscard {
    /// What of `head`'s body is left to read; chunked bodies over `max` fail.
    pub fn new(head: &RequestHead, max: u64) -> BodyDiscard {
        match head.content_length {
            Some(0) => BodyDiscard::Done,
            Some(n) => BodyDiscard::Length(n),
            None if head.chunked => {
                BodyDiscard::Chunked(ChunkedDecoder::new((max != 0).then_some(max)))
            }
            None => BodyDiscard::Done,
        }
    }

    /// Whether all of the body has been read.
    pub fn is_done(&self) -> bool {
        matches!(self, BodyDiscard::Done)
    }

    /// Drops what of the body `buf` holds; `Err` with the status for a
    /// body that cannot be valid.
    pub fn feed(&mut self, buf: &mut Vec<u8>) -> Result<(), Status> {
        match self {
            BodyDiscard::Done => {}
            BodyDiscard::Length(left) => {
                let take = (*left).min(buf.len() as u64) as usize;
                buf.drain(..take);
                *left -= take as u64;
                if *left == 0 {
                    *self = BodyDiscard::Done;
                }
            }
            BodyDiscard::Chunked(dec) => {
                let used = dec.feed(buf, |_| {}).map_err(|e| e.status())?;
                buf.drain(..used);
                if dec.is_done() {
                    *self = BodyDiscard::Done;
                } else if buf.len() > DISCARD_BUFFER * 4 {
                    // The decoder takes what it can; this much left over
                    // means a chunk-size line that never ends.
                    return Err(Status::BAD_REQUEST);
                }
            }
        }
        Ok(())
    }

    /// Reads and drops the rest. `Err(Some(status))` for an invalid body,
    /// `Err(None)` when the client went away or stalled.
    pub async fn finish(
        &mut self,
        stream: &ClientStream,
        buf: &mut Vec<u8>,
    ) -> Result<(), Option<Status>> {
        loop {
            self.feed(buf).map_err(Some)?;
            if self.is_done() {
                return Ok(());
            }
            match tokio::time::timeout(CLIENT_BODY_TIMEOUT, read_some(stream, buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return Err(None),
                Ok(Ok(_)) => {}
            }
        }
    }
}

/// nginx's lingering close: stop writing, then read and drop what the
/// client still sends for a bounded time, so that our last response is not
/// destroyed by a reset.
pub async fn linger(stream: ClientStream) {
    linger_for(stream, LINGERING_TIME, LINGERING_TIMEOUT).await
}

/// [`linger`] with a location's `lingering_time` and `lingering_timeout`.
pub async fn linger_for(stream: ClientStream, time: Duration, timeout: Duration) {
    let std = match stream.into_std() {
        Ok(s) => s,
        Err(_) => return,
    };
    let _ = std.shutdown_write();
    let Ok(stream) = ClientStream::from_std(std) else {
        return;
    };
    let until = tokio::time::Instant::now() + time;
    let mut scratch = [0u8; 4096];
    loop {
        match tokio::time::timeout(timeout, read_into(&stream, &mut scratch)).await {
            Ok(Ok(n)) if n > 0 && tokio::time::Instant::now() < until => continue,
            _ => return,
        }
    }
}
