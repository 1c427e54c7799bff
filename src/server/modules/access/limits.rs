//! The pre-access limits, in nginx's order: `limit_req`
//! (`ngx_http_limit_req_handler` and `ngx_http_limit_req_account`: which
//! zones' buckets overflow, how long the request waits) and then
//! `limit_conn` (`ngx_http_limit_conn_handler`: counts held while the
//! request is served). Both run once per request, whatever internal
//! redirects follow, and set `$limit_req_status` and `$limit_conn_status`.

use std::time::Duration;

use crate::http::status::Status;
use crate::log::Level;

use super::{Verdict, Wait, limit_conn, limit_req, log, now_ms};
use crate::server::core::reply::Reply;
use crate::server::core::request::Req;
use crate::server::core::site::Site;

/// The longest `limit_req` key (nginx keeps its length in 16 bits).
pub const MAX_REQ_KEY: usize = 65535;
/// The longest `limit_conn` key (nginx keeps its length in 8 bits).
pub const MAX_CONN_KEY: usize = 255;

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

/// The level nginx logs delays at: one less severe than refusals.
fn delay_level(level: Level) -> Level {
    match level {
        Level::Error => Level::Warn,
        Level::Warn => Level::Notice,
        _ => Level::Info,
    }
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
pub(super) fn limit_requests(site: &Site, r: &mut Req<'_>) -> Option<Verdict> {
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
        Some(over) if over > 0 => over.saturating_mul(1000) / rate_of(at),
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
        let delay = (e - limits[*n].delay).saturating_mul(1000) / z.rate.max(1);
        if delay > max_delay {
            (max_delay, excess, at) = (delay, e, *n);
        }
    }
    if max_delay == 0 {
        r.access.limit_req = Some(LimitReqStatus::Passed);
        return None;
    }
    log(
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
pub(super) fn limit_connections(site: &Site, r: &mut Req<'_>) -> Option<Reply> {
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
            Ok(g) => r.access.conn_guards.get_mut().push(g),
            Err(why) => {
                if why == limit_conn::Acquire::Over {
                    let dry = if conf.limit_conn_dry_run {
                        ", dry run,"
                    } else {
                        ""
                    };
                    log(
                        r,
                        conf.limit_conn_log_level,
                        format_args!("limiting connections{dry} by zone \"{}\"", l.zone),
                    );
                }
                // The counts this request took so far go back.
                r.access.conn_guards.get_mut().clear();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_log_one_level_lower() {
        assert_eq!(delay_level(Level::Error), Level::Warn);
        assert_eq!(delay_level(Level::Warn), Level::Notice);
        assert_eq!(delay_level(Level::Notice), Level::Info);
        assert_eq!(delay_level(Level::Info), Level::Info);
    }
}
