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

pub mod auth_basic;
mod base64;
pub mod crypt;
pub mod limit_conn;
pub mod limit_req;
pub mod realip;
mod slab;
pub mod zones;

use std::borrow::Cow;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::config::access_model::{AccessMatch, Satisfy};
use crate::config::inherit::LocConf;
use crate::config::vars::Builtin;
use crate::http::status::Status;
use crate::io::file::FileLayer;
use crate::log::Level;

use super::client::Client;
use super::reply::Reply;
use super::request::Req;
use super::site::Site;

/// The longest `limit_req` key (nginx keeps its length in 16 bits).
pub const MAX_REQ_KEY: usize = 65535;
/// The longest `limit_conn` key (nginx keeps its length in 8 bits).
pub const MAX_CONN_KEY: usize = 255;
const UNAUTHORIZED: Status = Status::UNAUTHORIZED;
/// nginx's 499: the client closed the connection before the answer.
const CLIENT_CLOSED: Status = Status(499);

/// `$limit_req_status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitReqStatus {
    /// Within the limits.
    Passed,
    /// Delayed.
    Delayed,
    /// Refused.
    Rejected,
    /// Would have been delayed (`limit_req_dry_run`).
    DelayedDryRun,
    /// Would have been refused (`limit_req_dry_run`).
    RejectedDryRun,
}

impl LimitReqStatus {
    /// The variable's value.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitReqStatus::Passed => "PASSED",
            LimitReqStatus::Delayed => "DELAYED",
            LimitReqStatus::Rejected => "REJECTED",
            LimitReqStatus::DelayedDryRun => "DELAYED_DRY_RUN",
            LimitReqStatus::RejectedDryRun => "REJECTED_DRY_RUN",
        }
    }
}

/// `$limit_conn_status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitConnStatus {
    /// Counted within the limit.
    Passed,
    /// Refused.
    Rejected,
    /// Would have been refused (`limit_conn_dry_run`).
    RejectedDryRun,
}

impl LimitConnStatus {
    /// The variable's value.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitConnStatus::Passed => "PASSED",
            LimitConnStatus::Rejected => "REJECTED",
            LimitConnStatus::RejectedDryRun => "REJECTED_DRY_RUN",
        }
    }
}

/// What the access modules know about one request.
#[derive(Debug, Default)]
pub struct ReqAccess {
    /// The connection's own address, once `realip` replaced the request's
    /// (`$realip_remote_addr`, `$realip_remote_port`).
    pub realip_original: Option<SocketAddr>,
    /// What `limit_req` decided (set once per request).
    pub limit_req: Option<LimitReqStatus>,
    /// What `limit_conn` decided (set once per request).
    pub limit_conn: Option<LimitConnStatus>,
    /// The `limit_conn` counts this request holds until it is freed.
    conn_guards: Vec<limit_conn::Guard>,
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
            if let Some(v) = delay(site, r, d, client).await {
                return v;
            }
            check(site, r)
        }
        Wait::Unauthorized(d, reply) => match delay(site, r, d, client).await {
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
            match auth_basic::check(site, r, files, &path, &creds, &realm).await {
                auth_basic::Checked::Ok => {
                    if r.conf.satisfy == Satisfy::Any {
                        return Verdict::Pass;
                    }
                }
                auth_basic::Checked::Reply(reply) => {
                    if let Some(v) = refused(site, r, &mut code, *reply) {
                        return v;
                    }
                }
            }
            post_access(site, r, code)
        }
    }
}

