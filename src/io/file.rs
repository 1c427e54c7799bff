//! The file operations the server makes, each run where `aio` says, and —
//! nowait's addition — first tried on the loop in a form that cannot block.
//!
//! | `aio` | `aio_fast_path` | where an operation runs |
//! |---|---|---|
//! | `off` (nginx's default) | — | on the event loop, blocking, as nginx does |
//! | `threads` | `off` | always on the pool, as nginx (plus `open`/`stat` on the pool, as Cloudflare's patch) |
//! | `threads` | `on` (default) | on the loop when it cannot block, on the pool only when it would |
//!
//! The fast paths: `open` is `openat2(RESOLVE_CACHED)`, which fails with
//! `EAGAIN` when the path walk needs I/O; `stat` is the same with `O_PATH`
//! then `fstat`; `read` is `preadv2(RWF_NOWAIT)`, which fails with `EAGAIN`
//! (or reads short) when the data is not in the page cache or not yet read
//! from the disk; a body is copied from memory on the loop the same way
//! ([`FileLayer::body_now`], `sendfile off`) or `sendfile()`d from the
//! loop after a probe found it up to date ([`FileLayer::resident_now`],
//! `sendfile on`); only what is not in memory is `sendfile`d by the pool.
//! A missing call (`ENOSYS`) or a file system that refuses one
//! (`EOPNOTSUPP`, `EINVAL`) sends the operation to the pool — never an
//! error to the client — and the call is not tried again by this process.
//!
//! Every pool task for a file carries the file's rank, how popular it is
//! lately ([`super::popularity`]): an open counts one access of its path,
//! and the pool takes a popular file's miss (an open, a read, a `sendfile`
//! slice) before older misses of colder files. Cache hits read through the
//! same calls, so a popular cache entry ranks the same way.
//!
//! What must not happen here: an unbounded wait for a pool (a full queue fails
//! at once, see [`super::pool`]), and a descriptor used by a pool thread after
//! its owner closed it (tasks hold `Arc`s of the descriptors they use).

use std::fmt;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::closer::CloseOffLoop;
use super::fault;
use super::popularity;
use super::read_ahead;
use super::{Lane, Pool, SubmitError, TaskError};
use crate::metrics::worker::{self as metrics, FastOp, FastOutcome};
use crate::sys::error::SysError;
use crate::sys::file::{self as sysfile, FileMeta, LinkPolicy, Links};

/// A file opened for reading, with its metadata.
#[derive(Clone, Debug)]
pub struct OpenFile {
    /// The descriptor, shared with pool tasks that use it.
    pub fd: Arc<CloseOffLoop<OwnedFd>>,
    /// `fstat` of the descriptor at open time.
    pub meta: FileMeta,
    /// The path it was opened by, for error messages.
    pub path: Arc<Path>,
}

/// A file reopened for `directio`: a descriptor of its own with `O_DIRECT`
/// (nginx sets the flag on its one descriptor; here the shared one keeps
/// serving the fast paths, which must never meet the flag: a
/// `preadv2(RWF_NOWAIT)` with `O_DIRECT` still waits for the disk).
pub struct DirectFile {
    /// The descriptor with `O_DIRECT`.
    fd: Arc<CloseOffLoop<OwnedFd>>,
    /// The path, for error messages and the pool's order.
    path: Arc<Path>,
}

/// What an open found.
#[derive(Debug)]
pub enum Opened {
    /// A regular file, open for reading.
    Regular(OpenFile),
    /// Anything else (a directory, a FIFO, a device): never opened for
    /// reading, only its metadata is known.
    Other(FileMeta),
}

/// Why a file operation failed.
#[derive(Debug)]
pub enum FileError {
    /// The system call failed; carries the call, path and errno.
    Sys(SysError),
    /// The pool refused the task (queue full): the request fails at once.
    Overflow(SubmitError),
    /// The pool task for the operation named (`open`, `read`…) panicked,
    /// or was dropped unrun: no result (the pool keeps its threads).
    Lost(&'static str, TaskError),
}

impl FileError {
    /// The errno of a failed system call, if that is what failed.
    pub fn errno(&self) -> Option<i32> {
        match self {
            FileError::Sys(e) => e.errno(),
            _ => None,
        }
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Sys(e) => e.fmt(f),
            FileError::Overflow(e) => e.fmt(f),
            FileError::Lost(what, why) => write!(f, "{why} during {what}"),
        }
    }
}

