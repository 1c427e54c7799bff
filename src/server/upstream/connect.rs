//! One try with one peer (`ngx_http_upstream_connect`): an idle connection
//! of the keep-alive cache or a new one (with TLS when the target says
//! so), the request sent, the response head read.
//!
//! Owns: [`try_peer`] and what a try gets ([`Got`], [`GotHead`]). Must not:
//! decide what a failure leads to ([`super::tries`]).

use std::time::Instant;

use crate::config::model::NextUpstream;
use crate::log::Level;
use crate::metrics::timed;
use crate::upstream::PeerSpec;
use crate::upstream::conn::Conn;
use crate::upstream::head::ResponseHead;
use crate::upstream::keepalive::{Key, Usage};

use super::protocol::Protocol;
use super::tls::{self, TlsFailure};
use super::tries::{Failure, upstream_failure};
use super::{Upstream, body, head};
use crate::server::core::request::{Req, UpstreamTry};

/// A response head and what came with it.
pub struct GotHead {
    /// The connection, to read the body from.
    pub conn: Conn,
    /// The head.
    pub head: ResponseHead,
    /// What was read: the head's bytes as received (stored in a cache
    /// entry), then the body's first bytes.
    pub buf: Vec<u8>,
    /// Where the head ends in `buf`.
    pub head_len: usize,
    /// No head came: the answer is all body (HTTP/0.9), and this is what
    /// to log about it.
    pub headless: Option<&'static str>,
    /// The connection's use so far (the keep-alive limits).
    pub usage: Usage,
    /// Where the connection goes back, when the group keeps connections.
    pub keepalive_key: Option<Key>,
    /// Seconds to the head (`$upstream_header_time`).
    pub header_time: f64,
    /// Bytes read so far (`$upstream_bytes_received`).
    pub bytes_received: u64,
}

/// What a try got.
pub enum Got {
    /// A response head.
    Response(Box<GotHead>),
    /// The client went away while waiting.
    Aborted,
}

/// The `*_next_upstream` condition of a connect or handshake failure.
fn condition(timed_out: bool) -> NextUpstream {
    if timed_out {
        NextUpstream::TIMEOUT
    } else {
        NextUpstream::ERROR
    }
}

/// One try with `spec`: connect (or reuse), send, read the head.
pub async fn try_peer<P: Protocol>(
    r: &mut Req<'_>,
    u: &mut Upstream<'_, '_, '_, P>,
    spec: &PeerSpec,
    attempt: &mut UpstreamTry,
    t0: Instant,
) -> Result<Got, Failure> {
    let group = &u.target.group;
    let key = group.keepalive.map(|_| Key {
        group: group.name.clone(),
        peer: spec.addr.clone(),
        tls: u.target.tls.as_ref().map(|t| t.key.clone()),
    });
    let reused = key
        .as_ref()
        .and_then(|k| crate::upstream::idle::take(&u.site.shared.keepalive, k, t0));
    let from_cache = reused.is_some();
    let (conn, usage) = match reused {
        Some(c) => c,
        None => {
            // The handshake has what the connect left of
            // `*_connect_timeout`, as nginx's write timer runs on.
            let deadline = Instant::now() + u.conf.connect_timeout;
            let mut conn =
                Conn::connect(&spec.addr, u.conf.connect_timeout, u.conf.socket_keepalive)
                    .await
                    .map_err(|e| Failure {
                        request_sent: false,
                        ..upstream_failure(
                            condition(e.timed_out),
                            format!("{} while connecting to upstream", e.message),
                        )
                    })?;
            if let Some(t) = &u.target.tls {
                conn = tls::connect(u.site, conn, t, &spec.name, deadline)
                    .await
                    .map_err(|e| match e {
                        TlsFailure::Handshake(e) => Failure {
                            level: e.level,
                            request_sent: false,
                            ..upstream_failure(
                                condition(e.timed_out),
                                format!("{} while SSL handshaking to upstream", e.message),
                            )
                        },
                        // Before the handshake, nginx's action is still
                        // "connecting to upstream".
                        TlsFailure::Certificate(message) => Failure {
                            internal: true,
                            request_sent: false,
                            level: Level::Error,
                            ..upstream_failure(
                                NextUpstream::ERROR,
                                format!("{message} while connecting to upstream"),
                            )
                        },
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
    let sent = body::send(r, u, &conn).await.map_err(on_cached)?;
    attempt.bytes_sent = sent;
    let kept = head::Kept { usage, key, t0 };
    head::read(r, u, conn, kept).await.map_err(on_cached)
}
