//! Named, bounded thread pools with nginx's semantics
//! (`src/core/ngx_thread_pool.c`).
//!
//! A pool is one FIFO task queue, shared by all worker loops, and `threads`
//! threads named `NAME#i` that run its tasks. nowait adds a second lane in
//! front of it ([`Lane::Front`]) for short tasks that finish a response
//! the loop was serving from memory, so that a hole in a hot file does not
//! wait behind cold files' reads (see `server::core::send`). Behind the front lane,
//! tasks are ordered by *rank* — how popular the file they serve is lately
//! ([`super::popularity`]) — then FIFO: a miss of a file many requests read
//! runs before older misses of files read once, so popular data that fell
//! out of memory comes back first. Every task of rank 0 (the default) keeps
//! nginx's FIFO exactly. Reads of file data for files below the popular
//! rank (cold reads) run at most as many at once as the pool's *cold
//! limit* ([`cold`]), which follows how long they take: so that the disk's
//! own queue, which the pool cannot reorder, never fills with cold work
//! ahead of a popular file's read. `max_queue` bounds the tasks
//! *waiting* for a thread, not those running: a task is accepted when
//! `queued - idle < max_queue`, so `max_queue=0` accepts a task only while a
//! thread is idle. A full queue fails at once with
//! `thread pool "NAME" queue overflow: N tasks waiting`; the caller turns that
//! into an error response, never a wait.
//!
//! The queue is a `std::sync::Mutex<VecDeque>` with a `Condvar`, as in nginx:
//! the lock is held only to push or pop one boxed task, never across a task or
//! an `.await`, so loops contend on it for nanoseconds. Completion goes back
//! through a `tokio::sync::oneshot`, which wakes the posting task on whatever
//! runtime it runs (each worker has its own current-thread runtime).

use super::completion::{Completion, SubmitError};
use super::popularity::RANKS;
use super::read_ahead::POPULAR_RANK;
/// The numbers a pool hands the metrics layer are the metrics layer's types.
pub use crate::metrics::pools::{PoolStats, PoolTimings};
use crate::sys::sched::{NICE_MAX, NICE_MIN, lower_thread_priority, set_thread_priority};
use crate::sys::signal::block_all_in_thread;
use cold::ColdLimit;
use hdrhistogram::Histogram;
use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Linux keeps at most 15 bytes of a thread name (16 with the NUL).
const THREAD_NAME_MAX: usize = 15;

/// How much lower than the loops a pool thread runs (nice steps): at +10 the
/// scheduler weighs a loop nine times a pool thread when both want a CPU.
/// Counted from the loops' `worker_priority` when one is set (pools stay
/// below the loops whatever their priority), else from the nice value the
/// thread inherits, which the loops keep too; capped at 19, so loops at 10
/// or more share the lowest priority with their pools.
pub const POOL_NICE: i32 = 10;

/// Largest queue-wait or run time the histograms record, in microseconds
/// (one hour); longer values are clamped to it.
const MAX_RECORDED_MICROS: u64 = 3_600_000_000;
/// Significant digits of the timing histograms: 2 keeps each one ~26 KiB, so
/// the default pool's 32 threads × 2 histograms cost under 2 MiB, at 1%
/// precision, which percentiles for a dashboard do not need more of.
const HISTOGRAM_DIGITS: u8 = 2;

/// A unit of work on a pool thread: the task and when it was queued.
struct Job {
    /// The task, its result slot and its completion sender, in one allocation.
    task: Box<dyn Task>,
    /// When [`Pool::submit`] queued it, for the queue-wait histogram.
    queued_at: Instant,
    /// Its place in submission order, to tell when a thread takes it ahead
    /// of an older task (the `promoted` counter).
    seq: u64,
    /// A cold bulk read: a read or `sendfile()` of file data whose file
    /// ranks below [`COLD_RANKS`], which runs only within the cold limit
    /// ([`cold`]).
    cold: bool,
}

