//! Writing a reply to the client: the head, then the body from memory or
//! from a file, with `sendfile()` in slices of `sendfile_max_chunk` or with
//! reads into a bounded buffer. Each wait for the socket is bounded by
//! `send_timeout`, as in nginx (the time between two successive writes).
//!
//! Memory per connection is bounded: a file is never read whole; at most one
//! [`OUTPUT_BUFFER_SIZE`] buffer is in flight with `sendfile off`.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::Interest;

use crate::http::range::ByteRange;
use crate::io::client_stream::ClientStream;
use crate::io::file::{DirectFile, FileError, FileLayer, OpenFile};
use crate::io::{Lane, fault, pins};
use crate::metrics::body::{self as body_metrics, BodyPath};
use crate::metrics::worker as metrics;
use crate::sys::file as sysfile;

use crate::server::core::reply::Body;

/// The buffer for `sendfile off` (nginx's `output_buffers 2 32k` uses 32k).
pub const OUTPUT_BUFFER_SIZE: usize = 32 * 1024;

/// The most a body step copies from memory on the loop under `aio threads`
/// with the fast path: the memory one connection may hold at once (while
/// the socket drains it). 128 KiB rather than 64: half the system calls
/// per byte, and a 4 MiB response copied while memory is short (the lab's
/// loaded phases) took 15–20% less CPU; 256 KiB saved little more for
/// twice the memory per connection.
pub const FAST_BODY_CHUNK: u64 = 128 * 1024;

/// The most one step of a body sent with `sendfile on` probes and
/// `sendfile()`s from the loop (see [`FileLayer::resident_now`]). The probe
/// reads what it checks once, through a buffer that stays in the CPU's
/// cache; a step larger than the socket takes is probed again after the
/// wait for room, so this stays near what a loopback socket takes at once.
pub const FAST_SENDFILE_PROBE: u64 = 256 * 1024;

/// A file body up to this size is read into the head's buffer and sent with
/// one `write()`: one system call instead of two for small files.
pub const INLINE_FILE_MAX: u64 = 16 * 1024;

/// Why sending stopped.
#[derive(Debug)]
pub enum SendError {
    /// The client went away or the socket failed.
    Io(io::Error),
    /// No progress for `send_timeout`.
    TimedOut,
    /// Reading the file failed after the head was sent (e.g. the file shrank).
    File(FileError),
    /// The file ended before the promised length (truncated while sent).
    Truncated(Truncation),
    /// A streamed body ended before it was complete (the upstream failed).
    Source(crate::body::SourceError),
}

/// How a file was found shorter than its response promised, in nginx's
/// words (`[alert]`, then the connection closes).
#[derive(Debug)]
pub enum Truncation {
    /// `sendfile()` sent nothing before the end: the file now ends at `at`
    /// (`ngx_linux_sendfile`).
    Sendfile {
        /// The file.
        path: std::sync::Arc<std::path::Path>,
        /// The offset sendfile was asked to start from.
        at: u64,
    },
    /// A read returned fewer bytes than asked (`ngx_output_chain_copy_buf`).
    Read {
        /// The file.
        path: std::sync::Arc<std::path::Path>,
        /// Bytes read.
        got: usize,
        /// Bytes asked for.
        wanted: usize,
    },
}

impl std::fmt::Display for Truncation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Truncation::Sendfile { path, at } => write!(
                f,
                "sendfile() reported that \"{}\" was truncated at {at}",
                path.display()
            ),
            Truncation::Read { path, got, wanted } => write!(
                f,
                "{}() read only {got} of {wanted} from \"{}\"",
                sysfile::PREAD,
                path.display()
            ),
        }
    }
}

