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
use std::sync::Arc;
use std::time::Duration;

use crate::body::chunked;
use crate::config::inherit::{LingeringClose, LocConf, SizeValue};
use crate::http::date::DateCache;
use crate::http::field_name::eq_ignore_case;
use crate::http::request::{Method, Version};
use crate::http::response::{CONTINUE, ResponseHead};
use crate::io::client_stream::ClientStream;
use crate::log::Level;

use crate::server::core::hooks::access_log;
use crate::server::core::pace::Pace;
use crate::server::core::phases::{Handled, Walk};
use crate::server::core::reply::{Body, Reply};
use crate::server::core::request::{Req, Sent};
use crate::server::core::send::{self, SendParams, SocketForPools};
use crate::server::core::site::Site;
use crate::server::core::vars::Response;
use crate::server::engine::client::{BodyProgress, Client};
use crate::server::engine::conn_info::ConnInfo;
use crate::server::engine::h1::conn_buf::ConnBuf;
use crate::server::engine::h1::park::Waiting;
use crate::server::engine::h1::read::{BodyDiscard, HeadRead, linger, linger_for, read_head};
use crate::server::engine::worker::Open;

thread_local! {
    /// The `Date` header of the current second, per worker thread.
    static DATE: RefCell<DateCache> = RefCell::new(DateCache::new());
}

/// How a request's handling ended for the connection.
enum Next {
    /// Read the next request.
    KeepAlive,
    /// Close (after a lingering close for `linger`: `lingering_time` and
    /// `lingering_timeout`).
    Close {
        linger: Option<(Duration, Duration)>,
    },
}

/// Serves a connection just accepted until it closes.
///
/// A connection holds a task only while it has bytes of a request: when it
/// has none (just accepted, or kept alive after a response) its task ends
/// and it is parked ([`crate::server::engine::h1::park`]): the socket and the few numbers of
/// [`Waiting`], no buffer, no timer, no task. The task holds the request's
/// future ([`serve_request`]) inline, not boxed per request: a box made
/// when a head is read and freed when the reply is sent cost an allocation
/// and a copy of ~3.8 KB per request, where a task serves many.
pub async fn serve(mut stream: ClientStream, mut info: ConnInfo, site: Arc<Site>, open: Open) {
    // This connection in nginx's counters (`stub_status`), until it ends.
    let stats = crate::metrics::connections::Tracked::accepted();
    let Some(default_server) = site.server(&info.socket_addr, &info.local, None) else {
        return;
    };
    let idle_timeout = default_server.srv.client_header_timeout;
    if site.is_ssl(&info.socket_addr) {
        let ClientStream::Tcp(tcp) = stream else {
            return;
        };
        info.https_port = true;
        let deadline = info.accepted + idle_timeout;
        use crate::server::engine::tls::accept::Accepted;
        stream = match crate::server::engine::tls::accept::accept(tcp, &info, &site, deadline).await
        {
            Accepted::Tls(s, negotiated) => {
                info.tls = Some(negotiated);
                s
            }
            Accepted::Plain(s) => s,
            Accepted::Closed => return,
        };
    }
    // TCP_NODELAY as the worker set it at accept (the http level's setting).
    let nodelay = site.http().is_some_and(|h| h.conf.tcp_nodelay);
    run(Box::new(Waiting {
        stream,
        info,
        site,
        requests: 0,
        nodelay,
        pool_sock: SocketForPools::default(),
        stats,
        open,
        idle_timeout,
        deadline: None,
        last: false,
    }))
    .await
}

/// Serves a parked connection that became readable, until it closes or
/// parks again.
pub async fn resume(w: Box<Waiting>) {
    run(w).await
}

