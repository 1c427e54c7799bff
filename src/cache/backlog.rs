//! A fill's backlog: the body bytes its tee has handed over and the disk
//! has not taken yet, queued between the tee (on the response's path) and
//! the fill's writer task, and counted in the zone's
//! `ZoneStats::fill_backlog`, so that all the fills of one zone (one disk),
//! all workers together, hold at most [`ZONE_BACKLOG`] bytes the disk has
//! not taken.
//!
//! A fill is admitted only when the zone has room for it ([`Backlog::admit`]);
//! a chunk that would take the fill past [`MAX_BACKLOG`] or the zone past
//! [`ZONE_BACKLOG`] is refused, and the tee gives the fill up. Bytes are
//! counted when queued and given back when written, or at once when the
//! fill is given up or its writer ends, or when the last holder drops the
//! backlog — whichever way a fill ends, its count leaves the zone's.
//!
//! The writer takes the queue in batches of at least [`WRITE_GATHER`]
//! bytes (or the rest of the body), so that a body read in small pieces
//! does not cost a pool task and a write per piece; a batch that has
//! waited [`FLUSH_AFTER`] goes out smaller, so that lock waiters streaming
//! the fill (`share.rs`) and a crash's temp file are not held back by an
//! upstream that pauses.
//!
//! Owns: the queue, its count, the zone's admission. Must not: do file
//! I/O, decide what is cacheable, or take or release the fill lock.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Notify;

use super::zone::Zone;

/// How many bytes all the fills of one zone (one disk) may hold that are
/// not on the disk yet, all workers together.
pub const ZONE_BACKLOG: u64 = 32 * 1024 * 1024;

/// How far one fill's disk may fall behind its client before the fill is
/// given up.
pub const MAX_BACKLOG: usize = 8 * 1024 * 1024;

/// What an admitted fill counts against its zone's backlog until its first
/// write is done (its header, its buffers, its task), whatever its size:
/// bounds how many fills can wait on a disk that does not answer
/// (`ZONE_BACKLOG / FILL_COST`).
pub const FILL_COST: u64 = 32 * 1024;

/// The least a write takes, unless the body ends or [`FLUSH_AFTER`] passed.
pub const WRITE_GATHER: usize = 64 * 1024;

/// The most one write takes when the writer has fallen behind.
pub const WRITE_MOST: usize = 1024 * 1024;

/// How long bytes wait for a batch of [`WRITE_GATHER`] before they are
/// written anyway.
pub const FLUSH_AFTER: Duration = Duration::from_millis(100);

/// Why the tee's chunk was not queued: the fill must be given up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The fill was given up, or its writer has ended.
    Closed,
    /// The fill would hold more than [`MAX_BACKLOG`].
    FillBehind,
    /// The zone's fills would hold more than [`ZONE_BACKLOG`].
    ZoneFull,
}

/// What the tee and the writer share.
#[derive(Default)]
struct State {
    /// Chunks handed over, not yet taken by the writer.
    chunks: VecDeque<Bytes>,
    /// Bytes in `chunks`.
    queued: u64,
    /// Bytes this fill counts in the zone's backlog: [`FILL_COST`] until
    /// the first write, `queued`, and what the writer took and has not
    /// written yet.
    held: u64,
    /// The tee's last word: the body ended whole (`true`) or not.
    end: Option<bool>,
    /// Given up, or the writer has ended: nothing more is queued.
    closed: bool,
}

/// One fill's share of its zone's backlog, and the queue it counts.
pub struct Backlog {
    zone: Arc<Zone>,
    state: Mutex<State>,
    /// Wakes the writer: the first bytes of a batch, a full batch, the end.
    ready: Notify,
}

