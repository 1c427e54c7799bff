//! An upstream's response body as a [`Source`]: read from the upstream
//! connection as the sender polls it, decoded by its protocol's framing
//! ([`InputFilter`]: length, chunked, until close), each read bounded by
//! `*_read_timeout` and paced by `*_limit_rate`.
//!
//! When the body ends the exchange is settled: the peer is released to its
//! balancer, the `$upstream_*` figures are final, and a connection whose
//! framing left it clean goes back to the worker's keep-alive cache for
//! the next request. A body that ends early is an error the
//! sender turns into a closed connection, never a response that looks
//! complete. Dropping the source (the client went away) releases the peer
//! and closes the upstream connection.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::time::Sleep;

use crate::body::{Source, SourceError};
use crate::log::{ErrorLog, Level};
use crate::metrics::timed;
use crate::upstream::conn::Conn;
use crate::upstream::keepalive::{Key, Usage};
use crate::upstream::{Outcome, PeerId, Tried};

use super::UpstreamConf;
use super::groups::Group;
use super::protocol::InputFilter;

/// The most one read asks the upstream for.
const READ_SIZE: usize = 16 * 1024;

/// Figures of one upstream exchange that are known only at the end of its
/// body, shared with the request's log line.
#[derive(Debug, Default)]
pub struct Live {
    /// Body bytes decoded (`$upstream_response_length`).
    pub response_length: Cell<u64>,
    /// Bytes read from the upstream, head included
    /// (`$upstream_bytes_received`).
    pub bytes_received: Cell<u64>,
    /// Seconds with the upstream, at the end (`$upstream_response_time`).
    pub response_time: Cell<Option<f64>>,
}

/// What settles the exchange when the body ends.
pub struct Settle {
    /// The group the peer belongs to.
    pub group: Arc<Group>,
    /// The peer.
    pub peer: PeerId,
    /// The request's tried peers (the balancer updates it on release).
    pub tried: Tried,
    /// Where the connection goes back, if the group keeps connections.
    pub keepalive: Option<Key>,
    /// The connection's history.
    pub usage: Usage,
    /// When the exchange with this peer began.
    pub started: Instant,
    /// Shared with the log line.
    pub live: Rc<Live>,
    /// The process's state, for the keep-alive cache.
    pub shared: Arc<crate::server::core::shared::Shared>,
}

/// The error log and the request's context, for the lines the body may
/// cause (`upstream sent more data than specified …`).
pub struct LogCtx {
    /// The error log.
    pub log: ErrorLog,
    /// The connection's number.
    pub conn_no: u64,
    /// `, client: …, upstream: "…"` as nginx appends it.
    pub context: crate::log::context::LogText,
}

/// An upstream response body being read.
pub struct UpstreamBody<F: InputFilter> {
    conn: Option<Conn>,
    /// Bytes read and not yet decoded (after the head, then each read).
    buf: Vec<u8>,
    pos: usize,
    decoder: F,
    read_timeout: Duration,
    /// `proxy_read_timeout`'s (or the pace's) timer, made at the first
    /// wait: a body that is there at once needs none.
    timer: Option<Pin<Box<Sleep>>>,
    /// Bytes came since the timer was last set: the next wait restarts it.
    progressed: bool,
    /// `proxy_limit_rate` in bytes per second (0: none).
    limit_rate: u64,
    /// When the pacing of `limit_rate` began, and bytes read since.
    paced: (Instant, u64),
    /// The body is complete: drain nothing more.
    done: bool,
    settle: Option<Settle>,
    log: LogCtx,
    /// The length announced, for the sender's framing.
    length: Option<u64>,
    /// Unbuffered proxying: each piece goes out as it comes.
    flush: bool,
}

impl<F: InputFilter> UpstreamBody<F> {
    /// The body after a head: `buf` holds what was read, the body's first
    /// bytes from `start` on (the head before it).
    pub fn new(
        conn: Conn,
        (buf, start): (Vec<u8>, usize),
        decoder: F,
        length: Option<u64>,
        conf: &UpstreamConf<'_>,
        settle: Settle,
        log: LogCtx,
    ) -> UpstreamBody<F> {
        let read_timeout = conf.read_timeout;
        let limit_rate = conf.limit_rate;
        UpstreamBody {
            conn: Some(conn),
            buf,
            pos: start,
            decoder,
            read_timeout,
            timer: None,
            progressed: false,
            limit_rate,
            // Only a paced body needs its own start.
            paced: (
                if limit_rate > 0 {
                    Instant::now()
                } else {
                    settle.started
                },
                0,
            ),
            done: false,
            settle: Some(settle),
            log,
            length,
            flush: false,
        }
    }

    /// The whole body, when all of it is already in the buffer and framed
    /// by a length (a small response that came with its head): taken at
    /// once and the exchange settled, so that the response goes out from
    /// memory without the streaming machinery. `None`, with nothing
    /// changed, otherwise.
    pub fn take_whole(&mut self) -> Option<Vec<u8>> {
        let rest = self.buf.len() - self.pos;
        if self.done || rest == 0 || self.decoder.length_left() != Some(rest as u64) {
            return None;
        }
        let step = self.decoder.step(&self.buf[self.pos..]).ok()?;
        // A length the buffer holds exactly is all payload and ends the
        // body.
        debug_assert!(step.consumed == rest && step.data == (0..rest));
        debug_assert!(self.decoder.is_complete());
        let mut body = std::mem::take(&mut self.buf);
        body.drain(..self.pos);
        self.pos = 0;
        self.finish(true);
        Some(body)
    }

    /// Marks the body as unbuffered (`proxy_buffering off`): its pieces
    /// reach the client as they come, even through a body filter.
    pub fn set_flush(&mut self, flush: bool) {
        self.flush = flush;
    }

