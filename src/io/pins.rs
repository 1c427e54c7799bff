//! Popular files held in memory while memory is short.
//!
//! While memory is short ([`super::pressure`]) a loop must not `sendfile()`
//! a file: a page can be evicted between the probe that found it and the
//! call, which then waits for its read on the loop. So the loops copy
//! (`preadv2(RWF_NOWAIT)` and a write), which costs CPU exactly when the
//! load is heaviest: the slow-disk lab's hot 4 MB file, served at ~1,900
//! req/s with `sendfile()`, went to ~1,450 while a random load kept memory
//! short, and to ~1,900 again when the same build `sendfile()`d under
//! pressure — unsafely.
//!
//! A pin makes it safe: a popular file (popularity rank of
//! [`POPULAR_RANK`] or more) is mapped and locked in memory by a pool
//! thread ([`crate::sys::file::map_locked`]: the reads its pages need are
//! the pool's, not a loop's). Its pages then stay in the page cache, up to
//! date, until the pin is dropped, and a loop `sendfile()`s them while
//! memory is short, with no probe. A response holds its file's pin (an
//! `Arc`) until it ends, so a pin evicted meanwhile is unlocked only after.
//!
//! The pins share a budget ([`budget`]: an eighth of the memory the process
//! may fill, within `RLIMIT_MEMLOCK`); a file larger than half of it is
//! never pinned. A file is admitted when there is room, or when it is more
//! popular than the least popular pin, which it replaces; a pin unused for
//! [`IDLE`] is dropped by the pressure thread's sweep ([`sweep`]). A file
//! that changed (size, mtime, inode) is a new file: its old pin ages out.
//!
//! What this module must not do: wait on a disk on a loop. [`get`] and
//! [`consider`] take a lock and look up a table; the mapping is made in the
//! pool, and dropping one (`munmap`) does no I/O.

use super::file::OpenFile;
use super::pool::{Lane, Pool};
use super::popularity;
use super::read_ahead::POPULAR_RANK;
use crate::sys::file::{FileMeta, LockedMapping};
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A pin no response has used for this long is dropped.
pub const IDLE: Duration = Duration::from_secs(30);

/// A file whose pinning failed is not tried again for this long.
const RETRY: Duration = Duration::from_secs(10);

/// The share of the process's memory the pins may hold (1 / this).
const BUDGET_SHARE: u64 = 8;

/// A file's pages locked in memory; alive while a response sends them.
#[derive(Debug)]
pub struct Pin {
    _mapping: LockedMapping,
}

/// What makes a file the same file: a pin is used only for its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Identity {
    size: u64,
    mtime_sec: i64,
    mtime_nsec: i64,
}

impl Identity {
    fn of(meta: &FileMeta) -> Identity {
        Identity {
            size: meta.size,
            mtime_sec: meta.mtime_sec,
            mtime_nsec: meta.mtime_nsec,
        }
    }
}

#[derive(Debug)]
enum State {
    /// A pool task is mapping it; its bytes are reserved.
    Pending,
    /// Locked in memory.
    Pinned(Arc<Pin>),
    /// The mapping failed at that time; retried after [`RETRY`].
    Failed(Instant),
}

#[derive(Debug)]
struct Entry {
    id: Identity,
    /// The file's key in the popularity sketch.
    key: u64,
    state: State,
    last_used: Instant,
}

impl Entry {
    /// Bytes it holds or reserves against the budget.
    fn charged(&self) -> u64 {
        match self.state {
            State::Pending | State::Pinned(_) => self.id.size,
            State::Failed(_) => 0,
        }
    }
}

/// The pins, by (device, inode).
#[derive(Debug, Default)]
struct Table {
    entries: FxHashMap<(u64, u64), Entry>,
    /// Bytes pinned or reserved.
    used: u64,
    /// Pins dropped since start (evicted, idle or stale).
    dropped: u64,
    /// Mappings that failed since start.
    failures: u64,
}

