//! `proxy_pass`: the content handler of a proxied location, as nginx's
//! proxy and upstream modules run it.
//!
//! One request walks: choose the target (the location's `upstream` group,
//! or the group a `proxy_pass` with variables names) → read the request
//! body if it must be whole first (`proxy_request_buffering on`) → build
//! the request head → for each try: pick a peer (the group's balancer),
//! take an idle connection of the keep-alive cache or connect, send, read
//! the response head → on a failure `proxy_next_upstream` allows, mark the
//! peer and try the next → turn the head into the reply, whose body
//! streams from the upstream ([`source::UpstreamBody`]).
//!
//! Nothing here waits on a disk or on DNS: names were resolved when the
//! configuration was loaded, request bodies that outgrow memory go through
//! the file layer, and every socket wait is bounded by its nginx timeout.
//!
//! - [`cache`]: `proxy_cache`: lookups, hits, what a miss carries upstream.
//! - [`groups`]: a generation's upstream groups.
//! - [`request`]: the request line and headers sent upstream.
//! - [`response`]: the upstream's head → the client's reply.
//! - [`source`]: the response body as a stream.
//! - [`tls`]: TLS to upstreams (`proxy_pass https://…`, `proxy_ssl_*`).
//! - [`tunnel`]: an upgraded connection (WebSocket) after a `101`.

pub mod cache;
pub mod groups;
pub mod request;
pub mod response;
pub mod source;
pub mod tls;
pub mod tunnel;

use std::borrow::Cow;
use std::io::IoSlice;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::config::model::{NextUpstream, ProxyHttpVersion, ProxyTarget};
use crate::config::proxy_url::{self, Evaluated};
use crate::http::request::Method;
use crate::http::status::Status;
use crate::io::deadline::{self, Deadline};
use crate::io::file::FileLayer;
use crate::log::Level;
use crate::log::context::LogText;
use crate::metrics::timed;
use crate::upstream::body::BodyDecoder;
use crate::upstream::conn::{Conn, WriteError};
use crate::upstream::head::{self as uhead, HeadParse};
use crate::upstream::keepalive::{Key, Usage};
use crate::upstream::{Outcome, PeerAddr, PeerGroup, PeerId, PeerSpec, Pick, PickCtx, Tried};

use super::client::{Client, RequestBody};
use super::reply::{Body, Reply};
use super::request::{Req, UpstreamTry};
use super::site::Site;
use groups::Group;
use request::BodyFraming;
use source::{Live, LogCtx, Settle, UpstreamBody};

/// What the proxy handler decided.
pub enum Proxied {
    /// Send this reply.
    Reply(Box<Reply>),
    /// `X-Accel-Redirect`: serve this URI (or `@name`) instead.
    Redirect(String),
}

fn reply(r: Reply) -> Proxied {
    Proxied::Reply(Box::new(r))
}

/// Where this request goes.
struct Target<'a> {
    group: Arc<Group>,
    /// The URL's `scheme://host[:port]` as written (the default cache
    /// key's first part): the configuration's own text for a URL without
    /// variables.
    url_prefix: Cow<'a, str>,
    /// The URI part of the URL, if it has one.
    uri: Option<Cow<'a, str>>,
    /// The URL had variables.
    dynamic: bool,
    /// `https://`: the TLS of the connections.
    tls: Option<tls::TlsTarget>,
}

/// How the request body goes upstream.
enum BodyPlan {
    /// None.
    None,
    /// Bytes in memory (`proxy_set_body`, or a body read whole into
    /// memory): sent again to the next server if need be.
    Memory(Bytes),
    /// A body read whole into a temp file.
    File(crate::io::temp::TempFile),
    /// `proxy_pass_request_body off`: the client's body was read and
    /// dropped, but its length is still announced, as nginx's
    /// `$proxy_internal_body_length` does; nothing follows the head.
    LengthOnly(u64),
    /// Read from the client while sending (`proxy_request_buffering
    /// off`); chunked upstream when `chunked`.
    Stream {
        /// Send `Transfer-Encoding: chunked`.
        chunked: bool,
        /// The client's `Content-Length`, when it sent one.
        length: Option<u64>,
        /// Whether any of it was sent (then no next server can get it).
        started: bool,
    },
}

impl BodyPlan {
    fn framing(&self) -> BodyFraming {
        match self {
            BodyPlan::None => BodyFraming::None,
            BodyPlan::Memory(b) => BodyFraming::Length(b.len() as u64),
            BodyPlan::File(t) => BodyFraming::Length(t.len),
            BodyPlan::LengthOnly(n) => BodyFraming::Length(*n),
            BodyPlan::Stream { chunked: true, .. } => BodyFraming::Chunked,
            BodyPlan::Stream { length, .. } => {
                length.map_or(BodyFraming::None, BodyFraming::Length)
            }
        }
    }
}

/// Why one try failed, as `proxy_next_upstream` names the conditions.
struct Failure {
    /// The condition.
    kind: NextUpstream,
    /// What to log (nginx's words, without the context).
    message: String,
    /// The level to log it at.
    level: Level,
    /// The client's own failure (its body): this status, no next server.
    client_status: Option<Option<Status>>,
    /// Whether the request had started to go out (nginx's
    /// `u->request_sent`): a non-idempotent one may then not be sent again
    /// without `non_idempotent`; one whose connect failed may.
    request_sent: bool,
    /// The connection came from the keep-alive cache (nginx's
    /// `u->peer.cached`): an error on it does not use up a try.
    cached: bool,
}

/// A failure of the upstream's (`kind` says which).
fn upstream_failure(kind: NextUpstream, message: impl Into<String>) -> Failure {
    Failure {
        kind,
        message: message.into(),
        level: Level::Error,
        client_status: None,
        request_sent: true,
        cached: false,
    }
}

/// The `, client: …, server: …, request: "…"[, subrequest: "…"],
/// upstream: "…", host: "…"` suffix nginx logs.
fn context(r: &Req<'_>, peer: &str, uri: &[u8]) -> LogText {
    r.upstream_context(peer, uri)
}

