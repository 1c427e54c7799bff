//! The checks between finding a location and producing its content, in
//! nginx's phase order:
//!
//! - post-read ([`post_read`], once per request, before the server's
//!   rewrites): `realip` with the server's settings;
//! - pre-access ([`check`]): `realip` with the location's settings, then
//!   `limit_req` (which may delay the request: the walk waits on a timer),
//!   then `limit_conn`;
//! - access: `allow`/`deny`, then `auth_basic` (which reads the password
//!   file through the file layer: the walk waits on it, [`wait`]), combined
//!   by `satisfy all | any`, then nginx's post-access verdict.
//!
//! nginx's handlers keep their per-request state on the main request
//! (`r->main->limit_req_status` …): here it is [`ReqAccess`], a field of
//! the request, so an internal redirect checks access again but does not
//! count the request against a limit twice.
//!
//! This module decides; it does not send, and it never waits on the loop.
//!
//! Its rooms: `phase` (the access phase and `satisfy`), `limits` (the
//! `limit_req` and `limit_conn` handlers) over [`limit_req`],
//! [`limit_conn`] (the zones' tables, sized by `slab`, each behind a
//! [`zone_table::SharedTable`]) and [`zones`] (the tables across reloads); [`auth_basic`] with [`crypt`] and `base64`;
//! [`realip`].

pub mod auth_basic;
mod base64;
pub mod crypt;
pub mod limit_conn;
pub mod limit_req;
mod limits;
mod phase;
pub mod realip;
pub mod secure_link;
mod slab;
pub mod zone_table;
pub mod zones;

use std::borrow::Cow;
use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::config::access_model::Satisfy;
use crate::config::inherit::LocConf;
use crate::config::vars::Builtin;
use crate::http::status::Status;
use crate::io::file::FileLayer;
use crate::log::Level;

use crate::server::core::reply::Reply;
use crate::server::core::request::Req;
use crate::server::core::site::Site;
use crate::server::engine::client::Client;
use crate::server::engine::client_addr::ClientAddr;

pub use limits::{LimitConnStatus, LimitReqStatus, MAX_CONN_KEY, MAX_REQ_KEY};
use limits::{limit_connections, limit_requests};
use phase::{access_phase, post_access, refused};

/// 401, which an access module answers for missing or wrong credentials.
const UNAUTHORIZED: Status = Status::UNAUTHORIZED;
/// nginx's 499: the client closed the connection before the answer.
const CLIENT_CLOSED: Status = Status(499);

/// What the access modules know about one request.
#[derive(Debug, Default)]
pub struct ReqAccess {
    /// The connection's own address, once `realip` replaced the request's
    /// (`$realip_remote_addr`, `$realip_remote_port`).
    pub realip_original: Option<ClientAddr>,
    /// What `limit_req` decided (set once per request).
    pub limit_req: Option<LimitReqStatus>,
    /// What `limit_conn` decided (set once per request).
    pub limit_conn: Option<LimitConnStatus>,
    /// The `limit_conn` counts this request holds until it is done (see
    /// [`ReqAccess::release`]); a `RefCell` because the end of a request
    /// sees it through `&Req`.
    conn_guards: RefCell<Vec<limit_conn::Guard>>,
}

impl ReqAccess {
    /// Gives back the `limit_conn` counts the request holds: its response
    /// is sent (or abandoned) and its log line made. nginx frees them with
    /// the request, right after writing its log line; nowait's connection
    /// may still wait for the log writer (a closing connection, up to
    /// `access_log::CLOSE_WAIT_FOR_LOG`), and must not hold the counts
    /// meanwhile: the client's next request, on another connection, would
    /// be refused (limit_conn.t, "passed").
    pub fn release(&self) {
        self.conn_guards.borrow_mut().clear();
    }
}

/// What the checks concluded.
pub enum Verdict {
    /// Go on to the content.
    Pass,
    /// Answer this instead (403, 401, 503 …; `error_page` applies).
    Deny(Box<Reply>),
    /// Wait, then call [`wait`].
    Wait(Wait),
}

/// What the walk must wait on before the checks can finish.
pub enum Wait {
    /// `limit_req` delays the request.
    Delay(Duration),
    /// `auth_basic` must read the password file.
    Auth(Box<AuthWait>),
    /// A 401 waits `auth_delay` before it is sent.
    Unauthorized(Duration, Box<Reply>),
}

/// An `auth_basic` check waiting on its password file.
pub struct AuthWait {
    creds: auth_basic::Credentials,
    realm: Vec<u8>,
    path: PathBuf,
    /// The reply `satisfy any` keeps so far (nginx's `r->access_code`).
    code: Option<Reply>,
}

/// The post-read phase: `realip` with the server's settings.
pub fn post_read(r: &mut Req<'_>) {
    let conf = &r.server.conf;
    apply_realip(r, conf);
}

