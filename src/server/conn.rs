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
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::config::inherit::LocConf;
use crate::http::date::DateCache;
use crate::http::request::Version;
use crate::http::response::{CONTINUE, ResponseHead};
use crate::io::file::FileLayer;
use crate::log::Level;

use super::access_log;
use super::handler::{self, Handled};
use super::read::{BodyDiscard, HeadRead, linger, read_head};
use super::reply::{Body, Reply};
use super::request::{Req, Sent};
use super::send::{self, SendParams, SocketForPools};
use super::site::Site;

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
        let start = crate::metrics::timed::now();
        let server = site
            .server(info.socket_addr, info.local, head.host.as_deref())
            .unwrap_or(default_server);
        let mut r = Req {
            head: &head,
            uri: head.uri.path_lossy(),
            peer: info.peer,
            local: info.local,
            server,
            conn_no: info.conn_no,
            conn_requests: requests,
            start,
            head_len,
        };
        let handled = match handler::handle_now(&site, &mut r) {
            Some(h) => h,
            None => handler::handle(&site, &mut r).await,
        };
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
        let head_only = head_only && !http09;
        let result = if send::from_memory(&reply.body, head_only) {
            send::send_from_memory(&stream, head_bytes, &reply.body, head_only, &params).await
        } else {
            send::send(
                &stream,
                &mut pool_sock,
                head_bytes,
                &reply.body,
                head_only,
                &params,
            )
            .await
        };
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
        let date = d.get(crate::metrics::timed::wall_now());
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
        h.to_bytes_with_room(send::appended_len(&reply.body))
    })
}
