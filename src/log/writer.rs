//! [`LogWriter`]: one destination (a file or stderr) and the thread that
//! writes to it.
//!
//! Loops call [`LogWriter::write_line`], which copies the line into a bounded
//! in-memory buffer under a mutex held for one `memcpy`; the writer thread
//! swaps the whole buffer out and appends it with one `write()` (so load
//! batches lines by itself). A disk that stalls stalls only the writer
//! thread: once the buffer holds [`LogWriter::capacity`] bytes, further lines
//! are dropped and counted ([`WriterStats::dropped`]). Dropping was chosen
//! over waiting because a log line is never worth stalling every connection
//! on a loop; the counter makes the loss visible on the status page
//! (`nowait_log_lines_dropped_total{log="…"}`, `metrics/logs.rs`).

use crate::sys::error::{SysError, SysResultExt};
use crate::sys::file::OPEN;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Bytes a destination buffers while its writer is busy, by default: about
/// 8,000 access-log lines, a few seconds of a stalled disk at high load.
pub const DEFAULT_BUFFER_BYTES: usize = 1 << 20;
/// Mode of newly created log files (nginx's 0644).
const LOG_FILE_MODE: u32 = 0o644;
/// Numbers the writer threads `log#1`, `log#2`, ... in creation order.
static NEXT_WRITER: AtomicUsize = AtomicUsize::new(1);

/// Where a log goes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Destination {
    /// `error_log stderr;`: the process's standard error.
    Stderr,
    /// A file, opened `O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC`, mode 0644.
    File(PathBuf),
}

impl Destination {
    /// `stderr` for the word `stderr`, a file path otherwise (relative paths
    /// are the caller's to resolve against the prefix first).
    pub fn parse(s: &str) -> Destination {
        if s == "stderr" {
            Destination::Stderr
        } else {
            Destination::File(PathBuf::from(s))
        }
    }
}

/// Counters of one destination.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Lines written (handed to `write()` successfully).
    pub written: u64,
    /// Lines dropped because the buffer was full (or the writer closed).
    pub dropped: u64,
    /// `write()` calls that failed (ENOSPC, EIO...); their lines are lost.
    pub write_errors: u64,
}

/// What the buffer lock protects.
struct State {
    /// Lines accepted and not yet taken by the writer thread.
    buf: Vec<u8>,
    /// Number of lines in `buf`.
    lines: u64,
    /// Sequence number of the last accepted line.
    accepted: u64,
    /// Sequence number of the last line the writer finished with.
    done: u64,
    /// Reopen requests made, and handled; differing means one is pending.
    reopen_asked: u64,
    reopen_done: u64,
    /// Outcome of the last reopen, taken by the [`LogWriter::reopen`] caller.
    reopen_error: Option<io::Error>,
    /// No more lines accepted; the thread drains `buf` and exits.
    closing: bool,
    /// A flush waits: the batch is written without gathering more.
    flush_asked: bool,
    /// The thread has exited: nobody waits for progress any more.
    gone: bool,
    /// A line in `buf` is written at once, without gathering a batch (an
    /// error-log line: nginx writes those as they happen, and readers of
    /// the error log expect to find a refusal's line by the time its
    /// response arrives).
    urgent: bool,
}

/// How a writer gathers lines into writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batching {
    /// A batch this large is written at once.
    pub bytes: usize,
    /// The longest the first line of a batch waits for more (`None`: until
    /// the batch is full, a flush, a reopen or the end, as nginx's
    /// `access_log … buffer=` without `flush=`).
    pub wait: Option<Duration>,
    /// Each write is one gzip member at this level (`access_log … gzip`).
    pub gzip: Option<u32>,
}

impl Default for Batching {
    /// Lines of a busy second gathered for [`COALESCE_WAIT`], up to
    /// [`COALESCE_BYTES`]: a write per interval instead of per line.
    fn default() -> Self {
        Batching {
            bytes: COALESCE_BYTES,
            wait: Some(COALESCE_WAIT),
            gzip: None,
        }
    }
}

/// Told of a failed `write()` to a destination (at most once per
/// [`ALERT_INTERVAL`]): the destination's path and the error.
pub type WriteAlert = Arc<dyn Fn(&Path, &io::Error) + Send + Sync>;

/// The shortest time between two alerts of one destination's failed writes:
/// nginx's `ngx_http_log_write` logs one per log per minute
/// (`now - log->error_log_time > 59`).
pub const ALERT_INTERVAL: Duration = Duration::from_secs(60);