/// Runs the proxy for `r`.
pub async fn handle<'a>(
    site: &'a Site,
    r: &mut Req<'a>,
    client: &mut Client<'_>,
    files: FileLayer<'_>,
) -> Proxied {
    let Some(pass) = r.location.and_then(|l| l.proxy_pass.as_ref()) else {
        return reply(Reply::special(Status::INTERNAL_SERVER_ERROR));
    };
    let target = match target(site, r, pass).await {
        Ok(t) => t,
        Err(status) => return reply(Reply::special(status)),
    };
    let conf = r.conf;
    let uri = request::request_target(r, r.location, target.uri.as_deref(), target.dynamic);
    let mut cache = None;
    if conf.proxy_cache.is_some() {
        match cache::prepare(site, r, files, &target.url_prefix, &uri).await {
            cache::Prep::Off => {}
            cache::Prep::Served(reply) => return Proxied::Reply(reply),
            cache::Prep::Skip => return reply(Reply::new(Status::OK, Body::Empty)),
            cache::Prep::Upstream(ctx) => cache = Some(ctx),
        }
    }
    let mut body = match prepare_body(site, r, client, files).await {
        Ok(b) => b,
        Err(reply) => return Proxied::Reply(reply),
    };
    let method = match &cache {
        Some(c) if c.as_get => std::borrow::Cow::Borrowed(&b"GET"[..]),
        _ => request::method(r, conf.proxy_method.as_ref()),
    };
    // A request whose answer will not be stored (below
    // `proxy_cache_min_uses`, after a lock timeout) goes with the client's
    // own headers, `Range` and conditions included (nginx picks
    // `headers_cache` only for `u->cacheable`).
    let cache_headers = cache.as_ref().filter(|c| c.fill).map(|c| {
        let revalidate = c
            .entry
            .as_ref()
            .filter(|_| conf.proxy_cache_revalidate && c.status == cache::CacheStatus::Expired)
            .map(|e| crate::cache::policy::Revalidate {
                last_modified: e.header.last_modified,
                etag: &e.header.etag,
            });
        crate::cache::policy::upstream_header_defaults(revalidate)
    });
    let head = request::head(
        r,
        conf,
        &method,
        &uri,
        body.framing(),
        cache_headers.as_ref().map(|h| &h[..]),
    );
    let head_request = method.eq_ignore_ascii_case(b"HEAD");
    let client_head = *r.method() == Method::Head;
    let mut out = exchange(
        site,
        r,
        client,
        files,
        &target,
        &head,
        &uri,
        &mut body,
        head_request,
        cache.as_deref_mut(),
    )
    .await;
    if let Some(c) = &cache {
        if r.upstream.cache_status.is_none() {
            r.upstream.cache_status = Some(c.status.as_str());
        }
    }
    if client_head && !head_request {
        // A HEAD fetched as GET for the cache: the client gets the head;
        // the body is still read to the end, so that it is stored.
        if let Proxied::Reply(rep) = &mut out {
            if let Body::Stream(source) = std::mem::replace(&mut rep.body, Body::Empty) {
                tokio::task::spawn_local(drain(source));
            }
        }
    }
    out
}

/// `proxy_cache_background_update`: after a stale entry went to the
/// client, the request is run again upstream, as a clone of it
/// ([`Req::background_clone`]), to refresh it; its answer fills the cache
/// and goes nowhere else. Under `log_subrequest on` it is logged as nginx
/// logs its background subrequest, once the entry is in place: its own
/// `$status` and `$upstream_*` (`EXPIRED`), `$request_length` 0, and
/// `sent` — what the connection wrote for the main request — as
/// `$bytes_sent` and `$body_bytes_sent`.
pub async fn background_update<'a>(
    site: &'a Site,
    r: &Req<'a>,
    client: &mut Client<'_>,
    sent: u64,
) {
    let mut sr = r.background_clone();
    let pool = match &sr.conf.aio {
        crate::config::model::Aio::Threads(name) => site.pools.get(&sr.expand_lossy(name)).cloned(),
        crate::config::model::Aio::Off => None,
    };
    let files = sr.conf.file_layer(pool.as_ref());
    let head = match handle(site, &mut sr, client, files).await {
        Proxied::Reply(rep) => {
            let head = rep.head_copy();
            if let Body::Stream(source) = rep.body {
                drain(source).await;
            }
            Some(head)
        }
        Proxied::Redirect(_) => None,
    };
    // The entry is renamed into place before the connection goes on, as
    // nginx's update has finished before its request does.
    if let Some(mut done) = sr.upstream.fill_done.take() {
        let _ = done.wait_for(|d| *d).await;
    }
    if let Some(head) = head {
        if sr.conf.log_subrequest {
            super::access_log::subrequest(&sr, sr.conf, &head, sent);
        }
    }
}

/// How long a connection, its response sent, waits for the cache fill or
/// `proxy_store` it started to be renamed into place before it goes on
/// (nginx renames before it finalizes the request, so that the next
/// request finds the entry). A disk slower than this delays no more.
pub const FILL_SETTLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Waits, at most [`FILL_SETTLE_LIMIT`], for the fill or store `r`
/// started to end.
pub async fn settle_fill(r: &mut Req<'_>) {
    if let Some(mut done) = r.upstream.fill_done.take() {
        let _ = tokio::time::timeout(FILL_SETTLE_LIMIT, done.wait_for(|d| *d)).await;
    }
}

/// Reads a body to its end and drops it (a response the client asked only
/// the head of, but that a cache fill needs whole).
async fn drain(mut source: Box<dyn crate::body::Source>) {
    while let Ok(Some(_)) = std::future::poll_fn(|cx| source.poll_chunk(cx)).await {}
}

/// The group and URI a `proxy_pass` names for this request.
async fn target<'a>(
    site: &Site,
    r: &mut Req<'_>,
    pass: &'a crate::config::model::ProxyPass,
) -> Result<Target<'a>, Status> {
    match &pass.target {
        ProxyTarget::Static(url) => {
            let group = site.upstreams.get(&url.upstream).cloned().ok_or_else(|| {
                r.error_log().log(
                    Level::Error,
                    Some(r.conn_no),
                    format_args!("no upstream \"{}\"{}", url.upstream, r.log_context()),
                );
                Status::INTERNAL_SERVER_ERROR
            })?;
            r.upstream.proxy_host = Some(url.host_header.clone());
            r.upstream.proxy_port = Some(url.port.clone());
            let source = &pass.url.source;
            let url_prefix = source.get(..url.key_start).unwrap_or(source);
            r.upstream.https = url.tls;
            let tls = if url.tls {
                Some(tls_target(site, r, pass, &group.host)?)
            } else {
                None
            };
            Ok(Target {
                url_prefix: Cow::Borrowed(url_prefix),
                group,
                uri: url.uri.as_deref().map(Cow::Borrowed),
                dynamic: false,
                tls,
            })
        }
        ProxyTarget::Dynamic => dynamic_target(site, r, pass).await,
    }
}

/// The TLS of a request's connections through `pass` to a group whose host
/// is `host`; a 500 when the location has no TLS made for it (it always
/// has: a location proxying over TLS gets its plan when it is merged).
fn tls_target(
    site: &Site,
    r: &Req<'_>,
    pass: &crate::config::model::ProxyPass,
    host: &str,
) -> Result<tls::TlsTarget, Status> {
    pass.tls
        .as_ref()
        .and_then(|plan| tls::target(site, r, plan, host))
        .ok_or(Status::INTERNAL_SERVER_ERROR)
}