/// The connection's loop: heads, requests, replies, until it has no byte
/// of a next request (it parks) or closes.
async fn run(mut w: Box<Waiting>) {
    let site = w.site.clone();
    let Some(default_server) = site.server(&w.info.socket_addr, &w.info.local, None) else {
        return;
    };
    let srv = &default_server.srv;
    let mut buf = ConnBuf::new();
    loop {
        let pipelined = !buf.is_empty();
        let head = read_head(&w.stream, &mut buf, srv, &mut w.stats).await;
        let (head, head_len, start) = match head {
            HeadRead::Head(h, n, began) => (h, n, began),
            HeadRead::Idle => {
                // The wait for the next request counts from here, whether
                // in this task or parked.
                let now = crate::metrics::timed::now();
                w.deadline.get_or_insert(now + w.idle_timeout);
                match crate::server::engine::h1::hot_wait::wait(&w.stream, w.idle_timeout).await {
                    crate::server::engine::h1::hot_wait::Waited::Readable => continue,
                    crate::server::engine::h1::hot_wait::Waited::Gone => return,
                    crate::server::engine::h1::hot_wait::Waited::Park => {
                        drop(buf);
                        crate::server::engine::h1::park::park(w);
                        return;
                    }
                }
            }
            HeadRead::Gone => {
                // nginx made a request of the first byte: a client that
                // closes with part of a head sent is logged as a 400.
                if !buf.is_empty() {
                    let sent = Sent {
                        status: 400,
                        ..Sent::default()
                    };
                    access_log::rejected(&site, &default_server.conf, &w.info.peer, &buf, &sent);
                    let what = if buf
                        .iter()
                        .skip_while(|b| matches!(b, b'\r' | b'\n'))
                        .any(|&b| b == b'\n')
                    {
                        "headers"
                    } else {
                        "line"
                    };
                    default_server.conf.error_log.log.log(
                        Level::Info,
                        Some(w.info.conn_no),
                        format_args!(
                            "client prematurely closed connection while reading client request {what}, client: {}",
                            w.info.peer
                        ),
                    );
                }
                return;
            }
            HeadRead::TimedOut => {
                let sent = Sent {
                    status: 408,
                    ..Sent::default()
                };
                access_log::rejected(&site, &default_server.conf, &w.info.peer, &buf, &sent);
                default_server.conf.error_log.log.log(
                    Level::Info,
                    Some(w.info.conn_no),
                    format_args!(
                        "client timed out while reading client request headers, client: {}",
                        w.info.peer
                    ),
                );
                return;
            }
            HeadRead::Bad(status, msg) => {
                let line = format!("{msg}, client: {}", w.info.peer);
                let w = *w;
                Box::pin(refuse_head(
                    w.stream,
                    &mut buf,
                    &site,
                    default_server,
                    &w.info,
                    status,
                    &line,
                ))
                .await;
                return;
            }
        };
        w.deadline = None;
        w.requests += 1;
        let request = Request {
            stream: &w.stream,
            buf: &mut buf,
            site: &site,
            default_server,
            info: &w.info,
            head,
            head_len,
            start,
            requests: w.requests,
            pipelined,
            pool_sock: &mut w.pool_sock,
            closing: w.last,
            stats: &mut w.stats,
        };
        match serve_request(request).await {
            Served::KeepAlive {
                keepalive_timeout,
                tcp_nodelay,
            } => {
                w.idle_timeout = keepalive_timeout;
                if tcp_nodelay != w.nodelay {
                    // Only when a location asks otherwise than the http level
                    // did at accept: one setsockopt per change, not per request.
                    w.nodelay = tcp_nodelay;
                    let _ = w.stream.set_nodelay(tcp_nodelay);
                }
                // Nothing pipelined: the buffer goes back to the pool while
                // the connection waits.
                buf.release();
            }
            Served::Close(Some((time, timeout))) => {
                let w = *w;
                Box::pin(linger_for(w.stream, time, timeout)).await;
                return;
            }
            Served::Close(None) => return,
            Served::Refuse(status, line, server) => {
                let w = *w;
                Box::pin(refuse_head(
                    w.stream, &mut buf, &site, server, &w.info, status, &line,
                ))
                .await;
                return;
            }
        }
    }
}

