//! Worker event loops: one thread each, each a tokio current-thread runtime
//! (the reactor and the timers), accepting on its listening sockets and
//! serving the connections it accepted, never handing one to another thread.
//!
//! `worker_connections` is enforced per worker: at the limit a worker stops
//! accepting until one of its connections closes (no busy loop: it waits on
//! a notification). Shared sockets are taken as `accept_mutex` says; see
//! `docs/architecture.md`.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use std::os::fd::OwnedFd;

use socket2::Socket;
use tokio::io::unix::AsyncFd;
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::{Notify, watch};

use crate::config::model::ListenAddr;
use crate::io::client_stream::ClientStream;
use crate::log::Level;
use crate::metrics::timed::Timed;
use crate::metrics::worker as worker_metrics;

use crate::server::core::site::Site;
use crate::server::engine::balance::{self, Balance, Nudges, Spread};
use crate::server::engine::client_addr::ClientAddr;
use crate::server::engine::conn_info::ConnInfo;
use crate::server::engine::h1::conn;

/// What the main thread tells a generation of workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Serve.
    Run,
    /// Serve, but keep no idle upstream connection: hand them, and every one
    /// finished from now on, to the process's tier — a new generation is
    /// about to start and will look for them there. [`Worker::handed`] says
    /// when it is done.
    HandOver,
    /// Stop accepting, finish in-flight requests, close idle connections, exit.
    Quit,
    /// Exit now.
    Stop,
}

thread_local! {
    /// The worker's view of what the main thread last said, for
    /// [`told_to_quit`].
    static TOLD: std::cell::RefCell<Option<watch::Receiver<Control>>> =
        const { std::cell::RefCell::new(None) };
}

/// Whether the main thread has told this worker's generation to quit or
/// stop, even if the worker's own loop has not run since: a response made
/// in the same loop turn as the order must already close its connection.
/// Costs one atomic load while nothing changed.
pub fn told_to_quit() -> bool {
    TOLD.with(|t| {
        t.borrow().as_ref().is_some_and(|rx| {
            rx.has_changed().unwrap_or(true)
                && matches!(*rx.borrow(), Control::Quit | Control::Stop)
        })
    })
}

/// After `accept()` fails for lack of descriptors or memory, nginx stops
/// accepting for this long instead of spinning.
pub const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(500);

/// `ngx_accept_disabled`: a worker stops competing for the accept mutex
/// while fewer than 1/this of its `worker_connections` are free.
const ACCEPT_DISABLED_SHARE: usize = 8;

thread_local! {
    /// Woken on each turn of the worker's loop that handled events (see
    /// [`loop_turn`]).
    static TURN: Rc<Notify> = Rc::new(Notify::new());
}

/// The worker's loop handled events: an acceptor that lost the accept
/// mutex tries again now, as nginx's loser does on each turn.
pub fn loop_turn() {
    TURN.with(|t| t.notify_waiters());
}

/// Connection serial numbers, shared by every worker (`$connection`).
static CONNECTIONS: AtomicU64 = AtomicU64::new(1);

/// `accept_mutex on`: one worker at a time holds the right to accept on a
/// shared socket, as in nginx. nginx has one mutex, whose holder accepts on
/// every socket; here each socket is accepted on by a task of its own, so
/// each shared socket has its own mutex: with one for all, the holder
/// waiting on one socket kept every other socket's connections waiting.
#[derive(Debug, Default)]
pub struct AcceptMutex(AtomicBool);

