//! `proxy_cache` in the proxy handler (nginx's `ngx_http_upstream_cache`
//! and its companions): decide whether a request uses the cache, look its
//! key up in the zone (memory, on the loop), serve a fresh entry from disk
//! through the file layer, and otherwise send the request upstream holding
//! what the answer needs — the fill lock, an expired entry to revalidate or
//! to serve stale.
//!
//! `$upstream_cache_status` says which way it went: `HIT`, `MISS`,
//! `EXPIRED`, `STALE`, `UPDATING`, `REVALIDATED`, `BYPASS`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cache::format::{HEADER_SIZE, Refreshed};
use crate::cache::hit::{self, Hit, Unusable};
use crate::cache::key::{CacheKey, Md5, VariantCheck, check_variant};
use crate::cache::policy::{self, CacheMethods, SendMethod, Settings};
use crate::cache::zone::{Lookup, Zone};
use crate::config::inherit::LocConf;
use crate::config::model::NextUpstream;
use crate::config::template::Template;
use crate::http::conditional;
use crate::http::range::ByteRange;
use crate::http::status::Status;
use crate::io::file::FileLayer;
use crate::log::Level;
use crate::upstream::head::ResponseHead;

use super::super::reply::{Body, Reply};
use super::super::request::Req;
use super::super::site::Site;
use super::response;

/// How a cached request went (`$upstream_cache_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheStatus {
    /// Not in the cache.
    Miss,
    /// `proxy_cache_bypass` said so.
    Bypass,
    /// In the cache, expired: fetched again.
    Expired,
    /// Expired, served because the upstream failed (`proxy_cache_use_stale`).
    Stale,
    /// Expired, served while another request updates it.
    Updating,
    /// Expired, and the upstream said `304`: the entry was served and
    /// refreshed.
    Revalidated,
    /// Served from the cache.
    Hit,
}

impl CacheStatus {
    /// The variable's value.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheStatus::Miss => "MISS",
            CacheStatus::Bypass => "BYPASS",
            CacheStatus::Expired => "EXPIRED",
            CacheStatus::Stale => "STALE",
            CacheStatus::Updating => "UPDATING",
            CacheStatus::Revalidated => "REVALIDATED",
            CacheStatus::Hit => "HIT",
        }
    }
}

/// A request that uses the cache and goes upstream.
pub struct Ctx {
    /// Its zone.
    pub zone: Arc<Zone>,
    /// Its key.
    pub key: CacheKey,
    /// The file's MD5 (the key's, or its variant's).
    pub md5: Md5,
    /// How it went so far.
    pub status: CacheStatus,
    /// This request holds the fill lock: it may store the answer.
    pub fill: bool,
    /// An expired entry: to serve stale, or to revalidate.
    pub entry: Option<Hit>,
    /// The request goes upstream as GET (a HEAD, `proxy_cache_convert_head`).
    pub as_get: bool,
}

impl Drop for Ctx {
    /// A request that held the fill lock and stored nothing lets it go,
    /// so that the next request may fill.
    fn drop(&mut self) {
        if self.fill {
            self.zone.fill_failed(&self.md5);
        }
    }
}

/// What the cache made of a request.
pub enum Prep {
    /// The cache does not apply.
    Off,
    /// Answered from the cache.
    Served(Box<Reply>),
    /// A background update found another request updating the entry:
    /// nothing to do.
    Skip,
    /// Goes upstream.
    Upstream(Box<Ctx>),
}

/// Whether any of `tests` is a non-empty value other than `0`
/// (`ngx_http_test_predicates`).
pub fn predicate(r: &Req<'_>, tests: &[Template]) -> bool {
    tests.iter().any(|t| {
        let v = r.expand(t);
        !v.is_empty() && v != b"0"
    })
}

/// The zone the location caches in for this request, if any.
fn zone_for(site: &Site, r: &Req<'_>) -> Option<Arc<Zone>> {
    let t = r.conf.proxy_cache.as_ref()?;
    let name = r.expand_lossy(t);
    if name.is_empty() || name == "off" {
        return None;
    }
    match site.caches.get(&name) {
        Some(z) => Some(z.clone()),
        None => {
            site.error_log.log(
                Level::Error,
                Some(r.conn_no),
                format_args!("cache \"{name}\" not found{}", r.log_context()),
            );
            None
        }
    }
}