/// Ranks whose bulk reads count as cold ([`cold`]): those of files not
/// popular enough for read-ahead.
const COLD_RANKS: usize = POPULAR_RANK as usize;

/// A type-erased task, run and delivered in two steps so that the thread is
/// counted idle again *before* the submitter learns the task is done: whoever
/// awaits a completion and submits again finds that thread free, which makes
/// `max_queue=0` behave predictably.
trait Task: Send {
    /// Runs the closure (catching a panic) and keeps its result.
    fn run(&mut self);
    /// Sends the kept result to the [`Completion`].
    fn deliver(self: Box<Self>);
}

/// The one [`Task`] implementation.
struct Pending<F, T> {
    /// The closure, until run.
    f: Option<F>,
    /// Its outcome, `Err` if it panicked; `None` until run.
    result: Option<Result<T, ()>>,
    /// Where the outcome goes.
    tx: oneshot::Sender<Result<T, ()>>,
}

impl<F, T> Task for Pending<F, T>
where
    F: FnOnce() -> T + Send,
    T: Send,
{
    fn run(&mut self) {
        if let Some(f) = self.f.take() {
            self.result = Some(catch_unwind(AssertUnwindSafe(f)).map_err(|_| ()));
        }
    }

    fn deliver(self: Box<Self>) {
        if let Some(r) = self.result {
            // The receiver may be gone (client left): nothing to tell then.
            let _ = self.tx.send(r);
        }
    }
}

/// Which queue a task joins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// The FIFO queue, nginx's only one.
    Normal,
    /// Ahead of every [`Lane::Normal`] task (FIFO among themselves): for
    /// short tasks whose delay would hold up data otherwise served from
    /// memory.
    Front,
}

/// What the queue lock protects.
struct Queue {
    /// [`Lane::Normal`] tasks not yet taken by a thread, one queue per rank,
    /// oldest first in each; the highest non-empty rank is taken first.
    ranked: [VecDeque<Job>; RANKS],
    /// Cold bulk reads (see [`Job::cold`]) not yet taken, one queue per
    /// rank below [`COLD_RANKS`]; taken in rank and age order with
    /// `ranked`, while the cold limit allows.
    cold: [VecDeque<Job>; COLD_RANKS],
    /// Cold bulk reads running now.
    cold_running: usize,
    /// How many may run at once ([`cold`]).
    cold_limit: ColdLimit,
    /// [`Lane::Front`] tasks, taken before any of `ranked`.
    front: VecDeque<Job>,
    /// Tasks in `ranked` and `cold` (all ranks).
    normal: usize,
    /// The next task's [`Job::seq`].
    next_seq: u64,
    /// Threads not running a task (nginx's `-waiting` at rest). Starts at
    /// `threads` so admission is deterministic before the threads get going.
    idle: usize,
    /// Set by [`Pool::shutdown`]/drop: threads exit once the queues are empty.
    closing: bool,
    /// Threads the pool should have (`threads=`, changed by a reload).
    target: usize,
    /// Threads alive now; above `target`, idle threads exit.
    alive: usize,
}

impl Queue {
    /// Tasks that will not find an idle thread: nginx's `waiting`, floored at 0.
    fn waiting(&self) -> usize {
        self.queued().saturating_sub(self.idle)
    }

    /// Tasks in either lane.
    fn queued(&self) -> usize {
        self.normal + self.front.len()
    }

    /// Queues `job` in `lane` at `rank` (clamped to the highest rank).
    fn push(&mut self, lane: Lane, rank: u8, job: Job) {
        match lane {
            Lane::Front => self.front.push_back(job),
            Lane::Normal => {
                let r = usize::from(rank).min(RANKS - 1);
                if job.cold && r < COLD_RANKS {
                    self.cold[r].push_back(job);
                } else {
                    self.ranked[r].push_back(job);
                }
                self.normal += 1;
            }
        }
    }

