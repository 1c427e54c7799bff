//! How many cold bulk reads a pool lets run at once: a limit on the misses
//! of files read once or twice lately (rank below
//! [`crate::io::read_ahead::POPULAR_RANK`]) that read or `sendfile()` file
//! data, adapted to how long they take.
//!
//! Why: a pool thread's read waits in the disk's own queue, which the pool
//! cannot reorder. With every thread on a cold read (32 by default), the
//! queue of a slow disk holds a second or more of cold work, and the first
//! read of a file that just became popular waits behind all of it, however
//! early the pool's popularity order let it start (the slow-disk lab's
//! "switch" and "late" variants). Fewer cold reads at once keep that queue
//! short; a disk that is busy with a few requests serves as many bytes as
//! with many, so the cold load loses little.
//!
//! The limit follows the cold reads' own run time, TCP Vegas- and
//! Netflix-concurrency-limits-style: while their recent run time
//! (an exponential average, [`SHORT_WEIGHT`]) stays under the target, the
//! limit grows by one per limit's worth of completions; above it, the
//! limit shrinks by a tenth, at most once per recent run time. The target
//! is [`TOLERANCE`] times the fastest cold read of the last two
//! [`MIN_WINDOW`]s (what the disk takes with no queue), and never below
//! [`TARGET_FLOOR`]: a fast disk (an SSD, or data the page cache holds)
//! never meets it and keeps every thread, a disk whose every read is slow
//! (remote storage) keeps as many as keep its reads near their usual time.
//! The fastest read must be seen with few reads in flight, so the limit
//! starts at [`MIN_LIMIT`] and grows from there, and each new window
//! begins with a probe ([`PROBE`], BBR's ProbeRTT): the limit held at
//! [`MIN_LIMIT`] for a moment, so that a baseline taken at the limit's own
//! queue does not ratchet the target up window after window.
//!
//! What this module must not do: count anything but cold bulk reads, or
//! hold state outside the pool's queue lock (it is called under it).

use std::time::{Duration, Instant};

/// The fewest cold reads allowed at once.
pub const MIN_LIMIT: f64 = 2.0;
/// Weight of the newest run time in the recent average.
pub const SHORT_WEIGHT: f64 = 0.25;
/// How much slower than the fastest the recent run time may get before the
/// limit shrinks: a queue of about this many reads ahead of each.
pub const TOLERANCE: f64 = 4.0;
/// The target never goes below this: queueing that short costs no one.
pub const TARGET_FLOOR: Duration = Duration::from_millis(50);
/// The fastest run time is forgotten after this, so a disk that got slower
/// (or a cache that stopped holding the data) is measured anew.
pub const MIN_WINDOW: Duration = Duration::from_secs(30);
/// How long each window's probe holds the limit at [`MIN_LIMIT`].
pub const PROBE: Duration = Duration::from_millis(200);
/// How much a cut takes off the limit.
const CUT: f64 = 0.9;

/// The limiter's state.
#[derive(Debug)]
pub struct ColdLimit {
    /// The limit now (fractional: it grows by a fraction per completion).
    limit: f64,
    /// Its ceiling: the pool's threads.
    max: f64,
    /// Recent run time, seconds (`None` before the first completion).
    short: Option<f64>,
    /// The fastest run time in the current and the previous window.
    fastest: [Option<f64>; 2],
    /// When the current window began.
    window_start: Instant,
    /// When the limit was last cut.
    last_cut: Option<Instant>,
    /// While set, a probe holds the limit at [`MIN_LIMIT`] until then.
    probe_until: Option<Instant>,
}

impl ColdLimit {
    /// A limit for a pool of `threads`, starting at [`MIN_LIMIT`] (see the
    /// module's header).
    pub fn new(threads: usize, now: Instant) -> ColdLimit {
        ColdLimit {
            limit: MIN_LIMIT.min(threads as f64),
            max: threads as f64,
            short: None,
            fastest: [None, None],
            window_start: now,
            last_cut: None,
            probe_until: None,
        }
    }

    /// Whether one more cold read may start while `running` run.
    pub fn admits(&self, running: usize) -> bool {
        running < self.current()
    }

    /// The limit, whole (during a probe, [`MIN_LIMIT`]).
    pub fn current(&self) -> usize {
        if self.probe_until.is_some() {
            return MIN_LIMIT as usize;
        }
        self.limit.floor().max(MIN_LIMIT) as usize
    }

    /// The pool now has `threads` threads (a reload).
    pub fn resize(&mut self, threads: usize) {
        self.max = threads as f64;
        self.limit = self.limit.min(self.max);
    }

    /// The target run time now.
    pub fn target(&self) -> Duration {
        let fastest = self.fastest.iter().flatten().copied().reduce(f64::min);
        fastest.map_or(TARGET_FLOOR, |f| {
            Duration::from_secs_f64(f * TOLERANCE).max(TARGET_FLOOR)
        })
    }

