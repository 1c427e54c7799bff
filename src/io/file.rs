//! The file operations the server makes, each run where `aio` says: on the
//! event loop (`aio off`, nginx's default and the benchmarks' baseline) or on
//! a named thread pool (`aio threads[=pool]`), where the loop awaits the
//! completion and serves other connections meanwhile.
//!
//! What must not happen here: an unbounded wait for a pool (a full queue fails
//! at once, see [`super::pool`]), and a descriptor used by a pool thread after
//! its owner closed it (tasks hold `Arc`s of the descriptors they use).

use std::fmt;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Pool, SubmitError};
use crate::sys::error::SysError;
use crate::sys::file::{self as sysfile, FileMeta};

/// A file opened for reading, with its metadata.
#[derive(Clone, Debug)]
pub struct OpenFile {
    /// The descriptor, shared with pool tasks that use it.
    pub fd: Arc<OwnedFd>,
    /// `fstat` of the descriptor at open time.
    pub meta: FileMeta,
    /// The path it was opened by, for error messages.
    pub path: Arc<Path>,
}

/// Why a file operation failed.
#[derive(Debug)]
pub enum FileError {
    /// The system call failed; carries the call, path and errno.
    Sys(SysError),
    /// The pool refused the task (queue full): the request fails at once.
    Overflow(SubmitError),
    /// The pool task panicked or the pool is shutting down.
    Lost(&'static str),
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
            FileError::Lost(what) => write!(f, "thread pool task for {what} was lost"),
        }
    }
}

/// Where one request's file operations run.
#[derive(Clone, Copy)]
pub struct FileLayer<'a> {
    /// The pool for `aio threads`; `None` for `aio off`.
    pub pool: Option<&'a Arc<Pool>>,
}

impl FileLayer<'_> {
    /// Runs `f` on the pool, or here when there is none.
    async fn run<T, F>(&self, what: &'static str, f: F) -> Result<T, FileError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        match self.pool {
            None => Ok(f()),
            Some(pool) => {
                let done = pool.submit(f).map_err(FileError::Overflow)?;
                done.await.map_err(|_| FileError::Lost(what))
            }
        }
    }

    /// `open()` + `fstat()` of `path` for reading.
    pub async fn open(&self, path: &Path) -> Result<OpenFile, FileError> {
        let owned: Arc<Path> = Arc::from(path);
        let p = owned.clone();
        self.run("open", move || {
            let fd = sysfile::open_read(&p)
                .map_err(|e| SysError::with_path(sysfile::OPEN, p.to_path_buf(), e))?;
            let meta = sysfile::fstat(&fd)
                .map_err(|e| SysError::with_path(sysfile::FSTAT, p.to_path_buf(), e))?;
            Ok(OpenFile {
                fd: Arc::new(fd),
                meta,
                path: p,
            })
        })
        .await?
        .map_err(FileError::Sys)
    }

    /// `stat()` of `path` (following symlinks), for directory and index checks.
    pub async fn stat(&self, path: &Path) -> Result<FileMeta, FileError> {
        let p: PathBuf = path.to_path_buf();
        self.run("stat", move || {
            sysfile::stat(&p).map_err(|e| SysError::with_path(sysfile::STAT, p, e))
        })
        .await?
        .map_err(FileError::Sys)
    }

    /// Reads up to `len` bytes at `off` (`pread`); a short result means end of file.
    pub async fn read_at(
        &self,
        file: &OpenFile,
        len: usize,
        off: u64,
    ) -> Result<Vec<u8>, FileError> {
        let fd = file.fd.clone();
        let path = file.path.clone();
        self.run("read", move || {
            let mut buf = vec![0u8; len];
            let mut done = 0;
            while done < len {
                match sysfile::pread(&*fd, &mut buf[done..], off + done as u64) {
                    Ok(0) => break,
                    Ok(n) => done += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        return Err(SysError::with_path(sysfile::PREAD, path.to_path_buf(), e));
                    }
                }
            }
            buf.truncate(done);
            Ok(buf)
        })
        .await?
        .map_err(FileError::Sys)
    }

    /// One `sendfile()` of up to `len` bytes at `off` into the non-blocking
    /// socket `sock`. `Ok(0)` means the file ended early (truncated);
    /// `EAGAIN` comes back as an error for the caller to wait for writability.
    pub async fn sendfile(
        &self,
        sock: &Arc<OwnedFd>,
        file: &OpenFile,
        off: u64,
        len: usize,
    ) -> Result<usize, FileError> {
        let sock = sock.clone();
        let fd = file.fd.clone();
        let path = file.path.clone();
        self.run("sendfile", move || {
            let mut o = off;
            sysfile::sendfile(&*sock, &*fd, &mut o, len)
                .map_err(|e| SysError::with_path(sysfile::SENDFILE, path.to_path_buf(), e))
        })
        .await?
        .map_err(FileError::Sys)
    }
}