/// Whether each fast-path call still looks supported. Cleared the first time
/// the kernel or a file system says it is not, so the loop stops paying for
/// a call that always fails.
struct Support {
    openat2: AtomicBool,
    preadv2: AtomicBool,
    cachestat: AtomicBool,
}

static SUPPORT: Support = Support {
    openat2: AtomicBool::new(true),
    preadv2: AtomicBool::new(true),
    cachestat: AtomicBool::new(true),
};

/// Whether `e` says "this call is not available here" rather than "no".
fn unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSYS | libc::EOPNOTSUPP | libc::EINVAL)
    )
}

fn would_block(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EAGAIN)
}

/// Where one request's file operations run.
#[derive(Clone, Copy)]
pub struct FileLayer<'a> {
    /// The pool for `aio threads`; `None` for `aio off`.
    pub pool: Option<&'a Arc<Pool>>,
    /// `aio_fast_path`: try the non-blocking form on the loop first.
    pub fast: bool,
    /// `aio_write`: writes (temp files, the cache) go to the pool too.
    pub write: bool,
}

/// What a fast path concluded.
enum Fast<T> {
    /// Answered on the loop (success or a definite error).
    Done(T),
    /// Needs the slow path.
    Slow,
}

/// What a pool task does, for the pool's cold limit.
#[derive(Clone, Copy)]
enum Work {
    /// Reads file data (a read or `sendfile()`).
    Data,
    /// Anything else (open, `stat`, …).
    Other,
}