impl AcceptMutex {
    fn try_lock(&self) -> bool {
        self.0
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    fn unlock(&self) {
        self.0.store(false, Ordering::Release);
    }
}

/// One of a worker's listening sockets.
pub struct WorkerSocket {
    /// The address it was bound to.
    pub addr: ListenAddr,
    /// The socket (the worker's duplicate).
    pub socket: Socket,
    /// Whether other workers accept on it too (no `reuseport`).
    pub shared: bool,
    /// Its accept mutex, shared with the other workers: a shared socket's
    /// under `accept_mutex on`; without it, a shared socket is taken with
    /// `EPOLLEXCLUSIVE`.
    pub mutex: Option<Arc<AcceptMutex>>,
    /// A shared socket's nudges, shared with the other workers, to spread
    /// its connections (`server::engine::balance`).
    pub nudges: Option<Arc<Nudges>>,
}

/// One worker's sockets.
pub struct WorkerSockets {
    /// Every address the worker accepts on.
    pub sockets: Vec<WorkerSocket>,
    /// The generation's connection counts, to spread connections over the
    /// workers of a shared socket under `accept_mutex off`.
    pub balance: Arc<Balance>,
}

/// A started worker.
pub struct Worker {
    /// Its thread.
    pub thread: JoinHandle<()>,
    /// The worker has handed its idle upstream connections over
    /// ([`Control::HandOver`]).
    pub handed: Arc<std::sync::atomic::AtomicBool>,
}

/// Starts worker `id`. `init` runs first on the new thread (its priority,
/// privilege drop and CPUs: `process::sched`).
pub fn spawn(
    id: usize,
    generation: u64,
    site: Arc<Site>,
    sockets: WorkerSockets,
    control: watch::Receiver<Control>,
    init: Arc<dyn Fn() + Send + Sync>,
) -> std::io::Result<Worker> {
    let handed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = handed.clone();
    let thread = std::thread::Builder::new()
        .name(format!("worker#{id}.{generation}"))
        .spawn(move || {
            init();
            let _ = crate::sys::signal::block_all_in_thread();
            worker_metrics::install(site.shared.worker_metrics(id));
            crate::metrics::timed::set_turn_budget(site.config.events.turn_budget);
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    site.error_log.log(
                        Level::Emerg,
                        None,
                        format_args!("worker {id} could not start its event loop: {e}"),
                    );
                    return;
                }
            };
            let local = tokio::task::LocalSet::new();
            // Each poll of the worker's main future is one loop turn, timed
            // into `nowait_loop_turn_seconds` (metrics::worker::Turns).
            rt.block_on(YieldAfterTurn::new(worker_metrics::Turns::new(
                local.run_until(async {
                    crate::io::deadline::install();
                    run(id - 1, site, sockets, control, flag).await;
                    // Closed while the reactor still runs.
                    crate::server::engine::h1::park::close_all();
                    crate::upstream::idle::close_all();
                    crate::io::deadline::uninstall();
                }),
            )));
        })?;
    Ok(Worker { thread, handed })
}

/// A worker's main future that gives the CPU to other runnable threads
/// after each turn of the loop (`sched_yield`), before the runtime polls
/// its reactor again.
///
/// A loaded worker always finds events when it polls, so it never sleeps in
/// `epoll_wait`: sharing a CPU with another worker, the load generator or
/// anything else, it would run a whole scheduler slice (milliseconds) while
/// the connections of the others wait. nginx's workers do not: theirs is a
/// lighter turn that often finds nothing, so they sleep and are woken, and
/// the CPU changes hands every few requests. Yielding after each turn (at
/// most 61 tasks, `LocalSet`'s batch) gives the same interleaving. Measured
/// (experiment C, `return 200`, 2 workers and wrk on 2 CPUs): latency stdev
/// 2.1–2.3 ms → 0.8–0.9 ms, p99 8 ms → 1.4–1.8 ms (nginx: 0.9–1.2 ms and
/// 4–5 ms), and 3–8% more requests per second, as wrk gets its CPU sooner;
/// proxying with both workers on one CPU, p99 5 ms → 1.6–2.2 ms. Alone on
/// its CPU a worker loses nothing: the call returns at once (~0.1 µs per
/// turn).
///
/// A turn cut short by its budget (`loop_turn_budget`, 250 µs) yields only
/// once [`YIELD_EVERY`] has passed since the last yield: yielding after
/// each cut turn handed the CPU to wrk every 250 µs, and each time wrk
/// could keep it for a slice while the turn's left-over connections waited
/// (1 KB files, 2 workers and wrk on 2 CPUs: 77k against 89k req/s, p99
/// 9.7 ms against 2.4 ms). A turn that ran every ready task yields as
/// before.
struct YieldAfterTurn<F> {
    inner: F,
    last_yield: std::time::Instant,
}

/// The most a worker runs turns cut short by their budget without giving
/// way: about one of the 61-task turns the yield was measured with.
const YIELD_EVERY: Duration = Duration::from_millis(1);