impl Backlog {
    /// Admits a new fill into `zone` when its backlog has room for
    /// [`FILL_COST`] plus as much of the body (`length`, when the response
    /// says it) as one fill may hold; counts [`FILL_COST`]. `None`: no
    /// room, nothing counted.
    pub fn admit(zone: &Arc<Zone>, length: Option<u64>) -> Option<Arc<Backlog>> {
        let need = FILL_COST + length.unwrap_or(0).min(MAX_BACKLOG as u64);
        zone.stats
            .fill_backlog
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
                (cur.saturating_add(need) <= ZONE_BACKLOG).then_some(cur + FILL_COST)
            })
            .ok()?;
        Some(Arc::new(Backlog {
            zone: zone.clone(),
            state: Mutex::new(State {
                held: FILL_COST,
                ..State::default()
            }),
            ready: Notify::new(),
        }))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Gives `n` bytes back to the zone.
    fn release(&self, n: u64) {
        if n > 0 {
            self.zone.stats.fill_backlog.fetch_sub(n, Ordering::AcqRel);
        }
    }

    /// The tee hands over `chunk`, counted until written.
    pub fn push(&self, chunk: &Bytes) -> Result<(), Refused> {
        let n = chunk.len() as u64;
        let mut s = self.lock();
        if s.closed || s.end.is_some() {
            return Err(Refused::Closed);
        }
        if s.held + n > MAX_BACKLOG as u64 {
            return Err(Refused::FillBehind);
        }
        self.zone
            .stats
            .fill_backlog
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
                cur.checked_add(n).filter(|t| *t <= ZONE_BACKLOG)
            })
            .map_err(|_| Refused::ZoneFull)?;
        let before = s.queued;
        s.chunks.push_back(chunk.clone());
        s.queued += n;
        s.held += n;
        // Wake the writer for the first bytes (its flush clock starts) and
        // for a full batch, not for every piece in between.
        let gather = WRITE_GATHER as u64;
        if before == 0 || (before < gather && s.queued >= gather) {
            drop(s);
            self.ready.notify_one();
        }
        Ok(())
    }

    /// The tee's body ended: whole (`true`) or not; a body that did not
    /// end whole gives the fill up.
    pub fn end(&self, complete: bool) {
        if !complete {
            self.abandon();
            return;
        }
        let mut s = self.lock();
        if s.end.is_none() && !s.closed {
            s.end = Some(true);
        }
        drop(s);
        self.ready.notify_one();
    }

    /// Gives the fill up: what is queued is dropped and leaves the zone's
    /// count at once; what the writer is writing leaves it when written.
    pub fn abandon(&self) {
        let mut s = self.lock();
        s.closed = true;
        s.chunks.clear();
        let dropped = std::mem::take(&mut s.queued);
        s.held -= dropped;
        drop(s);
        self.release(dropped);
        self.ready.notify_one();
    }

    /// Whether the fill was given up or its writer has ended.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// The writer waits for its next batch and appends it to `out`, which
    /// may already hold bytes to go out with it (the entry's header): at
    /// least [`WRITE_GATHER`] bytes with `out`'s, at most about
    /// [`WRITE_MOST`], fewer at the end of the body or once
    /// [`FLUSH_AFTER`] has passed since the batch had its first byte.
    /// Returns how the body ended, if it did with this batch: `None`
    /// (more to come), `Some(true)` (whole), `Some(false)` (given up: do
    /// not write). The bytes taken stay counted until [`Backlog::written`].
    pub async fn next(&self, out: &mut Vec<u8>) -> Option<bool> {
        let mut deadline = None;
        loop {
            {
                let mut s = self.lock();
                if s.closed {
                    return Some(false);
                }
                let pending = out.len() as u64 + s.queued;
                let due = deadline.is_some_and(|d| tokio::time::Instant::now() >= d);
                if pending >= WRITE_GATHER as u64 || s.end.is_some() || (pending > 0 && due) {
                    while out.len() < WRITE_MOST {
                        let Some(c) = s.chunks.pop_front() else {
                            break;
                        };
                        s.queued -= c.len() as u64;
                        out.extend_from_slice(&c);
                    }
                    return if s.chunks.is_empty() { s.end } else { None };
                }
                if pending > 0 && deadline.is_none() {
                    deadline = Some(tokio::time::Instant::now() + FLUSH_AFTER);
                }
            }
            match deadline {
                Some(d) => {
                    let _ = tokio::time::timeout_at(d, self.ready.notified()).await;
                }
                None => self.ready.notified().await,
            }
        }
    }

    /// The writer wrote `n` counted bytes (a batch's body bytes, and
    /// [`FILL_COST`] with the first write): they leave the zone's count.
    pub fn written(&self, n: u64) {
        let mut s = self.lock();
        let n = n.min(s.held);
        s.held -= n;
        drop(s);
        self.release(n);
    }

    /// The writer has ended: nothing more is queued, and everything still
    /// counted leaves the zone's count.
    pub fn close(&self) {
        let mut s = self.lock();
        s.closed = true;
        s.chunks.clear();
        s.queued = 0;
        let left = std::mem::take(&mut s.held);
        drop(s);
        self.release(left);
    }
}