impl<'a> FileLayer<'a> {
    /// A layer that runs everything on the loop (`aio off`).
    pub const INLINE: FileLayer<'static> = FileLayer {
        pool: None,
        fast: false,
        write: false,
    };

    /// Whether fast paths apply: only with a pool to fall back on.
    fn fast_enabled(&self) -> bool {
        self.fast && self.pool.is_some()
    }

    /// Runs `f` on the pool, or here when there is none.
    async fn run<T, F>(&self, what: &'static str, f: F) -> Result<T, FileError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.run_in(Lane::Normal, 0, Work::Other, what, f).await
    }

    /// `path`'s popularity, the rank of its misses in the pool (0 without a
    /// pool: nothing to order).
    fn rank_of(&self, path: &Path) -> u8 {
        if self.pool.is_some() {
            popularity::rank(path)
        } else {
            0
        }
    }

    /// Counts an open of `path` in the popularity sketch (with a pool only)
    /// and returns its rank.
    fn touch(&self, path: &Path) -> u8 {
        if self.pool.is_some() {
            popularity::touch(path)
        } else {
            0
        }
    }

    /// Runs a read-side `f` where `aio` says (for sibling modules).
    pub(super) async fn run_read<T, F>(&self, what: &'static str, f: F) -> Result<T, FileError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.run(what, f).await
    }

    /// Whether write-side operations run on a pool thread.
    pub(super) fn writes_in_pool(&self) -> bool {
        self.pool.is_some() && self.write
    }

    /// Runs a write-side `f` (create, write, rename, unlink): on the pool
    /// under `aio threads` with `aio_write on`, else on the loop, as nginx.
    pub(super) async fn run_write<T, F>(&self, what: &'static str, f: F) -> Result<T, FileError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        match self.pool {
            Some(_) if self.write => self.run(what, f).await,
            _ => Ok(f()),
        }
    }

    /// `realpath()` of `path` (`$realpath_root`): on the loop when every
    /// component is in the dentry cache (`openat2(O_PATH, RESOLVE_CACHED)`,
    /// then the name of the descriptor), else where `aio` says.
    pub async fn realpath(&self, path: &Path) -> Result<PathBuf, FileError> {
        if self.fast_enabled() && fault::stall_for(path).is_none() {
            if let Ok(fd) = sysfile::open_cached(path) {
                use std::os::fd::AsRawFd;
                if let Ok(p) = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())) {
                    return Ok(p);
                }
            }
        }
        let p = path.to_path_buf();
        self.run("realpath", move || {
            fault::stall(&p);
            std::fs::canonicalize(&p)
                .map_err(|e| FileError::Sys(SysError::with_path("realpath", p, e)))
        })
        .await?
    }

    /// [`run`](Self::run) in the pool's `lane` at `rank` as `work` (see
    /// [`Pool::submit_ranked`]; a read of file data waits for the pool's
    /// cold limit, [`Pool::submit_read`]), or here when there is no pool.
    async fn run_in<T, F>(
        &self,
        lane: Lane,
        rank: u8,
        work: Work,
        what: &'static str,
        f: F,
    ) -> Result<T, FileError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let Some(pool) = self.pool else {
            return Ok(f());
        };
        let done = match work {
            Work::Data => pool.submit_read(lane, rank, f),
            Work::Other => pool.submit_ranked(lane, rank, f),
        }
        .map_err(FileError::Overflow)?;
        done.await.map_err(|why| FileError::Lost(what, why))
    }

    /// Opens `path` for reading if it is a regular file (see
    /// [`sysfile::open_regular`]); otherwise tells what it is.
    pub async fn open(&self, path: &Path) -> Result<Opened, FileError> {
        let rank = self.touch(path);
        let owned: Arc<Path> = Arc::from(path);
        if self.fast_enabled() {
            if let Fast::Done(r) = open_fast(&owned) {
                return r;
            }
        }
        let p = owned.clone();
        let checked = self.pool.is_some();
        self.run_in(Lane::Normal, rank, Work::Other, "open", move || {
            open_slow(p, checked)
        })
        .await?
    }

    /// [`open`](Self::open) under the link rule `links` (`disable_symlinks`):
    /// `Refuse` has a fast path (`openat2(RESOLVE_NO_SYMLINKS|RESOLVE_CACHED)`);
    /// `RefuseIfNotOwner` walks the path where `aio` says.
    pub async fn open_links(&self, path: &Path, links: Links) -> Result<Opened, FileError> {
        if links.policy == LinkPolicy::Follow {
            return self.open(path).await;
        }
        let rank = self.touch(path);
        let owned: Arc<Path> = Arc::from(path);
        if self.fast_enabled() && fault::stall_for(path).is_none() {
            match sysfile::open_regular_links(&owned, true, links) {
                Ok(found) => {
                    metrics::fast(FastOp::Open, FastOutcome::Hit);
                    return Ok(opened(found, &owned, true));
                }
                Err(e) if would_block(&e) || unsupported(&e) => {
                    metrics::fast(FastOp::Open, FastOutcome::Miss);
                }
                Err(e) => {
                    metrics::fast(FastOp::Open, FastOutcome::Hit);
                    return Err(open_error(&owned, e));
                }
            }
        }
        let p = owned.clone();
        let checked = self.pool.is_some();
        self.run_in(Lane::Normal, rank, Work::Other, "open", move || {
            fault::stall(&p);
            sysfile::open_regular_links(&p, false, links)
                .map(|found| opened(found, &p, checked))
                .map_err(|e| open_error(&p, e))
        })
        .await?
    }

    /// [`stat`](Self::stat) under the link rule `links`.
    pub async fn stat_links(&self, path: &Path, links: Links) -> Result<FileMeta, FileError> {
        if links.policy == LinkPolicy::Follow {
            return self.stat(path).await;
        }
        if self.fast_enabled() && fault::stall_for(path).is_none() {
            match sysfile::stat_links(path, true, links) {
                Ok(m) => {
                    metrics::fast(FastOp::Stat, FastOutcome::Hit);
                    return Ok(m);
                }
                Err(e) if would_block(&e) || unsupported(&e) => {
                    metrics::fast(FastOp::Stat, FastOutcome::Miss);
                }
                Err(e) => {
                    metrics::fast(FastOp::Stat, FastOutcome::Hit);
                    return Err(stat_error(path, e, links));
                }
            }
        }
        let p: PathBuf = path.to_path_buf();
        self.run("stat", move || {
            fault::stall(&p);
            sysfile::stat_links(&p, false, links).map_err(|e| stat_error(&p, e, links))
        })
        .await?
    }

    /// `stat()` of `path` (following symlinks), for directory and index checks.
    pub async fn stat(&self, path: &Path) -> Result<FileMeta, FileError> {
        if self.fast_enabled() {
            if let Fast::Done(r) = stat_fast(path) {
                return r;
            }
        }
        let p: PathBuf = path.to_path_buf();
        self.run("stat", move || {
            fault::stall(&p);
            sysfile::stat(&p).map_err(|e| FileError::Sys(SysError::with_path(sysfile::STAT, p, e)))
        })
        .await?
    }

    /// Opens `file` again with `O_DIRECT` for `directio`, where `aio` says:
    /// `Ok(None)` when its path names another file now (the response reads
    /// the one it opened, as before); an error (a file system without direct
    /// I/O gives `fcntl(O_DIRECT) "…" failed (22: Invalid argument)`, as
    /// nginx logs it) leaves the caller reading without it.
    pub async fn open_direct(&self, file: &OpenFile) -> Result<Option<DirectFile>, FileError> {
        let path = file.path.clone();
        let (dev, ino) = (file.meta.dev, file.meta.ino);
        let rank = self.rank_of(&path);
        let checked = self.pool.is_some();
        self.run_in(Lane::Normal, rank, Work::Other, "open", move || {
            fault::stall(&path);
            let fd = sysfile::open_read(&path).map_err(|e| {
                FileError::Sys(SysError::with_path(sysfile::OPEN, path.to_path_buf(), e))
            })?;
            let meta = sysfile::fstat(&fd).map_err(|e| {
                FileError::Sys(SysError::with_path(sysfile::FSTAT, path.to_path_buf(), e))
            })?;
            if (meta.dev, meta.ino) != (dev, ino) {
                return Ok(None);
            }
            sysfile::set_direct(&fd).map_err(|e| {
                let mut err = SysError::with_path(sysfile::FCNTL, path.to_path_buf(), e);
                err.arg = Some(sysfile::O_DIRECT_ARG.to_owned());
                FileError::Sys(err)
            })?;
            let fd = if checked {
                CloseOffLoop::new(fd)
            } else {
                CloseOffLoop::plain(fd)
            };
            Ok(Some(DirectFile {
                fd: Arc::new(fd),
                path,
            }))
        })
        .await?
    }

    /// Reads up to `len` bytes at `off` of a file opened for `directio`:
    /// the span around them aligned to `align` (a power of two), into a
    /// buffer aligned to it, where `aio` says (never by a fast path: an
    /// `O_DIRECT` read always meets the disk); fewer bytes mean the end of
    /// the file.
    pub async fn read_direct(
        &self,
        lane: Lane,
        file: &DirectFile,
        off: u64,
        len: usize,
        align: u64,
    ) -> Result<Vec<u8>, FileError> {
        let fd = file.fd.clone();
        let path = file.path.clone();
        let rank = self.rank_of(&path);
        self.run_in(lane, rank, Work::Data, "read", move || {
            fault::stall(&path);
            read_aligned(&*fd, off, len, align).map_err(|e| {
                FileError::Sys(SysError::with_path(sysfile::PREAD, path.to_path_buf(), e))
            })
        })
        .await?
    }

    /// Reads up to `len` bytes at `off`; a short result means end of file.
    pub async fn read_at(
        &self,
        file: &OpenFile,
        len: usize,
        off: u64,
    ) -> Result<Vec<u8>, FileError> {
        self.read_append(file, Vec::with_capacity(len), len, off)
            .await
    }

    /// Reads up to `len` bytes at `off` onto the end of `buf` (e.g. a
    /// response head, so a small file goes out in one write without a copy
    /// between buffers); fewer bytes mean end of file.
    pub async fn read_append(
        &self,
        file: &OpenFile,
        buf: Vec<u8>,
        len: usize,
        off: u64,
    ) -> Result<Vec<u8>, FileError> {
        self.read_append_in(Lane::Normal, file, buf, len, off).await
    }

    /// [`read_append`](Self::read_append), on the pool in `lane`.
    pub async fn read_append_in(
        &self,
        lane: Lane,
        file: &OpenFile,
        mut buf: Vec<u8>,
        len: usize,
        off: u64,
    ) -> Result<Vec<u8>, FileError> {
        let base = buf.len();
        buf.resize(base + len, 0);
        let mut done = 0;
        if self.fast_enabled() {
            done = read_fast(file, &mut buf[base..], off);
            if done == len {
                return Ok(buf);
            }
        }
        let fd = file.fd.clone();
        let path = file.path.clone();
        let rank = self.rank_of(&path);
        let ahead = read_ahead::plan(rank, off + done as u64, (len - done) as u64, file.meta.size);
        self.run_in(lane, rank, Work::Data, "read", move || {
            fault::stall(&path);
            if let Some(range) = ahead {
                read_ahead::advise(&*fd, popularity::key(&path), range);
            }
            while done < len {
                match sysfile::pread(&*fd, &mut buf[base + done..], off + done as u64) {
                    Ok(0) => break,
                    Ok(n) => done += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        return Err(FileError::Sys(SysError::with_path(
                            sysfile::PREAD,
                            path.to_path_buf(),
                            e,
                        )));
                    }
                }
            }
            buf.truncate(base + done);
            Ok(buf)
        })
        .await?
    }

    /// The loop's part of sending a body under `aio threads` with the fast path:
    /// appends to `buf` what of `len` bytes at `off` is in memory and up to
    /// date, without waiting (`preadv2(RWF_NOWAIT)`), and returns how much.
    /// 0 means the next bytes need the disk: the caller hands the next slice
    /// to the pool.
    ///
    /// This replaces a `sendfile()` on the loop after `cachestat()` said the
    /// slice was resident: measured under load, that `sendfile()` still
    /// waited, on pages that were present but locked under read-ahead I/O.
    /// Copying from memory costs one `memcpy`; waiting costs every connection
    /// of the loop.
    pub fn body_now(&self, file: &OpenFile, buf: &mut Vec<u8>, len: usize, off: u64) -> usize {
        if !body_may_try(file, off, len) {
            return 0;
        }
        let mut done = 0;
        while done < len {
            match sysfile::preadv2_nowait_append(&*file.fd, buf, len - done, off + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    if unsupported(&e) {
                        SUPPORT.preadv2.store(false, Ordering::Relaxed);
                    }
                    break;
                }
            }
        }
        metrics::fast(
            FastOp::Body,
            if done > 0 {
                FastOutcome::Hit
            } else {
                FastOutcome::Miss
            },
        );
        done
    }

    /// The loop's part of sending a body with `sendfile on` under `aio
    /// threads` with the fast path: how many of `len` bytes at `off` are in
    /// memory and up to date now, so that a `sendfile()` of that many bytes
    /// on the loop finds every page ready and never waits (see
    /// [`sysfile::probe_nowait`] and `docs/architecture.md`, "the file
    /// layer"). 0 means the next bytes need the disk (or the file ended):
    /// the caller hands the next slice to the pool.
    ///
    /// `cachestat()` cannot answer this: it counts pages present, and a page
    /// under read-ahead I/O is present, locked and not up to date — the page
    /// `sendfile()` would wait on. `mincore()` reports up to date, but only
    /// to a file's owner or writers: to a worker that runs as `user` it
    /// says every page is resident.
    pub fn resident_now(&self, file: &OpenFile, off: u64, len: usize) -> usize {
        if !body_may_try(file, off, len) {
            return 0;
        }
        let ready = PROBE_SINK.with(|sink| {
            let mut sink = sink.borrow_mut();
            loop {
                match sysfile::probe_nowait(&*file.fd, &mut sink[..], off, len) {
                    Ok(n) => return n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        if unsupported(&e) {
                            SUPPORT.preadv2.store(false, Ordering::Relaxed);
                        }
                        return 0;
                    }
                }
            }
        });
        metrics::fast(
            FastOp::Body,
            if ready > 0 {
                FastOutcome::Hit
            } else {
                FastOutcome::Miss
            },
        );
        ready
    }

    /// One `sendfile()` of up to `len` bytes at `off` into the non-blocking
    /// socket `sock`, on the pool in `lane` (or the loop under `aio off`).
    /// `Ok(0)` means the file ended early (truncated); `EAGAIN` comes back as
    /// an error for the caller to wait for writability.
    pub async fn sendfile(
        &self,
        lane: Lane,
        sock: &Arc<OwnedFd>,
        file: &OpenFile,
        off: u64,
        len: usize,
    ) -> Result<usize, FileError> {
        let sock = sock.clone();
        let fd = file.fd.clone();
        let path = file.path.clone();
        let rank = self.rank_of(&path);
        let ahead = read_ahead::plan(rank, off, len as u64, file.meta.size);
        self.run_in(lane, rank, Work::Data, "sendfile", move || {
            fault::stall(&path);
            if let Some(range) = ahead {
                read_ahead::advise(&*fd, popularity::key(&path), range);
            }
            let mut o = off;
            sysfile::sendfile(&*sock, &*fd, &mut o, len).map_err(|e| {
                FileError::Sys(SysError::with_path(
                    sysfile::SENDFILE,
                    path.to_path_buf(),
                    e,
                ))
            })
        })
        .await?
    }
}

