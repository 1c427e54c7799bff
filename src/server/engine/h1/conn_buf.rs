//! The read buffers of client connections, lent from a small per-worker
//! pool: a connection holds one only while bytes of a request are in it,
//! never while it waits for the first byte of one (nginx allocates its
//! header buffer when bytes arrive, and frees a keep-alive connection's
//! buffers while it waits for the next request).
//!
//! Each worker counts the bytes its connections hold (the status page's
//! `nowait_connection_buffers_bytes{worker}`). What this module must not do:
//! keep more than [`POOL_MAX`] free buffers, or keep a buffer a large head
//! made bigger than [`POOLED_CAPACITY`].

use std::cell::RefCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::Ordering;

/// How much a connection reads at a time: the capacity of a lent buffer.
pub const READ_CHUNK: usize = 4096;
/// Free buffers a worker keeps for its next readable connections; the rest
/// are freed, so that the memory of a burst goes back once it is over.
pub const POOL_MAX: usize = 64;
/// A buffer that grew past this (a large head, a pipelined burst) is freed
/// rather than kept in the pool.
pub const POOLED_CAPACITY: usize = 4 * READ_CHUNK;

thread_local! {
    /// This worker's free buffers, each empty.
    static FREE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// A connection's read buffer: empty and unallocated while the connection
/// waits ([`ConnBuf::release`]), lent from the worker's pool when bytes
/// come ([`ConnBuf::lend`]). Derefs to the `Vec<u8>` the request code reads
/// into; dropping it gives the buffer back.
#[derive(Debug, Default)]
pub struct ConnBuf {
    /// The bytes read and not consumed yet.
    vec: Vec<u8>,
    /// The capacity counted as held by this connection in the worker's
    /// `connection_buffers` (what it had when lent).
    counted: usize,
}

impl ConnBuf {
    /// An empty buffer that holds no memory.
    pub const fn new() -> ConnBuf {
        ConnBuf {
            vec: Vec::new(),
            counted: 0,
        }
    }

    /// Makes sure the buffer has room to read [`READ_CHUNK`] bytes, taking
    /// a free buffer from the worker's pool if it holds none.
    pub fn lend(&mut self) {
        if self.vec.capacity() == 0 {
            self.vec = FREE
                .with(|f| f.borrow_mut().pop())
                .unwrap_or_else(|| Vec::with_capacity(READ_CHUNK));
        }
        if self.vec.capacity() - self.vec.len() < READ_CHUNK {
            self.vec.reserve(READ_CHUNK);
        }
        self.count();
    }

    /// Gives the buffer back to the worker's pool (or frees it) if it holds
    /// no unread bytes; a buffer with pipelined bytes is kept.
    pub fn release(&mut self) {
        if !self.vec.is_empty() || self.vec.capacity() == 0 {
            return;
        }
        let vec = std::mem::take(&mut self.vec);
        self.count();
        if vec.capacity() <= POOLED_CAPACITY {
            FREE.with(|f| {
                let mut free = f.borrow_mut();
                if free.len() < POOL_MAX {
                    free.push(vec);
                }
            });
        }
    }

    /// Whether the connection holds a buffer.
    pub fn is_lent(&self) -> bool {
        self.vec.capacity() > 0
    }

    /// Brings the worker's count of held bytes up to this buffer's capacity.
    fn count(&mut self) {
        let now = self.vec.capacity();
        if now == self.counted {
            return;
        }
        let (was, counted) = (self.counted, now);
        self.counted = counted;
        crate::metrics::worker::with(|m| {
            if counted > was {
                m.connection_buffers
                    .fetch_add((counted - was) as u64, Ordering::Relaxed);
            } else {
                m.connection_buffers
                    .fetch_sub((was - counted) as u64, Ordering::Relaxed);
            }
        });
    }
}

impl Drop for ConnBuf {
    fn drop(&mut self) {
        self.vec.clear();
        self.release();
        self.vec = Vec::new();
        self.count();
    }
}

impl Deref for ConnBuf {
    type Target = Vec<u8>;

    fn deref(&self) -> &Vec<u8> {
        &self.vec
    }
}

impl DerefMut for ConnBuf {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.vec
    }
}

/// Free buffers in this worker's pool (for tests and the status page).
pub fn pooled() -> usize {
    FREE.with(|f| f.borrow().len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn held(m: &crate::metrics::worker::WorkerMetrics) -> u64 {
        m.connection_buffers.load(Ordering::Relaxed)
    }

    #[test]
    fn a_buffer_is_lent_when_reading_and_returned_when_idle() {
        let m = Arc::new(crate::metrics::worker::WorkerMetrics::new(1));
        crate::metrics::worker::install(m.clone());
        let mut b = ConnBuf::new();
        assert!(!b.is_lent());
        assert_eq!(held(&m), 0);
        b.lend();
        assert!(b.capacity() >= READ_CHUNK);
        assert_eq!(held(&m), b.capacity() as u64);
        let before = pooled();
        b.release();
        assert!(!b.is_lent());
        assert_eq!(held(&m), 0);
        assert_eq!(pooled(), before + 1);
        // Taken again from the pool, not allocated.
        b.lend();
        assert_eq!(pooled(), before);
        // Pipelined bytes keep the buffer.
        b.extend_from_slice(b"GET / HTTP/1.1\r\n");
        b.release();
        assert!(b.is_lent());
        assert!(held(&m) > 0);
        drop(b);
        assert_eq!(held(&m), 0);
        assert_eq!(pooled(), before + 1);
    }

    #[test]
    fn a_grown_buffer_is_freed_and_the_pool_is_bounded() {
        let m = Arc::new(crate::metrics::worker::WorkerMetrics::new(1));
        crate::metrics::worker::install(m.clone());
        let mut bufs: Vec<ConnBuf> = (0..POOL_MAX + 8).map(|_| ConnBuf::new()).collect();
        for b in &mut bufs {
            b.lend();
        }
        let mut big = ConnBuf::new();
        big.lend();
        big.reserve(POOLED_CAPACITY * 2);
        big.lend();
        assert!(held(&m) as usize >= POOLED_CAPACITY * 2);
        let before = pooled();
        big.release();
        assert_eq!(pooled(), before);
        drop(bufs);
        assert_eq!(pooled(), POOL_MAX);
        assert_eq!(held(&m), 0);
    }
}