impl Drop for Backlog {
    /// A backlog dropped with bytes counted (a writer that never ran) gives
    /// them back.
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone() -> Arc<Zone> {
        Arc::new(Zone::new(crate::cache::zone::test_path(
            "/nonexistent".into(),
            1 << 20,
        )))
    }

    fn gauge(z: &Zone) -> u64 {
        z.stats.fill_backlog.load(Ordering::Relaxed)
    }

    fn run<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime")
            .block_on(f)
    }

    #[test]
    fn admission_wants_room_for_the_known_length_and_counts_the_cost() {
        let z = zone();
        z.stats
            .fill_backlog
            .store(ZONE_BACKLOG - FILL_COST - 1000, Ordering::Relaxed);
        assert!(Backlog::admit(&z, Some(1001)).is_none(), "no room for it");
        assert_eq!(gauge(&z), ZONE_BACKLOG - FILL_COST - 1000);
        let b = Backlog::admit(&z, Some(1000)).expect("room for it");
        assert_eq!(gauge(&z), ZONE_BACKLOG - 1000, "the cost, not the length");
        assert!(Backlog::admit(&z, None).is_none(), "full now");
        drop(b);
        assert_eq!(gauge(&z), ZONE_BACKLOG - FILL_COST - 1000);
        // A body longer than one fill may hold asks for that much only.
        z.stats.fill_backlog.store(0, Ordering::Relaxed);
        assert!(Backlog::admit(&z, Some(u64::MAX)).is_some());
    }

    #[test]
    fn a_chunk_past_the_zone_or_the_fill_limit_is_refused() {
        let z = zone();
        let b = Backlog::admit(&z, None).expect("admitted");
        z.stats
            .fill_backlog
            .fetch_add(ZONE_BACKLOG - FILL_COST - 10, Ordering::Relaxed);
        assert_eq!(b.push(&Bytes::from(vec![0; 10])), Ok(()));
        assert_eq!(b.push(&Bytes::from(vec![0; 1])), Err(Refused::ZoneFull));
        z.stats
            .fill_backlog
            .fetch_sub(ZONE_BACKLOG - FILL_COST - 10, Ordering::Relaxed);
        let big = Bytes::from(vec![0; MAX_BACKLOG]);
        assert_eq!(b.push(&big), Err(Refused::FillBehind));
        b.abandon();
        assert_eq!(gauge(&z), FILL_COST, "the queued bytes left at once");
        assert_eq!(b.push(&Bytes::from(vec![0; 1])), Err(Refused::Closed));
        drop(b);
        assert_eq!(gauge(&z), 0);
    }

    #[test]
    fn the_writer_takes_whole_batches_and_bytes_leave_when_written() {
        let z = zone();
        let b = Backlog::admit(&z, None).expect("admitted");
        for _ in 0..20 {
            b.push(&Bytes::from(vec![1; 8 * 1024])).expect("room");
        }
        b.end(true);
        assert_eq!(gauge(&z), FILL_COST + 160 * 1024);
        let mut out = b"HEADER".to_vec();
        // Everything queued goes in one batch (under WRITE_MOST).
        assert_eq!(run(b.next(&mut out)), Some(true));
        assert_eq!(out.len(), 6 + 160 * 1024);
        assert_eq!(gauge(&z), FILL_COST + 160 * 1024, "counted until written");
        b.written(FILL_COST + 160 * 1024);
        assert_eq!(gauge(&z), 0);
    }

    #[test]
    fn a_small_batch_waits_for_more_then_goes_out_after_the_flush_delay() {
        let z = zone();
        let b = Backlog::admit(&z, None).expect("admitted");
        b.push(&Bytes::from(vec![1; 1000])).expect("room");
        let mut out = Vec::new();
        let start = std::time::Instant::now();
        assert_eq!(run(b.next(&mut out)), None, "more may come");
        assert_eq!(out.len(), 1000);
        assert!(start.elapsed() >= FLUSH_AFTER, "it waited for a batch");
    }

    #[test]
    fn the_writer_closing_gives_everything_back() {
        let z = zone();
        let b = Backlog::admit(&z, None).expect("admitted");
        b.push(&Bytes::from(vec![1; 100_000])).expect("room");
        let mut out = Vec::new();
        assert_eq!(run(b.next(&mut out)), None);
        b.push(&Bytes::from(vec![1; 5])).expect("room");
        b.close();
        assert_eq!(gauge(&z), 0, "taken, queued and the cost");
        assert_eq!(b.push(&Bytes::from(vec![1; 5])), Err(Refused::Closed));
        assert_eq!(run(b.next(&mut out)), Some(false));
    }
}
