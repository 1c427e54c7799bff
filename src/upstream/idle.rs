//! A worker's own idle upstream connections: the first tier of the
//! keep-alive cache, as nginx's `ngx_http_upstream_keepalive_module` keeps
//! one cache per worker process.
//!
//! A connection stays registered with the worker's reactor while idle, so
//! taking it back costs no system call: no `epoll_ctl()` to leave and
//! rejoin the reactor, no wait for a fresh registration's first readiness
//! report, and no `recv(MSG_PEEK)` when the reactor has seen nothing since
//! the connection was drained (see [`crate::io::ready`]); only a
//! connection that showed something is peeked, and dropped unless it is
//! still quiet. `keepalive N` bounds each worker's list, the least recently
//! used going first; `keepalive_timeout`, `keepalive_requests` and
//! `keepalive_time` apply as in the process's tier.
//!
//! The process's tier ([`super::keepalive::Cache`]) is where connections
//! outlive their worker: a worker told to quit (a reload) hands its idle
//! connections over, and every connection it finishes with afterwards; a
//! worker whose own list is empty takes from there. The idle counts the
//! status page shows include the connections workers hold.
//!
//! What this module must not do: hold a connection registered with another
//! thread's reactor (the lists are the thread's own), or wait.

use std::cell::RefCell;
use std::collections::VecDeque;

// Looked up twice per proxied request: a fast hash, not SipHash (the keys
// come from the configuration, not from clients).
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::conn::Conn;
use super::keepalive::{Cache, Key, Limits, Usage, retired};
use crate::sys::socket::Idle;

/// How often a worker closes its connections idle past their
/// `keepalive_timeout` (nginx arms a timer per connection; a sweep this
/// often closes them at most this late).
pub const SWEEP_PERIOD: Duration = Duration::from_millis(500);

/// One idle connection.
struct Entry {
    conn: Conn,
    usage: Usage,
    /// When it went idle.
    since: Instant,
    /// Its group's `keepalive*` settings.
    limits: Limits,
}

/// A worker's idle connections for one key.
struct List {
    /// Most recently used first.
    idle: VecDeque<Entry>,
    /// The process's count of the idle connections workers hold for this
    /// key (the status page's), kept equal to the sum of the lists.
    held: Arc<AtomicUsize>,
}

impl List {
    fn pop_front(&mut self) -> Option<Entry> {
        let e = self.idle.pop_front()?;
        self.held.fetch_sub(1, Ordering::Relaxed);
        Some(e)
    }

    fn pop_back(&mut self) -> Option<Entry> {
        let e = self.idle.pop_back()?;
        self.held.fetch_sub(1, Ordering::Relaxed);
        Some(e)
    }
}

/// The worker's lists.
#[derive(Default)]
struct Local {
    lists: HashMap<Key, List>,
    /// The worker is quitting: connections go to the process's tier.
    handing_over: bool,
}

thread_local! {
    static LOCAL: RefCell<Local> = RefCell::new(Local::default());
}

/// An idle connection for `key`, with its history: this worker's most
/// recently used live one, else one of the process's tier.
pub fn take(shared: &Cache, key: &Key, now: Instant) -> Option<(Conn, Usage)> {
    let mut closed = Vec::new();
    let found = LOCAL.with_borrow_mut(|local| {
        let list = local.lists.get_mut(key)?;
        while let Some(e) = list.pop_front() {
            if now.duration_since(e.since) >= e.limits.timeout || e.conn.peek() != Idle::Quiet {
                closed.push(e.conn);
                continue;
            }
            return Some((e.conn, e.usage));
        }
        None
    });
    // Closed outside the borrow: dropping a connection deregisters it.
    drop(closed);
    found.or_else(|| {
        let (idle, usage) = shared.take(key, now)?;
        Conn::from_idle(idle).ok().map(|c| (c, usage))
    })
}

/// Keeps `conn` for the next request with `key`, unless `limits` retire
/// it; the least recently used goes when the worker's list is full. A
/// quitting worker puts it in the process's tier instead.
pub fn put(shared: &Cache, key: Key, conn: Conn, usage: Usage, limits: Limits, now: Instant) {
    let kept = LOCAL.with_borrow_mut(|local| {
        if local.handing_over {
            return Err((key, conn));
        }
        let usage = Usage {
            requests: usage.requests + 1,
            ..usage
        };
        if retired(usage, limits, now) {
            return Ok(None);
        }
        let list = local.lists.entry(key).or_insert_with_key(|k| List {
            idle: VecDeque::new(),
            held: shared.held(k),
        });
        list.idle.push_front(Entry {
            conn,
            usage,
            since: now,
            limits,
        });
        list.held.fetch_add(1, Ordering::Relaxed);
        let mut evicted = None;
        while list.idle.len() > limits.per_worker {
            evicted = list.pop_back();
        }
        Ok(evicted)
    });
    match kept {
        // Closed outside the borrow.
        Ok(evicted) => drop(evicted),
        Err((key, conn)) => {
            if let Ok(idle) = conn.into_idle() {
                shared.put(key, idle, usage, limits, now);
            }
        }
    }
}

/// The worker quits: its idle connections go to the process's tier (where
/// a worker of the next generation finds them), and so does every one it
/// finishes with from now on.
pub fn hand_over(shared: &Cache, now: Instant) {
    let lists = LOCAL.with_borrow_mut(|local| {
        local.handing_over = true;
        std::mem::take(&mut local.lists)
    });
    for (key, mut list) in lists {
        // Oldest first, so that the most recently used ends up in front.
        while let Some(e) = list.pop_back() {
            if now.duration_since(e.since) >= e.limits.timeout {
                continue;
            }
            if let Ok(idle) = e.conn.into_idle() {
                shared.park(key.clone(), idle, e.usage, e.limits, e.since);
            }
        }
    }
}

