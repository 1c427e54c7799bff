//! Temporary files: request bodies too large for memory
//! (`client_body_temp_path`) and buffered upstream responses that outgrow
//! `proxy_buffers` (`proxy_temp_path`). Created, written, read and removed
//! through the [`FileLayer`], so `aio threads` keeps every one of those calls
//! off the event loop.
//!
//! Names are nginx's (`ngx_create_temp_file`): a ten-digit number from a
//! process-wide counter, under `levels` of directories named by the
//! number's last digits (`levels=1:2`: `…/3/12/0000000123`), directories made
//! on demand with mode 0700, files with 0600 and `O_EXCL`. A file whose name
//! nobody needs (`$request_body_file` unused, `client_body_in_file_only off`)
//! is unlinked in the same pool task that creates it: nothing is left to
//! clean up when the request ends, whatever way it ends.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::sys::error::SysError;

use super::closer::CloseOffLoop;
use super::fault;
use super::file::{FileError, FileLayer};

/// Log names of the calls made here.
const OPEN: &str = "open";
const MKDIR: &str = "mkdir";
const PWRITE: &str = "pwrite";
const PREAD: &str = "pread";
const UNLINK: &str = "unlink";
const RENAME: &str = "rename";

/// How many names are tried before giving up when they all exist.
const MAX_COLLISIONS: u32 = 16;

/// The next temp file number (`ngx_temp_number`).
static NEXT: AtomicU32 = AtomicU32::new(1);

/// An open temporary file.
#[derive(Clone, Debug)]
pub struct TempFile {
    /// The open file, shared with pool tasks that use it.
    pub file: Arc<CloseOffLoop<File>>,
    /// Its name (already unlinked unless `named`).
    pub path: Arc<Path>,
    /// Whether the name still exists in the file system.
    pub named: bool,
    /// Bytes written so far.
    pub len: u64,
}

/// A temporary-file directory (`client_body_temp_path`, `proxy_temp_path`):
/// files are spread over `levels` of subdirectories named from the end of
/// their numbers, as nginx's `ngx_conf_set_path_slot`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TempPath {
    /// The directory, absolute once loaded.
    pub path: PathBuf,
    /// Digits per subdirectory level (each 1 or 2; at most 3 levels).
    pub levels: Vec<u8>,
}

impl TempPath {
    /// A path with no levels.
    pub fn new(path: &str) -> TempPath {
        TempPath {
            path: PathBuf::from(path),
            levels: Vec::new(),
        }
    }
}

/// The name of file number `n` under `dir` with its levels.
pub fn temp_name(dir: &TempPath, n: u32) -> PathBuf {
    let digits = format!("{n:010}");
    let mut p = dir.path.clone();
    let mut end = digits.len();
    for &level in &dir.levels {
        let level = level as usize;
        p.push(&digits[end - level..end]);
        end -= level;
    }
    p.push(&digits);
    p
}

/// Creates a fresh file under `dir` (blocking: runs in the pool or, under
/// `aio off`, on the loop). `keep_name`: leave the name in place.
fn create_blocking(dir: &TempPath, keep_name: bool) -> Result<TempFile, FileError> {
    let mut n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut collisions = 0;
    loop {
        let path = temp_name(dir, n);
        fault::stall(&path);
        let opened = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC)
            .open(&path);
        match opened {
            Ok(file) => {
                if !keep_name {
                    std::fs::remove_file(&path).map_err(|e| sys(UNLINK, &path, e))?;
                }
                return Ok(TempFile {
                    file: Arc::new(CloseOffLoop::new(file)),
                    path: Arc::from(path),
                    named: keep_name,
                    len: 0,
                });
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound && !dir.levels.is_empty() => {
                // The level directories are made on demand, as nginx does.
                let parent = path.parent().unwrap_or(&dir.path);
                DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(parent)
                    .map_err(|e| sys(MKDIR, parent, e))?;
                // The same name again: the directory did not exist.
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && collisions < MAX_COLLISIONS => {
                collisions += 1;
                // nginx adds a random step after a collision.
                n = NEXT.fetch_add(1 + (n.wrapping_mul(2_654_435_761) >> 20), Ordering::Relaxed);
            }
            Err(e) => return Err(sys(OPEN, &path, e)),
        }
    }
}

/// Creates `final_path` + `.NNNNNNNNNN` beside it (blocking), making the
/// directories on the way as nginx does (`use_temp_path=off`: a cache
/// entry's temp file on the same disk as the entry).
fn create_beside_blocking(final_path: &Path) -> Result<TempFile, FileError> {
    let parent = final_path.parent().unwrap_or(Path::new("/"));
    let base = final_path.as_os_str().to_string_lossy().into_owned();
    let mut collisions = 0;
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = PathBuf::from(format!("{base}.{n:010}"));
        fault::stall(&path);
        let opened = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC)
            .open(&path);
        match opened {
            Ok(file) => {
                return Ok(TempFile {
                    file: Arc::new(CloseOffLoop::new(file)),
                    path: Arc::from(path),
                    named: true,
                    len: 0,
                });
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound && collisions == 0 => {
                collisions += 1;
                DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(parent)
                    .map_err(|e| sys(MKDIR, parent, e))?;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && collisions < MAX_COLLISIONS => {
                collisions += 1;
            }
            Err(e) => return Err(sys(OPEN, &path, e)),
        }
    }
}

/// Renames `from` over `to` (blocking), making `to`'s directories when
/// they are missing: the atomic publication of a cache entry.
fn rename_blocking(from: &Path, to: &Path) -> Result<(), FileError> {
    match std::fs::rename(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = to.parent() {
                DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(parent)
                    .map_err(|e| sys(MKDIR, parent, e))?;
            }
            std::fs::rename(from, to).map_err(|e| sys(RENAME, from, e))
        }
        Err(e) => Err(sys(RENAME, from, e)),
    }
}

