//! nginx's connection counters (`ngx_stat_*`), for `stub_status` and the
//! `$connections_*` variables: connections accepted, handled and open;
//! requests started; and how many connections are reading a request head,
//! writing a response (the request is being processed), or waiting idle
//! for the next request.
//!
//! They belong to the process, as nginx keeps them in shared memory that
//! outlives reloads. Each connection owns a [`Tracked`] that moves its
//! count from state to state and gives everything back when dropped, so a
//! connection that ends anywhere leaves the gauges right.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The counters.
#[derive(Debug, Default)]
pub struct Counters {
    /// Connections accepted.
    pub accepted: AtomicU64,
    /// Connections handled (nowait hands every accepted one on).
    pub handled: AtomicU64,
    /// Requests started.
    pub requests: AtomicU64,
    /// Connections open.
    pub active: AtomicU64,
    /// Connections reading a request head.
    pub reading: AtomicU64,
    /// Connections whose request is being processed and answered.
    pub writing: AtomicU64,
    /// Idle connections waiting for a request.
    pub waiting: AtomicU64,
}

/// The process's counters.
pub static COUNTERS: Counters = Counters {
    accepted: AtomicU64::new(0),
    handled: AtomicU64::new(0),
    requests: AtomicU64::new(0),
    active: AtomicU64::new(0),
    reading: AtomicU64::new(0),
    writing: AtomicU64::new(0),
    waiting: AtomicU64::new(0),
};

/// A read of the counters, for the status page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// See [`Counters::accepted`].
    pub accepted: u64,
    /// See [`Counters::handled`].
    pub handled: u64,
    /// See [`Counters::requests`].
    pub requests: u64,
    /// See [`Counters::active`].
    pub active: u64,
    /// See [`Counters::reading`].
    pub reading: u64,
    /// See [`Counters::writing`].
    pub writing: u64,
    /// See [`Counters::waiting`].
    pub waiting: u64,
}

/// The counters now.
pub fn snapshot() -> Snapshot {
    let c = &COUNTERS;
    Snapshot {
        accepted: c.accepted.load(Relaxed),
        handled: c.handled.load(Relaxed),
        requests: c.requests.load(Relaxed),
        active: c.active.load(Relaxed),
        reading: c.reading.load(Relaxed),
        writing: c.writing.load(Relaxed),
        waiting: c.waiting.load(Relaxed),
    }
}

/// Where a connection stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Waiting,
    Reading,
    Writing,
    /// Counted in none of the three (an upgraded connection).
    Other,
}

fn gauge(s: State) -> Option<&'static AtomicU64> {
    match s {
        State::Waiting => Some(&COUNTERS.waiting),
        State::Reading => Some(&COUNTERS.reading),
        State::Writing => Some(&COUNTERS.writing),
        State::Other => None,
    }
}

/// One connection's place in the counters.
#[derive(Debug)]
pub struct Tracked {
    state: State,
}

impl Tracked {
    /// A connection just accepted: counted accepted, handled and open, and
    /// waiting for its first request.
    pub fn accepted() -> Tracked {
        COUNTERS.accepted.fetch_add(1, Relaxed);
        COUNTERS.handled.fetch_add(1, Relaxed);
        COUNTERS.active.fetch_add(1, Relaxed);
        COUNTERS.waiting.fetch_add(1, Relaxed);
        Tracked {
            state: State::Waiting,
        }
    }

    fn to(&mut self, next: State) {
        if self.state == next {
            return;
        }
        if let Some(g) = gauge(self.state) {
            g.fetch_sub(1, Relaxed);
        }
        if let Some(g) = gauge(next) {
            g.fetch_add(1, Relaxed);
        }
        self.state = next;
    }

    /// The first byte of a request arrived: a request starts.
    pub fn reading(&mut self) {
        if self.state != State::Reading {
            COUNTERS.requests.fetch_add(1, Relaxed);
        }
        self.to(State::Reading);
    }

    /// The head is read: the request is processed.
    pub fn writing(&mut self) {
        self.to(State::Writing);
    }

    /// The request is done and the connection kept for another.
    pub fn waiting(&mut self) {
        self.to(State::Waiting);
    }

    /// The connection is handed over (an upgrade): counted only as open.
    pub fn other(&mut self) {
        self.to(State::Other);
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.to(State::Other);
        COUNTERS.active.fetch_sub(1, Relaxed);
    }
}

/// `stub_status`'s page, exactly as nginx prints it.
pub fn stub_status_text(s: &Snapshot) -> String {
    format!(
        "Active connections: {} \nserver accepts handled requests\n {} {} {} \nReading: {} Writing: {} Waiting: {} \n",
        s.active, s.accepted, s.handled, s.requests, s.reading, s.writing, s.waiting
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_nginx_s() {
        let s = Snapshot {
            accepted: 4,
            handled: 4,
            requests: 5,
            active: 2,
            reading: 0,
            writing: 1,
            waiting: 1,
        };
        assert_eq!(
            stub_status_text(&s),
            "Active connections: 2 \nserver accepts handled requests\n 4 4 5 \nReading: 0 Writing: 1 Waiting: 1 \n"
        );
    }

    #[test]
    fn a_connection_moves_between_states() {
        // Other tests may hold connections: compare differences.
        let before = snapshot();
        let mut t = Tracked::accepted();
        t.reading();
        t.reading();
        t.writing();
        let mid = snapshot();
        assert!(mid.requests > before.requests);
        t.waiting();
        drop(t);
        let after = snapshot();
        assert!(after.accepted > before.accepted);
    }
}
