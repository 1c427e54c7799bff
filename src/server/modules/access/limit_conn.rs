//! `limit_conn`: how many requests of one key are being served at once
//! (`ngx_http_limit_conn_module.c`), one table per zone shared by every
//! worker and kept across reloads. A request that is counted holds a
//! [`Guard`]; dropping it (when the request is freed, after its log line,
//! as nginx's pool cleanup) gives the count back.

use std::collections::HashMap;
use std::sync::Arc;

use super::slab;

/// nginx's `offsetof(ngx_rbtree_node_t, color)` plus
/// `offsetof(ngx_http_limit_conn_node_t, data)` on 64-bit Linux.
const NODE_HEAD: usize = 36;

/// The counts of one zone.
#[derive(Debug, Default)]
pub struct Table {
    counts: HashMap<Vec<u8>, u32>,
    used: usize,
    capacity: usize,
}

/// What counting a request found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquire {
    /// Counted.
    Counted,
    /// The key already has `limit` requests.
    Over,
    /// No room for a new key.
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

    /// Counts one more request of `key`, unless it has `limit` already.
    pub fn acquire(&mut self, key: &[u8], limit: u32) -> Acquire {
        if let Some(n) = self.counts.get_mut(key) {
            if *n >= limit {
                return Acquire::Over;
            }
            *n += 1;
            return Acquire::Counted;
        }
        let slot = slab::slot(NODE_HEAD + key.len());
        if self.used + slot > self.capacity {
            return Acquire::NoMemory;
        }
        self.used += slot;
        self.counts.insert(key.to_vec(), 1);
        Acquire::Counted
    }

    /// Gives one count of `key` back; the key goes at zero.
    pub fn release(&mut self, key: &[u8]) {
        let Some(n) = self.counts.get_mut(key) else {
            return;
        };
        *n -= 1;
        if *n == 0 {
            self.counts.remove(key);
            self.used = self.used.saturating_sub(slab::slot(NODE_HEAD + key.len()));
        }
    }

    /// The requests of `key` counted now.
    pub fn count(&self, key: &[u8]) -> u32 {
        self.counts.get(key).copied().unwrap_or(0)
    }
}

/// This kind of zone's table behind its lock.
pub type SharedTable = super::zone_table::SharedTable<Table>;

impl super::zone_table::ZoneTable for Table {
    fn for_size(size: u64) -> Table {
        Table::new(size)
    }
}

/// One counted request of one key; dropping it gives the count back.
#[derive(Debug)]
pub struct Guard {
    table: Arc<SharedTable>,
    key: Vec<u8>,
}

impl Guard {
    /// Counts `key` in `table`: a guard, or why not.
    pub fn acquire(table: &Arc<SharedTable>, key: &[u8], limit: u32) -> Result<Guard, Acquire> {
        match table.lock().acquire(key, limit) {
            Acquire::Counted => Ok(Guard {
                table: table.clone(),
                key: key.to_vec(),
            }),
            other => Err(other),
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.table.lock().release(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_up_to_the_limit_and_back() {
        let t = Arc::new(SharedTable::new(1 << 20, "$k"));
        let a = Guard::acquire(&t, b"k", 2).unwrap();
        let b = Guard::acquire(&t, b"k", 2).unwrap();
        assert_eq!(Guard::acquire(&t, b"k", 2).unwrap_err(), Acquire::Over);
        drop(a);
        let c = Guard::acquire(&t, b"k", 2).unwrap();
        drop((b, c));
        assert_eq!(t.lock().count(b"k"), 0);
        assert!(t.lock().counts.is_empty(), "a key at zero is removed");
    }

    #[test]
    fn a_full_zone_refuses_new_keys() {
        let mut t = Table::new(32 * 1024);
        let mut n = 0u32;
        while t.acquire(&n.to_be_bytes(), 1) == Acquire::Counted {
            n += 1;
        }
        assert_eq!(t.acquire(&n.to_be_bytes(), 1), Acquire::NoMemory);
        // 64-byte slots in six pages.
        assert_eq!(n, 6 * 64);
        t.release(&0u32.to_be_bytes());
        assert_eq!(t.acquire(&n.to_be_bytes(), 1), Acquire::Counted);
    }
}
