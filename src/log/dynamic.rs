//! [`DynamicLogs`]: access logs whose file name has variables
//! (`access_log /logs/$host.log`), written by one thread of their own.
//!
//! A loop hands over the line with the file's name as the request made it;
//! the thread tests the document root (as nginx's `ngx_http_log_script_write`
//! does: no line when it is missing), opens the file (created, appended to),
//! writes and closes it — or keeps it open under `open_log_file_cache`, with
//! nginx's rules (`ngx_open_cached_file` with `of.log`): a file keeps its
//! descriptor once used `min_uses` times within `inactive`, a kept
//! descriptor is trusted for `valid`, a full table closes its least recently
//! used file, and each line closes up to two files unused for `inactive`.
//!
//! Each queued line has a number; [`Progress::written`] resolves once the
//! thread has handled it, so a connection that closes can wait (briefly)
//! for its line as it does for a fixed log's: a client that sees the close
//! finds the line in the file, as with nginx, which writes before closing.
//!
//! This is what `open_log_file_cache` means for nowait: the opens it saves
//! are this thread's, never a loop's. A loop never waits here: the queue is
//! bounded and a full queue drops the line and counts it, as a full
//! [`super::LogWriter`] does.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{ErrorLog, Level};
use crate::sys::file::{FileKind, Links};

/// Lines waiting for the thread, at most; more are dropped.
pub const QUEUE_LINES: usize = 8192;
/// Mode of created log files (nginx's 0644).
const LOG_FILE_MODE: u32 = 0o644;
/// Entries unused for `inactive` closed per line (nginx closes one or two).
const EXPIRE_PER_LINE: usize = 2;

/// `open_log_file_cache` as the thread needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSpec {
    /// Which directive: levels inheriting one share its table.
    pub id: u64,
    /// The most files kept open.
    pub max: usize,
    /// Closed after this long unused.
    pub inactive: Duration,
    /// Uses before a file is kept open.
    pub min_uses: u32,
    /// How long a kept descriptor is trusted.
    pub valid: Duration,
}

/// One line for one file.
pub struct Job {
    /// The file, as the request's variables made its name.
    pub path: PathBuf,
    /// The document root to test first (nginx's `r->root_tested` is false),
    /// with the link rule of the location.
    pub root: Option<(PathBuf, Links)>,
    /// The link rule for the log file itself (`disable_symlinks`).
    pub links: Links,
    /// `open_log_file_cache`, if set where the request ended.
    pub cache: Option<CacheSpec>,
    /// The line, without its newline.
    pub line: Vec<u8>,
    /// Where failures are told (the location's error log).
    pub log: ErrorLog,
    /// The connection's number and the request's context for the error log.
    pub conn: u64,
    /// `, client: …, server: …, request: "…"`.
    pub context: String,
}

/// How far the thread has got through the lines queued.
#[derive(Debug, Default)]
pub struct Progress {
    /// The number of the last line handled (written, or failed and told).
    done: AtomicU64,
    /// The thread has ended.
    gone: AtomicBool,
    /// Woken after each line, for tasks awaiting [`Progress::written`].
    handled: tokio::sync::Notify,
}

impl Progress {
    /// Resolves once line `seq` (from [`DynamicLogs::send`]) has been
    /// handled, or the thread is gone; never a blocking wait.
    pub async fn written(&self, seq: u64) {
        loop {
            let notified = self.handled.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.done.load(Ordering::Acquire) >= seq || self.gone.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }

    fn handled(&self, seq: u64) {
        self.done.store(seq, Ordering::Release);
        self.handled.notify_waiters();
    }

    fn end(&self) {
        self.gone.store(true, Ordering::Release);
        self.handled.notify_waiters();
    }
}

/// The sending side: the queue and the last line number given.
struct Sender {
    tx: Option<SyncSender<(u64, Job)>>,
    last: u64,
}

/// The thread and its queue. Dropping it lets the thread drain and exit.
pub struct DynamicLogs {
    tx: Mutex<Sender>,
    thread: Mutex<Option<JoinHandle<()>>>,
    dropped: AtomicU64,
    progress: Arc<Progress>,
}

impl std::fmt::Debug for DynamicLogs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamicLogs")
            .field("dropped", &self.dropped.load(Ordering::Relaxed))
            .finish()
    }
}

impl DynamicLogs {
    /// Starts the thread `log#dyn`.
    pub fn start() -> std::io::Result<DynamicLogs> {
        let (tx, rx) = mpsc::sync_channel(QUEUE_LINES);
        let progress = Arc::new(Progress::default());
        let theirs = progress.clone();
        let thread = std::thread::Builder::new()
            .name("log#dyn".into())
            .spawn(move || run(rx, &theirs))?;
        Ok(DynamicLogs {
            tx: Mutex::new(Sender {
                tx: Some(tx),
                last: 0,
            }),
            thread: Mutex::new(Some(thread)),
            dropped: AtomicU64::new(0),
            progress,
        })
    }

