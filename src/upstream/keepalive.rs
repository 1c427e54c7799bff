//! The process's keep-alive cache of idle upstream connections: the tier
//! that outlives a worker, and so a configuration reload.
//!
//! Each worker keeps its own idle connections first, registered with its
//! reactor (`idle.rs`, as nginx's `ngx_http_upstream_keepalive_module`
//! keeps one cache per worker). A worker that quits hands its idle
//! connections over to this tier, unregistered, and a worker whose own list
//! is empty takes from here: so a connection opened before a reload serves
//! requests after it. Taking one looks at it first without reading
//! (`recv(MSG_PEEK | MSG_DONTWAIT)`): one the upstream closed, or that has
//! unexpected bytes, is dropped, as nginx's idle handler closes them.
//! `keepalive N` bounds the idle connections of a group per worker, as in
//! nginx (so N × workers here); the least recently used go first.
//! `keepalive_timeout` closes a connection idle that long;
//! `keepalive_requests` and `keepalive_time` retire a connection after that
//! many requests or that long since it was opened.
//!
//! The counts the status page shows add the connections workers hold, which
//! they keep in [`Cache::held`] counters.
//!
//! The lock is a `std::sync::Mutex`: nothing awaits while holding it, and it
//! is held to push or pop one entry. A worker's request takes it only when
//! this tier holds something ([`Cache::take`] looks at a counter first).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::conn::IdleConn;
use super::peer::PeerAddr;
use crate::sys::socket::{self as sys_socket, Idle};

/// Which idle connections can serve a request: the same upstream group,
/// the same peer, and the same TLS (none, or the same settings and name:
/// a connection made with other certificates trusted, another client
/// certificate or for another name serves no request that asks for those).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    /// The upstream group's name.
    pub group: Arc<str>,
    /// The peer's address.
    pub peer: PeerAddr,
    /// The connection's TLS; `None` for plain HTTP.
    pub tls: Option<Arc<TlsKey>>,
}

/// What a TLS connection to an upstream was made with.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TlsKey {
    /// A digest of the location's TLS settings (protocols, ciphers,
    /// certificates, verification, SNI on or off).
    pub settings: [u8; 16],
    /// The name it was made for (verified, and sent as SNI if it was).
    pub name: String,
}

impl Key {
    /// Whether `other` is for the same group and peer, whatever its TLS.
    fn same_peer(&self, other: &Key) -> bool {
        self.group == other.group && self.peer == other.peer
    }
}

/// A group's `keepalive*` settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `keepalive N` per worker.
    pub per_worker: usize,
    /// Workers, to bound the process-wide count.
    pub workers: usize,
    /// `keepalive_timeout`.
    pub timeout: Duration,
    /// `keepalive_requests`.
    pub max_requests: u64,
    /// `keepalive_time`.
    pub max_age: Duration,
}

/// A connection's history, carried while it is idle.
#[derive(Clone, Copy, Debug)]
pub struct Usage {
    /// Requests it has carried.
    pub requests: u64,
    /// When it was opened.
    pub opened: Instant,
}

struct Entry {
    conn: IdleConn,
    usage: Usage,
    since: Instant,
    timeout: Duration,
}

/// The process's idle upstream connections.
#[derive(Default)]
pub struct Cache {
    groups: Mutex<HashMap<Key, VecDeque<Entry>>>,
    /// Entries in `groups`, read without the lock.
    parked: AtomicUsize,
    /// Per key, the idle connections workers hold (`idle.rs`).
    held: Mutex<HashMap<Key, Arc<AtomicUsize>>>,
}

/// Whether a connection with `usage` (the request just served counted)
/// has served its time: `keepalive_requests`, `keepalive_time`, or a group
/// that keeps none.
pub fn retired(usage: Usage, limits: Limits, now: Instant) -> bool {
    usage.requests >= limits.max_requests
        || now.duration_since(usage.opened) >= limits.max_age
        || limits.per_worker == 0
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("idle", &self.idle_count())
            .finish()
    }
}

impl Cache {
    fn lock(&self) -> MutexGuard<'_, HashMap<Key, VecDeque<Entry>>> {
        self.groups.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The most recently cached live connection for `key`, if any.
    pub fn take(&self, key: &Key, now: Instant) -> Option<(IdleConn, Usage)> {
        if self.parked.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut closed = Vec::new();
        let found = {
            let mut groups = self.lock();
            let list = groups.get_mut(key)?;
            let mut found = None;
            while let Some(e) = list.pop_front() {
                self.parked.fetch_sub(1, Ordering::Relaxed);
                if now.duration_since(e.since) >= e.timeout
                    || sys_socket::peek_idle(&e.conn) != Idle::Quiet
                {
                    closed.push(e.conn);
                    continue;
                }
                found = Some((e.conn, e.usage));
                break;
            }
            found
        };
        // Closed outside the lock: close() is cheap but not free.
        drop(closed);
        found
    }

    /// Caches `conn` after a request, unless `limits` retire it; the least
    /// recently used idle connection goes when the group is full.
    pub fn put(&self, key: Key, conn: IdleConn, mut usage: Usage, limits: Limits, now: Instant) {
        usage.requests += 1;
        if retired(usage, limits, now) {
            return;
        }
        self.park(key, conn, usage, limits, now);
    }

