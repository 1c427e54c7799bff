//! Listing a directory through the file layer (the autoindex module's
//! `opendir`, `readdir` and `stat` of each entry), where `aio` says.
//!
//! | `aio` | `aio_fast_path` | where it runs |
//! |---|---|---|
//! | `off` | — | all on the loop, blocking, as nginx |
//! | `threads` | `off` | all on the pool |
//! | `threads` | `on` | the directory is opened on the loop with `openat2(RESOLVE_CACHED)`; its entries are read and `stat`ed on the pool |
//!
//! Reading a directory's entries has no form that cannot block (there is
//! no `RWF_NOWAIT` for `getdents`), so that part always goes to the pool
//! under `aio threads`. The loop's open still pays: a missing or forbidden
//! directory whose lookup is cached is answered without a pool round trip,
//! and the pool task starts from an open descriptor.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use super::fault;
use super::file::{FileError, FileLayer};
use crate::metrics::worker::{self as metrics, FastOp, FastOutcome};
use crate::sys::dir as sysdir;
use crate::sys::error::SysError;
use crate::sys::file::FileMeta;

/// Whether `openat2` may be tried for directories (cleared the first time
/// the kernel says it lacks it).
static OPENAT2: AtomicBool = AtomicBool::new(true);

/// One entry of a directory, with what `stat` said of it.
#[derive(Clone, Debug)]
pub struct DirEntry {
    /// The name (any bytes).
    pub name: Vec<u8>,
    /// `stat` of the entry; `lstat` of a symbolic link whose target is
    /// missing or a loop, as nginx falls back to.
    pub meta: FileMeta,
}

/// A directory's entries, and the ones left out.
#[derive(Debug, Default)]
pub struct Listing {
    /// The entries, in the file system's order.
    pub entries: Vec<DirEntry>,
    /// Entries whose `stat` was refused (`EACCES`): nginx logs each at
    /// `crit` and lists the rest.
    pub skipped: Vec<SysError>,
}

impl FileLayer<'_> {
    /// The entries of the directory `path`, each `stat`ed; names starting
    /// with `.` are left out (unread, unstated) when `skip_hidden`.
    pub async fn read_dir(&self, path: &Path, skip_hidden: bool) -> Result<Listing, FileError> {
        let owned = path.to_path_buf();
        if self.pool.is_some() && self.fast {
            match open_fast(path) {
                Some(Ok(fd)) => {
                    return self
                        .run_read("readdir", move || list(&owned, fd, skip_hidden))
                        .await?;
                }
                Some(Err(e)) => return Err(e),
                None => {}
            }
        }
        self.run_read("opendir", move || {
            fault::stall(&owned);
            let fd = sysdir::open_dir(&owned, false).map_err(|e| opendir_error(&owned, e))?;
            list(&owned, fd, skip_hidden)
        })
        .await?
    }
}

fn opendir_error(path: &Path, e: io::Error) -> FileError {
    FileError::Sys(SysError::with_path(sysdir::OPENDIR, path.to_path_buf(), e))
}

/// The loop's open: `Some` with the descriptor or a definite error, `None`
/// when the pool must open it.
fn open_fast(path: &Path) -> Option<Result<OwnedFd, FileError>> {
    let stalled = fault::stall_for(path).is_some();
    if stalled || !OPENAT2.load(Ordering::Relaxed) {
        let outcome = if stalled {
            FastOutcome::Miss
        } else {
            FastOutcome::Unsupported
        };
        metrics::fast(FastOp::Dir, outcome);
        return None;
    }
    match sysdir::open_dir(path, true) {
        Ok(fd) => {
            metrics::fast(FastOp::Dir, FastOutcome::Hit);
            Some(Ok(fd))
        }
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
            metrics::fast(FastOp::Dir, FastOutcome::Miss);
            None
        }
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EINVAL)) => {
            OPENAT2.store(false, Ordering::Relaxed);
            metrics::fast(FastOp::Dir, FastOutcome::Unsupported);
            None
        }
        Err(e) => {
            metrics::fast(FastOp::Dir, FastOutcome::Hit);
            Some(Err(opendir_error(path, e)))
        }
    }
}