/// Bytes of the buffer [`FileLayer::resident_now`] probes through: small
/// enough to stay in the CPU's first-level cache, so a probe costs one read
/// of the page cache and no stores to memory.
const PROBE_SINK_SIZE: usize = 32 * 1024;

/// The most [`FileLayer::resident_now`] probes at once.
pub const PROBE_MAX: usize = PROBE_SINK_SIZE * sysfile::PROBE_IOVECS;

thread_local! {
    /// Each loop thread's probe buffer; its contents are never read.
    static PROBE_SINK: std::cell::RefCell<Box<[u8]>> =
        std::cell::RefCell::new(vec![0u8; PROBE_SINK_SIZE].into_boxed_slice());
}

/// The descriptor of a file opened for reading: its last close checked for
/// a nameless file when a pool serves the location (see `io::closer`),
/// closed where it falls under `aio off`.
fn close_rule(fd: OwnedFd, checked: bool) -> Arc<CloseOffLoop<OwnedFd>> {
    Arc::new(if checked {
        CloseOffLoop::new(fd)
    } else {
        CloseOffLoop::plain(fd)
    })
}

/// What an open under a link rule found, as an [`Opened`].
fn opened(found: (Option<OwnedFd>, FileMeta), path: &Arc<Path>, checked: bool) -> Opened {
    match found {
        (Some(fd), meta) => Opened::Regular(OpenFile {
            fd: close_rule(fd, checked),
            meta,
            path: path.clone(),
        }),
        (None, meta) => Opened::Other(meta),
    }
}

