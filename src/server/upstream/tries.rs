//! The try loop (`ngx_http_upstream_connect` and `ngx_http_upstream_next`):
//! pick a peer, try it, and on a failure `*_next_upstream` allows mark it
//! and go to the next, within `*_next_upstream_tries` and
//! `*_next_upstream_timeout`; a non-idempotent request once sent goes
//! nowhere else without `non_idempotent`.
//!
//! Owns: [`Failure`] (why one try failed, in nginx's words), the loop
//! ([`exchange`]) and the rule ([`Tries::may_retry`]). Must not: connect or
//! read itself ([`super::connect`], [`super::head`]) or decide what the
//! cache makes of a failure ([`super::cache::machine`]).

use std::time::Instant;

use crate::config::model::NextUpstream;
use crate::http::request::Method;
use crate::http::status::Status;
use crate::log::Level;
use crate::log::context::LogText;
use crate::metrics::timed;
use crate::upstream::{Outcome, PeerId, Pick, PickCtx, Tried};

use super::body::{BodyPlan, body_failure_reply};
use super::cache::machine;
use super::connect::{self, Got};
use super::groups::Group;
use super::protocol::Protocol;
use super::{Proxied, Upstream, UpstreamConf, reply, respond};
use crate::server::core::reply::Reply;
use crate::server::core::request::{Req, UpstreamTry};

/// Why one try failed, as `*_next_upstream` names the conditions.
pub struct Failure {
    /// The condition.
    pub kind: NextUpstream,
    /// What to log (nginx's words, without the context).
    pub message: String,
    /// The level to log it at.
    pub level: Level,
    /// The client's own failure (its body): this status, no next server.
    pub client_status: Option<Option<Status>>,
    /// Ours, not the upstream's (a client certificate named with variables
    /// that cannot be loaded): a 500, no next server, the peer not marked,
    /// as nginx's `ngx_http_upstream_ssl_init_connection` finalizes the
    /// request with `NGX_HTTP_INTERNAL_SERVER_ERROR`.
    pub internal: bool,
    /// Whether the request had started to go out (nginx's
    /// `u->request_sent`): a non-idempotent one may then not be sent again
    /// without `non_idempotent`; one whose connect failed may.
    pub request_sent: bool,
    /// The connection came from the keep-alive cache (nginx's
    /// `u->peer.cached`): an error on it does not use up a try.
    pub cached: bool,
}

/// A failure of the upstream's (`kind` says which).
pub fn upstream_failure(kind: NextUpstream, message: impl Into<String>) -> Failure {
    Failure {
        kind,
        message: message.into(),
        level: Level::Error,
        client_status: None,
        internal: false,
        request_sent: true,
        cached: false,
    }
}

/// Where the tries of one exchange stand.
pub struct Tries {
    /// The peers tried (the balancer's state).
    pub tried: Tried,
    /// Tries made that count.
    attempts: u32,
    /// When the first try began (`*_next_upstream_timeout`).
    started: Instant,
}

impl Tries {
    /// Whether a failure of kind `ft` may go to the next server
    /// (`ngx_http_upstream_next`): the condition is configured, tries and
    /// time are left, and the request can be sent again (a body streamed
    /// from the client cannot; a non-idempotent method that was sent only
    /// with `non_idempotent`).
    fn may_retry(
        &self,
        conf: &UpstreamConf<'_>,
        r: &Req<'_>,
        body: &BodyPlan,
        ft: NextUpstream,
        request_sent: bool,
    ) -> bool {
        let next = conf.next_upstream;
        if next.contains(NextUpstream::OFF) || !next.contains(ft) {
            return false;
        }
        if self.tried.remaining() == 0 {
            return false;
        }
        let tries = conf.next_upstream_tries;
        if tries != 0 && self.attempts >= tries {
            return false;
        }
        let timeout = conf.next_upstream_timeout;
        if !timeout.is_zero() && timed::since(self.started) >= timeout {
            return false;
        }
        if let BodyPlan::Stream { started: true, .. } = body {
            return false;
        }
        let idempotent = !matches!(r.method(), Method::Post | Method::Patch)
            && !matches!(r.method(), Method::Other(m) if m == "LOCK");
        idempotent || !request_sent || next.contains(NextUpstream::NON_IDEMPOTENT)
    }

    /// Gives the peer back to its balancer; logs when a failure takes it
    /// out, with what the connection was doing (`action`: `connecting to
    /// upstream`, `SSL handshaking to upstream`, …), as nginx's log does.
    fn release(
        &mut self,
        r: &Req<'_>,
        group: &Group,
        peer: PeerId,
        outcome: Outcome,
        (action, ctx): (&str, &LogText),
    ) {
        if group
            .peers
            .done(&mut self.tried, peer, outcome, timed::now())
        {
            r.error_log().log(
                Level::Warn,
                Some(r.conn_no),
                format_args!("upstream server temporarily disabled while {action}{ctx}"),
            );
        }
    }
}