/// A file asking for a pin: its metadata, popularity key and rank now.
#[derive(Clone, Copy)]
struct Ask<'a> {
    meta: &'a FileMeta,
    key: u64,
    rank: u8,
}

/// What [`Table::admit`] decided.
#[derive(Debug, PartialEq, Eq)]
enum Admit {
    /// Reserved: map it.
    Map,
    /// Already pinned, pending, or failed lately; or not worth it.
    No,
}

impl Table {
    /// Whether a file of `meta` at popularity `rank` may be pinned now;
    /// makes room by dropping what is idle, then pins less popular than it
    /// (`rank_of` gives a pin's rank now). Dropped pins go to `gone`, to be
    /// released outside the lock.
    fn admit(
        &mut self,
        ask: Ask<'_>,
        budget: u64,
        now: Instant,
        rank_of: impl Fn(u64) -> u8,
        gone: &mut Vec<Entry>,
    ) -> Admit {
        let Ask { meta, key, rank } = ask;
        let size = meta.size;
        if rank < POPULAR_RANK || size == 0 || size > budget / 2 {
            return Admit::No;
        }
        let id = Identity::of(meta);
        let at = (meta.dev, meta.ino);
        if let Some(e) = self.entries.get(&at) {
            let retry = match e.state {
                State::Failed(t) => now.duration_since(t) >= RETRY,
                _ => false,
            };
            if e.id == id && !retry {
                return Admit::No;
            }
            // Changed since (a new version under the same inode), or time to retry.
            self.remove(at, gone);
        }
        if self.used + size > budget {
            let idle: Vec<(u64, u64)> = self
                .entries
                .iter()
                .filter(|(_, e)| {
                    matches!(e.state, State::Pinned(_)) && now.duration_since(e.last_used) >= IDLE
                })
                .map(|(k, _)| *k)
                .collect();
            for k in idle {
                self.remove(k, gone);
            }
        }
        while self.used + size > budget {
            // The least popular pin, if less popular than the newcomer.
            let victim = self
                .entries
                .iter()
                .filter(|(_, e)| matches!(e.state, State::Pinned(_)))
                .map(|(k, e)| (rank_of(e.key), *k))
                .min();
            match victim {
                Some((r, k)) if r < rank => self.remove(k, gone),
                _ => return Admit::No,
            }
        }
        self.used += size;
        self.entries.insert(
            at,
            Entry {
                id,
                key,
                state: State::Pending,
                last_used: now,
            },
        );
        Admit::Map
    }

    fn remove(&mut self, at: (u64, u64), gone: &mut Vec<Entry>) {
        if let Some(e) = self.entries.remove(&at) {
            self.used -= e.charged();
            if matches!(e.state, State::Pinned(_)) {
                self.dropped += 1;
            }
            gone.push(e);
        }
    }

    /// The outcome of a pending mapping.
    fn settle(
        &mut self,
        at: (u64, u64),
        id: Identity,
        result: std::io::Result<LockedMapping>,
        now: Instant,
    ) {
        let Some(e) = self.entries.get_mut(&at).filter(|e| e.id == id) else {
            // Removed meanwhile (a newer version took the place): the
            // mapping is dropped by the caller's return.
            return;
        };
        match result {
            Ok(m) => {
                e.state = State::Pinned(Arc::new(Pin { _mapping: m }));
                e.last_used = now;
            }
            Err(_) => {
                self.used -= e.id.size;
                e.state = State::Failed(now);
                self.failures += 1;
            }
        }
    }

    /// The pin of `meta`, marked used at `now`.
    fn get(&mut self, meta: &FileMeta, now: Instant) -> Option<Arc<Pin>> {
        let e = self.entries.get_mut(&(meta.dev, meta.ino))?;
        if e.id != Identity::of(meta) {
            return None;
        }
        match &e.state {
            State::Pinned(p) => {
                e.last_used = now;
                Some(Arc::clone(p))
            }
            _ => None,
        }
    }

