//! The response path (`ngx_http_upstream_send_response`): the head made
//! into the client's reply by the plug-in, then what the engine does with
//! it — an upgrade to a tunnel, an `X-Accel-Redirect`, an intercepted
//! error, buffering and temp files, a body that came whole, the cache
//! fill and `*_store` teed off the stream, `*_force_ranges`.
//!
//! Owns: [`respond`]. Must not: parse a protocol (the plug-in's filter
//! frames the body) or decide the cache's policy ([`super::cache::machine`]).

use std::rc::Rc;
use std::time::Instant;

use crate::http::status::Status;
use crate::log::Level;
use crate::log::context::LogText;
use crate::metrics::timed;
use crate::upstream::head::ResponseHead;
use crate::upstream::{Outcome, PeerId, Tried};

use super::cache::machine;
use super::connect::GotHead;
use super::protocol::Protocol;
use super::source::{Live, LogCtx, Settle, UpstreamBody};
use super::{Proxied, Upstream, UpstreamConf, accel, reply, tunnel};
use crate::server::core::reply::{Body, Reply};
use crate::server::core::request::{Req, UpstreamTry};
use crate::server::core::site::Site;

/// The peer whose head is answered, and its try.
pub struct Chosen<'s> {
    /// The peer.
    pub peer: PeerId,
    /// Its name (the log's `upstream: "…"`).
    pub name: &'s str,
    /// The request's tried peers, handed to the body's settling.
    pub tried: Tried,
    /// The try, for `$upstream_*`.
    pub attempt: UpstreamTry,
    /// When the try began.
    pub started: Instant,
}

