//! OCSP stapling's fetches (nginx's `ngx_ssl_stapling_update` and the
//! OCSP client of `ngx_event_openssl_stapling.c`): when a handshake asks
//! for a certificate's status and its staple is due, a task on the
//! handshake's loop asks the responder — its host resolved by the
//! server's `resolver`, else the addresses found at load (with nginx's
//! warning for a name) — over non-blocking sockets, each address in turn
//! until one answers, within [`OCSP_TIMEOUT`]. The answer is checked
//! (`tls::ocsp::verify`) and, when good, becomes the staple that later
//! handshakes send; any failure is logged in nginx's words and tried again
//! five minutes later. The handshake that started the fetch staples
//! nothing new: it never waits for it.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::ocsp_http::{self, Head};
use crate::config::ssl_model::ResponderPlan;
use crate::log::{ErrorLog, Level};
use crate::tls::ocsp::response::CertStatus;
use crate::tls::ocsp::staple::Staple;
use crate::tls::ocsp::verify::{self, Trust};
use crate::tls::unix_now;
use crate::upstream::resolve::Resolver;

/// How long one address may take to connect, take the request and answer
/// (nginx's `staple->timeout`, 60 s, on the read and the write).
pub const OCSP_TIMEOUT: Duration = Duration::from_secs(60);
/// The most of an answer read, head and body (nginx's 16 KiB buffer:
/// what does not fit is cut off, and fails to decode).
pub const MAX_ANSWER: usize = 16384;
/// The read size.
const READ_CHUNK: usize = 4096;

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

/// What nginx's log handler adds to the fetch's messages
/// (`ngx_ssl_ocsp_log_error`).
fn context(f: &Fetch, peer: Option<SocketAddr>) -> String {
    let peer = peer.map(|p| format!(", peer: {p}")).unwrap_or_default();
    format!(
        " while requesting certificate status, responder: {}{peer}, certificate: \"{}\"",
        f.plan.host, f.name
    )
}

/// The answer's DER and until when it may be stapled, or `None` (logged).
async fn run(f: &Fetch, log: &ErrorLog) -> Option<(Vec<u8>, i64)> {
    let request = ocsp_http::request(&f.plan.uri, &f.plan.host, &f.plan.id.request());
    let addrs = addresses(f, log).await?;
    let mut answer = None;
    for addr in addrs {
        if let Some(a) = exchange(f, log, addr, &request).await {
            answer = Some((addr, a));
            break;
        }
    }
    let (peer, (code, body)) = answer?;
    // nginx gives up on any other status without a word.
    if code != 200 {
        return None;
    }
    let trust = Trust {
        chain: &f.plan.chain,
        trusted: &f.plan.trusted,
        verify: f.plan.verify,
    };
    let err = |msg: String| {
        log.log(
            Level::Error,
            None,
            format_args!("{msg}{}", context(f, Some(peer))),
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

/// The responder's addresses: an address literal as it is; a name by the
/// `resolver`, else (warned, as nginx) the addresses found at load.
async fn addresses(f: &Fetch, log: &ErrorLog) -> Option<Vec<SocketAddr>> {
    let host = f.plan.host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(vec![SocketAddr::new(ip, f.plan.port)]);
    }
    let Some(resolver) = &f.resolver else {
        let level = if f.plan.addrs.is_empty() {
            Level::Error
        } else {
            Level::Warn
        };
        log.log(
            level,
            None,
            format_args!(
                "no resolver defined to resolve {}{}",
                f.plan.host,
                context(f, None)
            ),
        );
        return (!f.plan.addrs.is_empty()).then(|| f.plan.addrs.clone());
    };
    match resolver.resolve(&f.plan.host, f.resolver_timeout).await {
        Ok(ips) => Some(
            ips.into_iter()
                .map(|ip| SocketAddr::new(ip, f.plan.port))
                .collect(),
        ),
        Err(e) => {
            log.log(
                Level::Error,
                None,
                format_args!(
                    "{} could not be resolved ({e}){}",
                    f.plan.host,
                    context(f, None)
                ),
            );
            None
        }
    }
}

/// One address asked: the status code and the body, or `None` (logged)
/// to try the next (`ngx_ssl_ocsp_next`).
async fn exchange(
    f: &Fetch,
    log: &ErrorLog,
    addr: SocketAddr,
    request: &[u8],
) -> Option<(u16, Vec<u8>)> {
    let deadline = Instant::now() + OCSP_TIMEOUT;
    let err = |msg: std::fmt::Arguments<'_>| {
        log.log(
            Level::Error,
            None,
            format_args!("{msg}{}", context(f, Some(addr))),
        );
    };
    let timed_out = || {
        err(format_args!(
            "OCSP responder timed out (110: Connection timed out)"
        ))
    };
    let mut sock = match tokio::time::timeout_at(deadline.into(), TcpStream::connect(addr)).await {
        Err(_) => {
            timed_out();
            return None;
        }
        // nginx connects without waiting and learns of a refusal when it
        // reads: it says so, then that the responder closed.
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            err(format_args!(
                "recv() failed ({})",
                crate::config::errno_text(&e)
            ));
            err(format_args!("OCSP responder prematurely closed connection"));
            return None;
        }
        Ok(Err(e)) => {
            err(format_args!(
                "connect() failed ({})",
                crate::config::errno_text(&e)
            ));
            return None;
        }
        Ok(Ok(s)) => s,
    };
    match tokio::time::timeout_at(deadline.into(), sock.write_all(request)).await {
        Err(_) => {
            timed_out();
            return None;
        }
        Ok(Err(e)) => {
            err(format_args!(
                "send() failed ({})",
                crate::config::errno_text(&e)
            ));
            return None;
        }
        Ok(Ok(())) => {}
    }
    let mut buf = Vec::with_capacity(READ_CHUNK);
    let mut chunk = [0u8; READ_CHUNK];
    while buf.len() < MAX_ANSWER {
        let room = (MAX_ANSWER - buf.len()).min(READ_CHUNK);
        match tokio::time::timeout_at(deadline.into(), sock.read(&mut chunk[..room])).await {
            Err(_) => {
                timed_out();
                return None;
            }
            Ok(Err(e)) => {
                err(format_args!(
                    "recv() failed ({})",
                    crate::config::errno_text(&e)
                ));
                break;
            }
            Ok(Ok(0)) => break,
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
        }
        if let Head::Invalid(msg) = ocsp_http::head(&buf) {
            err(format_args!("{msg}"));
            return None;
        }
    }
    match ocsp_http::head(&buf) {
        Head::Done { code, body } => Some((code, buf.split_off(body))),
        Head::Invalid(msg) => {
            err(format_args!("{msg}"));
            None
        }
        Head::Incomplete => {
            err(format_args!("OCSP responder prematurely closed connection"));
            None
        }
    }
}
