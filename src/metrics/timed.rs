//! Timing every poll of a task: how long it held its worker's loop; the
//! clock reading taken at the start of that poll, which the task may use as
//! "now" instead of reading the clock again (nginx reads its clock once per
//! turn of its event loop for the same reason); and the turn's budget: a
//! task whose turn has already run its budget (`loop_turn_budget`, by
//! default [`DEFAULT_TURN_BUDGET`]) waits for the next one.
//!
//! ## Why a turn has a time budget
//!
//! A turn of a worker's loop runs the tasks its reactor woke, up to 61
//! (`LocalSet`'s batch), before it polls the reactor again. Under load every
//! connection is ready, so a turn's length was the batch times a task's
//! work: 2–5 ms when each task copies or sends a slice of a large file —
//! the loop's timers and new events waited that long, and issue 12's
//! "loop turn p99 < 1 ms" could not hold. nginx's turn has the same shape
//! (every event epoll returned, up to 512). Here a turn ends once it has
//! run for its budget: a task polled after that is left for the next
//! turn, woken as the turn ends in the order it was left, ahead of the
//! tasks the reactor wakes next (the batch's queue is a FIFO),
//! so no connection is served less often than before; the reactor and the
//! timers are polled between, and the worker gives way to other runnable
//! threads (`server::engine::worker`'s yield after each turn). A turn is thus
//! bounded by the budget plus one task's poll, whatever the number of
//! ready connections.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use super::worker;

/// How long a wall-clock reading may be derived from the monotonic clock
/// before the wall clock is read again.
const WALL_REFRESH: Duration = Duration::from_millis(500);

/// How long a turn of a worker's loop runs tasks before the tasks still
/// ready wait for the next turn (see the module's documentation), unless
/// `loop_turn_budget` says otherwise. A quarter of issue 12's 1 ms target
/// for a turn's p99: a task's poll that starts just before the budget runs
/// out still ends within it.
pub const DEFAULT_TURN_BUDGET: Duration = Duration::from_micros(250);

thread_local! {
    /// When the poll running on this thread began, if one is running.
    static POLL_START: Cell<Option<Instant>> = const { Cell::new(None) };
    /// The last clock reading of the current turn (its start, or the end of
    /// its last timed poll), while the turn runs: the next poll begins when
    /// the last one ended, with only the scheduler's few instructions
    /// between, so one reading serves as both (nginx reads its clock once
    /// per turn). `None` outside a turn.
    static LAST_READING: Cell<Option<Instant>> = const { Cell::new(None) };
    /// When the last turn of this thread's loop ended ([`end_turn`]).
    static TURN_ENDED: Cell<Option<Instant>> = const { Cell::new(None) };
    /// This thread's worker's turn budget (`loop_turn_budget`), if any.
    static TURN_BUDGET: Cell<Option<Duration>> = const { Cell::new(None) };
    /// When the current turn of this thread's worker loop has run its
    /// budget, if the thread runs one (`metrics::worker::Turns`) with a
    /// budget.
    static TURN_END: Cell<Option<Instant>> = const { Cell::new(None) };
    /// Whether the last turn left tasks for the next ([`end_turn`]).
    static TURN_CUT: Cell<bool> = const { Cell::new(false) };
    /// The tasks the current turn left for the next, in order.
    static DEFERRED: std::cell::RefCell<Vec<std::task::Waker>> =
        const { std::cell::RefCell::new(Vec::new()) };
    /// A wall-clock reading and the monotonic time it was taken at.
    static WALL: Cell<Option<(Instant, SystemTime)>> = const { Cell::new(None) };
}

/// Now, as precise as the current poll: the clock reading taken when the
/// poll began inside a [`Timed`] task (the task has held the loop for no
/// longer than that poll's recorded duration), a fresh reading elsewhere.
pub fn now() -> Instant {
    POLL_START.with(Cell::get).unwrap_or_else(Instant::now)
}

/// The time since `t`, as precise as [`now`] (zero for a `t` taken later
/// in the same poll).
pub fn since(t: Instant) -> Duration {
    now().saturating_duration_since(t)
}

/// The wall-clock time matching [`now`], for `Date` headers: derived from
/// the monotonic reading, with the wall clock read again every
/// [`WALL_REFRESH`] so that a clock change is followed within that time.
pub fn wall_now() -> SystemTime {
    let mono = now();
    WALL.with(|w| match w.get() {
        Some((at, wall)) if mono >= at && mono - at < WALL_REFRESH => wall + (mono - at),
        _ => {
            let wall = SystemTime::now();
            w.set(Some((mono, wall)));
            wall
        }
    })
}

/// This thread's worker loop gives its turns `budget` (`None`: no budget).
pub fn set_turn_budget(budget: Option<Duration>) {
    TURN_BUDGET.with(|b| b.set(budget));
}

/// A turn of this thread's worker loop begins now (`metrics::worker::Turns`).
pub fn turn_began(at: Instant) {
    let end = TURN_BUDGET.with(Cell::get).map(|b| at + b);
    TURN_END.with(|t| t.set(end));
    LAST_READING.with(|l| l.set(Some(at)));
}

/// The clock now, as the current turn last read it when that reading is
/// as good as a new one (see `LAST_READING`), read afresh otherwise; the
/// reading is taken from the turn: the caller hands back the next one with
/// [`turn_reading`].
fn turn_now() -> Instant {
    LAST_READING.with(Cell::take).unwrap_or_else(Instant::now)
}

/// `at` is the current turn's latest clock reading (see `LAST_READING`).
fn turn_reading(at: Instant) {
    LAST_READING.with(|l| l.set(Some(at)));
}