fn sys(call: &'static str, path: &Path, e: io::Error) -> FileError {
    FileError::Sys(SysError::with_path(call, path.to_path_buf(), e))
}

impl FileLayer<'_> {
    /// Creates a temporary file under `dir`, through the pool under `aio
    /// threads` (nginx creates them on the loop).
    pub async fn create_temp(
        &self,
        dir: &TempPath,
        keep_name: bool,
    ) -> Result<TempFile, FileError> {
        let dir = dir.clone();
        self.run_write("create", move || create_blocking(&dir, keep_name))
            .await?
    }

    /// Appends `data` to `t`, where `aio_write` says (the pool under `aio
    /// threads` with `aio_write on`, nowait's default). `data` is moved to
    /// the pool as it is (an `Arc<[u8]>`, a `Vec<u8>`), never copied.
    pub async fn append_temp<D>(&self, t: &mut TempFile, data: D) -> Result<(), FileError>
    where
        D: AsRef<[u8]> + Send + 'static,
    {
        self.append(t, data, false).await
    }

    /// [`FileLayer::append_temp`] for a file that is kept (a cache entry
    /// being filled): in a pool, the write is followed by write-behind
    /// (`sys::file::write_behind`), so a fill holds at most about two of its
    /// writes in dirty or under-writeback pages and its pool thread, not the
    /// page cache, absorbs a slow disk. Without a pool (`aio off`, `aio_write
    /// off`) it is a plain append, as nginx's write on the loop.
    pub async fn append_kept<D>(&self, t: &mut TempFile, data: D) -> Result<(), FileError>
    where
        D: AsRef<[u8]> + Send + 'static,
    {
        let behind = self.writes_in_pool();
        self.append(t, data, behind).await
    }

    /// Appends `data` to `t`, then (`behind`) writes it behind.
    async fn append<D>(&self, t: &mut TempFile, data: D, behind: bool) -> Result<(), FileError>
    where
        D: AsRef<[u8]> + Send + 'static,
    {
        let file = t.file.clone();
        let path = t.path.clone();
        let off = t.len;
        let len = data.as_ref().len() as u64;
        self.run_write("write", move || {
            fault::stall(&path);
            file.write_all_at(data.as_ref(), off)
                .map_err(|e| sys(PWRITE, &path, e))?;
            if behind {
                crate::sys::file::write_behind(&*file, off, len)
                    .map_err(|e| sys(crate::sys::file::SYNC_FILE_RANGE, &path, e))?;
            }
            Ok(())
        })
        .await??;
        t.len += len;
        Ok(())
    }

    /// Reads up to `len` bytes of `t` at `off` (short at the end).
    pub async fn read_temp(
        &self,
        t: &TempFile,
        off: u64,
        len: usize,
    ) -> Result<Vec<u8>, FileError> {
        let file = t.file.clone();
        let path = t.path.clone();
        self.run_read("read", move || {
            fault::stall(&path);
            let mut buf = vec![0u8; len];
            let mut done = 0;
            while done < len {
                match file.read_at(&mut buf[done..], off + done as u64) {
                    Ok(0) => break,
                    Ok(n) => done += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(sys(PREAD, &path, e)),
                }
            }
            buf.truncate(done);
            Ok(buf)
        })
        .await?
    }

    /// Creates a temporary file beside `final_path` (its name plus a
    /// ten-digit number), for a cache entry written in place.
    pub async fn create_temp_beside(&self, final_path: &Path) -> Result<TempFile, FileError> {
        let p = final_path.to_path_buf();
        self.run_write("create", move || create_beside_blocking(&p))
            .await?
    }

    /// Publishes `t` under `final_path` by renaming it (atomically
    /// replacing an older file); returns the file's size on disk.
    pub async fn publish_temp(&self, t: &TempFile, final_path: &Path) -> Result<u64, FileError> {
        let from = t.path.clone();
        let to = final_path.to_path_buf();
        let file = t.file.clone();
        self.run_write("rename", move || {
            fault::stall(&from);
            rename_blocking(&from, &to)?;
            use std::os::unix::fs::MetadataExt;
            // Blocks taken, as nginx counts `fs_size` (`st_blocks` × 512).
            Ok(file.metadata().map_or(0, |m| m.blocks() * 512))
        })
        .await?
    }

    /// Publishes `t` as a `proxy_store` file: mode `access`, time `mtime`
    /// if known, renamed to `to` with its missing directories made (mode
    /// `access` with search bits where read is given), as nginx's
    /// `ngx_ext_rename_file` with `create_path`.
    pub async fn publish_store(
        &self,
        t: &TempFile,
        to: &Path,
        access: u32,
        mtime: Option<i64>,
    ) -> Result<(), FileError> {
        let from = t.path.clone();
        let file = t.file.clone();
        let to = to.to_path_buf();
        self.run_write("rename", move || {
            use std::os::unix::fs::PermissionsExt;
            fault::stall(&from);
            file.set_permissions(std::fs::Permissions::from_mode(access))
                .map_err(|e| sys("fchmod", &from, e))?;
            if let Some(secs) = mtime.and_then(|s| u64::try_from(s).ok()) {
                let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
                let times = std::fs::FileTimes::new()
                    .set_modified(when)
                    .set_accessed(when);
                file.set_times(times)
                    .map_err(|e| sys("futimens", &from, e))?;
            }
            match std::fs::rename(&from, &to) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if let Some(parent) = to.parent() {
                        // nginx's `ngx_create_full_path` with the access
                        // bits, plus search where read is allowed.
                        let dir_mode = access | ((access & 0o444) >> 2);
                        DirBuilder::new()
                            .recursive(true)
                            .mode(dir_mode)
                            .create(parent)
                            .map_err(|e| sys(MKDIR, parent, e))?;
                    }
                    std::fs::rename(&from, &to).map_err(|e| sys(RENAME, &from, e))
                }
                Err(e) => Err(sys(RENAME, &from, e)),
            }
        })
        .await?
    }

    /// Removes a file by name (a cache entry the manager expires, a bad
    /// entry), where `aio_write` says.
    pub async fn remove_file(&self, path: &Path) -> Result<(), FileError> {
        let p = path.to_path_buf();
        self.run_write("unlink", move || {
            fault::stall(&p);
            match std::fs::remove_file(&p) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(sys(UNLINK, &p, e)),
            }
        })
        .await?
    }

    /// Writes `data` at `off` into the existing file `path` (a cache
    /// entry's header refreshed after a `304`), where `aio_write` says.
    pub async fn rewrite_at(
        &self,
        path: &Path,
        data: Arc<[u8]>,
        off: u64,
    ) -> Result<(), FileError> {
        let p = path.to_path_buf();
        self.run_write("write", move || {
            fault::stall(&p);
            let f = OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_CLOEXEC)
                .open(&p)
                .map_err(|e| sys(OPEN, &p, e))?;
            f.write_all_at(&data, off).map_err(|e| sys(PWRITE, &p, e))
        })
        .await?
    }

    /// Removes the name of `t` if it still has one (a kept request body at
    /// the end of its request, `client_body_in_file_only clean`).
    pub async fn remove_temp(&self, t: &TempFile) -> Result<(), FileError> {
        if !t.named {
            return Ok(());
        }
        let path = t.path.clone();
        self.run_write("unlink", move || {
            fault::stall(&path);
            std::fs::remove_file(&path).map_err(|e| sys(UNLINK, &path, e))
        })
        .await?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_take_levels_from_the_end_as_nginx() {
        let dir = TempPath {
            path: PathBuf::from("/t"),
            levels: vec![1, 2],
        };
        assert_eq!(temp_name(&dir, 123), PathBuf::from("/t/3/12/0000000123"));
        let flat = TempPath {
            path: PathBuf::from("/t"),
            levels: vec![],
        };
        assert_eq!(temp_name(&flat, 7), PathBuf::from("/t/0000000007"));
    }

    #[test]
    fn create_write_read_and_unlink() {
        let base = std::env::temp_dir().join(format!("nowait-temp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let dir = TempPath {
            path: base.clone(),
            levels: vec![1, 2],
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let files = FileLayer::INLINE;
            let mut t = files.create_temp(&dir, true).await.unwrap();
            assert!(t.path.exists(), "a kept name exists");
            files
                .append_temp(&mut t, Arc::from(&b"hello "[..]))
                .await
                .unwrap();
            files
                .append_temp(&mut t, Arc::from(&b"world"[..]))
                .await
                .unwrap();
            assert_eq!(t.len, 11);
            assert_eq!(files.read_temp(&t, 6, 100).await.unwrap(), b"world");
            files.remove_temp(&t).await.unwrap();
            assert!(!t.path.exists());
            // An anonymous one has no name from the start.
            let a = files.create_temp(&dir, false).await.unwrap();
            assert!(!a.path.exists());
        });
        std::fs::remove_dir_all(&base).unwrap();
    }
}