    /// Caches `conn`, idle since `since`, as it is (its last request
    /// counted in `usage` already): a worker's connection handed over.
    pub fn park(&self, key: Key, conn: IdleConn, usage: Usage, limits: Limits, since: Instant) {
        let max = limits.per_worker.saturating_mul(limits.workers.max(1));
        let evicted = {
            let mut groups = self.lock();
            let list = groups.entry(key).or_default();
            list.push_front(Entry {
                conn,
                usage,
                since,
                timeout: limits.timeout,
            });
            self.parked.fetch_add(1, Ordering::Relaxed);
            let mut evicted = Vec::new();
            while list.len() > max {
                if let Some(e) = list.pop_back() {
                    self.parked.fetch_sub(1, Ordering::Relaxed);
                    evicted.push(e.conn);
                }
            }
            evicted
        };
        drop(evicted);
    }

    /// The counter of idle connections workers hold for `key`, which they
    /// keep up to date (the status page reads it).
    pub fn held(&self, key: &Key) -> Arc<AtomicUsize> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.entry(key.clone()).or_default().clone()
    }

    fn held_where(&self, mut wanted: impl FnMut(&Key) -> bool) -> usize {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.iter()
            .filter(|(k, _)| wanted(k))
            .map(|(_, n)| n.load(Ordering::Relaxed))
            .sum()
    }

    /// Closes every connection idle past its timeout (called periodically
    /// off the loops, so that idle sockets do not wait for a next request).
    pub fn sweep(&self, now: Instant) {
        let mut expired = Vec::new();
        {
            let mut groups = self.lock();
            for list in groups.values_mut() {
                let (keep, gone): (VecDeque<Entry>, VecDeque<Entry>) = list
                    .drain(..)
                    .partition(|e| now.duration_since(e.since) < e.timeout);
                *list = keep;
                self.parked.fetch_sub(gone.len(), Ordering::Relaxed);
                expired.extend(gone);
            }
            groups.retain(|_, l| !l.is_empty());
        }
        // Closed outside the lock.
        drop(expired);
    }

    /// Idle connections now, in this tier and held by workers.
    pub fn idle_count(&self) -> usize {
        self.lock().values().map(VecDeque::len).sum::<usize>() + self.held_where(|_| true)
    }

    /// Idle connections for one group and peer (plain and TLS ones
    /// alike: `key`'s own TLS is not looked at).
    pub fn idle_for(&self, key: &Key) -> usize {
        self.lock()
            .iter()
            .filter(|(k, _)| k.same_peer(key))
            .map(|(_, l)| l.len())
            .sum::<usize>()
            + self.held_where(|k| k.same_peer(key))
    }

    /// Idle connections of one group.
    pub fn idle_in(&self, group: &str) -> usize {
        self.lock()
            .iter()
            .filter(|(k, _)| &*k.group == group)
            .map(|(_, l)| l.len())
            .sum::<usize>()
            + self.held_where(|k| &*k.group == group)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    fn pair() -> (IdleConn, TcpStream, PeerAddr) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let c = TcpStream::connect(addr).unwrap();
        c.set_nonblocking(true).unwrap();
        let (s, _) = l.accept().unwrap();
        (IdleConn::Tcp(c), s, PeerAddr::Inet(addr))
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

    #[test]
    fn a_live_connection_is_reused_and_a_closed_one_is_not() {
        let cache = Cache::default();
        let (conn, server, peer) = pair();
        let key = Key {
            group: Arc::from("u"),
            peer,
            tls: None,
        };
        let now = Instant::now();
        cache.put(key.clone(), conn, usage(), limits(), now);
        let (conn, u) = cache.take(&key, now).expect("quiet: reused");
        assert_eq!(u.requests, 1);
        cache.put(key.clone(), conn, u, limits(), now);
        drop(server);
        std::thread::sleep(Duration::from_millis(20));
        assert!(cache.take(&key, now).is_none(), "closed by the upstream");
        assert_eq!(cache.idle_count(), 0);
    }

    #[test]
    fn limits_retire_and_evict() {
        let cache = Cache::default();
        let now = Instant::now();
        let mut servers = Vec::new();
        let key = |peer| Key {
            group: Arc::from("u"),
            peer,
            tls: None,
        };
        let (c1, s1, p) = pair();
        servers.push(s1);
        // keepalive_requests: the 100th request retires it.
        cache.put(
            key(p.clone()),
            c1,
            Usage {
                requests: 99,
                opened: now,
            },
            limits(),
            now,
        );
        assert_eq!(cache.idle_count(), 0);
        // keepalive 2: a third idle connection evicts the oldest.
        for _ in 0..3 {
            let (c, s, _) = pair();
            servers.push(s);
            cache.put(key(p.clone()), c, usage(), limits(), now);
        }
        assert_eq!(cache.idle_in("u"), 2);
        // keepalive_timeout: idle too long, not reused.
        assert!(
            cache
                .take(&key(p.clone()), now + Duration::from_secs(61))
                .is_none()
        );
        cache.sweep(now + Duration::from_secs(61));
        assert_eq!(cache.idle_count(), 0);
    }
}
