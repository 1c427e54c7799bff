//! `open_file_cache`: descriptors, metadata and lookup errors kept across
//! requests, as nginx's `ngx_open_file_cache.c` keeps them.
//!
//! Owns: the table of entries (path → open file or metadata or error),
//! their use counts, age and least-recently-used order, and the rules that
//! decide when an entry answers without a system call.
//! Must not: make a system call itself. Every open and stat — the first
//! one, and the one that checks an entry again after
//! `open_file_cache_valid` — goes through [`FileLayer`], so it runs where
//! `aio` says (the loop's non-blocking form first, then the pool). The
//! table's lock is a std mutex held for map updates only, never across I/O:
//! workers share one cache per `open_file_cache` directive, as nginx's
//! children share their parent's.
//!
//! nginx's rules, kept here:
//! - an entry younger than `open_file_cache_valid`, made under the same
//!   `disable_symlinks` rule, answers at once (a file's descriptor, a
//!   directory's metadata, or a cached error);
//! - a file keeps its descriptor once it has been asked for
//!   `open_file_cache_min_uses` times; before that only its use count is
//!   kept, and each request opens it;
//! - errors (`ENOENT`, `EACCES` …) are kept only with
//!   `open_file_cache_errors on`; otherwise a failed lookup drops its entry;
//! - a full table drops its least recently used entry to make room, and
//!   each lookup drops up to two entries unused for `inactive`.
//!
//! Where nowait differs: an entry past `open_file_cache_valid` is opened
//! again rather than `stat`ed and kept when the inode is the same; a
//! descriptor still used by a response stays open through its `Arc` until
//! that response ends, so nothing counts users by hand.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::file::{FileError, FileLayer, OpenFile, Opened};
use crate::sys::error::SysError;
use crate::sys::file::{FileKind, FileMeta, Links};

/// How many entries unused for `inactive` one lookup drops, at most
/// (nginx's `ngx_expire_old_cached_files(cache, 1, …)` drops one or two).
const EXPIRE_PER_LOOKUP: usize = 2;

/// One `open_file_cache max=N inactive=T`, shared by the levels that
/// inherit it.
#[derive(Debug)]
pub struct OpenCache {
    /// The most entries kept.
    max: usize,
    /// Entries unused this long are dropped.
    inactive: Duration,
    /// The table.
    inner: Mutex<Table>,
}

/// What a lookup is asked with: the cache (if any) and the settings of the
/// location making it.
#[derive(Clone, Copy, Debug)]
pub struct Lookup<'a> {
    /// `open_file_cache`, or `None` to look up directly.
    pub cache: Option<&'a OpenCache>,
    /// `open_file_cache_valid`.
    pub valid: Duration,
    /// `open_file_cache_min_uses`.
    pub min_uses: u32,
    /// `open_file_cache_errors`.
    pub errors: bool,
    /// The `disable_symlinks` rule for this path.
    pub links: Links,
}

/// A failed lookup as kept: enough to give the same error again.
#[derive(Clone, Copy, Debug)]
struct Failure {
    /// The call that failed (`open`, `openat`, `stat`).
    call: &'static str,
    /// Its errno.
    errno: i32,
}

/// What an entry knows.
#[derive(Clone, Debug)]
enum State {
    /// The file exists: its metadata, and its descriptor once kept.
    Found {
        meta: FileMeta,
        file: Option<OpenFile>,
    },
    /// The lookup failed (kept with `open_file_cache_errors on`).
    Failed(Failure),
}

/// One entry.
#[derive(Debug)]
struct Entry {
    state: State,
    /// The link rule it was looked up under.
    links: Links,
    /// How often it was asked for.
    uses: u32,
    /// When it was last looked up for real.
    created: Instant,
    /// When it was last asked for.
    accessed: Instant,
    /// Its place in the least-recently-used order.
    tick: u64,
}

/// The entries and their order of use.
#[derive(Debug, Default)]
struct Table {
    entries: HashMap<PathBuf, Entry>,
    /// tick → path, oldest first.
    order: BTreeMap<u64, PathBuf>,
    next_tick: u64,
}