/// The key of a request: `proxy_cache_key`, or nginx's default of two
/// parts — the `proxy_pass` URL's `scheme://host[:port]` as written and the
/// URI sent upstream (`ngx_http_proxy_create_key`).
pub fn key(r: &Req<'_>, url_prefix: &str, uri: &[u8]) -> CacheKey {
    if r.conf.proxy_cache_key_is_default {
        CacheKey::from_parts([url_prefix.as_bytes(), uri])
    } else {
        CacheKey::new(&r.expand(&r.conf.proxy_cache_key))
    }
}

fn now_secs() -> i64 {
    crate::http::date::unix_secs(std::time::SystemTime::now())
}

/// Looks the request up; see [`Prep`].
pub async fn prepare(
    site: &Site,
    r: &mut Req<'_>,
    files: FileLayer<'_>,
    url_prefix: &str,
    uri: &[u8],
) -> Prep {
    let conf = r.conf;
    let Some(zone) = zone_for(site, r) else {
        return Prep::Off;
    };
    let methods = CacheMethods {
        post: conf.proxy_cache_methods.iter().any(|m| m == "POST"),
    };
    let Some(send) = policy::cache_method(
        r.method().as_str().as_bytes(),
        methods,
        conf.proxy_cache_convert_head,
    ) else {
        return Prep::Off;
    };
    let range = r.head.range.as_deref().map(str::as_bytes);
    if !policy::range_allows_fill(range, conf.proxy_cache_max_range_offset) {
        return Prep::Off;
    }
    let key = key(r, url_prefix, uri);
    let mut ctx = Ctx {
        zone: zone.clone(),
        md5: *key.md5(),
        key,
        status: CacheStatus::Miss,
        fill: false,
        entry: None,
        as_get: send == SendMethod::Get,
    };
    if r.upstream.background {
        // `proxy_cache_background_update`: the entry is refreshed after
        // the client got it stale; one request at a time.
        ctx.status = CacheStatus::Expired;
        ctx.fill = zone.lock_fill(&ctx.md5, Instant::now(), conf.proxy_cache_lock_age);
        if !ctx.fill {
            return Prep::Skip;
        }
        return Prep::Upstream(Box::new(ctx));
    }
    if predicate(r, &conf.proxy_cache_bypass) {
        ctx.status = CacheStatus::Bypass;
        ctx.fill = zone.lock_fill(&ctx.md5, Instant::now(), conf.proxy_cache_lock_age);
        zone.stats
            .bypass
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return Prep::Upstream(Box::new(ctx));
    }
    let lock_deadline = Instant::now() + conf.proxy_cache_lock_timeout;
    let mut variant_tried = false;
    loop {
        let now = Instant::now();
        let mut evicted = Vec::new();
        let found = zone.lookup(&ctx.md5, now, &mut evicted);
        remove_files(&zone, files, evicted).await;
        let (known_start, updating) = match found {
            Lookup::Entry {
                body_start,
                updating,
                ..
            } => (Some(body_start), updating),
            Lookup::Absent {
                cold: true,
                updating,
                ..
            } => (None, updating),
            Lookup::Absent { uses, updating, .. } => {
                zone.release(&ctx.md5);
                if uses < conf.proxy_cache_min_uses {
                    return Prep::Upstream(Box::new(ctx));
                }
                if updating && conf.proxy_cache_lock && now < lock_deadline {
                    wait_for_fill(&zone, &ctx.md5, lock_deadline).await;
                    continue;
                }
                ctx.fill = zone.lock_fill(&ctx.md5, now, conf.proxy_cache_lock_age);
                count(&zone, CacheStatus::Miss);
                return Prep::Upstream(Box::new(ctx));
            }
        };
        // An entry may exist: read it (a cold zone's probe, or a known one).
        let max_start = match known_start {
            Some(s) if s > 0 => usize::from(s),
            _ => conf.proxy_buffer_size as usize,
        };
        let read = hit::read(&zone, &ctx.md5, &ctx.key, files, max_start).await;
        zone.release(&ctx.md5);
        let entry = match read {
            Ok(h) => h,
            Err(Unusable::Missing) => {
                zone.forget(&ctx.md5);
                if known_start.is_none() && updating && conf.proxy_cache_lock && now < lock_deadline
                {
                    wait_for_fill(&zone, &ctx.md5, lock_deadline).await;
                    continue;
                }
                ctx.fill = zone.lock_fill(&ctx.md5, now, conf.proxy_cache_lock_age);
                count(&zone, CacheStatus::Miss);
                return Prep::Upstream(Box::new(ctx));
            }
            Err(Unusable::Invalid(e, msg)) => {
                site.error_log
                    .log(e.level(), Some(r.conn_no), format_args!("{msg}"));
                zone.forget(&ctx.md5);
                ctx.fill = zone.lock_fill(&ctx.md5, now, conf.proxy_cache_lock_age);
                count(&zone, CacheStatus::Miss);
                return Prep::Upstream(Box::new(ctx));
            }
            Err(Unusable::Io(e)) => {
                site.error_log.log(
                    Level::Crit,
                    Some(r.conn_no),
                    format_args!("{e}{}", r.log_context()),
                );
                count(&zone, CacheStatus::Miss);
                return Prep::Upstream(Box::new(ctx));
            }
        };
        if known_start.is_none() {
            // A cold zone's probe found a file: the zone knows it now.
            zone.filled(
                &ctx.md5,
                entry.header.valid_sec,
                entry.header.body_start,
                entry.file.meta.size,
            );
        }
        // A response that varies: the request may want another variant.
        if !entry.header.vary.is_empty() && !variant_tried {
            let headers: Vec<(&[u8], &[u8])> = r
                .head
                .headers
                .iter()
                .map(|(n, v)| (n.as_bytes(), v))
                .collect();
            let headers = headers.iter().map(|(n, v)| (*n, *v));
            if let VariantCheck::Other(v) = check_variant(
                ctx.key.md5(),
                &entry.header.vary,
                &entry.header.variant,
                headers,
            ) {
                variant_tried = true;
                ctx.md5 = v;
                continue;
            }
        }
        let now_s = now_secs();
        if entry.header.valid_sec > now_s {
            count(&zone, CacheStatus::Hit);
            r.upstream.cache_status = Some(CacheStatus::Hit.as_str());
            return Prep::Served(Box::new(serve(r, &entry, CacheStatus::Hit)));
        }
        // Expired.
        let stale_while_updating = conf.proxy_cache_use_stale.contains(NextUpstream::UPDATING)
            || (entry.header.updating_sec > 0
                && now_s < entry.header.valid_sec + entry.header.updating_sec);
        if stale_while_updating && conf.proxy_cache_background_update {
            // Served stale now; the connection refreshes it after the
            // response (nginx's background subrequest, which also runs
            // before the connection's next request).
            r.upstream.background_update = true;
            count(&zone, CacheStatus::Stale);
            return Prep::Served(Box::new(serve(r, &entry, CacheStatus::Stale)));
        }
        if zone.lock_fill(&ctx.md5, now, conf.proxy_cache_lock_age) {
            ctx.fill = true;
            ctx.status = CacheStatus::Expired;
            ctx.entry = Some(entry);
            count(&zone, CacheStatus::Expired);
            return Prep::Upstream(Box::new(ctx));
        }
        if stale_while_updating {
            count(&zone, CacheStatus::Updating);
            r.upstream.cache_status = Some(CacheStatus::Updating.as_str());
            return Prep::Served(Box::new(serve(r, &entry, CacheStatus::Updating)));
        }
        if conf.proxy_cache_lock && now < lock_deadline {
            wait_for_fill(&zone, &ctx.md5, lock_deadline).await;
            continue;
        }
        ctx.status = CacheStatus::Expired;
        ctx.entry = Some(entry);
        count(&zone, CacheStatus::Expired);
        return Prep::Upstream(Box::new(ctx));
    }
}