impl<F> YieldAfterTurn<F> {
    fn new(inner: F) -> YieldAfterTurn<F> {
        YieldAfterTurn {
            inner,
            last_yield: std::time::Instant::now(),
        }
    }
}

impl<F: std::future::Future + Unpin> std::future::Future for YieldAfterTurn<F> {
    type Output = F::Output;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        let out = std::pin::Pin::new(&mut self.inner).poll(cx);
        if out.is_pending() {
            // The turn just ended: its end is now, as near as matters.
            let now =
                crate::metrics::timed::last_turn_ended().unwrap_or_else(std::time::Instant::now);
            if !crate::metrics::timed::last_turn_cut() || now - self.last_yield >= YIELD_EVERY {
                std::thread::yield_now();
                self.last_yield = now;
            }
        }
        out
    }
}

/// The worker's life: accept until told to quit, then drain.
async fn run(
    index: usize,
    site: Arc<Site>,
    mut sockets: WorkerSockets,
    control: watch::Receiver<Control>,
    handed: Arc<std::sync::atomic::AtomicBool>,
) {
    let active = Rc::new(Cell::new(0usize));
    let freed = Rc::new(Notify::new());
    TOLD.with(|t| *t.borrow_mut() = Some(control.clone()));
    let max = site.config.events.worker_connections;
    let mut acceptors = vec![tokio::task::spawn_local(lag_probe())];
    let opener = {
        let (active, freed) = (active.clone(), freed.clone());
        Box::new(move || Open::new(&active, &freed))
    };
    // Not among the acceptors: parked connections are served until the
    // worker ends.
    let _park =
        tokio::task::spawn_local(crate::server::engine::h1::park::drive(site.clone(), opener));
    let _sweeper = tokio::task::spawn_local(crate::upstream::idle::sweeper());
    for s in std::mem::take(&mut sockets.sockets) {
        let WorkerSocket {
            addr,
            socket,
            shared,
            mutex,
            nudges,
        } = s;
        // A shared socket without the accept mutex wakes one worker per
        // connection (EPOLLEXCLUSIVE), as nginx does with `accept_mutex off`.
        let exclusive = shared && mutex.is_none();
        let listener = match Acceptor::new(socket, addr.unix_path().is_some(), exclusive) {
            Ok(l) => l,
            Err(e) => {
                site.error_log.log(
                    Level::Emerg,
                    None,
                    format_args!("epoll_ctl() for {addr} failed ({e})"),
                );
                continue;
            }
        };
        // A socket other workers accept on too: spread its connections.
        let spread = nudges.filter(|_| shared).map(|nudges| Spread {
            balance: sockets.balance.clone(),
            nudges,
            me: index,
        });
        acceptors.push(tokio::task::spawn_local(accept_loop(
            site.clone(),
            addr,
            listener,
            control.clone(),
            Taking {
                mutex,
                spread,
                active: active.clone(),
                freed: freed.clone(),
                max,
            },
        )));
    }
    // Counted among the workers that take connections from now on.
    balance::install(sockets.balance.clone(), index);
    let mut control = control;
    loop {
        let c = *control.borrow_and_update();
        match c {
            Control::Run => {
                crate::upstream::idle::resume();
                crate::server::engine::h1::park::keep();
            }
            Control::HandOver => {
                crate::upstream::idle::hand_over(&site.shared.keepalive, std::time::Instant::now());
                // Connections waiting for a request go to the next
                // generation's workers — unless `worker_shutdown_timeout`
                // is set: then, as nginx, they stay with this generation,
                // which closes them when it quits (idle keep-alive ones at
                // once, the others at the timeout).
                if site.config.main.worker_shutdown_timeout.is_none() {
                    crate::server::engine::h1::park::hand_over();
                }
                handed.store(true, std::sync::atomic::Ordering::Release);
            }
            Control::Quit => break,
            Control::Stop => return,
        }
        if control.changed().await.is_err() {
            return;
        }
    }
    // Quit: stop accepting, let idle keep-alive connections go, let the
    // busy ones finish; a later Stop cuts them short.
    balance::leave();
    for a in &acceptors {
        a.abort();
    }
    // The worker's idle upstream connections go to the process's tier, for
    // the next generation's workers.
    crate::upstream::idle::hand_over(&site.shared.keepalive, std::time::Instant::now());
    crate::server::engine::h1::park::quit();
    // `worker_shutdown_timeout`: past it, the connections still open are
    // closed (returning drops their tasks, and with them their sockets).
    let limit = site.config.main.worker_shutdown_timeout;
    let mut deadline = std::pin::pin!(tokio::time::sleep(limit.unwrap_or(Duration::ZERO)));
    while active.get() > 0 {
        tokio::select! {
            _ = freed.notified() => {}
            r = control.changed() => {
                if r.is_err() || *control.borrow() == Control::Stop {
                    return;
                }
            }
            _ = deadline.as_mut(), if limit.is_some() => {
                // nginx logs "*N shutdown timeout" per connection at info.
                site.error_log.log(
                    Level::Info,
                    None,
                    format_args!("shutdown timeout: {} connections closed", active.get()),
                );
                return;
            }
        }
    }
}