    /// Queues a line; never waits. Its number, for [`Progress::written`]
    /// on [`DynamicLogs::progress`]; `None` (and a count) when the queue is
    /// full or the thread is gone.
    pub fn send(&self, job: Job) -> Option<u64> {
        let mut guard = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        let seq = guard.last + 1;
        let sent = match guard.tx.as_ref() {
            Some(tx) => match tx.try_send((seq, job)) {
                Ok(()) => true,
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => false,
            },
            None => false,
        };
        if !sent {
            drop(guard);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        guard.last = seq;
        Some(seq)
    }

    /// How far the thread has got, to await a line sent.
    pub fn progress(&self) -> &Arc<Progress> {
        &self.progress
    }

    /// Lines dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Writes what is queued and stops the thread. For the exit path: it
    /// waits on the disk.
    pub fn close(&self) {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).tx.take();
        let handle = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}

/// A kept file.
struct Entry {
    file: Option<File>,
    uses: u32,
    created: Instant,
    accessed: Instant,
}

/// One `open_log_file_cache`'s files.
#[derive(Default)]
struct Table {
    entries: HashMap<PathBuf, Entry>,
}

impl Table {
    /// Closes up to `n` files unused for `inactive`, oldest first.
    fn expire(&mut self, now: Instant, inactive: Duration, n: usize) {
        for _ in 0..n {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.accessed)
                .map(|(p, e)| (p.clone(), e.accessed));
            match oldest {
                Some((p, at)) if now.saturating_duration_since(at) > inactive => {
                    self.entries.remove(&p);
                }
                _ => return,
            }
        }
    }

    /// Closes the least recently used file.
    fn evict(&mut self) {
        if let Some(p) = self
            .entries
            .iter()
            .min_by_key(|(_, e)| e.accessed)
            .map(|(p, _)| p.clone())
        {
            self.entries.remove(&p);
        }
    }
}

fn run(rx: Receiver<(u64, Job)>, progress: &Progress) {
    let _ = crate::sys::signal::block_all_in_thread();
    let mut tables: HashMap<u64, Table> = HashMap::new();
    while let Ok((seq, job)) = rx.recv() {
        write_job(&mut tables, job);
        progress.handled(seq);
    }
    progress.end();
}

/// Opens a log file for appending, creating it 0644, under `links`.
fn open_log(job: &Job) -> std::io::Result<File> {
    if job.links.policy != crate::sys::file::LinkPolicy::Follow {
        return crate::sys::file::open_append_links(&job.path, job.links, LOG_FILE_MODE);
    }
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(LOG_FILE_MODE)
        .custom_flags(libc::O_CLOEXEC)
        .open(&job.path)
}

fn write_job(tables: &mut HashMap<u64, Table>, mut job: Job) {
    if let Some((root, links)) = &job.root {
        let failed = match crate::sys::file::stat_links(root, false, *links) {
            Ok(m) if m.kind == FileKind::Directory => None,
            Ok(_) => Some(std::io::Error::from_raw_os_error(libc::ENOTDIR)),
            Err(e) => Some(e),
        };
        if let Some(e) = failed {
            job.log.log(
                Level::Error,
                Some(job.conn),
                format_args!(
                    "testing \"{}\" existence failed ({}){}",
                    root.display(),
                    crate::sys::error::errno_text(&e),
                    job.context
                ),
            );
            return;
        }
    }
    job.line.push(b'\n');
    let now = Instant::now();
    let Some(spec) = job.cache else {
        match open_log(&job) {
            Ok(mut f) => {
                let _ = f.write_all(&job.line);
            }
            Err(e) => open_failed(&job, &e),
        }
        return;
    };
    let table = tables.entry(spec.id).or_default();
    if let Some(e) = table.entries.get_mut(&job.path) {
        e.uses = e.uses.saturating_add(1);
        e.accessed = now;
        let fresh = now.saturating_duration_since(e.created) < spec.valid;
        if let (Some(f), true) = (e.file.as_mut(), fresh) {
            let _ = f.write_all(&job.line);
            table.expire(now, spec.inactive, EXPIRE_PER_LINE);
            return;
        }
        match open_log(&job) {
            Ok(mut f) => {
                let _ = f.write_all(&job.line);
                e.file = (e.uses >= spec.min_uses).then_some(f);
                e.created = now;
            }
            Err(err) => {
                table.entries.remove(&job.path);
                open_failed(&job, &err);
            }
        }
        table.expire(now, spec.inactive, EXPIRE_PER_LINE);
        return;
    }
    match open_log(&job) {
        Ok(mut f) => {
            let _ = f.write_all(&job.line);
            if table.entries.len() >= spec.max {
                table.evict();
                table.expire(now, spec.inactive, EXPIRE_PER_LINE);
            }
            table.entries.insert(
                job.path.clone(),
                Entry {
                    file: (1 >= spec.min_uses).then_some(f),
                    uses: 1,
                    created: now,
                    accessed: now,
                },
            );
        }
        Err(err) => open_failed(&job, &err),
    }
    table.expire(now, spec.inactive, EXPIRE_PER_LINE);
}

