//! [`SharedTable`]: a `limit_req_zone`'s or `limit_conn_zone`'s table behind
//! its lock, kept by the process across reloads (see `zones`), the same
//! for both kinds of zone.

use std::sync::{Mutex, MutexGuard};

/// A zone's table that can be made for a zone's size.
pub trait ZoneTable {
    /// An empty table for a zone of `size` bytes.
    fn for_size(size: u64) -> Self;
}

/// A zone's table behind its lock (the process's, across reloads).
#[derive(Debug)]
pub struct SharedTable<T> {
    /// The zone's size, which the table was made for.
    pub size: u64,
    /// The key the zone was declared with (a reload may not change it).
    pub key: String,
    table: Mutex<T>,
}

impl<T: ZoneTable> SharedTable<T> {
    /// A new, empty zone.
    pub fn new(size: u64, key: &str) -> SharedTable<T> {
        SharedTable {
            size,
            key: key.to_string(),
            table: Mutex::new(T::for_size(size)),
        }
    }
}

impl<T> SharedTable<T> {
    /// The table, locked (a poisoned lock is taken over: the table holds
    /// only counters).
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }
}
