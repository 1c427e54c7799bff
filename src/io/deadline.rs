//! Timeouts for the waits that nearly always end long before them: an
//! upstream's answer within `proxy_read_timeout`, room in a socket within
//! `proxy_send_timeout`. The worker keeps the timers it made and reuses
//! them, as nginx's `ngx_add_timer` leaves a pending timer where it is when
//! the new deadline is only a little later.
//!
//! A `tokio::time::timeout` per wait makes a timer, enters it in the
//! runtime's wheel on its first poll and takes it out again when the wait
//! ends: about 1,500 instructions of a proxied request's 25,700. A reused
//! timer whose deadline only moves later is updated with one atomic
//! compare-and-swap (tokio's `Sleep::reset`): the wheel keeps it in its old
//! slot and, when that slot comes, finds the later deadline and moves it on.
//! With requests every few milliseconds and timeouts of a minute, that
//! happens once a minute per timer, not once per request.
//!
//! Owns: the worker's stash of idle timers, and [`Deadline`], a timer lent
//! from it for one wait.
//! Must not: lend a timer to another runtime than the one that made it.
//! Only a worker's thread keeps a stash, between [`install`] and
//! [`uninstall`], which it calls inside its runtime; elsewhere (tests,
//! helper threads) each [`Deadline`] is a timer of its own, dropped after
//! use.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// The most idle timers a worker keeps: more than the waits of a loop turn
/// need at once (a timer goes back when its wait ends).
const STASH: usize = 256;

/// A deadline this far away stands for "never" (a timeout too large to add
/// to the clock).
const FAR: Duration = Duration::from_secs(86400 * 365 * 30);

thread_local! {
    /// `None` outside a worker's runtime.
    static IDLE: RefCell<Option<Vec<Pin<Box<Sleep>>>>> = const { RefCell::new(None) };
}

/// Starts keeping timers on this thread: call inside the worker's runtime,
/// which must outlive the stash (see [`uninstall`]).
pub fn install() {
    IDLE.with(|s| *s.borrow_mut() = Some(Vec::new()));
}

/// Drops the stash's timers and stops keeping them: call before the
/// worker's runtime ends.
pub fn uninstall() {
    let kept = IDLE.with(|s| s.borrow_mut().take());
    drop(kept);
}

/// How many idle timers this thread keeps.
#[cfg(test)]
fn idle_count() -> usize {
    IDLE.with(|s| s.borrow().as_ref().map_or(0, Vec::len))
}

/// A timer for one wait, due `timeout` after the current loop turn began
/// ([`crate::metrics::timed::now`]); it goes back to the worker's stash
/// when dropped.
pub struct Deadline {
    timer: Option<Pin<Box<Sleep>>>,
}

impl Deadline {
    /// A timer due `timeout` from now.
    pub fn after(timeout: Duration) -> Deadline {
        let now = Instant::from_std(crate::metrics::timed::now());
        let at = now.checked_add(timeout).unwrap_or(now + FAR);
        let reused = IDLE.with(|s| s.borrow_mut().as_mut().and_then(Vec::pop));
        let timer = match reused {
            Some(mut t) => {
                t.as_mut().reset(at);
                t
            }
            None => Box::pin(tokio::time::sleep_until(at)),
        };
        Deadline { timer: Some(timer) }
    }

    /// Ready once the deadline has passed.
    pub fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.timer {
            Some(t) => t.as_mut().poll(cx),
            None => Poll::Pending,
        }
    }

    /// Runs `fut` until it ends or the deadline passes (`Err(Elapsed)`):
    /// `tokio::time::timeout` with a reused timer.
    pub async fn bound<F: Future>(mut self, fut: F) -> Result<F::Output, Elapsed> {
        let mut fut = std::pin::pin!(fut);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                return Poll::Ready(Ok(v));
            }
            self.poll_expired(cx).map(|()| Err(Elapsed))
        })
        .await
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        let Some(t) = self.timer.take() else { return };
        // `try_with`: a deadline dropped while the thread exits.
        let _ = IDLE.try_with(|s| {
            if let Some(stash) = s.borrow_mut().as_mut() {
                if stash.len() < STASH {
                    stash.push(t);
                }
            }
        });
    }
}

/// [`Deadline::bound`]'s error: the deadline passed first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elapsed;

/// Runs `fut` within `timeout` (see [`Deadline`]).
pub async fn within<F: Future>(timeout: Duration, fut: F) -> Result<F::Output, Elapsed> {
    Deadline::after(timeout).bound(fut).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_wait_that_outlasts_its_deadline_ends_with_elapsed() {
        rt().block_on(async {
            install();
            let never = std::future::pending::<()>();
            assert_eq!(within(20 * MS, never).await, Err(Elapsed));
            uninstall();
        });
    }

    #[test]
    fn a_wait_that_ends_first_gives_its_value_and_the_timer_back() {
        rt().block_on(async {
            install();
            assert_eq!(within(20 * MS, async { 7 }).await, Ok(7));
            assert_eq!(idle_count(), 1);
            uninstall();
            assert_eq!(idle_count(), 0);
        });
    }

    #[test]
    fn a_reused_timer_moved_later_fires_at_the_later_time_not_the_first() {
        rt().block_on(async {
            install();
            // Entered in the wheel for 20 ms, then lent again for 300 ms:
            // the wheel finds the later deadline when the first comes.
            let first = within(20 * MS, async {
                tokio::task::yield_now().await;
            });
            assert_eq!(first.await, Ok(()));
            let start = std::time::Instant::now();
            let never = std::future::pending::<()>();
            assert_eq!(within(300 * MS, never).await, Err(Elapsed));
            let waited = start.elapsed();
            assert!(waited >= 290 * MS, "fired after {waited:?}");
            assert_eq!(idle_count(), 1, "the same timer, given back");
            uninstall();
        });
    }

    #[test]
    fn a_reused_timer_moved_earlier_fires_at_the_earlier_time() {
        rt().block_on(async {
            install();
            assert_eq!(within(Duration::from_secs(600), async {}).await, Ok(()));
            let start = std::time::Instant::now();
            let never = std::future::pending::<()>();
            assert_eq!(within(30 * MS, never).await, Err(Elapsed));
            let waited = start.elapsed();
            assert!(waited < Duration::from_secs(10), "fired after {waited:?}");
            uninstall();
        });
    }

    #[test]
    fn outside_a_worker_no_timer_is_kept() {
        rt().block_on(async {
            assert_eq!(within(20 * MS, async { 1 }).await, Ok(1));
            assert_eq!(idle_count(), 0);
        });
    }

    #[test]
    fn a_huge_timeout_is_a_far_deadline_not_a_panic() {
        rt().block_on(async {
            install();
            assert_eq!(within(Duration::MAX, async { 3 }).await, Ok(3));
            uninstall();
        });
    }
}
