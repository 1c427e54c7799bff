//! Per-worker measurements.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

/// The largest duration recorded, in microseconds (one hour); longer values
/// are clamped.
const MAX_MICROS: u64 = 3_600_000_000;
/// Significant digits: 2 keeps each histogram small (tens of KiB) at 1%
/// precision, enough for percentiles.
const DIGITS: u8 = 2;

/// A file operation that has a non-blocking form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastOp {
    /// `openat2(RESOLVE_CACHED)`.
    Open,
    /// `openat2(O_PATH, RESOLVE_CACHED)` + `fstat` for index and directory checks.
    Stat,
    /// `preadv2(RWF_NOWAIT)`.
    Read,
    /// A slice of a response body copied from memory on the loop
    /// (`preadv2(RWF_NOWAIT)`) instead of a `sendfile()` that could wait.
    Body,
    /// `openat2(O_DIRECTORY, RESOLVE_CACHED)` of a directory to list.
    Dir,
}

impl FastOp {
    /// Every operation, in the order reported.
    pub const ALL: [FastOp; 5] = [
        FastOp::Open,
        FastOp::Stat,
        FastOp::Read,
        FastOp::Body,
        FastOp::Dir,
    ];

    /// The label used in the status page.
    pub fn name(self) -> &'static str {
        match self {
            FastOp::Open => "open",
            FastOp::Stat => "stat",
            FastOp::Read => "read",
            FastOp::Body => "body",
            FastOp::Dir => "opendir",
        }
    }
}

/// How a fast-path attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastOutcome {
    /// Answered on the loop without waiting.
    Hit,
    /// Would have waited: handed to the pool.
    Miss,
    /// The call is missing or the file system refuses it: the pool took it.
    Unsupported,
}

impl FastOutcome {
    /// Every outcome, in the order reported.
    pub const ALL: [FastOutcome; 3] = [
        FastOutcome::Hit,
        FastOutcome::Miss,
        FastOutcome::Unsupported,
    ];

    /// The label used in the status page.
    pub fn name(self) -> &'static str {
        match self {
            FastOutcome::Hit => "hit",
            FastOutcome::Miss => "miss",
            FastOutcome::Unsupported => "unsupported",
        }
    }
}

/// One worker's histograms (microseconds).
#[derive(Clone, Debug)]
pub struct Histograms {
    /// How long one task held the loop in one poll: a handler's run.
    pub poll: Histogram<u64>,
    /// How late the worker's periodic probe timer fired: how long the loop
    /// was held when something was due (see `server::engine::worker::lag_probe`).
    pub lag: Histogram<u64>,
    /// From a complete request head to the first byte of the response.
    pub ttfb: Histogram<u64>,
    /// One turn of the loop: from the reactor's return (the thread
    /// unparks) to the next park, measured by the runtime's park hooks
    /// (Cloudflare's `event_loop_blocked`, measured instead of sampled).
    pub turn: Histogram<u64>,
}

pub(crate) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_MICROS, DIGITS)
        .unwrap_or_else(|_| Histogram::new(DIGITS).unwrap_or_else(|_| unreachable!("valid digits")))
}

impl Default for Histograms {
    fn default() -> Self {
        Histograms {
            poll: histogram(),
            lag: histogram(),
            ttfb: histogram(),
            turn: histogram(),
        }
    }
}

/// One worker's measurements, shared between the worker (writer) and the
/// status page (reader).
#[derive(Debug)]
pub struct WorkerMetrics {
    /// The worker's number (1-based).
    pub id: usize,
    /// The histograms.
    hist: Mutex<Histograms>,
    /// Fast-path outcomes by operation and outcome.
    fast: [[AtomicU64; 3]; FastOp::ALL.len()],
    /// Requests answered.
    pub requests: AtomicU64,
    /// Connections open now.
    pub connections: AtomicU64,
    /// Bytes of read buffers the worker's client connections hold now
    /// (`server::engine::h1::conn_buf`): none for a connection waiting for a request.
    pub connection_buffers: AtomicU64,
    /// Connections parked now (`server::engine::h1::park`): held outside any task
    /// until their next request's first byte.
    pub parked: AtomicU64,
    /// Connections waiting for their next request in their own task now
    /// (`server::engine::h1::hot_wait`), the moment before they would be parked.
    pub hot_waiting: AtomicU64,
    /// The longest loop turn (µs) since the status ring last took it: the
    /// ring's per-second maximum, which cumulative counts cannot give.
    turn_max_window: AtomicU64,
}