/// `proxy_pass` with variables (`ngx_http_proxy_eval`): the URL is
/// evaluated, its host looked up among the groups, else used directly when
/// it is an address, else resolved by the location's `resolver` (without
/// one, nginx answers 502: `no resolver defined to resolve …`). The
/// addresses found make a round-robin group of their own.
async fn dynamic_target(
    site: &Site,
    r: &mut Req<'_>,
    pass: &crate::config::model::ProxyPass,
) -> Result<Target<'static>, Status> {
    let url = r.expand_lossy(&pass.url);
    let Evaluated {
        parsed,
        vars,
        scheme,
    } = proxy_url::evaluate(&url).map_err(|e| {
        r.error_log().log(
            Level::Error,
            Some(r.conn_no),
            format_args!("{e}{}", r.log_context()),
        );
        Status::INTERNAL_SERVER_ERROR
    })?;
    let rest = &url[scheme.prefix().len()..];
    r.upstream.https = scheme.tls;
    r.upstream.proxy_host = Some(vars.host_header.into());
    r.upstream.proxy_port = Some(vars.port.into());
    let uri = (!parsed.uri.is_empty()).then(|| Cow::Owned(parsed.uri.clone()));
    let url_prefix = Cow::Owned(url.get(..vars.key_start).unwrap_or(&url).to_string());
    if let Some(g) = site
        .upstreams
        .find(&parsed.host, parsed.port, !parsed.no_port)
    {
        let tls = if scheme.tls {
            Some(tls_target(site, r, pass, &g.host)?)
        } else {
            None
        };
        return Ok(Target {
            url_prefix,
            group: g.clone(),
            uri,
            dynamic: true,
            tls,
        });
    }
    // nginx's `u->resolved->host`: the name a group of its own is made for.
    let tls = if scheme.tls {
        Some(tls_target(site, r, pass, &parsed.host)?)
    } else {
        None
    };
    let specs = match parsed.addrs.first() {
        Some(addr) => {
            let name = addr.to_string();
            let addr = match addr {
                crate::config::model::UpstreamAddr::Inet(a) => PeerAddr::Inet(*a),
                crate::config::model::UpstreamAddr::Unix(p) => PeerAddr::Unix(p.clone()),
            };
            vec![PeerSpec::new(addr, &name, rest)]
        }
        None => {
            let Some(resolver) = r.conf.resolver.clone() else {
                r.error_log().log(
                    Level::Error,
                    Some(r.conn_no),
                    format_args!(
                        "no resolver defined to resolve {}{}",
                        parsed.host,
                        r.log_context()
                    ),
                );
                return Err(Status::BAD_GATEWAY);
            };
            let found = resolver
                .resolve(&parsed.host, r.conf.resolver_timeout)
                .await
                .map_err(|e| {
                    r.error_log().log(
                        Level::Error,
                        Some(r.conn_no),
                        format_args!(
                            "{} could not be resolved ({e}){}",
                            parsed.host,
                            r.log_context()
                        ),
                    );
                    Status::BAD_GATEWAY
                })?;
            found
                .into_iter()
                .map(|ip| {
                    let a = std::net::SocketAddr::new(ip, parsed.port);
                    PeerSpec::new(PeerAddr::Inet(a), &a.to_string(), rest)
                })
                .collect()
        }
    };
    let peers = PeerGroup::new(specs, Vec::new(), crate::upstream::Balance::RoundRobin)
        .map_err(|_| Status::INTERNAL_SERVER_ERROR)?;
    Ok(Target {
        url_prefix,
        group: Arc::new(Group {
            metrics: Default::default(),
            name: Arc::from(parsed.host.as_str()),
            peers,
            hash_key: None,
            keepalive: None,
            host: parsed.host,
            port: parsed.port,
        }),
        uri,
        dynamic: true,
        tls,
    })
}

/// Reads the body first when it must be whole (`proxy_request_buffering
/// on`, or a chunked body to an HTTP/1.0 upstream), else plans to stream it.
async fn prepare_body(
    site: &Site,
    r: &mut Req<'_>,
    client: &mut Client<'_>,
    files: FileLayer<'_>,
) -> Result<BodyPlan, Box<Reply>> {
    let conf = r.conf;
    if let Some(t) = &conf.proxy_set_body {
        return Ok(BodyPlan::Memory(Bytes::from(r.expand(t))));
    }
    if !r.is_main() {
        // A subrequest sends the body its parent read, if any (nginx's
        // `sr->request_body = r->request_body`); it never reads one.
        return Ok(match &r.body.in_memory {
            Some(b) if conf.proxy_pass_request_body => {
                r.upstream.body_length = Some(b.len() as u64);
                BodyPlan::Memory(Bytes::from(b.to_vec()))
            }
            _ => BodyPlan::None,
        });
    }
    if !r.head.has_body() {
        // `Content-Length: 0` is still announced upstream, as nginx's
        // `$content_length` default does.
        if r.head.content_length == Some(0) {
            return Ok(BodyPlan::LengthOnly(0));
        }
        return Ok(BodyPlan::None);
    }
    let chunked = r.head.chunked;
    // Without `proxy_pass_request_body` nginx still reads the body whole
    // (and announces its length): it never streams it.
    let stream = conf.proxy_pass_request_body
        && !conf.proxy_request_buffering
        && (!chunked || conf.proxy_http_version == ProxyHttpVersion::V11);
    if stream {
        r.upstream.body_chunked = chunked;
        r.upstream.body_length = r.head.content_length;
        return Ok(BodyPlan::Stream {
            chunked,
            length: r.head.content_length,
            started: false,
        });
    }
    let keep_name = site.config.uses_request_body_file
        || conf.client_body_in_file_only == crate::config::model::BodyInFile::On;
    let read = client.read_all(r.head, conf, files, keep_name).await;
    if !conf.proxy_pass_request_body {
        if let Ok(body) = &read {
            r.body.received = body.len();
            r.upstream.body_length = Some(body.len());
            return Ok(BodyPlan::LengthOnly(body.len()));
        }
    }
    match read {
        Ok(RequestBody::Memory(b)) => {
            r.body.received = b.len() as u64;
            r.body.in_memory = Some(Arc::new(b.to_vec()));
            r.upstream.body_length = Some(b.len() as u64);
            Ok(BodyPlan::Memory(b))
        }
        Ok(RequestBody::File(t)) => {
            r.body.received = t.len;
            if t.named {
                r.body.file = Some(t.path.clone());
            }
            r.upstream.body_length = Some(t.len);
            Ok(BodyPlan::File(t))
        }
        Err(e) => {
            r.error_log().log(
                e.level,
                Some(r.conn_no),
                format_args!("{}{}", e.message, r.log_context()),
            );
            Err(Box::new(body_failure_reply(e.status)))
        }
    }
}

/// What the client gets when its body could not be read: the error page
/// of `status`; nothing when it is gone (nginx logs 400) or timed out
/// (nginx terminates the request on NGX_HTTP_REQUEST_TIME_OUT and logs 408).
fn body_failure_reply(status: Option<Status>) -> Reply {
    match status {
        Some(Status::REQUEST_TIME_OUT) => Reply::aborted(Status::REQUEST_TIME_OUT),
        Some(s) => Reply::special(s),
        None => Reply::aborted(Status::BAD_REQUEST),
    }
}