    /// The next task to run — the front lane's oldest, else the oldest of
    /// the highest rank (a cold bulk read only while the cold limit allows
    /// one more) — whether an older task is still waiting (it was
    /// promoted), and whether it is a cold bulk read.
    fn pop(&mut self) -> Option<(Job, bool, bool)> {
        let (job, cold) = match self.front.pop_front() {
            Some(j) => (j, false),
            None => {
                let cold_ok = self.cold_limit.admits(self.cold_running);
                let r = (0..RANKS).rev().find(|&r| {
                    !self.ranked[r].is_empty()
                        || (cold_ok && r < COLD_RANKS && !self.cold[r].is_empty())
                })?;
                // Within a rank, the older of its next task and (if it may
                // run) its next cold read.
                let cold_seq = (cold_ok && r < COLD_RANKS)
                    .then(|| self.cold[r].front().map(|j| j.seq))
                    .flatten();
                let plain_seq = self.ranked[r].front().map(|j| j.seq);
                let take_cold = match (cold_seq, plain_seq) {
                    (Some(c), Some(p)) => c < p,
                    (Some(_), None) => true,
                    _ => false,
                };
                self.normal -= 1;
                if take_cold {
                    self.cold_running += 1;
                    (self.cold[r].pop_front()?, true)
                } else {
                    (self.ranked[r].pop_front()?, false)
                }
            }
        };
        let older = self
            .ranked
            .iter()
            .chain(self.cold.iter())
            .chain(std::iter::once(&self.front))
            .filter_map(|q| q.front())
            .any(|other| other.seq < job.seq);
        Some((job, older, cold))
    }

    /// A cold bulk read that ran `took` has finished.
    fn cold_done(&mut self, took: Duration, now: Instant) {
        self.cold_running -= 1;
        self.cold_limit.done(took, now);
    }
}

/// Per-thread timings. Each pool thread records into its own histogram pair
/// after every task, so the lock is uncontended except while a metrics reader
/// merges them ([`Pool::timings`]); one shared pair would make every task
/// completion contend on one lock across all threads.
struct Timings {
    /// Time from submit to a thread taking the task, µs.
    queue_wait: Histogram<u64>,
    /// Time the task ran, µs.
    run: Histogram<u64>,
}

impl Timings {
    fn new() -> Timings {
        Timings {
            queue_wait: new_histogram(),
            run: new_histogram(),
        }
    }
}

fn new_histogram() -> Histogram<u64> {
    // The bounds are constants that hdrhistogram accepts (1 ≤ low, high ≥ 2·low,
    // digits ≤ 5), so this cannot fail.
    Histogram::new_with_bounds(1, MAX_RECORDED_MICROS, HISTOGRAM_DIGITS)
        .expect("constant histogram bounds are valid")
}

/// State shared between the pool handle and its threads.
struct Shared {
    /// The pool's name, as in `thread_pool NAME`; shared with errors.
    name: Arc<str>,
    /// `threads=` (a reload may change it).
    threads: AtomicUsize,
    /// `max_queue=` (a reload may change it).
    max_queue: AtomicUsize,
    /// The task queue.
    queue: Mutex<Queue>,
    /// Signalled when a task is queued or the pool closes.
    ready: Condvar,
    /// Mirror of [`Queue::waiting`] for lock-free metric reads.
    waiting: AtomicUsize,
    /// Tasks running now.
    running: AtomicUsize,
    /// Tasks accepted by [`Pool::submit`].
    submitted: AtomicU64,
    /// Tasks finished (including those that panicked).
    completed: AtomicU64,
    /// Submissions refused because the queue was full.
    overflows: AtomicU64,
    /// Tasks accepted into [`Lane::Front`].
    front: AtomicU64,
    /// Tasks a thread took while an older task still waited (front lane or
    /// higher rank).
    promoted: AtomicU64,
    /// Mirror of the cold limit ([`cold`]) for lock-free metric reads.
    cold_limit: AtomicUsize,
    /// One timing pair per thread ever started (a thread that exits after
    /// a resize leaves its history).
    timings: Mutex<Vec<Arc<Mutex<Timings>>>>,
    /// Threads started so far, for naming the next `NAME#i`.
    started: AtomicUsize,
    /// Run first on every thread (the process drops privileges there).
    init: Option<ThreadInit>,
    /// The loops' nice value (`worker_priority`), which the threads run
    /// [`POOL_NICE`] below; `None` when the loops keep the inherited one.
    loop_nice: Option<i32>,
}

