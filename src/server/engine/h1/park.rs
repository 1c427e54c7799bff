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

use std::os::fd::OwnedFd;
use std::rc::Rc;

use tokio::io::unix::AsyncFd;
use tokio::sync::Notify;

use crate::io::client_stream::ClientStream;
use std::sync::atomic::Ordering::Relaxed;

use crate::metrics::connections::Tracked;
use crate::metrics::worker as worker_metrics;
use crate::sys::waker::{NumberWake, number_waker};

use crate::server::core::send::SocketForPools;
use crate::server::core::site::Site;
use crate::server::engine::conn_info::ConnInfo;
use crate::server::engine::worker::Open;

/// How many workers (of every generation alive at once) can park
/// connections; a worker beyond it waits for requests in a task per
/// connection, as before parking existed.
pub const MAX_LOTS: usize = 1024;
/// Deadline entries of connections no longer parked are dropped lazily;
/// the queue is rebuilt when more than this many are stale and they
/// outnumber the live ones twice.
const STALE_REBUILD: usize = 4096;
/// A connection parked this long leaves the reactor for the worker's
/// epoll instance: a keep-alive connection under load comes back sooner
/// (no system call to park or resume it), one that waits longer costs only
/// its slot.
pub const COLD_AFTER: Duration = Duration::from_secs(1);
/// Most cold connections taken from the epoll instance per driver turn.
const COLD_BATCH: usize = 256;
/// How long the driver sleeps when nothing is parked.
const IDLE_SLEEP: Duration = Duration::from_secs(3600);

/// A connection between requests: what its next request needs.
pub struct Waiting {
    /// The socket, registered with this worker's reactor.
    pub stream: ClientStream,
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
    stream: crate::io::client_stream::StdClientStream,
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
    /// Serve one more request and close.
    last: bool,
}

/// A connection parked for longer than [`COLD_AFTER`]: out of the reactor,
/// in the worker's own epoll instance, which costs the process no memory
/// per connection.
struct Cold {
    /// The connection, as it would be handed over.
    handed: Handed,
    /// Its place in the worker's `worker_connections`.
    open: Open,
}

/// A parked connection.
enum Parked {
    /// In the reactor, its waker a number: resumed with no system call.
    Hot(Box<Waiting>),
    /// In the worker's epoll instance.
    Cold(Box<Cold>),
}

impl Parked {
    fn requests(&self) -> u64 {
        match self {
            Parked::Hot(w) => w.requests,
            Parked::Cold(c) => c.handed.requests,
        }
    }
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
    parked: Option<Parked>,
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
    /// (parked at, slot, generation) of hot connections, oldest first, to
    /// make them cold after [`COLD_AFTER`].
    hot: std::collections::VecDeque<(Instant, u32, u16)>,
    /// The worker's epoll instance for cold connections, registered with
    /// the reactor; `None` if it could not be made (all stay hot).
    cold: Option<Rc<AsyncFd<OwnedFd>>>,
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
    /// Counts one more parked connection, here and on the status page.
    fn one_more(&mut self) {
        self.live += 1;
        worker_metrics::with(|m| m.parked.fetch_add(1, Relaxed));
    }

