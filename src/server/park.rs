//! Connections waiting for a request, held outside any task: nginx's idle
//! connection (its descriptor, its read event, its timer) and no more.
//!
//! A connection that has no byte of its next request (just accepted, or
//! kept alive after a response) ends its task and is parked here: a slot in
//! the worker's slab holding the socket and what the next request needs
//! ([`Waiting`]), an entry in the worker's deadline queue
//! (`client_header_timeout` before the first request, `keepalive_timeout`
//! after one), and a waker in the socket's registration with the reactor
//! that is a number, not an allocation (`sys::waker`). When the socket
//! becomes readable or hangs up, the worker's driver ([`drive`]) takes it
//! out and spawns a task for it; when its deadline passes first, it is
//! closed, as nginx closes an idle connection on its timer.
//!
//! On reload ([`hand_over`]) the parked connections leave the old
//! generation's workers as plain descriptors and deadlines and the new
//! generation's workers adopt them ([`drive`]): nothing that waits for a
//! request is closed by a reload. What this module must not do: read from
//! a socket (the connection's task does), or hold a read buffer.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::net::TcpStream;
use tokio::sync::Notify;

use crate::metrics::connections::Tracked;
use crate::sys::waker::{NumberWake, number_waker};

use super::conn::ConnInfo;
use super::send::SocketForPools;
use super::site::Site;
use super::worker::Open;

/// How many workers (of every generation alive at once) can park
/// connections; a worker beyond it waits for requests in a task per
/// connection, as before parking existed.
pub const MAX_LOTS: usize = 1024;
/// Deadline entries of connections no longer parked are dropped lazily;
/// the queue is rebuilt when more than this many are stale and they
/// outnumber the live ones twice.
const STALE_REBUILD: usize = 4096;
/// How long the driver sleeps when nothing is parked.
const IDLE_SLEEP: Duration = Duration::from_secs(3600);

/// A connection between requests: what its next request needs.
pub struct Waiting {
    /// The socket, registered with this worker's reactor.
    pub stream: TcpStream,
    /// Where it came from.
    pub info: ConnInfo,
    /// The generation serving it.
    pub site: Arc<Site>,
    /// Requests served on it so far.
    pub requests: u64,
    /// Whether `TCP_NODELAY` is set on it.
    pub nodelay: bool,
    /// The socket as the file pools see it, kept across requests.
    pub pool_sock: SocketForPools,
    /// The connection in nginx's counters.
    pub stats: Tracked,
    /// Its place in the worker's `worker_connections`.
    pub open: Open,
    /// How long it may wait for its next request's first byte.
    pub idle_timeout: Duration,
    /// When that wait ends (set when the wait begins, kept over spurious
    /// wake-ups).
    pub deadline: Option<Instant>,
    /// Serve one more request and close (its listening address is gone
    /// from the configuration that adopted it).
    pub last: bool,
}

/// A parked connection on its way from one worker to another (a reload):
/// no registration, no worker's count.
struct Handed {
    /// The socket, non-blocking, registered nowhere.
    stream: std::net::TcpStream,
    /// Where it came from.
    info: ConnInfo,
    /// The generation that served it last.
    site: Arc<Site>,
    /// Requests served on it so far.
    requests: u64,
    /// Whether `TCP_NODELAY` is set on it.
    nodelay: bool,
    /// The socket as the file pools see it.
    pool_sock: SocketForPools,
    /// The connection in nginx's counters.
    stats: Tracked,
    /// How long it may wait for its next request.
    idle_timeout: Duration,
    /// When that wait ends.
    deadline: Instant,
}

/// Connections handed over by generations being replaced, for the current
/// generation's workers to adopt.
struct Handover {
    /// The connections.
    queue: Mutex<Vec<Handed>>,
    /// Woken when connections are added.
    added: Notify,
}

