//! The keys zone: a cache path's index in memory (nginx's shared-memory
//! rbtree and LRU queue of `ngx_http_file_cache_node_t`), owned by the
//! process — shared by every worker and kept across reloads.
//!
//! Per key it knows what nginx's node knows: how often the key was asked
//! for (`uses`, for `proxy_cache_min_uses`), how many requests are reading
//! the entry now (`count`: the manager never removes those), whether an
//! entry exists on disk and until when it is fresh, whether a fill is under
//! way (`updating`, the fill lock), where the body starts and how much disk
//! the file takes. Answers come from memory, on the loop: a miss is known
//! without an `open()`. Until the loader has walked the directory (the zone
//! is *cold*), a key the zone does not know may still have a file: the
//! caller then probes the disk, through the pool.
//!
//! The zone's size bounds the number of keys as nginx's does (a node takes
//! about [`NODE_BYTES`]); when it is full the least recently used keys that
//! nobody reads are dropped, and their files handed back for removal.
//!
//! The lock is a `std::sync::Mutex`: held for one lookup or update, never
//! across an `.await` or a file operation.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::key::{Md5, relative_path};
use super::share::Share;
use crate::config::model::CachePath;

/// The memory one key takes in nginx's zone (node, rbtree and queue links,
/// slab overhead): nginx documents about 8000 keys per megabyte.
pub const NODE_BYTES: u64 = 128;

/// The fewest keys any zone holds.
const MIN_NODES: usize = 8;

/// Names one taking of a key's fill lock (never 0).
pub type LockToken = u64;

fn now_unix() -> i64 {
    crate::http::date::unix_secs(std::time::SystemTime::now())
}

/// What the zone knows of a key.
#[derive(Clone, Debug)]
struct Node {
    /// Requests for the key while it was in the zone.
    uses: u64,
    /// Requests reading the entry now.
    count: u32,
    /// A complete entry is on disk.
    exists: bool,
    /// A fill is under way (the fill lock is held).
    updating: bool,
    /// Until when the fill lock holds: taken + the taker's
    /// `proxy_cache_lock_age` (nginx's `lock_time`); later, another
    /// request may take it over.
    lock_time: Option<Instant>,
    /// Which taking of the lock holds it now (nginx compares `lock_time`):
    /// a fill lets go only of the lock it took.
    lock_token: LockToken,
    /// A status cached in place of an entry (an intercepted error, a
    /// `502`/`504`; nginx's `fcn->error`), valid until `valid_sec`; 0: none.
    error: u16,
    /// The fill under way, readable while it is written (read-while-write).
    share: Option<Arc<Share>>,
    /// Fresh until (Unix seconds).
    valid_sec: i64,
    /// Where the body starts in the file.
    body_start: u16,
    /// The file's size on disk, bytes.
    fs_size: u64,
    /// When the key expires if nobody asks for it (`inactive`).
    expire: Instant,
    /// Its place in the LRU order.
    seq: u64,
    /// Woken when a fill of the key ends (`proxy_cache_lock` waiters).
    filled: Arc<Notify>,
}

/// The index proper.
#[derive(Default)]
struct Inner {
    nodes: HashMap<Md5, Node>,
    /// LRU order: oldest first.
    lru: BTreeMap<u64, Md5>,
    next_seq: u64,
    /// Bytes on disk of the entries that exist.
    size: u64,
    /// The last lock token handed out.
    next_token: LockToken,
}

impl Inner {
    fn touch(&mut self, md5: &Md5) {
        let seq = self.next_seq;
        self.next_seq += 1;
        if let Some(n) = self.nodes.get_mut(md5) {
            self.lru.remove(&n.seq);
            n.seq = seq;
            self.lru.insert(seq, *md5);
        }
    }

    fn remove(&mut self, md5: &Md5) -> Option<Node> {
        let n = self.nodes.remove(md5)?;
        self.lru.remove(&n.seq);
        if n.exists {
            self.size = self.size.saturating_sub(n.fs_size);
        }
        n.filled.notify_waiters();
        Some(n)
    }
}

