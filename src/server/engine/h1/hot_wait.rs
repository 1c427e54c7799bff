//! A connection that has just been answered waits for its next request in
//! its own task for a moment ([`HOT_WAIT`]) before it is parked.
//!
//! Parking ([`crate::server::engine::h1::park`]) makes a waiting connection cost nothing but its
//! slot; resuming one costs a trip through the worker's driver and a new
//! task: ~1.3k instructions per request, and one more pass through the
//! worker's run queue before the request is read (on a loaded worker, a
//! longer wait for that request). A busy keep-alive client sends its next
//! request within a millisecond or two of its last response; a connection
//! that stays in its task for that long reads the request as soon as it
//! comes, in the same task. One that stays silent for [`HOT_WAIT`] is parked
//! as before, so what waits longer still holds no task.
//!
//! The window costs no timer per wait: the waits of a worker are listed in
//! the order they began ([`HOT_WAIT`] is the same for all, so the oldest
//! ends first), and the worker's driver (`park::drive`) wakes the expired
//! ones on its own timer, armed for the oldest. A reload that hands the
//! worker's connections over, or a graceful stop, ends every wait at once:
//! the connections park and are handed over or closed as parked ones are.
//!
//! What this module must not do: read from a socket or hold a buffer (the
//! connection's task reads, and gives its buffer back before it waits).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use std::sync::atomic::Ordering::Relaxed;

use crate::io::client_stream::ClientStream;
use crate::metrics::worker as worker_metrics;

/// How long a connection with no byte of a request waits in its task
/// before it is parked. Longer than a busy client's pause between a
/// response and its next request on loopback or a LAN; short enough that
/// the tasks waiting at once stay few (a worker's request rate times this).
pub const HOT_WAIT: Duration = Duration::from_millis(50);
/// Most connections of one worker waiting in their tasks at once; the next
/// ones park at once.
const HOT_MAX: usize = 4096;

/// The window in use: [`HOT_WAIT`], or in test builds (the `test-faults`
/// feature) `NOWAIT_TEST_HOT_WAIT=MILLIS` when set, so that a test can hold
/// a connection in its task for as long as it needs to show what ends the
/// wait (a reload, a stop) without racing the window.
fn window() -> Duration {
    #[cfg(feature = "test-faults")]
    {
        static WINDOW: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
        *WINDOW.get_or_init(|| {
            std::env::var("NOWAIT_TEST_HOT_WAIT")
                .ok()
                .and_then(|v| v.parse().ok())
                .map_or(HOT_WAIT, Duration::from_millis)
        })
    }
    #[cfg(not(feature = "test-faults"))]
    HOT_WAIT
}

/// How a hot wait ended.
pub enum Waited {
    /// The socket is readable (bytes, or the client closed): read the head.
    Readable,
    /// The window passed, or the worker hands its connections over or
    /// quits: park the connection.
    Park,
    /// The socket failed.
    Gone,
}

/// One wait's place in the list.
struct Slot {
    /// Bumped when the slot is freed, so that a late sweep of an earlier
    /// wait finds nothing.
    generation: u32,
    /// Whether a wait holds the slot.
    used: bool,
    /// The window passed (or the worker asked all waits to end).
    expired: bool,
    /// The waiting task's waker, to end its wait.
    waker: Option<Waker>,
}

/// A worker's hot waits.
#[derive(Default)]
struct Hot {
    /// The slab of waits.
    slots: Vec<Slot>,
    /// Free slots.
    free: Vec<u32>,
    /// (end of window, slot, generation), oldest first; entries of waits
    /// that ended stay until they come up.
    order: VecDeque<(Instant, u32, u32)>,
    /// Waits in progress.
    live: usize,
    /// No new wait begins (the worker hands over or quits).
    closed: bool,
}

thread_local! {
    static HOT: RefCell<Hot> = RefCell::new(Hot::default());
}