impl Table {
    /// Marks `path`'s entry as used now.
    fn touch(&mut self, path: &Path, now: Instant) {
        let tick = self.next_tick;
        self.next_tick += 1;
        if let Some(e) = self.entries.get_mut(path) {
            self.order.remove(&e.tick);
            e.tick = tick;
            e.accessed = now;
            self.order.insert(tick, path.to_path_buf());
        }
    }

    fn remove(&mut self, path: &Path) {
        if let Some(e) = self.entries.remove(path) {
            self.order.remove(&e.tick);
        }
    }

    /// Drops up to `n` entries unused for `inactive`, oldest first.
    fn expire(&mut self, now: Instant, inactive: Duration, n: usize) {
        for _ in 0..n {
            let Some((_, path)) = self.order.first_key_value() else {
                return;
            };
            let path = path.clone();
            let idle = self
                .entries
                .get(&path)
                .map_or(Duration::MAX, |e| now.saturating_duration_since(e.accessed));
            if idle <= inactive {
                return;
            }
            self.remove(&path);
        }
    }

    /// Drops the least recently used entry.
    fn evict_oldest(&mut self) {
        if let Some((_, path)) = self.order.first_key_value() {
            let path = path.clone();
            self.remove(&path);
        }
    }
}

/// What a fresh entry can answer.
enum Answer {
    /// The cached outcome.
    Ready(Result<Opened, FileError>),
    /// It must be looked up (again).
    Lookup,
}