impl WorkerMetrics {
    /// Empty measurements for worker `id`.
    pub fn new(id: usize) -> WorkerMetrics {
        WorkerMetrics {
            id,
            hist: Mutex::new(Histograms::default()),
            fast: Default::default(),
            requests: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            connection_buffers: AtomicU64::new(0),
            parked: AtomicU64::new(0),
            hot_waiting: AtomicU64::new(0),
            turn_max_window: AtomicU64::new(0),
        }
    }

    /// Records one loop turn that lasted `d`.
    pub fn turn(&self, d: Duration) {
        let us = (d.as_micros() as u64).clamp(1, MAX_MICROS);
        self.turn_max_window.fetch_max(us, Ordering::Relaxed);
        let _ = self.histograms().turn.record(us);
    }

    /// The longest turn (µs) since the last call, and starts a new window.
    pub fn take_turn_max(&self) -> u64 {
        self.turn_max_window.swap(0, Ordering::Relaxed)
    }

    /// The histograms, for reading or recording.
    pub fn histograms(&self) -> MutexGuard<'_, Histograms> {
        self.hist.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a fast-path outcome.
    pub fn fast(&self, op: FastOp, outcome: FastOutcome) {
        self.fast[op as usize][outcome as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// The count of one fast-path outcome.
    pub fn fast_count(&self, op: FastOp, outcome: FastOutcome) -> u64 {
        self.fast[op as usize][outcome as usize].load(Ordering::Relaxed)
    }
}

/// Records `d` in microseconds into `h`.
pub fn record(h: &mut Histogram<u64>, d: Duration) {
    let us = (d.as_micros() as u64).clamp(1, MAX_MICROS);
    let _ = h.record(us);
}

thread_local! {
    /// The metrics of the worker running on this thread, if any.
    static CURRENT: RefCell<Option<Arc<WorkerMetrics>>> = const { RefCell::new(None) };
}

/// A worker's main future, whose every poll is one turn of the worker's
/// event loop: the runtime polls its reactor (`epoll_wait`), then polls this
/// future, which runs the tasks the reactor woke (a `LocalSet` runs at most
/// 61 per poll and asks to be polled again if more are ready; a task is not
/// begun after the turn has run its budget, `loop_turn_budget`), then the
/// runtime polls the reactor again. Each poll's duration — from the
/// reactor's return to the next call into it, as Cloudflare's
/// `event_loop_blocked` measures nginx's — is recorded in the worker's
/// `turn` histogram; a turn in which a file operation waited on a disk
/// shows as a long one.
pub struct Turns<F> {
    inner: std::pin::Pin<Box<F>>,
}

impl<F: std::future::Future> Turns<F> {
    /// Wraps `f` (the worker's `LocalSet::run_until` future).
    pub fn new(f: F) -> Turns<F> {
        Turns { inner: Box::pin(f) }
    }
}

impl<F: std::future::Future> std::future::Future for Turns<F> {
    type Output = F::Output;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        let start = Instant::now();
        super::timed::turn_began(start);
        let out = self.inner.as_mut().poll(cx);
        let end = Instant::now();
        let spent = end.saturating_duration_since(start);
        super::timed::end_turn(end);
        with(|m| m.turn(spent));
        out
    }
}

/// Makes `m` the current thread's worker metrics.
pub fn install(m: Arc<WorkerMetrics>) {
    CURRENT.with(|c| *c.borrow_mut() = Some(m));
}

/// Runs `f` with the current worker's metrics, if this is a worker thread.
pub fn with<R>(f: impl FnOnce(&WorkerMetrics) -> R) -> Option<R> {
    CURRENT.with(|c| c.borrow().as_deref().map(f))
}

/// Counts a fast-path outcome for the current worker.
pub fn fast(op: FastOp, outcome: FastOutcome) {
    with(|m| m.fast(op, outcome));
}

/// Records a time to first byte for the current worker.
pub fn ttfb(d: Duration) {
    with(|m| record(&mut m.histograms().ttfb, d));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_poll_of_the_main_future_is_one_turn() {
        let m = Arc::new(WorkerMetrics::new(7));
        install(m.clone());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        // Three polls: two yields (each ends a turn and asks for the next)
        // and the last, which sleeps 2 ms on the loop.
        rt.block_on(Turns::new(async {
            tokio::task::yield_now().await;
            tokio::task::yield_now().await;
            std::thread::sleep(Duration::from_millis(2));
        }));
        let h = m.histograms().turn.clone();
        assert_eq!(h.len(), 3);
        assert!(h.max() >= 1_900, "microseconds: {}", h.max());
        let max = m.take_turn_max();
        assert!(max >= 1_900);
        assert_eq!(m.take_turn_max(), 0, "a new window starts");
    }
}
