//! One client connection: read a request head within the header limits and
//! timeouts, route and answer it, discard any request body, log it, and keep
//! the connection for the next request while keep-alive allows.
//!
//! Limits and timeouts are nginx's: `client_header_timeout` until a head is
//! complete, `keepalive_timeout` between requests, `client_header_buffer_size`
//! and `large_client_header_buffers` for the head's size, `send_timeout`
//! between writes, `keepalive_requests` per connection.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use std::pin::Pin;

use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Sleep;

use crate::config::inherit::LocConf;
use crate::http::chunked::ChunkedDecoder;
use crate::http::date::DateCache;
use crate::http::request::{self, RequestHead, Version};
use crate::http::response::{CONTINUE, ResponseHead};
use crate::http::status::Status;
use crate::io::file::FileLayer;
use crate::log::Level;

use super::access_log;
use super::handler::{self, Handled};
use super::reply::{Body, Reply};
use super::request::{Req, Sent};
use super::send::{self, SendParams, SocketForPools};
use super::site::Site;

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

thread_local! {
    /// The `Date` header of the current second, per worker thread.
    static DATE: RefCell<DateCache> = RefCell::new(DateCache::new());
}

/// Where a connection came from and where it arrived.
#[derive(Clone, Copy, Debug)]
pub struct ConnInfo {
    /// The client.
    pub peer: SocketAddr,
    /// Our local address.
    pub local: SocketAddr,
    /// The address of the listening socket that accepted it.
    pub socket_addr: SocketAddr,
    /// Its serial number.
    pub conn_no: u64,
}

/// How reading a head ended.
enum HeadRead {
    /// A complete head, and its length in the buffer.
    Head(Box<RequestHead>, usize),
    /// The client closed, or nothing came in time between requests.
    Gone,
    /// A head began but did not complete within `client_header_timeout`.
    TimedOut,
    /// The head is invalid or too large: answer with this status and close.
    Bad(Status, String),
}