/// Waits until the fill under way for `md5` ends, or `deadline`.
async fn wait_for_fill(zone: &Zone, md5: &Md5, deadline: Instant) {
    let Some(notify) = zone.fill_notify(md5) else {
        return;
    };
    let notified = notify.notified();
    let left = deadline.saturating_duration_since(Instant::now());
    // A fill may end between the lookup and here: never wait longer than
    // a short recheck interval without looking again.
    let _ = tokio::time::timeout(left.min(Duration::from_millis(250)), notified).await;
}

fn count(zone: &Zone, s: CacheStatus) {
    use std::sync::atomic::Ordering::Relaxed;
    let c = match s {
        CacheStatus::Miss => &zone.stats.misses,
        CacheStatus::Bypass => &zone.stats.bypass,
        CacheStatus::Expired => &zone.stats.expired,
        CacheStatus::Stale => &zone.stats.stale,
        CacheStatus::Updating => &zone.stats.updating,
        CacheStatus::Revalidated => &zone.stats.revalidated,
        CacheStatus::Hit => &zone.stats.hits,
    };
    c.fetch_add(1, Relaxed);
}

/// Files a full zone dropped: removed through the request's file layer.
async fn remove_files(zone: &Zone, files: FileLayer<'_>, paths: Vec<std::path::PathBuf>) {
    for p in paths {
        let _ = files.remove_file(&p).await;
        let _ = zone;
    }
}