/// What [`serve_request`] needs of its connection.
struct Request<'a, 's> {
    /// The client's socket.
    stream: &'a ClientStream,
    /// The read buffer: the head at its start, then what followed it.
    buf: &'a mut ConnBuf,
    /// The generation serving it.
    site: &'s Arc<Site>,
    /// The server the connection's address chose.
    default_server: &'s crate::config::model::Server,
    /// Where the connection came from.
    info: &'a ConnInfo,
    /// The request head read.
    head: Box<crate::http::request::RequestHead>,
    /// Its length at the start of `buf`.
    head_len: usize,
    /// When its first byte was read (`$request_time` starts there).
    start: std::time::Instant,
    /// Requests on this connection so far, this one included.
    requests: u64,
    /// Whether the head was in the buffer before the wait for it began.
    pipelined: bool,
    /// The socket as the file pools see it, kept across requests.
    pool_sock: &'a mut SocketForPools,
    /// Close after this request (its listening address is gone).
    closing: bool,
    /// The connection in nginx's counters.
    stats: &'a mut crate::metrics::connections::Tracked,
}

/// How serving a request ended for its connection.
enum Served<'s> {
    /// Read the next request, with the location's `keepalive_timeout` and
    /// `tcp_nodelay`.
    KeepAlive {
        keepalive_timeout: Duration,
        tcp_nodelay: bool,
    },
    /// Close, after a lingering close for (`lingering_time`,
    /// `lingering_timeout`) when set.
    Close(Option<(Duration, Duration)>),
    /// Refuse the head with this status and error log line, from this
    /// server, and close.
    Refuse(
        crate::http::status::Status,
        String,
        &'s crate::config::model::Server,
    ),
}

/// nginx's check in `ngx_http_set_virtual_server`: a request whose host
/// is not the name the handshake chose a server by, for a server (the
/// host's, or the default one) that verifies client certificates, is
/// misdirected (421): the certificate was judged by another server's
/// rules. The server the handshake chose, which answers, when it is so.
fn misdirected<'s>(
    site: &'s Site,
    info: &ConnInfo,
    host: Option<&str>,
    server: &crate::config::model::Server,
) -> Option<&'s crate::config::model::Server> {
    use crate::config::ssl_model::VerifyClient;
    let host = host?;
    let sni = info.tls.as_ref()?.server_name.as_deref()?;
    let sni = sni.strip_suffix('.').unwrap_or(sni).to_ascii_lowercase();
    if sni.is_empty() || sni == host {
        return None;
    }
    let chosen = site.sni_server(&info.socket_addr, &info.local, &sni)?;
    (server.srv.ssl_verify_client != VerifyClient::Off).then_some(chosen)
}

/// Serves one request whose head has been read: walks it through the
/// phases, sends the reply, and says whether the connection goes on. Its
/// state (the request, the walk, the reply being sent) lives only as long
/// as the request.
async fn serve_request<'s>(q: Request<'_, 's>) -> Served<'s> {
    let Request {
        stream,
        buf,
        site,
        default_server,
        info,
        head,
        head_len,
        start,
        requests,
        pipelined,
        pool_sock,
        closing,
        stats,
    } = q;
    let buf: &mut Vec<u8> = buf;
    stats.writing();
    let (mut server, name_regex) = site
        .server_match(&info.socket_addr, &info.local, head.host.as_deref())
        .unwrap_or((default_server, None));
    let misdirected = misdirected(site, info, head.host.as_deref(), server);
    if let Some(sni_server) = misdirected {
        // nginx answers from the server the handshake chose.
        server = sni_server;
    }
    if crate::server::engine::h1::max_headers::exceeded(&head, &default_server.srv, &server.srv) {
        let r = Req::new(site, &head, server, info, requests, start, head_len);
        let e = crate::http::request::HeadError::TooManyHeaders;
        let line = format!("{e} {}{}", e.while_reading(), r.log_context());
        return Served::Refuse(e.status(), line, server);
    }
    buf.drain(..head_len);
    let mut r = Req::new(site, &head, server, info, requests, start, head_len);
    r.pipelined = pipelined;
    r.early_data = stream.in_early_data();
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
    let mut held = None;
    // Plain HTTP on a TLS address: nginx reads the request, then answers
    // 497 through the server's `error_page` (or its 400 page) and closes.
    // So is a request on a connection whose client certificate the
    // server's `ssl_verify_client` refuses (495, 496).
    let plain_on_tls = info.https_port && info.tls.is_none();
    let refused = match &info.tls {
        _ if misdirected.is_some() => Some((
            421,
            "client attempted to request the server name different from the one that was negotiated"
                .to_string(),
        )),
        None if plain_on_tls => Some((
            497,
            "client sent plain HTTP request to HTTPS port".to_string(),
        )),
        None => None,
        Some(tls) => crate::server::engine::tls::info::refusal(tls, server.srv.ssl_verify_client),
    };
    if let Some((_, why)) = &refused {
        r.error_log().log(
            Level::Info,
            Some(r.conn_no),
            format_args!(
                "{why} while reading client request headers{}",
                r.log_context()
            ),
        );
    }
    let next = {
        let mut client = Client::new(stream, buf);
        let mut walk = Walk::new(site);
        let routed = match &refused {
            Some((status, _)) => walk.fail(&mut r, crate::http::status::Status(*status)),
            None => walk.route(&mut r),
        };
        let mut handled = match routed {
            Some(h) => h,
            None => walk.content(&mut r, &mut client).await,
        };
        handled.reply.close |= refused.is_some();
        r.body.received = r.body.received.max(client.body_received());
        let continue_sent = client.continue_sent;
        let progress = std::mem::replace(&mut client.body, BodyProgress::Failed);
        drop(client);
        respond(
            stream,
            buf,
            site,
            &r,
            handled,
            pool_sock,
            continue_sent,
            progress,
            requests,
            closing,
            &mut held,
        )
        .await
    };
    // What the handler left to do once the response is sent (the entry
    // this request filled renamed into place, as nginx's rename precedes
    // the end of its request; a background update) ends before the
    // connection goes on.
    if let Some(after) = r.upstream.after_response.take() {
        let sent = held.as_ref().map_or(0, |h| h.sent.bytes);
        after(site, &mut r, stream, buf, sent).await;
    }
    if let Some(line) = held {
        let lines = line.write(site, &r);
        if matches!(next, Next::Close { .. }) {
            // As nginx, which logs before it closes.
            access_log::written(lines).await;
        }
    }
    match next {
        Next::KeepAlive => stats.waiting(),
        Next::Close { linger } => return Served::Close(linger),
    }
    Served::KeepAlive {
        keepalive_timeout: r.conf.keepalive_timeout,
        tcp_nodelay: r.conf.tcp_nodelay,
    }
}