/// Reads and `stat`s the entries of the open directory `fd` (blocking):
/// as nginx, an entry whose `stat` fails with `ENOENT` or `ELOOP` (a
/// dangling link) is `lstat`ed instead, one refused (`EACCES`) is left
/// out, and any other failure fails the listing.
fn list(path: &Path, fd: OwnedFd, skip_hidden: bool) -> Result<Listing, FileError> {
    let name_of = |n: &[u8]| -> PathBuf {
        use std::os::unix::ffi::OsStrExt;
        path.join(std::ffi::OsStr::from_bytes(n))
    };
    let dir = fd.try_clone().map_err(|e| opendir_error(path, e))?;
    let names = sysdir::read_names(fd)
        .map_err(|e| FileError::Sys(SysError::with_path(sysdir::READDIR, path.to_path_buf(), e)))?;
    let mut out = Listing::default();
    for name in names {
        if skip_hidden && name.first() == Some(&b'.') {
            continue;
        }
        let meta = match sysdir::stat_at(dir.as_fd(), &name, true) {
            Ok(m) => m,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ELOOP)) => {
                sysdir::stat_at(dir.as_fd(), &name, false).map_err(|e| {
                    FileError::Sys(SysError::with_path(sysdir::LSTAT, name_of(&name), e))
                })?
            }
            Err(e) if e.raw_os_error() == Some(libc::EACCES) => {
                out.skipped
                    .push(SysError::with_path(sysdir::STAT, name_of(&name), e));
                continue;
            }
            Err(e) => {
                return Err(FileError::Sys(SysError::with_path(
                    sysdir::STAT,
                    name_of(&name),
                    e,
                )));
            }
        };
        out.entries.push(DirEntry { name, meta });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::Pool;
    use crate::sys::file::FileKind;
    use std::fs;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("nowait-io-dir-{}-{tag}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir(&d).unwrap();
        fs::write(d.join("file"), b"abc").unwrap();
        fs::write(d.join(".hidden"), b"").unwrap();
        fs::create_dir(d.join("sub")).unwrap();
        std::os::unix::fs::symlink(d.join("nowhere"), d.join("dangling")).unwrap();
        d
    }

    fn names(l: &Listing) -> Vec<String> {
        let mut v: Vec<String> = l
            .entries
            .iter()
            .map(|e| String::from_utf8_lossy(&e.name).into_owned())
            .collect();
        v.sort();
        v
    }

    fn run<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn lists_on_the_loop_and_through_a_pool() {
        let d = tmpdir("list");
        let pool = Pool::new("dirtest", 1, 8).unwrap();
        for layer in [
            FileLayer::INLINE,
            FileLayer {
                pool: Some(&pool),
                fast: true,
                write: true,
            },
            FileLayer {
                pool: Some(&pool),
                fast: false,
                write: true,
            },
        ] {
            let l = run(layer.read_dir(&d, true)).unwrap();
            assert_eq!(names(&l), ["dangling", "file", "sub"]);
            let kinds: Vec<FileKind> = {
                let mut e = l.entries.clone();
                e.sort_by(|a, b| a.name.cmp(&b.name));
                e.iter().map(|e| e.meta.kind).collect()
            };
            assert_eq!(
                kinds,
                [FileKind::Symlink, FileKind::Regular, FileKind::Directory]
            );
            let all = run(layer.read_dir(&d, false)).unwrap();
            assert_eq!(all.entries.len(), 4);
        }
        pool.shutdown();
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn errors_name_the_call_and_path() {
        let d = tmpdir("errors");
        let e = run(FileLayer::INLINE.read_dir(&d.join("none"), true)).unwrap_err();
        assert_eq!(e.errno(), Some(libc::ENOENT));
        assert!(e.to_string().starts_with("opendir() \""), "{e}");
        let e = run(FileLayer::INLINE.read_dir(&d.join("file"), true)).unwrap_err();
        assert_eq!(e.errno(), Some(libc::ENOTDIR));
        fs::remove_dir_all(&d).unwrap();
    }
}
