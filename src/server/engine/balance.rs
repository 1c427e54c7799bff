//! Spreading connections over the workers that share a listening socket
//! (no `reuseport`, `accept_mutex off`).
//!
//! The kernel does not wake the workers of a shared socket in a fair order:
//! under `EPOLLEXCLUSIVE` a burst of connections mostly lands in one worker
//! (the imbalance Cloudflare measured in nginx), which then serves most of
//! the load while the others idle — and a per-worker `keepalive` cache of
//! upstream connections, sized for an even share, churns in the busy one.
//! nginx's remedies are `accept_mutex on` (its `ngx_accept_disabled` spares
//! only a worker past 7/8 of `worker_connections`) and `reuseport`.
//!
//! Here each worker publishes how many connections it holds. One that holds
//! more than the least loaded other worker by [`margin`] leaves a waiting
//! connection to that worker: it nudges it, and the nudged worker accepts
//! at once, without waiting for a wake-up the kernel may have given the
//! first one only. The deferring worker goes on deferring while that worker
//! takes connections; once it has taken none for [`DEFER_MAX`] (busy, or
//! without a CPU) the deferring worker takes them itself, freely for
//! [`FREE_AFTER_DEFER`] before it defers again.
//! The same holds under `accept_mutex on`: a worker past its share does not
//! compete for the mutex, and the nudge wakes the other from its wait.
//!
//! What this module must not do: wait, or hold a lock (workers read each
//! other's counts with relaxed atomics; a stale count only makes a worker
//! defer less or a little longer).

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// The longest a worker leaves waiting connections to a less loaded one
/// that takes none before it accepts them itself.
pub const DEFER_MAX: Duration = Duration::from_millis(20);
/// How long a worker that deferred in vain for [`DEFER_MAX`] (the other
/// took nothing: busy, or without a CPU) accepts without deferring.
pub const FREE_AFTER_DEFER: Duration = Duration::from_millis(100);
/// How often a deferring worker looks again (at the latest; it looks on
/// each turn of its loop too).
pub const DEFER_STEP: Duration = Duration::from_millis(1);

/// The connection counts of one generation's workers.
pub struct Balance {
    loads: Box<[AtomicUsize]>,
}

/// One shared socket's way to ask a worker to accept on it now (a worker
/// accepts on each socket in a task of its own: a nudge must reach the
/// task of the socket where the connection waits).
pub struct Nudges(Box<[Notify]>);

impl Nudges {
    /// One for each of `workers` workers.
    pub fn new(workers: usize) -> Nudges {
        Nudges((0..workers).map(|_| Notify::new()).collect())
    }

    /// Asks `worker` to accept now.
    pub fn nudge(&self, worker: usize) {
        if let Some(n) = self.0.get(worker) {
            n.notify_one();
        }
    }

    /// Resolves when another worker asked `worker` to accept.
    pub async fn nudged(&self, worker: usize) {
        match self.0.get(worker) {
            Some(n) => n.notified().await,
            None => std::future::pending().await,
        }
    }
}

/// A worker's part in spreading one shared socket's connections.
pub struct Spread {
    /// The generation's counts.
    pub balance: Arc<Balance>,
    /// The socket's nudges.
    pub nudges: Arc<Nudges>,
    /// This worker's number.
    pub me: usize,
}

impl Balance {
    /// Counts for `workers` workers, numbered from 0, none accepting yet.
    pub fn new(workers: usize) -> Balance {
        Balance {
            loads: (0..workers).map(|_| AtomicUsize::new(ABSENT)).collect(),
        }
    }

    /// Worker `worker` now holds `connections`.
    pub fn publish(&self, worker: usize, connections: usize) {
        if let Some(slot) = self.loads.get(worker) {
            slot.store(connections, Ordering::Relaxed);
        }
    }

    /// The worker that should take the next connection instead of
    /// `worker`, which holds `mine`: the least loaded other one, when
    /// `mine` exceeds its count by more than [`margin`]; with that count.
    pub fn lighter(&self, worker: usize, mine: usize) -> Option<(usize, usize)> {
        let (other, least) = self
            .loads
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != worker)
            .map(|(i, l)| (i, l.load(Ordering::Relaxed)))
            .filter(|&(_, l)| l != ABSENT)
            .min_by_key(|&(_, l)| l)?;
        (mine > least + margin(least)).then_some((other, least))
    }
}

/// The count of a worker that does not accept (not started yet, or ended):
/// never one to leave connections to.
const ABSENT: usize = usize::MAX;

/// How many more connections than the least loaded worker a worker may
/// hold before it defers: a few, or an eighth as loads grow.
pub fn margin(least: usize) -> usize {
    (least / 8).max(2)
}

thread_local! {
    /// This thread's worker: its generation's counts and its number.
    static SLOT: RefCell<Option<(Arc<Balance>, usize)>> = const { RefCell::new(None) };
}

/// Makes this thread worker `worker` of `balance`, accepting from now on
/// until [`leave`].
pub fn install(balance: Arc<Balance>, worker: usize) {
    balance.publish(worker, 0);
    SLOT.with_borrow_mut(|s| *s = Some((balance, worker)));
}

/// This thread's worker accepts no more.
pub fn leave() {
    SLOT.with_borrow_mut(|s| {
        if let Some((b, w)) = s.take() {
            b.publish(w, ABSENT);
        }
    });
}

/// This thread's worker now holds `connections` (nothing outside a worker).
pub fn publish_here(connections: usize) {
    SLOT.with_borrow(|s| {
        if let Some((b, w)) = s {
            b.publish(*w, connections);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_defers_past_the_margin_to_the_least_loaded() {
        let b = Balance::new(3);
        for w in 0..3 {
            b.publish(w, 0);
        }
        assert_eq!(b.lighter(0, 0), None, "all even");
        assert_eq!(b.lighter(0, 2), None, "within the margin");
        assert_eq!(
            b.lighter(0, 3),
            Some((1, 0)),
            "past it: the first least loaded"
        );
        b.publish(1, 5);
        assert_eq!(b.lighter(0, 3), Some((2, 0)));
        b.publish(2, 80);
        // Least 5: margin 2; past 7.
        assert_eq!(b.lighter(0, 7), None);
        assert_eq!(b.lighter(0, 8), Some((1, 5)));
        b.publish(1, 80);
        b.publish(2, 80);
        // Least 80: margin 10.
        assert_eq!(b.lighter(0, 90), None);
        assert_eq!(b.lighter(0, 91), Some((1, 80)));
    }

    #[test]
    fn a_worker_that_does_not_accept_is_never_deferred_to() {
        let b = Balance::new(2);
        assert_eq!(b.lighter(0, 50), None, "worker 1 not started");
        b.publish(1, 0);
        assert_eq!(b.lighter(0, 50), Some((1, 0)));
        b.publish(1, ABSENT);
        assert_eq!(b.lighter(0, 50), None, "worker 1 ended");
    }

    #[test]
    fn one_worker_never_defers() {
        let b = Balance::new(1);
        assert_eq!(b.lighter(0, 1000), None);
    }
}
