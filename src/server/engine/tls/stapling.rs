//! OCSP stapling's fetches (nginx's `ngx_ssl_stapling_update` and the
//! OCSP client of `ngx_event_openssl_stapling.c`): when a handshake asks
//! for a certificate's status and its staple is due, a task on the
//! handshake's loop asks the responder — its host resolved by the
//! server's `resolver`, else the addresses found at load (with nginx's
//! warning for a name) — over non-blocking sockets, each address in turn
//! until one answers, within [`ocsp_ask::OCSP_TIMEOUT`]. The answer is checked
//! (`tls::ocsp::verify`) and, when good, becomes the staple that later
//! handshakes send; any failure is logged in nginx's words and tried again
//! five minutes later. The handshake that started the fetch staples
//! nothing new: it never waits for it.

use std::sync::Arc;
use std::time::Duration;

use super::ocsp_ask::{self, Target};
use crate::config::ssl_model::ResponderPlan;
use crate::log::{ErrorLog, Level};
use crate::tls::ocsp::response::CertStatus;
use crate::tls::ocsp::staple::Staple;
use crate::tls::ocsp::verify::{self, Trust};
use crate::tls::unix_now;
use crate::upstream::resolve::Resolver;

/// One certificate's fetch in this generation: the staple it updates (the
/// process's, kept across reloads), and how to reach the responder.
#[derive(Debug)]
pub struct Fetch {
    /// The staple.
    pub staple: Arc<Staple>,
    /// The responder and the checks.
    plan: Arc<ResponderPlan>,
    /// The certificate's file, for the log.
    name: String,
    /// The server's `resolver`, if it has one.
    resolver: Option<Arc<Resolver>>,
    /// `resolver_timeout`.
    resolver_timeout: Duration,
}

impl Fetch {
    /// The fetch of `staple` from the responder `plan` names.
    pub fn new(
        staple: Arc<Staple>,
        plan: Arc<ResponderPlan>,
        name: String,
        resolver: Option<Arc<Resolver>>,
        resolver_timeout: Duration,
    ) -> Fetch {
        Fetch {
            staple,
            plan,
            name,
            resolver,
            resolver_timeout,
        }
    }
}

/// On the loop of a handshake that asks for the certificate's status:
/// starts a fetch when the staple is due and none is under way.
pub fn kick(fetch: &Arc<Fetch>, log: &ErrorLog) {
    if !fetch.staple.begin(unix_now()) {
        return;
    }
    let (fetch, log) = (fetch.clone(), log.clone());
    tokio::task::spawn_local(async move {
        let mut pending = Pending(Some(fetch.staple.clone()));
        let outcome = run(&fetch, &log).await;
        let now = unix_now();
        match outcome {
            Some((der, valid)) => fetch.staple.store(der, valid, now),
            None => fetch.staple.failed(now),
        }
        pending.0 = None;
    });
}

/// A fetch under way: dropped before it ends (its loop stopped), it lets
/// the next handshake start another.
struct Pending(Option<Arc<Staple>>);

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(s) = self.0.take() {
            s.abandoned();
        }
    }
}

/// The answer's DER and until when it may be stapled, or `None` (logged).
async fn run(f: &Fetch, log: &ErrorLog) -> Option<(Vec<u8>, i64)> {
    let target = Target {
        host: &f.plan.host,
        port: f.plan.port,
        uri: &f.plan.uri,
        addrs: &f.plan.addrs,
        resolver: f.resolver.as_ref(),
        resolver_timeout: f.resolver_timeout,
        name: Some(&f.name),
    };
    let (peer, body) = ocsp_ask::ask(&target, &f.plan.id.request(), log).await?;
    let trust = Trust {
        chain: &f.plan.chain,
        trusted: &f.plan.trusted,
        verify: f.plan.verify,
        trust_other: true,
    };
    let err = |msg: String| {
        log.log(
            Level::Error,
            None,
            format_args!("{msg}{}", target.context(Some(peer))),
        );
    };
    match verify::check(&body, &f.plan.id, &trust, unix_now()) {
        Err(msg) => {
            err(msg);
            None
        }
        Ok(v) if v.status != CertStatus::Good => {
            err(format!(
                "certificate status \"{}\" in the OCSP response",
                v.status.name()
            ));
            None
        }
        Ok(v) => Some((body, v.valid)),
    }
}
