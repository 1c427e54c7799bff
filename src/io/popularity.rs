//! How popular each file is lately: a count-min sketch of accesses with
//! aging — TinyLFU's frequency sketch (Einziger, Friedman, Manes, "TinyLFU:
//! A Highly Efficient Cache Admission Policy", 2017) — keyed by path, so
//! that the pool runs the misses of popular files before those of cold ones
//! (see [`super::pool`] and the file layer's `rank`).
//!
//! Why by frequency: a miss of a file that many requests read is one disk
//! read that brings back data every one of them needs; a miss of a file read
//! once serves one response. Under a load of cold files the pool's FIFO
//! made the popular file's misses wait behind hundreds of cold reads, its
//! pages fell out of memory and never came back (the slow-disk lab, "hot
//! joins late"). Ordering by frequency lets it come back first; once it is
//! in memory it stops missing and stops taking pool turns.
//!
//! The sketch is small and fixed ([`DEPTH`] × [`WIDTH`] counters of 4 bits'
//! range, 16 KiB), process-wide, and forgets: after [`SAMPLE`] accesses
//! every counter is halved, so a file that was popular an hour ago ranks by
//! what it is now. A count-min sketch never under-counts; collisions can
//! only lift a cold file's rank, never sink a popular one.
//!
//! What this module must not do: hold its lock across anything but a few
//! array updates (the loops call it once per open), or take a path's bytes
//! beyond one hash.

use std::hash::Hasher;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Rows of the sketch: each access increments one counter per row; the
/// estimate is the smallest. Four rows keep collisions rare at this width.
pub const DEPTH: usize = 4;
/// Counters per row (a power of two: a row's index is 12 bits of the hash).
pub const WIDTH: usize = 4096;
/// A counter's ceiling (TinyLFU's 4-bit counters): past it a file is simply
/// "as popular as it gets", and the halving brings it back within a few
/// samples once it cools.
pub const MAX_COUNT: u8 = 15;
/// The number of distinct ranks ([`MAX_COUNT`] + 1): the pool keeps a queue
/// per rank.
pub const RANKS: usize = MAX_COUNT as usize + 1;
/// Accesses between two agings: TinyLFU's sample size, 10× the counters of
/// a row, so the sketch describes the last few tens of thousands of opens.
pub const SAMPLE: u64 = 10 * WIDTH as u64;
/// Bits of the hash each row's index takes.
const INDEX_BITS: u32 = WIDTH.trailing_zeros();

/// A frequency sketch. The process has one ([`touch`], [`rank`]); tests make
/// their own.
pub struct Sketch {
    /// The counters, `DEPTH` rows of `WIDTH`.
    rows: [[u8; WIDTH]; DEPTH],
    /// Accesses since the last aging.
    since_aging: u64,
    /// Agings so far (exported).
    agings: u64,
}

impl Default for Sketch {
    fn default() -> Self {
        Sketch::new()
    }
}

impl Sketch {
    /// An empty sketch: every file ranks 0.
    pub const fn new() -> Sketch {
        Sketch {
            rows: [[0; WIDTH]; DEPTH],
            since_aging: 0,
            agings: 0,
        }
    }

    /// Counts one access of `key` (conservative update: only the counters
    /// at the current minimum grow, which keeps collisions from inflating
    /// other keys) and returns its estimate after it. Ages the sketch every
    /// [`SAMPLE`] accesses.
    pub fn touch(&mut self, key: u64) -> u8 {
        let est = self.estimate(key);
        if est < MAX_COUNT {
            for (row, i) in indexes(key) {
                if self.rows[row][i] == est {
                    self.rows[row][i] = est + 1;
                }
            }
        }
        self.since_aging += 1;
        if self.since_aging >= SAMPLE {
            self.age();
        }
        self.estimate(key)
    }

    /// How often `key` was accessed lately, 0..=[`MAX_COUNT`].
    pub fn estimate(&self, key: u64) -> u8 {
        indexes(key)
            .map(|(row, i)| self.rows[row][i])
            .min()
            .unwrap_or(0)
    }

    /// Halves every counter (TinyLFU's reset): recent accesses weigh more
    /// than old ones, and a file nobody reads any more sinks to 0.
    pub fn age(&mut self) {
        for row in self.rows.iter_mut() {
            for c in row.iter_mut() {
                *c >>= 1;
            }
        }
        self.since_aging = 0;
        self.agings += 1;
    }

    /// Agings so far.
    pub fn agings(&self) -> u64 {
        self.agings
    }
}