/// What a lookup found.
#[derive(Clone, Debug)]
pub enum Lookup {
    /// An entry exists: fresh until `valid_sec`, body at `body_start`.
    Entry {
        /// Fresh until (Unix seconds).
        valid_sec: i64,
        /// Where its body starts.
        body_start: u16,
        /// A fill (update) of the key is under way.
        updating: bool,
    },
    /// A status is cached for the key (`proxy_intercept_errors`, a `502`
    /// or `504` that `proxy_cache_valid` names): answer it.
    Error {
        /// The status.
        status: u16,
    },
    /// No entry; `uses` requests asked for the key so far (this one
    /// included). `cold`: the loader has not finished, a file may exist.
    Absent {
        /// Requests so far.
        uses: u64,
        /// The zone is still loading: probe the disk.
        cold: bool,
        /// A fill is under way.
        updating: bool,
    },
}

/// Counters of a zone, for the status page.
#[derive(Debug, Default)]
pub struct ZoneStats {
    /// `HIT`s.
    pub hits: AtomicU64,
    /// `MISS`es.
    pub misses: AtomicU64,
    /// `EXPIRED`.
    pub expired: AtomicU64,
    /// `STALE`.
    pub stale: AtomicU64,
    /// `UPDATING`.
    pub updating: AtomicU64,
    /// `REVALIDATED`.
    pub revalidated: AtomicU64,
    /// `BYPASS`.
    pub bypass: AtomicU64,
    /// Body bytes written into entries.
    pub bytes_filled: AtomicU64,
    /// Fills completed and published.
    pub fills: AtomicU64,
    /// Fills abandoned (the disk fell behind, the zone's backlog was full,
    /// the upstream failed, the disk was full).
    pub fills_abandoned: AtomicU64,
    /// Entries removed (inactive, over `max_size`, zone full).
    pub evictions: AtomicU64,
    /// Files the loader has read.
    pub loaded_files: AtomicU64,
    /// Bytes on disk of the entries the loader has found.
    pub loaded_bytes: AtomicU64,
    /// Passes the manager has made over the zone.
    pub manager_passes: AtomicU64,
    /// Files the manager has removed (inactive, `max_size`, `min_free`).
    pub manager_removed: AtomicU64,
    /// Requests that waited on `proxy_cache_lock` and streamed the fill
    /// under way (read-while-write), counted among the hits too.
    pub coalesced: AtomicU64,
    /// Bytes the zone's fills hold that are not on the disk yet (queued,
    /// or being written; an admitted fill counts `backlog::FILL_COST`
    /// until its first write), all workers together: a gauge, bounded by
    /// `backlog::ZONE_BACKLOG`.
    pub fill_backlog: AtomicU64,
    /// Fills not started because the zone's backlog had no room for them
    /// (their responses were served uncached).
    pub fills_skipped: AtomicU64,
}

/// One `proxy_cache_path`'s zone.
pub struct Zone {
    /// The configuration it was made for.
    pub conf: CachePath,
    /// The most keys it holds.
    max_nodes: usize,
    inner: Mutex<Inner>,
    /// The loader has not finished walking the directory.
    cold: AtomicBool,
    /// Its counters.
    pub stats: ZoneStats,
    /// The pool the requests that fill this zone run in (the disk's pool),
    /// for the manager's removals.
    pool: Mutex<Option<Arc<crate::io::Pool>>>,
}

impl std::fmt::Debug for Zone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zone")
            .field("name", &self.conf.zone)
            .finish_non_exhaustive()
    }
}

impl Zone {
    /// An empty, cold zone for `conf`.
    pub fn new(conf: CachePath) -> Zone {
        let max_nodes = ((conf.zone_size / NODE_BYTES) as usize).max(MIN_NODES);
        Zone {
            conf,
            max_nodes,
            inner: Mutex::new(Inner::default()),
            cold: AtomicBool::new(true),
            stats: ZoneStats::default(),
            pool: Mutex::new(None),
        }
    }

