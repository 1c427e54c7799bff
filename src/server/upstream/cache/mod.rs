//! `proxy_cache` in the upstream engine (nginx's `ngx_http_upstream_cache`
//! and its companions): decide whether a request uses the cache, look its
//! key up in the zone (memory, on the loop), serve a fresh entry from disk
//! through the file layer, and otherwise send the request upstream holding
//! what the answer needs — the fill lock, an expired entry to revalidate or
//! to serve stale.
//!
//! `$upstream_cache_status` says which way it went: `HIT`, `MISS`,
//! `EXPIRED`, `STALE`, `UPDATING`, `REVALIDATED`, `BYPASS`.
//!
//! - [`machine`]: every transition after the lookup, in one place.
//!
//! A stored head becomes a reply through the request's protocol plug-in
//! ([`HeadReply`]), as nginx runs `process_header` on a cached one.

pub mod machine;

use std::sync::Arc;
use std::time::Instant;

use crate::cache::format::{HEADER_SIZE, Refreshed};
use crate::cache::hit::{self, Hit, Unusable};
use crate::cache::key::{CacheKey, Md5, VariantCheck, check_variant};
use crate::cache::policy::{self, CacheMethods, SendMethod, Settings};
use crate::cache::zone::{LockToken, Lookup, Zone};
use crate::config::inherit::LocConf;
use crate::config::model::NextUpstream;
use crate::config::template::Template;
use crate::http::conditional;
use crate::http::range::ByteRange;
use crate::http::status::Status;
use crate::io::file::FileLayer;
use crate::log::Level;
use crate::upstream::head::ResponseHead;

use super::protocol::HeadReply;
use crate::server::core::reply::{Body, Reply};
use crate::server::core::request::Req;
use crate::server::core::site::Site;

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
    /// The answer may be stored (nginx's `u->cacheable`): not below
    /// `proxy_cache_min_uses`, not after a lock timeout.
    pub fill: bool,
    /// The fill lock this request holds (`proxy_cache_lock`, or the
    /// update of an expired entry), handed to its fill or let go on drop.
    pub lock: Option<LockToken>,
    /// An expired entry: to serve stale, or to revalidate.
    pub entry: Option<Hit>,
    /// The request goes upstream as GET (a HEAD, `proxy_cache_convert_head`).
    pub as_get: bool,
    /// How the protocol makes a stored head into a reply.
    pub reply_of: HeadReply,
}