/// Answers a head that could not be read with the default server's
/// `error_page` for `status`: the request as far as its line could be read
/// (else `GET /`) walks to the page; the connection closes after it.
async fn fail_with_page(
    stream: &ClientStream,
    buf: &mut Vec<u8>,
    site: &Site,
    server: &crate::config::model::Server,
    info: &ConnInfo,
    status: crate::http::status::Status,
) {
    let line_end = buf.iter().position(|&c| c == b'\n');
    let parsed = line_end.and_then(|end| {
        let mut line = buf[..end].to_vec();
        line.extend_from_slice(b"\n\r\n");
        crate::http::request::parse_head(&line).ok().flatten()
    });
    let head = match parsed {
        Some((head, _)) => head,
        None => match crate::http::request::parse_head(b"GET / HTTP/1.0\r\n\r\n") {
            Ok(Some((head, _))) => head,
            _ => return,
        },
    };
    let head_len = line_end.map_or(0, |n| n + 1);
    buf.clear();
    let start = crate::metrics::timed::now();
    let mut r = Req::new(site, &head, server, info, 1, start, head_len);
    let handled = {
        let mut client = Client::new(stream, buf);
        let mut walk = Walk::new(site);
        match walk.fail(&mut r, status) {
            Some(h) => h,
            None => walk.content(&mut r, &mut client).await,
        }
    };
    let mut handled = handled;
    handled.reply.close = true;
    let mut pool_sock = SocketForPools::default();
    respond(
        stream,
        buf,
        site,
        &r,
        handled,
        &mut pool_sock,
        false,
        BodyProgress::Failed,
        1,
        true,
        &mut None,
    )
    .await;
}

/// Refuses a head (400, 414, 494 …): logs `line` at `info`, answers with
/// `server`'s `error_page` for `status` if it has one (nginx's special
/// response handler applies it to these too), else with the plain page,
/// and closes after a lingering close.
async fn refuse_head(
    stream: ClientStream,
    buf: &mut Vec<u8>,
    site: &Site,
    server: &crate::config::model::Server,
    info: &ConnInfo,
    status: crate::http::status::Status,
    line: &str,
) {
    server
        .conf
        .error_log
        .log
        .log(Level::Info, Some(info.conn_no), format_args!("{line}"));
    if server
        .conf
        .error_pages
        .iter()
        .any(|p| p.codes.contains(&status.0))
    {
        fail_with_page(&stream, buf, site, server, info, status).await;
    } else {
        let framing = crate::http::request::error_framing(buf);
        reject(&stream, site, server, info, buf, status, framing).await;
    }
    linger(stream).await;
}