/// Waits `d` on a timer, watching the client as nginx does while a request
/// is delayed: `Some` (499, nothing sent) when it closes meanwhile.
async fn delay(site: &Site, r: &Req<'_>, d: Duration, client: &Client<'_>) -> Option<Verdict> {
    let timer = tokio::time::sleep(d);
    tokio::pin!(timer);
    tokio::select! {
        _ = &mut timer => return None,
        closed = client.closed() => {
            if closed {
                log(site, r, Level::Info, format_args!("client prematurely closed connection"));
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
        Builtin::RealipRemoteAddr => {
            owned(r.access.realip_original.unwrap_or(r.peer).ip().to_string())
        }
        Builtin::RealipRemotePort => {
            let port = r.access.realip_original.unwrap_or(r.peer).port();
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
    if let Some(addr) = realip::real_addr(conf, r.head, r.peer) {
        r.access.realip_original = Some(r.peer);
        r.peer = addr;
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

/// The level nginx logs delays at: one less severe than refusals.
fn delay_level(level: Level) -> Level {
    match level {
        Level::Error => Level::Warn,
        Level::Warn => Level::Notice,
        _ => Level::Info,
    }
}

fn log(site: &Site, r: &Req<'_>, level: Level, msg: std::fmt::Arguments<'_>) {
    site.error_log.log(
        level,
        Some(r.conn_no),
        format_args!("{msg}{}", r.log_context()),
    );
}

/// What one lookup of `limit_requests` concluded (nginx's `rc`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rc {
    Declined,
    Again,
    Ok,
    Busy,
    Error,
}

/// `ngx_http_limit_req_handler`: `None` when the request goes on at once.
fn limit_requests(site: &Site, r: &mut Req<'_>) -> Option<Verdict> {
    let conf = r.conf;
    if r.access.limit_req.is_some() || conf.limit_req.is_empty() {
        return None;
    }
    let limits = &conf.limit_req;
    let zones = &site.limits.req;
    let now = now_ms();
    // The keys a non-final lookup counted (nginx's `ctx->node`).
    let mut held: Vec<(usize, Vec<u8>)> = Vec::new();
    let (mut rc, mut excess, mut at) = (Rc::Declined, 0u64, 0usize);
    for (n, l) in limits.iter().enumerate() {
        at = n;
        let Some(zone) = zones.get(&l.zone) else {
            continue;
        };
        let key = r.expand(&zone.key);
        if key.is_empty() {
            continue;
        }
        if key.len() > MAX_REQ_KEY {
            log(
                site,
                r,
                Level::Error,
                format_args!(
                    "the value of the \"{}\" key is more than {MAX_REQ_KEY} bytes: \"{}\"",
                    zone.key_source,
                    String::from_utf8_lossy(&key)
                ),
            );
            continue;
        }
        let last = n == limits.len() - 1;
        let found = zone
            .table
            .lock()
            .lookup(zone.rate, l.burst, &key, now, last);
        (rc, excess) = match found {
            limit_req::Lookup::Again(e) => {
                held.push((n, key));
                (Rc::Again, e)
            }
            limit_req::Lookup::Ok(e) => (Rc::Ok, e),
            limit_req::Lookup::Busy(e) => (Rc::Busy, e),
            limit_req::Lookup::NoMemory => {
                site.error_log.log(
                    Level::Alert,
                    None,
                    format_args!("could not allocate node in limit_req zone \"{}\"", l.zone),
                );
                (Rc::Error, 0)
            }
        };
        if rc != Rc::Again {
            break;
        }
    }
    let dry = conf.limit_req_dry_run;
    let dry_text = if dry { ", dry run" } else { "" };
    match rc {
        Rc::Declined => return None,
        Rc::Busy | Rc::Error => {
            if rc == Rc::Busy {
                log(
                    site,
                    r,
                    conf.limit_req_log_level,
                    format_args!(
                        "limiting requests{dry_text}, excess: {}.{:03} by zone \"{}\"",
                        excess / 1000,
                        excess % 1000,
                        limits[at].zone
                    ),
                );
            }
            for (n, key) in &held {
                if let Some(z) = zones.get(&limits[*n].zone) {
                    z.table.lock().unlock(key);
                }
            }
            if dry {
                r.access.limit_req = Some(LimitReqStatus::RejectedDryRun);
                return None;
            }
            r.access.limit_req = Some(LimitReqStatus::Rejected);
            return Some(Verdict::Deny(Box::new(Reply::special(Status(
                conf.limit_req_status,
            )))));
        }
        Rc::Again => excess = 0,
        Rc::Ok => {}
    }
    // `ngx_http_limit_req_account`.
    let rate_of = |n: usize| zones.get(&limits[n].zone).map_or(1, |z| z.rate.max(1));
    let mut max_delay = match excess.checked_sub(limits[at].delay) {
        Some(over) if over > 0 => over * 1000 / rate_of(at),
        _ => 0,
    };
    for (n, key) in held.iter().rev() {
        let Some(z) = zones.get(&limits[*n].zone) else {
            continue;
        };
        let e = z.table.lock().account(z.rate, key, now);
        if e <= limits[*n].delay {
            continue;
        }
        let delay = (e - limits[*n].delay) * 1000 / z.rate.max(1);
        if delay > max_delay {
            (max_delay, excess, at) = (delay, e, *n);
        }
    }
    if max_delay == 0 {
        r.access.limit_req = Some(LimitReqStatus::Passed);
        return None;
    }
    log(
        site,
        r,
        delay_level(conf.limit_req_log_level),
        format_args!(
            "delaying request{dry_text}, excess: {}.{:03}, by zone \"{}\"",
            excess / 1000,
            excess % 1000,
            limits[at].zone
        ),
    );
    if dry {
        r.access.limit_req = Some(LimitReqStatus::DelayedDryRun);
        return None;
    }
    r.access.limit_req = Some(LimitReqStatus::Delayed);
    Some(Verdict::Wait(Wait::Delay(Duration::from_millis(max_delay))))
}

/// `ngx_http_limit_conn_handler`: the refusal, if any.
fn limit_connections(site: &Site, r: &mut Req<'_>) -> Option<Reply> {
    let conf = r.conf;
    if r.access.limit_conn.is_some() {
        return None;
    }
    for l in &conf.limit_conn {
        let Some(zone) = site.limits.conn.get(&l.zone) else {
            continue;
        };
        let key = r.expand(&zone.key);
        if key.is_empty() {
            continue;
        }
        if key.len() > MAX_CONN_KEY {
            log(
                site,
                r,
                Level::Error,
                format_args!(
                    "the value of the \"{}\" key is more than {MAX_CONN_KEY} bytes: \"{}\"",
                    zone.key_source,
                    String::from_utf8_lossy(&key)
                ),
            );
            continue;
        }
        r.access.limit_conn = Some(LimitConnStatus::Passed);
        match limit_conn::Guard::acquire(&zone.table, &key, l.conn) {
            Ok(g) => r.access.conn_guards.push(g),
            Err(why) => {
                if why == limit_conn::Acquire::Over {
                    let dry = if conf.limit_conn_dry_run {
                        ", dry run,"
                    } else {
                        ""
                    };
                    log(
                        site,
                        r,
                        conf.limit_conn_log_level,
                        format_args!("limiting connections{dry} by zone \"{}\"", l.zone),
                    );
                }
                // The counts this request took so far go back.
                r.access.conn_guards.clear();
                if conf.limit_conn_dry_run {
                    r.access.limit_conn = Some(LimitConnStatus::RejectedDryRun);
                    return None;
                }
                r.access.limit_conn = Some(LimitConnStatus::Rejected);
                return Some(Reply::special(Status(conf.limit_conn_status)));
            }
        }
    }
    None
}

/// What `allow`/`deny` say about the request's address: `None` when no
/// rule of its family applies (`ngx_http_access_handler`).
fn rules_allow(conf: &LocConf, peer: SocketAddr) -> Option<bool> {
    let ip = match peer.ip() {
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => std::net::IpAddr::V4(v4),
            None => std::net::IpAddr::V6(v6),
        },
        v4 => v4,
    };
    conf.access_rules
        .iter()
        .find(|rule| match rule.matches {
            AccessMatch::All => true,
            AccessMatch::Unix => false,
            AccessMatch::Cidr(c) => c.contains(ip),
        })
        .map(|rule| !rule.deny)
}

/// A 401 or 403 from an access module: under `satisfy all` it is the
/// answer; under `any` it is kept (a 401 over a 403) and the next module
/// asked. Anything else (500) is the answer either way. `Some`: the answer.
fn settle(satisfy: Satisfy, code: &mut Option<Reply>, reply: Reply) -> Option<Reply> {
    let status = reply.status;
    if satisfy == Satisfy::All || (status != UNAUTHORIZED && status != Status::FORBIDDEN) {
        return Some(reply);
    }
    if code.as_ref().map(|c| c.status) != Some(UNAUTHORIZED) {
        *code = Some(reply);
    }
    None
}

/// [`settle`], with the answer made final by [`deny`].
fn refused(site: &Site, r: &Req<'_>, code: &mut Option<Reply>, reply: Reply) -> Option<Verdict> {
    settle(r.conf.satisfy, code, reply).map(|reply| deny(site, r, reply))
}

/// The final refusal of the access phase: a 401 waits `auth_delay` first
/// (`ngx_http_core_auth_delay`), so that guessing passwords is slow.
fn deny(site: &Site, r: &Req<'_>, reply: Reply) -> Verdict {
    let delay = r.conf.auth_delay;
    if reply.status != UNAUTHORIZED || delay.is_zero() {
        return Verdict::Deny(Box::new(reply));
    }
    log(
        site,
        r,
        Level::Info,
        format_args!("delaying unauthorized request"),
    );
    Verdict::Wait(Wait::Unauthorized(delay, Box::new(reply)))
}

/// The access phase: `allow`/`deny`, then `auth_basic`.
fn access_phase(site: &Site, r: &mut Req<'_>) -> Verdict {
    let conf = r.conf;
    let mut code = None;
    match rules_allow(conf, r.peer) {
        None => {}
        Some(true) if conf.satisfy == Satisfy::Any => return Verdict::Pass,
        Some(true) => {}
        Some(false) => {
            if conf.satisfy == Satisfy::All {
                log(
                    site,
                    r,
                    Level::Error,
                    format_args!("access forbidden by rule"),
                );
            }
            if let Some(v) = refused(site, r, &mut code, Reply::special(Status::FORBIDDEN)) {
                return v;
            }
        }
    }
    if let (Some(realm), Some(file)) = (&conf.auth_basic, &conf.auth_basic_user_file) {
        let realm = r.expand(realm);
        if realm != b"off" {
            match auth_basic::credentials(r.head) {
                None => {
                    log(
                        site,
                        r,
                        Level::Info,
                        format_args!("no user/password was provided for basic authentication"),
                    );
                    if let Some(v) = refused(site, r, &mut code, auth_basic::challenge(&realm)) {
                        return v;
                    }
                }
                Some(creds) => {
                    let path = auth_basic::user_file(site, &r.expand(file));
                    return Verdict::Wait(Wait::Auth(Box::new(AuthWait {
                        creds,
                        realm,
                        path,
                        code,
                    })));
                }
            }
        }
    }
    post_access(site, r, code)
}

/// nginx's post-access phase: under `satisfy any`, the kept refusal when
/// no module allowed.
fn post_access(site: &Site, r: &Req<'_>, code: Option<Reply>) -> Verdict {
    match code {
        None => Verdict::Pass,
        Some(reply) => {
            if reply.status == Status::FORBIDDEN {
                log(
                    site,
                    r,
                    Level::Error,
                    format_args!("access forbidden by rule"),
                );
            }
            Verdict::Deny(Box::new(reply))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::access_model::{AccessRule, parse_cidr};

    fn rules(list: &[(bool, &str)]) -> LocConf {
        LocConf {
            access_rules: list
                .iter()
                .map(|&(deny, m)| AccessRule {
                    deny,
                    matches: match m {
                        "all" => AccessMatch::All,
                        "unix:" => AccessMatch::Unix,
                        c => AccessMatch::Cidr(parse_cidr(c).unwrap().cidr()),
                    },
                })
                .collect(),
            ..LocConf::default()
        }
    }

    fn peer(s: &str) -> SocketAddr {
        SocketAddr::new(s.parse().unwrap(), 1)
    }

    #[test]
    fn the_first_rule_of_the_family_decides() {
        let c = rules(&[(false, "127.0.0.1"), (true, "all")]);
        assert_eq!(rules_allow(&c, peer("127.0.0.1")), Some(true));
        assert_eq!(rules_allow(&c, peer("::ffff:127.0.0.1")), Some(true));
        assert_eq!(rules_allow(&c, peer("10.0.0.1")), Some(false));
        assert_eq!(rules_allow(&c, peer("::1")), Some(false));
        // Rules of another family only: no decision.
        let v4 = rules(&[(true, "10.0.0.0/8"), (true, "unix:")]);
        assert_eq!(rules_allow(&v4, peer("::1")), None);
        assert_eq!(rules_allow(&v4, peer("127.0.0.1")), None);
        assert_eq!(rules_allow(&rules(&[]), peer("127.0.0.1")), None);
    }

    #[test]
    fn satisfy_any_keeps_a_401_over_a_403() {
        let mut code = None;
        let any = Satisfy::Any;
        assert!(settle(any, &mut code, Reply::special(Status::FORBIDDEN)).is_none());
        assert!(settle(any, &mut code, auth_basic::challenge(b"x")).is_none());
        assert!(settle(any, &mut code, Reply::special(Status::FORBIDDEN)).is_none());
        assert_eq!(code.map(|c| c.status), Some(UNAUTHORIZED));
        let error = Reply::special(Status::INTERNAL_SERVER_ERROR);
        assert!(settle(any, &mut None, error).is_some());
        let all = Satisfy::All;
        assert!(settle(all, &mut None, Reply::special(Status::FORBIDDEN)).is_some());
    }

    #[test]
    fn delays_log_one_level_lower() {
        assert_eq!(delay_level(Level::Error), Level::Warn);
        assert_eq!(delay_level(Level::Warn), Level::Notice);
        assert_eq!(delay_level(Level::Notice), Level::Info);
        assert_eq!(delay_level(Level::Info), Level::Info);
    }
}