    /// The body ended: release the peer, cache the connection if it is
    /// clean, record the figures.
    fn finish(&mut self, complete: bool) {
        self.done = true;
        if let Some(w) = self.decoder.warning() {
            self.log.log.log(
                Level::Warn,
                Some(self.log.conn_no),
                format_args!("{w} while reading upstream{}", self.log.context),
            );
        }
        let Some(mut s) = self.settle.take() else {
            return;
        };
        let now = timed::now();
        s.live.response_length.set(self.decoder.received());
        s.live
            .response_time
            .set(Some(now.duration_since(s.started).as_secs_f64()));
        let conn = self.conn.take();
        if complete && self.decoder.keepalive() && self.pos >= self.buf.len() {
            if let (Some(key), Some(limits), Some(conn)) =
                (s.keepalive.take(), s.group.keepalive, conn)
            {
                crate::upstream::idle::put(&s.shared.keepalive, key, conn, s.usage, limits, now);
            }
        }
        s.group.peers.done(&mut s.tried, s.peer, Outcome::Ok, now);
        s.group
            .record(s.peer, complete, now.duration_since(s.started));
    }

    /// The timer, set to fire at `at` (made the first time).
    fn timer_at(&mut self, at: tokio::time::Instant) -> Pin<&mut Sleep> {
        if let Some(t) = &mut self.timer {
            t.as_mut().reset(at);
        }
        self.timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)))
            .as_mut()
    }

    fn fail(&mut self, e: SourceError) -> Poll<Result<Option<Bytes>, SourceError>> {
        self.finish(false);
        Poll::Ready(Err(e))
    }
}

impl<F: InputFilter> Source for UpstreamBody<F> {
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, SourceError>> {
        if self.done {
            return Poll::Ready(Ok(None));
        }
        loop {
            // What is buffered first.
            while self.pos < self.buf.len() {
                let step = match self.decoder.step(&self.buf[self.pos..]) {
                    Ok(s) => s,
                    Err(e) => {
                        let msg = format!("{e} while reading upstream{}", self.log.context);
                        return self.fail(SourceError::new(msg));
                    }
                };
                let data = self.pos + step.data.start..self.pos + step.data.end;
                self.pos += step.consumed;
                if !data.is_empty() {
                    let piece = Bytes::copy_from_slice(&self.buf[data]);
                    if self.decoder.is_complete() && self.pos >= self.buf.len() {
                        // The last piece: settle now, the sender may not
                        // poll again before it writes this one.
                        self.finish(true);
                    }
                    return Poll::Ready(Ok(Some(piece)));
                }
            }
            if self.decoder.is_complete() {
                self.finish(true);
                return Poll::Ready(Ok(None));
            }
            // `proxy_limit_rate`: wait until the bytes read fit the rate.
            if self.limit_rate > 0 {
                let (since, read) = self.paced;
                let due = since + Duration::from_secs_f64(read as f64 / self.limit_rate as f64);
                if due > Instant::now() {
                    match self.timer_at(tokio::time::Instant::from_std(due)).poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        // The read timeout starts again at the next wait.
                        Poll::Ready(()) => self.progressed = true,
                    }
                }
            }
            let Some(conn) = &self.conn else {
                return self.fail(SourceError::new("upstream connection is gone"));
            };
            self.buf.clear();
            self.pos = 0;
            self.buf.reserve(READ_SIZE);
            match conn.try_read_buf(&mut self.buf) {
                Ok(0) => {
                    return match self.decoder.eof() {
                        Ok(()) => {
                            self.finish(true);
                            Poll::Ready(Ok(None))
                        }
                        Err(e) => {
                            let msg = format!("{e} while reading upstream{}", self.log.context);
                            self.fail(SourceError::new(msg))
                        }
                    };
                }
                Ok(n) => {
                    if let Some(s) = &self.settle {
                        s.live
                            .bytes_received
                            .set(s.live.bytes_received.get() + n as u64);
                    }
                    self.paced.1 += n as u64;
                    self.progressed = true;
                    continue;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => {
                    let msg = format!(
                        "recv() failed ({}) while reading upstream{}",
                        crate::sys::error::errno_text(&e),
                        self.log.context
                    );
                    return self.fail(SourceError::new(msg));
                }
            }
            match conn.poll_read_ready(cx) {
                Poll::Ready(Ok(())) => continue,
                Poll::Ready(Err(e)) => {
                    let msg = format!(
                        "recv() failed ({}) while reading upstream{}",
                        crate::sys::error::errno_text(&e),
                        self.log.context
                    );
                    return self.fail(SourceError::new(msg));
                }
                Poll::Pending => {}
            }
            // `proxy_read_timeout` runs from the last bytes read (nginx
            // arms it when it waits for the upstream).
            let timer = match self.timer.take() {
                Some(t) if !self.progressed => self.timer.insert(t).as_mut(),
                _ => {
                    self.progressed = false;
                    self.timer_at(tokio::time::Instant::from_std(timed::now()) + self.read_timeout)
                }
            };
            return match timer.poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(()) => {
                    let msg = format!(
                        "upstream timed out (110: Connection timed out) while reading upstream{}",
                        self.log.context
                    );
                    self.fail(SourceError::timeout(msg))
                }
            };
        }
    }

    fn length(&self) -> Option<u64> {
        self.length
    }

    fn received(&self) -> u64 {
        self.settle
            .as_ref()
            .map_or(0, |s| s.live.bytes_received.get())
    }

    fn flushes(&self) -> bool {
        self.flush
    }
}

impl<F: InputFilter> Drop for UpstreamBody<F> {
    /// The client went away before the end: release the peer, close the
    /// connection.
    fn drop(&mut self) {
        if self.settle.is_some() {
            self.conn = None;
            self.finish(false);
        }
    }
}