/// The reply for an entry: its stored head passed through the proxy's
/// header rules, conditionals and ranges applied as on a static file (a
/// cached response allows ranges), the body sent from the file.
pub fn serve(r: &mut Req<'_>, entry: &Hit, status: CacheStatus) -> Reply {
    r.upstream.cache_status = Some(status.as_str());
    let conf = r.conf;
    let len = entry.body_len();
    let mut reply = match &entry.head {
        Some(head) => {
            r.upstream.headers = head
                .headers
                .iter()
                .map(|(n, v)| (String::from_utf8_lossy(n).into_owned(), v.to_vec()))
                .collect();
            response::reply(r, conf, head).0
        }
        None => {
            let mut rep = Reply::new(Status::OK, Body::Empty);
            rep.http09 = true;
            rep
        }
    };
    reply.length_override = None;
    let file = entry.file.clone();
    let whole = ByteRange {
        start: entry.body_start,
        end: entry.body_start + len,
    };
    if reply.status.0 != 200 || reply.http09 {
        reply.body = Body::File { file, range: whole };
        return reply;
    }
    // nginx's not-modified filter, with the stored validators.
    let last_modified =
        header_of(&reply, "Last-Modified").and_then(|v| crate::http::date::parse_http_date(&v));
    let etag = header_of(&reply, "ETag");
    let h = r.head;
    let c = conditional::Conditions {
        if_modified_since: h.if_modified_since.as_deref(),
        if_unmodified_since: h.if_unmodified_since.as_deref(),
        if_match: h.if_match.as_deref(),
        if_none_match: h.if_none_match.as_deref(),
    };
    let v = conditional::Validators {
        last_modified,
        etag: etag.as_deref(),
    };
    match conditional::evaluate(&c, &v, conditional::IfModifiedSince::Exact) {
        conditional::Outcome::Proceed => {}
        conditional::Outcome::NotModified => {
            reply.status = Status::NOT_MODIFIED;
            reply.status_line = None;
            reply.body = Body::Empty;
            return reply;
        }
        conditional::Outcome::PreconditionFailed => {
            let mut rep = Reply::special(Status::PRECONDITION_FAILED);
            rep.close = true;
            return rep;
        }
    }
    // The range filter (`server::filter::range`) answers `Range` on it,
    // after gzip and charset have had their say.
    reply.allow_ranges = true;
    reply.body = Body::File { file, range: whole };
    reply
}

fn header_of(reply: &Reply, name: &str) -> Option<String> {
    reply
        .extra
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.clone())
}

/// The settings `policy` reads, from the location.
pub fn settings(conf: &LocConf) -> Settings<'_> {
    Settings {
        valid: &conf.proxy_cache_valid,
        ignore: policy::IgnoreHeaders::from_names(&conf.proxy_ignore_headers),
    }
}

/// Whether a failure of kind `ft` (or an upstream status) lets an expired
/// entry be served (`proxy_cache_use_stale`), or `stale-if-error` allows it.
pub fn use_stale(conf: &LocConf, entry: &Hit, ft: NextUpstream) -> bool {
    let by_conf = conf.proxy_cache_use_stale.contains(ft)
        && !conf.proxy_cache_use_stale.contains(NextUpstream::OFF);
    let by_header =
        entry.header.error_sec > 0 && now_secs() < entry.header.valid_sec + entry.header.error_sec;
    by_conf || by_header
}

/// Refreshes an entry an upstream `304` revalidated: the new validity,
/// written into the file's header through the pool; `None` when nginx
/// leaves the file as it is.
pub async fn refresh(
    ctx: &Ctx,
    entry: &Hit,
    not_modified: &ResponseHead,
    conf: &LocConf,
    files: FileLayer<'_>,
) -> Option<i64> {
    let stored = entry.head.as_ref()?;
    let refreshed: Refreshed =
        policy::revalidated(not_modified, stored, &settings(conf), now_secs())?;
    let on_disk = files.read_at(&entry.file, HEADER_SIZE, 0).await.ok()?;
    let new = crate::cache::format::update_header(&on_disk, &entry.header, &refreshed).ok()?;
    files
        .rewrite_at(&entry.file.path, Arc::from(&new[..]), 0)
        .await
        .ok()?;
    ctx.zone.refreshed(&ctx.md5, refreshed.valid_sec);
    Some(refreshed.valid_sec)
}