/// Answers a head that could not be read (400, 414, 494 …) with its page.
/// `(head_only, http09)` from [`crate::http::request::error_framing`]:
/// the page without the body (a `HEAD` request), or the page alone, with
/// no status line (after an HTTP/0.9 request line), as nginx answers.
async fn reject(
    stream: &ClientStream,
    site: &Site,
    server: &crate::config::model::Server,
    info: &ConnInfo,
    buf: &[u8],
    status: crate::http::status::Status,
    (head_only, http09): (bool, bool),
) {
    let mut reply = Reply::special(status);
    reply.fill_special_page(crate::signature(server.conf.server_tokens));
    let mut head = response_head(&reply, &server.conf, false);
    let body: &[u8] = match &reply.body {
        Body::Bytes(b) if !head_only => b,
        _ => &[],
    };
    if http09 {
        head.clear();
    }
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
    access_log::rejected(site, &server.conf, &info.peer, buf, &sent);
}

/// A request's access-log line held back while the background update of
/// the stale entry it was answered with runs: nginx logs the main request
/// when the last request of its tree is over (`ngx_http_free_request`
/// once `r->main->count` falls to 0), after the update, whether or not
/// `log_subrequest` logs the update itself. The next request on the
/// connection waits for the update anyway.
struct HeldLine<'c> {
    /// The settings in force where the request ended.
    conf: &'c LocConf,
    /// The reply's head, as sent.
    reply: Reply,
    /// What the connection wrote.
    sent: Sent,
    /// Whether the connection is kept alive after it.
    keep_alive: bool,
}

impl HeldLine<'_> {
    /// Writes the line for `r`, its update over.
    fn write(self, site: &Site, r: &Req<'_>) -> access_log::Written {
        log_request(site, r, self.conf, &self.reply, &self.sent, self.keep_alive)
    }
}