/// A failed open under a link rule, named as nginx names it: `openat()`
/// when links were checked.
fn open_error(path: &Path, e: io::Error) -> FileError {
    FileError::Sys(SysError::with_path(OPENAT, path.to_path_buf(), e))
}

/// A failed stat under a link rule (`openat()` when links were checked).
fn stat_error(path: &Path, e: io::Error, links: Links) -> FileError {
    let call = if links.policy == LinkPolicy::Follow {
        sysfile::STAT
    } else {
        OPENAT
    };
    FileError::Sys(SysError::with_path(call, path.to_path_buf(), e))
}

/// nginx's name for the call that failed when symbolic links are checked.
const OPENAT: &str = "openat";

/// The blocking open, for the pool or for `aio off` (`checked`: the pool's,
/// see [`close_rule`]).
fn open_slow(p: Arc<Path>, checked: bool) -> Result<Opened, FileError> {
    fault::stall(&p);
    match sysfile::open_regular(&p, false) {
        Ok((Some(fd), meta)) => Ok(Opened::Regular(OpenFile {
            fd: close_rule(fd, checked),
            meta,
            path: p,
        })),
        Ok((None, meta)) => Ok(Opened::Other(meta)),
        Err(e) => Err(FileError::Sys(SysError::with_path(
            sysfile::OPEN,
            p.to_path_buf(),
            e,
        ))),
    }
}