    /// The disk's pool, as fills have named it.
    pub fn pool(&self) -> Option<Arc<crate::io::Pool>> {
        self.pool.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A fill ran in `pool`: the manager removes files there too.
    pub fn set_pool(&self, pool: &Arc<crate::io::Pool>) {
        let mut slot = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        if !slot.as_ref().is_some_and(|p| Arc::ptr_eq(p, pool)) {
            *slot = Some(pool.clone());
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The zone's name.
    pub fn name(&self) -> &str {
        &self.conf.zone
    }

    /// The path of the entry for `md5`.
    pub fn path_of(&self, md5: &Md5) -> PathBuf {
        // Levels were checked when the configuration was read.
        self.conf
            .path
            .join(relative_path(&self.conf.levels, md5).unwrap_or_default())
    }

    /// Whether the loader is still walking the directory.
    pub fn is_cold(&self) -> bool {
        self.cold.load(Ordering::Acquire)
    }

    /// The loader has finished.
    pub fn loaded(&self) {
        self.cold.store(false, Ordering::Release);
    }

    /// Keys in the index.
    pub fn keys(&self) -> usize {
        self.lock().nodes.len()
    }

    /// Bytes on disk of the entries the index knows.
    pub fn size(&self) -> u64 {
        self.lock().size
    }

    /// A request asks for `md5`: counts the use, makes the requester a
    /// reader (call [`Zone::release`] when done), and says what is known.
    /// `evicted` receives the files of keys dropped to make room.
    pub fn lookup(&self, md5: &Md5, now: Instant, evicted: &mut Vec<PathBuf>) -> Lookup {
        let inactive = self.conf.inactive;
        let mut inner = self.lock();
        if !inner.nodes.contains_key(md5) {
            self.insert_node(&mut inner, md5, now, evicted);
        }
        inner.touch(md5);
        let cold = self.is_cold();
        let Some(n) = inner.nodes.get_mut(md5) else {
            return Lookup::Absent {
                uses: 1,
                cold,
                updating: false,
            };
        };
        n.uses += 1;
        n.count += 1;
        n.expire = now + inactive;
        if n.error != 0 {
            if n.valid_sec >= now_unix() {
                return Lookup::Error { status: n.error };
            }
            // The cached status expired: the key starts over (nginx's
            // `renew`), its file no longer counted.
            n.error = 0;
            n.valid_sec = 0;
            n.body_start = 0;
            let freed = if n.exists { n.fs_size } else { 0 };
            n.exists = false;
            n.fs_size = 0;
            inner.size = inner.size.saturating_sub(freed);
            let n = match inner.nodes.get(md5) {
                Some(n) => n,
                None => {
                    return Lookup::Absent {
                        uses: 1,
                        cold,
                        updating: false,
                    };
                }
            };
            return Lookup::Absent {
                uses: n.uses,
                cold,
                updating: n.updating,
            };
        }
        if n.exists {
            Lookup::Entry {
                valid_sec: n.valid_sec,
                body_start: n.body_start,
                updating: n.updating,
            }
        } else {
            Lookup::Absent {
                uses: n.uses,
                cold,
                updating: n.updating,
            }
        }
    }

    /// A new node for `md5`, nobody's reader yet.
    fn insert_node(&self, inner: &mut Inner, md5: &Md5, now: Instant, evicted: &mut Vec<PathBuf>) {
        self.make_room(inner, evicted);
        let seq = inner.next_seq;
        inner.next_seq += 1;
        inner.lru.insert(seq, *md5);
        inner.nodes.insert(
            *md5,
            Node {
                uses: 0,
                count: 0,
                exists: false,
                updating: false,
                lock_time: None,
                lock_token: 0,
                error: 0,
                share: None,
                valid_sec: 0,
                body_start: 0,
                fs_size: 0,
                expire: now + self.conf.inactive,
                seq,
                filled: Arc::new(Notify::new()),
            },
        );
    }

    /// Drops least recently used keys nobody reads until there is room for
    /// one more (nginx's `ngx_http_file_cache_forced_expire`).
    fn make_room(&self, inner: &mut Inner, evicted: &mut Vec<PathBuf>) {
        while inner.nodes.len() >= self.max_nodes {
            let victim = inner
                .lru
                .values()
                .find(|m| {
                    inner
                        .nodes
                        .get(*m)
                        .is_some_and(|n| n.count == 0 && !n.updating)
                })
                .copied();
            let Some(m) = victim else {
                return;
            };
            if let Some(n) = inner.remove(&m) {
                if n.exists {
                    evicted.push(self.path_of(&m));
                    self.stats.evictions.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// A reader of `md5` is done.
    pub fn release(&self, md5: &Md5) {
        if let Some(n) = self.lock().nodes.get_mut(md5) {
            n.count = n.count.saturating_sub(1);
        }
    }

    /// Takes the fill lock of `md5`: `true` when this request fills the
    /// entry. A lock older than `lock_age` is taken over, as nginx's
    /// `proxy_cache_lock_age` lets another request try.
    pub fn lock_fill(&self, md5: &Md5, now: Instant, lock_age: Duration) -> Option<LockToken> {
        let mut inner = self.lock();
        inner.next_token += 1;
        let token = inner.next_token;
        let n = inner.nodes.get_mut(md5)?;
        let stale_lock = n.lock_time.is_some_and(|until| now >= until);
        if n.updating && !stale_lock {
            return None;
        }
        n.updating = true;
        n.lock_time = Some(now + lock_age);
        n.lock_token = token;
        n.share = None;
        Some(token)
    }

    /// What a request waiting on the fill lock of `md5` waits for: woken
    /// when a fill of the key ends, or starts to share its file.
    pub fn fill_notify(&self, md5: &Md5) -> Option<Arc<Notify>> {
        self.lock().nodes.get(md5).map(|n| n.filled.clone())
    }

    /// Whether a fill of `md5` holds the lock (and until when), and the
    /// file it shares.
    pub fn fill_state(&self, md5: &Md5) -> (Option<Instant>, Option<Arc<Share>>) {
        self.lock().nodes.get(md5).map_or((None, None), |n| {
            let until = n.lock_time.filter(|_| n.updating);
            (until, n.share.clone())
        })
    }

    /// The fill holding `token` shares its file: requests waiting on the
    /// lock may stream from it.
    pub fn set_share(&self, md5: &Md5, token: LockToken, share: Arc<Share>) {
        let mut inner = self.lock();
        if let Some(n) = inner.nodes.get_mut(md5) {
            if n.updating && n.lock_token == token {
                n.share = Some(share);
                let notify = n.filled.clone();
                drop(inner);
                notify.notify_waiters();
            }
        }
    }

    /// Lets go of the lock `token` names, if it is still the one held
    /// (nginx's `fcn->lock_time == c->lock_time`), and wakes the waiters.
    fn unlock_node(n: &mut Node, token: Option<LockToken>) -> Arc<Notify> {
        if token.is_some_and(|t| t == n.lock_token) {
            n.updating = false;
            n.lock_time = None;
            n.share = None;
        }
        n.filled.clone()
    }

    /// A fill of `md5` was published: the entry exists now. `token`: the
    /// lock the fill held, let go of here.
    pub fn filled(
        &self,
        md5: &Md5,
        valid_sec: i64,
        body_start: u16,
        fs_size: u64,
        token: Option<LockToken>,
    ) -> Vec<PathBuf> {
        let mut inner = self.lock();
        let mut evicted = Vec::new();
        if !inner.nodes.contains_key(md5) {
            // A key no lookup made known (a bypassed request's fill, or
            // one dropped from a full zone while it filled).
            self.insert_node(&mut inner, md5, Instant::now(), &mut evicted);
        }
        let Some(n) = inner.nodes.get_mut(md5) else {
            return evicted;
        };
        let old = if n.exists { n.fs_size } else { 0 };
        n.exists = true;
        n.error = 0;
        n.valid_sec = valid_sec;
        n.body_start = body_start;
        n.fs_size = fs_size;
        let notify = Self::unlock_node(n, token);
        inner.size = inner.size.saturating_sub(old) + fs_size;
        drop(inner);
        notify.notify_waiters();
        evicted
    }

    /// A fill of `md5` (or a request that held its lock) ended without an
    /// entry.
    pub fn fill_failed(&self, md5: &Md5, token: Option<LockToken>) {
        let mut inner = self.lock();
        if let Some(n) = inner.nodes.get_mut(md5) {
            let notify = Self::unlock_node(n, token);
            drop(inner);
            notify.notify_waiters();
        }
    }

    /// A status is cached for `md5` until `valid_sec` (nginx's
    /// `ngx_http_file_cache_free` with `c->error`).
    pub fn set_error(&self, md5: &Md5, status: u16, valid_sec: i64, token: Option<LockToken>) {
        let mut inner = self.lock();
        if let Some(n) = inner.nodes.get_mut(md5) {
            n.error = status;
            n.valid_sec = valid_sec;
            let notify = Self::unlock_node(n, token);
            drop(inner);
            notify.notify_waiters();
        }
    }

    /// An entry was revalidated (a `304`): fresh until `valid_sec` again.
    pub fn refreshed(&self, md5: &Md5, valid_sec: i64, token: Option<LockToken>) {
        let mut inner = self.lock();
        if let Some(n) = inner.nodes.get_mut(md5) {
            n.valid_sec = valid_sec;
            let notify = Self::unlock_node(n, token);
            drop(inner);
            notify.notify_waiters();
        }
    }

    /// The entry of `md5` is not usable (a bad file): forget it.
    pub fn forget(&self, md5: &Md5) {
        let mut inner = self.lock();
        let Some(n) = inner.nodes.get_mut(md5) else {
            return;
        };
        let freed = if n.exists { n.fs_size } else { 0 };
        n.exists = false;
        n.fs_size = 0;
        inner.size = inner.size.saturating_sub(freed);
    }

    /// The loader found a file: known as existing unless a request already
    /// made the key known.
    pub fn add_loaded(
        &self,
        md5: Md5,
        valid_sec: i64,
        body_start: u16,
        fs_size: u64,
        now: Instant,
    ) {
        let mut inner = self.lock();
        if inner.nodes.contains_key(&md5) {
            return;
        }
        let mut evicted = Vec::new();
        self.make_room(&mut inner, &mut evicted);
        let seq = inner.next_seq;
        inner.next_seq += 1;
        inner.lru.insert(seq, md5);
        inner.nodes.insert(
            md5,
            Node {
                uses: 0,
                count: 0,
                exists: true,
                updating: false,
                lock_time: None,
                lock_token: 0,
                error: 0,
                share: None,
                valid_sec,
                body_start,
                fs_size,
                expire: now + self.conf.inactive,
                seq,
                filled: Arc::new(Notify::new()),
            },
        );
        inner.size += fs_size;
        self.stats.loaded_files.fetch_add(1, Ordering::Relaxed);
        self.stats
            .loaded_bytes
            .fetch_add(fs_size, Ordering::Relaxed);
        drop(inner);
        // Room made for a loaded file drops older loaded ones: their files
        // stay on disk for the manager's size check (nginx does the same).
        drop(evicted);
    }

    /// The manager's pass: keys nobody asked for within `inactive` (their
    /// files are returned for removal), then, while the entries take more
    /// than `max_size`, the least recently used ones nobody reads.
    pub fn expire(&self, now: Instant, max_size: Option<u64>, limit: usize) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut inner = self.lock();
        let candidates: Vec<Md5> = inner.lru.values().copied().collect();
        for m in candidates {
            if out.len() >= limit {
                break;
            }
            let Some(n) = inner.nodes.get(&m) else {
                continue;
            };
            let inactive = n.expire <= now;
            let over = max_size.is_some_and(|max| inner.size > max);
            if !inactive && !over {
                // The LRU order is also the expiry order: the rest are
                // younger.
                break;
            }
            if n.count > 0 || n.updating {
                continue;
            }
            if let Some(n) = inner.remove(&m) {
                if n.exists {
                    out.push(self.path_of(&m));
                    self.stats.evictions.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        out
    }

    /// The manager wants `bytes` more free: the least recently used
    /// entries nobody reads, up to `limit`, for `min_free`.
    pub fn evict_bytes(&self, bytes: u64, limit: usize) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut freed = 0;
        let mut inner = self.lock();
        let candidates: Vec<Md5> = inner.lru.values().copied().collect();
        for m in candidates {
            if freed >= bytes || out.len() >= limit {
                break;
            }
            if inner
                .nodes
                .get(&m)
                .is_some_and(|n| n.count == 0 && !n.updating && n.exists)
            {
                if let Some(n) = inner.remove(&m) {
                    freed += n.fs_size;
                    out.push(self.path_of(&m));
                    self.stats.evictions.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        out
    }
}

/// A cache path for unit tests: `path`, `levels=1:2`, zone `z` of
/// `zone_size` bytes, nginx's other defaults, short manager and loader
/// intervals.
#[cfg(test)]
pub(crate) fn test_path(path: PathBuf, zone_size: u64) -> CachePath {
    CachePath {
        path,
        levels: vec![1, 2],
        zone: "z".into(),
        zone_size,
        max_size: None,
        inactive: Duration::from_secs(600),
        use_temp_path: false,
        loc: crate::config::source::Loc {
            origin: crate::config::source::Origin::Embedded,
            line: 0,
        },
        min_free: None,
        manager_files: 100,
        manager_sleep: Duration::from_millis(50),
        manager_threshold: Duration::from_millis(200),
        loader_files: 100,
        loader_sleep: Duration::from_millis(50),
        loader_threshold: Duration::from_millis(200),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(zone_size: u64) -> CachePath {
        test_path(PathBuf::from("/c"), zone_size)
    }

    fn md5(n: u8) -> Md5 {
        [n; 16]
    }

    #[test]
    fn a_miss_is_known_without_the_disk_once_loaded() {
        let z = Zone::new(conf(1 << 20));
        let now = Instant::now();
        let mut ev = Vec::new();
        assert!(matches!(
            z.lookup(&md5(1), now, &mut ev),
            Lookup::Absent {
                uses: 1,
                cold: true,
                ..
            }
        ));
        z.loaded();
        assert!(matches!(
            z.lookup(&md5(1), now, &mut ev),
            Lookup::Absent {
                uses: 2,
                cold: false,
                ..
            }
        ));
        let first = z.lock_fill(&md5(1), now, Duration::from_secs(5));
        assert!(first.is_some());
        assert!(
            z.lock_fill(&md5(1), now, Duration::from_secs(5)).is_none(),
            "one filler"
        );
        let second = z.lock_fill(
            &md5(1),
            now + Duration::from_secs(6),
            Duration::from_secs(5),
        );
        assert!(second.is_some(), "an old lock is taken over");
        z.fill_failed(&md5(1), first);
        assert!(
            z.fill_state(&md5(1)).0.is_some(),
            "the old holder cannot let go"
        );
        z.filled(&md5(1), 100, 400, 4096, second);
        assert!(z.fill_state(&md5(1)).0.is_none(), "the holder lets go");
        assert!(matches!(
            z.lookup(&md5(1), now, &mut ev),
            Lookup::Entry {
                valid_sec: 100,
                body_start: 400,
                updating: false
            }
        ));
        assert_eq!(z.size(), 4096);
    }

    #[test]
    fn a_full_zone_drops_the_least_recently_used_unread_keys() {
        let z = Zone::new(conf(MIN_NODES as u64 * NODE_BYTES));
        let now = Instant::now();
        let mut ev = Vec::new();
        for i in 0..MIN_NODES as u8 {
            z.lookup(&md5(i), now, &mut ev);
            z.filled(&md5(i), 1, 1, 10, None);
            z.release(&md5(i));
        }
        // Key 0 is read now: key 1 is the oldest unread one.
        z.lookup(&md5(0), now, &mut ev);
        z.lookup(&md5(200), now, &mut ev);
        assert_eq!(ev, vec![z.path_of(&md5(1))]);
        assert_eq!(z.keys(), MIN_NODES);
    }

    #[test]
    fn the_manager_expires_inactive_and_oversized_entries_not_in_use() {
        let z = Zone::new(conf(1 << 20));
        let now = Instant::now();
        let mut ev = Vec::new();
        for i in 0..4u8 {
            z.lookup(&md5(i), now, &mut ev);
            z.filled(&md5(i), 1, 1, 100, None);
            if i != 2 {
                z.release(&md5(i));
            }
        }
        // Over max_size: the oldest unread go until it fits.
        let gone = z.expire(now, Some(250), 100);
        assert_eq!(gone, vec![z.path_of(&md5(0)), z.path_of(&md5(1))]);
        // Inactive: everything not in use.
        let later = now + Duration::from_secs(601);
        let gone = z.expire(later, None, 100);
        assert_eq!(gone, vec![z.path_of(&md5(3))], "key 2 is being read");
    }

    #[test]
    fn a_cached_error_is_answered_until_it_expires() {
        let z = Zone::new(conf(1 << 20));
        z.loaded();
        let now = Instant::now();
        let mut ev = Vec::new();
        z.lookup(&md5(7), now, &mut ev);
        z.set_error(&md5(7), 404, now_unix() + 60, None);
        assert!(matches!(
            z.lookup(&md5(7), now, &mut ev),
            Lookup::Error { status: 404 }
        ));
        z.set_error(&md5(7), 404, now_unix() - 1, None);
        assert!(matches!(
            z.lookup(&md5(7), now, &mut ev),
            Lookup::Absent { .. }
        ));
        // A fill clears an error.
        z.set_error(&md5(7), 502, now_unix() + 60, None);
        z.filled(&md5(7), now_unix() + 60, 300, 10, None);
        assert!(matches!(
            z.lookup(&md5(7), now, &mut ev),
            Lookup::Entry { .. }
        ));
    }
}
