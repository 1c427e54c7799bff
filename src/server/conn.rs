//! One client connection: read a request head within the header limits and
//! timeouts, walk it through the phases, send the reply, discard any request
//! body nobody read, log it, and keep the connection for the next request
//! while keep-alive allows.
//!
//! Limits and timeouts are nginx's: `client_header_timeout` until a head is
//! complete, `keepalive_timeout` between requests, `client_header_buffer_size`
//! and `large_client_header_buffers` for the head's size, `send_timeout`
//! between writes, `keepalive_requests` per connection.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::config::inherit::LocConf;
use crate::http::date::DateCache;
use crate::http::request::{Method, Version};
use crate::http::response::{CONTINUE, ResponseHead};
use crate::io::file::FileLayer;
use crate::log::Level;

use super::access_log;
use super::client::{BodyProgress, Client};
use super::phases::{Handled, Walk};
use super::read::{BodyDiscard, HeadRead, linger, read_head};
use super::reply::{Body, Reply};
use super::request::{Req, Sent};
use super::send::{self, SendParams, SocketForPools};
use super::site::Site;
use super::vars::Response;

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
    /// When it was accepted (`$connection_time`).
    pub accepted: Instant,
}

/// How a request's handling ended for the connection.
enum Next {
    /// Read the next request.
    KeepAlive,
    /// Close (after a lingering close when `linger`).
    Close { linger: bool },
}

/// Serves a connection until it closes.
pub async fn serve(
    stream: TcpStream,
    info: ConnInfo,
    site: Arc<Site>,
    mut quit: watch::Receiver<bool>,
) {
    // This connection in nginx's counters (`stub_status`), until it ends.
    let mut stats = crate::metrics::connections::Tracked::accepted();
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
        let pipelined = !buf.is_empty();
        let head = read_head(
            &stream,
            &mut buf,
            srv,
            idle_timeout,
            &mut quit,
            requests == 0,
            &mut timer,
            &mut stats,
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
                reject(&stream, &site, default_server, &info, &buf, status, &msg).await;
                linger(stream).await;
                return;
            }
        };
        requests += 1;
        stats.writing();
        let start = crate::metrics::timed::now();
        let (server, name_regex) = site
            .server_match(info.socket_addr, info.local, head.host.as_deref())
            .unwrap_or((default_server, None));
        buf.drain(..head_len);
        let mut r = Req::new(&site, &head, server, &info, requests, start, head_len);
        r.pipelined = pipelined;
        if let (Some(re), Some(host)) = (name_regex, head.host.as_deref()) {
            // A regex server name's captures are the request's.
            r.regex_exec(re, host);
        }
        if !default_server.srv.merge_slashes {
            // nginx normalizes the path with the default server's setting,
            // before the Host header chose a server.
            if let Ok(path) = head.uri.path_keeping_slashes() {
                r.uri = String::from_utf8_lossy(&path).into_owned().into();
            }
        }
        let next = {
            let mut client = Client::new(&stream, &mut buf);
            let mut walk = Walk::new(&site);
            let handled = match walk.route(&mut r) {
                Some(h) => h,
                None => walk.content(&mut r, &mut client).await,
            };
            r.body.received = r.body.received.max(client.body_received());
            let continue_sent = client.continue_sent;
            let progress = std::mem::replace(&mut client.body, BodyProgress::Failed);
            drop(client);
            respond(
                &stream,
                &mut buf,
                &site,
                &r,
                handled,
                &mut pool_sock,
                continue_sent,
                progress,
                requests,
                &quit,
            )
            .await
        };
        // The entry this request filled is in place before the connection
        // goes on, as nginx's rename precedes the end of its request.
        super::proxy::settle_fill(&mut r).await;
        if r.upstream.background_update {
            // The stale entry was sent; now refresh it, before the next
            // request, as nginx's background subrequest does.
            let mut client = Client::new(&stream, &mut buf);
            super::proxy::background_update(&site, &mut r, &mut client).await;
        }
        match next {
            Next::KeepAlive => stats.waiting(),
            Next::Close { linger: true } => {
                linger(stream).await;
                return;
            }
            Next::Close { linger: false } => return,
        }
        let conf = r.conf;
        idle_timeout = conf.keepalive_timeout;
        if conf.tcp_nodelay != nodelay {
            // Only when a location asks otherwise than the http level did
            // at accept: one setsockopt per change, not per request.
            nodelay = conf.tcp_nodelay;
            let _ = stream.set_nodelay(nodelay);
        }
    }
}

/// Answers a head that could not be read (400, 414, 494 …) and logs it.
async fn reject(
    stream: &TcpStream,
    site: &Site,
    server: &crate::config::model::Server,
    info: &ConnInfo,
    buf: &[u8],
    status: crate::http::status::Status,
    msg: &str,
) {
    site.error_log.log(
        Level::Info,
        Some(info.conn_no),
        format_args!("{msg}, client: {}", info.peer.ip()),
    );
    let mut reply = Reply::special(status);
    reply.fill_special_page(crate::signature(server.conf.server_tokens));
    let head = response_head(&reply, &server.conf, false);
    let body: &[u8] = match &reply.body {
        Body::Bytes(b) => b,
        _ => &[],
    };
    let ok = send::write_all(
        stream,
        &[&head[..], body].concat(),
        server.conf.send_timeout,
    )
    .await;
    let sent = match ok {
        Ok(()) => Sent {
            status: status.0,
            body_bytes: body.len() as u64,
            bytes: (head.len() + body.len()) as u64,
            complete: true,
        },
        Err(_) => Sent {
            status: status.0,
            ..Sent::default()
        },
    };
    access_log::rejected(site, &server.conf, info.peer, buf, &sent);
}