/// The tries: pick, connect, send, read the head; the next server on a
/// failure `proxy_next_upstream` allows.
#[allow(clippy::too_many_arguments)]
async fn exchange<'a>(
    site: &'a Site,
    r: &mut Req<'a>,
    client: &mut Client<'_>,
    files: FileLayer<'_>,
    target: &Target<'_>,
    head: &[u8],
    uri: &[u8],
    body: &mut BodyPlan,
    head_request: bool,
    mut cache: Option<&mut cache::Ctx>,
) -> Proxied {
    let conf = r.conf;
    let group = &target.group;
    let mut tried = Tried::new(&group.peers);
    let started = timed::now();
    let mut attempts = 0u32;
    // The first group needs no mark (nothing goes before it): a request
    // proxied once allocates no list for it.
    if !r.upstream.tries.is_empty() {
        r.upstream.group_starts.push(r.upstream.tries.len());
    }
    let hash_key = group.hash_key.as_ref().map(|k| r.expand(k));
    let mut first = true;
    loop {
        // The first try begins when the exchange does.
        let now = if std::mem::take(&mut first) {
            started
        } else {
            timed::now()
        };
        let ctx = PickCtx {
            client_ip: r.peer.ip(),
            hash_key: hash_key.as_deref(),
        };
        let peer = match group.peers.pick(&ctx, &mut tried, now) {
            Pick::Peer(p) => p,
            Pick::NoLive => {
                r.error_log().log(
                    Level::Error,
                    Some(r.conn_no),
                    format_args!(
                        "no live upstreams while connecting to upstream{}",
                        context(r, &group.name, uri)
                    ),
                );
                r.upstream.tries.push(UpstreamTry {
                    addr: group.name.clone(),
                    status: Some(502),
                    ..UpstreamTry::default()
                });
                if let Some(rep) = stale(r, cache.as_deref_mut(), NextUpstream::ERROR) {
                    return rep;
                }
                if let Some(c) = cache.as_deref_mut() {
                    cache::cache_error(r, c, 502, None);
                }
                return reply(Reply::special(Status::BAD_GATEWAY));
            }
        };
        attempts += 1;
        let spec = group.peers.spec(peer);
        // The error log's context is made where a line may be written, not
        // for every try: a try that succeeds seldom needs it.
        let mut attempt = UpstreamTry {
            addr: spec.name.clone(),
            ..UpstreamTry::default()
        };
        let t0 = now;
        let result = try_peer(
            site,
            r,
            client,
            files,
            target,
            spec,
            head,
            body,
            head_request,
            &mut attempt,
            t0,
        )
        .await;
        attempt.response_time = Some(timed::since(t0).as_secs_f64());
        match result {
            Ok(Got::Response(got)) => {
                // A status `proxy_next_upstream` names goes to the next
                // server while there is one.
                let ft = status_condition(got.head.status);
                let retry = ft.is_some_and(|ft| {
                    may_retry(conf, ft, &tried, attempts, started, r, body, true)
                        && tried.remaining() > 1
                });
                if retry {
                    let ft = ft.unwrap_or(NextUpstream::ERROR);
                    let outcome = if ft == NextUpstream::HTTP_403 || ft == NextUpstream::HTTP_404 {
                        Outcome::Ok
                    } else {
                        Outcome::Failed
                    };
                    attempt.status = Some(got.head.status);
                    r.upstream.tries.push(attempt);
                    group.record(peer, outcome == Outcome::Ok, timed::since(t0));
                    let ctx_text = context(r, &spec.name, uri);
                    let action = "reading response header from upstream";
                    release(site, r, group, &mut tried, peer, outcome, action, &ctx_text);
                    continue;
                }
                attempt.status = Some(got.head.status);
                if let Some(c) = cache.as_deref_mut() {
                    if let Some(rep) =
                        cached_answer(site, r, c, &got, files, ft, group, &mut tried, peer, t0)
                            .await
                    {
                        r.upstream.tries.push(attempt);
                        return rep;
                    }
                }
                // Its response time is known when its body ends.
                attempt.response_time = None;
                return respond(
                    site,
                    r,
                    target,
                    peer,
                    tried,
                    got,
                    attempt,
                    (&spec.name, uri),
                    head_request,
                    t0,
                    cache,
                );
            }
            Ok(Got::Aborted) => {
                attempt.status = None;
                r.upstream.tries.push(attempt);
                group
                    .peers
                    .done(&mut tried, peer, Outcome::Ok, timed::now());
                return reply(Reply::aborted(Status(499)));
            }
            Err(f) => {
                let ctx_text = context(r, &spec.name, uri);
                r.error_log().log(
                    f.level,
                    Some(r.conn_no),
                    format_args!("{}{ctx_text}", f.message),
                );
                if let Some(client_status) = f.client_status {
                    // The client's body failed: not the upstream's fault.
                    r.upstream.tries.push(attempt);
                    group
                        .peers
                        .done(&mut tried, peer, Outcome::Ok, timed::now());
                    return reply(body_failure_reply(client_status));
                }
                let status = if f.kind == NextUpstream::TIMEOUT {
                    504
                } else {
                    502
                };
                attempt.status = Some(status);
                r.upstream.tries.push(attempt);
                group.record(peer, false, timed::since(t0));
                // nginx's warning names what the connection was doing.
                let action = f
                    .message
                    .rsplit_once(" while ")
                    .map_or("reading response header from upstream", |(_, a)| a);
                release(
                    site,
                    r,
                    group,
                    &mut tried,
                    peer,
                    Outcome::Failed,
                    action,
                    &ctx_text,
                );
                if f.cached && f.kind == NextUpstream::ERROR {
                    // A kept-alive connection the peer had closed: the
                    // next try is free, even with a lone peer.
                    tried.add_try();
                    attempts -= 1;
                }
                if may_retry(
                    conf,
                    f.kind,
                    &tried,
                    attempts,
                    started,
                    r,
                    body,
                    f.request_sent,
                ) && tried.remaining() > 0
                {
                    continue;
                }
                if let Some(rep) = stale(r, cache.as_deref_mut(), f.kind) {
                    return rep;
                }
                if let Some(c) = cache.as_deref_mut() {
                    cache::cache_error(r, c, status, None);
                }
                return reply(Reply::special(Status(status)));
            }
        }
    }
}

/// An expired entry served because the upstream failed in a way
/// `proxy_cache_use_stale` (or the entry's `stale-if-error`) allows.
fn stale(r: &mut Req<'_>, cache: Option<&mut cache::Ctx>, ft: NextUpstream) -> Option<Proxied> {
    let c = cache?;
    let entry = c.entry.as_ref()?;
    if !cache::use_stale(r.conf, entry, ft, false) {
        return None;
    }
    cache::recount(&c.zone, c.status, cache::CacheStatus::Stale);
    c.status = cache::CacheStatus::Stale;
    Some(reply(cache::serve(r, entry, cache::CacheStatus::Stale)))
}

