//! Directories: open one (on the loop with `RESOLVE_CACHED`, or blocking),
//! read the names in it, and `stat` an entry relative to it. For the
//! autoindex module's listings, which nginx makes with `opendir`,
//! `readdir` and `stat` of each name.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::file::{FileMeta, Resolve, openat2_flags};
use super::{c_path, cvt};

/// Log name of [`open_dir`] (nginx's `ngx_open_dir_n`).
pub const OPENDIR: &str = "opendir";
/// Log name of [`read_names`] (nginx's `ngx_read_dir_n`).
pub const READDIR: &str = "readdir";
/// Log name of [`stat_at`] following links (nginx's `ngx_de_info_n`).
pub const STAT: &str = "stat";
/// Log name of [`stat_at`] on the link itself (`ngx_de_link_info_n`).
pub const LSTAT: &str = "lstat";

/// Flags of a directory open.
const DIR_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;

/// Opens the directory `path` for reading. With `cached`, the lookup may
/// not do I/O: `EAGAIN` when it would (`openat2(RESOLVE_CACHED)`; `ENOSYS`
/// or `EINVAL` where the kernel lacks it). `ENOTDIR` when `path` is not a
/// directory.
pub fn open_dir(path: &Path, cached: bool) -> io::Result<OwnedFd> {
    let resolve = if cached {
        Resolve::CACHED
    } else {
        Resolve::NONE
    };
    openat2_flags(None, path, DIR_FLAGS, resolve)
}

/// The names in the open directory `dir` (`.` and `..` left out), in the
/// order the file system gives them. May block on the directory's blocks.
/// Consumes the descriptor.
pub fn read_names(dir: OwnedFd) -> io::Result<Vec<Vec<u8>>> {
    let raw = dir.into_raw_fd();
    // SAFETY: `raw` is an open directory descriptor we own; on success
    // `fdopendir` takes it over (closed by `closedir` below).
    let d = unsafe { libc::fdopendir(raw) };
    if d.is_null() {
        let e = io::Error::last_os_error();
        // SAFETY: fdopendir failed, so the descriptor is still ours to close.
        unsafe { libc::close(raw) };
        return Err(e);
    }
    let mut names = Vec::new();
    let result = loop {
        // SAFETY: errno is thread-local; clearing it tells the end of the
        // stream (NULL, errno 0) from an error (NULL, errno set).
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: `d` is a live DIR* only this function uses.
        let ent = unsafe { libc::readdir(d) };
        if ent.is_null() {
            let e = io::Error::last_os_error();
            break match e.raw_os_error() {
                Some(0) | None => Ok(()),
                Some(_) => Err(e),
            };
        }
        // SAFETY: `ent` points to a dirent valid until the next readdir on
        // `d`; `d_name` is NUL-terminated within it. The bytes are copied
        // out before the next call.
        let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) }.to_bytes();
        if name != b"." && name != b".." {
            names.push(name.to_vec());
        }
    };
    // SAFETY: `d` came from fdopendir and is closed once, here.
    unsafe { libc::closedir(d) };
    result.map(|()| names)
}

/// `fstatat(dir, name)`: following a symbolic link (`stat`), or of the
/// link itself (`lstat`) when `follow` is false.
pub fn stat_at(dir: BorrowedFd<'_>, name: &[u8], follow: bool) -> io::Result<FileMeta> {
    let cname = c_path(Path::new(std::ffi::OsStr::from_bytes(name)))?;
    let flags = if follow { 0 } else { libc::AT_SYMLINK_NOFOLLOW };
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `cname` is NUL-terminated, `dir` a live descriptor for the
    // call, `st` writable storage for one `struct stat`.
    cvt(unsafe { libc::fstatat(dir.as_raw_fd(), cname.as_ptr(), st.as_mut_ptr(), flags) })?;
    // SAFETY: fstatat succeeded, so `st` is initialized.
    Ok(FileMeta::from_stat(&unsafe { st.assume_init() }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::file::FileKind;
    use std::fs;
    use std::os::fd::AsFd;

    #[test]
    fn lists_and_stats_a_directory() {
        let d = std::env::temp_dir().join(format!("nowait-sys-dir-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir(&d).unwrap();
        fs::write(d.join("a"), b"12345").unwrap();
        fs::create_dir(d.join("sub")).unwrap();
        std::os::unix::fs::symlink(d.join("missing"), d.join("dangling")).unwrap();
        let fd = open_dir(&d, false).unwrap();
        let fd2 = fd.try_clone().unwrap();
        let mut names = read_names(fd).unwrap();
        names.sort();
        assert_eq!(names, [&b"a"[..], b"dangling", b"sub"]);
        let a = stat_at(fd2.as_fd(), b"a", true).unwrap();
        assert_eq!((a.kind, a.size), (FileKind::Regular, 5));
        assert_eq!(
            stat_at(fd2.as_fd(), b"sub", true).unwrap().kind,
            FileKind::Directory
        );
        let e = stat_at(fd2.as_fd(), b"dangling", true).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        let l = stat_at(fd2.as_fd(), b"dangling", false).unwrap();
        assert_eq!(l.kind, FileKind::Symlink);
        // The cached open succeeds on a directory just made, and a file is
        // not a directory.
        assert!(open_dir(&d, true).is_ok());
        assert_eq!(
            open_dir(&d.join("a"), false).unwrap_err().raw_os_error(),
            Some(libc::ENOTDIR)
        );
        fs::remove_dir_all(&d).unwrap();
    }
}