/// State shared with the writer thread.
struct Shared {
    /// Where lines go; also the path reopened on `SIGUSR1`.
    dest: Destination,
    /// Most bytes `State::buf` may hold.
    capacity: usize,
    /// How lines are gathered into writes.
    batching: Batching,
    /// The buffer and bookkeeping.
    state: Mutex<State>,
    /// Wakes the writer: data, reopen or close.
    wake: Condvar,
    /// Wakes flush/reopen/close callers: the writer made progress.
    progress: Condvar,
    /// The same for tasks on event loops awaiting [`LogWriter::written`].
    progress_async: tokio::sync::Notify,
    /// Lines written.
    written: AtomicU64,
    /// Lines dropped.
    dropped: AtomicU64,
    /// Failed writes.
    write_errors: AtomicU64,
    /// Who is told of a failed write (the error log of the configuration
    /// that opened or kept this access log), if anyone.
    alert: Mutex<Option<WriteAlert>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves the buffer a valid
        // byte vector; logging carries on.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One log destination and its writer thread. Share it as `Arc<LogWriter>`.
pub struct LogWriter {
    shared: Arc<Shared>,
    /// Taken by [`LogWriter::close`].
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for LogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogWriter")
            .field("dest", &self.shared.dest)
            .finish()
    }
}

/// Opens `path` for appending, creating it 0644: `open() "/path" failed (...)`.
/// When a privileged helper exists (the process gave up root), the helper
/// opens it, as nginx's master opens logs as root for its workers.
fn open_file(path: &Path) -> Result<File, SysError> {
    if let Some(r) = crate::sys::privsep::open_log(path) {
        return r.on_path(OPEN, path);
    }
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(LOG_FILE_MODE)
        .custom_flags(libc::O_CLOEXEC)
        .open(path)
        .on_path(OPEN, path)
}

/// The writer thread's handle on the destination.
enum Sink {
    Stderr,
    File(File),
}

impl Sink {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Sink::Stderr => io::stderr().lock().write_all(bytes),
            Sink::File(f) => f.write_all(bytes),
        }
    }
}

impl LogWriter {
    /// Opens `dest` now (so a bad path is an `[emerg]` at startup) and starts
    /// its writer thread `log#N`, buffering at most `capacity` bytes.
    pub fn open(dest: Destination, capacity: usize) -> Result<LogWriter, SysError> {
        LogWriter::open_batched(dest, capacity, Batching::default())
    }

    /// [`LogWriter::open`] gathering lines as `batching` says.
    pub fn open_batched(
        dest: Destination,
        capacity: usize,
        batching: Batching,
    ) -> Result<LogWriter, SysError> {
        let sink = match &dest {
            Destination::Stderr => Sink::Stderr,
            Destination::File(p) => Sink::File(open_file(p)?),
        };
        let shared = Arc::new(Shared {
            dest,
            capacity,
            batching,
            state: Mutex::new(State {
                buf: Vec::new(),
                lines: 0,
                accepted: 0,
                done: 0,
                reopen_asked: 0,
                urgent: false,
                reopen_done: 0,
                reopen_error: None,
                closing: false,
                flush_asked: false,
                gone: false,
            }),
            wake: Condvar::new(),
            progress: Condvar::new(),
            progress_async: tokio::sync::Notify::new(),
            written: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            write_errors: AtomicU64::new(0),
            alert: Mutex::new(None),
        });
        let n = NEXT_WRITER.fetch_add(1, Ordering::Relaxed);
        let for_thread = Arc::clone(&shared);
        let handle = thread::Builder::new()
            .name(format!("log#{n}"))
            .spawn(move || run(&for_thread, sink))
            .on_call("pthread_create")?;
        Ok(LogWriter {
            shared,
            thread: Mutex::new(Some(handle)),
        })
    }

    /// Tells `alert` of this destination's failed writes from now on (the
    /// writer thread calls it, at most once per [`ALERT_INTERVAL`]);
    /// `None` stops telling anyone.
    pub fn set_write_alert(&self, alert: Option<WriteAlert>) {
        *self.shared.alert.lock().unwrap_or_else(|e| e.into_inner()) = alert;
    }

    /// Where this writer writes.
    pub fn destination(&self) -> &Destination {
        &self.shared.dest
    }

    /// Most bytes buffered before lines are dropped.
    pub fn capacity(&self) -> usize {
        self.shared.capacity
    }

    /// Queues `line` plus a `\n` for writing. Never waits for I/O: returns
    /// `false` and counts a drop if the buffer is full or the writer closed.
    pub fn write_line(&self, line: &[u8]) -> bool {
        self.queue(line, false).is_some()
    }