/// How a worker takes connections from one listening socket.
struct Taking {
    /// `accept_mutex on`: the socket's mutex.
    mutex: Option<Arc<AcceptMutex>>,
    /// A socket other workers accept on too (no `reuseport`): how its
    /// connections are spread.
    spread: Option<Spread>,
    /// The worker's open connections.
    active: Rc<Cell<usize>>,
    /// Woken when one closes.
    freed: Rc<Notify>,
    /// `worker_connections`.
    max: usize,
}

async fn accept_loop(
    site: Arc<Site>,
    addr: ListenAddr,
    listener: Acceptor,
    mut control: watch::Receiver<Control>,
    taking: Taking,
) {
    let Taking {
        mutex,
        spread,
        active,
        freed,
        max,
    } = taking;
    let multi = site.config.events.multi_accept;
    let mutex_delay = site.config.events.accept_mutex_delay;
    // Whether connections are being left to a less loaded worker.
    let mut deferring = Deferral::No;
    loop {
        while active.get() >= max {
            freed.notified().await;
        }
        if let Some(m) = &mutex {
            // nginx's `ngx_accept_disabled`: a worker with more than 7/8 of
            // its connections in use lets the others accept; and one past
            // its share lets the least loaded one (`server::engine::balance`).
            let disabled = active.get() > max - max / ACCEPT_DISABLED_SHARE;
            let defer = defer_to(&spread, active.get(), &mut deferring);
            if disabled || defer || !m.try_lock() {
                // As `ngx_process_events_and_timers`: the loser tries again
                // on its loop's next turn (any event it handles), and waits
                // at most `accept_mutex_delay` when no event comes — or
                // until a busier worker leaves it a connection.
                let turn = TURN.with(|t| t.clone());
                let nudged = async {
                    match &spread {
                        Some(sp) => sp.nudges.nudged(sp.me).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = turn.notified() => {}
                    _ = nudged => {}
                    _ = tokio::time::sleep(mutex_delay) => {}
                }
                continue;
            }
        }
        let turn = TURN.with(|t| t.clone());
        let accepted = match spread.as_ref().filter(|_| mutex.is_none()) {
            None => tokio::select! {
                r = listener.accept() => r,
                // The holder lets the mutex go on each turn of its loop that
                // handled other events, and takes it again on the next (nginx
                // unlocks after its posted accept events, every turn).
                _ = turn.notified(), if mutex.is_some() => {
                    if let Some(m) = &mutex { m.unlock(); }
                    tokio::task::yield_now().await;
                    continue;
                }
                _ = control.changed() => {
                    if let Some(m) = &mutex { m.unlock(); }
                    if matches!(*control.borrow(), Control::Quit | Control::Stop) { return; }
                    continue;
                }
            },
            Some(sp) => {
                tokio::select! {
                    // A connection waits (or did when the kernel woke this
                    // worker: another may have taken it since).
                    r = listener.ready() => if r.is_err() { return; },
                    // A busier worker leaves one to this one.
                    _ = sp.nudges.nudged(sp.me) => {}
                    _ = control.changed() => {
                        if matches!(*control.borrow(), Control::Quit | Control::Stop) { return; }
                        continue;
                    }
                }
                if defer_to(&spread, active.get(), &mut deferring) {
                    tokio::select! {
                        _ = turn.notified() => {}
                        _ = tokio::time::sleep(balance::DEFER_STEP) => {}
                    }
                    continue;
                }
                match listener.take() {
                    Some(r) => r,
                    // Another worker took it.
                    None => continue,
                }
            }
        };
        let mut batch = vec![accepted];
        if multi {
            while active.get() + batch.len() < max {
                match listener.try_accept_now() {
                    Some(r) => batch.push(r),
                    None => break,
                }
            }
        }
        if let Some(m) = &mutex {
            m.unlock();
        }
        for accepted in batch {
            match accepted {
                Ok((stream, peer)) => {
                    // A unix-domain connection's local address is the
                    // listening socket's (nginx's `c->local_sockaddr`).
                    let local = match &stream {
                        ClientStream::Tcp(s) => s
                            .local_addr()
                            .map_or_else(|_| addr.clone(), ListenAddr::Inet),
                        ClientStream::Tls(s) => s
                            .tcp()
                            .local_addr()
                            .map_or_else(|_| addr.clone(), ListenAddr::Inet),
                        ClientStream::Unix(_) => addr.clone(),
                    };
                    let info = ConnInfo {
                        peer,
                        local,
                        socket_addr: addr.clone(),
                        conn_no: CONNECTIONS.fetch_add(1, Ordering::Relaxed),
                        accepted: crate::metrics::timed::now(),
                        https_port: false,
                        tls: None,
                    };
                    if site.http().is_some_and(|h| h.conf.tcp_nodelay) {
                        let _ = stream.set_nodelay(true);
                    }
                    let open = Open::new(&active, &freed);
                    // The connection's future is the task's whole state: no
                    // wrapping block that would keep a second copy of its
                    // arguments beside it.
                    tokio::task::spawn_local(Timed::new(conn::serve(
                        stream,
                        info,
                        site.clone(),
                        open,
                    )));
                }
                Err(e) => {
                    site.error_log.log(
                        Level::Alert,
                        None,
                        format_args!("accept4() on {addr} failed ({e})"),
                    );
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
                    ) {
                        tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    }
                }
            }
        }
        if !multi {
            tokio::task::yield_now().await;
        }
    }
}