/// How a body is sent.
pub struct SendParams<'a> {
    /// `send_timeout`.
    pub timeout: Duration,
    /// `sendfile`.
    pub sendfile: bool,
    /// `sendfile_max_chunk` (0 = unbounded).
    pub max_chunk: u64,
    /// `tcp_nopush`.
    pub nopush: bool,
    /// Where file operations run.
    pub files: FileLayer<'a>,
    /// When the request head was complete, for time to first byte.
    pub start: std::time::Instant,
    /// Frame a streamed body as `Transfer-Encoding: chunked`.
    pub chunked: bool,
    /// How far a streamed body may be read ahead of the client, in bytes
    /// (0: [`crate::server::core::stream::DEFAULT_READ_AHEAD`]).
    pub read_ahead: usize,
    /// Where a streamed body spills past `read_ahead` (buffered proxying).
    pub spill: Option<crate::server::core::stream::SpillTo<'a>>,
    /// How much of a streamed body stays in memory for a socket that does
    /// not take it, when memory is full and the rest spills
    /// (`proxy_busy_buffers_size` with `proxy_buffering on`; 0: all of
    /// `read_ahead`). See [`crate::server::core::stream::buffers`].
    pub busy: usize,
    /// `postpone_output` for a body a filter produced (0 otherwise): the
    /// head and the body are gathered until this many bytes wait or the
    /// body ends, as nginx's write filter holds them; a body that fails
    /// meanwhile ends the connection with none of it sent.
    pub postpone: usize,
    /// `limit_rate`, when the response is paced.
    pub pace: Option<&'a crate::server::core::pace::Pace>,
    /// The end of a chunked body: the last chunk with the trailers made now.
    pub trailer: &'a dyn Fn(&Written) -> Vec<u8>,
    /// Kept up to date with [`Written::total`] as a streamed body is
    /// written, for a filtered body's subrequests (their log lines give
    /// what the connection has sent so far).
    pub sent_so_far: Option<&'a std::cell::Cell<u64>>,
    /// `directio`, when set.
    pub direct: Option<Direct>,
    /// Logs a line about the request that does not end it, with the
    /// request's context (`client: …`).
    pub note: &'a dyn Fn(crate::log::Level, &dyn std::fmt::Display),
}

/// `directio`: how a file of at least `min_size` bytes is read.
#[derive(Clone, Copy, Debug)]
pub struct Direct {
    /// `directio`'s size.
    pub min_size: u64,
    /// `directio_alignment`.
    pub alignment: u64,
    /// The size of each read (`output_buffers`' buffer size).
    pub buffer: usize,
}

impl SendParams<'_> {
    /// The `directio` settings that apply to `file`, if any.
    fn direct_for(&self, file: &OpenFile) -> Option<Direct> {
        self.direct.filter(|d| file.meta.size >= d.min_size)
    }
}

/// Bytes written.
#[derive(Clone, Copy, Debug, Default)]
pub struct Written {
    /// Everything, head included.
    pub total: u64,
    /// The body alone.
    pub body: u64,
}

impl Written {
    /// Counts `n` bytes of body written.
    pub fn count(&mut self, n: usize) {
        self.total += n as u64;
        self.body += n as u64;
    }
}

/// The connection's socket as file operations on pool threads see it: a
/// duplicate descriptor, so a pool task can never write to a descriptor
/// number the connection has closed and the kernel has reused.
#[derive(Default)]
pub struct SocketForPools(Option<Arc<OwnedFd>>);

impl SocketForPools {
    fn get(&mut self, stream: &ClientStream) -> io::Result<Arc<OwnedFd>> {
        if let Some(fd) = &self.0 {
            return Ok(fd.clone());
        }
        let fd = Arc::new(stream.as_fd().try_clone_to_owned()?);
        self.0 = Some(fd.clone());
        Ok(fd)
    }
}

/// Writes all of `buf`. Writes are tried first; only when the socket is
/// full does the wait, bounded by `timeout`, begin (nginx arms
/// `send_timeout` the same way).
pub async fn write_all(
    stream: &ClientStream,
    mut buf: &[u8],
    timeout: Duration,
) -> Result<(), SendError> {
    while !buf.is_empty() {
        match stream.try_send(buf) {
            Ok(0) => return Err(SendError::Io(io::ErrorKind::WriteZero.into())),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                tokio::time::timeout(timeout, stream.writable())
                    .await
                    .map_err(|_| SendError::TimedOut)?
                    .map_err(SendError::Io)?;
            }
            Err(e) => return Err(SendError::Io(e)),
        }
    }
    Ok(())
}