/// `openat2(RESOLVE_CACHED)` and `fstat` on the loop (see
/// [`sysfile::open_regular`]). A definite answer (the file, or
/// an error such as `ENOENT` from a cached negative entry) is final; `EAGAIN`
/// and unsupported calls go to the pool.
fn open_fast(p: &Arc<Path>) -> Fast<Result<Opened, FileError>> {
    let stalled = fault::stall_for(p).is_some();
    if !SUPPORT.openat2.load(Ordering::Relaxed) || stalled {
        let outcome = if stalled {
            FastOutcome::Miss
        } else {
            FastOutcome::Unsupported
        };
        metrics::fast(FastOp::Open, outcome);
        return Fast::Slow;
    }
    match sysfile::open_regular(p, true) {
        Ok((fd, meta)) => {
            metrics::fast(FastOp::Open, FastOutcome::Hit);
            Fast::Done(Ok(match fd {
                Some(fd) => Opened::Regular(OpenFile {
                    fd: Arc::new(CloseOffLoop::new(fd)),
                    meta,
                    path: p.clone(),
                }),
                None => Opened::Other(meta),
            }))
        }
        Err(e) if would_block(&e) => {
            metrics::fast(FastOp::Open, FastOutcome::Miss);
            Fast::Slow
        }
        Err(e) if unsupported(&e) => {
            SUPPORT.openat2.store(false, Ordering::Relaxed);
            metrics::fast(FastOp::Open, FastOutcome::Unsupported);
            Fast::Slow
        }
        Err(e) => {
            metrics::fast(FastOp::Open, FastOutcome::Hit);
            Fast::Done(Err(FileError::Sys(SysError::with_path(
                sysfile::OPEN,
                p.to_path_buf(),
                e,
            ))))
        }
    }
}