impl Shared {
    /// Locks the queue. A poisoned lock only means a thread panicked between
    /// push and pop, which leaves the queue consistent, so carry on.
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A named, bounded thread pool. Cheap to share as `Arc<Pool>`.
pub struct Pool {
    shared: Arc<Shared>,
    /// Join handles, taken by [`Pool::shutdown`].
    handles: Mutex<Vec<JoinHandle<()>>>,
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("name", &self.shared.name)
            .field("threads", &self.shared.threads.load(Ordering::Relaxed))
            .field("max_queue", &self.shared.max_queue.load(Ordering::Relaxed))
            .finish()
    }
}

/// Code run at the start of each pool thread, before it takes tasks.
pub type ThreadInit = Arc<dyn Fn() + Send + Sync>;

impl Pool {
    /// Starts `threads` threads named `NAME#1`…`NAME#N` (see [`thread_name`]).
    /// `threads` must be at least 1 (`EINVAL` otherwise, as nginx refuses
    /// `threads=0`); a thread that cannot be spawned is returned as its error.
    pub fn new(name: &str, threads: usize, max_queue: usize) -> io::Result<Arc<Pool>> {
        Pool::with_thread_init(name, threads, max_queue, None, None)
    }

    /// As [`Pool::new`], with `init` run first on every pool thread (the
    /// process layer drops the thread's privileges there), and the threads
    /// [`POOL_NICE`] below `loop_nice`, the loops' `worker_priority`, when
    /// it is set.
    pub fn with_thread_init(
        name: &str,
        threads: usize,
        max_queue: usize,
        init: Option<ThreadInit>,
        loop_nice: Option<i32>,
    ) -> io::Result<Arc<Pool>> {
        if threads == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let cold_limit = ColdLimit::new(threads, Instant::now());
        let cold_limit_now = cold_limit.current();
        let shared = Arc::new(Shared {
            name: Arc::from(name),
            threads: AtomicUsize::new(threads),
            max_queue: AtomicUsize::new(max_queue),
            queue: Mutex::new(Queue {
                ranked: std::array::from_fn(|_| VecDeque::new()),
                cold: std::array::from_fn(|_| VecDeque::new()),
                cold_running: 0,
                cold_limit,
                front: VecDeque::new(),
                normal: 0,
                next_seq: 0,
                idle: 0,
                closing: false,
                target: threads,
                alive: 0,
            }),
            ready: Condvar::new(),
            waiting: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            submitted: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            overflows: AtomicU64::new(0),
            front: AtomicU64::new(0),
            promoted: AtomicU64::new(0),
            cold_limit: AtomicUsize::new(cold_limit_now),
            timings: Mutex::new(Vec::with_capacity(threads)),
            started: AtomicUsize::new(0),
            init,
            loop_nice,
        });
        let pool = Arc::new(Pool {
            shared,
            handles: Mutex::new(Vec::with_capacity(threads)),
        });
        if let Err(e) = pool.spawn(threads) {
            pool.close();
            return Err(e);
        }
        Ok(pool)
    }