/// Whether this worker, holding `mine` connections, leaves the next one to
/// a less loaded worker of the socket (`spread`), which it then nudges. It
/// goes on while that worker takes connections; once it has taken none for
/// [`balance::DEFER_MAX`] (busy, or its CPU taken) this one accepts freely
/// for [`balance::FREE_AFTER_DEFER`]: a stalled peer costs a connection at
/// most that wait, not one wait per connection.
fn defer_to(spread: &Option<Spread>, mine: usize, state: &mut Deferral) -> bool {
    let Some(sp) = spread else {
        return false;
    };
    let Some((other, load)) = sp.balance.lighter(sp.me, mine) else {
        *state = Deferral::No;
        return false;
    };
    let now = std::time::Instant::now();
    match *state {
        Deferral::Free(until) if now < until => return false,
        // It took some since: it is alive, wait on.
        Deferral::Since {
            other: o, load: l, ..
        } if o != other || load > l => {
            *state = Deferral::Since {
                since: now,
                other,
                load,
            };
        }
        Deferral::Since { since, .. } if now.duration_since(since) >= balance::DEFER_MAX => {
            *state = Deferral::Free(now + balance::FREE_AFTER_DEFER);
            return false;
        }
        Deferral::Since { .. } => {}
        Deferral::No | Deferral::Free(_) => {
            *state = Deferral::Since {
                since: now,
                other,
                load,
            }
        }
    }
    sp.nudges.nudge(other);
    true
}

/// Where a worker stands in leaving connections to a less loaded one.
#[derive(Clone, Copy)]
enum Deferral {
    /// Not deferring.
    No,
    /// Deferring to worker `other`, which held `load` connections `since`.
    Since {
        since: std::time::Instant,
        other: usize,
        load: usize,
    },
    /// Deferred in vain: accepting without deferring until then.
    Free(std::time::Instant),
}

/// A connection counted in its worker's `worker_connections`: dropping it
/// (the connection ended, or its task was dropped) frees the place and
/// wakes an acceptor waiting for one.
pub struct Open {
    /// The worker's count of open connections.
    active: Rc<Cell<usize>>,
    /// Woken when a place frees.
    freed: Rc<Notify>,
}