/// The reply for a response head, its body streaming from the upstream.
pub fn respond<P: Protocol>(
    r: &mut Req<'_>,
    u: &mut Upstream<'_, '_, '_, P>,
    chosen: Chosen<'_>,
    got: Box<GotHead>,
) -> Proxied {
    let Chosen {
        peer,
        name: peer_name,
        tried,
        mut attempt,
        started,
    } = chosen;
    let conf = u.conf;
    let site = u.site;
    let head_request = u.head_request;
    let got = *got;
    attempt.header_time = Some(got.header_time);
    attempt.bytes_received = got.bytes_received;
    r.upstream.headers = got.head.headers.clone();
    let (mut rep, accel) = match got.headless {
        Some(message) => {
            r.error_log().log(
                Level::Error,
                Some(r.conn_no),
                format_args!(
                    "{message} while reading response header from upstream{}",
                    u.context(r, peer_name)
                ),
            );
            let mut rep = Reply::new(Status::OK, Body::Empty);
            rep.http09 = true;
            (rep, accel::Accel::default())
        }
        None => P::process_headers(r, &got.head),
    };
    let live = Rc::new(Live::default());
    live.bytes_received.set(got.bytes_received);
    attempt.live = Some(live.clone());
    r.upstream.tries.push(attempt);
    if rep.status.0 == 101 && r.head.header("upgrade").is_some() {
        // The connection is upgraded (WebSocket): it carries bytes both
        // ways from here, and is never reused.
        let mut tried = tried;
        u.target
            .group
            .peers
            .done(&mut tried, peer, Outcome::Ok, timed::now());
        rep.length_override = None;
        rep.body = Body::Upgrade(Box::new(tunnel::Tunnel {
            conn: got.conn,
            leftover: got.buf[got.head_len..].to_vec(),
            buffer: conf.buffer_size as usize,
            read_timeout: conf.read_timeout,
            send_timeout: conf.send_timeout,
            client_timeout: r.conf.send_timeout,
        }));
        return reply(rep);
    }
    let filter = u.protocol.input_filter_init(&got.head, head_request);
    let settle = Settle {
        group: u.target.group.clone(),
        peer,
        tried,
        keepalive: got.keepalive_key,
        usage: got.usage,
        started,
        live,
        shared: site.shared.clone(),
    };
    // A body whose every byte came with the head (its length exactly what
    // the buffer holds) reads nothing more from the upstream: no read can
    // fail, time out or bring extra data, so no line about it can be
    // written and its context is not made (a small response's usual case).
    let rest = (got.buf.len() - got.head_len) as u64;
    let whole = rest > 0 && super::protocol::InputFilter::length_left(&filter) == Some(rest);
    let log = LogCtx {
        log: r.error_log().clone(),
        conn_no: r.conn_no,
        context: if whole {
            LogText::default()
        } else {
            u.context(r, peer_name)
        },
    };
    let length = if got.headless.is_some() {
        None
    } else {
        rep.length_override
    };
    // `X-Accel-Limit-Rate` paces the client (nginx's `r->limit_rate`), for
    // this response and any it redirects to; `*_limit_rate` paces the
    // upstream reads.
    if let Some(rate) = accel.limit_rate {
        r.limit_rate = Some(rate);
    }
    // The head's bytes are kept only for a cache entry.
    let raw_head = match &u.cache {
        Some(_) => got.buf[..got.head_len].to_vec(),
        None => Vec::new(),
    };
    let mut source = UpstreamBody::new(
        got.conn,
        (got.buf, got.head_len),
        filter,
        length,
        &conf,
        settle,
        log,
    );
    if let Some(uri) = accel.redirect {
        // The upstream's own body is not wanted: settle now.
        drop(source);
        return accel::redirect(r, &got.head, uri);
    }
    // An error the location has an `error_page` for is intercepted.
    if conf.intercept_errors
        && rep.status.0 >= 300
        && r.conf
            .error_pages
            .iter()
            .any(|p| p.codes.contains(&rep.status.0))
    {
        drop(source);
        let mut special = Reply::special(rep.status);
        if rep.status.0 == 401 {
            // nginx keeps the upstream's (first) challenge on an
            // intercepted 401 (`ngx_http_upstream_intercept_errors`).
            if let Some(h) = rep
                .extra
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("WWW-Authenticate"))
            {
                special.extra.push(h.clone());
            }
        }
        if let Some(c) = u.cache.as_deref_mut() {
            machine::intercepted(r, c, rep.status.0, &got.head);
        }
        return reply(special);
    }
    let buffering = accel.buffering.unwrap_or(conf.buffering);
    source.set_flush(!buffering);
    if !buffering {
        // nginx sends unbuffered responses unpaced.
        r.limit_rate = Some(0);
    }
    rep.read_ahead = if buffering {
        let (n, size) = conf.buffers;
        (n as u64 * size).max(conf.buffer_size) as usize
    } else {
        conf.buffer_size as usize
    };
    if buffering {
        // nginx's `p->busy_size`: see `server::stream::buffers`.
        rep.busy = conf.busy_buffers_size as usize;
    }
    if buffering && conf.max_temp_file_size > 0 {
        rep.spill = Some(crate::server::core::stream::Spill {
            max: conf.max_temp_file_size,
            write_size: conf.temp_file_write_size as usize,
        });
    }
    let bodiless = head_request || matches!(rep.status.0, 204 | 304);
    if bodiless {
        // An answer without a body is stored as an entry without one (a
        // `204` with an `Expires`, a `HEAD` not converted to `GET`).
        if let Some(fill) = u
            .cache
            .as_deref_mut()
            .and_then(|c| machine::fill(site, r, c, &got.head, &raw_head))
        {
            crate::body::Tee::end(&mut crate::cache::fill::Fill::start(fill), true);
        }
        // Nothing to read: settle at once (the connection may be reused).
        let mut s = source;
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let _ = crate::body::Source::poll_chunk(&mut s, &mut cx);
        drop(s);
        return reply(rep);
    }
    // A body that came whole with its head (most small responses) goes
    // out from memory, the exchange settled at once: no stream to poll,
    // no queue, the upstream connection back in its keep-alive cache
    // before the client is written to. Not when the body feeds a cache
    // entry, a `*_store` file or `*_force_ranges`, which read a stream.
    let streamed_for =
        u.cache.is_some() || conf.stores() || (conf.force_ranges && rep.status.0 == 200);
    if !streamed_for {
        if let Some(whole) = source.take_whole() {
            drop(source);
            rep.body = Body::Bytes(whole);
            return reply(rep);
        }
    }
    let mut body: Box<dyn crate::body::Source> = Box::new(source);
    let mut ranges = conf.force_ranges;
    if let Some(c) = u.cache.as_deref_mut() {
        if let Some(mut fill) = machine::fill(site, r, c, &got.head, &raw_head) {
            let (done, fill_done) = tokio::sync::watch::channel(false);
            fill.done = Some(done);
            r.upstream.fill_done = Some(fill_done);
            body = Box::new(crate::body::Teed::new(
                body,
                crate::cache::fill::Fill::start(fill),
            ));
            // A cacheable response the upstream says allows ranges allows
            // a single one (nginx's `single_range` for `u->cacheable`).
            ranges |= got.head.header("Accept-Ranges").is_some();
        }
    }
    if rep.status.0 == 200 && conf.stores() {
        let mut plan = store_plan(site, r, &conf, &got.head);
        let (done, store_done) = tokio::sync::watch::channel(false);
        plan.done = Some(done);
        r.upstream.fill_done = Some(store_done);
        body = Box::new(crate::body::Teed::new(
            body,
            crate::cache::store::Store::start(plan),
        ));
    }
    if ranges && rep.status.0 == 200 {
        if let Some(len) = rep.length_override {
            body = force_ranges(r, &mut rep, body, len);
        }
    }
    rep.body = Body::Stream(body);
    reply(rep)
}

