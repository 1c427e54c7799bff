//! `limit_req`: nginx's leaky bucket (`ngx_http_limit_req_module.c`), one
//! table per zone shared by every worker and kept across reloads.
//!
//! A node per key holds the bucket's excess in thousandths of a request and
//! the time it was last updated; a request adds 1000 and time drains
//! `rate` per second. Over `burst` the request is refused; over `delay`
//! it waits `(excess - delay) / rate` seconds. The table is bounded as
//! nginx's shared memory is: nodes are charged the slab slot nginx would
//! give them, the least recently used ones are expired first, and a table
//! that cannot take a new key refuses the request.
//!
//! This file does no I/O and never waits: the caller times the delay.

use std::collections::{BTreeMap, HashMap};

use super::slab;

/// nginx's `sizeof(ngx_rbtree_node_t)` up to `color` plus
/// `offsetof(ngx_http_limit_req_node_t, data)` on 64-bit Linux: a node
/// takes this plus its key.
const NODE_HEAD: usize = 88;
/// How long an idle node with an empty bucket is kept when a new key
/// needs room (`ngx_http_limit_req_expire`'s 60 s).
const EXPIRE_MS: i64 = 60_000;

/// One key's bucket.
#[derive(Debug)]
struct Node {
    /// The excess, thousandths of a request.
    excess: i64,
    /// When `excess` was last computed, ms on the zone's clock.
    last: u64,
    /// Requests between their lookup and their accounting (nginx's
    /// `count`): a node with some is not expired.
    count: u32,
    /// Its place in the recency order.
    seq: u64,
}

/// The nodes of one zone.
#[derive(Debug, Default)]
pub struct Table {
    nodes: HashMap<Vec<u8>, Node>,
    /// Recency: the smallest sequence number is the least recent.
    order: BTreeMap<u64, Vec<u8>>,
    next_seq: u64,
    /// Bytes of the zone's slots in use.
    used: usize,
    /// Bytes the zone's slots may use.
    capacity: usize,
}

/// What a lookup found (nginx's return codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The bucket overflows: refuse (`NGX_BUSY`), with the excess.
    Busy(u64),
    /// Accounted (the last limit): the excess after this request.
    Ok(u64),
    /// Not the last limit: counted later by [`Table::account`].
    Again(u64),
    /// No room for a new key (`could not allocate node`).
    NoMemory,
}

impl Table {
    /// An empty table for a zone of `size` bytes.
    pub fn new(size: u64) -> Table {
        Table {
            capacity: slab::usable_bytes(size),
            ..Table::default()
        }
    }

    fn touch(&mut self, key: &[u8]) {
        let seq = self.next_seq;
        self.next_seq += 1;
        if let Some(n) = self.nodes.get_mut(key) {
            self.order.remove(&n.seq);
            n.seq = seq;
            self.order.insert(seq, key.to_vec());
        }
    }

    /// `ngx_http_limit_req_lookup` for `key` at `now` (ms): `account` for
    /// the last limit of the request.
    pub fn lookup(&mut self, rate: u64, burst: u64, key: &[u8], now: u64, account: bool) -> Lookup {
        if self.nodes.contains_key(key) {
            self.touch(key);
            let Some(n) = self.nodes.get_mut(key) else {
                return Lookup::NoMemory;
            };
            let ms = elapsed(now, n.last);
            let excess = (n.excess - drained(rate, ms) + 1000).max(0);
            if excess as u64 > burst {
                return Lookup::Busy(excess as u64);
            }
            if account {
                n.excess = excess;
                if ms != 0 {
                    n.last = now;
                }
                return Lookup::Ok(excess as u64);
            }
            n.count += 1;
            return Lookup::Again(excess as u64);
        }
        let slot = slab::slot(NODE_HEAD + key.len());
        self.expire(rate, now, 1);
        if self.used + slot > self.capacity {
            self.expire(rate, now, 0);
            if self.used + slot > self.capacity {
                return Lookup::NoMemory;
            }
        }
        self.used += slot;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.insert(seq, key.to_vec());
        let (last, count) = if account { (now, 0) } else { (0, 1) };
        self.nodes.insert(
            key.to_vec(),
            Node {
                excess: 0,
                last,
                count,
                seq,
            },
        );
        if account {
            Lookup::Ok(0)
        } else {
            Lookup::Again(0)
        }
    }

    /// The accounting of a node a lookup answered [`Lookup::Again`] for
    /// (`ngx_http_limit_req_account`'s loop body): its new excess.
    pub fn account(&mut self, rate: u64, key: &[u8], now: u64) -> u64 {
        let Some(n) = self.nodes.get_mut(key) else {
            return 0;
        };
        let ms = elapsed(now, n.last);
        let excess = (n.excess - drained(rate, ms) + 1000).max(0);
        if ms != 0 {
            n.last = now;
        }
        n.excess = excess;
        n.count = n.count.saturating_sub(1);
        excess as u64
    }