/// The (row, index) pairs of `key`: 12 bits of the hash per row.
fn indexes(key: u64) -> impl Iterator<Item = (usize, usize)> {
    (0..DEPTH).map(move |row| {
        let shift = row as u32 * INDEX_BITS;
        (row, ((key >> shift) as usize) & (WIDTH - 1))
    })
}

/// The sketch's key for a path: 64 bits of FxHash of its bytes (the same in
/// every worker thread, so all loops feed one count). Hashed as bytes, not
/// as a `Path`, whose `Hash` walks its components: with SipHash that was
/// 2% of a small file's instructions.
pub fn key(path: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let mut h = rustc_hash::FxHasher::default();
    h.write(path.as_os_str().as_bytes());
    // MurmurHash3's finalizer: every bit of the key depends on every bit of
    // FxHash's, so each row's 12 bits are as good as any other's.
    let mut k = h.finish();
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

/// The process's sketch, shared by every worker loop.
static SKETCH: Mutex<Sketch> = Mutex::new(Sketch::new());
/// Accesses counted ([`touch`]), for the exporter.
static TOUCHES: AtomicU64 = AtomicU64::new(0);

fn sketch() -> std::sync::MutexGuard<'static, Sketch> {
    // A poisoned lock means a panic between two counter updates: the
    // counters are still counters, so carry on.
    SKETCH.lock().unwrap_or_else(|e| e.into_inner())
}

/// Counts one access of `path` (an open for reading: a request for the
/// file) and returns its rank now.
pub fn touch(path: &Path) -> u8 {
    let k = key(path);
    TOUCHES.fetch_add(1, Ordering::Relaxed);
    sketch().touch(k)
}

/// `path`'s rank without counting an access: how popular it is lately.
pub fn rank(path: &Path) -> u8 {
    let k = key(path);
    sketch().estimate(k)
}

/// The rank of a [`key`] already made, without counting an access.
pub fn rank_of_key(k: u64) -> u8 {
    sketch().estimate(k)
}

/// The sketch's counters, as exported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PopularityStats {
    /// Accesses counted since start.
    pub touches: u64,
    /// Agings (halvings of every counter) since start.
    pub agings: u64,
}

/// The process's sketch's counters.
pub fn stats() -> PopularityStats {
    PopularityStats {
        touches: TOUCHES.load(Ordering::Relaxed),
        agings: sketch().agings(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_read_often_ranks_above_one_read_once() {
        let mut s = Sketch::new();
        let hot = key(Path::new("/a/hot.bin"));
        let cold = key(Path::new("/a/0001.bin"));
        for _ in 0..10 {
            s.touch(hot);
        }
        s.touch(cold);
        assert_eq!(s.estimate(hot), 10);
        assert_eq!(s.estimate(cold), 1);
        assert_eq!(s.estimate(key(Path::new("/never"))), 0);
    }

    #[test]
    fn counts_stop_at_the_ceiling() {
        let mut s = Sketch::new();
        let k = key(Path::new("/x"));
        for _ in 0..100 {
            s.touch(k);
        }
        assert_eq!(s.estimate(k), MAX_COUNT);
    }

    #[test]
    fn aging_halves_after_a_sample_so_old_popularity_fades() {
        let mut s = Sketch::new();
        let old = key(Path::new("/old"));
        for _ in 0..MAX_COUNT {
            s.touch(old);
        }
        // Fill the rest of the sample with distinct other files.
        for i in 0..(SAMPLE - u64::from(MAX_COUNT)) {
            s.touch(key(Path::new(&format!("/f{i}"))));
        }
        assert_eq!(s.agings(), 1);
        assert_eq!(s.estimate(old), MAX_COUNT / 2);
        s.age();
        s.age();
        s.age();
        assert_eq!(s.estimate(old), 0);
    }

    #[test]
    fn conservative_update_keeps_a_collision_from_lifting_the_other_key() {
        // Two keys that share the counters of rows 0 and 1, not 2 and 3.
        let a = 0u64;
        let b = 1 << (2 * INDEX_BITS) | 1 << (3 * INDEX_BITS);
        let mut s = Sketch::new();
        for _ in 0..5 {
            s.touch(a);
        }
        assert_eq!(s.estimate(b), 0);
        s.touch(b);
        assert_eq!(s.estimate(b), 1);
        assert_eq!(s.estimate(a), 5);
    }

    #[test]
    fn the_same_path_has_the_same_key_everywhere() {
        assert_eq!(key(Path::new("/a/b")), key(Path::new("/a/b")));
        assert_ne!(key(Path::new("/a/b")), key(Path::new("/a/c")));
    }
}