impl OpenCache {
    /// A cache of at most `max` entries, dropping those unused for `inactive`.
    pub fn new(max: usize, inactive: Duration) -> OpenCache {
        OpenCache {
            max: max.max(1),
            inactive,
            inner: Mutex::new(Table::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // The table stays consistent between statements: a panic elsewhere
        // cannot leave it half-updated.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many entries are kept (for tests and metrics).
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether no entry is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Counts a use of `path` and gives the entry's answer if it is fresh.
    fn ask(&self, path: &Path, lk: &Lookup<'_>, now: Instant, open: bool) -> Answer {
        let mut t = self.lock();
        t.expire(now, self.inactive, EXPIRE_PER_LOOKUP);
        let Some(e) = t.entries.get_mut(path) else {
            return Answer::Lookup;
        };
        e.uses = e.uses.saturating_add(1);
        let fresh = now.saturating_duration_since(e.created) < lk.valid && e.links == lk.links;
        let answer = match (&e.state, fresh) {
            (_, false) => Answer::Lookup,
            (State::Failed(f), true) => Answer::Ready(Err(rebuild(path, *f))),
            (State::Found { file: Some(f), .. }, true) if open => {
                Answer::Ready(Ok(Opened::Regular(f.clone())))
            }
            (State::Found { meta, .. }, true) if !open || meta.kind != FileKind::Regular => {
                Answer::Ready(Ok(Opened::Other(*meta)))
            }
            // A file not used often enough to keep its descriptor.
            (State::Found { .. }, true) => Answer::Lookup,
        };
        t.touch(path, now);
        answer
    }

    /// Records the outcome of a real lookup of `path`.
    fn record(
        &self,
        path: &Path,
        lk: &Lookup<'_>,
        now: Instant,
        outcome: Result<(FileMeta, Option<OpenFile>), Failure>,
    ) {
        let mut t = self.lock();
        if !t.entries.contains_key(path) {
            if outcome.is_err() && !lk.errors {
                return;
            }
            if t.entries.len() >= self.max {
                t.evict_oldest();
                t.expire(now, self.inactive, EXPIRE_PER_LOOKUP);
            }
            let tick = t.next_tick;
            t.next_tick += 1;
            t.order.insert(tick, path.to_path_buf());
            t.entries.insert(
                path.to_path_buf(),
                Entry {
                    state: State::Failed(Failure {
                        call: "open",
                        errno: 0,
                    }),
                    links: lk.links,
                    uses: 1,
                    created: now,
                    accessed: now,
                    tick,
                },
            );
        }
        let Some(e) = t.entries.get_mut(path) else {
            return;
        };
        match outcome {
            Err(_) if !lk.errors => {
                t.remove(path);
            }
            Err(f) => {
                e.state = State::Failed(f);
                e.links = lk.links;
                e.created = now;
            }
            Ok((meta, file)) => {
                // A descriptor is kept once the file is used often enough;
                // a stat keeps the one an open left for the same inode.
                let kept = match (&e.state, file) {
                    (_, Some(f)) => Some(f),
                    (
                        State::Found {
                            file: Some(old), ..
                        },
                        None,
                    ) if old.meta.ino == meta.ino && old.meta.dev == meta.dev => Some(old.clone()),
                    _ => None,
                };
                let file = kept.filter(|_| e.uses >= lk.min_uses);
                if let Some(f) = &file {
                    // A kept descriptor outlives the request and may be
                    // dropped by any location: its last close is checked
                    // even if an `aio off` location opened it.
                    f.fd.check_on_close();
                }
                e.state = State::Found { meta, file };
                e.links = lk.links;
                e.created = now;
            }
        }
    }
}

/// The error a cached failure stands for.
fn rebuild(path: &Path, f: Failure) -> FileError {
    FileError::Sys(SysError::with_path(
        f.call,
        path.to_path_buf(),
        std::io::Error::from_raw_os_error(f.errno),
    ))
}

/// What of a failed lookup can be kept: a system call's error only.
fn failure(e: &FileError) -> Option<Failure> {
    match e {
        FileError::Sys(s) => Some(Failure {
            call: s.call,
            errno: s.errno()?,
        }),
        _ => None,
    }
}

/// Opens `path` for reading through the cache of `lk` (a regular file's
/// descriptor, or what else it is), as `ngx_open_cached_file` does.
pub async fn open(files: FileLayer<'_>, path: &Path, lk: &Lookup<'_>) -> Result<Opened, FileError> {
    let Some(cache) = lk.cache else {
        return files.open_links(path, lk.links).await;
    };
    let now = crate::metrics::timed::now();
    if let Answer::Ready(r) = cache.ask(path, lk, now, true) {
        // A descriptor from the cache is still a request for the file: it
        // counts in the popularity of the file's misses (the open without
        // the cache counts in `files.open_links`).
        if files.pool.is_some() {
            crate::io::popularity::touch(path);
        }
        return r;
    }
    let r = files.open_links(path, lk.links).await;
    match &r {
        Ok(Opened::Regular(f)) => cache.record(path, lk, now, Ok((f.meta, Some(f.clone())))),
        Ok(Opened::Other(meta)) => cache.record(path, lk, now, Ok((*meta, None))),
        Err(e) => {
            if let Some(f) = failure(e) {
                cache.record(path, lk, now, Err(f));
            }
        }
    }
    r
}

/// The metadata of `path` through the cache of `lk` (nginx's `test_only`
/// lookups: `try_files`, `index`, `if (-f …)`).
pub async fn stat(
    files: FileLayer<'_>,
    path: &Path,
    lk: &Lookup<'_>,
) -> Result<FileMeta, FileError> {
    let Some(cache) = lk.cache else {
        return files.stat_links(path, lk.links).await;
    };
    let now = crate::metrics::timed::now();
    if let Answer::Ready(r) = cache.ask(path, lk, now, false) {
        return r.map(|o| match o {
            Opened::Regular(f) => f.meta,
            Opened::Other(m) => m,
        });
    }
    let r = files.stat_links(path, lk.links).await;
    match &r {
        Ok(meta) => cache.record(path, lk, now, Ok((*meta, None))),
        Err(e) => {
            if let Some(f) = failure(e) {
                cache.record(path, lk, now, Err(f));
            }
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::file::LinkPolicy;

    fn meta(ino: u64, kind: FileKind) -> FileMeta {
        FileMeta {
            size: 1,
            mtime_sec: 0,
            mtime_nsec: 0,
            kind,
            ino,
            dev: 1,
            mode: 0o644,
            uid: 0,
        }
    }

    fn lookup(cache: &OpenCache) -> Lookup<'_> {
        Lookup {
            cache: Some(cache),
            valid: Duration::from_secs(60),
            min_uses: 1,
            errors: false,
            links: Links::FOLLOW,
        }
    }

    #[test]
    fn a_fresh_entry_answers_without_a_lookup() {
        let c = OpenCache::new(4, Duration::from_secs(60));
        let lk = lookup(&c);
        let now = Instant::now();
        let p = Path::new("/d");
        assert!(matches!(c.ask(p, &lk, now, false), Answer::Lookup));
        c.record(p, &lk, now, Ok((meta(7, FileKind::Directory), None)));
        match c.ask(p, &lk, now, true) {
            Answer::Ready(Ok(Opened::Other(m))) => assert_eq!(m.ino, 7),
            _ => panic!("a directory's metadata answers an open"),
        }
        // Past `valid`, it is looked up again.
        let later = now + Duration::from_secs(61);
        assert!(matches!(c.ask(p, &lk, later, false), Answer::Lookup));
    }

    #[test]
    fn another_link_rule_looks_up_again() {
        let c = OpenCache::new(4, Duration::from_secs(60));
        let lk = lookup(&c);
        let now = Instant::now();
        let p = Path::new("/link");
        c.record(p, &lk, now, Ok((meta(1, FileKind::Directory), None)));
        let strict = Lookup {
            links: Links {
                policy: LinkPolicy::Refuse,
                from: 0,
            },
            ..lk
        };
        assert!(matches!(c.ask(p, &strict, now, false), Answer::Lookup));
    }

    #[test]
    fn errors_are_kept_only_when_asked() {
        let c = OpenCache::new(4, Duration::from_secs(60));
        let now = Instant::now();
        let p = Path::new("/missing");
        let enoent = Failure {
            call: "open",
            errno: libc::ENOENT,
        };
        c.record(p, &lookup(&c), now, Err(enoent));
        assert!(c.is_empty());
        let lk = Lookup {
            errors: true,
            ..lookup(&c)
        };
        c.record(p, &lk, now, Err(enoent));
        match c.ask(p, &lk, now, true) {
            Answer::Ready(Err(e)) => assert_eq!(e.errno(), Some(libc::ENOENT)),
            _ => panic!("the error is cached"),
        }
    }

    #[test]
    fn a_full_table_drops_the_least_recently_used() {
        let c = OpenCache::new(2, Duration::from_secs(60));
        let lk = lookup(&c);
        let now = Instant::now();
        for p in ["/a", "/b"] {
            c.record(
                Path::new(p),
                &lk,
                now,
                Ok((meta(1, FileKind::Directory), None)),
            );
        }
        // `/a` is used again: `/b` is now the oldest.
        let _ = c.ask(Path::new("/a"), &lk, now, false);
        c.record(
            Path::new("/c"),
            &lk,
            now,
            Ok((meta(3, FileKind::Directory), None)),
        );
        assert_eq!(c.len(), 2);
        assert!(matches!(
            c.ask(Path::new("/b"), &lk, now, false),
            Answer::Lookup
        ));
        assert!(matches!(
            c.ask(Path::new("/a"), &lk, now, false),
            Answer::Ready(_)
        ));
    }

    #[test]
    fn inactive_entries_expire_on_later_lookups() {
        let c = OpenCache::new(8, Duration::from_secs(10));
        let lk = lookup(&c);
        let now = Instant::now();
        c.record(
            Path::new("/old"),
            &lk,
            now,
            Ok((meta(1, FileKind::Directory), None)),
        );
        let later = now + Duration::from_secs(11);
        let _ = c.ask(Path::new("/other"), &lk, later, false);
        assert!(c.is_empty());
    }
}