/// A wait in progress: its slot. Leaving it (drop) frees the slot.
struct Ticket {
    slot: u32,
    generation: u32,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        HOT.with(|h| {
            let mut h = h.borrow_mut();
            if let Some(s) = h.slots.get_mut(self.slot as usize) {
                if s.generation == self.generation && s.used {
                    s.used = false;
                    s.expired = false;
                    s.waker = None;
                    s.generation = s.generation.wrapping_add(1);
                    h.free.push(self.slot);
                    h.live -= 1;
                    worker_metrics::with(|m| m.hot_waiting.fetch_sub(1, Relaxed));
                }
            }
        })
    }
}

/// Begins a wait ending at `until`, unless the worker's list is full or
/// closed. Tells the driver when this wait ends before anything it sleeps
/// for (the list was empty).
fn enter(until: Instant) -> Option<Ticket> {
    let (ticket, first) = HOT.with(|h| {
        let mut h = h.borrow_mut();
        if h.closed || h.live >= HOT_MAX {
            return None;
        }
        let slot = match h.free.pop() {
            Some(s) => s,
            None => {
                h.slots.push(Slot {
                    generation: 0,
                    used: false,
                    expired: false,
                    waker: None,
                });
                (h.slots.len() - 1) as u32
            }
        };
        let s = &mut h.slots[slot as usize];
        s.used = true;
        let generation = s.generation;
        h.live += 1;
        worker_metrics::with(|m| m.hot_waiting.fetch_add(1, Relaxed));
        let first = h.live == 1;
        h.order.push_back((until, slot, generation));
        Some((Ticket { slot, generation }, first))
    })?;
    if first {
        crate::server::engine::h1::park::rearm(until);
    }
    Some(ticket)
}

/// Waits in the task until `stream` is readable or the window ends.
/// `idle_timeout` is the connection's wait for its next request
/// (`keepalive_timeout` or `client_header_timeout`): a shorter one than the
/// window parks at once.
pub async fn wait(stream: &ClientStream, idle_timeout: Duration) -> Waited {
    let window = window();
    if idle_timeout < window {
        return Waited::Park;
    }
    let Some(ticket) = enter(crate::metrics::timed::now() + window) else {
        return Waited::Park;
    };
    std::future::poll_fn(|cx| poll(&ticket, stream, cx)).await
}

fn poll(ticket: &Ticket, stream: &ClientStream, cx: &mut Context<'_>) -> Poll<Waited> {
    if let Poll::Ready(r) = stream.poll_read_ready(cx) {
        return Poll::Ready(if r.is_ok() {
            Waited::Readable
        } else {
            Waited::Gone
        });
    }
    HOT.with(|h| {
        let mut h = h.borrow_mut();
        let Some(s) = h.slots.get_mut(ticket.slot as usize) else {
            return Poll::Ready(Waited::Park);
        };
        if s.expired {
            return Poll::Ready(Waited::Park);
        }
        match &mut s.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            w => *w = Some(cx.waker().clone()),
        }
        Poll::Pending
    })
}

/// Ends the waits whose window passed by `now`; returns when the next one
/// ends. Run by the worker's driver.
pub fn sweep(now: Instant) -> Option<Instant> {
    let mut woken = Vec::new();
    let next = HOT.with(|h| {
        let mut h = h.borrow_mut();
        let h = &mut *h;
        while let Some(&(until, slot, generation)) = h.order.front() {
            let s = &mut h.slots[slot as usize];
            if s.generation != generation || !s.used {
                h.order.pop_front();
                continue;
            }
            if until > now {
                return Some(until);
            }
            h.order.pop_front();
            s.expired = true;
            woken.extend(s.waker.take());
        }
        None
    });
    for w in woken {
        w.wake();
    }
    next
}

/// When the oldest wait in progress ends, if any (dropping the entries of
/// waits that ended).
pub fn next_end() -> Option<Instant> {
    HOT.with(|h| {
        let mut h = h.borrow_mut();
        let h = &mut *h;
        while let Some(&(until, slot, generation)) = h.order.front() {
            let s = &h.slots[slot as usize];
            if s.generation == generation && s.used {
                return Some(until);
            }
            h.order.pop_front();
        }
        None
    })
}