/// The `*_next_upstream` condition a status is, if any.
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

/// The tries: pick, connect, send, read the head; the next server on a
/// failure `*_next_upstream` allows.
pub async fn exchange<'a, P: Protocol>(
    r: &mut Req<'a>,
    u: &mut Upstream<'_, '_, 'a, P>,
) -> Proxied {
    let group = u.target.group.clone();
    let started = timed::now();
    let mut tries = Tries {
        tried: Tried::new(&group.peers),
        attempts: 0,
        started,
    };
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
        let peer = match group.peers.pick(&ctx, &mut tries.tried, now) {
            Pick::Peer(p) => p,
            Pick::NoLive => {
                r.error_log().log(
                    Level::Error,
                    Some(r.conn_no),
                    format_args!(
                        "no live upstreams while connecting to upstream{}",
                        u.context(r, &group.name)
                    ),
                );
                r.upstream.tries.push(UpstreamTry {
                    addr: group.name.clone(),
                    status: Some(502),
                    ..UpstreamTry::default()
                });
                return machine::failed(r, u.cache.as_deref_mut(), NextUpstream::ERROR, 502);
            }
        };
        tries.attempts += 1;
        let spec = group.peers.spec(peer);
        // The error log's context is made where a line may be written, not
        // for every try: a try that succeeds seldom needs it.
        let mut attempt = UpstreamTry {
            addr: spec.name.clone(),
            ..UpstreamTry::default()
        };
        let t0 = now;
        let result = connect::try_peer(r, u, spec, &mut attempt, t0).await;
        attempt.response_time = Some(timed::since(t0).as_secs_f64());
        match result {
            Ok(Got::Response(got)) => {
                // A status `*_next_upstream` names goes to the next server
                // while there is one.
                let ft = status_condition(got.head.status);
                let retry = ft.is_some_and(|ft| {
                    tries.may_retry(&u.conf, r, &u.body, ft, true) && tries.tried.remaining() > 1
                });
                attempt.status = Some(got.head.status);
                if let (true, Some(ft)) = (retry, ft) {
                    let outcome = if ft == NextUpstream::HTTP_403 || ft == NextUpstream::HTTP_404 {
                        Outcome::Ok
                    } else {
                        Outcome::Failed
                    };
                    r.upstream.tries.push(attempt);
                    group.record(peer, outcome == Outcome::Ok, timed::since(t0));
                    let ctx_text = u.context(r, &spec.name);
                    let action = "reading response header from upstream";
                    tries.release(r, &group, peer, outcome, (action, &ctx_text));
                    continue;
                }
                if let Some(rep) = machine::answer(r, u, &got, ft).await {
                    group.record(peer, true, timed::since(t0));
                    group
                        .peers
                        .done(&mut tries.tried, peer, Outcome::Ok, timed::now());
                    r.upstream.tries.push(attempt);
                    return rep;
                }
                // Its response time is known when its body ends.
                attempt.response_time = None;
                let chosen = respond::Chosen {
                    peer,
                    name: &spec.name,
                    tried: tries.tried,
                    attempt,
                    started: t0,
                };
                return respond::respond(r, u, chosen, got);
            }
            Ok(Got::Aborted) => {
                attempt.status = None;
                r.upstream.tries.push(attempt);
                group
                    .peers
                    .done(&mut tries.tried, peer, Outcome::Ok, timed::now());
                return reply(Reply::aborted(Status(499)));
            }
            Err(f) => {
                let ctx_text = u.context(r, &spec.name);
                r.error_log().log(
                    f.level,
                    Some(r.conn_no),
                    format_args!("{}{ctx_text}", f.message),
                );
                if f.client_status.is_some() || f.internal {
                    // The client's body failed, or the request itself: not
                    // the upstream's fault, and no next server.
                    r.upstream.tries.push(attempt);
                    group
                        .peers
                        .done(&mut tries.tried, peer, Outcome::Ok, timed::now());
                    return reply(match f.client_status {
                        Some(status) => body_failure_reply(status),
                        None => Reply::special(Status::INTERNAL_SERVER_ERROR),
                    });
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
                tries.release(r, &group, peer, Outcome::Failed, (action, &ctx_text));
                if f.cached && f.kind == NextUpstream::ERROR {
                    // A kept-alive connection the peer had closed: the
                    // next try is free, even with a lone peer.
                    tries.tried.add_try();
                    tries.attempts -= 1;
                }
                if tries.may_retry(&u.conf, r, &u.body, f.kind, f.request_sent)
                    && tries.tried.remaining() > 0
                {
                    continue;
                }
                return machine::failed(r, u.cache.as_deref_mut(), f.kind, status);
            }
        }
    }
}