/// Sends what the connection still holds (a TLS connection's encrypted
/// bytes), within `timeout`: the end of a response.
pub async fn flush(stream: &ClientStream, timeout: Duration) -> Result<(), SendError> {
    if !stream.tls().is_some_and(|t| t.holds_output()) {
        return Ok(());
    }
    tokio::time::timeout(timeout, stream.flush())
        .await
        .map_err(|_| SendError::TimedOut)?
        .map_err(SendError::Io)
}

/// Waits until the pace lets something be written; returns how much (at
/// least 1, at most `want`). A client that closes its side meanwhile ends
/// the response at once, as nginx's `ngx_http_test_reading` does while a
/// write is delayed, rather than after the whole paced body.
pub async fn wait_pace(
    stream: &ClientStream,
    pace: &crate::server::core::pace::Pace,
    want: usize,
) -> Result<usize, SendError> {
    loop {
        match pace.allowance(std::time::Instant::now()) {
            Ok(n) => return Ok(want.min(usize::try_from(n).unwrap_or(usize::MAX)).max(1)),
            Err(d) => {
                tokio::select! {
                    _ = tokio::time::sleep(d) => {}
                    _ = client_gone(stream) => {
                        return Err(SendError::Io(io::ErrorKind::ConnectionAborted.into()));
                    }
                }
            }
        }
    }
}

/// Resolves once the client has closed its side (or the socket failed);
/// never while bytes wait to be read instead (a pipelined request), which
/// say nothing about a close. Reads nothing.
pub async fn client_gone(stream: &ClientStream) {
    match stream.peek_byte().await {
        Ok(0) | Err(_) => {}
        Ok(_) => std::future::pending().await,
    }
}

/// [`write_all`] under the response's pace (`limit_rate`), if any.
async fn write_paced(
    stream: &ClientStream,
    mut buf: &[u8],
    p: &SendParams<'_>,
) -> Result<(), SendError> {
    let Some(pace) = p.pace else {
        return write_all(stream, buf, p.timeout).await;
    };
    while !buf.is_empty() {
        let n = wait_pace(stream, pace, buf.len()).await?;
        write_all(stream, &buf[..n], p.timeout).await?;
        pace.wrote(n, std::time::Instant::now());
        buf = &buf[n..];
    }
    Ok(())
}

/// The line before a chunked body of `len` bytes sent as one chunk (none
/// for an empty body).
fn chunk_line(len: u64, out: &mut Vec<u8>) {
    if len > 0 {
        crate::body::chunked::chunk_head(len as usize, out);
    }
}

/// What closes a chunked body of `len` bytes sent as one chunk: the end of
/// that chunk, then the last chunk with the trailers.
fn chunk_end(len: u64, p: &SendParams<'_>, w: &Written) -> Vec<u8> {
    let mut out = Vec::new();
    if len > 0 {
        out.extend_from_slice(crate::body::chunked::CHUNK_END);
    }
    out.extend_from_slice(&(p.trailer)(w));
    out
}

/// How many body bytes are sent in the head's buffer (see
/// [`send_from_memory`] and [`INLINE_FILE_MAX`]).
pub fn appended_len(body: &Body) -> usize {
    match body {
        Body::Bytes(b) => b.len(),
        Body::File { range, .. } if range.len() <= INLINE_FILE_MAX => range.len() as usize,
        _ => 0,
    }
}

/// Whether [`send_from_memory`] sends this reply: nothing to read from a file.
pub fn from_memory(body: &Body, head_only: bool) -> bool {
    head_only || matches!(body, Body::Empty | Body::Bytes(_))
}