static HANDOVER: Handover = Handover {
    queue: Mutex::new(Vec::new()),
    added: Notify::const_new(),
};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A worker's queue of woken slots, reachable from any thread by number.
struct ReadyQueue {
    /// (woken numbers, the driver's waker), one lock for both.
    inner: Mutex<(Vec<usize>, Option<Waker>)>,
    /// Whether a worker owns this queue.
    used: std::sync::atomic::AtomicBool,
}

impl ReadyQueue {
    const fn new() -> ReadyQueue {
        ReadyQueue {
            inner: Mutex::new((Vec::new(), None)),
            used: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

static QUEUES: [ReadyQueue; MAX_LOTS] = [const { ReadyQueue::new() }; MAX_LOTS];

/// The wakers parked sockets leave with the reactor: the number is
/// (queue << 48 | generation << 32 | slot).
struct SlotWake;

impl NumberWake for SlotWake {
    fn wake(data: usize) {
        let Some(q) = QUEUES.get(data >> 48) else {
            return;
        };
        let waker = {
            let mut inner = lock(&q.inner);
            inner.0.push(data);
            inner.1.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

fn number(lot: usize, slot: u32, generation: u16) -> usize {
    (lot << 48) | ((generation as usize) << 32) | slot as usize
}

/// One slab slot.
struct Entry {
    /// Bumped each time the slot is emptied, so that a late wake-up or
    /// deadline of its previous connection finds nothing.
    generation: u16,
    /// The parked connection.
    parked: Option<Box<Waiting>>,
}

/// A worker's parked connections.
struct Lot {
    /// Its ready queue's index in [`QUEUES`].
    id: usize,
    /// The slab.
    entries: Vec<Entry>,
    /// Empty slots.
    free: Vec<u32>,
    /// Parked connections.
    live: usize,
    /// (deadline, slot, generation), earliest first; entries of
    /// connections no longer parked stay until they come up.
    deadlines: BinaryHeap<Reverse<(Instant, u32, u16)>>,
    /// Entries of `deadlines` no longer parked.
    stale: usize,
    /// The deadline the driver sleeps until.
    armed: Option<Instant>,
    /// The worker quits: keep-alive waits end.
    quitting: bool,
    /// The worker's generation is being replaced: connections that go
    /// idle are handed to the next one.
    handing: bool,
    /// The worker's generation, for adopted connections.
    site: Arc<Site>,
    /// Makes the worker's [`Open`] for adopted connections.
    open: Box<dyn Fn() -> Open>,
}

thread_local! {
    static LOT: RefCell<Option<Lot>> = const { RefCell::new(None) };
}

impl Lot {
    fn insert(&mut self, w: Box<Waiting>, deadline: Instant) -> (u32, u16) {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.entries.push(Entry {
                    generation: 0,
                    parked: None,
                });
                (self.entries.len() - 1) as u32
            }
        };
        let e = &mut self.entries[slot as usize];
        e.parked = Some(w);
        self.live += 1;
        self.deadlines.push(Reverse((deadline, slot, e.generation)));
        (slot, e.generation)
    }

    /// Takes the connection out of `slot` if it is still the one
    /// `generation` names.
    fn take(&mut self, slot: u32, generation: u16, by_timer: bool) -> Option<Box<Waiting>> {
        let e = self.entries.get_mut(slot as usize)?;
        if e.generation != generation {
            return None;
        }
        let w = e.parked.take()?;
        e.generation = e.generation.wrapping_add(1);
        self.free.push(slot);
        self.live -= 1;
        if !by_timer {
            self.stale += 1;
            if self.stale > STALE_REBUILD && self.stale > 2 * self.live {
                self.rebuild();
            }
        }
        Some(w)
    }

    /// Drops the deadlines of connections no longer parked.
    fn rebuild(&mut self) {
        let entries = &self.entries;
        self.deadlines.retain(|Reverse((_, slot, g))| {
            entries
                .get(*slot as usize)
                .is_some_and(|e| e.generation == *g && e.parked.is_some())
        });
        self.stale = 0;
    }

    /// Every parked connection, out of the slab (boxes as the slab held
    /// them: moving them out would copy each).
    #[allow(clippy::vec_box)]
    fn take_all(&mut self) -> Vec<Box<Waiting>> {
        let mut out = Vec::with_capacity(self.live);
        for slot in 0..self.entries.len() as u32 {
            let g = self.entries[slot as usize].generation;
            if let Some(w) = self.take(slot, g, true) {
                out.push(w);
            }
        }
        self.deadlines.clear();
        self.stale = 0;
        out
    }

    /// The next deadline of a parked connection, dropping stale ones.
    fn next_deadline(&mut self) -> Option<Instant> {
        while let Some(Reverse((at, slot, g))) = self.deadlines.peek().copied() {
            let parked = self
                .entries
                .get(slot as usize)
                .is_some_and(|e| e.generation == g && e.parked.is_some());
            if parked {
                return Some(at);
            }
            self.deadlines.pop();
            self.stale = self.stale.saturating_sub(1);
        }
        None
    }
}

/// Parks a connection that has no byte of its next request, or closes it
/// if the worker quits and it has served a request (nginx closes idle
/// keep-alive connections on a graceful stop: `ngx_close_idle_connections`).
pub fn park(mut w: Box<Waiting>) {
    let deadline = *w
        .deadline
        .get_or_insert_with(|| crate::metrics::timed::now() + w.idle_timeout);
    let verdict = LOT.with(|l| {
        let mut l = l.borrow_mut();
        let Some(lot) = l.as_mut() else {
            return Err(w);
        };
        if lot.handing {
            hand(vec![w]);
            return Ok(None);
        }
        if lot.quitting && w.requests > 0 {
            return Ok(None);
        }
        let id = lot.id;
        let (slot, generation) = lot.insert(w, deadline);
        let waker = number_waker::<SlotWake>(number(id, slot, generation));
        let mut cx = Context::from_waker(&waker);
        let ready = lot.entries[slot as usize]
            .parked
            .as_ref()
            .is_some_and(|p| p.stream.poll_read_ready(&mut cx).is_ready());
        if ready {
            return Ok(lot.take(slot, generation, false));
        }
        if lot.armed.is_none_or(|a| deadline < a) {
            // The driver sleeps past this deadline: wake it to re-arm.
            lot.armed = Some(deadline);
            let waker = lock(&QUEUES[id].inner).1.take();
            if let Some(w) = waker {
                w.wake();
            }
        }
        Ok(None)
    });
    match verdict {
        Ok(Some(w)) => resume(w),
        Ok(None) => {}
        Err(w) => {
            // No lot (every queue taken): wait in a task of its own.
            tokio::task::spawn_local(async move {
                let until = tokio::time::Instant::from_std(deadline);
                let readable = tokio::select! {
                    r = w.stream.readable() => r.is_ok(),
                    _ = tokio::time::sleep_until(until) => false,
                };
                if readable {
                    resume(w);
                }
            });
        }
    }
}

fn resume(w: Box<Waiting>) {
    tokio::task::spawn_local(crate::metrics::timed::Timed::new(super::conn::resume(w)));
}

/// Whether the worker is quitting (a response then closes its connection).
pub fn quitting() -> bool {
    LOT.with(|l| l.borrow().as_ref().is_some_and(|l| l.quitting))
}

/// The worker quits: parked keep-alive connections are closed; those that
/// have not sent a first request wait for it, as today's tasks did.
pub fn quit() {
    let closed = LOT.with(|l| {
        let mut l = l.borrow_mut();
        let Some(lot) = l.as_mut() else {
            return Vec::new();
        };
        lot.quitting = true;
        if lot.handing {
            return Vec::new();
        }
        let mut out = Vec::new();
        for slot in 0..lot.entries.len() as u32 {
            let e = &lot.entries[slot as usize];
            if e.parked.as_ref().is_some_and(|w| w.requests > 0) {
                let g = e.generation;
                out.extend(lot.take(slot, g, false));
            }
        }
        out
    });
    drop(closed);
}

/// The worker's generation is being replaced: its parked connections, and
/// every one that goes idle from now on, go to the next generation.
pub fn hand_over() {
    let all = LOT.with(|l| {
        let mut l = l.borrow_mut();
        let Some(lot) = l.as_mut() else {
            return Vec::new();
        };
        lot.handing = true;
        lot.take_all()
    });
    hand(all);
}

/// The replacement failed (a reload with a broken configuration): the
/// worker keeps its connections again and takes back those it handed.
pub fn keep() {
    LOT.with(|l| {
        if let Some(lot) = l.borrow_mut().as_mut() {
            lot.handing = false;
        }
    });
    HANDOVER.added.notify_waiters();
}

#[allow(clippy::vec_box)]
fn hand(list: Vec<Box<Waiting>>) {
    if list.is_empty() {
        return;
    }
    let mut handed = Vec::with_capacity(list.len());
    for w in list {
        let w = *w;
        let Some(deadline) = w.deadline else {
            continue;
        };
        // Out of this worker's reactor; the worker's count drops with `open`.
        let Ok(stream) = w.stream.into_std() else {
            continue;
        };
        handed.push(Handed {
            stream,
            info: w.info,
            site: w.site,
            requests: w.requests,
            nodelay: w.nodelay,
            pool_sock: w.pool_sock,
            stats: w.stats,
            idle_timeout: w.idle_timeout,
            deadline,
        });
    }
    lock(&HANDOVER.queue).extend(handed);
    HANDOVER.added.notify_waiters();
}

/// Takes a share of the handed-over connections into this worker's lot.
fn adopt() {
    let mine = {
        let mut q = lock(&HANDOVER.queue);
        if q.is_empty() {
            return;
        }
        let share = q.len().div_ceil(2);
        let at = q.len() - share;
        q.split_off(at)
    };
    if !lock(&HANDOVER.queue).is_empty() {
        HANDOVER.added.notify_one();
    }
    for h in mine {
        let made = LOT.with(|l| {
            let l = l.borrow();
            let lot = l.as_ref()?;
            // Its address still served: the new generation serves it.
            // Gone from the configuration: the generation that accepted
            // it serves its next request and closes (nothing is closed
            // while the client may be sending).
            let (site, last) = if lot.site.vhosts.listens_on(h.info.socket_addr) {
                (lot.site.clone(), false)
            } else {
                (h.site.clone(), true)
            };
            Some((site, last, (lot.open)()))
        });
        let Some((site, last, open)) = made else {
            return;
        };
        let Ok(stream) = TcpStream::from_std(h.stream) else {
            continue;
        };
        park(Box::new(Waiting {
            stream,
            info: h.info,
            site,
            requests: h.requests,
            nodelay: h.nodelay,
            pool_sock: h.pool_sock,
            stats: h.stats,
            open,
            idle_timeout: h.idle_timeout,
            deadline: Some(h.deadline),
            last,
        }));
    }
}

/// What woke the driver.
enum Woke {
    /// Numbers of slots whose sockets are readable.
    Ready(Vec<usize>),
    /// The earliest deadline passed (or was changed).
    Timer,
    /// Connections were handed over.
    Handed,
}

/// Closes every parked connection (the worker ends), and gives its queue
/// back.
pub fn close_all() {
    let lot = LOT.with(|l| l.borrow_mut().take());
    if let Some(mut lot) = lot {
        drop(lot.take_all());
        let mut inner = lock(&QUEUES[lot.id].inner);
        inner.0.clear();
        inner.1 = None;
        QUEUES[lot.id]
            .used
            .store(false, std::sync::atomic::Ordering::Release);
    }
}

/// The worker's driver: opens the worker's lot, then resumes parked
/// connections that become readable, closes those whose deadline passes,
/// and adopts those handed over. Runs until the worker ends.
pub async fn drive(site: Arc<Site>, open: Box<dyn Fn() -> Open>) {
    let Some(id) = (0..MAX_LOTS).find(|&i| {
        QUEUES[i]
            .used
            .compare_exchange(
                false,
                true,
                std::sync::atomic::Ordering::AcqRel,
                std::sync::atomic::Ordering::Relaxed,
            )
            .is_ok()
    }) else {
        site.error_log.log(
            crate::log::Level::Alert,
            None,
            format_args!("more than {MAX_LOTS} workers: connections wait in tasks"),
        );
        return;
    };
    LOT.with(|l| {
        *l.borrow_mut() = Some(Lot {
            id,
            entries: Vec::new(),
            free: Vec::new(),
            live: 0,
            deadlines: BinaryHeap::new(),
            stale: 0,
            armed: None,
            quitting: false,
            handing: false,
            site,
            open,
        })
    });
    let mut sleep = Box::pin(tokio::time::sleep(IDLE_SLEEP));
    let mut added = Box::pin(HANDOVER.added.notified());
    loop {
        added.as_mut().enable();
        let handing = LOT.with(|l| l.borrow().as_ref().is_none_or(|l| l.handing));
        if !handing {
            adopt();
        }
        let next = LOT.with(|l| {
            let mut l = l.borrow_mut();
            let lot = l.as_mut()?;
            let next = lot.next_deadline();
            lot.armed = next;
            next
        });
        let until = next.unwrap_or_else(|| crate::metrics::timed::now() + IDLE_SLEEP);
        sleep.as_mut().reset(tokio::time::Instant::from_std(until));
        let woke = std::future::poll_fn(|cx| {
            {
                let mut inner = lock(&QUEUES[id].inner);
                if !inner.0.is_empty() {
                    return Poll::Ready(Woke::Ready(std::mem::take(&mut inner.0)));
                }
                inner.1 = Some(cx.waker().clone());
            }
            if sleep.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Woke::Timer);
            }
            if added.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Woke::Handed);
            }
            // A park with an earlier deadline takes the waker to re-arm.
            let rearm = LOT.with(|l| l.borrow().as_ref().is_some_and(|l| l.armed != next));
            if rearm {
                return Poll::Ready(Woke::Timer);
            }
            Poll::Pending
        })
        .await;
        super::worker::loop_turn();
        match woke {
            Woke::Ready(list) => {
                for n in list {
                    let w = LOT.with(|l| {
                        l.borrow_mut().as_mut().and_then(|lot| {
                            lot.take((n & 0xffff_ffff) as u32, (n >> 32) as u16, false)
                        })
                    });
                    if let Some(w) = w {
                        resume(w);
                    }
                }
            }
            Woke::Timer => expire(),
            Woke::Handed => added.set(HANDOVER.added.notified()),
        }
    }
}

/// Closes the parked connections whose deadline has passed.
fn expire() {
    let now = crate::metrics::timed::now();
    let expired = LOT.with(|l| {
        let mut l = l.borrow_mut();
        let Some(lot) = l.as_mut() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        while let Some(Reverse((at, slot, g))) = lot.deadlines.peek().copied() {
            if at > now {
                break;
            }
            lot.deadlines.pop();
            match lot.take(slot, g, true) {
                Some(w) => out.push(w),
                None => lot.stale = lot.stale.saturating_sub(1),
            }
        }
        out
    });
    // Closed quietly, as nginx closes an idle connection on its timer.
    drop(expired);
}

/// Connections parked in this worker (for tests and the status page).
pub fn parked() -> usize {
    LOT.with(|l| l.borrow().as_ref().map_or(0, |l| l.live))
}