impl Open {
    /// Counts one more connection in the worker's `worker_connections`.
    fn new(active: &Rc<Cell<usize>>, freed: &Rc<Notify>) -> Open {
        active.set(active.get() + 1);
        balance::publish_here(active.get());
        worker_metrics::with(|m| m.connections.fetch_add(1, Ordering::Relaxed));
        Open {
            active: active.clone(),
            freed: freed.clone(),
        }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.active.set(self.active.get() - 1);
        balance::publish_here(self.active.get());
        worker_metrics::with(|m| m.connections.fetch_sub(1, Ordering::Relaxed));
        self.freed.notify_one();
    }
}

/// How often each worker checks how late its own timer fires.
pub const LAG_PROBE_PERIOD: Duration = Duration::from_millis(10);

/// Measures how long the loop is held by other work: a timer due every
/// [`LAG_PROBE_PERIOD`] fires late by exactly the time the loop could not
/// get to it (Cloudflare's `event_loop_blocked`, sampled). Unlike hooks on
/// the reactor's parking, this sees a loop that never parks.
async fn lag_probe() {
    loop {
        let due = tokio::time::Instant::now() + LAG_PROBE_PERIOD;
        tokio::time::sleep_until(due).await;
        let late = tokio::time::Instant::now().saturating_duration_since(due);
        worker_metrics::with(|m| worker_metrics::record(&mut m.histograms().lag, late));
    }
}

/// How a worker accepts on one listening socket.
enum Acceptor {
    /// A TCP socket registered in the worker's reactor: its own
    /// `reuseport` socket, or a shared one under `accept_mutex on`.
    Tcp(TcpListener),
    /// A unix-domain socket registered in the worker's reactor.
    Unix(UnixListener),
    /// A shared socket in an `EPOLLEXCLUSIVE` epoll instance of the worker's
    /// own, itself registered in the reactor (see [`crate::sys::epoll`]).
    Exclusive {
        /// The listening socket (non-blocking).
        listener: Socket,
        /// Whether it is a unix-domain socket.
        unix: bool,
        /// The worker's exclusive epoll instance holding it.
        ready: AsyncFd<OwnedFd>,
    },
}

/// A connection accepted: its socket and where it came from.
type Accepted = (ClientStream, ClientAddr);

impl Acceptor {
    fn new(sock: Socket, unix: bool, exclusive: bool) -> std::io::Result<Acceptor> {
        if exclusive {
            let ep = crate::sys::epoll::exclusive_epoll(&sock)?;
            return Ok(Acceptor::Exclusive {
                listener: sock,
                unix,
                ready: crate::sys::epoll::register(ep)?,
            });
        }
        Ok(if unix {
            Acceptor::Unix(UnixListener::from_std(sock.into())?)
        } else {
            Acceptor::Tcp(TcpListener::from_std(sock.into())?)
        })
    }

    async fn accept(&self) -> std::io::Result<Accepted> {
        match self {
            Acceptor::Tcp(l) => l
                .accept()
                .await
                .map(|(s, peer)| (ClientStream::Tcp(s), ClientAddr::Inet(peer))),
            Acceptor::Unix(l) => l
                .accept()
                .await
                .map(|(s, peer)| (ClientStream::Unix(s), ClientAddr::unix(peer.as_pathname()))),
            Acceptor::Exclusive {
                listener,
                unix,
                ready,
            } => loop {
                let mut guard = ready.readable().await?;
                match crate::sys::epoll::accept4(listener) {
                    Ok((fd, peer)) => return registered(fd, &peer, *unix),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => guard.clear_ready(),
                    Err(e) => return Err(e),
                }
            },
        }
    }

    /// Waits until a shared socket's exclusive epoll instance reports a
    /// connection, keeping the report (see [`Acceptor::take`]). Only for
    /// [`Acceptor::Exclusive`]; the others wait in [`Acceptor::accept`].
    async fn ready(&self) -> std::io::Result<()> {
        match self {
            Acceptor::Exclusive { ready, .. } => ready.readable().await.map(drop),
            _ => std::future::pending().await,
        }
    }

