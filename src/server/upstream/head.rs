//! Reading the response head (`ngx_http_upstream_process_header`): bytes
//! from the peer into a buffer of `*_buffer_size`, handed to the plug-in's
//! parser until it finds a head; each wait bounded by `*_read_timeout`,
//! the client watched meanwhile (its close is nginx's 499).
//!
//! Owns: [`read`] and the client watch ([`ClientGone`]). Must not: know a
//! protocol's syntax (the plug-in's `process_header` does).

use std::task::Poll;
use std::time::Instant;

use crate::config::model::NextUpstream;
use crate::io::deadline::Deadline;
use crate::metrics::timed;
use crate::upstream::conn::Conn;
use crate::upstream::head as uhead;
use crate::upstream::keepalive::{Key, Usage};

use super::Upstream;
use super::connect::{Got, GotHead};
use super::protocol::{Header, InvalidHeader, Protocol};
use super::tries::{Failure, upstream_failure};
use crate::server::core::request::Req;
use crate::server::engine::client::Client;

/// What the connection keeps into the response: its use, where it goes
/// back, when the try began.
pub struct Kept {
    /// Its use so far.
    pub usage: Usage,
    /// Its keep-alive key.
    pub key: Option<Key>,
    /// When the try began.
    pub t0: Instant,
}

/// Reads the response head within `*_buffer_size`, each wait bounded by
/// `*_read_timeout`; what the plug-in skips (interim 1xx answers) is
/// dropped. A client that closes meanwhile ends the wait (nginx's 499),
/// unless `*_ignore_client_abort`.
pub async fn read<P: Protocol>(
    r: &Req<'_>,
    u: &mut Upstream<'_, '_, '_, P>,
    conn: Conn,
    kept: Kept,
) -> Result<Got, Failure> {
    let Kept { usage, key, t0 } = kept;
    let limit = u.conf.buffer_size as usize;
    let mut buf: Vec<u8> = Vec::with_capacity(limit.max(1024));
    let mut received = 0u64;
    let watch_client = !u.conf.ignore_client_abort && !r.upstream.background && r.is_main();
    let mut client_gone = ClientGone::default();
    loop {
        if !buf.is_empty() {
            match u.protocol.process_header(&buf) {
                Ok(Header::Complete { head, len }) => {
                    let header_time = timed::since(t0).as_secs_f64();
                    return Ok(Got::Response(Box::new(GotHead {
                        conn,
                        head,
                        buf,
                        head_len: len,
                        headless: None,
                        usage,
                        keepalive_key: key,
                        header_time,
                        bytes_received: received,
                    })));
                }
                Ok(Header::Skip(len)) => {
                    buf.drain(..len);
                    continue;
                }
                Ok(Header::Headless { head, message }) => {
                    let header_time = timed::since(t0).as_secs_f64();
                    return Ok(Got::Response(Box::new(GotHead {
                        conn,
                        head,
                        buf,
                        head_len: 0,
                        headless: Some(message),
                        usage,
                        keepalive_key: None,
                        header_time,
                        bytes_received: received,
                    })));
                }
                Ok(Header::Partial) => {
                    if uhead::check_head_size(buf.len(), limit).is_err() {
                        return Err(upstream_failure(
                            NextUpstream::INVALID_HEADER,
                            "upstream sent too big header while reading response header from upstream",
                        ));
                    }
                }
                Err(InvalidHeader(message)) => {
                    return Err(upstream_failure(
                        NextUpstream::INVALID_HEADER,
                        format!("{message} while reading response header from upstream"),
                    ));
                }
            }
        }
        let room = limit.saturating_sub(buf.len()).max(1);
        buf.reserve(room);
        match conn.try_read_buf(&mut buf) {
            Ok(0) => {
                return Err(upstream_failure(
                    NextUpstream::ERROR,
                    "upstream prematurely closed connection while reading response header from upstream",
                ));
            }
            Ok(n) => {
                received += n as u64;
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => {
                return Err(upstream_failure(
                    NextUpstream::ERROR,
                    format!(
                        "recv() failed ({}) while reading response header from upstream",
                        crate::sys::error::errno_text(&e)
                    ),
                ));
            }
        }
        // Polled by hand rather than with `select!`: no waiter of its own
        // for either socket's readiness, no random branch order, and a
        // timer the worker reuses.
        let mut deadline = Deadline::after(u.conf.read_timeout);
        let woke = std::future::poll_fn(|cx| {
            if let Poll::Ready(r) = conn.poll_read_ready(cx) {
                return Poll::Ready(Woke::Ready(r));
            }
            if watch_client && client_gone.poll(u.client, cx).is_ready() {
                return Poll::Ready(Woke::ClientGone);
            }
            deadline.poll_expired(cx).map(|()| Woke::TimedOut)
        })
        .await;
        match woke {
            Woke::Ready(Ok(())) => {}
            Woke::Ready(Err(e)) => {
                return Err(upstream_failure(
                    NextUpstream::ERROR,
                    format!(
                        "recv() failed ({}) while reading response header from upstream",
                        crate::sys::error::errno_text(&e)
                    ),
                ));
            }
            Woke::TimedOut => {
                return Err(upstream_failure(
                    NextUpstream::TIMEOUT,
                    "upstream timed out (110: Connection timed out) while reading response header from upstream",
                ));
            }
            Woke::ClientGone => return Ok(Got::Aborted),
        }
    }
}

/// What ended a wait for an upstream's response head.
enum Woke {
    /// The upstream's socket is readable (or failed).
    Ready(std::io::Result<()>),
    /// The client closed its connection.
    ClientGone,
    /// `proxy_read_timeout` passed.
    TimedOut,
}

/// Watches the client's side while the proxy waits for the upstream: ready
/// when it closed. Bytes the client sends meanwhile (a pipelined request)
/// are left alone, and the watch ends: there is nothing more to see until
/// they are read. Polls the socket's readiness without a waiter of its own
/// (nothing else reads the client meanwhile).
#[derive(Default)]
pub struct ClientGone {
    /// Pipelined bytes were seen: pending for good.
    data_seen: bool,
}

impl ClientGone {
    fn poll(&mut self, client: &Client<'_>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        while !self.data_seen {
            match client.stream.poll_read_ready(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(_)) => return Poll::Ready(()),
                Poll::Ready(Ok(())) => {}
            }
            match client.stream.peek_idle() {
                crate::sys::socket::Idle::Closed => return Poll::Ready(()),
                crate::sys::socket::Idle::Data => self.data_seen = true,
                // Readiness without data: the peek dropped the mark, so the
                // next poll waits for a new edge.
                crate::sys::socket::Idle::Quiet => {}
            }
        }
        Poll::Pending
    }
}