/// What an expired entry makes of an upstream's answer: a `304` to a
/// revalidation refreshes and serves it (`REVALIDATED`); a status
/// `proxy_cache_use_stale` names serves it stale. `None`: the answer goes
/// to the client.
#[allow(clippy::too_many_arguments)]
async fn cached_answer(
    site: &Site,
    r: &mut Req<'_>,
    c: &mut cache::Ctx,
    got: &GotHead,
    files: FileLayer<'_>,
    ft: Option<NextUpstream>,
    group: &Group,
    tried: &mut Tried,
    peer: PeerId,
    t0: Instant,
) -> Option<Proxied> {
    let conf = r.conf;
    let entry = c.entry.take()?;
    let revalidating = conf.proxy_cache_revalidate
        && c.status == cache::CacheStatus::Expired
        && (entry.header.last_modified != -1 || !entry.header.etag.is_empty());
    let answer = if revalidating && got.head.status == 304 {
        let _ = cache::refresh(c, &entry, &got.head, conf, files).await;
        cache::recount(&c.zone, c.status, cache::CacheStatus::Revalidated);
        c.status = cache::CacheStatus::Revalidated;
        // The entry is fresh again: the fill lock is done with.
        c.fill = false;
        Some(reply(cache::serve(
            r,
            &entry,
            cache::CacheStatus::Revalidated,
        )))
    } else if ft.is_some_and(|ft| cache::use_stale(conf, &entry, ft, true)) {
        cache::recount(&c.zone, c.status, cache::CacheStatus::Stale);
        c.status = cache::CacheStatus::Stale;
        Some(reply(cache::serve(r, &entry, cache::CacheStatus::Stale)))
    } else {
        None
    };
    if answer.is_some() {
        group.record(peer, true, timed::since(t0));
        group.peers.done(tried, peer, Outcome::Ok, timed::now());
    } else {
        c.entry = Some(entry);
    }
    let _ = site;
    answer
}

/// Gives the peer back to its balancer; logs when a failure takes it out,
/// with what the connection was doing (`action`: `connecting to
/// upstream`, `SSL handshaking to upstream`, …), as nginx's log does.
#[allow(clippy::too_many_arguments)]
fn release(
    _site: &Site,
    r: &Req<'_>,
    group: &Group,
    tried: &mut Tried,
    peer: PeerId,
    outcome: Outcome,
    action: &str,
    ctx: &LogText,
) {
    if group.peers.done(tried, peer, outcome, timed::now()) {
        r.error_log().log(
            Level::Warn,
            Some(r.conn_no),
            format_args!("upstream server temporarily disabled while {action}{ctx}"),
        );
    }
}

/// The `proxy_next_upstream` condition a status is, if any.
fn status_condition(status: u16) -> Option<NextUpstream> {
    Some(match status {
        500 => NextUpstream::HTTP_500,
        502 => NextUpstream::HTTP_502,
        503 => NextUpstream::HTTP_503,
        504 => NextUpstream::HTTP_504,
        403 => NextUpstream::HTTP_403,
        404 => NextUpstream::HTTP_404,
        429 => NextUpstream::HTTP_429,
        _ => return None,
    })
}

/// Whether a failure of kind `ft` may go to the next server
/// (`ngx_http_upstream_next`): the condition is configured, tries and time
/// are left, and the request can be sent again (a body streamed from the
/// client cannot; a non-idempotent method that was sent only with
/// `non_idempotent`).
#[allow(clippy::too_many_arguments)]
fn may_retry(
    conf: &crate::config::inherit::LocConf,
    ft: NextUpstream,
    tried: &Tried,
    attempts: u32,
    started: Instant,
    r: &Req<'_>,
    body: &BodyPlan,
    request_sent: bool,
) -> bool {
    let next = conf.proxy_next_upstream;
    if next.contains(NextUpstream::OFF) || !next.contains(ft) {
        return false;
    }
    if tried.remaining() == 0 {
        return false;
    }
    let tries = conf.proxy_next_upstream_tries;
    if tries != 0 && attempts >= tries {
        return false;
    }
    let timeout = conf.proxy_next_upstream_timeout;
    if !timeout.is_zero() && timed::since(started) >= timeout {
        return false;
    }
    if let BodyPlan::Stream { started: true, .. } = body {
        return false;
    }
    let idempotent = !matches!(r.method(), Method::Post | Method::Patch)
        && !matches!(r.method(), Method::Other(m) if m == "LOCK");
    idempotent || !request_sent || next.contains(NextUpstream::NON_IDEMPOTENT)
}

/// A response head and what came with it.
struct GotHead {
    conn: Conn,
    head: uhead::ResponseHead,
    /// What was read: the head's bytes as received (stored in a cache
    /// entry), then the body's first bytes.
    buf: Vec<u8>,
    /// Where the head ends in `buf`.
    head_len: usize,
    http09: bool,
    usage: Usage,
    keepalive_key: Option<Key>,
    header_time: f64,
    bytes_received: u64,
}

/// What a try got.
enum Got {
    /// A response head.
    Response(Box<GotHead>),
    /// The client went away while waiting.
    Aborted,
}

/// One try with `spec`: connect (or reuse), send, read the head.
#[allow(clippy::too_many_arguments)]
async fn try_peer(
    site: &Site,
    r: &mut Req<'_>,
    client: &mut Client<'_>,
    files: FileLayer<'_>,
    target: &Target<'_>,
    spec: &PeerSpec,
    head: &[u8],
    body: &mut BodyPlan,
    head_request: bool,
    attempt: &mut UpstreamTry,
    t0: Instant,
) -> Result<Got, Failure> {
    let conf = r.conf;
    let group = &target.group;
    let key = group.keepalive.map(|_| Key {
        group: group.name.clone(),
        peer: spec.addr.clone(),
        tls: target.tls.as_ref().map(|t| t.key.clone()),
    });
    let reused = key
        .as_ref()
        .and_then(|k| crate::upstream::idle::take(&site.shared.keepalive, k, t0));
    let from_cache = reused.is_some();
    let (conn, usage) = match reused {
        Some(c) => c,
        None => {
            // The handshake has what the connect left of
            // `proxy_connect_timeout`, as nginx's write timer runs on.
            let deadline = Instant::now() + conf.proxy_connect_timeout;
            let mut conn = Conn::connect(
                &spec.addr,
                conf.proxy_connect_timeout,
                conf.proxy_socket_keepalive,
            )
            .await
            .map_err(|e| Failure {
                request_sent: false,
                ..upstream_failure(
                    if e.timed_out {
                        NextUpstream::TIMEOUT
                    } else {
                        NextUpstream::ERROR
                    },
                    format!("{} while connecting to upstream", e.message),
                )
            })?;
            if let Some(t) = &target.tls {
                conn = tls::connect(site, conn, t, &spec.name, deadline)
                    .await
                    .map_err(|e| Failure {
                        level: e.level,
                        request_sent: false,
                        ..upstream_failure(
                            if e.timed_out {
                                NextUpstream::TIMEOUT
                            } else {
                                NextUpstream::ERROR
                            },
                            format!("{} while SSL handshaking to upstream", e.message),
                        )
                    })?;
            }
            (
                conn,
                Usage {
                    requests: 0,
                    opened: timed::now(),
                },
            )
        }
    };
    // A kept-alive connection took no time to establish (nginx's
    // `$upstream_connect_time` is 0.000 for one).
    attempt.connect_time = Some(if from_cache {
        0.0
    } else {
        timed::since(t0).as_secs_f64()
    });
    let on_cached = |f: Failure| Failure {
        cached: from_cache,
        ..f
    };
    let sent = send_request(r, client, files, &conn, head, body)
        .await
        .map_err(on_cached)?;
    attempt.bytes_sent = sent;
    read_head(r, client, conn, usage, key, head_request, t0)
        .await
        .map_err(on_cached)
}