/// Sends a reply whose bytes are all in memory (see [`from_memory`]): one
/// write of head and body. Its future is a fraction of [`send`]'s, which
/// holds the file paths' state: a small reply does not pay for creating it.
pub async fn send_from_memory(
    stream: &ClientStream,
    mut head: Vec<u8>,
    body: &Body,
    head_only: bool,
    p: &SendParams<'_>,
    w: &mut Written,
) -> Result<(), SendError> {
    let head_len = head.len() as u64;
    let body_len = match body {
        Body::Bytes(b) if !head_only => {
            head.extend_from_slice(b);
            b.len() as u64
        }
        _ => 0,
    };
    write_all(stream, &head, p.timeout).await?;
    metrics::ttfb(p.start.elapsed());
    w.total += head_len + body_len;
    w.body += body_len;
    Ok(())
}

/// Sends `head` and `body` (without the body for HEAD requests), counting
/// what was written in `w` as it goes (the access log shows what a client
/// got even when sending fails).
pub async fn send(
    stream: &ClientStream,
    pool_sock: &mut SocketForPools,
    head: Vec<u8>,
    body: &mut Body,
    head_only: bool,
    p: &SendParams<'_>,
    w: &mut Written,
) -> Result<(), SendError> {
    let head_len = head.len() as u64;
    if p.chunked && !head_only && !matches!(body, Body::Stream(_) | Body::Upgrade(_)) {
        return send_chunked(stream, pool_sock, head, body, p, w).await;
    }
    match body {
        Body::Empty | Body::Bytes(_) if p.pace.is_some() => {
            let mut out = head;
            if let (Body::Bytes(b), false) = (&*body, head_only) {
                out.extend_from_slice(b);
            }
            write_paced(stream, &out, p).await?;
            metrics::ttfb(p.start.elapsed());
            w.total += out.len() as u64;
            w.body += out.len() as u64 - head_len;
        }
        Body::Empty | Body::Bytes(_) => {
            return send_from_memory(stream, head, body, head_only, p, w).await;
        }
        _ if head_only && p.pace.is_some() => {
            write_paced(stream, &head, p).await?;
            metrics::ttfb(p.start.elapsed());
            w.total += head_len;
        }
        _ if head_only => return send_from_memory(stream, head, body, head_only, p, w).await,
        Body::File { file, range }
            if range.len() <= INLINE_FILE_MAX
                && p.pace.is_none()
                && p.direct_for(file).is_none() =>
        {
            // A small popular file is held in memory too while memory is
            // short: its read then never waits behind the cold reads the
            // pool and the disk are busy with.
            let _pin = pin_while_short(file, p);
            let head_len = head.len();
            let len = range.len() as usize;
            let out = p
                .files
                .read_append(file, head, len, range.start)
                .await
                .map_err(SendError::File)?;
            if out.len() < head_len + len {
                return Err(SendError::Truncated(Truncation::Read {
                    path: file.path.clone(),
                    got: out.len().saturating_sub(head_len),
                    wanted: len,
                }));
            }
            write_all(stream, &out, p.timeout).await?;
            metrics::ttfb(p.start.elapsed());
            w.total += out.len() as u64;
            w.body += range.len();
            body_metrics::record(BodyPath::Copy, len);
        }
        Body::File { file, range } => {
            // TCP_CORK; a unix-domain socket has none (nginx disables
            // `tcp_nopush` there).
            let cork = p.sendfile && p.nopush && p.direct_for(file).is_none();
            if cork {
                let _ = stream.set_nopush(true);
            }
            write_paced(stream, &head, p).await?;
            metrics::ttfb(p.start.elapsed());
            w.total += head_len;
            match direct_file(file, p).await {
                Some(direct) => send_direct(stream, &direct, file, *range, p, w).await?,
                None => send_range(stream, pool_sock, file, *range, p, w).await?,
            }
            if cork {
                let _ = stream.set_nopush(false);
            }
        }
        Body::Multipart { file, parts } => {
            write_paced(stream, &head, p).await?;
            metrics::ttfb(p.start.elapsed());
            w.total += head_len;
            send_parts(stream, pool_sock, file, parts, p, w).await?;
        }
        // Sent by the connection itself (`conn::upgrade`), never here.
        Body::Upgrade(_) => return Err(SendError::Io(io::ErrorKind::Unsupported.into())),
        Body::Stream(source) => {
            // The head waits in the body's queue: with the first piece, if
            // that is there already, it goes in the same write.
            crate::server::core::stream::send_stream_after(stream, head, source.as_mut(), p, w)
                .await?;
        }
    }
    Ok(())
}