    /// Drops pins idle for [`IDLE`] and failures older than [`RETRY`].
    fn sweep(&mut self, now: Instant, gone: &mut Vec<Entry>) {
        let old: Vec<(u64, u64)> = self
            .entries
            .iter()
            .filter(|(_, e)| match e.state {
                State::Pinned(_) => now.duration_since(e.last_used) >= IDLE,
                State::Failed(t) => now.duration_since(t) >= RETRY,
                State::Pending => false,
            })
            .map(|(k, _)| *k)
            .collect();
        for k in old {
            self.remove(k, gone);
        }
    }
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);
/// Bytes the pins may hold; 0 turns pinning off.
static BUDGET: AtomicU64 = AtomicU64::new(0);

fn table() -> MutexGuard<'static, Option<Table>> {
    // A panic under the lock leaves a table whose counts are still counts.
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Raises `RLIMIT_MEMLOCK` to what the pins may need when the process
/// still may (root, before it gives up root), and sets their budget. Call
/// once at startup, after [`super::pressure::open`]. Returns the budget.
pub fn init_budget() -> u64 {
    if let Some(limit) = super::pressure::memory_limit() {
        let _ = crate::sys::process::raise_memlock_limit(limit / BUDGET_SHARE);
    }
    update_budget()
}

/// Sets the budget from the memory the process may fill now
/// ([`super::pressure::memory_limit`]: a cgroup's limit can change): an
/// eighth of it, within `RLIMIT_MEMLOCK`. Reads files: the pressure thread
/// calls it, never a loop. Returns the budget.
pub fn update_budget() -> u64 {
    let budget = match super::pressure::memory_limit() {
        Some(limit) => {
            let allowed = crate::sys::process::memlock_limit().unwrap_or(0);
            (limit / BUDGET_SHARE).min(allowed)
        }
        None => 0,
    };
    BUDGET.store(budget, Ordering::Relaxed);
    budget
}

/// The pins' budget in bytes (0: pinning is off).
pub fn budget() -> u64 {
    BUDGET.load(Ordering::Relaxed)
}

/// `file`'s pin, if it has one: hold it while sending from it.
pub fn get(meta: &FileMeta) -> Option<Arc<Pin>> {
    if budget() == 0 {
        return None;
    }
    table().as_mut()?.get(meta, Instant::now())
}

/// Pins `file` if it is popular enough and fits (see the module's text):
/// the mapping is made by a task on `pool`; until it is done the file is
/// sent as before. Never waits.
pub fn consider(file: &OpenFile, pool: &Arc<Pool>) {
    let budget = budget();
    if budget == 0 || file.meta.size > budget / 2 {
        return;
    }
    let key = popularity::key(&file.path);
    let rank = popularity::rank_of_key(key);
    if rank < POPULAR_RANK {
        return;
    }
    let mut gone = Vec::new();
    let admitted = {
        let mut t = table();
        let t = t.get_or_insert_with(Table::default);
        t.admit(
            Ask {
                meta: &file.meta,
                key,
                rank,
            },
            budget,
            Instant::now(),
            popularity::rank_of_key,
            &mut gone,
        )
    };
    drop(gone);
    if admitted != Admit::Map {
        return;
    }
    let at = (file.meta.dev, file.meta.ino);
    let id = Identity::of(&file.meta);
    let fd = Arc::clone(&file.fd);
    let len = file.meta.size as usize;
    let task = move || {
        // Read in by the read path first, then mapped: the mapping's faults
        // would bring what is missing in 4 KiB folios, which every
        // sendfile() of the pinned file then pays for (see
        // `read_into_cache`). A failed read leaves it to the faults.
        let _ = crate::sys::file::read_into_cache(&**fd, 0, len as u64);
        let result = crate::sys::file::map_locked(&**fd, len);
        let mut t = table();
        if let Some(t) = t.as_mut() {
            t.settle(at, id, result, Instant::now());
        }
    };
    // A popular file's read: ahead of cold reads, as its misses are.
    if pool.submit_read(Lane::Normal, rank, task).is_err() {
        // Queue full: give the reservation back; a later request tries again.
        let mut gone = Vec::new();
        if let Some(t) = table().as_mut() {
            t.remove(at, &mut gone);
        }
    }
}