/// The worker serves on as before after a [`hand_over`] that led to no new
/// generation (its reload failed): it keeps its idle connections again.
pub fn resume() {
    LOCAL.with_borrow_mut(|local| local.handing_over = false);
}

/// Closes this worker's connections idle past their timeout.
pub fn sweep(now: Instant) {
    let expired = LOCAL.with_borrow_mut(|local| {
        let mut expired = Vec::new();
        for list in local.lists.values_mut() {
            while list
                .idle
                .back()
                .is_some_and(|e| now.duration_since(e.since) >= e.limits.timeout)
            {
                expired.extend(list.pop_back());
            }
        }
        expired
    });
    drop(expired);
}

/// Closes every connection this worker holds (its loop is ending).
pub fn close_all() {
    let lists = LOCAL.with_borrow_mut(|local| std::mem::take(&mut local.lists));
    for (_, mut list) in lists {
        while list.pop_back().is_some() {}
    }
}

/// Sweeps this worker's lists every [`SWEEP_PERIOD`], for the life of its
/// loop.
pub async fn sweeper() {
    loop {
        tokio::time::sleep(SWEEP_PERIOD).await;
        sweep(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::peer::PeerAddr;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// A connection to a listener of its own, and the server's side.
    async fn pair() -> (Conn, tokio::net::TcpStream, Key) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let c = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (s, _) = l.accept().await.unwrap();
        let key = Key {
            group: Arc::from("u"),
            peer: PeerAddr::Inet(addr),
            tls: None,
        };
        (Conn::Tcp(c), s, key)
    }

    fn limits() -> Limits {
        Limits {
            per_worker: 2,
            workers: 1,
            timeout: Duration::from_secs(60),
            max_requests: 100,
            max_age: Duration::from_secs(3600),
        }
    }

    fn usage() -> Usage {
        Usage {
            requests: 0,
            opened: Instant::now(),
        }
    }

    fn fd(c: &Conn) -> i32 {
        use std::os::fd::{AsFd, AsRawFd};
        c.as_fd().as_raw_fd()
    }

    #[test]
    fn the_worker_takes_back_its_own_connection_and_the_status_page_counts_it() {
        rt().block_on(async {
            let shared = Cache::default();
            let (conn, _server, key) = pair().await;
            let was = fd(&conn);
            let now = Instant::now();
            put(&shared, key.clone(), conn, usage(), limits(), now);
            assert_eq!(shared.idle_for(&key), 1, "held by the worker, counted");
            assert_eq!(shared.idle_in("u"), 1);
            let (conn, u) = take(&shared, &key, now).expect("reused");
            assert_eq!((fd(&conn), u.requests), (was, 1));
            assert_eq!(shared.idle_count(), 0);
        });
    }

    #[test]
    fn a_connection_the_upstream_closed_or_wrote_to_is_not_reused() {
        rt().block_on(async {
            let shared = Cache::default();
            let now = Instant::now();
            let (conn, server, key) = pair().await;
            put(&shared, key.clone(), conn, usage(), limits(), now);
            drop(server);
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(take(&shared, &key, now).is_none(), "closed upstream");
            let (conn, server, key) = pair().await;
            put(&shared, key.clone(), conn, usage(), limits(), now);
            server.writable().await.unwrap();
            server.try_write(b"unasked").unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(take(&shared, &key, now).is_none(), "unexpected bytes");
            assert_eq!(shared.idle_count(), 0);
        });
    }

    #[test]
    fn limits_retire_evict_and_time_out() {
        rt().block_on(async {
            let shared = Cache::default();
            let now = Instant::now();
            let mut servers = Vec::new();
            // keepalive_requests: the 100th request retires it.
            let (conn, s, key) = pair().await;
            servers.push(s);
            let old = Usage {
                requests: 99,
                opened: now,
            };
            put(&shared, key.clone(), conn, old, limits(), now);
            assert_eq!(shared.idle_count(), 0);
            // keepalive 2: a third idle connection evicts the oldest.
            for _ in 0..3 {
                let (conn, s, _) = pair().await;
                servers.push(s);
                put(&shared, key.clone(), conn, usage(), limits(), now);
            }
            assert_eq!(shared.idle_for(&key), 2);
            // keepalive_timeout: the sweep closes them.
            sweep(now + Duration::from_secs(61));
            assert_eq!(shared.idle_count(), 0);
            assert!(take(&shared, &key, now).is_none());
        });
    }

    #[test]
    fn a_quitting_worker_hands_its_connections_to_the_process() {
        let shared = Arc::new(Cache::default());
        let (key, was, _server) = rt().block_on(async {
            let (conn, server, key) = pair().await;
            let was = fd(&conn);
            put(
                &shared,
                key.clone(),
                conn,
                usage(),
                limits(),
                Instant::now(),
            );
            hand_over(&shared, Instant::now());
            // The upstream's side stays open for the next worker.
            (key, was, server.into_std().unwrap())
        });
        assert_eq!(shared.idle_for(&key), 1);
        // Another worker (thread, reactor) takes it.
        let other = shared.clone();
        let got = std::thread::spawn(move || {
            rt().block_on(async move {
                take(&other, &key, Instant::now()).map(|(c, u)| (fd(&c), u.requests))
            })
        })
        .join()
        .unwrap();
        assert_eq!(got, Some((was, 1)));
    }
}
