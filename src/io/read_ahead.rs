//! Read-ahead for the misses of popular files: when a pool thread is about
//! to read (or `sendfile()`) a slice of a file many requests read lately,
//! it first reads the slice and the rest of that file, up to [`AHEAD`]
//! bytes past it, into the page cache as one large read
//! ([`sysfile::read_into_cache`]), and only then reads or sends its slice,
//! now from memory.
//!
//! Why: a file that becomes popular while it is cold (the lab's "switch":
//! the hot URL moves to a file no one read before) is otherwise read the
//! way a cold file is, one read-ahead window (128–256 KiB) at a time, and
//! each window's I/O waits behind every cold read already queued at the
//! device (a throttled disk serves its queue in order). Its 4 MB came back
//! in 16–32 such round trips: 5 s in the lab, for the file every connection
//! was waiting for. Asked for at once, its I/O enters the device queue
//! together and waits there once; the popularity order of the pools
//! ([`super::popularity`]) has already put the miss ahead of cold ones in
//! the pool's queue. A cold file (rank below [`POPULAR_RANK`]) keeps the
//! kernel's own read-ahead: reading ahead what one request may never read
//! would only lengthen the device queue for everyone.
//!
//! Why a read and not `posix_fadvise(WILLNEED)`, which it was: the advice
//! fills the cache with 4 KiB folios, the read path with large ones, and a
//! cached page keeps its folio for as long as it stays; every `sendfile()`
//! of the file pays per folio. In the lab's "switch", the new hot file came
//! back through the advice, was pinned in 4 KiB folios and was served at
//! 35–37% of the unloaded rate for as long as it stayed hot, while the file
//! it replaced, read in by the read path, held 85–109% (see
//! `read_into_cache`). One read of the whole range still puts its I/O in
//! the device queue at once (the kernel sizes its read-ahead by the
//! request, up to the device's largest I/O).
//!
//! Each range asked for is remembered for [`REPEAT_AFTER`] in a small
//! table, so the many connections reading the same popular file do not ask
//! again for what is already on its way. What this module must not do: run
//! on a loop (its read waits for the disk).

use std::os::fd::AsFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::sys::file as sysfile;

/// The rank ([`super::popularity`]: opens counted lately, at most 15) from
/// which a file's misses read ahead: a file several requests opened
/// recently, not one read once.
pub const POPULAR_RANK: u8 = 4;
/// The most bytes asked for past the slice being read: a popular 4 MB file
/// whole, a large one by that much ahead of its readers.
pub const AHEAD: u64 = 8 << 20;
/// How long a range asked for is taken as on its way (not asked again).
pub const REPEAT_AFTER: Duration = Duration::from_millis(500);
/// Ranges remembered: enough for the popular files of one moment.
const SLOTS: usize = 64;

/// A range asked for.
#[derive(Clone, Copy)]
struct Asked {
    /// The file's popularity key.
    key: u64,
    /// The range, `[start, end)`.
    start: u64,
    end: u64,
    /// When.
    at: Instant,
}

/// The ranges asked for lately, a slot per key (by its low bits).
static ASKED: Mutex<[Option<Asked>; SLOTS]> = Mutex::new([None; SLOTS]);
/// Bytes asked for since start (exported).
static ADVISED: AtomicU64 = AtomicU64::new(0);

/// The range to ask for before reading `len` bytes at `off` of a file of
/// `size` bytes whose rank is `rank`: `None` for a file not popular, or
/// nothing left past the slice.
pub fn plan(rank: u8, off: u64, len: u64, size: u64) -> Option<(u64, u64)> {
    if rank < POPULAR_RANK || off >= size {
        return None;
    }
    let end = off.saturating_add(len).saturating_add(AHEAD).min(size);
    (end > off.saturating_add(len)).then_some((off, end))
}

/// On a pool thread: reads `[start, end)` of `fd` (the file whose
/// popularity key is `key`) into the page cache unless that range was
/// asked for within [`REPEAT_AFTER`]. A failure is ignored: the read that
/// follows does its own I/O and reports its own error.
pub fn advise(fd: impl AsFd, key: u64, (start, end): (u64, u64)) {
    if !first_ask(key, start, end, Instant::now()) {
        return;
    }
    if let Ok(n) = sysfile::read_into_cache(&fd, start, end - start) {
        ADVISED.fetch_add(n, Ordering::Relaxed);
    }
}

/// Records `[start, end)` of `key` as asked for at `now`; `false` when a
/// range holding it was asked for less than [`REPEAT_AFTER`] ago.
fn first_ask(key: u64, start: u64, end: u64, now: Instant) -> bool {
    let mut asked = ASKED.lock().unwrap_or_else(|e| e.into_inner());
    let slot = &mut asked[(key as usize) % SLOTS];
    if let Some(a) = slot {
        let covered = a.key == key && a.start <= start && end <= a.end;
        if covered && now.duration_since(a.at) < REPEAT_AFTER {
            return false;
        }
    }
    *slot = Some(Asked {
        key,
        start,
        end,
        at: now,
    });
    true
}

/// Bytes asked for since start.
pub fn advised_bytes() -> u64 {
    ADVISED.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_popular_files_read_ahead_and_never_past_their_end() {
        assert_eq!(plan(POPULAR_RANK - 1, 0, 512 << 10, 4 << 20), None);
        assert_eq!(
            plan(POPULAR_RANK, 0, 512 << 10, 4 << 20),
            Some((0, 4 << 20))
        );
        // A large file: AHEAD past the slice.
        let big = 1 << 30;
        assert_eq!(
            plan(15, 1 << 20, 1 << 20, big),
            Some((1 << 20, (2 << 20) + AHEAD))
        );
        // The slice reaches the end: nothing to ask for.
        assert_eq!(plan(15, 0, 4 << 20, 4 << 20), None);
        assert_eq!(plan(15, 4 << 20, 1, 4 << 20), None);
    }

    #[test]
    fn a_range_asked_for_is_not_asked_again_at_once() {
        let t = Instant::now();
        let key = 0x5eed_0000_0000_0001;
        assert!(first_ask(key, 0, 100, t));
        assert!(!first_ask(key, 10, 90, t + Duration::from_millis(1)));
        // Beyond what was asked, or later: asked again.
        assert!(first_ask(key, 0, 200, t + Duration::from_millis(2)));
        assert!(first_ask(key, 0, 100, t + REPEAT_AFTER * 2));
    }

    #[test]
    fn the_range_is_read_for_a_real_file() {
        let dir = std::env::temp_dir().join(format!("nowait-ra-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        std::fs::write(&path, vec![1u8; 64 << 10]).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let before = advised_bytes();
        advise(&f, super::super::popularity::key(&path), (0, 64 << 10));
        assert!(advised_bytes() >= before + (64 << 10));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
