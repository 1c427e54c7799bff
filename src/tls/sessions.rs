//! Session caches (`ssl_session_cache`): sessions kept by id for clients
//! that resume without a ticket.
//!
//! nginx's `shared:NAME:SIZE` is a shared-memory zone all worker
//! processes use; its `builtin` cache is one per worker process. nowait's
//! workers are threads of one process, so every cache here serves all of
//! them, and the caches belong to the process: a reload keeps a zone of
//! the same name (and its sessions). A zone of SIZE bytes holds SIZE /
//! [`SESSION_BYTES`] sessions (nginx: "one megabyte can store about 4000
//! sessions"); when full, the oldest session goes first, as nginx's
//! expiry queue drops it.
//!
//! rustls says nothing of session ids, so the store notes the id it is
//! handed on the thread the handshake step runs on
//! ([`take_handshake_id`]): a new TLS 1.2 session's `$ssl_session_id` is
//! the id it was cached under, which the ServerHello carried (see
//! `server::engine::tls::info` for the other cases).
//!
//! Each session carries its expiry (`ssl_session_timeout` of the server
//! that stored it); an expired one is not returned, as OpenSSL checks a
//! session's timeout when it is looked up.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bytes one session takes in nginx's shared zone, to turn a size into a
/// number of sessions.
pub const SESSION_BYTES: u64 = 256;

/// A bounded cache of sessions by id.
#[derive(Debug)]
pub struct SessionCache {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    map: HashMap<Vec<u8>, (Vec<u8>, Instant)>,
    /// Ids in the order they were stored (may hold ids replaced or taken
    /// since: they are skipped when they come up).
    order: VecDeque<Vec<u8>>,
}

impl SessionCache {
    /// A cache for `sessions` sessions (at least one).
    pub fn new(sessions: u64) -> Arc<SessionCache> {
        Arc::new(SessionCache {
            capacity: usize::try_from(sessions.max(1)).unwrap_or(usize::MAX),
            inner: Mutex::new(Inner::default()),
        })
    }

    /// A cache for a zone of `bytes` bytes.
    pub fn for_zone(bytes: u64) -> Arc<SessionCache> {
        SessionCache::new(bytes / SESSION_BYTES)
    }

    /// How many sessions it holds at most.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many sessions it holds now.
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn put(&self, key: Vec<u8>, value: Vec<u8>, expires: Instant) -> bool {
        let mut s = self.lock();
        if s.map.insert(key.clone(), (value, expires)).is_none() {
            s.order.push_back(key);
        }
        while s.map.len() > self.capacity {
            let Some(old) = s.order.pop_front() else {
                break;
            };
            s.map.remove(&old);
        }
        // Keep the order queue from growing with ids no longer held.
        if s.order.len() > 2 * self.capacity + 16 {
            let Inner { map, order } = &mut *s;
            order.retain(|k| map.contains_key(k));
        }
        true
    }

    fn get(&self, key: &[u8], now: Instant, take: bool) -> Option<Vec<u8>> {
        let mut s = self.lock();
        let fresh = s.map.get(key).is_some_and(|(_, exp)| *exp > now);
        if !fresh {
            s.map.remove(key);
            return None;
        }
        if take {
            s.map.remove(key).map(|(v, _)| v)
        } else {
            s.map.get(key).map(|(v, _)| v.clone())
        }
    }
}

thread_local! {
    /// The id the handshake step running on this thread stored or
    /// resumed a session under: the first one.
    static HANDSHAKE_ID: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
}

/// Notes `key` as the handshake's session id unless one is noted.
fn note(key: &[u8]) {
    HANDSHAKE_ID.with(|id| {
        let mut id = id.borrow_mut();
        if id.is_none() {
            *id = Some(key.to_vec());
        }
    });
}

/// The session id the handshake step that just ran on this thread
/// stored or resumed a session under, if any; forgets it.
pub fn take_handshake_id() -> Option<Vec<u8>> {
    HANDSHAKE_ID.with(|id| id.borrow_mut().take())
}