/// Sends the reply, discards the rest of an unread body, logs, and says
/// whether the connection goes on.
#[allow(clippy::too_many_arguments)]
async fn respond(
    stream: &TcpStream,
    buf: &mut Vec<u8>,
    site: &Site,
    r: &Req<'_>,
    handled: Handled<'_>,
    pool_sock: &mut SocketForPools,
    continue_sent: bool,
    progress: BodyProgress,
    requests: u64,
    quit: &watch::Receiver<bool>,
) -> Next {
    let Handled {
        mut reply,
        conf,
        pool,
    } = handled;
    let head = r.head;
    if reply.abort {
        let sent = Sent {
            status: reply.status.0,
            ..Sent::default()
        };
        log_request(site, r, conf, &reply, &sent, false);
        return Next::Close { linger: false };
    }
    // A client that asked to be told before sending its body hears
    // `100 Continue` when the request found content, as from nginx.
    if head.expect_continue
        && reply.content
        && !continue_sent
        && matches!(progress, BodyProgress::Untouched)
        && send::write_all(stream, CONTINUE, conf.send_timeout)
            .await
            .is_err()
    {
        return Next::Close { linger: false };
    }
    // Drop the part of an unread body already read, as nginx does before
    // it answers; a body that is already invalid ends keep-alive.
    let (mut discard, body_ok) = match &progress {
        BodyProgress::Untouched => {
            let mut d = BodyDiscard::new(head, conf.client_max_body_size);
            let ok = d.feed(buf).is_ok();
            (Some(d), ok)
        }
        BodyProgress::Reading(reader) => (None, reader.is_done()),
        BodyProgress::Failed => (None, false),
    };
    let http09 = head.version == Version::Http09;
    // A 101 that is no upgrade (the client asked for none) has no body:
    // nginx sends its head and nothing of what follows.
    let head_only = (head.method == Method::Head
        || (reply.status.0 == 101 && !matches!(reply.body, Body::Upgrade(_))))
        && !http09;
    // The body filters (SSI …) run as the body is sent, with the request
    // at hand; a body none of them changes is sent as it is.
    let mut filtered = if bodiless(&reply, head_only) {
        None
    } else {
        super::filter::body(
            super::subrequest::Env { stream },
            r,
            &mut reply,
            pool.as_ref(),
        )
    };
    // A body of unknown length: chunked to an HTTP/1.1 client, else the
    // end of the connection marks its end.
    let mut close_delimited = reply.http09;
    if reply.http09 {
        // An HTTP/0.9 upstream's bytes go out as they are, then the end.
    } else if reply.announced_length().is_none() && !bodiless(&reply, head_only) {
        if head.version == Version::Http11 {
            reply.chunked = true;
        } else {
            close_delimited = true;
        }
    }
    let keep_alive = head.keep_alive
        && !http09
        && !reply.close
        && !close_delimited
        && !conf.keepalive_timeout.is_zero()
        && requests < conf.keepalive_requests
        && body_ok
        && reply.status.0 != 101
        && !*quit.borrow();
    let head_bytes = if http09 || reply.http09 {
        Vec::new()
    } else {
        response_head(&reply, conf, keep_alive)
    };
    let params = SendParams {
        timeout: conf.send_timeout,
        sendfile: conf.sendfile,
        max_chunk: conf.sendfile_max_chunk,
        nopush: conf.tcp_nopush,
        files: FileLayer::for_conf(pool.as_ref(), conf),
        start: r.start,
        chunked: reply.chunked,
        read_ahead: reply.read_ahead,
        spill: reply.spill.clone(),
        postpone: if filtered.is_some() {
            conf.postpone_output as usize
        } else {
            0
        },
    };
    if matches!(reply.body, Body::Upgrade(_)) {
        return upgrade(stream, buf, site, r, conf, reply, head_bytes).await;
    }
    let mut written = send::Written::default();
    let result = if let Some(source) = filtered.as_mut() {
        send::send_source(stream, head_bytes, source.as_mut(), &params, &mut written).await
    } else if send::from_memory(&reply.body, head_only) {
        send::send_from_memory(
            stream,
            head_bytes,
            &reply.body,
            head_only,
            &params,
            &mut written,
        )
        .await
    } else {
        send::send(
            stream,
            pool_sock,
            head_bytes,
            &mut reply.body,
            head_only,
            &params,
            &mut written,
        )
        .await
    };
    let sent = Sent {
        status: reply.status.0,
        body_bytes: written.body,
        bytes: written.total,
        complete: result.is_ok(),
    };
    log_request(site, r, conf, &reply, &sent, keep_alive);
    crate::metrics::worker::with(|m| {
        m.requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    });
    if let Err(e) = result {
        log_send_error(site, r, e);
        return Next::Close { linger: false };
    }
    if !keep_alive {
        let linger = reply.close || head.has_body();
        return Next::Close { linger };
    }
    // The body is read and thrown away after the answer (a handler that
    // took none), so that the next request starts where it ends.
    if let Some(d) = &mut discard {
        if !d.is_done() {
            if let Err(status) = d.finish(stream, buf).await {
                if let Some(status) = status {
                    site.error_log.log(
                        Level::Info,
                        Some(r.conn_no),
                        format_args!(
                            "client sent an invalid or too large body ({}){}",
                            status.0,
                            r.log_context()
                        ),
                    );
                }
                return Next::Close { linger: true };
            }
        }
    }
    Next::KeepAlive
}