/// Sends `head`, then a body that comes as a [`crate::body::Source`] (a
/// filtered one), counting into `w`: the head waits in the same queue as
/// the body (see [`SendParams::postpone`]).
pub async fn send_source(
    stream: &ClientStream,
    head: Vec<u8>,
    source: &mut dyn crate::body::Source,
    p: &SendParams<'_>,
    w: &mut Written,
) -> Result<(), SendError> {
    crate::server::core::stream::send_stream_after(stream, head, source, p, w).await
}

/// The parts of a multipart body, each after its part head.
async fn send_parts(
    stream: &ClientStream,
    pool_sock: &mut SocketForPools,
    file: &OpenFile,
    parts: &crate::http::range::Multipart,
    p: &SendParams<'_>,
    w: &mut Written,
) -> Result<(), SendError> {
    let direct = direct_file(file, p).await;
    for (part_head, range) in parts.parts() {
        write_paced(stream, part_head, p).await?;
        w.count(part_head.len());
        match &direct {
            Some(direct) => send_direct(stream, direct, file, range, p, w).await?,
            None => send_range(stream, pool_sock, file, range, p, w).await?,
        }
    }
    write_paced(stream, parts.trailer(), p).await?;
    w.count(parts.trailer().len());
    Ok(())
}

/// A body of known length sent chunked because trailers follow it (nginx's
/// chunked filter with `r->expect_trailers`): one chunk, then the last
/// chunk with the trailers.
async fn send_chunked(
    stream: &ClientStream,
    pool_sock: &mut SocketForPools,
    mut head: Vec<u8>,
    body: &mut Body,
    p: &SendParams<'_>,
    w: &mut Written,
) -> Result<(), SendError> {
    let head_len = head.len() as u64;
    let len = body.len().unwrap_or(0);
    chunk_line(len, &mut head);
    let framing = head.len() as u64 - head_len;
    match body {
        Body::Bytes(b) => head.extend_from_slice(b),
        Body::Empty => {}
        _ => {
            write_paced(stream, &head, p).await?;
            metrics::ttfb(p.start.elapsed());
            w.total += head_len;
            w.count(framing as usize);
            match body {
                Body::File { file, range } => {
                    send_range(stream, pool_sock, file, *range, p, w).await?;
                }
                Body::Multipart { file, parts } => {
                    send_parts(stream, pool_sock, file, parts, p, w).await?;
                }
                _ => {}
            }
            let end = chunk_end(len, p, w);
            write_paced(stream, &end, p).await?;
            w.count(end.len());
            return Ok(());
        }
    }
    let end = chunk_end(len, p, w);
    head.extend_from_slice(&end);
    write_paced(stream, &head, p).await?;
    metrics::ttfb(p.start.elapsed());
    w.total += head.len() as u64;
    w.body += head.len() as u64 - head_len;
    Ok(())
}

/// How much more of a response must have come from memory than from the
/// pool for its next miss to take the pool's front lane.
const FRONT_LANE_RATIO: u64 = 4;

/// The pool lane for the next slice of a response that has sent
/// `from_memory` bytes from the loop and `from_pool` through the pool.
///
/// A miss in a response served mostly from memory is a hole in a hot file
/// (a few pages evicted, or not yet read back): its slice needs little of
/// the disk, and while it waits behind cold files' reads the loop's hot
/// traffic on that file waits too; so it goes ahead of them. A response
/// that starts with a miss, or has needed the pool as much as memory, is
/// cold and keeps its place in the FIFO, as in nginx.
pub fn lane_for(from_memory: u64, from_pool: u64) -> Lane {
    if from_memory > 0 && from_memory >= from_pool.saturating_mul(FRONT_LANE_RATIO) {
        Lane::Front
    } else {
        Lane::Normal
    }
}