    /// `accept()` now, after [`Acceptor::ready`] or a nudge: `None` when no
    /// connection waits (another worker took it), and then the report is
    /// cleared so that the next wait is for a new connection.
    fn take(&self) -> Option<std::io::Result<Accepted>> {
        use std::task::{Context, Poll};
        let Acceptor::Exclusive {
            listener,
            unix,
            ready,
        } = self
        else {
            return self.try_accept_now();
        };
        // The report is taken before accept4(): one that comes after it is
        // newer, and clearing this one leaves it (tokio compares ticks).
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let guard = match ready.poll_read_ready(&mut cx) {
            Poll::Ready(Ok(g)) => Some(g),
            _ => None,
        };
        match crate::sys::epoll::accept4(listener) {
            Ok((fd, peer)) => Some(registered(fd, &peer, *unix)),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Some(mut g) = guard {
                    g.clear_ready();
                }
                None
            }
            Err(e) => Some(Err(e)),
        }
    }

    /// `accept()` without waiting, for `multi_accept on`.
    fn try_accept_now(&self) -> Option<std::io::Result<Accepted>> {
        use std::task::{Context, Poll};
        let mut cx = Context::from_waker(std::task::Waker::noop());
        match self {
            Acceptor::Tcp(l) => match l.poll_accept(&mut cx) {
                Poll::Ready(r) => {
                    Some(r.map(|(s, peer)| (ClientStream::Tcp(s), ClientAddr::Inet(peer))))
                }
                Poll::Pending => None,
            },
            Acceptor::Unix(l) => match l.poll_accept(&mut cx) {
                Poll::Ready(r) => Some(r.map(|(s, peer)| {
                    (ClientStream::Unix(s), ClientAddr::unix(peer.as_pathname()))
                })),
                Poll::Pending => None,
            },
            Acceptor::Exclusive { listener, unix, .. } => {
                match crate::sys::epoll::accept4(listener) {
                    Ok((fd, peer)) => Some(registered(fd, &peer, *unix)),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => None,
                    Err(e) => Some(Err(e)),
                }
            }
        }
    }
}

/// A socket `accept4()` returned, registered with the worker's reactor,
/// and its peer.
fn registered(fd: OwnedFd, peer: &socket2::SockAddr, unix: bool) -> std::io::Result<Accepted> {
    if unix {
        let s = UnixStream::from_std(fd.into())?;
        return Ok((ClientStream::Unix(s), ClientAddr::unix(peer.as_pathname())));
    }
    let peer = peer
        .as_socket()
        .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EAFNOSUPPORT))?;
    Ok((
        ClientStream::Tcp(TcpStream::from_std(fd.into())?),
        ClientAddr::Inet(peer),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker past its share defers (and nudges) while the other takes
    /// connections, for at most `DEFER_MAX` after it last took one, then
    /// accepts freely for `FREE_AFTER_DEFER`; one back within its share
    /// stops deferring at once.
    #[test]
    fn deferring_is_bounded() {
        let balance = Arc::new(Balance::new(2));
        balance.publish(0, 0);
        balance.publish(1, 0);
        let spread = Some(Spread {
            balance: balance.clone(),
            nudges: Arc::new(Nudges::new(2)),
            me: 0,
        });
        let mut state = Deferral::No;
        assert!(!defer_to(&spread, 2, &mut state), "within the margin");
        assert!(defer_to(&spread, 3, &mut state), "past it");
        assert!(defer_to(&spread, 3, &mut state), "still");
        std::thread::sleep(balance::DEFER_MAX / 2);
        balance.publish(1, 1);
        assert!(defer_to(&spread, 4, &mut state), "the other takes some");
        std::thread::sleep(balance::DEFER_MAX / 2 + Duration::from_millis(2));
        assert!(defer_to(&spread, 4, &mut state), "not in vain yet");
        std::thread::sleep(balance::DEFER_MAX / 2);
        assert!(!defer_to(&spread, 4, &mut state), "in vain");
        assert!(!defer_to(&spread, 5, &mut state), "free for a while");
        assert!(matches!(state, Deferral::Free(_)));
        balance.publish(1, 5);
        assert!(!defer_to(&spread, 4, &mut state), "the other caught up");
        assert!(matches!(state, Deferral::No));
        assert!(defer_to(&spread, 8, &mut state), "a new deferral");
        assert!(!defer_to(&None, 100, &mut state), "a socket of its own");
    }
}
