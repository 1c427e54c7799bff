//! Timing every poll of a task: how long it held its worker's loop; and the
//! clock reading taken at the start of that poll, which the task may use as
//! "now" instead of reading the clock again (nginx reads its clock once per
//! turn of its event loop for the same reason).

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use super::worker;

/// How long a wall-clock reading may be derived from the monotonic clock
/// before the wall clock is read again.
const WALL_REFRESH: Duration = Duration::from_millis(500);

thread_local! {
    /// When the poll running on this thread began, if one is running.
    static POLL_START: Cell<Option<Instant>> = const { Cell::new(None) };
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

/// A future that records the duration of each of its polls in the current
/// worker's `poll` histogram.
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
        let start = Instant::now();
        let outer = POLL_START.with(|p| p.replace(Some(start)));
        let out = self.inner.as_mut().poll(cx);
        POLL_START.with(|p| p.set(outer));
        let spent = start.elapsed();
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
    fn wall_now_follows_the_system_clock() {
        let before = SystemTime::now();
        let w = wall_now();
        let after = SystemTime::now();
        assert!(w >= before - Duration::from_secs(1) && w <= after + Duration::from_secs(1));
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
