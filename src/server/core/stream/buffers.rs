//! The memory a streamed body waits in between its source and the client,
//! and what of it goes to the temp file when it is full: nginx's event
//! pipe buffers (`ngx_event_pipe.c`) as nowait keeps them.
//!
//! What is read joins the queue for the client ([`Queue`], framed as it
//! will be written), up to `limit` bytes in memory (`proxy_buffers`). The
//! first `busy` bytes of the body in it (`proxy_busy_buffers_size`) are
//! nginx's busy buffers: handed to the client connection, and kept in
//! memory until the socket has taken them. When memory is full and the
//! socket takes nothing more, the bytes after those — nginx's `p->in`, read
//! and not handed on yet — are what spills to the temp file, a
//! `proxy_temp_file_write_size` at a time up to `proxy_max_temp_file_size`,
//! so that the upstream is read on; what is read meanwhile waits behind
//! the file (`held`). While the file has bytes the client has not been
//! given, the queue is fed from it no more than `busy` bytes ahead of the
//! socket, as nginx passes the output no more than its busy size before
//! the socket has taken it; once the file is drained, the held bytes join
//! the queue again.
//!
//! nginx hands at most its busy size to each write; nowait offers the
//! socket all the queue holds (a client that keeps up takes it in fewer
//! writes), and the busy size is the part of what the socket leaves that
//! stays in memory for it. The bytes that go to the file are the ones
//! nginx writes there: those read after the busy ones.

use std::collections::VecDeque;
use std::io::IoSlice;

use bytes::Bytes;

use crate::body::chunked;
use crate::io::client_stream::ClientStream;
use crate::io::temp::TempFile;

/// The most one read from the temp file takes back.
pub const READ_BACK: u64 = 64 * 1024;

/// The most pieces one `writev()` sends.
const MAX_IOV: usize = 64;

/// Bytes for the client in order, framing included.
#[derive(Default)]
pub struct Queue {
    pieces: VecDeque<Bytes>,
    bytes: usize,
}

impl Queue {
    /// Bytes queued.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Queues `b` as it is.
    pub fn push(&mut self, b: Bytes) {
        if !b.is_empty() {
            self.bytes += b.len();
            self.pieces.push_back(b);
        }
    }

    /// Queues a piece of payload, framed as a chunk when `chunked_framing`.
    pub fn push_payload(&mut self, piece: Bytes, chunked_framing: bool) {
        if piece.is_empty() {
            return;
        }
        if chunked_framing {
            let mut head = Vec::with_capacity(10);
            chunked::chunk_head(piece.len(), &mut head);
            self.push(Bytes::from(head));
            self.push(piece);
            self.push(Bytes::from_static(chunked::CHUNK_END));
        } else {
            self.push(piece);
        }
    }

    /// Drops `n` written bytes from the front.
    pub fn consume(&mut self, mut n: usize) {
        self.bytes -= n;
        while n > 0 {
            let Some(front) = self.pieces.front_mut() else {
                return;
            };
            if front.len() <= n {
                n -= front.len();
                self.pieces.pop_front();
            } else {
                let _ = front.split_to(n);
                n = 0;
            }
        }
    }

    /// What follows the first `at` bytes, taken out (a piece is cut where
    /// `at` falls in it).
    pub fn split_off(&mut self, at: usize) -> Queue {
        let mut keep = 0;
        let mut i = 0;
        while i < self.pieces.len() && keep + self.pieces[i].len() <= at {
            keep += self.pieces[i].len();
            i += 1;
        }
        let mut rest = Queue {
            pieces: self.pieces.split_off(i),
            bytes: self.bytes - keep,
        };
        self.bytes = keep;
        if keep < at {
            if let Some(front) = rest.pieces.front_mut() {
                let head = front.split_to(at - keep);
                rest.bytes -= head.len();
                self.push(head);
            }
        }
        rest
    }