    /// Counts one parked connection less, here and on the status page.
    fn one_less(&mut self) {
        self.live -= 1;
        worker_metrics::with(|m| m.parked.fetch_sub(1, Relaxed));
    }

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
        e.parked = Some(Parked::Hot(w));
        let generation = e.generation;
        self.one_more();
        self.deadlines.push(Reverse((deadline, slot, generation)));
        if self.cold.is_some() {
            self.hot
                .push_back((crate::metrics::timed::now(), slot, generation));
        }
        (slot, generation)
    }

    /// Takes the connection out of `slot` if it is still the one
    /// `generation` names (a cold one out of the epoll instance too).
    fn take(&mut self, slot: u32, generation: u16, by_timer: bool) -> Option<Parked> {
        let e = self.entries.get_mut(slot as usize)?;
        if e.generation != generation {
            return None;
        }
        let w = e.parked.take()?;
        if let (Parked::Cold(c), Some(ep)) = (&w, &self.cold) {
            let _ = crate::sys::epoll::delete(ep.get_ref(), &c.handed.stream);
        }
        e.generation = e.generation.wrapping_add(1);
        self.free.push(slot);
        self.one_less();
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
    fn take_all(&mut self) -> Vec<Parked> {
        let mut out = Vec::with_capacity(self.live);
        for slot in 0..self.entries.len() as u32 {
            let g = self.entries[slot as usize].generation;
            if let Some(w) = self.take(slot, g, true) {
                out.push(w);
            }
        }
        self.deadlines.clear();
        self.hot.clear();
        self.stale = 0;
        out
    }

    /// Moves the connections hot for [`COLD_AFTER`] to the epoll instance.
    fn cool(&mut self, now: Instant) {
        let Some(ep) = self.cold.clone() else {
            return;
        };
        while let Some(&(at, slot, g)) = self.hot.front() {
            if at + COLD_AFTER > now {
                break;
            }
            self.hot.pop_front();
            let Some(e) = self.entries.get_mut(slot as usize) else {
                continue;
            };
            if e.generation != g || !matches!(e.parked, Some(Parked::Hot(_))) {
                continue;
            }
            let Some(Parked::Hot(w)) = e.parked.take() else {
                continue;
            };
            let Some(open) = split(*w).map(|(handed, open)| Box::new(Cold { handed, open })) else {
                // Deregistering failed: the socket is gone.
                self.free.push(slot);
                e.generation = e.generation.wrapping_add(1);
                self.one_less();
                self.stale += 1;
                continue;
            };
            if crate::sys::epoll::add_readable(
                ep.get_ref(),
                &open.handed.stream,
                number(0, slot, g) as u64,
            )
            .is_ok()
            {
                e.parked = Some(Parked::Cold(open));
            } else if let Some(w) = warm(*open, None) {
                // No room in the epoll instance: it stays hot (its waker is
                // set again by the poll below).
                let waker = number_waker::<SlotWake>(number(self.id, slot, g));
                let _ = w.stream.poll_read_ready(&mut Context::from_waker(&waker));
                e.parked = Some(Parked::Hot(w));
            } else {
                self.free.push(slot);
                e.generation = e.generation.wrapping_add(1);
                self.one_less();
                self.stale += 1;
            }
        }
    }

    /// Wakes the driver if it sleeps past `at`, so that it wakes at `at`.
    fn rearm(&mut self, at: Instant) {
        if self.armed.is_none_or(|a| at < a) {
            self.armed = Some(at);
            let waker = lock(&QUEUES[self.id].inner).1.take();
            if let Some(w) = waker {
                w.wake();
            }
        }
    }

    /// The next deadline of a parked connection, dropping stale ones.
    fn next_deadline(&mut self) -> Option<Instant> {
        while let Some(Reverse((at, slot, g))) = self.deadlines.peek().copied() {
            let parked = self
                .entries
                .get(slot as usize)
                .is_some_and(|e| e.generation == g && e.parked.is_some());
            if parked {
                let cool = self.hot.front().map(|h| h.0 + COLD_AFTER);
                return Some(cool.map_or(at, |c| c.min(at)));
            }
            self.deadlines.pop();
            self.stale = self.stale.saturating_sub(1);
        }
        None
    }
}

/// Makes the worker's driver wake at `at` if it sleeps past it (a wait in
/// a task that ends then: [`crate::server::engine::h1::hot_wait`]).
pub fn rearm(at: Instant) {
    LOT.with(|l| {
        if let Some(lot) = l.borrow_mut().as_mut() {
            lot.rearm(at);
        }
    });
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
            hand(vec![Parked::Hot(w)]);
            return Ok(None);
        }
        if lot.quitting && w.requests > 0 {
            return Ok(None);
        }
        let id = lot.id;
        let (slot, generation) = lot.insert(w, deadline);
        let waker = number_waker::<SlotWake>(number(id, slot, generation));
        let mut cx = Context::from_waker(&waker);
        let ready = match &lot.entries[slot as usize].parked {
            Some(Parked::Hot(p)) => p.stream.poll_read_ready(&mut cx).is_ready(),
            _ => false,
        };
        if ready {
            return Ok(lot
                .take(slot, generation, false)
                .and_then(|p| warm_parked(p, None)));
        }
        let wake_at = if lot.cold.is_some() {
            deadline.min(crate::metrics::timed::now() + COLD_AFTER)
        } else {
            deadline
        };
        lot.rearm(wake_at);
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

/// A parked connection's parts apart from its worker's count (`None` if
/// the socket could not leave the reactor).
fn split(w: Waiting) -> Option<(Handed, Open)> {
    let deadline = w.deadline?;
    // Out of this worker's reactor.
    let stream = w.stream.into_std().ok()?;
    Some((
        Handed {
            stream,
            info: w.info,
            site: w.site,
            requests: w.requests,
            nodelay: w.nodelay,
            pool_sock: w.pool_sock,
            stats: w.stats,
            idle_timeout: w.idle_timeout,
            deadline,
            last: w.last,
        },
        w.open,
    ))
}

/// A cold connection back in this worker's reactor, with `site` if given
/// (adoption) or its own.
fn warm(c: Cold, site: Option<(Arc<Site>, bool)>) -> Option<Box<Waiting>> {
    let Cold { handed: h, open } = c;
    let stream = ClientStream::from_std(h.stream).ok()?;
    let (site, last) = site.unwrap_or((h.site, h.last));
    Some(Box::new(Waiting {
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
    }))
}