/// While memory is short ([`crate::io::pressure`]) and the loop tries
/// memory first (`aio threads` with the fast path), `file`'s pin if it has
/// one ([`pins`]), to hold while the response reads or sends it; a file
/// without one asks for one (granted to popular files, by a pool task).
///
/// Every file body asks, the small ones read into the response head too:
/// under the slow-disk lab's random load, the hot set's small files were
/// the ones never pinned, and when one of them lost a page, every request
/// for it waited for a pool thread and then for a disk slot behind the
/// cold reads (about 150 ms), long enough for all 50 hot connections to be
/// caught asking for it.
fn pin_while_short(file: &OpenFile, p: &SendParams<'_>) -> Option<Arc<pins::Pin>> {
    let pool = p.files.pool.filter(|_| p.files.fast)?;
    if !crate::io::pressure::reclaiming() {
        return None;
    }
    let pin = pins::get(&file.meta);
    if pin.is_none() {
        pins::consider(file, pool);
    }
    pin
}

/// Sends one range of a file; returns the bytes sent.
///
/// Under `aio threads` with the fast path, each step first sends what is
/// in memory from the loop: with `sendfile on`, a `sendfile()` of the
/// prefix of at most [`FAST_SENDFILE_PROBE`] bytes that a probe found up to
/// date ([`FileLayer::resident_now`]), so the call meets no page it could
/// wait for; with `sendfile off`, or while memory is short
/// ([`crate::io::pressure`]: a page could be evicted between the probe and
/// the call), a copy ([`FileLayer::body_now`], at most [`FAST_BODY_CHUNK`]).
/// Only when the next bytes need
/// the disk does a slice go to the pool (`sendfile()` there, or a read), in
/// the lane [`lane_for`] picks. Otherwise `sendfile()` or reads run where
/// `aio` says. Each slice is counted by how it was sent
/// (`nowait_body_bytes_total`).
async fn send_range(
    stream: &ClientStream,
    pool_sock: &mut SocketForPools,
    file: &OpenFile,
    range: ByteRange,
    p: &SendParams<'_>,
    w: &mut Written,
) -> Result<(), SendError> {
    let fast = p.files.pool.is_some() && p.files.fast;
    // One buffer for the whole range when it is copied rather than sendfile'd.
    let mut scratch = Vec::new();
    let mut off = range.start;
    let (mut from_memory, mut from_pool) = (0u64, 0u64);
    // While memory is short, a popular file held in memory (`io::pins`) is
    // still sent with sendfile(): its pages cannot be evicted while the
    // response holds the pin.
    let pin = pin_while_short(file, p);
    while off < range.end {
        let mut left = range.end - off;
        if let Some(pace) = p.pace {
            left = wait_pace(stream, pace, left.min(usize::MAX as u64) as usize).await? as u64;
        }
        let mut n = 0;
        if fast && p.sendfile && (pin.is_some() || !crate::io::pressure::reclaiming()) {
            // Zero copy from the loop: only the prefix a probe found up to
            // date, so the sendfile() below meets no page it must wait for.
            // Not while memory is short: a page evicted between the probe
            // and the call would make the loop wait for its read; the copy
            // below has no such window (`io::pressure`). A pinned file's
            // pages stay: no probe.
            let ready = if pin.is_some() {
                chunk_limit(p, left).min(usize::MAX as u64) as usize
            } else {
                let want = chunk_limit(p, left).min(FAST_SENDFILE_PROBE) as usize;
                p.files.resident_now(file, off, want)
            };
            if ready > 0 {
                match sendfile_on_loop(stream, file, off, ready, p).await? {
                    Some(sent) => {
                        n = sent;
                        w.count(n);
                        from_memory += n as u64;
                        body_metrics::record(BodyPath::LoopSendfile, n);
                    }
                    // The socket was full and is writable again: probe anew,
                    // since what was up to date then may not be now.
                    None => continue,
                }
            }
        } else if fast {
            scratch.clear();
            n = p
                .files
                .body_now(file, &mut scratch, left.min(FAST_BODY_CHUNK) as usize, off);
            if n > 0 {
                write_all(stream, &scratch[..n], p.timeout).await?;
                w.count(n);
                from_memory += n as u64;
                body_metrics::record(BodyPath::Copy, n);
            }
        }
        if n == 0 {
            let lane = lane_for(from_memory, from_pool);
            n = if p.sendfile {
                let chunk = chunk_limit(p, left) as usize;
                let n = sendfile_once(stream, pool_sock, file, off, chunk, lane, p).await?;
                w.count(n);
                let path = if p.files.pool.is_some() {
                    BodyPath::PoolSendfile
                } else {
                    BodyPath::LoopSendfile
                };
                body_metrics::record(path, n);
                n
            } else {
                let chunk = left.min(OUTPUT_BUFFER_SIZE as u64) as usize;
                let mut buf = std::mem::take(&mut scratch);
                buf.clear();
                buf = p
                    .files
                    .read_append_in(lane, file, buf, chunk, off)
                    .await
                    .map_err(SendError::File)?;
                read_in_full(file, buf.len(), chunk)?;
                write_all(stream, &buf, p.timeout).await?;
                let n = buf.len();
                w.count(n);
                body_metrics::record(BodyPath::Copy, n);
                scratch = buf;
                n
            };
            from_pool += n as u64;
        }
        off += n as u64;
        if let Some(pace) = p.pace {
            pace.wrote(n, std::time::Instant::now());
        }
        if p.max_chunk != 0 && off < range.end {
            // One slice per turn: let the loop's other connections run, as
            // nginx reposts the write event after sendfile_max_chunk.
            tokio::task::yield_now().await;
        }
    }
    Ok(())
}