/// Ends every wait now and lets no new one begin until [`reopen`]: the
/// worker hands its connections over or quits, and a connection must park
/// to be handed over or closed.
pub fn close() {
    let woken: Vec<Waker> = HOT.with(|h| {
        let mut h = h.borrow_mut();
        h.closed = true;
        h.order.clear();
        h.slots
            .iter_mut()
            .filter(|s| s.used)
            .filter_map(|s| {
                s.expired = true;
                s.waker.take()
            })
            .collect()
    });
    for w in woken {
        w.wake();
    }
}

/// Waits may begin again (a reload that failed gives the worker its
/// connections back).
pub fn reopen() {
    HOT.with(|h| h.borrow_mut().closed = false);
}

/// Connections of this worker waiting in their tasks (for tests).
pub fn waiting() -> usize {
    HOT.with(|h| h.borrow().live)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Count(AtomicUsize);
    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn reset() {
        HOT.with(|h| *h.borrow_mut() = Hot::default());
    }

    fn expired(t: &Ticket) -> bool {
        HOT.with(|h| h.borrow().slots[t.slot as usize].expired)
    }

    fn park_waker(t: &Ticket, w: &Waker) {
        HOT.with(|h| h.borrow_mut().slots[t.slot as usize].waker = Some(w.clone()));
    }

    #[test]
    fn waits_end_oldest_first_and_wake_their_tasks() {
        reset();
        let t0 = Instant::now();
        let a = enter(t0 + Duration::from_millis(10)).unwrap();
        let b = enter(t0 + Duration::from_millis(20)).unwrap();
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        park_waker(&a, &waker);
        park_waker(&b, &waker);
        assert_eq!(next_end(), Some(t0 + Duration::from_millis(10)));
        // Before the first end: nothing ends.
        assert_eq!(sweep(t0), Some(t0 + Duration::from_millis(10)));
        assert!(!expired(&a));
        // Past the first: it ends, its task is woken; the second is next.
        assert_eq!(
            sweep(t0 + Duration::from_millis(15)),
            Some(t0 + Duration::from_millis(20))
        );
        assert!(expired(&a) && !expired(&b));
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(waiting(), 2, "an ended wait holds its slot until it leaves");
        drop(a);
        drop(b);
        assert_eq!(waiting(), 0);
        assert_eq!(next_end(), None, "left waits' entries are dropped");
    }

    #[test]
    fn a_slot_reused_is_not_ended_by_its_earlier_wait() {
        reset();
        let t0 = Instant::now();
        let a = enter(t0).unwrap();
        let slot = a.slot;
        drop(a);
        let b = enter(t0 + Duration::from_secs(1)).unwrap();
        assert_eq!(b.slot, slot, "the slot is reused");
        sweep(t0 + Duration::from_millis(1));
        assert!(
            !expired(&b),
            "the first wait's entry names an older generation"
        );
    }

    #[test]
    fn closing_ends_every_wait_and_refuses_new_ones_until_reopened() {
        reset();
        let t0 = Instant::now();
        let a = enter(t0 + Duration::from_secs(1)).unwrap();
        let count = Arc::new(Count(AtomicUsize::new(0)));
        park_waker(&a, &Waker::from(count.clone()));
        close();
        assert!(expired(&a));
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(enter(t0).is_none(), "no wait begins while closed");
        reopen();
        assert!(enter(t0).is_some());
    }

    #[test]
    fn a_full_list_refuses_the_next_wait() {
        reset();
        let t0 = Instant::now();
        let all: Vec<_> = (0..HOT_MAX).map(|_| enter(t0).unwrap()).collect();
        assert!(enter(t0).is_none());
        drop(all);
        assert!(enter(t0).is_some());
    }
}