/// `proxy_force_ranges`: nginx's range filter on a proxied 200 of known
/// length (one range: a 206 of that range; several: the whole response, as
/// nginx's `single_range` allows no multipart here; none satisfiable: 416),
/// with `If-Range` checked against the upstream's validators.
fn force_ranges(
    r: &Req<'_>,
    rep: &mut Reply,
    body: Box<dyn crate::body::Source>,
    len: u64,
) -> Box<dyn crate::body::Source> {
    use crate::http::range::{self, RangeSpec};
    // The upstream's own `Accept-Ranges` gives way to the range filter's
    // (`ngx_http_upstream_copy_allow_ranges`).
    rep.extra
        .retain(|(n, _)| !n.eq_ignore_ascii_case("Accept-Ranges"));
    let header = |name: &str| {
        rep.extra
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let Some(range_header) = r.head.range.as_deref() else {
        rep.extra.push(("Accept-Ranges".into(), "bytes".into()));
        return body;
    };
    if let Some(if_range) = r.head.if_range.as_deref() {
        let etag = header("ETag");
        let modified = header("Last-Modified").and_then(|t| crate::http::date::parse_http_date(&t));
        if !range::if_range_matches(if_range, etag.as_deref(), modified) {
            rep.extra.push(("Accept-Ranges".into(), "bytes".into()));
            return body;
        }
    }
    match range::parse_range(range_header, len) {
        RangeSpec::Satisfiable(ranges) if ranges.len() == 1 => {
            let b = ranges[0];
            rep.status = Status::PARTIAL_CONTENT;
            rep.status_line = None;
            rep.content_range = Some(b.content_range(len));
            rep.length_override = Some(b.len());
            Box::new(crate::body::range::Ranged::new(body, b.start, b.len()))
        }
        RangeSpec::Unsatisfiable => {
            rep.status = Status::RANGE_NOT_SATISFIABLE;
            rep.status_line = None;
            rep.content_range = Some(range::unsatisfiable_content_range(len));
            rep.length_override = Some(0);
            Box::new(crate::body::range::Ranged::new(body, len, 0))
        }
        _ => {
            rep.extra.push(("Accept-Ranges".into(), "bytes".into()));
            body
        }
    }
}

/// Where and how `proxy_store` keeps a `200`: the URI under the
/// location's `root`/`alias` (`on`) or the evaluated string.
fn store_plan(
    site: &Site,
    r: &Req<'_>,
    conf: &UpstreamConf<'_>,
    head: &ResponseHead,
) -> crate::cache::store::StorePlan {
    use crate::config::model::ProxyStore;
    let path = match conf.store {
        ProxyStore::Path(t) => {
            use std::os::unix::ffi::OsStrExt;
            std::path::PathBuf::from(std::ffi::OsStr::from_bytes(&r.expand(t)))
        }
        _ => crate::server::modules::static_file::map_path(r, r.conf, r.location, &r.uri),
    };
    let mtime = head
        .header("Last-Modified")
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(crate::http::date::parse_http_date);
    crate::cache::store::StorePlan {
        path,
        temp_dir: conf.temp_path.clone(),
        access: conf.store_access,
        mtime,
        length: head.content_length,
        files: super::cache::files_of(site, r),
        log: r.error_log().clone(),
        done: None,
    }
}