    /// Takes up to `n` bytes from the front, joined.
    pub fn take_joined(&mut self, n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n.min(self.bytes));
        while out.len() < n {
            let Some(front) = self.pieces.front_mut() else {
                break;
            };
            let take = front.len().min(n - out.len());
            out.extend_from_slice(&front[..take]);
            if take == front.len() {
                self.pieces.pop_front();
            } else {
                let _ = front.split_to(take);
            }
        }
        self.bytes -= out.len();
        out
    }

    /// Moves `other`'s bytes to the end.
    pub fn append(&mut self, other: &mut Queue) {
        self.bytes += std::mem::take(&mut other.bytes);
        self.pieces.append(&mut other.pieces);
    }

    /// Writes what the socket takes now, at most `max` bytes; `Ok(0)` when
    /// it takes nothing.
    pub fn try_write(&self, stream: &ClientStream, max: usize) -> std::io::Result<usize> {
        let mut left = max;
        let slices: Vec<IoSlice<'_>> = self
            .pieces
            .iter()
            .take(MAX_IOV)
            .map_while(|b| {
                if left == 0 {
                    return None;
                }
                let take = b.len().min(left);
                left -= take;
                Some(IoSlice::new(&b[..take]))
            })
            .collect();
        match stream.try_write_vectored(&slices) {
            Ok(n) => Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(0),
            Err(e) => Err(e),
        }
    }
}

/// A streamed body between its source and the client: the queue, and the
/// temp file with what waits behind it once something spilled.
pub struct Buffers {
    /// What goes to the client next, in order: the head, then the body as
    /// framed for the client.
    pub q: Queue,
    /// The temp file, once something spilled.
    pub file: Option<TempFile>,
    /// Bytes of the file already moved to the queue.
    read: u64,
    /// What was read after the file's bytes, waiting behind them.
    held: Queue,
    /// The most bytes in memory, queued and held (the read-ahead).
    limit: usize,
    /// How much of the body stays in memory for the socket (the busy size,
    /// at most `limit`).
    busy: usize,
}

impl Buffers {
    /// Empty buffers of `limit` bytes, `busy` of them for the client (0:
    /// all).
    pub fn new(limit: usize, busy: usize) -> Buffers {
        Buffers {
            q: Queue::default(),
            file: None,
            read: 0,
            held: Queue::default(),
            limit,
            busy: if busy == 0 { limit } else { busy.min(limit) },
        }
    }

    /// Bytes the file holds that the client has not been given.
    pub fn unread(&self) -> u64 {
        self.file.as_ref().map_or(0, |f| f.len - self.read)
    }

    /// Where the next read from the file starts.
    pub fn read_at(&self) -> u64 {
        self.read
    }

    /// Whether body bytes wait outside the queue (in the file, or held
    /// behind it).
    pub fn waiting(&self) -> bool {
        self.unread() > 0 || !self.held.is_empty()
    }

    /// Whether memory has room for more of the source.
    pub fn room(&self) -> bool {
        self.q.bytes + self.held.bytes < self.limit
    }

    /// Queues a piece read from the source, behind whatever waits.
    pub fn push_read(&mut self, piece: Bytes, chunked_framing: bool) {
        if self.waiting() {
            self.held.push_payload(piece, chunked_framing);
        } else {
            self.q.push_payload(piece, chunked_framing);
        }
    }

    /// How much to read back from the file into the queue now (0: none):
    /// what the busy size leaves room for ahead of the socket, the whole
    /// memory once the source has ended (nginx then hands all it has to
    /// the output), at most [`READ_BACK`]. `head`: head bytes still queued
    /// (not the body's).
    pub fn read_back_wanted(&self, head: usize, ended: bool) -> usize {
        let unread = self.unread();
        if unread == 0 {
            return 0;
        }
        let bound = head + if ended { self.limit } else { self.busy };
        let room = bound.saturating_sub(self.q.bytes) as u64;
        room.min(READ_BACK).min(unread) as usize
    }

    /// Queues bytes read back from the file (as written: framed); once the
    /// file is drained, what was held behind it follows.
    pub fn read_back(&mut self, piece: Vec<u8>) {
        self.read += piece.len() as u64;
        self.q.push(Bytes::from(piece));
        if self.unread() == 0 {
            self.q.append(&mut self.held);
        }
    }