fn warm_parked(p: Parked, site: Option<(Arc<Site>, bool)>) -> Option<Box<Waiting>> {
    match p {
        Parked::Hot(w) => Some(w),
        Parked::Cold(c) => warm(*c, site),
    }
}

fn resume(w: Box<Waiting>) {
    tokio::task::spawn_local(crate::metrics::timed::Timed::new(
        crate::server::engine::h1::conn::resume(w),
    ));
}

/// Whether the worker is quitting (a response then closes its connection).
pub fn quitting() -> bool {
    LOT.with(|l| l.borrow().as_ref().is_some_and(|l| l.quitting))
        || crate::server::engine::worker::told_to_quit()
}

/// The worker quits: parked keep-alive connections are closed; those that
/// have not sent a first request wait for it, as today's tasks did.
pub fn quit() {
    // Connections waiting in their tasks park, and are closed as parked.
    crate::server::engine::h1::hot_wait::close();
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
            if e.parked.as_ref().is_some_and(|w| w.requests() > 0) {
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
    // Connections waiting in their tasks park, and are handed as parked.
    crate::server::engine::h1::hot_wait::close();
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
    crate::server::engine::h1::hot_wait::reopen();
    LOT.with(|l| {
        if let Some(lot) = l.borrow_mut().as_mut() {
            lot.handing = false;
        }
    });
    HANDOVER.added.notify_waiters();
}

fn hand(list: Vec<Parked>) {
    if list.is_empty() {
        return;
    }
    let mut handed = Vec::with_capacity(list.len());
    for p in list {
        // The worker's count drops with `open`.
        match p {
            Parked::Hot(w) => handed.extend(split(*w).map(|(h, _open)| h)),
            Parked::Cold(c) => handed.push(c.handed),
        }
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
            let (site, last) = if lot.site.vhosts.listens_on(&h.info.socket_addr) {
                (lot.site.clone(), h.last)
            } else {
                (h.site.clone(), true)
            };
            Some((site, last, (lot.open)()))
        });
        let Some((site, last, open)) = made else {
            return;
        };
        if let Some(w) = warm(Cold { handed: h, open }, Some((site, last))) {
            park(w);
        }
    }
}

/// What woke the driver.
enum Woke {
    /// Numbers of slots whose sockets are readable.
    Ready(Vec<usize>),
    /// Numbers of cold slots whose sockets are readable.
    Cold(Vec<u64>),
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
    // The epoll instance for cold connections, itself in the reactor.
    let cold = crate::sys::epoll::create()
        .and_then(crate::sys::epoll::register)
        .map(Rc::new)
        .map_err(|e| {
            site.error_log.log(
                crate::log::Level::Alert,
                None,
                format_args!("epoll_create1() failed ({e}): idle connections stay in the reactor"),
            )
        })
        .ok();
    LOT.with(|l| {
        *l.borrow_mut() = Some(Lot {
            id,
            entries: Vec::new(),
            free: Vec::new(),
            live: 0,
            deadlines: BinaryHeap::new(),
            stale: 0,
            hot: std::collections::VecDeque::new(),
            cold: cold.clone(),
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
            let next = match (
                lot.next_deadline(),
                crate::server::engine::h1::hot_wait::next_end(),
            ) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
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
            if let Some(ep) = &cold {
                if let Poll::Ready(Ok(mut guard)) = ep.poll_read_ready(cx) {
                    let mut got = Vec::new();
                    match crate::sys::epoll::wait_now(ep.get_ref(), &mut got, COLD_BATCH) {
                        Ok(n) if n > 0 => return Poll::Ready(Woke::Cold(got)),
                        _ => guard.clear_ready(),
                    }
                    // Cleared: poll again to register the waker.
                    let _ = ep.poll_read_ready(cx);
                }
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
        crate::server::engine::worker::loop_turn();
        match woke {
            Woke::Ready(list) => wake_all(list.into_iter()),
            Woke::Cold(list) => wake_all(list.into_iter().map(|n| n as usize)),
            Woke::Timer => {
                crate::server::engine::h1::hot_wait::sweep(crate::metrics::timed::now());
                expire();
                LOT.with(|l| {
                    if let Some(lot) = l.borrow_mut().as_mut() {
                        lot.cool(crate::metrics::timed::now());
                    }
                });
            }
            Woke::Handed => added.set(HANDOVER.added.notified()),
        }
    }
}

/// Resumes the parked connections these numbers name, if still parked.
fn wake_all(list: impl Iterator<Item = usize>) {
    for n in list {
        let p = LOT.with(|l| {
            l.borrow_mut()
                .as_mut()
                .and_then(|lot| lot.take((n & 0xffff_ffff) as u32, (n >> 32) as u16, false))
        });
        if let Some(w) = p.and_then(|p| warm_parked(p, None)) {
            resume(w);
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