/// `file` opened again for `directio` when that applies to it (once per
/// response): `None` reads it as any other, also when the path names
/// another file now, or when the reopening failed (nginx's `[alert]
/// fcntl(O_DIRECT) "…" failed`, logged here).
async fn direct_file(file: &OpenFile, p: &SendParams<'_>) -> Option<(DirectFile, Direct)> {
    let d = p.direct_for(file)?;
    match p.files.open_direct(file).await {
        Ok(direct) => Some((direct?, d)),
        Err(e) => {
            (p.note)(crate::log::Level::Alert, &e);
            None
        }
    }
}

/// Sends `range` of `file` read through `direct` (`directio`): pieces of
/// `output_buffers`' size, each read past the page cache where `aio` says,
/// never by the loop's fast paths nor with `sendfile()`, as nginx.
async fn send_direct(
    stream: &ClientStream,
    (direct, d): &(DirectFile, Direct),
    file: &OpenFile,
    range: ByteRange,
    p: &SendParams<'_>,
    w: &mut Written,
) -> Result<(), SendError> {
    let mut off = range.start;
    while off < range.end {
        let mut left = range.end - off;
        if let Some(pace) = p.pace {
            left = wait_pace(stream, pace, left.min(usize::MAX as u64) as usize).await? as u64;
        }
        let chunk = left.min(d.buffer.max(1) as u64) as usize;
        let lane = lane_for(0, off - range.start);
        let buf = p
            .files
            .read_direct(lane, direct, off, chunk, d.alignment)
            .await
            .map_err(SendError::File)?;
        read_in_full(file, buf.len(), chunk)?;
        write_all(stream, &buf, p.timeout).await?;
        w.count(chunk);
        body_metrics::record(BodyPath::Copy, chunk);
        off += chunk as u64;
        if let Some(pace) = p.pace {
            pace.wrote(chunk, std::time::Instant::now());
        }
    }
    Ok(())
}

/// `Ok` when a piece of `file` read all `wanted` bytes; a regular file
/// reads short only at its end, so fewer mean it was truncated meanwhile.
fn read_in_full(file: &OpenFile, got: usize, wanted: usize) -> Result<(), SendError> {
    if got < wanted {
        return Err(SendError::Truncated(Truncation::Read {
            path: file.path.clone(),
            got,
            wanted,
        }));
    }
    Ok(())
}