/// Drops idle pins and follows the memory limit (the pressure thread calls
/// it at each sample). Pins over a budget that shrank stay until they are
/// idle or replaced.
pub fn sweep() {
    update_budget();
    let mut gone = Vec::new();
    if let Some(t) = table().as_mut() {
        t.sweep(Instant::now(), &mut gone);
    }
    drop(gone);
}

/// The pins' counters, as exported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PinStats {
    /// Files pinned now.
    pub files: u64,
    /// Bytes pinned or being pinned now.
    pub bytes: u64,
    /// Pins dropped since start.
    pub dropped: u64,
    /// Mappings that failed since start.
    pub failures: u64,
}

/// The pins' counters now.
pub fn stats() -> PinStats {
    let t = table();
    let Some(t) = t.as_ref() else {
        return PinStats::default();
    };
    PinStats {
        files: t
            .entries
            .values()
            .filter(|e| matches!(e.state, State::Pinned(_)))
            .count() as u64,
        bytes: t.used,
        dropped: t.dropped,
        failures: t.failures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::file::FileKind;

    fn meta(ino: u64, size: u64) -> FileMeta {
        let mut m =
            crate::sys::file::fstat(std::fs::File::open("/proc/self/exe").unwrap()).unwrap();
        m.kind = FileKind::Regular;
        m.dev = 1;
        m.ino = ino;
        m.size = size;
        m
    }

    /// A real locked mapping of `len` bytes (the table only holds it).
    fn mapping(len: usize) -> LockedMapping {
        let _ = crate::sys::process::raise_memlock_limit(1 << 20);
        let exe = std::fs::File::open("/proc/self/exe").unwrap();
        crate::sys::file::map_locked(&exe, len).expect("mlock a page of the test binary")
    }

    /// A table with its budget, clock and pins' ranks, as the tests drive it.
    struct Run {
        t: Table,
        budget: u64,
        now: Instant,
        gone: Vec<Entry>,
    }

    impl Run {
        fn new(budget: u64) -> Run {
            Run {
                t: Table::default(),
                budget,
                now: Instant::now(),
                gone: Vec::new(),
            }
        }

        /// `admit` of `m` (its key is its inode) at `rank`, the pins
        /// ranked by `rank_of`.
        fn ask_ranked(&mut self, m: &FileMeta, rank: u8, rank_of: impl Fn(u64) -> u8) -> Admit {
            let ask = Ask {
                meta: m,
                key: m.ino,
                rank,
            };
            self.t
                .admit(ask, self.budget, self.now, rank_of, &mut self.gone)
        }

        fn ask(&mut self, m: &FileMeta, rank: u8) -> Admit {
            self.ask_ranked(m, rank, |_| 0)
        }

        /// Admits `m` and settles it as mapped.
        fn pin(&mut self, m: &FileMeta, rank: u8) {
            assert_eq!(self.ask(m, rank), Admit::Map);
            let mapped = mapping(m.size as usize);
            self.t
                .settle((m.dev, m.ino), Identity::of(m), Ok(mapped), self.now);
        }
    }

    #[test]
    fn a_file_below_the_popular_rank_or_too_big_is_not_pinned() {
        let mut r = Run::new(1000);
        assert_eq!(r.ask(&meta(1, 100), POPULAR_RANK - 1), Admit::No);
        assert_eq!(r.ask(&meta(1, 501), POPULAR_RANK), Admit::No, "over half");
        assert_eq!(r.ask(&meta(1, 0), POPULAR_RANK), Admit::No, "empty");
        assert_eq!(r.ask(&meta(1, 500), POPULAR_RANK), Admit::Map);
        assert_eq!(r.t.used, 500);
        assert_eq!(
            r.ask(&meta(1, 500), POPULAR_RANK),
            Admit::No,
            "pending: asked once"
        );
        assert!(
            r.t.get(&meta(1, 500), r.now).is_none(),
            "not pinned until mapped"
        );
    }

    #[test]
    fn a_pinned_file_is_found_only_as_the_same_version() {
        let mut r = Run::new(1 << 20);
        let m = meta(1, 4096);
        r.pin(&m, POPULAR_RANK);
        assert!(r.t.get(&m, r.now).is_some());
        let mut changed = m;
        changed.mtime_sec += 1;
        assert!(
            r.t.get(&changed, r.now).is_none(),
            "a changed file is not its pin"
        );
        // The changed version replaces the old pin.
        assert_eq!(r.ask(&changed, POPULAR_RANK), Admit::Map);
        assert_eq!(r.gone.len(), 1);
        assert_eq!(r.t.used, 4096);
    }

    #[test]
    fn a_more_popular_file_replaces_the_least_popular_pin_and_a_less_popular_waits() {
        let mut r = Run::new(3 * 4096);
        for ino in 1..=3 {
            r.pin(&meta(ino, 4096), POPULAR_RANK + 2);
        }
        // Ranks now: key 2 is the least popular.
        let rank_of = |k: u64| {
            if k == 2 {
                POPULAR_RANK
            } else {
                POPULAR_RANK + 3
            }
        };
        let m4 = meta(4, 4096);
        assert_eq!(
            r.ask_ranked(&m4, POPULAR_RANK, rank_of),
            Admit::No,
            "as popular: no room"
        );
        assert!(r.gone.is_empty());
        assert_eq!(r.ask_ranked(&m4, POPULAR_RANK + 1, rank_of), Admit::Map);
        assert_eq!(r.gone.len(), 1);
        assert_eq!(r.gone[0].key, 2, "the least popular pin went");
        assert_eq!(r.t.used, 3 * 4096);
        assert_eq!(r.t.dropped, 1);
    }

    #[test]
    fn idle_pins_go_first_and_the_sweep_drops_them() {
        let mut r = Run::new(8192);
        let (m1, m2) = (meta(1, 4096), meta(2, 4096));
        r.pin(&m1, POPULAR_RANK + 5);
        r.pin(&m2, POPULAR_RANK + 5);
        r.now += IDLE + Duration::from_secs(1);
        assert!(r.t.get(&m2, r.now).is_some(), "m2 used lately");
        // Full, every pin more popular than the newcomer: the idle one still goes.
        assert_eq!(
            r.ask_ranked(&meta(3, 4096), POPULAR_RANK, |_| 15),
            Admit::Map
        );
        assert_eq!(r.gone.len(), 1);
        assert_eq!(r.gone[0].key, 1);
        r.gone.clear();
        r.t.sweep(r.now + IDLE, &mut r.gone);
        assert_eq!(r.gone.len(), 1, "m2 idle since; 3 still pending");
        assert_eq!(r.t.used, 4096);
    }

    #[test]
    fn a_failed_mapping_gives_its_bytes_back_and_waits_before_a_retry() {
        let mut r = Run::new(8192);
        let m = meta(1, 4096);
        assert_eq!(r.ask(&m, POPULAR_RANK), Admit::Map);
        let failed = Err(std::io::Error::from_raw_os_error(libc::ENOMEM));
        r.t.settle((1, 1), Identity::of(&m), failed, r.now);
        assert_eq!((r.t.used, r.t.failures), (0, 1));
        assert_eq!(r.ask(&m, POPULAR_RANK), Admit::No);
        r.now += RETRY;
        assert_eq!(r.ask(&m, POPULAR_RANK), Admit::Map);
    }
}