impl Drop for Ctx {
    /// A request that held the fill lock and stored nothing lets it go,
    /// so that the next request may fill.
    fn drop(&mut self) {
        if let Some(token) = self.lock.take() {
            self.zone.fill_failed(&self.md5, Some(token));
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

/// The status page's numbers of every zone, in name order.
pub fn samples(site: &Site) -> Vec<crate::metrics::cache::ZoneSample> {
    use std::sync::atomic::Ordering::Relaxed;
    let mut zones: Vec<&Arc<Zone>> = site.caches.values().collect();
    zones.sort_by(|a, b| a.name().cmp(b.name()));
    zones
        .into_iter()
        .map(|z| {
            let s = &z.stats;
            crate::metrics::cache::ZoneSample {
                zone: z.name().to_string(),
                path: z.conf.path.display().to_string(),
                pool: z.pool().map(|p| p.name().to_string()).unwrap_or_default(),
                statuses: [
                    s.hits.load(Relaxed),
                    s.misses.load(Relaxed),
                    s.expired.load(Relaxed),
                    s.stale.load(Relaxed),
                    s.updating.load(Relaxed),
                    s.revalidated.load(Relaxed),
                    s.bypass.load(Relaxed),
                ],
                coalesced: s.coalesced.load(Relaxed),
                bytes_filled: s.bytes_filled.load(Relaxed),
                fills: s.fills.load(Relaxed),
                fills_abandoned: s.fills_abandoned.load(Relaxed),
                fills_skipped: s.fills_skipped.load(Relaxed),
                fill_backlog: s.fill_backlog.load(Relaxed),
                evictions: s.evictions.load(Relaxed),
                keys: z.keys() as u64,
                size: z.size(),
                loaded_files: s.loaded_files.load(Relaxed),
                loaded_bytes: s.loaded_bytes.load(Relaxed),
                manager_passes: s.manager_passes.load(Relaxed),
                manager_removed: s.manager_removed.load(Relaxed),
                loader_done: !z.is_cold(),
            }
        })
        .collect()
}

/// Whether any of `tests` is a non-empty value other than `0`
/// (`ngx_http_test_predicates`).
pub fn predicate(r: &Req<'_>, tests: &[Template]) -> bool {
    tests.iter().any(|t| {
        let v = r.expand(t);
        !v.is_empty() && v != b"0"
    })
}

/// Whether the location names a cache at all (before any lookup: most
/// proxied locations have none, and skip [`prepare`]).
pub fn configured(r: &Req<'_>) -> bool {
    r.conf.proxy_cache.is_some()
}

/// The zone the location caches in for this request, if any; a name no
/// `proxy_cache_path` declares is a 500, as nginx answers it.
fn zone_for(site: &Site, r: &Req<'_>) -> Result<Option<Arc<Zone>>, Status> {
    let Some(t) = r.conf.proxy_cache.as_ref() else {
        return Ok(None);
    };
    let name = r.expand_lossy(t);
    if name.is_empty() || name == "off" {
        return Ok(None);
    }
    match site.caches.get(&name) {
        Some(z) => Ok(Some(z.clone())),
        None => {
            r.error_log().log(
                Level::Error,
                Some(r.conn_no),
                format_args!("cache \"{name}\" not found{}", r.log_context()),
            );
            Err(Status::INTERNAL_SERVER_ERROR)
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

/// Whether `entry` has expired at `now` (seconds): nginx's
/// `ngx_http_file_cache_read` tests `c->valid_sec < now`, so an entry is
/// still fresh during the second its validity names (`proxy_cache_valid
/// 1s` on an answer stored in second T is a HIT through second T+1).
fn expired(entry: &Hit, now: i64) -> bool {
    entry.header.valid_sec < now
}

/// Looks the request up; see [`Prep`].
pub async fn prepare(
    site: &Site,
    r: &mut Req<'_>,
    files: FileLayer<'_>,
    url_prefix: &str,
    uri: &[u8],
    reply_of: HeadReply,
) -> Prep {
    let conf = r.conf;
    let zone = match zone_for(site, r) {
        Ok(Some(z)) => z,
        Ok(None) => return Prep::Off,
        Err(status) => return Prep::Served(Box::new(Reply::special(status))),
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
        lock: None,
        entry: None,
        as_get: send == SendMethod::Get,
        reply_of,
    };
    if predicate(r, &conf.proxy_cache_bypass) {
        // nginx skips the lookup and the lock, and stores the answer.
        ctx.status = CacheStatus::Bypass;
        ctx.fill = true;
        count(&zone, CacheStatus::Bypass);
        return Prep::Upstream(Box::new(ctx));
    }
    let lock_deadline = Instant::now() + conf.proxy_cache_lock_timeout;
    let mut variant_tried = false;
    loop {
        let now = Instant::now();
        let mut evicted = Vec::new();
        let found = zone.lookup(&ctx.md5, now, &mut evicted);
        remove_files(files, evicted).await;
        let known_start = match found {
            Lookup::Entry { body_start, .. } => Some(body_start),
            Lookup::Error { status } => {
                // A cached error status: answered as nginx does, a HIT.
                zone.release(&ctx.md5);
                count(&zone, CacheStatus::Hit);
                r.upstream.cache_status = Some(CacheStatus::Hit.as_str());
                return Prep::Served(Box::new(Reply::special(Status(status))));
            }
            Lookup::Absent { cold: true, .. } => None,
            Lookup::Absent { uses, .. } => {
                zone.release(&ctx.md5);
                count(&zone, CacheStatus::Miss);
                if uses < conf.proxy_cache_min_uses {
                    // nginx's `NGX_HTTP_CACHE_SCARCE`: not stored.
                    return Prep::Upstream(Box::new(ctx));
                }
                match take_lock(site, &zone, r, &mut ctx, lock_deadline).await {
                    Waited::Go => return Prep::Upstream(Box::new(ctx)),
                    Waited::Served(rep) => return Prep::Served(rep),
                    Waited::Again => continue,
                }
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
                count(&zone, CacheStatus::Miss);
                match take_lock(site, &zone, r, &mut ctx, lock_deadline).await {
                    Waited::Go => return Prep::Upstream(Box::new(ctx)),
                    Waited::Served(rep) => return Prep::Served(rep),
                    Waited::Again => continue,
                }
            }
            Err(Unusable::Invalid(e, msg)) => {
                r.error_log()
                    .log(e.level(), Some(r.conn_no), format_args!("{msg}"));
                zone.forget(&ctx.md5);
                count(&zone, CacheStatus::Miss);
                match take_lock(site, &zone, r, &mut ctx, lock_deadline).await {
                    Waited::Go => return Prep::Upstream(Box::new(ctx)),
                    Waited::Served(rep) => return Prep::Served(rep),
                    Waited::Again => continue,
                }
            }
            Err(Unusable::Io(e)) => {
                r.error_log().log(
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
            let evicted = zone.filled(
                &ctx.md5,
                entry.header.valid_sec,
                entry.header.body_start,
                entry.file.meta.size,
                None,
            );
            remove_files(files, evicted).await;
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
        if r.upstream.background {
            // `proxy_cache_background_update`: the entry went to the client
            // stale; refresh it (revalidating it if so configured), one
            // update at a time, unless another request did already.
            if !expired(&entry, now_s) {
                // Fresh again: nginx's update would have been a HIT.
                r.upstream.cache_status = Some(CacheStatus::Hit.as_str());
                return Prep::Skip;
            }
            ctx.lock = zone.lock_fill(&ctx.md5, now, conf.proxy_cache_lock_age);
            if ctx.lock.is_none() {
                return Prep::Skip;
            }
            ctx.fill = true;
            ctx.status = CacheStatus::Expired;
            ctx.entry = Some(entry);
            return Prep::Upstream(Box::new(ctx));
        }
        if !expired(&entry, now_s) {
            count(&zone, CacheStatus::Hit);
            r.upstream.cache_status = Some(CacheStatus::Hit.as_str());
            return Prep::Served(Box::new(serve(r, &entry, CacheStatus::Hit, reply_of)));
        }
        // Expired.
        let stale_while_updating = conf.proxy_cache_use_stale.contains(NextUpstream::UPDATING)
            || (entry.header.updating_sec > 0
                && now_s <= entry.header.valid_sec + entry.header.updating_sec);
        let being_updated = zone.fill_state(&ctx.md5).0.is_some();
        if stale_while_updating && conf.proxy_cache_background_update && !being_updated {
            // Served stale now; the connection refreshes it after the
            // response (nginx's background subrequest, which also runs
            // before the connection's next request).
            r.upstream.background_update = true;
            count(&zone, CacheStatus::Stale);
            return Prep::Served(Box::new(serve(r, &entry, CacheStatus::Stale, reply_of)));
        }
        // Expired (`ngx_http_file_cache_read`): the first request updates
        // it; while it does, others are `UPDATING` — served stale when
        // allowed, else sent upstream as nginx does (no lock wait for an
        // entry that exists).
        ctx.fill = true;
        ctx.status = CacheStatus::Expired;
        ctx.lock = zone.lock_fill(&ctx.md5, now, conf.proxy_cache_lock_age);
        if ctx.lock.is_none() && stale_while_updating {
            count(&zone, CacheStatus::Updating);
            r.upstream.cache_status = Some(CacheStatus::Updating.as_str());
            return Prep::Served(Box::new(serve(r, &entry, CacheStatus::Updating, reply_of)));
        }
        ctx.entry = Some(entry);
        count(&zone, CacheStatus::Expired);
        return Prep::Upstream(Box::new(ctx));
    }
}

/// A miss under `proxy_cache_lock` (`ngx_http_file_cache_lock`): take the
/// lock and fill; or, while another request fills, stream its fill as it
/// is written (nowait's read-while-write) or wait until it ends; after
/// `proxy_cache_lock_timeout`, go upstream without storing. Without the
/// lock every miss goes upstream and stores (the last rename wins).
/// `None`: look the key up again.
async fn take_lock(
    site: &Site,
    zone: &Arc<Zone>,
    r: &mut Req<'_>,
    ctx: &mut Ctx,
    deadline: Instant,
) -> Waited {
    let conf = r.conf;
    if !conf.proxy_cache_lock {
        ctx.fill = true;
        return Waited::Go;
    }
    let now = Instant::now();
    if let Some(token) = zone.lock_fill(&ctx.md5, now, conf.proxy_cache_lock_age) {
        ctx.fill = true;
        ctx.lock = Some(token);
        return Waited::Go;
    }
    if now >= deadline {
        // nginx 1.7.8+: a request whose lock wait timed out is not stored.
        ctx.fill = false;
        return Waited::Go;
    }
    let Some(notify) = zone.fill_notify(&ctx.md5) else {
        return Waited::Again;
    };
    // Registered before the state is read again: no wake-up is lost.
    let notified = notify.notified();
    tokio::pin!(notified);
    notified.as_mut().enable();
    let (locked_until, share) = zone.fill_state(&ctx.md5);
    if let Some(share) = share {
        if streamable(r, &share) {
            return Waited::Served(Box::new(serve_share(site, r, zone, &share, ctx.reply_of)));
        }
    }
    if let Some(until) = locked_until {
        // Woken when the fill ends or shares its file; else when the lock
        // ages out (`proxy_cache_lock_age`) or the wait times out.
        let wake = deadline.min(until.max(now));
        let _ = tokio::time::timeout_at(wake.into(), notified).await;
    }
    Waited::Again
}

/// How a wait on the fill lock ended.
enum Waited {
    /// Go upstream (with the lock, without it, or not to store).
    Go,
    /// Answered from the fill under way.
    Served(Box<Reply>),
    /// Look the key up again.
    Again,
}

/// Where the file operations of `r`'s cache work run (its `aio`), owned.
pub fn files_of(site: &Site, r: &Req<'_>) -> crate::cache::fill::Files {
    let conf = r.conf;
    let pool = match &conf.aio {
        crate::config::model::Aio::Threads(name) => site.pools.get(&r.expand_lossy(name)).cloned(),
        crate::config::model::Aio::Off => None,
    };
    crate::cache::fill::Files {
        pool,
        fast: conf.aio_fast_path,
        write: conf.aio_write,
    }
}

/// Remembers `status` for the request's key when the answer may be
/// stored and a validity applies (nginx's `r->cache->error`): the
/// response's own headers, else `proxy_cache_valid` for the status. For an
/// intercepted error, `head` is the upstream's; for a `502`/`504` of a
/// failed upstream there is none.
pub fn cache_error(r: &Req<'_>, c: &mut Ctx, status: u16, head: Option<&ResponseHead>) {
    if !c.fill {
        return;
    }
    let now = now_secs();
    let valid_sec = match head {
        Some(h) => match policy::decide(h, &settings(r.conf), now) {
            Ok(store) => store.valid_sec,
            Err(_) => return,
        },
        None => match policy::valid_for(&r.conf.proxy_cache_valid, status) {
            Some(t) => now + i64::try_from(t.as_secs()).unwrap_or(i64::MAX / 2),
            None => return,
        },
    };
    c.fill = false;
    c.zone.set_error(&c.md5, status, valid_sec, c.lock.take());
}

/// Whether a waiter can take the fill's body as it comes: a plain `GET`
/// (no range, no condition) of a `200` that does not vary, whose end the
/// client can tell from a cut — a known length, or chunked framing to an
/// HTTP/1.1 client (an HTTP/1.0 client reads a close-delimited body, and
/// would take a failed fill's for a whole one). Anything else waits for
/// the entry and is answered from it, as nginx answers every waiter.
fn streamable(r: &Req<'_>, share: &crate::cache::share::Share) -> bool {
    let h = r.head;
    let framed =
        share.head.content_length.is_some() || h.version == crate::http::request::Version::Http11;
    framed
        && h.method == crate::http::request::Method::Get
        && h.range.is_none()
        && h.if_modified_since.is_none()
        && h.if_none_match.is_none()
        && h.if_match.is_none()
        && h.if_unmodified_since.is_none()
        && share.header.vary.is_empty()
        && share.head.status == 200
}

/// The reply of a waiter that streams a fill under way: the stored head
/// as a hit's, the body read from the fill's temp file as it is written.
fn serve_share(
    site: &Site,
    r: &mut Req<'_>,
    zone: &Arc<Zone>,
    share: &Arc<crate::cache::share::Share>,
    reply_of: HeadReply,
) -> Reply {
    use std::sync::atomic::Ordering::Relaxed;
    count(zone, CacheStatus::Hit);
    zone.stats.coalesced.fetch_add(1, Relaxed);
    r.upstream.cache_status = Some(CacheStatus::Hit.as_str());
    let head = &share.head;
    r.upstream.headers = head.headers.clone();
    let mut reply = reply_of(r, head).0;
    reply.length_override = head.content_length;
    let files = files_of(site, r);
    reply.body = Body::Stream(Box::new(share.reader(files)));
    reply
}

/// A request counted as `from` ended as `to` (an `EXPIRED` that came back
/// `REVALIDATED` or was served `STALE`): counted once, as it ended.
pub fn recount(zone: &Zone, from: CacheStatus, to: CacheStatus) {
    if from == to {
        return;
    }
    let c = counter(zone, from);
    let _ = c.fetch_update(
        std::sync::atomic::Ordering::Relaxed,
        std::sync::atomic::Ordering::Relaxed,
        |n| n.checked_sub(1),
    );
    count(zone, to);
}

fn counter(zone: &Zone, s: CacheStatus) -> &std::sync::atomic::AtomicU64 {
    match s {
        CacheStatus::Miss => &zone.stats.misses,
        CacheStatus::Bypass => &zone.stats.bypass,
        CacheStatus::Expired => &zone.stats.expired,
        CacheStatus::Stale => &zone.stats.stale,
        CacheStatus::Updating => &zone.stats.updating,
        CacheStatus::Revalidated => &zone.stats.revalidated,
        CacheStatus::Hit => &zone.stats.hits,
    }
}

fn count(zone: &Zone, s: CacheStatus) {
    counter(zone, s).fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Files a full zone dropped: removed through the request's file layer.
async fn remove_files(files: FileLayer<'_>, paths: Vec<std::path::PathBuf>) {
    for p in paths {
        let _ = files.remove_file(&p).await;
    }
}

/// The reply for an entry: its stored head passed through the protocol's
/// header rules (`reply_of`), conditionals and ranges applied as on a
/// static file (a cached response allows ranges), the body sent from the
/// file.
pub fn serve(r: &mut Req<'_>, entry: &Hit, status: CacheStatus, reply_of: HeadReply) -> Reply {
    r.upstream.cache_status = Some(status.as_str());
    let len = entry.body_len();
    let mut reply = match &entry.head {
        Some(head) => {
            r.upstream.headers = head.headers.clone();
            reply_of(r, head).0
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
        .map(|(_, v)| v.to_string())
}

/// The settings `policy` reads, from the location.
pub fn settings(conf: &LocConf) -> Settings<'_> {
    Settings {
        valid: &conf.proxy_cache_valid,
        ignore: policy::IgnoreHeaders::from_names(&conf.proxy_ignore_headers),
    }
}

/// Whether a failure of kind `ft` lets an expired entry be served:
/// `proxy_cache_use_stale` names it, or — for a failure to get an answer
/// at all (`ngx_http_upstream_next`), not for an answer's status
/// (`ngx_http_upstream_test_next`, since 1.19.3) — the entry's
/// `stale-if-error` still runs (`c->stale_error`).
pub fn use_stale(conf: &LocConf, entry: &Hit, ft: NextUpstream, by_status: bool) -> bool {
    let by_conf = conf.proxy_cache_use_stale.contains(ft)
        && !conf.proxy_cache_use_stale.contains(NextUpstream::OFF);
    let by_header = !by_status
        && entry.header.error_sec > 0
        && now_secs() <= entry.header.valid_sec + entry.header.error_sec;
    by_conf || by_header
}

/// Refreshes an entry an upstream `304` revalidated: the new validity,
/// written into the file's header through the pool; `None` when nginx
/// leaves the file as it is.
pub async fn refresh(
    ctx: &mut Ctx,
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
    ctx.zone
        .refreshed(&ctx.md5, refreshed.valid_sec, ctx.lock.take());
    Some(refreshed.valid_sec)
}