    /// A cold read finished after running `took`.
    pub fn done(&mut self, took: Duration, now: Instant) {
        let t = took.as_secs_f64();
        if now.duration_since(self.window_start) >= MIN_WINDOW {
            self.fastest = [None, self.fastest[0]];
            self.window_start = now;
            self.probe_until = Some(now + PROBE);
        }
        self.fastest[0] = Some(self.fastest[0].map_or(t, |f| f.min(t)));
        let short = self.short.map_or(t, |s| s + SHORT_WEIGHT * (t - s));
        self.short = Some(short);
        if let Some(until) = self.probe_until {
            // The probe's reads measure the disk; they steer nothing.
            if now >= until {
                self.probe_until = None;
            }
            return;
        }
        let target = self.target().as_secs_f64();
        if short > target {
            // One cut per recent run time: its effect takes that long to
            // show in the run times.
            let due = self
                .last_cut
                .is_none_or(|at| now.duration_since(at).as_secs_f64() >= short);
            if due {
                self.limit = (self.limit * CUT).max(MIN_LIMIT);
                self.last_cut = Some(now);
            }
        } else if short < target * 0.8 {
            self.limit = (self.limit + 1.0 / self.limit.max(1.0)).min(self.max);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// `n` reads that each took `took`, one every `every` after `now`;
    /// the time of the last.
    fn reads(
        c: &mut ColdLimit,
        mut now: Instant,
        n: u32,
        every: Duration,
        took: Duration,
    ) -> Instant {
        for _ in 0..n {
            now += every;
            c.done(took, now);
        }
        now
    }

    #[test]
    fn fast_reads_keep_every_thread() {
        let t0 = Instant::now();
        let mut c = ColdLimit::new(32, t0);
        for i in 0..1000 {
            c.done(MS / 10, t0 + MS * i);
        }
        assert_eq!(c.current(), 32);
        assert!(c.admits(31) && !c.admits(32));
    }

    #[test]
    fn reads_slowed_by_their_own_queue_shrink_the_limit_and_recover() {
        let t0 = Instant::now();
        let mut c = ColdLimit::new(32, t0);
        // A disk that serves one read in 20 ms, queueing the rest: run time
        // grows with the reads in flight (the limit, as every thread reads).
        let mut now = t0;
        for _ in 0..2000 {
            let in_flight = c.current() as u32;
            let took = MS * 20 * in_flight.max(1);
            now += took / in_flight.max(1);
            c.done(took, now);
        }
        // Never fewer than two in flight, so the fastest seen is 40 ms and
        // the target 160 ms: between six and eight reads at once, where a
        // FIFO would have had 32 (640 ms each).
        assert!(
            (5..=8).contains(&c.current()),
            "limit {} for a disk that takes 20 ms a read",
            c.current()
        );
        // The disk gets fast (the data came into memory): back to all.
        for _ in 0..5000 {
            now += MS;
            c.done(MS / 2, now);
        }
        assert_eq!(c.current(), 32);
    }

    #[test]
    fn a_disk_whose_every_read_is_slow_keeps_its_parallelism() {
        let t0 = Instant::now();
        let mut c = ColdLimit::new(32, t0);
        // Remote storage: 200 ms a read however many are in flight.
        reads(&mut c, t0, 2000, MS * 10, MS * 200);
        assert_eq!(c.current(), 32);
    }

    #[test]
    fn never_below_the_floor_and_resizes_with_the_pool() {
        let t0 = Instant::now();
        let mut c = ColdLimit::new(32, t0);
        let now = reads(&mut c, t0, 600, MS, MS);
        assert_eq!(c.current(), 32);
        // Every read now takes a second: cut once a second, to the floor.
        let second = Duration::from_secs(1);
        reads(&mut c, now, 25, second, second);
        assert_eq!(c.current(), MIN_LIMIT as usize);
        c.resize(1);
        assert_eq!(c.current(), MIN_LIMIT as usize);
        let mut c = ColdLimit::new(16, t0);
        reads(&mut c, t0, 600, MS, MS);
        c.resize(4);
        assert_eq!(c.current(), 4);
    }

    #[test]
    fn each_window_begins_with_a_probe_at_the_floor() {
        let t0 = Instant::now();
        let mut c = ColdLimit::new(32, t0);
        reads(&mut c, t0, 600, MS, MS);
        assert_eq!(c.current(), 32);
        let now = t0 + MIN_WINDOW + MS;
        c.done(MS, now);
        assert_eq!(c.current(), MIN_LIMIT as usize);
        c.done(MS, now + PROBE + MS);
        assert_eq!(c.current(), 32);
    }
}