    /// Starts `n` more threads and returns once each has run `init`, so
    /// that nothing observes a thread before it is ready (e.g. still root).
    fn spawn(&self, n: usize) -> io::Result<()> {
        let s = &self.shared;
        {
            // Counted before they run, so admission is deterministic.
            let mut q = s.lock();
            q.idle += n;
            q.alive += n;
        }
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
        let mut spawned = 0;
        let mut failure = None;
        for _ in 0..n {
            let number = s.started.fetch_add(1, Ordering::Relaxed) + 1;
            let timings = Arc::new(Mutex::new(Timings::new()));
            s.timings
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(timings.clone());
            let shared = Arc::clone(s);
            let ready = ready_tx.clone();
            let result = thread::Builder::new()
                .name(thread_name(&s.name, number))
                .spawn(move || {
                    if let Some(init) = &shared.init {
                        init();
                    }
                    let _ = ready.send(());
                    drop(ready);
                    worker(&shared, &timings)
                });
            match result {
                Ok(h) => {
                    self.lock_handles().push(h);
                    spawned += 1;
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        drop(ready_tx);
        if spawned < n {
            let mut q = s.lock();
            q.idle -= n - spawned;
            q.alive -= n - spawned;
        }
        for _ in 0..spawned {
            // A thread that died before saying so ends the wait early.
            if ready_rx.recv().is_err() {
                break;
            }
        }
        failure.map_or(Ok(()), Err)
    }

    /// Gives the pool `threads` threads and a queue of `max_queue`, as a
    /// reload that changes `thread_pool NAME threads=… max_queue=…` asks:
    /// new threads start at once; surplus threads exit as soon as they are
    /// idle (a running task is never interrupted). The pool stays one pool
    /// for the life of the process, so a reload never runs two of a name.
    pub fn resize(&self, threads: usize, max_queue: usize) -> io::Result<()> {
        if threads == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let s = &self.shared;
        s.max_queue.store(max_queue, Ordering::Relaxed);
        s.threads.store(threads, Ordering::Relaxed);
        let more = {
            let mut q = s.lock();
            q.target = threads;
            q.cold_limit.resize(threads);
            s.cold_limit
                .store(q.cold_limit.current(), Ordering::Relaxed);
            threads.saturating_sub(q.alive)
        };
        s.ready.notify_all();
        if more > 0 {
            self.spawn(more)?;
        }
        Ok(())
    }

    /// Threads alive now (after a shrink, until the surplus has exited).
    pub fn alive(&self) -> usize {
        self.shared.lock().alive
    }

    /// The pool's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Queues `task` for a pool thread, or fails at once if `max_queue` tasks
    /// are already waiting (or the pool is shut down). Never blocks beyond the
    /// queue lock. Await the returned [`Completion`] for the task's result.
    pub fn submit<T, F>(&self, task: F) -> Result<Completion<T>, SubmitError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.submit_to(Lane::Normal, task)
    }

    /// [`submit`](Self::submit) into `lane`. Both lanes count against
    /// `max_queue` alike.
    pub fn submit_to<T, F>(&self, lane: Lane, task: F) -> Result<Completion<T>, SubmitError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.submit_ranked(lane, 0, task)
    }

    /// [`submit_to`](Self::submit_to) at `rank` (0..[`RANKS`]; higher is
    /// clamped): in [`Lane::Normal`], a task is taken after every waiting
    /// task of a higher rank and before every one of a lower rank, FIFO
    /// among its own. The file layer passes the popularity of the file the
    /// task serves ([`super::popularity::rank`]).
    pub fn submit_ranked<T, F>(
        &self,
        lane: Lane,
        rank: u8,
        task: F,
    ) -> Result<Completion<T>, SubmitError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.submit_job(lane, rank, false, task)
    }