/// `openat2(O_PATH, RESOLVE_CACHED)` + `fstat` on the loop.
fn stat_fast(p: &Path) -> Fast<Result<FileMeta, FileError>> {
    if !SUPPORT.openat2.load(Ordering::Relaxed) || fault::stall_for(p).is_some() {
        metrics::fast(
            FastOp::Stat,
            if fault::stall_for(p).is_some() {
                FastOutcome::Miss
            } else {
                FastOutcome::Unsupported
            },
        );
        return Fast::Slow;
    }
    match sysfile::stat_cached(p) {
        Ok(m) => {
            metrics::fast(FastOp::Stat, FastOutcome::Hit);
            Fast::Done(Ok(m))
        }
        Err(e) if would_block(&e) => {
            metrics::fast(FastOp::Stat, FastOutcome::Miss);
            Fast::Slow
        }
        Err(e) if unsupported(&e) => {
            SUPPORT.openat2.store(false, Ordering::Relaxed);
            metrics::fast(FastOp::Stat, FastOutcome::Unsupported);
            Fast::Slow
        }
        Err(e) => {
            metrics::fast(FastOp::Stat, FastOutcome::Hit);
            Fast::Done(Err(FileError::Sys(SysError::with_path(
                sysfile::STAT,
                p.to_path_buf(),
                e,
            ))))
        }
    }
}