    /// [`LogWriter::write_line`] for a line written without waiting for a
    /// batch to gather (error-log lines).
    pub fn write_line_now(&self, line: &[u8]) -> bool {
        self.queue(line, true).is_some()
    }

    /// [`LogWriter::write_line`], giving the line's number for
    /// [`LogWriter::written`] (`None`: dropped).
    pub fn write_line_seq(&self, line: &[u8]) -> Option<u64> {
        self.queue(line, false)
    }

    fn queue(&self, line: &[u8], urgent: bool) -> Option<u64> {
        let s = &self.shared;
        let mut st = s.lock();
        if st.closing || st.buf.len() + line.len() + 1 > s.capacity {
            drop(st);
            s.dropped.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let was_empty = st.buf.is_empty();
        let below = st.buf.len() < s.batching.bytes;
        let wake_urgent = urgent && !st.urgent;
        st.urgent |= urgent;
        st.buf.extend_from_slice(line);
        st.buf.push(b'\n');
        st.lines += 1;
        st.accepted += 1;
        let filled = below && st.buf.len() >= s.batching.bytes;
        let seq = st.accepted;
        drop(st);
        // The writer sleeps on an empty buffer, then waits for a batch to
        // gather: only the first line of a batch, the one that fills it and
        // the first urgent one (to cut the batch's wait short) need to wake
        // it — no futex call per line under load.
        if was_empty || filled || wake_urgent {
            s.wake.notify_one();
        }
        Some(seq)
    }

    /// The number of the last line accepted so far (by any of the
    /// `write_line` calls), for [`LogWriter::written`]: awaiting it awaits
    /// every line queued before.
    pub fn last_accepted(&self) -> u64 {
        self.shared.lock().accepted
    }

    /// Resolves once line `seq` (from [`LogWriter::write_line_seq`]) has
    /// been handed to `write()`, or the writer is gone; the writer stops
    /// gathering a batch for it. Awaited by a connection before it closes,
    /// so that a client that sees the close finds its line in the file, as
    /// with nginx, which writes before it closes; never a blocking wait.
    pub async fn written(&self, seq: u64) {
        let s = &self.shared;
        loop {
            let notified = s.progress_async.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            {
                let mut st = s.lock();
                if st.done >= seq || st.gone {
                    return;
                }
                st.flush_asked = true;
            }
            s.wake.notify_one();
            notified.await;
        }
    }

    /// Counters.
    pub fn stats(&self) -> WriterStats {
        let s = &self.shared;
        WriterStats {
            written: s.written.load(Ordering::Relaxed),
            dropped: s.dropped.load(Ordering::Relaxed),
            write_errors: s.write_errors.load(Ordering::Relaxed),
        }
    }

    /// Waits until every line accepted so far has been written. For the exit
    /// path and tests only: it waits on the disk.
    pub fn flush(&self) {
        let mut st = self.shared.lock();
        let target = st.accepted;
        st.flush_asked = true;
        self.shared.wake.notify_one();
        while st.done < target && !st.gone {
            st = self
                .shared
                .progress
                .wait(st)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// [`LogWriter::flush`] giving up after `timeout`; `true` if all was written.
    pub fn flush_timeout(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.lock();
        let target = st.accepted;
        st.flush_asked = true;
        self.shared.wake.notify_one();
        while st.done < target && !st.gone {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            st = self
                .shared
                .progress
                .wait_timeout(st, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        st.done >= target
    }

    /// Reopens the file by its path (after log rotation, `SIGUSR1`), on the
    /// writer thread after it wrote what was buffered, and waits for the
    /// outcome. On failure the old file stays in use. A no-op for stderr.
    /// For the signal thread: it waits on the disk.
    pub fn reopen(&self) -> Result<(), SysError> {
        let Destination::File(path) = &self.shared.dest else {
            return Ok(());
        };
        let mut st = self.shared.lock();
        if st.gone {
            return Ok(());
        }
        st.reopen_asked += 1;
        let ticket = st.reopen_asked;
        self.shared.wake.notify_one();
        while st.reopen_done < ticket && !st.gone {
            st = self
                .shared
                .progress
                .wait(st)
                .unwrap_or_else(|e| e.into_inner());
        }
        match st.reopen_error.take() {
            Some(e) => Err(SysError::with_path(OPEN, path, e)),
            None => Ok(()),
        }
    }

    /// Stops accepting lines, writes what is buffered and joins the thread.
    /// For the exit path: it waits on the disk.
    pub fn close(&self) {
        self.shared.lock().closing = true;
        self.shared.wake.notify_one();
        let handle = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}

impl Drop for LogWriter {
    /// Tells the thread to drain and exit, without waiting for it: a stuck
    /// disk must not hang whoever drops the last handle. Call
    /// [`LogWriter::flush`] or [`LogWriter::close`] first to be sure lines
    /// reach the file before the process exits.
    fn drop(&mut self) {
        self.shared.lock().closing = true;
        self.shared.wake.notify_one();
    }
}

/// The writer thread: take the buffer, write it, handle reopen; exit once
/// closing and drained.
/// How long the writer lets lines gather after the first of a batch.
pub const COALESCE_WAIT: Duration = Duration::from_millis(20);
/// A batch this large is written without waiting longer.
pub const COALESCE_BYTES: usize = 32 * 1024;

fn run(shared: &Shared, mut sink: Sink) {
    // Signals belong to the signal thread.
    let _ = crate::sys::signal::block_all_in_thread();
    let mut batch = Vec::new();
    let mut last_alert: Option<Instant> = None;
    let mut st = shared.lock();
    loop {
        while st.buf.is_empty() && st.reopen_asked == st.reopen_done && !st.closing {
            st = shared.wake.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        // Let a batch gather before writing it: loops wake this thread only
        // for the first line of a batch, so a short wait here turns a futex
        // wake and a write() per request into one per interval under load
        // (what nginx's `access_log … flush=` buys). `flush`, `reopen` and
        // `close` notify and cut the wait short.
        let gather = |st: &State| {
            st.buf.len() < shared.batching.bytes
                && st.reopen_asked == st.reopen_done
                && !st.closing
                && !st.flush_asked
                && !st.urgent
        };
        if gather(&st) {
            match shared.batching.wait {
                Some(wait) => {
                    st = shared
                        .wake
                        .wait_timeout(st, wait)
                        .map(|(g, _)| g)
                        .unwrap_or_else(|e| e.into_inner().0);
                }
                None => {
                    while gather(&st) {
                        st = shared.wake.wait(st).unwrap_or_else(|e| e.into_inner());
                    }
                }
            }
        }
        st.flush_asked = false;
        // Double buffering: loops fill one vector while this thread writes
        // the other, and both keep their allocations.
        std::mem::swap(&mut st.buf, &mut batch);
        st.urgent = false;
        let lines = std::mem::take(&mut st.lines);
        let upto = st.accepted;
        let reopen = st.reopen_asked;
        let reopened = reopen != st.reopen_done;
        drop(st);

        if !batch.is_empty() {
            if let Some(level) = shared.batching.gzip {
                batch = gzip_member(&batch, level);
            }
            if let Destination::File(path) = &shared.dest {
                // Tests stall a log's writes as a slow disk would (a no-op
                // outside test builds).
                crate::io::fault::stall(path);
            }
            match sink.write_all(&batch) {
                Ok(()) => {
                    shared.written.fetch_add(lines, Ordering::Relaxed);
                }
                Err(e) => {
                    shared.write_errors.fetch_add(1, Ordering::Relaxed);
                    if last_alert.is_none_or(|t| t.elapsed() >= ALERT_INTERVAL) {
                        let alert = shared
                            .alert
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .clone();
                        if let (Some(alert), Destination::File(path)) = (alert, &shared.dest) {
                            alert(path, &e);
                            last_alert = Some(Instant::now());
                        }
                    }
                }
            }
            batch.clear();
        }
        let mut reopen_error = None;
        if reopened {
            if let (Destination::File(path), Sink::File(f)) = (&shared.dest, &mut sink) {
                match open_file(path) {
                    Ok(new) => *f = new,
                    Err(e) => reopen_error = Some(e.source),
                }
            }
        }

        st = shared.lock();
        st.done = upto;
        if reopened {
            st.reopen_done = reopen;
            st.reopen_error = reopen_error;
        }
        shared.progress.notify_all();
        shared.progress_async.notify_waiters();
        if st.closing && st.buf.is_empty() && st.reopen_asked == st.reopen_done {
            st.gone = true;
            shared.progress.notify_all();
            shared.progress_async.notify_waiters();
            return;
        }
    }
}

/// `bytes` as one gzip member at `level` (1-9), as nginx's buffered gzip
/// access logs write each buffer. Compressing into memory cannot fail; the
/// plain bytes are written if it somehow does.
fn gzip_member(bytes: &[u8], level: u32) -> Vec<u8> {
    use flate2::{Compression, write::GzEncoder};
    let mut enc = GzEncoder::new(
        Vec::with_capacity(bytes.len() / 2 + 64),
        Compression::new(level),
    );
    match enc.write_all(bytes).and_then(|()| enc.finish()) {
        Ok(out) => out,
        Err(_) => bytes.to_vec(),
    }
}

#[cfg(test)]
mod tests;