    /// [`submit_ranked`](Self::submit_ranked) for a bulk read (a read or
    /// `sendfile()` of file data): below [`POPULAR_RANK`] in
    /// [`Lane::Normal`] it is a cold read, which runs only within the pool's
    /// cold limit ([`cold`]), so that cold reads never fill the disk's
    /// queue ahead of a popular file's.
    pub fn submit_read<T, F>(
        &self,
        lane: Lane,
        rank: u8,
        task: F,
    ) -> Result<Completion<T>, SubmitError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.submit_job(lane, rank, true, task)
    }

    fn submit_job<T, F>(
        &self,
        lane: Lane,
        rank: u8,
        read: bool,
        task: F,
    ) -> Result<Completion<T>, SubmitError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let task = Box::new(Pending {
            f: Some(task),
            result: None,
            tx,
        });
        let mut job = Job {
            task,
            queued_at: Instant::now(),
            seq: 0,
            cold: read && lane == Lane::Normal && usize::from(rank) < COLD_RANKS,
        };
        let s = &self.shared;
        {
            let mut q = s.lock();
            if q.closing {
                return Err(SubmitError::Closed {
                    pool: Arc::clone(&s.name),
                });
            }
            let waiting = q.waiting();
            if q.queued() >= q.idle + s.max_queue.load(Ordering::Relaxed) {
                drop(q);
                s.overflows.fetch_add(1, Ordering::Relaxed);
                return Err(SubmitError::Overflow {
                    pool: Arc::clone(&s.name),
                    waiting,
                });
            }
            job.seq = q.next_seq;
            q.next_seq += 1;
            q.push(lane, rank, job);
            s.waiting.store(q.waiting(), Ordering::Relaxed);
        }
        s.submitted.fetch_add(1, Ordering::Relaxed);
        if lane == Lane::Front {
            s.front.fetch_add(1, Ordering::Relaxed);
        }
        s.ready.notify_one();
        Ok(Completion::new(rx, Arc::clone(&s.name)))
    }

    /// Counters, read without locking.
    pub fn stats(&self) -> PoolStats {
        let s = &self.shared;
        PoolStats {
            threads: s.threads.load(Ordering::Relaxed),
            max_queue: s.max_queue.load(Ordering::Relaxed),
            waiting: s.waiting.load(Ordering::Relaxed),
            running: s.running.load(Ordering::Relaxed),
            submitted: s.submitted.load(Ordering::Relaxed),
            completed: s.completed.load(Ordering::Relaxed),
            overflows: s.overflows.load(Ordering::Relaxed),
            front: s.front.load(Ordering::Relaxed),
            promoted: s.promoted.load(Ordering::Relaxed),
            cold_limit: s.cold_limit.load(Ordering::Relaxed),
        }
    }

    /// Queue-wait and run-time histograms (µs), merged over the threads.
    /// Takes each thread's lock briefly; call from the metrics exporter, not a
    /// loop's hot path.
    pub fn timings(&self) -> PoolTimings {
        let mut merged = PoolTimings {
            queue_wait: new_histogram(),
            run: new_histogram(),
        };
        let all = self
            .shared
            .timings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for t in all.iter() {
            let t = t.lock().unwrap_or_else(|e| e.into_inner());
            // Same bounds on both sides, so adding cannot fail.
            let _ = merged.queue_wait.add(&t.queue_wait);
            let _ = merged.run.add(&t.run);
        }
        merged
    }

    /// Refuses new tasks, lets the threads drain the queue, and joins them.
    /// Blocks until every queued task has run: call at exit, off the loops.
    /// Called from one of the pool's own threads it joins the others only.
    pub fn shutdown(&self) {
        self.close();
        let handles = std::mem::take(&mut *self.lock_handles());
        let me = thread::current().id();
        for h in handles {
            if h.thread().id() != me {
                let _ = h.join();
            }
        }
    }

    /// Marks the pool closing and wakes every thread.
    pub fn close(&self) {
        self.shared.lock().closing = true;
        self.shared.ready.notify_all();
    }

    fn lock_handles(&self) -> MutexGuard<'_, Vec<JoinHandle<()>>> {
        self.handles.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Pool {
    /// Closes the pool without joining: the threads finish the queue and exit
    /// on their own, so dropping never hangs on a task stuck on a dead disk.
    fn drop(&mut self) {
        self.close();
    }
}