fn send_failure(e: WriteError) -> Failure {
    match e {
        WriteError::TimedOut => upstream_failure(
            NextUpstream::TIMEOUT,
            "upstream timed out (110: Connection timed out) while sending request to upstream",
        ),
        WriteError::Io(e) => upstream_failure(
            NextUpstream::ERROR,
            format!(
                "writev() failed ({}) while sending request to upstream",
                crate::sys::error::errno_text(&e)
            ),
        ),
    }
}

/// Sends the head and the body; returns the bytes sent.
async fn send_request(
    r: &mut Req<'_>,
    client: &mut Client<'_>,
    files: FileLayer<'_>,
    conn: &Conn,
    head: &[u8],
    body: &mut BodyPlan,
) -> Result<u64, Failure> {
    let timeout = r.conf.proxy_send_timeout;
    let mut sent = head.len() as u64;
    match body {
        BodyPlan::None | BodyPlan::LengthOnly(_) => {
            conn.write_all(head, timeout).await.map_err(send_failure)?
        }
        BodyPlan::Memory(b) => {
            // Head and a small body in one write.
            write_vectored(conn, &[head, b], timeout)
                .await
                .map_err(send_failure)?;
            sent += b.len() as u64;
        }
        BodyPlan::File(t) => {
            conn.write_all(head, timeout).await.map_err(send_failure)?;
            let mut off = 0;
            while off < t.len {
                let n = (t.len - off).min(64 * 1024) as usize;
                let piece = files.read_temp(t, off, n).await.map_err(|e| Failure {
                    level: Level::Crit,
                    ..upstream_failure(
                        NextUpstream::ERROR,
                        format!("{e} while sending request to upstream"),
                    )
                })?;
                if piece.is_empty() {
                    break;
                }
                conn.write_all(&piece, timeout)
                    .await
                    .map_err(send_failure)?;
                off += piece.len() as u64;
            }
            sent += off;
        }
        BodyPlan::Stream {
            chunked, started, ..
        } => {
            // The part of the body that came with the head goes in the same
            // write, as nginx sends it.
            let preread = client.preread_piece(r.head, r.conf);
            let mut first = head.to_vec();
            if let Some(p) = &preread {
                if *chunked {
                    crate::body::chunked::chunk_head(p.len(), &mut first);
                    first.extend_from_slice(p);
                    first.extend_from_slice(crate::body::chunked::CHUNK_END);
                } else {
                    first.extend_from_slice(p);
                }
            }
            conn.write_all(&first, timeout)
                .await
                .map_err(send_failure)?;
            sent += (first.len() - head.len()) as u64;
            *started = true;
            // A body that fits the body buffer stays readable as
            // `$request_body`, as nginx's last buffers do when it streams.
            let keep_max = r.conf.client_body_buffer_size as usize;
            let mut kept = Some(Vec::new());
            if let Some(p) = &preread {
                r.body.received += p.len() as u64;
                kept = kept.filter(|_| p.len() <= keep_max).map(|mut k| {
                    k.extend_from_slice(p);
                    k
                });
            }
            loop {
                let piece = client
                    .next_piece(r.head, r.conf)
                    .await
                    .map_err(|e| Failure {
                        // The client's fault: nothing to retry elsewhere.
                        kind: NextUpstream::OFF,
                        message: e.message,
                        level: e.level,
                        client_status: Some(e.status),
                        request_sent: true,
                        cached: false,
                    })?;
                let Some(piece) = piece else {
                    if *chunked {
                        conn.write_all(crate::body::chunked::LAST_CHUNK, timeout)
                            .await
                            .map_err(send_failure)?;
                        sent += 5;
                    }
                    if let Some(body) = kept.take() {
                        r.body.in_memory = Some(Arc::new(body));
                    }
                    break;
                };
                // What else already arrived (the end of the body among it)
                // goes in the same write, as nginx passes what it read.
                let mut out = Vec::with_capacity(piece.len() + 12);
                let mut next = Some(piece);
                let mut ended = false;
                while let Some(piece) = next.take() {
                    r.body.received += piece.len() as u64;
                    kept = kept
                        .filter(|k| k.len() + piece.len() <= keep_max)
                        .map(|mut k| {
                            k.extend_from_slice(&piece);
                            k
                        });
                    if *chunked {
                        crate::body::chunked::chunk_head(piece.len(), &mut out);
                        out.extend_from_slice(&piece);
                        out.extend_from_slice(crate::body::chunked::CHUNK_END);
                    } else {
                        out.extend_from_slice(&piece);
                    }
                    match client.buffered_piece() {
                        Some(Some(more)) => next = Some(more),
                        Some(None) => ended = true,
                        None => {}
                    }
                }
                if ended && *chunked {
                    out.extend_from_slice(crate::body::chunked::LAST_CHUNK);
                }
                conn.write_all(&out, timeout).await.map_err(send_failure)?;
                sent += out.len() as u64;
                if ended {
                    if let Some(body) = kept.take() {
                        r.body.in_memory = Some(Arc::new(body));
                    }
                    break;
                }
            }
        }
    }
    Ok(sent)
}

async fn write_vectored(conn: &Conn, parts: &[&[u8]], timeout: Duration) -> Result<(), WriteError> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut done = 0;
    while done < total {
        let mut skip = done;
        let slices: Vec<IoSlice<'_>> = parts
            .iter()
            .filter_map(|p| {
                if skip >= p.len() {
                    skip -= p.len();
                    None
                } else {
                    let s = IoSlice::new(&p[skip..]);
                    skip = 0;
                    Some(s)
                }
            })
            .collect();
        match conn.try_write_vectored(&slices) {
            Ok(0) => return Err(WriteError::Io(std::io::ErrorKind::WriteZero.into())),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                deadline::within(timeout, conn.writable())
                    .await
                    .map_err(|_| WriteError::TimedOut)?
                    .map_err(WriteError::Io)?;
            }
            Err(e) => return Err(WriteError::Io(e)),
        }
    }
    // Through TLS, what was encrypted and not yet sent goes now: the
    // upstream answers only once it has the whole request.
    conn.flush(timeout).await
}

