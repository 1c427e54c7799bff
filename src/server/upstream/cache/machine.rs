//! The cache's phases around the exchange, in one place: each transition
//! of a request that looked the cache up and goes upstream (nginx's
//! `ngx_http_upstream_cache*`, pingora-cache's `CachePhase`):
//!
//! ```text
//! lookup ([`super::prepare`]) ─ HIT / STALE / UPDATING ───────────── served
//!    │ MISS / EXPIRED / BYPASS (the fill lock taken or waited, [`super::Ctx`])
//!    ▼
//! request_headers ── the request goes with the cache's conditions
//!    │
//!    ├─ failed: no live peer, error, timeout ─ STALE if allowed, else the
//!    │          error remembered (`r->cache->error`) and answered
//!    ├─ answer: 304 to a revalidation ─ REVALIDATED (the entry refreshed)
//!    │          a status `use_stale` names ─ STALE
//!    ├─ intercepted: an error page for the upstream's answer ─ remembered
//!    └─ fill: the answer is stored (the lock goes with the fill) or not
//!             (the lock is let go)
//!    ▼
//! finish ── `$upstream_cache_status`; the fill renamed into place before
//!           the connection goes on ([`super::super::finish`])
//! ```
//!
//! The lookup and serving an entry stay in [`super`]; this file owns what
//! the engine calls during and after the exchange. Every change of
//! [`CacheStatus`] after the lookup happens here.

use crate::cache::policy::{self, Revalidate};
use crate::config::model::NextUpstream;
use crate::http::status::Status;
use crate::server::core::reply::Reply;
use crate::server::core::request::Req;
use crate::server::core::site::Site;
use crate::upstream::head::ResponseHead;

use super::super::connect::GotHead;
use super::super::protocol::Protocol;
use super::super::{Proxied, Upstream, reply};
use super::{CacheStatus, Ctx};

/// The fields a request that will be stored sends instead of the client's
/// conditions (nginx's `headers_cache`): with the entry's validators when
/// it revalidates an expired one. `None` when the answer will not be
/// stored (below `proxy_cache_min_uses`, after a lock timeout): the
/// request then goes with the client's own headers, `Range` and
/// conditions included (nginx picks `headers_cache` only for
/// `u->cacheable`).
pub fn request_headers(r: &Req<'_>, c: &Ctx) -> Option<[(&'static str, Vec<u8>); 6]> {
    if !c.fill {
        return None;
    }
    let revalidate = c
        .entry
        .as_ref()
        .filter(|_| r.conf.proxy_cache_revalidate && c.status == CacheStatus::Expired)
        .map(|e| Revalidate {
            last_modified: e.header.last_modified,
            etag: &e.header.etag,
        });
    Some(policy::upstream_header_defaults(revalidate))
}

/// Moves the request's count from its status to `to`.
fn turn(c: &mut Ctx, to: CacheStatus) {
    super::recount(&c.zone, c.status, to);
    c.status = to;
}

/// The exchange failed (`ft`; `status` is the answer without a cache): an
/// expired entry is served if `proxy_cache_use_stale` (or its
/// `stale-if-error`) allows; else the error is remembered for the key and
/// answered.
pub fn failed(r: &mut Req<'_>, cache: Option<&mut Ctx>, ft: NextUpstream, status: u16) -> Proxied {
    let Some(c) = cache else {
        return reply(Reply::special(Status(status)));
    };
    if let Some(entry) = c.entry.take() {
        if super::use_stale(r.conf, &entry, ft, false) {
            turn(c, CacheStatus::Stale);
            let rep = super::serve(r, &entry, CacheStatus::Stale, c.reply_of);
            c.entry = Some(entry);
            return reply(rep);
        }
        c.entry = Some(entry);
    }
    super::cache_error(r, c, status, None);
    reply(Reply::special(Status(status)))
}

/// What an expired entry makes of an upstream's answer: a `304` to a
/// revalidation refreshes and serves it (`REVALIDATED`); a status
/// `proxy_cache_use_stale` names serves it stale. `None`: the answer goes
/// to the client.
pub async fn answer<P: Protocol>(
    r: &mut Req<'_>,
    u: &mut Upstream<'_, '_, '_, P>,
    got: &GotHead,
    ft: Option<NextUpstream>,
) -> Option<Proxied> {
    let files = u.files;
    let c = u.cache.as_deref_mut()?;
    let conf = r.conf;
    let entry = c.entry.take()?;
    let revalidating = conf.proxy_cache_revalidate
        && c.status == CacheStatus::Expired
        && (entry.header.last_modified != -1 || !entry.header.etag.is_empty());
    let answer = if revalidating && got.head.status == 304 {
        let _ = super::refresh(c, &entry, &got.head, conf, files).await;
        turn(c, CacheStatus::Revalidated);
        // The entry is fresh again: the fill lock is done with.
        c.fill = false;
        Some(reply(super::serve(
            r,
            &entry,
            CacheStatus::Revalidated,
            c.reply_of,
        )))
    } else if ft.is_some_and(|ft| super::use_stale(conf, &entry, ft, true)) {
        turn(c, CacheStatus::Stale);
        Some(reply(super::serve(
            r,
            &entry,
            CacheStatus::Stale,
            c.reply_of,
        )))
    } else {
        None
    };
    if answer.is_none() {
        c.entry = Some(entry);
    }
    answer
}

/// An answer intercepted for an `error_page`: remembered for the key as
/// its own headers (or `proxy_cache_valid`) allow.
pub fn intercepted(r: &Req<'_>, c: &mut Ctx, status: u16, head: &ResponseHead) {
    super::cache_error(r, c, status, Some(head));
}

/// The request is done with the exchange: `$upstream_cache_status` says
/// how it went, unless serving set it already.
pub fn finish(r: &mut Req<'_>, cache: Option<&Ctx>) {
    if let Some(c) = cache {
        if r.upstream.cache_status.is_none() {
            r.upstream.cache_status = Some(c.status.as_str());
        }
    }
}

/// The fill of a response, when it is to be stored: this request holds the
/// fill lock, `proxy_no_cache` does not object, and the policy finds it
/// cacheable. Otherwise the lock (if held) is let go.
pub fn fill(
    site: &Site,
    r: &Req<'_>,
    c: &mut Ctx,
    head: &ResponseHead,
    raw_head: &[u8],
) -> Option<crate::cache::fill::FillPlan> {
    use crate::cache::format::EntryHeader;
    if !c.fill {
        return None;
    }
    let conf = r.conf;
    // The lock goes with the plan, or is let go here (Ctx's drop).
    let now = crate::http::date::unix_secs(std::time::SystemTime::now());
    if super::predicate(r, &conf.proxy_no_cache) {
        return None;
    }
    let store = crate::cache::policy::decide(head, &super::settings(conf), now).ok()?;
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
    let files = super::files_of(site, r);
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