/// The most one `sendfile_max_chunk` slice may be for `left` bytes to go
/// (0 means unbounded).
fn chunk_limit(p: &SendParams<'_>, left: u64) -> u64 {
    if p.max_chunk == 0 {
        left
    } else {
        left.min(p.max_chunk)
    }
}

/// One `sendfile()` on the loop of `len` bytes the caller found up to date
/// in memory ([`FileLayer::resident_now`]): `Some(sent)`, or `None` when the
/// socket was full and has become writable again (within `send_timeout`),
/// for the caller to probe again before the next try.
async fn sendfile_on_loop(
    stream: &ClientStream,
    file: &OpenFile,
    off: u64,
    len: usize,
    p: &SendParams<'_>,
) -> Result<Option<usize>, SendError> {
    let result = stream.try_io(Interest::WRITABLE, || {
        let mut o = off;
        sysfile::sendfile(stream, &*file.fd, &mut o, len)
    });
    match result {
        Ok(0) => Err(SendError::Truncated(Truncation::Sendfile {
            path: file.path.clone(),
            at: off,
        })),
        Ok(n) => Ok(Some(n)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
            tokio::time::timeout(p.timeout, stream.writable())
                .await
                .map_err(|_| SendError::TimedOut)?
                .map_err(SendError::Io)?;
            Ok(None)
        }
        Err(e) => Err(SendError::Io(e)),
    }
}

/// One `sendfile()` of up to `chunk` bytes, on the loop or in the pool.
/// The call is tried first; only a full socket starts the wait, bounded by
/// `send_timeout`.
async fn sendfile_once(
    stream: &ClientStream,
    pool_sock: &mut SocketForPools,
    file: &OpenFile,
    off: u64,
    chunk: usize,
    lane: Lane,
    p: &SendParams<'_>,
) -> Result<usize, SendError> {
    loop {
        let result = if p.files.pool.is_none() {
            // `aio off`: the loop itself meets the (test-injected) slow disk.
            fault::stall(&file.path);
            stream.try_io(Interest::WRITABLE, || {
                let mut o = off;
                sysfile::sendfile(stream, &*file.fd, &mut o, chunk)
            })
        } else {
            let sock = pool_sock.get(stream).map_err(SendError::Io)?;
            match p.files.sendfile(lane, &sock, file, off, chunk).await {
                Ok(n) => Ok(n),
                Err(e) => match e.errno() {
                    Some(libc::EAGAIN) => {
                        // The socket is full: tell tokio, so that `writable()`
                        // waits for the next edge instead of spinning.
                        let _ = stream.try_io(Interest::WRITABLE, || {
                            Err::<(), _>(io::ErrorKind::WouldBlock.into())
                        });
                        Err(io::ErrorKind::WouldBlock.into())
                    }
                    Some(errno) => Err(io::Error::from_raw_os_error(errno)),
                    None => return Err(SendError::File(e)),
                },
            }
        };
        match result {
            Ok(0) => {
                return Err(SendError::Truncated(Truncation::Sendfile {
                    path: file.path.clone(),
                    at: off,
                }));
            }
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                tokio::time::timeout(p.timeout, stream.writable())
                    .await
                    .map_err(|_| SendError::TimedOut)?
                    .map_err(SendError::Io)?;
            }
            Err(e) => return Err(SendError::Io(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_that_starts_cold_keeps_its_place() {
        assert_eq!(lane_for(0, 0), Lane::Normal);
        assert_eq!(lane_for(0, 512 * 1024), Lane::Normal);
    }

    #[test]
    fn a_hole_in_a_response_served_from_memory_goes_first() {
        assert_eq!(lane_for(64 * 1024, 0), Lane::Front);
        assert_eq!(lane_for(4 << 20, 512 * 1024), Lane::Front);
    }

    #[test]
    fn a_response_that_needed_the_pool_as_much_as_memory_is_cold() {
        assert_eq!(lane_for(1 << 20, 512 * 1024), Lane::Normal);
        assert_eq!(lane_for(2 << 20, 512 * 1024), Lane::Front);
    }
}
