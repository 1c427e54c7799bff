//! The statuses of client certificates (`ssl_ocsp_cache`), as nginx's
//! `ngx_ssl_ocsp_cache_lookup` and `…_store` keep them: by the issuer's
//! name and key hashes and the certificate's serial (60 bytes, the
//! serial zero-padded), each until its answer's `nextUpdate` (an hour
//! when it has none); an expired entry is dropped when looked up; a full
//! zone forgets its oldest entry to take a new one.
//!
//! One cache per zone name, in the process and so shared by every worker
//! (nginx's shared memory zone); a std mutex, held for a map operation
//! and never across a wait.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use super::CertId;
use super::response::CertStatus;

/// The room one entry takes in nginx's zone: its node (`ngx_str_node_t`,
/// queue links, status and time: 88 bytes) and its 60-byte key, in
/// the slab's 256-byte class.
pub const ENTRY_BYTES: u64 = 256;
/// How long an answer without `nextUpdate` is kept (nginx's `now + 3600`).
pub const NO_NEXT_UPDATE_KEEP: i64 = 3600;
/// The longest serial a key holds (nginx refuses longer ones).
pub const MAX_SERIAL: usize = 20;

/// What an entry is known by.
pub type Key = [u8; 60];

/// The key of `id` (`ngx_ssl_ocsp_create_key`); `None` for a serial over
/// 20 bytes.
pub fn key(id: &CertId) -> Option<Key> {
    // The INTEGER's content may start with a zero that only keeps it
    // positive: OpenSSL's serial has none.
    let serial = match id.serial.as_slice() {
        [0, rest @ ..] if !rest.is_empty() => rest,
        s => s,
    };
    if serial.len() > MAX_SERIAL {
        return None;
    }
    let mut k = [0u8; 60];
    k[..20].copy_from_slice(&id.name_hash);
    k[20..40].copy_from_slice(&id.key_hash);
    k[40..40 + serial.len()].copy_from_slice(serial);
    Some(k)
}

/// One zone's entries.
#[derive(Debug)]
pub struct OcspCache {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Each key's status, until when, and its place in `order`.
    map: HashMap<Key, (CertStatus, i64, u64)>,
    /// The keys by when they were stored, oldest first.
    order: BTreeMap<u64, Key>,
    /// The next store's place.
    next: u64,
}

impl OcspCache {
    /// A cache for a zone of `bytes` bytes (at least one entry).
    pub fn for_zone(bytes: u64) -> Arc<OcspCache> {
        let capacity = usize::try_from(bytes / ENTRY_BYTES)
            .unwrap_or(usize::MAX)
            .max(1);
        Arc::new(OcspCache {
            capacity,
            inner: Mutex::new(Inner::default()),
        })
    }

    /// How many entries it holds at most.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The status kept for `key` at `now`; an expired entry is dropped.
    pub fn lookup(&self, key: &Key, now: i64) -> Option<CertStatus> {
        let mut inner = self.lock();
        let &(status, valid, at) = inner.map.get(key)?;
        if valid > now {
            return Some(status);
        }
        inner.map.remove(key);
        inner.order.remove(&at);
        None
    }

    /// Keeps `status` for `key` until `valid` (`i64::MAX`: no
    /// `nextUpdate`); nothing when that is past.
    pub fn store(&self, key: Key, status: CertStatus, valid: i64, now: i64) {
        if valid < now {
            return;
        }
        let valid = if valid == i64::MAX {
            now + NO_NEXT_UPDATE_KEEP
        } else {
            valid
        };
        let mut inner = self.lock();
        if let Some((_, _, at)) = inner.map.remove(&key) {
            inner.order.remove(&at);
        }
        while inner.map.len() >= self.capacity {
            let Some((_, oldest)) = inner.order.pop_first() else {
                break;
            };
            inner.map.remove(&oldest);
        }
        let at = inner.next;
        inner.next += 1;
        inner.order.insert(at, key);
        inner.map.insert(key, (status, valid, at));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    fn id(serial: &[u8]) -> CertId {
        CertId {
            name_hash: [1; 20],
            key_hash: [2; 20],
            serial: serial.to_vec(),
        }
    }

    #[test]
    fn the_key_is_nginx_s_sixty_bytes() {
        let k = key(&id(&[0x10, 0x01])).unwrap();
        assert_eq!(&k[..20], &[1; 20]);
        assert_eq!(&k[20..40], &[2; 20]);
        assert_eq!(&k[40..42], &[0x10, 0x01]);
        assert_eq!(&k[42..], &[0; 18]);
        assert_eq!(key(&id(&[0, 0x80])), key(&id(&[0x80])), "sign byte");
        assert!(key(&id(&[7; 21])).is_none());
    }

    #[test]
    fn an_entry_lives_until_next_update_or_an_hour() {
        let c = OcspCache::for_zone(1 << 20);
        let k = key(&id(&[1])).unwrap();
        c.store(k, CertStatus::Revoked, NOW + 10, NOW);
        assert_eq!(c.lookup(&k, NOW + 9), Some(CertStatus::Revoked));
        assert_eq!(c.lookup(&k, NOW + 10), None, "expired");
        assert_eq!(c.lookup(&k, NOW), None, "and dropped");
        c.store(k, CertStatus::Good, i64::MAX, NOW);
        assert_eq!(c.lookup(&k, NOW + 3599), Some(CertStatus::Good));
        assert_eq!(c.lookup(&k, NOW + 3600), None);
        c.store(k, CertStatus::Good, NOW - 1, NOW);
        assert_eq!(c.lookup(&k, NOW), None, "a stale answer is not kept");
    }

    #[test]
    fn a_full_zone_forgets_its_oldest_entry() {
        let c = OcspCache::for_zone(2 * ENTRY_BYTES);
        assert_eq!(c.capacity(), 2);
        let ks: Vec<Key> = (1..=3).map(|i| key(&id(&[i])).unwrap()).collect();
        for k in &ks {
            c.store(*k, CertStatus::Good, NOW + 100, NOW);
        }
        assert_eq!(c.lookup(&ks[0], NOW), None);
        assert_eq!(c.lookup(&ks[1], NOW), Some(CertStatus::Good));
        assert_eq!(c.lookup(&ks[2], NOW), Some(CertStatus::Good));
    }
}