/// The turn of this thread's worker loop ended at `at`: its last reading
/// is kept for [`last_turn_ended`], and the next poll reads the clock
/// afresh (the reactor may wait between turns).
fn turn_ended_at(at: Instant) {
    LAST_READING.with(|l| l.set(None));
    TURN_ENDED.with(|t| t.set(Some(at)));
}

/// When the last turn of this thread's loop ended, if one has: a reading
/// the code between turns can use instead of the clock.
pub fn last_turn_ended() -> Option<Instant> {
    TURN_ENDED.with(Cell::get)
}

/// The turn of this thread's worker loop has ended, at `at`: the tasks it
/// left over are woken, in the order they were left, ahead of what the
/// reactor wakes next (the batch's queue is a FIFO), so none waits more
/// than one turn behind newer work. (tokio's `yield_now` defers to after
/// the reactor's poll, and wakes its deferred tasks last first.)
pub fn end_turn(at: Instant) {
    turn_ended_at(at);
    let mut left = DEFERRED.with(|d| std::mem::take(&mut *d.borrow_mut()));
    TURN_CUT.with(|c| c.set(!left.is_empty()));
    for w in left.drain(..) {
        w.wake();
    }
    // The list keeps its capacity for the next turn.
    DEFERRED.with(|d| *d.borrow_mut() = left);
}

/// Whether the last turn of this thread's loop was cut short by its
/// budget (it left tasks for the next).
pub fn last_turn_cut() -> bool {
    TURN_CUT.with(Cell::get)
}

/// Whether the current turn, if any, has run its budget by `now`.
fn turn_spent(now: Instant) -> bool {
    TURN_END.with(|t| t.get().is_some_and(|end| now >= end))
}

/// A future that records the duration of each of its polls in the current
/// worker's `poll` histogram, and waits for the next turn of the loop when
/// the current one has run its budget.
pub struct Timed<F> {
    inner: Pin<Box<F>>,
}

impl<F: Future> Timed<F> {
    /// Wraps `f`.
    pub fn new(f: F) -> Timed<F> {
        Timed { inner: Box::pin(f) }
    }
}

impl<F: Future> Future for Timed<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let start = turn_now();
        if turn_spent(start) {
            // Woken when the turn ends ([`end_turn`]): a task woken at once
            // would be polled again in the same turn, up to the batch's 61
            // polls.
            DEFERRED.with(|d| d.borrow_mut().push(cx.waker().clone()));
            turn_reading(start);
            return Poll::Pending;
        }
        let outer = POLL_START.with(|p| p.replace(Some(start)));
        let out = self.inner.as_mut().poll(cx);
        POLL_START.with(|p| p.set(outer));
        let end = Instant::now();
        turn_reading(end);
        let spent = end.saturating_duration_since(start);
        worker::with(|m| worker::record(&mut m.histograms().poll, spent));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_a_poll_now_is_the_polls_start() {
        let f = Timed::new(async {
            let a = now();
            std::thread::sleep(Duration::from_millis(2));
            (a, now())
        });
        let (a, b) = run_ready(f);
        assert_eq!(a, b, "one reading per poll");
        let outside = now();
        assert!(outside > a, "outside a poll the clock is read");
    }

    #[test]
    fn within_a_turn_a_poll_begins_at_the_reading_the_last_one_ended_with() {
        let t0 = Instant::now();
        turn_began(t0);
        let a = run_ready(Timed::new(async { now() }));
        assert_eq!(a, t0, "the turn's first poll begins at the turn's reading");
        let ended = LAST_READING
            .with(Cell::get)
            .expect("the poll's end is kept");
        assert!(ended >= a);
        std::thread::sleep(Duration::from_millis(1));
        let b = run_ready(Timed::new(async { now() }));
        assert_eq!(b, ended, "one reading ends a poll and begins the next");
        let turn_end = Instant::now();
        end_turn(turn_end);
        assert_eq!(last_turn_ended(), Some(turn_end));
        let c = run_ready(Timed::new(async { now() }));
        assert!(
            c >= b + Duration::from_millis(1),
            "between turns the clock is read again"
        );
    }

    #[test]
    fn wall_now_follows_the_system_clock() {
        let before = SystemTime::now();
        let w = wall_now();
        let after = SystemTime::now();
        assert!(w >= before - Duration::from_secs(1) && w <= after + Duration::from_secs(1));
    }

    #[test]
    fn a_task_polled_after_the_turns_budget_waits_for_the_next_turn() {
        use crate::metrics::worker::{Turns, WorkerMetrics, install};
        let m = std::sync::Arc::new(WorkerMetrics::new(3));
        install(m.clone());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        set_turn_budget(Some(DEFAULT_TURN_BUDGET));
        let local = tokio::task::LocalSet::new();
        let order = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        for i in 0..4 {
            let order = order.clone();
            local.spawn_local(Timed::new(async move {
                // Each poll outlasts the budget by itself.
                std::thread::sleep(DEFAULT_TURN_BUDGET + Duration::from_micros(50));
                order.borrow_mut().push(i);
            }));
        }
        rt.block_on(Turns::new(local.run_until(async {
            while order.borrow().len() < 4 {
                tokio::task::yield_now().await;
            }
        })));
        assert_eq!(
            *order.borrow(),
            vec![0, 1, 2, 3],
            "in the order they were ready"
        );
        let turns = m.histograms().turn.len();
        // One task per turn, where one turn would have run all four.
        assert!(turns >= 4, "turns: {turns}");
        let polls = m.histograms().poll.len();
        assert_eq!(polls, 4, "a task left for the next turn is not polled");
        set_turn_budget(None);
        TURN_END.with(|t| t.set(None));
    }

    /// Polls a future that never waits to completion.
    fn run_ready<F: Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("the future waited"),
        }
    }
}