/// The pre-access and access phases, as far as they go without waiting.
pub fn check(site: &Site, r: &mut Req<'_>) -> Verdict {
    if !r.is_main() {
        // nginx's access phase passes a subrequest by (`r != r->main`), and
        // its limits count the main request once (`r->main->limit_*`).
        return Verdict::Pass;
    }
    let conf = r.conf;
    apply_realip(r, conf);
    if let Some(v) = limit_requests(site, r) {
        return v;
    }
    if let Some(reply) = limit_connections(site, r) {
        return Verdict::Deny(Box::new(reply));
    }
    access_phase(site, r)
}

/// Finishes what [`check`] left waiting (`files` reads the password file;
/// a client that closes during a delay ends the request with 499).
pub async fn wait(
    site: &Site,
    r: &mut Req<'_>,
    w: Wait,
    files: FileLayer<'_>,
    client: &Client<'_>,
) -> Verdict {
    match w {
        Wait::Delay(d) => {
            if let Some(v) = delay(r, d, client).await {
                return v;
            }
            check(site, r)
        }
        Wait::Unauthorized(d, reply) => match delay(r, d, client).await {
            Some(v) => v,
            None => Verdict::Deny(reply),
        },
        Wait::Auth(a) => {
            let AuthWait {
                creds,
                realm,
                path,
                mut code,
            } = *a;
            match auth_basic::check(r, files, &path, &creds, &realm).await {
                auth_basic::Checked::Ok => {
                    if r.conf.satisfy == Satisfy::Any {
                        return Verdict::Pass;
                    }
                }
                auth_basic::Checked::Reply(reply) => {
                    if let Some(v) = refused(r, &mut code, *reply) {
                        return v;
                    }
                }
            }
            post_access(r, code)
        }
    }
}

/// Waits `d` on a timer, watching the client as nginx does while a request
/// is delayed: `Some` (499, nothing sent) when it closes meanwhile.
async fn delay(r: &Req<'_>, d: Duration, client: &Client<'_>) -> Option<Verdict> {
    let timer = tokio::time::sleep(d);
    tokio::pin!(timer);
    tokio::select! {
        _ = &mut timer => return None,
        closed = client.closed() => {
            if closed {
                log(r, Level::Info, format_args!("client prematurely closed connection"));
                return Some(Verdict::Deny(Box::new(Reply::aborted(CLIENT_CLOSED))));
            }
        }
    }
    timer.await;
    None
}

/// The variables of the access modules.
pub fn var<'s>(r: &'s Req<'_>, b: Builtin) -> Option<Cow<'s, [u8]>> {
    let owned = |s: String| Some(Cow::Owned(s.into_bytes()));
    let counters = crate::metrics::connections::snapshot;
    match b {
        Builtin::RealipRemoteAddr => owned(
            r.access
                .realip_original
                .as_ref()
                .unwrap_or(&r.peer)
                .to_string(),
        ),
        Builtin::RealipRemotePort => {
            let port = r.access.realip_original.as_ref().unwrap_or(&r.peer).port();
            owned(if port == 0 {
                String::new()
            } else {
                port.to_string()
            })
        }
        Builtin::LimitReqStatus => Some(Cow::Borrowed(r.access.limit_req?.as_str().as_bytes())),
        Builtin::LimitConnStatus => Some(Cow::Borrowed(r.access.limit_conn?.as_str().as_bytes())),
        Builtin::ConnectionsActive => owned(counters().active.to_string()),
        Builtin::ConnectionsReading => owned(counters().reading.to_string()),
        Builtin::ConnectionsWriting => owned(counters().writing.to_string()),
        Builtin::ConnectionsWaiting => owned(counters().waiting.to_string()),
        _ => None,
    }
}

/// `realip`: once per request, the header's address replaces the
/// request's when the peer is trusted.
fn apply_realip(r: &mut Req<'_>, conf: &LocConf) {
    if r.access.realip_original.is_some() {
        return;
    }
    if let Some(addr) = realip::real_addr(conf, r.head, &r.peer) {
        r.access.realip_original = Some(std::mem::replace(&mut r.peer, ClientAddr::Inet(addr)));
    }
}

/// Milliseconds on the process's clock (nginx's `ngx_current_msec`).
fn now_ms() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    crate::metrics::timed::now()
        .saturating_duration_since(epoch)
        .as_millis() as u64
}

/// Logs `msg` with the request's context to its location's error log
/// (nginx's `r->connection->log` once the location is found).
fn log(r: &Req<'_>, level: Level, msg: std::fmt::Arguments<'_>) {
    r.error_log().log(
        level,
        Some(r.conn_no),
        format_args!("{msg}{}", r.log_context()),
    );
}