/// Puts the calling pool thread [`POOL_NICE`] below the loops: below
/// `loop_nice` when the loops set one, else below the inherited value. A
/// target under the inherited value needs privilege (`RLIMIT_NICE` or
/// `CAP_SYS_NICE`); without it the loops could not take theirs either, and
/// kept the inherited value, so the thread goes below that instead.
fn set_pool_priority(loop_nice: Option<i32>) {
    let set = loop_nice.is_some_and(|n| {
        let target = n.clamp(NICE_MIN, NICE_MAX).saturating_add(POOL_NICE);
        set_thread_priority(target.min(NICE_MAX)).is_ok()
    });
    if !set {
        let _ = lower_thread_priority(POOL_NICE);
    }
}

/// A pool thread: take the next task (see [`Queue::pop`]), run it, record timings, repeat;
/// exit once the pool is closing and the queue is empty, or when a resize
/// left more threads than wanted and this one is idle.
fn worker(shared: &Shared, timings: &Mutex<Timings>) {
    // Signals belong to the signal thread; a failure here only means the
    // mask stays as inherited (already blocking the control signals).
    let _ = block_all_in_thread();
    // The loops' CPU comes first: a pool thread that has CPU work (a copy
    // out of the page cache, a cache file's write) while a loop waits for
    // a CPU yields it to the loop; it runs at full speed on a CPU nobody
    // else wants. Failing to lower it only leaves it an equal.
    set_pool_priority(shared.loop_nice);
    let mut q = shared.lock();
    loop {
        if let Some((mut job, promoted, cold)) = q.pop() {
            q.idle -= 1;
            if promoted {
                shared.promoted.fetch_add(1, Ordering::Relaxed);
            }
            shared.waiting.store(q.waiting(), Ordering::Relaxed);
            drop(q);
            shared.running.fetch_add(1, Ordering::Relaxed);
            let started = Instant::now();
            job.task.run();
            let finished = Instant::now();
            record(timings, started - job.queued_at, finished - started);
            shared.running.fetch_sub(1, Ordering::Relaxed);
            shared.completed.fetch_add(1, Ordering::Relaxed);
            q = shared.lock();
            q.idle += 1;
            if cold {
                let before = q.cold_limit.current();
                q.cold_done(finished - started, finished);
                shared
                    .cold_limit
                    .store(q.cold_limit.current(), Ordering::Relaxed);
                if q.cold_limit.current() > before {
                    // Room for one more cold read than this thread takes.
                    shared.ready.notify_one();
                }
            }
            shared.waiting.store(q.waiting(), Ordering::Relaxed);
            drop(q);
            // Delivered unlocked and after counting ourselves idle (see Task).
            job.task.deliver();
            q = shared.lock();
            continue;
        }
        if q.closing {
            return;
        }
        if q.alive > q.target {
            q.alive -= 1;
            q.idle -= 1;
            shared.waiting.store(q.waiting(), Ordering::Relaxed);
            return;
        }
        q = shared.ready.wait(q).unwrap_or_else(|e| e.into_inner());
    }
}

fn record(timings: &Mutex<Timings>, queue_wait: Duration, run: Duration) {
    let mut t = timings.lock().unwrap_or_else(|e| e.into_inner());
    t.queue_wait.saturating_record(micros(queue_wait));
    t.run.saturating_record(micros(run));
}

/// Microseconds, at least 1 (the histogram's lowest value), at most the max.
fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros())
        .unwrap_or(u64::MAX)
        .clamp(1, MAX_RECORDED_MICROS)
}

/// `NAME#i`, fitted into Linux's 15 bytes by shortening NAME and keeping the
/// `#i` suffix whole, so `ps -L`/`top -H` still tell the threads apart:
/// `very_long_pool_name#12` → `very_long_po#12`.
pub fn thread_name(pool: &str, i: usize) -> String {
    let suffix = format!("#{i}");
    let room = THREAD_NAME_MAX.saturating_sub(suffix.len());
    let mut end = pool.len().min(room);
    while !pool.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{suffix}", &pool[..end])
}

mod cold;
#[cfg(test)]
mod tests;