/// Sends the reply, discards the rest of an unread body, logs, and says
/// whether the connection goes on. A request with a background update to
/// run is logged after it: its line is left in `held`.
#[allow(clippy::too_many_arguments)]
async fn respond<'c>(
    stream: &ClientStream,
    buf: &mut Vec<u8>,
    site: &Site,
    r: &Req<'_>,
    handled: Handled<'c>,
    pool_sock: &mut SocketForPools,
    continue_sent: bool,
    progress: BodyProgress,
    requests: u64,
    closing: bool,
    held: &mut Option<HeldLine<'c>>,
) -> Next {
    let Handled {
        mut reply,
        conf,
        pool,
    } = handled;
    let head = r.head;
    if reply.abort {
        let sent = Sent {
            status: reply.status.wire().0,
            ..Sent::default()
        };
        let lines = log_request(site, r, conf, &reply, &sent, false);
        access_log::written(lines).await;
        return Next::Close { linger: None };
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
        return Next::Close { linger: None };
    }
    // Drop the part of an unread body already read, as nginx does before
    // it answers; a body that is already invalid ends keep-alive.
    let (mut discard, body_ok) = match &progress {
        BodyProgress::Untouched => {
            let mut d = BodyDiscard::new(head, conf.client_max_body_size);
            let fed = d.feed(buf);
            if let (Err(status), true) = (fed, reply.content && !reply.special) {
                // nginx's content handlers (`return` with a text, static
                // files) discard the body before answering: one already
                // known to be invalid answers instead (400, 413).
                *reply = Reply::special(status);
                reply.fill_special_page(crate::signature(conf.server_tokens));
            }
            (Some(d), fed.is_ok())
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
    // at hand; a body none of them changes is sent as it is. What has been
    // written so far is there for the subrequests' log lines.
    let sent_so_far = std::cell::Cell::new(0);
    let mut filtered = if bodiless(&reply, head_only) {
        None
    } else {
        crate::server::core::hooks::filter::body(
            crate::server::core::subrequest::Env {
                stream,
                sent: &sent_so_far,
            },
            r,
            &mut reply,
            pool.as_ref(),
        )
    };
    // nginx's chunked filter: a body of unknown length, or one with
    // trailers, goes chunked to an HTTP/1.1 client under
    // `chunked_transfer_encoding`; otherwise one of unknown length ends
    // with the connection.
    let mut close_delimited = reply.http09;
    if !reply.http09 && !bodiless(&reply, head_only) {
        let unknown = reply.announced_length().is_none();
        if unknown || reply.trailers {
            if head.version == Version::Http11 && conf.chunked_transfer_encoding {
                reply.chunked = true;
            } else if unknown {
                close_delimited = true;
            }
        }
    }
    let keep_alive = head.keep_alive
        && !http09
        && !reply.close
        && !close_delimited
        && !closing
        && !crate::server::engine::h1::park::quitting()
        && body_ok
        && reply.status.0 != 101
        && keepalive_allowed(r, conf, requests);
    let head_bytes = if http09 || reply.http09 {
        Vec::new()
    } else {
        response_head(&reply, conf, keep_alive)
    };
    let pace = limit_rate(r, conf);
    // Trailers are made when the body ends, from the reply as sent.
    let view = (reply.chunked && reply.trailers && !head_only).then(|| reply.head_copy());
    let trailer = |written: &send::Written| {
        let Some(view) = &view else {
            return chunked::LAST_CHUNK.to_vec();
        };
        let sent = Sent {
            status: view.status.0,
            body_bytes: written.body,
            bytes: written.total,
            complete: true,
        };
        let resp = Response {
            sent: &sent,
            reply: view,
            keep_alive,
            keep_alive_header: keepalive_header(conf),
        };
        let list = crate::server::core::hooks::headers_filter::trailers(r, view, resp);
        let mut out = Vec::new();
        chunked::last_chunk_with_trailers(&list, &mut out);
        out
    };
    let note = |level, what: &dyn std::fmt::Display| {
        r.error_log().log(
            level,
            Some(r.conn_no),
            format_args!("{what}{}", r.log_context()),
        );
    };
    let params = SendParams {
        timeout: conf.send_timeout,
        // Through TLS the bytes are encrypted by the loop: no sendfile().
        sendfile: conf.sendfile && stream.is_plain(),
        max_chunk: conf.sendfile_max_chunk,
        nopush: conf.tcp_nopush,
        files: conf.file_layer(pool.as_ref()),
        start: r.head_read,
        chunked: reply.chunked,
        read_ahead: reply.read_ahead,
        busy: reply.busy,
        spill: reply
            .spill
            .map(|limits| crate::server::core::stream::SpillTo {
                dir: &conf.proxy_temp_path,
                limits,
            }),
        postpone: if filtered.is_some() {
            conf.postpone_output as usize
        } else {
            0
        },
        pace: pace.as_ref(),
        trailer: &trailer,
        sent_so_far: filtered.is_some().then_some(&sent_so_far),
        direct: conf.directio.map(|min_size| send::Direct {
            min_size,
            alignment: conf.directio_alignment,
            buffer: conf.output_buffers.1 as usize,
        }),
        note: &note,
    };
    if matches!(reply.body, Body::Upgrade(_)) {
        // Boxed: a tunnel's state is large and rare, and inline it would
        // grow every request's future (and the copy made of it) by its size.
        return Box::pin(upgrade(stream, buf, site, r, conf, reply, head_bytes)).await;
    }
    let mut written = send::Written::default();
    let result = if let Some(source) = filtered.as_mut() {
        send::send_source(stream, head_bytes, source.as_mut(), &params, &mut written).await
    } else if send::from_memory(&reply.body, head_only) && pace.is_none() && !reply.chunked {
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
    // What TLS still holds encrypted is sent before the response counts as
    // sent (and before the next request is read).
    let result = match result {
        Ok(()) => send::flush(stream, conf.send_timeout).await,
        e => e,
    };
    let sent = Sent {
        status: reply.status.wire().0,
        body_bytes: written.body,
        bytes: written.total,
        complete: result.is_ok(),
    };
    let lines = if r.upstream.background_update && result.is_ok() {
        *held = Some(HeldLine {
            conf,
            reply: reply.head_copy(),
            sent,
            keep_alive,
        });
        access_log::Written::default()
    } else {
        log_request(site, r, conf, &reply, &sent, keep_alive)
    };
    crate::metrics::worker::with(|m| {
        m.requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    });
    if let Err(e) = result {
        if matches!(e, send::SendError::TimedOut) && conf.reset_timedout_connection {
            let _ = crate::sys::socket::set_reset_on_close(stream);
        }
        log_send_error(r, e);
        access_log::written(lines).await;
        return Next::Close { linger: None };
    }
    if !keep_alive {
        // As nginx, which logs before it closes: a client that sees the
        // close finds its line written.
        access_log::written(lines).await;
        let linger = match conf.lingering_close {
            LingeringClose::Off => false,
            LingeringClose::Always => true,
            LingeringClose::On => reply.close || head.has_body(),
        };
        return Next::Close {
            linger: linger.then_some((conf.lingering_time, conf.lingering_timeout)),
        };
    }
    // The body is read and thrown away after the answer (a handler that
    // took none), so that the next request starts where it ends.
    if let Some(d) = &mut discard {
        if !d.is_done() {
            if let Err(status) = d.finish(stream, buf).await {
                if let Some(status) = status {
                    r.error_log().log(
                        Level::Info,
                        Some(r.conn_no),
                        format_args!(
                            "client sent an invalid or too large body ({}){}",
                            status.0,
                            r.log_context()
                        ),
                    );
                }
                return Next::Close {
                    linger: Some((conf.lingering_time, conf.lingering_timeout)),
                };
            }
        }
    }
    Next::KeepAlive
}

/// Sends a `101` head and hands the connection to the upgrade (a proxied
/// WebSocket) until either side closes; the connection ends with it.
async fn upgrade(
    stream: &ClientStream,
    buf: &mut Vec<u8>,
    site: &Site,
    r: &Req<'_>,
    conf: &LocConf,
    mut reply: Box<Reply>,
    head: Vec<u8>,
) -> Next {
    let Body::Upgrade(tunnel) = std::mem::replace(&mut reply.body, Body::Empty) else {
        return Next::Close { linger: None };
    };
    let ok = send::write_all(stream, &head, conf.send_timeout)
        .await
        .is_ok();
    let mut sent = Sent {
        status: reply.status.wire().0,
        bytes: if ok { head.len() as u64 } else { 0 },
        ..Sent::default()
    };
    if ok {
        crate::metrics::worker::ttfb(r.head_read.elapsed());
        let leftover = std::mem::take(buf);
        let through = std::cell::Cell::new(0);
        match tunnel.run(stream, leftover, &through).await {
            Ok(()) => sent.complete = true,
            Err(e) => r.error_log().log(
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
    let lines = log_request(site, r, conf, &reply, &sent, false);
    access_log::written(lines).await;
    Next::Close { linger: None }
}

/// Whether the reply has no body on the wire (HEAD, 204, 304, 1xx).
fn bodiless(reply: &Reply, head_only: bool) -> bool {
    head_only || matches!(reply.status.0, 100..=199 | 204 | 304)
}

fn log_request(
    site: &Site,
    r: &Req<'_>,
    conf: &LocConf,
    reply: &Reply,
    sent: &Sent,
    keep: bool,
) -> access_log::Written {
    let mut lines = access_log::request(
        site,
        r,
        conf,
        Response {
            sent,
            reply,
            keep_alive: keep,
            keep_alive_header: keepalive_header(conf),
        },
    );
    // The request's error lines too, awaited before a close: nginx writes
    // them before it answers.
    if !keep {
        lines.fixed.extend(r.error_log().pending());
    }
    // Logged: its `limit_conn` counts go back now, not after the wait for
    // the log writer that may follow.
    r.access.release();
    lines
}

/// `keepalive_timeout`'s second parameter, when set.
fn keepalive_header(conf: &LocConf) -> Option<u64> {
    (conf.keepalive_header > 0).then_some(conf.keepalive_header)
}

/// Whether the location lets the connection serve another request after
/// this one (nginx's `ngx_http_update_location_config`): keep-alive on,
/// requests and age within `keepalive_requests` and `keepalive_time`, and
/// no browser `keepalive_disable` names.
fn keepalive_allowed(r: &Req<'_>, conf: &LocConf, requests: u64) -> bool {
    if conf.keepalive_timeout.is_zero()
        || requests >= conf.keepalive_requests
        || r.start.saturating_duration_since(r.conn_start) > conf.keepalive_time
    {
        return false;
    }
    let disable = conf.keepalive_disable;
    if !disable.msie6 && !disable.safari {
        return true;
    }
    // The first `User-Agent`, as the head kept it.
    let Some(ua) = r.head.user_agent.as_deref().map(str::as_bytes) else {
        return true;
    };
    let browser = crate::http::user_agent::classify(ua);
    !(browser.msie6 && r.head.method == Method::Post && disable.msie6
        || browser.safari && disable.safari)
}

/// `limit_rate` and `limit_rate_after` of the request: a `$limit_rate`
/// set by `set` or `X-Accel-Limit-Rate` wins over the location's.
fn limit_rate(r: &Req<'_>, conf: &LocConf) -> Option<Pace> {
    let rate = match r.limit_rate {
        Some(n) => n,
        None => size_value(r, &conf.limit_rate),
    };
    if rate == 0 {
        return None;
    }
    let after = size_value(r, &conf.limit_rate_after);
    Pace::new(rate, after, r.start)
}

/// A size that may hold variables, as `ngx_http_complex_value_size`: a bad
/// one is logged and counts as 0.
fn size_value(r: &Req<'_>, v: &SizeValue) -> u64 {
    match v {
        SizeValue::Fixed(n) => *n,
        SizeValue::Var(t) => {
            let text = r.expand_lossy(t);
            match crate::config::set_core_http::size_plain(&text) {
                Some(n) => n,
                None => {
                    r.error_log().log(
                        Level::Error,
                        Some(r.conn_no),
                        format_args!("invalid size \"{text}\"{}", r.log_context()),
                    );
                    0
                }
            }
        }
    }
}

/// The error log line for a reply that could not be sent whole.
fn log_send_error(r: &Req<'_>, e: send::SendError) {
    let (level, msg) = match e {
        send::SendError::TimedOut => (
            Level::Info,
            "client timed out while sending response to client".to_string(),
        ),
        send::SendError::File(crate::io::file::FileError::Overflow(o)) => {
            r.error_log()
                .log(Level::Error, Some(r.conn_no), format_args!("{o}"));
            return;
        }
        send::SendError::File(e) => (Level::Crit, format!("{e} while sending response to client")),
        send::SendError::Truncated(t) => (
            Level::Alert,
            format!("{t} while sending response to client"),
        ),
        // Already logged where it happened (a subrequest).
        send::SendError::Source(e) if e.terminate => return,
        send::SendError::Source(e) => (Level::Error, e.message),
        send::SendError::Io(_) => return,
    };
    r.error_log().log(
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
        let now = d.get_at(
            crate::metrics::timed::now(),
            crate::metrics::timed::wall_now,
        );
        let date = reply.date.as_deref().unwrap_or(now);
        let mut h = ResponseHead::with_extra(reply.status, server, date, &reply.extra);
        h.content_type = reply.content_type.as_deref();
        h.content_length = if reply.chunked {
            None
        } else {
            reply.announced_length()
        };
        h.keep_alive_header = keepalive_header(conf);
        // A `Last-Modified` among the fields (an upstream's, or one
        // `add_header` set) is the one sent, where it stands.
        h.last_modified = reply.last_modified.filter(|_| {
            !reply
                .extra
                .iter()
                .any(|(n, _)| eq_ignore_case(n.as_bytes(), b"Last-Modified"))
        });
        h.location = reply.location.as_deref();
        h.keep_alive = keep_alive;
        h.chunked = reply.chunked;
        h.upgrade = reply.status.0 == 101;
        h.etag = reply.etag.as_deref();
        h.accept_ranges = reply.accept_ranges;
        h.vary_accept_encoding = reply.gzip_vary;
        h.content_range = reply.content_range.as_deref();
        h.status_line = reply.status_line.as_deref();
        h.to_bytes_with_room(send::appended_len(&reply.body))
    })
}