/// Serves a connection until it closes.
pub async fn serve(
    stream: TcpStream,
    info: ConnInfo,
    site: Arc<Site>,
    mut quit: watch::Receiver<bool>,
) {
    let Some(default_server) = site.server(info.socket_addr, info.local, None) else {
        return;
    };
    let srv = &default_server.srv;
    let mut buf: Vec<u8> = Vec::with_capacity(srv.client_header_buffer_size as usize);
    let mut requests: u64 = 0;
    let mut idle_timeout = srv.client_header_timeout;
    let mut pool_sock = SocketForPools::default();
    let mut timer = Box::pin(tokio::time::sleep(Duration::ZERO));
    // TCP_NODELAY as the worker set it at accept (the http level's setting).
    let mut nodelay = site.http().is_some_and(|h| h.conf.tcp_nodelay);
    loop {
        let head = read_head(
            &stream,
            &mut buf,
            srv,
            idle_timeout,
            &mut quit,
            requests == 0,
            &mut timer,
        )
        .await;
        let (head, head_len) = match head {
            HeadRead::Head(h, n) => (h, n),
            HeadRead::Gone => return,
            HeadRead::TimedOut => {
                let sent = Sent {
                    status: 408,
                    ..Sent::default()
                };
                access_log::rejected(&site, &default_server.conf, info.peer, &buf, &sent);
                site.error_log.log(
                    Level::Info,
                    Some(info.conn_no),
                    format_args!(
                        "client timed out while reading client request headers, client: {}",
                        info.peer.ip()
                    ),
                );
                return;
            }
            HeadRead::Bad(status, msg) => {
                site.error_log.log(
                    Level::Info,
                    Some(info.conn_no),
                    format_args!("{msg}, client: {}", info.peer.ip()),
                );
                let mut reply = Reply::special(status);
                reply.fill_special_page(crate::signature(default_server.conf.server_tokens));
                let head = response_head(&reply, &default_server.conf, false, &reply_len(&reply));
                let body: &[u8] = match &reply.body {
                    Body::Bytes(b) => b,
                    _ => &[],
                };
                let ok = send::write_all(
                    &stream,
                    &[&head[..], body].concat(),
                    default_server.conf.send_timeout,
                )
                .await;
                let sent = match ok {
                    Ok(()) => Sent {
                        status: status.0,
                        body_bytes: body.len() as u64,
                        bytes: (head.len() + body.len()) as u64,
                    },
                    Err(_) => Sent {
                        status: status.0,
                        ..Sent::default()
                    },
                };
                access_log::rejected(&site, &default_server.conf, info.peer, &buf, &sent);
                linger(stream).await;
                return;
            }
        };
        requests += 1;
        let start = Instant::now();
        let server = site
            .server(info.socket_addr, info.local, head.host.as_deref())
            .unwrap_or(default_server);
        let mut r = Req {
            head: &head,
            uri: head.uri.path_lossy().into_owned(),
            peer: info.peer,
            local: info.local,
            server,
            conn_no: info.conn_no,
            conn_requests: requests,
            start,
            start_wall: SystemTime::now(),
            head_len,
        };
        let handled = handler::handle(&site, &mut r).await;
        let Handled { reply, conf, pool } = handled;
        buf.drain(..head_len);

        if reply.status.0 == 444 {
            access_log::request(
                &site,
                &r,
                conf,
                &Sent {
                    status: 444,
                    ..Sent::default()
                },
            );
            return;
        }
        // A client that asked to be told before sending its body hears
        // `100 Continue` when the request found content, as from nginx.
        if head.expect_continue
            && reply.content
            && send::write_all(&stream, CONTINUE, conf.send_timeout)
                .await
                .is_err()
        {
            return;
        }
        // Drop the part of the body already read, as nginx does before it
        // answers; a body that is already invalid ends keep-alive.
        let mut discard = BodyDiscard::new(&head, conf.client_max_body_size);
        let body_ok = discard.feed(&mut buf).is_ok();
        let http09 = head.version == Version::Http09;
        let keep_alive = head.keep_alive
            && !http09
            && !reply.close
            && !conf.keepalive_timeout.is_zero()
            && requests < conf.keepalive_requests
            && body_ok
            && !*quit.borrow();

        let head_only = head.method == crate::http::request::Method::Head;
        let head_bytes = if http09 {
            Vec::new()
        } else {
            response_head(&reply, conf, keep_alive, &reply_len(&reply))
        };
        let params = SendParams {
            timeout: conf.send_timeout,
            sendfile: conf.sendfile,
            max_chunk: conf.sendfile_max_chunk,
            nopush: conf.tcp_nopush,
            files: FileLayer {
                pool: pool.as_ref(),
                fast: conf.aio_fast_path,
            },
            start,
        };
        let result = send::send(
            &stream,
            &mut pool_sock,
            head_bytes,
            &reply.body,
            head_only && !http09,
            &params,
        )
        .await;
        let sent = match &result {
            Ok(w) => Sent {
                status: reply.status.0,
                body_bytes: w.body,
                bytes: w.total,
            },
            Err(_) => Sent {
                status: reply.status.0,
                ..Sent::default()
            },
        };
        access_log::request(&site, &r, conf, &sent);
        crate::metrics::worker::with(|m| {
            m.requests
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        });
        match result {
            Ok(_) => {}
            Err(send::SendError::TimedOut) => {
                site.error_log.log(
                    Level::Info,
                    Some(info.conn_no),
                    format_args!(
                        "client timed out while sending response to client{}",
                        r.log_context()
                    ),
                );
                return;
            }
            Err(send::SendError::File(crate::io::file::FileError::Overflow(o))) => {
                site.error_log
                    .log(Level::Error, Some(info.conn_no), format_args!("{o}"));
                return;
            }
            Err(send::SendError::File(e)) => {
                site.error_log.log(
                    Level::Crit,
                    Some(info.conn_no),
                    format_args!("{e} while sending response to client{}", r.log_context()),
                );
                return;
            }
            Err(send::SendError::Truncated) => {
                site.error_log.log(
                    Level::Alert,
                    Some(info.conn_no),
                    format_args!(
                        "file was truncated while sending response to client{}",
                        r.log_context()
                    ),
                );
                return;
            }
            Err(send::SendError::Io(_)) => return,
        }
        if !keep_alive {
            if reply.close || head.has_body() {
                linger(stream).await;
            }
            return;
        }
        // The body is read and thrown away after the answer (static
        // locations take none), so that the next request starts where it ends.
        if !discard.is_done() {
            if let Err(status) = discard.finish(&stream, &mut buf).await {
                if let Some(status) = status {
                    site.error_log.log(
                        Level::Info,
                        Some(info.conn_no),
                        format_args!(
                            "client sent an invalid or too large body ({}){}",
                            status.0,
                            r.log_context()
                        ),
                    );
                }
                linger(stream).await;
                return;
            }
        }
        idle_timeout = conf.keepalive_timeout;
        if conf.tcp_nodelay != nodelay {
            // Only when a location asks otherwise than the http level did
            // at accept: one setsockopt per change, not per request.
            nodelay = conf.tcp_nodelay;
            let _ = stream.set_nodelay(nodelay);
        }
    }
}

/// The `Content-Length` to announce.
fn reply_len(reply: &Reply) -> Option<u64> {
    match reply.body {
        Body::Empty if reply.status.0 == 304 => None,
        _ => Some(reply.body.len()),
    }
}