/// The length of a session context (a SHA-256).
pub const CONTEXT_LEN: usize = 32;

/// One server's view of a cache: sessions it stores live its
/// `ssl_session_timeout`, and carry its session context, so that a
/// server sharing the zone but not the certificates does not resume them
/// (OpenSSL's session id context, which nginx makes of the
/// certificates).
#[derive(Debug)]
pub struct Store {
    cache: Arc<SessionCache>,
    timeout: Duration,
    context: [u8; CONTEXT_LEN],
}

impl Store {
    /// `cache` under `timeout`, for sessions of `context`.
    pub fn new(cache: Arc<SessionCache>, timeout: Duration, context: [u8; CONTEXT_LEN]) -> Store {
        Store {
            cache,
            timeout,
            context,
        }
    }

    /// The session of a stored value, if it was stored under this
    /// context.
    fn own(&self, stored: Option<Vec<u8>>) -> Option<Vec<u8>> {
        let v = stored?;
        (v.get(..CONTEXT_LEN) == Some(&self.context[..])).then(|| v[CONTEXT_LEN..].to_vec())
    }
}

impl rustls::server::StoresServerSessions for Store {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        note(&key);
        let mut stored = Vec::with_capacity(CONTEXT_LEN + value.len());
        stored.extend_from_slice(&self.context);
        stored.extend_from_slice(&value);
        self.cache.put(key, stored, Instant::now() + self.timeout)
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let found = self.own(self.cache.get(key, Instant::now(), false));
        if found.is_some() {
            note(key);
        }
        found
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        // Another context's session stays for its own servers.
        let v = self.cache.get(key, Instant::now(), false)?;
        if v.get(..CONTEXT_LEN) != Some(&self.context[..]) {
            return None;
        }
        let found = self.own(self.cache.get(key, Instant::now(), true));
        if found.is_some() {
            note(key);
        }
        found
    }

    fn can_cache(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::server::StoresServerSessions;

    #[test]
    fn the_oldest_session_goes_first_when_full() {
        let c = SessionCache::new(2);
        let s = Store::new(c.clone(), Duration::from_secs(60), [1; CONTEXT_LEN]);
        s.put(b"a".to_vec(), b"1".to_vec());
        s.put(b"b".to_vec(), b"2".to_vec());
        s.put(b"c".to_vec(), b"3".to_vec());
        assert_eq!(s.get(b"a"), None);
        assert_eq!(s.get(b"b").as_deref(), Some(&b"2"[..]));
        assert_eq!(s.take(b"c").as_deref(), Some(&b"3"[..]));
        assert_eq!(s.get(b"c"), None);
        assert_eq!(c.len(), 1);
    }

    /// Regression: a session one server stored resumed on another that
    /// shares the zone with other certificates (OpenSSL refuses it: the
    /// session id context differs).
    #[test]
    fn a_session_resumes_only_under_its_own_context() {
        let c = SessionCache::new(10);
        let a = Store::new(c.clone(), Duration::from_secs(60), [1; CONTEXT_LEN]);
        let b = Store::new(c.clone(), Duration::from_secs(60), [2; CONTEXT_LEN]);
        a.put(b"id".to_vec(), b"session".to_vec());
        assert_eq!(b.get(b"id"), None);
        assert_eq!(b.take(b"id"), None);
        assert_eq!(a.take(b"id").as_deref(), Some(&b"session"[..]));
    }

    #[test]
    fn an_expired_session_is_not_returned() {
        let c = SessionCache::new(10);
        let past = Instant::now();
        c.put(b"a".to_vec(), b"1".to_vec(), past);
        assert_eq!(c.get(b"a", past + Duration::from_millis(1), false), None);
        assert!(c.is_empty());
    }

    #[test]
    fn a_zone_holds_sessions_by_nginx_s_measure() {
        assert_eq!(SessionCache::for_zone(1 << 20).capacity(), 4096);
    }
}