/// Sends a `101` head and hands the connection to the upgrade (a proxied
/// WebSocket) until either side closes; the connection ends with it.
async fn upgrade(
    stream: &TcpStream,
    buf: &mut Vec<u8>,
    site: &Site,
    r: &Req<'_>,
    conf: &LocConf,
    mut reply: Reply,
    head: Vec<u8>,
) -> Next {
    let Body::Upgrade(tunnel) = std::mem::replace(&mut reply.body, Body::Empty) else {
        return Next::Close { linger: false };
    };
    let ok = send::write_all(stream, &head, conf.send_timeout)
        .await
        .is_ok();
    let mut sent = Sent {
        status: reply.status.0,
        bytes: if ok { head.len() as u64 } else { 0 },
        ..Sent::default()
    };
    if ok {
        crate::metrics::worker::ttfb(r.start.elapsed());
        let leftover = std::mem::take(buf);
        let through = std::cell::Cell::new(0);
        match tunnel.run(stream, leftover, &through).await {
            Ok(()) => sent.complete = true,
            Err(e) => site.error_log.log(
                Level::Error,
                Some(r.conn_no),
                format_args!("{e}{}", r.log_context()),
            ),
        }
        // What went to the client through the tunnel is the body, as
        // nginx counts it.
        sent.body_bytes = through.get();
        sent.bytes += through.get();
    }
    log_request(site, r, conf, &reply, &sent, false);
    Next::Close { linger: false }
}

/// Whether the reply has no body on the wire (HEAD, 204, 304, 1xx).
fn bodiless(reply: &Reply, head_only: bool) -> bool {
    head_only || matches!(reply.status.0, 100..=199 | 204 | 304)
}

fn log_request(site: &Site, r: &Req<'_>, conf: &LocConf, reply: &Reply, sent: &Sent, keep: bool) {
    access_log::request(
        site,
        r,
        conf,
        Response {
            sent,
            reply,
            keep_alive: keep,
        },
    );
}

/// The error log line for a reply that could not be sent whole.
fn log_send_error(site: &Site, r: &Req<'_>, e: send::SendError) {
    let (level, msg) = match e {
        send::SendError::TimedOut => (
            Level::Info,
            "client timed out while sending response to client".to_string(),
        ),
        send::SendError::File(crate::io::file::FileError::Overflow(o)) => {
            site.error_log
                .log(Level::Error, Some(r.conn_no), format_args!("{o}"));
            return;
        }
        send::SendError::File(e) => (Level::Crit, format!("{e} while sending response to client")),
        send::SendError::Truncated => (
            Level::Alert,
            "file was truncated while sending response to client".to_string(),
        ),
        // Already logged where it happened (a subrequest).
        send::SendError::Source(e) if e.terminate => return,
        send::SendError::Source(e) => (Level::Error, e.message),
        send::SendError::Io(_) => return,
    };
    site.error_log.log(
        level,
        Some(r.conn_no),
        format_args!("{msg}{}", r.log_context()),
    );
}

/// Serializes the response head.
fn response_head(reply: &Reply, conf: &LocConf, keep_alive: bool) -> Vec<u8> {
    let server = reply
        .server
        .as_deref()
        .unwrap_or(crate::signature(conf.server_tokens));
    DATE.with(|d| {
        let mut d = d.borrow_mut();
        let now = d.get(crate::metrics::timed::wall_now());
        let date = reply.date.as_deref().unwrap_or(now);
        let extra: Vec<(&str, &str)> = reply
            .extra
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let mut h = ResponseHead::new(reply.status, server, date);
        h.content_type = reply.content_type.as_deref();
        h.content_length = reply.announced_length();
        h.last_modified = reply.last_modified;
        h.location = reply.location.as_deref();
        h.keep_alive = keep_alive;
        h.chunked = reply.chunked;
        h.upgrade = reply.status.0 == 101;
        h.etag = reply.etag.as_deref();
        h.extra = &extra;
        h.accept_ranges = reply.accept_ranges;
        h.vary_accept_encoding = reply.gzip_vary;
        h.content_range = reply.content_range.as_deref();
        h.status_line = reply.status_line.as_deref();
        h.to_bytes_with_room(send::appended_len(&reply.body))
    })
}
