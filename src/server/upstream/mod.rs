//! The upstream engine: what every proxied request goes through, whatever
//! protocol it speaks to its server, as nginx's `ngx_http_upstream.c`
//! drives `proxy_pass`, `fastcgi_pass` and their twins.
//!
//! One request walks: its target (the plug-in names it: [`Target`]) → the
//! cache ([`cache`], one state machine from lookup to finish) → the request
//! body, read whole first or streamed ([`body`]) → the request bytes (the
//! plug-in's `create_request`) → for each try ([`tries`]): pick a peer (the
//! group's balancer), take an idle connection or connect ([`connect`]),
//! send, read the response head through the plug-in ([`head`]) → on a
//! failure `*_next_upstream` allows, mark the peer and try the next → the
//! reply, its body streaming from the upstream through the plug-in's
//! framing ([`respond`], [`source`]); `X-Accel-*` ([`accel`]); what is left
//! after the response is sent ([`finish`]).
//!
//! A proxied request carries one state object, [`Upstream`] (nginx's
//! `ngx_http_upstream_t`), beside the request.
//!
//! Owns no directive: a plug-in maps its own (`proxy_*`) into
//! [`UpstreamConf`] (the cache's settings aside, which [`cache`] still
//! reads by their `proxy_cache_*` names: see docs/architecture.md). Nothing here waits on a disk or on DNS: names were
//! resolved when the configuration was loaded, request bodies that outgrow
//! memory go through the file layer, and every socket wait is bounded by
//! its timeout.
//!
//! - [`protocol`]: the plug-in trait ([`Protocol`]) and the body framing.
//! - [`conf`]: the engine's configuration ([`UpstreamConf`]).
//! - [`groups`]: a generation's upstream groups.
//! - [`tls`]: TLS to upstreams (`https://`, `*_ssl_*`).
//! - [`tunnel`]: an upgraded connection (WebSocket) after a `101`.

pub mod accel;
pub mod body;
pub mod cache;
pub mod conf;
pub mod connect;
pub mod finish;
pub mod groups;
pub mod head;
pub mod protocol;
pub mod respond;
pub mod source;
pub mod tls;
pub mod tries;
pub mod tunnel;

use std::borrow::Cow;
use std::sync::Arc;

use crate::http::request::Method;
use crate::io::file::FileLayer;
use crate::log::context::LogText;

use crate::server::core::reply::{Body, Reply};
use crate::server::core::request::Req;
use crate::server::core::site::Site;
use crate::server::engine::client::Client;
pub use conf::UpstreamConf;
use groups::Group;
pub use protocol::Protocol;
use protocol::RequestPlan;

/// What the engine decided.
pub enum Proxied {
    /// Send this reply.
    Reply(Box<Reply>),
    /// `X-Accel-Redirect`: serve this URI (or `@name`) instead.
    Redirect(String),
}

/// A reply, boxed.
pub fn reply(r: Reply) -> Proxied {
    Proxied::Reply(Box::new(r))
}

/// Where a request goes, as its plug-in evaluated it (nginx's
/// `u->resolved` and the URL's parts).
pub struct Target<'a> {
    /// The group.
    pub group: Arc<Group>,
    /// The URL's `scheme://host[:port]` as written (the default cache
    /// key's first part).
    pub url_prefix: Cow<'a, str>,
    /// The URI to send.
    pub uri: Vec<u8>,
    /// TLS to the group's peers, when the URL says so.
    pub tls: Option<tls::TlsTarget>,
}

/// One proxied request's upstream state (nginx's `ngx_http_upstream_t`):
/// everything the exchange needs beside the request itself.
pub struct Upstream<'u, 'c, 'a, P> {
    /// The generation.
    pub site: &'a Site,
    /// The client (its body, and its close while the upstream is waited).
    pub client: &'u mut Client<'c>,
    /// The request's file layer (temp files, the cache).
    pub files: FileLayer<'u>,
    /// The engine's settings.
    pub conf: UpstreamConf<'a>,
    /// Where it goes.
    pub target: Target<'a>,
    /// The protocol.
    pub protocol: P,
    /// The request bytes before the body, made once for every try.
    pub request: Vec<u8>,
    /// The request body.
    pub body: body::BodyPlan,
    /// The request was a `HEAD` upstream: no response body.
    pub head_request: bool,
    /// The cache, when the request uses one and goes upstream.
    pub cache: Option<Box<cache::Ctx>>,
}

impl<P> Upstream<'_, '_, '_, P> {
    /// The `, client: …, upstream: "…", host: "…"` suffix nginx logs for
    /// `peer`.
    pub fn context(&self, r: &Req<'_>, peer: &str) -> LogText {
        r.upstream_context(peer, &self.target.uri)
    }
}

/// What a plug-in hands the engine for a request.
pub struct Start<'a, P> {
    /// The target.
    pub target: Target<'a>,
    /// The settings its directives make.
    pub conf: UpstreamConf<'a>,
    /// The protocol.
    pub protocol: P,
}

/// Runs the upstream for `r`; registers what is left after the response
/// ([`finish`]).
pub async fn run<'a, P: Protocol>(
    site: &'a Site,
    r: &mut Req<'a>,
    client: &mut Client<'_>,
    files: FileLayer<'_>,
    start: Start<'a, P>,
) -> Proxied {
    let out = go(site, r, client, files, start).await;
    finish::register::<P>(r);
    out
}

/// [`run`]'s walk.
async fn go<'a, P: Protocol>(
    site: &'a Site,
    r: &mut Req<'a>,
    client: &mut Client<'_>,
    files: FileLayer<'_>,
    start: Start<'a, P>,
) -> Proxied {
    let Start {
        target,
        conf,
        mut protocol,
    } = start;
    let mut cache_ctx = None;
    if cache::configured(r) {
        match cache::prepare(
            site,
            r,
            files,
            &target.url_prefix,
            &target.uri,
            P::process_headers,
        )
        .await
        {
            cache::Prep::Off => {}
            cache::Prep::Served(reply) => return Proxied::Reply(reply),
            cache::Prep::Skip => {
                return reply(Reply::new(crate::http::status::Status::OK, Body::Empty));
            }
            cache::Prep::Upstream(ctx) => cache_ctx = Some(ctx),
        }
    }
    let body = match body::prepare(site, r, client, files, &conf, &protocol).await {
        Ok(b) => b,
        Err(reply) => return Proxied::Reply(reply),
    };
    let cache_headers = cache_ctx
        .as_deref()
        .and_then(|c| cache::machine::request_headers(r, c));
    let created = protocol.create_request(
        r,
        &RequestPlan {
            uri: &target.uri,
            body: body.framing(),
            as_get: cache_ctx.as_ref().is_some_and(|c| c.as_get),
            cache_headers: cache_headers.as_ref().map(|h| &h[..]),
        },
    );
    let client_head = *r.method() == Method::Head;
    let mut u = Upstream {
        site,
        client,
        files,
        conf,
        target,
        protocol,
        request: created.head,
        body,
        head_request: created.head_request,
        cache: cache_ctx,
    };
    let mut out = tries::exchange(r, &mut u).await;
    cache::machine::finish(r, u.cache.as_deref());
    if client_head && !u.head_request {
        // A HEAD fetched as GET for the cache: the client gets the head;
        // the body is still read to the end, so that it is stored.
        if let Proxied::Reply(rep) = &mut out {
            if let Body::Stream(source) = std::mem::replace(&mut rep.body, Body::Empty) {
                tokio::task::spawn_local(finish::drain(source));
            }
        }
    }
    out
}