/// nginx's `[crit] open() "…" failed (…)` for a log file it could not open.
fn open_failed(job: &Job, e: &std::io::Error) {
    let call = if job.links.policy == crate::sys::file::LinkPolicy::Follow {
        "open"
    } else {
        "openat"
    };
    job.log.log(
        Level::Crit,
        Some(job.conn),
        format_args!(
            "{call}() \"{}\" failed ({}){}",
            job.path.display(),
            crate::sys::error::errno_text(e),
            job.context
        ),
    );
}

/// Shared handle type the server keeps.
pub type Shared = Arc<DynamicLogs>;

#[cfg(test)]
mod tests {
    use super::*;

    fn job(path: &std::path::Path, cache: Option<CacheSpec>, line: &str) -> Job {
        Job {
            path: path.to_path_buf(),
            root: None,
            links: Links::FOLLOW,
            cache,
            line: line.as_bytes().to_vec(),
            log: ErrorLog::new(),
            conn: 1,
            context: String::new(),
        }
    }

    #[test]
    fn lines_reach_files_named_per_line() {
        let dir = std::env::temp_dir().join(format!("nowait-dyn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let logs = DynamicLogs::start().unwrap();
        assert_eq!(logs.send(job(&dir.join("a.log"), None, "one")), Some(1));
        assert_eq!(logs.send(job(&dir.join("b.log"), None, "two")), Some(2));
        assert_eq!(logs.send(job(&dir.join("a.log"), None, "three")), Some(3));
        logs.close();
        assert_eq!(
            std::fs::read_to_string(dir.join("a.log")).unwrap(),
            "one\nthree\n"
        );
        assert_eq!(std::fs::read_to_string(dir.join("b.log")).unwrap(), "two\n");
        assert_eq!(logs.send(job(&dir.join("a.log"), None, "late")), None);
        assert_eq!(logs.dropped(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A connection that closes awaits its line: once `written` resolves,
    /// the line is in its file (nginx writes before it closes; access_log.t
    /// renames the directory as soon as it has the response).
    #[test]
    fn a_line_awaited_is_in_its_file() {
        let dir = std::env::temp_dir().join(format!("nowait-dynwait-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let logs = DynamicLogs::start().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for i in 0..50 {
            let seq = logs
                .send(job(&dir.join(format!("{i}.log")), None, "line"))
                .expect("queued");
            rt.block_on(logs.progress().written(seq));
            assert_eq!(
                std::fs::read_to_string(dir.join(format!("{i}.log"))).unwrap(),
                "line\n",
                "line {i}"
            );
        }
        logs.close();
        // The thread is gone: a wait for a line never sent ends at once.
        rt.block_on(logs.progress().written(1_000));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// nginx's access_log.t "cache" case: with `max=3 min_uses=2`, files
    /// used twice keep their descriptor and go on receiving lines after
    /// their directory is renamed; the least recently used is closed when a
    /// fourth is added.
    #[test]
    fn the_cache_keeps_files_used_often_enough() {
        let base = std::env::temp_dir().join(format!("nowait-dyncache-{}", std::process::id()));
        let dir = base.join("dir");
        std::fs::create_dir_all(&dir).unwrap();
        let spec = CacheSpec {
            id: 1,
            max: 3,
            inactive: Duration::from_secs(20),
            min_uses: 2,
            valid: Duration::from_secs(60),
        };
        let mut tables = HashMap::new();
        for name in ["lru", "lru", "once", "first", "first", "second", "second"] {
            write_job(&mut tables, job(&dir.join(name), Some(spec), "/"));
        }
        let moved = base.join("dir_moved");
        std::fs::rename(&dir, &moved).unwrap();
        for name in ["lru", "once", "first", "second"] {
            write_job(&mut tables, job(&dir.join(name), Some(spec), "/"));
        }
        let lines = |n: &str| {
            std::fs::read_to_string(moved.join(n))
                .unwrap()
                .lines()
                .count()
        };
        assert_eq!(lines("lru"), 2);
        assert_eq!(lines("once"), 1);
        assert_eq!(lines("first"), 3);
        assert_eq!(lines("second"), 3);
        std::fs::remove_dir_all(&base).unwrap();
    }
}