    /// Gives back the count a lookup took (`ngx_http_limit_req_unlock`).
    pub fn unlock(&mut self, key: &[u8]) {
        if let Some(n) = self.nodes.get_mut(key) {
            n.count = n.count.saturating_sub(1);
        }
    }

    /// `ngx_http_limit_req_expire`: `n == 1` removes up to two idle nodes
    /// whose bucket has drained; `n == 0` first removes the least recent
    /// node whatever its bucket.
    fn expire(&mut self, rate: u64, now: u64, mut n: u32) {
        while n < 3 {
            let Some((&seq, key)) = self.order.iter().next() else {
                return;
            };
            let Some(node) = self.nodes.get(key) else {
                self.order.remove(&seq);
                continue;
            };
            if node.count != 0 {
                return;
            }
            let forced = n == 0;
            n += 1;
            if !forced {
                let ms = (now as i64 - node.last as i64).abs();
                if ms < EXPIRE_MS {
                    return;
                }
                if node.excess - drained(rate, ms) > 0 {
                    return;
                }
            }
            let key = key.clone();
            self.order.remove(&seq);
            self.nodes.remove(&key);
            self.used = self.used.saturating_sub(slab::slot(NODE_HEAD + key.len()));
        }
    }

    /// How many keys the table holds.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the table holds no key.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// What `ms` milliseconds drain from a bucket at `rate` (thousandths of a
/// request per second), in thousandths of a request.
fn drained(rate: u64, ms: i64) -> i64 {
    i64::try_from(rate).unwrap_or(i64::MAX).saturating_mul(ms) / 1000
}

/// Milliseconds from `last` to `now`, clamped as nginx clamps them: a
/// clock more than a minute backwards counts as 1 ms, less as 0.
fn elapsed(now: u64, last: u64) -> i64 {
    let ms = now as i64 - last as i64;
    if ms < -60_000 { 1 } else { ms.max(0) }
}

/// This kind of zone's table behind its lock.
pub type SharedTable = super::zone_table::SharedTable<Table>;

impl super::zone_table::ZoneTable for Table {
    fn for_size(size: u64) -> Table {
        Table::new(size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE_2: u64 = 2000;

    #[test]
    fn burst_then_refuse_then_drain() {
        let mut t = Table::new(1 << 20);
        // burst=1: the first two requests pass, the third is refused.
        assert_eq!(t.lookup(RATE_2, 1000, b"k", 0, true), Lookup::Ok(0));
        assert_eq!(t.lookup(RATE_2, 1000, b"k", 0, true), Lookup::Ok(1000));
        assert_eq!(t.lookup(RATE_2, 1000, b"k", 0, true), Lookup::Busy(2000));
        // A refused request is not counted: after 1/rate seconds the
        // excess has drained by one request.
        assert_eq!(t.lookup(RATE_2, 1000, b"k", 500, true), Lookup::Ok(1000));
    }

    #[test]
    fn negative_excess_is_zero() {
        let mut t = Table::new(1 << 20);
        assert_eq!(t.lookup(1_000_000, 1000, b"k", 0, true), Lookup::Ok(0));
        assert_eq!(t.lookup(1_000_000, 1000, b"k", 100, true), Lookup::Ok(0));
    }

    #[test]
    fn again_then_account() {
        let mut t = Table::new(1 << 20);
        assert_eq!(t.lookup(RATE_2, 5000, b"k", 0, false), Lookup::Again(0));
        // nginx's quirk: a node made by a non-final lookup has `last` 0,
        // so its first accounting drains as if from time 0.
        assert_eq!(t.account(RATE_2, b"k", 0), 1000);
        assert_eq!(t.lookup(RATE_2, 5000, b"k", 0, false), Lookup::Again(2000));
        t.unlock(b"k");
        assert_eq!(t.nodes[&b"k"[..]].count, 0);
    }

    #[test]
    fn a_full_zone_expires_the_least_recent_key() {
        let mut t = Table::new(32 * 1024);
        let mut n = 0u32;
        while let Lookup::Ok(_) = t.lookup(RATE_2, 0, &n.to_be_bytes(), 0, true) {
            n += 1;
            if t.len() < n as usize {
                break;
            }
        }
        // The table stopped growing: older keys made room for newer ones.
        assert!(t.len() > 100 && t.len() < 300, "{}", t.len());
        assert!(!t.nodes.contains_key(&0u32.to_be_bytes()[..]));
    }

    #[test]
    fn absurd_rates_and_times_do_not_overflow() {
        let mut t = Table::new(1 << 20);
        t.lookup(u64::MAX, u64::MAX, b"k", 0, true);
        assert_eq!(
            t.lookup(u64::MAX, u64::MAX, b"k", u64::MAX / 2, true),
            Lookup::Ok(0)
        );
    }

    #[test]
    fn idle_drained_nodes_expire() {
        let mut t = Table::new(1 << 20);
        t.lookup(RATE_2, 0, b"a", 0, true);
        t.lookup(RATE_2, 0, b"b", 61_000, true);
        assert!(!t.nodes.contains_key(&b"a"[..]));
        assert_eq!(t.len(), 1);
    }
}