/// Reads the response head within `proxy_buffer_size`, each wait bounded
/// by `proxy_read_timeout`; interim 1xx answers are skipped. A client that
/// closes meanwhile ends the wait (nginx's 499), unless
/// `proxy_ignore_client_abort`.
async fn read_head(
    r: &Req<'_>,
    client: &mut Client<'_>,
    conn: Conn,
    usage: Usage,
    key: Option<Key>,
    head_request: bool,
    t0: Instant,
) -> Result<Got, Failure> {
    let conf = r.conf;
    let limit = conf.proxy_buffer_size as usize;
    let mut buf: Vec<u8> = Vec::with_capacity(limit.max(1024));
    let mut received = 0u64;
    let watch_client = !conf.proxy_ignore_client_abort && !r.upstream.background && r.is_main();
    let mut client_gone = ClientGone::default();
    loop {
        if !buf.is_empty() {
            match uhead::parse_head(&buf) {
                Ok(HeadParse::Complete { head, len }) => {
                    return Ok(Got::Response(Box::new(GotHead {
                        conn,
                        head,
                        buf,
                        head_len: len,
                        http09: false,
                        usage,
                        keepalive_key: key,
                        header_time: timed::since(t0).as_secs_f64(),
                        bytes_received: received,
                    })));
                }
                Ok(HeadParse::Interim { len, .. }) => {
                    buf.drain(..len);
                    continue;
                }
                Ok(HeadParse::Http09) => {
                    return Ok(Got::Response(Box::new(GotHead {
                        conn,
                        head: http09_head(),
                        buf,
                        head_len: 0,
                        http09: true,
                        usage,
                        keepalive_key: None,
                        header_time: timed::since(t0).as_secs_f64(),
                        bytes_received: received,
                    })));
                }
                Ok(HeadParse::Partial) => {
                    if uhead::check_head_size(buf.len(), limit).is_err() {
                        return Err(upstream_failure(
                            NextUpstream::INVALID_HEADER,
                            "upstream sent too big header while reading response header from upstream",
                        ));
                    }
                }
                Err(e) => {
                    return Err(upstream_failure(
                        NextUpstream::INVALID_HEADER,
                        format!(
                            "{} while reading response header from upstream",
                            String::from_utf8_lossy(&e.message())
                        ),
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
        let mut deadline = Deadline::after(conf.proxy_read_timeout);
        let woke = std::future::poll_fn(|cx| {
            if let Poll::Ready(r) = conn.poll_read_ready(cx) {
                return Poll::Ready(Woke::Ready(r));
            }
            if watch_client && client_gone.poll(client, cx).is_ready() {
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
        let _ = head_request;
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
struct ClientGone {
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

/// The fill of a response, when it is to be stored: this request holds the
/// fill lock, `proxy_no_cache` does not object, and the policy finds it
/// cacheable. Otherwise the lock (if held) is let go.
fn fill_plan(
    site: &Site,
    r: &Req<'_>,
    c: &mut cache::Ctx,
    head: &uhead::ResponseHead,
    raw_head: &[u8],
) -> Option<crate::cache::fill::FillPlan> {
    use crate::cache::format::EntryHeader;
    if !c.fill {
        return None;
    }
    let conf = r.conf;
    // The lock goes with the plan, or is let go here (Ctx's drop).
    let now = crate::http::date::unix_secs(std::time::SystemTime::now());
    if cache::predicate(r, &conf.proxy_no_cache) {
        return None;
    }
    let store = crate::cache::policy::decide(head, &cache::settings(conf), now).ok()?;
    let mut header = EntryHeader::for_entry(&c.key, raw_head.len()).ok()?;
    store.fill(&mut header);
    if !store.vary.is_empty() {
        let headers: Vec<(&[u8], &[u8])> = r
            .head
            .headers
            .iter()
            .map(|(n, v)| (n.as_bytes(), v))
            .collect();
        header.variant = crate::cache::key::variant(
            c.key.md5(),
            &store.vary,
            headers.iter().map(|(n, v)| (*n, *v)),
        );
    }
    if c.md5 != *c.key.md5() && c.md5 != header.variant {
        // Fetched under a secondary key whose variant the answer does not
        // have: stored under the main key instead
        // (`ngx_http_file_cache_update_variant`).
        if let Some(token) = c.lock.take() {
            c.zone.fill_failed(&c.md5, Some(token));
        }
        c.md5 = *c.key.md5();
    }
    let files = cache::files_of(site, r);
    if let Some(p) = &files.pool {
        c.zone.set_pool(p);
    }
    c.fill = false;
    Some(crate::cache::fill::FillPlan {
        zone: c.zone.clone(),
        key: c.key.clone(),
        md5: c.md5,
        header,
        head: raw_head.to_vec(),
        response: head.clone(),
        lock: c.lock.take(),
        temp_dir: crate::cache::fill::temp_dir(c.zone.conf.use_temp_path, &conf.proxy_temp_path),
        files,
        log: r.error_log().clone(),
        done: None,
    })
}

/// The header fields an `X-Accel-Redirect` response hands to the response
/// of the URI it names (`redirect` in nginx's `ngx_http_upstream_headers_in`).
const ACCEL_KEPT: [&str; 6] = [
    "Content-Type",
    "Set-Cookie",
    "Content-Disposition",
    "Cache-Control",
    "Expires",
    "Accept-Ranges",
];

/// `X-Accel-Redirect` (`ngx_http_upstream_process_headers`): keep the
/// fields nginx keeps, check the URI (`ngx_http_parse_unsafe_uri`: an
/// unsafe one is a 404), and turn the method into `GET` (but `HEAD`).
fn accel_redirect(r: &mut Req<'_>, head: &uhead::ResponseHead, uri: String) -> Proxied {
    r.upstream.accel_kept = head
        .headers
        .iter()
        .filter(|(n, _)| {
            ACCEL_KEPT
                .iter()
                .any(|k| n.eq_ignore_ascii_case(k.as_bytes()))
        })
        .map(|(n, v)| {
            (
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )
        })
        .collect();
    if uri.starts_with('@') {
        return Proxied::Redirect(uri);
    }
    let Ok((path, args)) = crate::http::unsafe_uri::parse(uri.as_bytes()) else {
        r.error_log().log(
            Level::Error,
            Some(r.conn_no),
            format_args!("unsafe URI \"{uri}\" was detected{}", r.log_context()),
        );
        return reply(Reply::special(Status::NOT_FOUND));
    };
    if r.head.method != Method::Head {
        r.upstream.accel_get = true;
    }
    let mut target = String::from_utf8_lossy(&path).into_owned();
    if let Some(args) = args {
        target.push('?');
        target.push_str(&String::from_utf8_lossy(&args));
    }
    Proxied::Redirect(target)
}

/// Applies the fields an `X-Accel-Redirect` kept to the final reply: its
/// `Content-Type` replaces the handler's, its `Accept-Ranges` stands in
/// for the range filter's, the rest are added.
pub fn keep_accel_headers(reply: &mut Reply, r: &Req<'_>) {
    for (n, v) in &r.upstream.accel_kept {
        if n.eq_ignore_ascii_case("Content-Type") {
            reply.content_type = Some(v.clone().into());
            continue;
        }
        if n.eq_ignore_ascii_case("Accept-Ranges") {
            reply.accept_ranges = false;
        }
        reply
            .extra
            .retain(|(e, _)| !e.eq_ignore_ascii_case(n) || n.eq_ignore_ascii_case("Set-Cookie"));
        reply.extra.push((n.clone().into(), v.clone().into()));
    }
}

/// Where and how `proxy_store` keeps a `200`: the URI under the
/// location's `root`/`alias` (`on`) or the evaluated string.
fn store_plan(
    site: &Site,
    r: &Req<'_>,
    head: &uhead::ResponseHead,
) -> crate::cache::store::StorePlan {
    use crate::config::model::ProxyStore;
    let conf = r.conf;
    let path = match &conf.proxy_store {
        ProxyStore::Path(t) => {
            use std::os::unix::ffi::OsStrExt;
            std::path::PathBuf::from(std::ffi::OsStr::from_bytes(&r.expand(t)))
        }
        _ => crate::server::static_file::map_path(r, conf, r.location, &r.uri),
    };
    let mtime = head
        .header("Last-Modified")
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(crate::http::date::parse_http_date);
    crate::cache::store::StorePlan {
        path,
        temp_dir: conf.proxy_temp_path.clone(),
        access: conf.proxy_store_access,
        mtime,
        length: head.content_length,
        files: cache::files_of(site, r),
        log: r.error_log().clone(),
        done: None,
    }
}

/// The head of an HTTP/0.9 answer: 200, no fields, until close.
fn http09_head() -> uhead::ResponseHead {
    uhead::ResponseHead {
        version: (0, 9),
        status: 200,
        status_line: b"200 OK".to_vec(),
        headers: Default::default(),
        content_length: None,
        chunked: false,
        connection_close: true,
        upgrade: false,
    }
}

/// The reply for a response head, its body streaming from the upstream.
#[allow(clippy::too_many_arguments)]
fn respond(
    site: &Site,
    r: &mut Req<'_>,
    target: &Target<'_>,
    peer: PeerId,
    tried: Tried,
    got: Box<GotHead>,
    mut attempt: UpstreamTry,
    (peer_name, uri): (&str, &[u8]),
    head_request: bool,
    started: Instant,
    cache: Option<&mut cache::Ctx>,
) -> Proxied {
    let conf = r.conf;
    let got = *got;
    attempt.header_time = Some(got.header_time);
    attempt.bytes_received = got.bytes_received;
    r.upstream.headers = got.head.headers.clone();
    let (mut rep, accel) = if got.http09 {
        r.error_log().log(
            Level::Error,
            Some(r.conn_no),
            format_args!(
                "{} while reading response header from upstream{}",
                uhead::NO_VALID_HEADER,
                context(r, peer_name, uri)
            ),
        );
        let mut rep = Reply::new(Status::OK, Body::Empty);
        rep.http09 = true;
        (rep, response::Accel::default())
    } else {
        response::reply(r, conf, &got.head)
    };
    let live = Rc::new(Live::default());
    live.bytes_received.set(got.bytes_received);
    attempt.live = Some(live.clone());
    r.upstream.tries.push(attempt);
    if rep.status.0 == 101 && r.head.header("upgrade").is_some() {
        // The connection is upgraded (WebSocket): it carries bytes both
        // ways from here, and is never reused.
        let mut tried = tried;
        target
            .group
            .peers
            .done(&mut tried, peer, Outcome::Ok, timed::now());
        rep.length_override = None;
        rep.body = Body::Upgrade(Box::new(tunnel::Tunnel {
            conn: got.conn,
            leftover: got.buf[got.head_len..].to_vec(),
            buffer: conf.proxy_buffer_size as usize,
            read_timeout: conf.proxy_read_timeout,
            send_timeout: conf.proxy_send_timeout,
            client_timeout: conf.send_timeout,
        }));
        return reply(rep);
    }
    let decoder = if got.http09 {
        BodyDecoder::new(uhead::Framing::UntilClose)
    } else {
        BodyDecoder::for_response(&got.head, head_request)
    };
    let settle = Settle {
        group: target.group.clone(),
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
    let whole = rest > 0 && decoder.length_left() == Some(rest);
    let log = LogCtx {
        log: r.error_log().clone(),
        conn_no: r.conn_no,
        context: if whole {
            LogText::default()
        } else {
            context(r, peer_name, uri)
        },
    };
    let length = if got.http09 {
        None
    } else {
        rep.length_override
    };
    // `X-Accel-Limit-Rate` paces the client (nginx's `r->limit_rate`), for
    // this response and any it redirects to; `proxy_limit_rate` paces the
    // upstream reads.
    if let Some(rate) = accel.limit_rate {
        r.limit_rate = Some(rate);
    }
    let limit_rate = conf.proxy_limit_rate;
    // The head's bytes are kept only for a cache entry.
    let raw_head = match &cache {
        Some(_) => got.buf[..got.head_len].to_vec(),
        None => Vec::new(),
    };
    let mut source = UpstreamBody::new(
        got.conn,
        got.buf,
        got.head_len,
        decoder,
        length,
        conf.proxy_read_timeout,
        limit_rate,
        settle,
        log,
    );
    if let Some(uri) = accel.redirect {
        // The upstream's own body is not wanted: settle now.
        drop(source);
        return accel_redirect(r, &got.head, uri);
    }
    // An error the location has an `error_page` for is intercepted.
    if conf.proxy_intercept_errors
        && rep.status.0 >= 300
        && conf
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
        if let Some(c) = cache {
            cache::cache_error(r, c, rep.status.0, Some(&got.head));
        }
        return reply(special);
    }
    let buffering = accel.buffering.unwrap_or(conf.proxy_buffering);
    source.set_flush(!buffering);
    if !buffering {
        // nginx sends unbuffered responses unpaced.
        r.limit_rate = Some(0);
    }
    rep.read_ahead = if buffering {
        let (n, size) = conf.proxy_buffers;
        (n as u64 * size).max(conf.proxy_buffer_size) as usize
    } else {
        conf.proxy_buffer_size as usize
    };
    if buffering {
        // nginx's `p->busy_size`: see `server::stream::buffers`.
        rep.busy = conf.busy_buffers_size() as usize;
    }
    if buffering && conf.max_temp_file_size() > 0 {
        rep.spill = Some(crate::server::stream::Spill {
            max: conf.max_temp_file_size(),
            write_size: conf.temp_file_write_size() as usize,
        });
    }
    let bodiless = head_request || matches!(rep.status.0, 204 | 304);
    let mut cache = cache;
    if bodiless {
        // An answer without a body is stored as an entry without one (a
        // `204` with an `Expires`, a `HEAD` not converted to `GET`).
        if let Some(fill) = cache
            .take()
            .and_then(|c| fill_plan(site, r, c, &got.head, &raw_head))
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
    // entry, a `proxy_store` file or `proxy_force_ranges`, which read a
    // stream.
    let streamed_for = cache.is_some()
        || !matches!(conf.proxy_store, crate::config::model::ProxyStore::Off)
        || (conf.proxy_force_ranges && rep.status.0 == 200);
    if !streamed_for {
        if let Some(whole) = source.take_whole() {
            drop(source);
            rep.body = Body::Bytes(whole);
            return reply(rep);
        }
    }
    let mut body: Box<dyn crate::body::Source> = Box::new(source);
    let mut ranges = conf.proxy_force_ranges;
    if let Some(c) = cache {
        if let Some(mut fill) = fill_plan(site, r, c, &got.head, &raw_head) {
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
    if rep.status.0 == 200 && !matches!(conf.proxy_store, crate::config::model::ProxyStore::Off) {
        let mut plan = store_plan(site, r, &got.head);
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