/// `preadv2(RWF_NOWAIT)` on the loop until it would block; returns how many
/// bytes are in `buf` (all of them, or fewer when the rest is not cached or
/// the file ended — the slow path tells those apart).
/// Reads up to `len` bytes at `off` of `fd` the way `O_DIRECT` takes it:
/// the whole blocks of `align` bytes around them into a buffer aligned to
/// `align` (a power of two), then the bytes asked for out of it. Fewer
/// than `len` mean the end of the file.
fn read_aligned(
    fd: impl std::os::fd::AsFd,
    off: u64,
    len: usize,
    align: u64,
) -> io::Result<Vec<u8>> {
    let start = off - off % align;
    let end = (off + len as u64).div_ceil(align) * align;
    let span = (end - start) as usize;
    let align = align as usize;
    let mut raw = vec![0u8; span + align];
    let pad = raw.as_ptr().align_offset(align);
    let buf = &mut raw[pad..pad + span];
    let mut done = 0;
    while done < span {
        match sysfile::pread(&fd, &mut buf[done..], start + done as u64) {
            Ok(0) => break,
            Ok(n) => {
                done += n;
                // Short of a whole block: the end of the file (the next
                // offset would not be aligned).
                if n % align != 0 {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    let from = (off - start) as usize;
    let to = done.min(from + len);
    Ok(buf.get(from..to).map(<[u8]>::to_vec).unwrap_or_default())
}

fn read_fast(file: &OpenFile, buf: &mut [u8], off: u64) -> usize {
    if !SUPPORT.preadv2.load(Ordering::Relaxed) || fault::stall_for(&file.path).is_some() {
        metrics::fast(
            FastOp::Read,
            if fault::stall_for(&file.path).is_some() {
                FastOutcome::Miss
            } else {
                FastOutcome::Unsupported
            },
        );
        return 0;
    }
    let mut done = 0;
    while done < buf.len() {
        match sysfile::preadv2_nowait(&*file.fd, &mut buf[done..], off + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if unsupported(&e) => {
                SUPPORT.preadv2.store(false, Ordering::Relaxed);
                metrics::fast(FastOp::Read, FastOutcome::Unsupported);
                return done;
            }
            Err(_) => break,
        }
    }
    let outcome = if done == buf.len() {
        FastOutcome::Hit
    } else {
        FastOutcome::Miss
    };
    metrics::fast(FastOp::Read, outcome);
    done
}

/// Whether every page of `len` bytes at `off` is in the page cache, when
/// `cachestat()` may be asked (the file's owner or writers only); `None`
/// when it may not. Present is not the same as readable without waiting: a
/// page under read-ahead I/O is present and locked. This only spares a
/// doomed `preadv2()`; [`FileLayer::body_now`] relies on `RWF_NOWAIT`.
fn all_present(file: &OpenFile, off: u64, len: u64) -> Option<bool> {
    if len == 0 {
        return Some(true);
    }
    if !SUPPORT.cachestat.load(Ordering::Relaxed) || !may_cachestat(&file.meta) {
        return None;
    }
    let page = sysfile::page_size();
    let first = off / page;
    let last = (off + len - 1) / page;
    match sysfile::cachestat(&*file.fd, first * page, (last - first + 1) * page) {
        Ok(cs) => Some(cs.cached > last - first),
        Err(e) => {
            if unsupported(&e) {
                SUPPORT.cachestat.store(false, Ordering::Relaxed);
            }
            None
        }
    }
}

/// Whether `cachestat()` can answer for a file like `meta` opened for
/// reading: the kernel answers its owner, a capable user, or one that may
/// write it, and refuses everyone else with `EPERM` — the usual case of
/// files owned by a deployer and served as `nobody`, where asking would
/// cost a failed system call per body step. Group write permission is not
/// resolved against this process's groups: such a file is asked.
fn may_cachestat(meta: &FileMeta) -> bool {
    thread_local! {
        /// This thread's effective user: set once the privileges are
        /// dropped, which happens before any worker thread starts.
        static EUID: u32 = crate::sys::process::geteuid();
    }
    cachestat_answers(EUID.with(|e| *e), meta)
}

/// The kernel's rule for `cachestat()` on a read-only descriptor
/// (`can_do_cachestat`), as far as mode bits tell it.
fn cachestat_answers(euid: u32, meta: &FileMeta) -> bool {
    euid == 0 || meta.uid == euid || meta.mode & 0o022 != 0
}

/// Whether the loop may try `len` body bytes at `off` of `file` without
/// blocking: not when fault injection stalls the file, when `preadv2`
/// with `RWF_NOWAIT` is unsupported, or when `cachestat()` already says a
/// page is missing. A refusal is counted as the body's fast-path outcome.
fn body_may_try(file: &OpenFile, off: u64, len: usize) -> bool {
    let stalled = fault::stall_for(&file.path).is_some();
    if stalled || !SUPPORT.preadv2.load(Ordering::Relaxed) {
        let outcome = if stalled {
            FastOutcome::Miss
        } else {
            FastOutcome::Unsupported
        };
        metrics::fast(FastOp::Body, outcome);
        return false;
    }
    if all_present(file, off, len as u64) == Some(false) {
        metrics::fast(FastOp::Body, FastOutcome::Miss);
        return false;
    }
    true
}

#[cfg(test)]
mod cachestat_rule_tests {
    use super::*;
    use crate::sys::file::FileKind;

    fn meta(uid: u32, mode: u32) -> FileMeta {
        FileMeta {
            size: 1,
            mtime_sec: 0,
            mtime_nsec: 0,
            kind: FileKind::Regular,
            ino: 1,
            dev: 1,
            mode: libc::S_IFREG | mode,
            uid,
        }
    }

    #[test]
    fn cachestat_is_asked_only_where_the_kernel_answers() {
        // A deployer's file served as another user: refused, not asked.
        assert!(!cachestat_answers(65534, &meta(1000, 0o644)));
        assert!(cachestat_answers(1000, &meta(1000, 0o444)), "the owner");
        assert!(cachestat_answers(0, &meta(1000, 0o444)), "root is capable");
        assert!(
            cachestat_answers(65534, &meta(1000, 0o666)),
            "others may write"
        );
        assert!(cachestat_answers(65534, &meta(1000, 0o664)), "group: asked");
    }
}

#[cfg(test)]
mod direct_tests {
    use super::*;

    /// A file of `len` bytes, each its offset's low byte, opened with
    /// `O_DIRECT` where the file system allows it.
    fn file(tag: &str, len: usize) -> (PathBuf, OwnedFd) {
        let path = std::env::temp_dir().join(format!("nowait-direct-{tag}-{}", std::process::id()));
        let data: Vec<u8> = (0..len).map(|i| i as u8).collect();
        std::fs::write(&path, &data).expect("write");
        let fd = sysfile::open_read(&path).expect("open");
        let _ = sysfile::set_direct(&fd);
        (path, fd)
    }

    #[test]
    fn reads_the_bytes_asked_for_through_aligned_blocks() {
        let len = 3 * 4096 + 100;
        let (path, fd) = file("aligned", len);
        let want = |off: usize, n: usize| -> Vec<u8> {
            (off..(off + n).min(len)).map(|i| i as u8).collect()
        };
        for (off, n) in [
            (0, len),
            (1, 10),
            (511, 2),
            (4095, 4097),
            (len - 1, 1),
            (len - 50, 500),
            (len, 10),
        ] {
            let got = read_aligned(&fd, off as u64, n, 512).expect("read");
            assert_eq!(got, want(off, n), "{off}+{n}");
        }
        let got = read_aligned(&fd, 100, 8192, 4096).expect("read");
        assert_eq!(got, want(100, 8192), "4 KiB blocks");
        let _ = std::fs::remove_file(path);
    }
}