    /// The bytes to write to the temp file now, at most `max`, when memory
    /// is full: the oldest that are not busy (nginx's
    /// `ngx_event_pipe_write_chain_to_temp_file` of `p->in`); empty when
    /// memory has room or all of it is busy. They must be appended to the
    /// file before anything else is read. `head`: head bytes still queued.
    pub fn spill_out(&mut self, head: usize, max: usize) -> Vec<u8> {
        if self.room() || max == 0 {
            return Vec::new();
        }
        if !self.waiting() {
            // All is queued: what follows the busy bytes waits behind the
            // file from now on.
            let keep = head + self.busy;
            if self.q.bytes <= keep {
                return Vec::new();
            }
            self.held = self.q.split_off(keep);
        }
        self.held.take_joined(max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(pieces: &[&[u8]]) -> Queue {
        let mut q = Queue::default();
        for p in pieces {
            q.push(Bytes::copy_from_slice(p));
        }
        q
    }

    fn joined(q: &Queue) -> Vec<u8> {
        q.pieces.iter().flat_map(|b| b.iter().copied()).collect()
    }

    #[test]
    fn a_queue_splits_and_joins_anywhere() {
        let mut q = queue(&[b"abc", b"defg", b"hi"]);
        let mut rest = q.split_off(5);
        assert_eq!((joined(&q), q.bytes()), (b"abcde".to_vec(), 5));
        assert_eq!((joined(&rest), rest.bytes()), (b"fghi".to_vec(), 4));
        assert_eq!(rest.take_joined(3), b"fgh");
        assert_eq!(rest.bytes(), 1);
        q.append(&mut rest);
        assert_eq!(
            (joined(&q), q.bytes(), rest.bytes()),
            (b"abcdei".to_vec(), 6, 0)
        );
        let none = q.split_off(6);
        assert!(none.is_empty() && q.bytes() == 6);
        let all = q.split_off(0);
        assert_eq!((q.bytes(), joined(&all)), (0, b"abcdei".to_vec()));
    }

    /// Fills buffers of `limit` bytes with `busy` for the client from a
    /// body counting up, behind a head of 4 bytes the socket took none of.
    fn full(limit: usize, busy: usize) -> (Buffers, Vec<u8>) {
        let body: Vec<u8> = (0..=255u8).cycle().take(limit * 4).collect();
        let mut b = Buffers::new(limit, busy);
        b.q.push(Bytes::from_static(b"HEAD"));
        let mut at = 0;
        while b.room() {
            b.push_read(Bytes::copy_from_slice(&body[at..at + 10]), false);
            at += 10;
        }
        (b, body)
    }

    #[test]
    fn what_spills_is_what_follows_the_busy_bytes() {
        for busy in [20, 60] {
            let (mut b, body) = full(100, busy);
            let out = b.spill_out(4, 16);
            // The head and `busy` bytes of the body stay for the client.
            assert_eq!(out, body[busy..busy + 16], "busy {busy}");
            assert_eq!(b.q.bytes(), 4 + busy);
            assert!(b.waiting(), "what follows waits behind the file");
            assert!(b.room());
            // A read now waits behind the file too.
            b.push_read(Bytes::from_static(b"new"), false);
            assert_eq!(b.q.bytes(), 4 + busy);
        }
    }

    #[test]
    fn nothing_spills_while_memory_has_room_or_all_of_it_is_busy() {
        let mut b = Buffers::new(100, 20);
        b.push_read(Bytes::from(vec![1; 50]), false);
        assert!(b.spill_out(0, 16).is_empty());
        let mut all_busy = Buffers::new(100, 0);
        all_busy.push_read(Bytes::from(vec![1; 100]), false);
        assert!(all_busy.spill_out(0, 16).is_empty());
        assert!(!all_busy.waiting());
    }

    /// A nameless file said to hold `len` bytes.
    fn spilled_file(len: u64) -> TempFile {
        let path = std::env::temp_dir().join(format!("nowait-buffers-{}", std::process::id()));
        let f = std::fs::File::create(&path).expect("a temp file");
        let _ = std::fs::remove_file(&path);
        TempFile {
            file: std::sync::Arc::new(crate::io::closer::CloseOffLoop::new(f)),
            path: std::sync::Arc::from(path.as_path()),
            named: false,
            len,
        }
    }

    #[test]
    fn the_file_feeds_the_queue_up_to_the_busy_size_then_the_held_bytes_follow() {
        let (mut b, _) = full(100, 20);
        let out = b.spill_out(4, 16);
        // The file now holds what spilled (as the write leaves it).
        b.file = Some(spilled_file(out.len() as u64));
        // The socket took the head and the busy bytes.
        b.q.consume(24);
        // All 16 fit in the busy size of 20.
        assert_eq!(b.read_back_wanted(0, false), 16);
        assert_eq!(b.read_back_wanted(0, true), 16);
        b.read_back(out[..10].to_vec());
        assert!(b.waiting());
        assert_eq!(b.read_back_wanted(0, false), 6);
        b.read_back(out[10..].to_vec());
        // Drained: the held bytes are queued again, in order.
        assert!(!b.waiting());
        assert_eq!(b.q.bytes(), 16 + 100 - 20 - 16);
    }
}