/// Serializes the response head.
fn response_head(reply: &Reply, conf: &LocConf, keep_alive: bool, len: &Option<u64>) -> Vec<u8> {
    let server = crate::signature(conf.server_tokens);
    DATE.with(|d| {
        let mut d = d.borrow_mut();
        let date = d.get(SystemTime::now());
        let extra: Vec<(&str, &str)> = reply
            .extra
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let mut h = ResponseHead::new(reply.status, server, date);
        h.content_type = reply.content_type.as_deref();
        h.content_length = *len;
        h.last_modified = reply.last_modified;
        h.location = reply.location.as_deref();
        h.keep_alive = keep_alive;
        h.etag = reply.etag.as_deref();
        h.extra = &extra;
        h.accept_ranges = reply.accept_ranges;
        h.content_range = reply.content_range.as_deref();
        h.to_bytes()
    })
}

/// Reads until a complete head is in `buf`. Reads are tried first without
/// waiting; only when the socket is empty is `timer` (one per connection,
/// reset rather than recreated) armed: the idle timeout until the first
/// byte, then `client_header_timeout` from that byte.
async fn read_head(
    stream: &TcpStream,
    buf: &mut Vec<u8>,
    srv: &crate::config::inherit::SrvConf,
    idle_timeout: Duration,
    quit: &mut watch::Receiver<bool>,
    first: bool,
    timer: &mut Pin<Box<Sleep>>,
) -> HeadRead {
    let (large_count, large_size) = srv.large_client_header_buffers;
    let max_line = large_size.max(srv.client_header_buffer_size) as usize;
    let max_total = (large_count as u64 * large_size).max(srv.client_header_buffer_size) as usize;
    // Which deadline the timer holds: None (unarmed), Some(false) the idle
    // one, Some(true) the header one.
    let mut armed: Option<bool> = None;
    loop {
        let started = !buf.is_empty();
        if started {
            match request::parse_head(buf) {
                Ok(Some((h, n))) => {
                    if n > srv.client_header_buffer_size as usize {
                        if let Some(e) = oversized(&buf[..n], max_line, max_total) {
                            return HeadRead::Bad(e.status(), e.to_string());
                        }
                    }
                    return HeadRead::Head(Box::new(h), n);
                }
                Ok(None) => {}
                Err(e) => return HeadRead::Bad(e.status(), e.to_string()),
            }
            if let Some(e) = oversized(buf, max_line, max_total) {
                return HeadRead::Bad(e.status(), e.to_string());
            }
        }
        buf.reserve(4096);
        match stream.try_read_buf(buf) {
            Ok(0) => return HeadRead::Gone,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return HeadRead::Gone,
        }
        if armed != Some(started) {
            let wait = if started {
                srv.client_header_timeout
            } else {
                idle_timeout
            };
            timer.as_mut().reset(tokio::time::Instant::now() + wait);
            armed = Some(started);
        }
        tokio::select! {
            r = stream.readable() => {
                if r.is_err() {
                    return HeadRead::Gone;
                }
            }
            _ = timer.as_mut() => return if started { HeadRead::TimedOut } else { HeadRead::Gone },
            _ = quit.changed(), if !first && !started => return HeadRead::Gone,
        }
    }
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
async fn read_some(stream: &TcpStream, buf: &mut Vec<u8>) -> std::io::Result<usize> {
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
async fn read_into(stream: &TcpStream, scratch: &mut [u8]) -> std::io::Result<usize> {
    loop {
        stream.readable().await?;
        match stream.try_read(scratch) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

/// A request body being read and dropped.
enum BodyDiscard {
    /// No body, or all of it dropped.
    Done,
    /// `Content-Length`: this many bytes are left.
    Length(u64),
    /// Chunked framing.
    Chunked(ChunkedDecoder),
}

impl BodyDiscard {
    fn new(head: &RequestHead, max: u64) -> BodyDiscard {
        match head.content_length {
            Some(0) => BodyDiscard::Done,
            Some(n) => BodyDiscard::Length(n),
            None if head.chunked => {
                BodyDiscard::Chunked(ChunkedDecoder::new((max != 0).then_some(max)))
            }
            None => BodyDiscard::Done,
        }
    }

    fn is_done(&self) -> bool {
        matches!(self, BodyDiscard::Done)
    }

    /// Drops what of the body `buf` holds; `Err` with the status for a
    /// body that cannot be valid.
    fn feed(&mut self, buf: &mut Vec<u8>) -> Result<(), Status> {
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
    async fn finish(
        &mut self,
        stream: &TcpStream,
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
async fn linger(stream: TcpStream) {
    let std = match stream.into_std() {
        Ok(s) => s,
        Err(_) => return,
    };
    let _ = std.shutdown(std::net::Shutdown::Write);
    let Ok(stream) = TcpStream::from_std(std) else {
        return;
    };
    let until = tokio::time::Instant::now() + LINGERING_TIME;
    let mut scratch = [0u8; 4096];
    loop {
        match tokio::time::timeout(LINGERING_TIMEOUT, read_into(&stream, &mut scratch)).await {
            Ok(Ok(n)) if n > 0 && tokio::time::Instant::now() < until => continue,
            _ => return,
        }
    }
}
