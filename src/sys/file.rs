//! File system calls: open (fast and slow), stat, read, cache residency, sendfile.
//!
//! The fast-path calls here never wait on a disk: [`open_cached`] fails with
//! `EAGAIN` when the path lookup would need I/O, [`preadv2_nowait`] fails with
//! `EAGAIN` when the data is not in the page cache. The slow-path calls
//! ([`open_read`], [`stat`], [`pread`], [`sendfile`]) may block and belong on a
//! pool thread unless the caller knows the data is cached.

use super::{c_path, cvt, cvt_errno};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::Path;

/// Log name of [`openat2`], [`open_cached`] and [`open_nofollow_cached`].
pub const OPENAT2: &str = "openat2";
/// Log name of [`open_read`].
pub const OPEN: &str = "open";
/// Log name of [`fstat`].
pub const FSTAT: &str = "fstat";
/// Log name of [`stat`].
pub const STAT: &str = "stat";
/// Log name of [`lstat`].
pub const LSTAT: &str = "lstat";
/// Log name of [`pread`].
pub const PREAD: &str = "pread";
/// Log name of [`preadv2_nowait`].
pub const PREADV2: &str = "preadv2";
/// Log name of [`cachestat`].
pub const CACHESTAT: &str = "cachestat";
/// Log name of [`sendfile`].
pub const SENDFILE: &str = "sendfile";
/// Log name of [`write_behind`].
pub const SYNC_FILE_RANGE: &str = "sync_file_range";
/// Log name of [`fadvise`].
pub const POSIX_FADVISE: &str = "posix_fadvise";
/// Log name of [`pipe`].
pub const PIPE: &str = "pipe2";
/// Log name of [`set_nonblocking`] and [`set_direct`].
pub const FCNTL: &str = "fcntl";
/// The argument [`set_direct`] is logged with: `fcntl(O_DIRECT)`, nginx's
/// `ngx_directio_on_n`.
pub const O_DIRECT_ARG: &str = "O_DIRECT";

/// `cachestat(2)`'s number; the same on x86_64 and aarch64 (the generic table).
/// libc does not export it yet.
const SYS_CACHESTAT: libc::c_long = 451;

/// Flags every read-only open uses. `O_NONBLOCK` does nothing for regular
/// files but keeps an `open()` of a FIFO from waiting for a writer (nginx opens
/// with it for the same reason); `O_NOCTTY` keeps a tty from becoming ours.
const READ_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY;

/// `RESOLVE_*` flags for [`openat2`] (`linux/openat2.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Resolve(u64);

impl Resolve {
    /// No restriction: an ordinary path walk (may do I/O).
    pub const NONE: Resolve = Resolve(0);
    /// Fail with `EAGAIN` instead of doing I/O during the lookup (5.12+).
    pub const CACHED: Resolve = Resolve(libc::RESOLVE_CACHED);
    /// Fail with `ELOOP` on any symlink in the path (`disable_symlinks on`).
    pub const NO_SYMLINKS: Resolve = Resolve(libc::RESOLVE_NO_SYMLINKS);
    /// Fail with `EXDEV` if the path escapes the directory fd (`..`, absolute
    /// paths, symlinks pointing out).
    pub const BENEATH: Resolve = Resolve(libc::RESOLVE_BENEATH);

    /// Both sets of flags.
    pub const fn union(self, other: Resolve) -> Resolve {
        Resolve(self.0 | other.0)
    }

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: Resolve) -> bool {
        self.0 & other.0 == other.0
    }
}

/// `struct open_how` from `linux/openat2.h`, declared here because libc's is
/// `#[non_exhaustive]` and cannot be built with a literal.
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// `openat2(dir or AT_FDCWD, path, {O_RDONLY|O_CLOEXEC|O_NONBLOCK, resolve})`.
///
/// With [`Resolve::CACHED`], `EAGAIN` means "the lookup needs I/O: retry on a
/// pool thread without it". `ENOSYS` (kernel < 5.6) or `EINVAL` (< 5.12 for
/// `RESOLVE_CACHED`) mean "unsupported": the caller falls back to [`open_read`].
pub fn openat2(dir: Option<BorrowedFd<'_>>, path: &Path, resolve: Resolve) -> io::Result<OwnedFd> {
    openat2_flags(dir, path, READ_FLAGS, resolve)
}

/// [`openat2`] with explicit open flags.
pub(super) fn openat2_flags(
    dir: Option<BorrowedFd<'_>>,
    path: &Path,
    flags: libc::c_int,
    resolve: Resolve,
) -> io::Result<OwnedFd> {
    let cpath = c_path(path)?;
    let how = OpenHow {
        flags: flags as u64,
        mode: 0,
        resolve: resolve.0,
    };
    let dirfd = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: `cpath` is NUL-terminated and `how` is a live `open_how` whose
    // size we pass; the kernel reads both during the call and keeps neither.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dirfd,
            cpath.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    let fd = cvt(ret)?;
    // SAFETY: a successful openat2 returns a new descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// [`openat2`] relative to the working directory with `RESOLVE_CACHED`: the
/// event-loop open. `EAGAIN` when the lookup would need I/O, which includes
/// a name never looked up before that does not exist: only after a slow lookup
/// has left a negative dentry does a missing file fail here with `ENOENT`.
pub fn open_cached(path: &Path) -> io::Result<OwnedFd> {
    openat2(None, path, Resolve::CACHED)
}

/// `stat()` that cannot wait on a disk: `openat2(O_PATH, RESOLVE_CACHED)`
/// then `fstat()` of that descriptor (an `O_PATH` open needs no read
/// permission, so this answers what `stat()` would). `EAGAIN` when the
/// lookup would need I/O.
pub fn stat_cached(path: &Path) -> io::Result<FileMeta> {
    let fd = openat2_flags(None, path, libc::O_PATH | libc::O_CLOEXEC, Resolve::CACHED)?;
    fstat(&fd)
}

/// The page size, for turning byte ranges into [`cachestat`] page counts.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no memory arguments and cannot fail for _SC_PAGESIZE.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 { n as u64 } else { 4096 }
}

/// [`open_cached`] that also refuses symlinks anywhere in the path (`ELOOP`),
/// for `disable_symlinks on`.
pub fn open_nofollow_cached(path: &Path) -> io::Result<OwnedFd> {
    openat2(None, path, Resolve::CACHED.union(Resolve::NO_SYMLINKS))
}

/// `open(path, O_RDONLY|O_CLOEXEC|O_NONBLOCK|O_NOCTTY)`: the slow-path open,
/// for pool threads. May block on the path walk.
pub fn open_read(path: &Path) -> io::Result<OwnedFd> {
    let cpath = c_path(path)?;
    // SAFETY: `cpath` is NUL-terminated and outlives the call.
    let fd = cvt(unsafe { libc::open(cpath.as_ptr(), READ_FLAGS) })?;
    // SAFETY: a successful open returns a new descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens `path` for reading and says what it is: the descriptor only for a
/// regular file, with its metadata. As nginx does, the open itself uses
/// `O_NONBLOCK`, so that a FIFO (no writer yet) or a device cannot make it
/// wait, and `fstat` then decides: anything but a regular file is closed at
/// once, unread. A directory opens too, which is how an unreadable one is
/// told apart (403) from one to redirect to. `cached` uses `RESOLVE_CACHED`:
/// `EAGAIN` when the lookup would need I/O.
///
/// An earlier design opened with `O_PATH` and reopened regular files
/// through `/proc/self/fd`, so that a FIFO was never opened at all; the two
/// extra path walks cost more than half of a small file's request.
pub fn open_regular(path: &Path, cached: bool) -> io::Result<(Option<OwnedFd>, FileMeta)> {
    let fd = if cached {
        openat2(None, path, Resolve::CACHED)?
    } else {
        open_read(path)?
    };
    let meta = fstat(&fd)?;
    match meta.kind {
        FileKind::Regular => Ok((Some(fd), meta)),
        _ => Ok((None, meta)),
    }
}

/// How symbolic links in a path are treated (nginx's `disable_symlinks`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LinkPolicy {
    /// Followed, as by `open()`.
    #[default]
    Follow,
    /// Any link in the path fails the open with `ELOOP` (`on`).
    Refuse,
    /// A link whose owner is not its target's owner fails it (`if_not_owner`).
    RefuseIfNotOwner,
}

/// The symbolic-link rule for one path: the policy, and how many leading
/// bytes of the path are not checked (`disable_symlinks … from=`; 0: all
/// of it is).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Links {
    /// What is refused.
    pub policy: LinkPolicy,
    /// Bytes at the start of the path opened as usual (a directory).
    pub from: usize,
}

impl Links {
    /// Links followed everywhere.
    pub const FOLLOW: Links = Links {
        policy: LinkPolicy::Follow,
        from: 0,
    };
}

/// `openat(dir or AT_FDCWD, name, flags)`, one path component or more.
fn openat(dir: Option<BorrowedFd<'_>>, name: &[u8], flags: libc::c_int) -> io::Result<OwnedFd> {
    openat_mode(dir, name, flags, 0)
}

/// [`openat`] with the mode of a file `O_CREAT` makes.
fn openat_mode(
    dir: Option<BorrowedFd<'_>>,
    name: &[u8],
    flags: libc::c_int,
    mode: u32,
) -> io::Result<OwnedFd> {
    let cname =
        std::ffi::CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let dirfd = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: `cname` is NUL-terminated and outlives the call; the mode is
    // passed as the variadic argument `openat` reads with O_CREAT.
    let fd = cvt(unsafe { libc::openat(dirfd, cname.as_ptr(), flags, mode as libc::c_uint) })?;
    // SAFETY: a successful openat returns a new descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: the entry itself.
fn lstat_at(dir: Option<BorrowedFd<'_>>, name: &[u8]) -> io::Result<FileMeta> {
    let cname =
        std::ffi::CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let dirfd = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `cname` is NUL-terminated; `st` is writable storage for one
    // `struct stat`, filled by the kernel on success.
    cvt(unsafe {
        libc::fstatat(
            dirfd,
            cname.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    // SAFETY: the call succeeded, so `st` is initialized.
    Ok(FileMeta::from_stat(&unsafe { st.assume_init() }))
}

/// nginx's `ngx_openat_file_owner`: opens `name` in `dir` (following a
/// link) and fails with `ELOOP` when the entry's owner and the opened
/// file's differ — a link made by someone else. Owners are compared even
/// when the entry is not a link now: it may have been one during the open.
fn openat_owner(
    dir: Option<BorrowedFd<'_>>,
    name: &[u8],
    flags: libc::c_int,
) -> io::Result<OwnedFd> {
    let fd = openat(dir, name, flags)?;
    let entry = lstat_at(dir, name)?;
    let target = fstat(&fd)?;
    if entry.uid != target.uid {
        return Err(io::Error::from_raw_os_error(libc::ELOOP));
    }
    Ok(fd)
}

/// Flags of the directories a checked walk passes through (nginx's
/// `NGX_FILE_SEARCH` on Linux).
const SEARCH_FLAGS: libc::c_int = libc::O_PATH | libc::O_CLOEXEC;

/// Opens `path` with `flags` one component at a time from its unchecked
/// prefix, as nginx's `ngx_open_file_wrapper` does: each component with
/// `O_NOFOLLOW` (a link in the middle opens as the link itself, and the
/// next component fails with `ENOTDIR`; a link at the end fails with
/// `ELOOP`), or, with `owner`, following links whose owner is their
/// target's. A path ending in `/` opens its last directory. Blocking.
fn walk_open(path: &[u8], from: usize, flags: libc::c_int, owner: bool) -> io::Result<OwnedFd> {
    walk_open_mode(path, from, flags, 0, owner)
}

/// [`walk_open`] with a creation mode. A file created (`O_CREAT`) is never
/// owner-checked at the end, as in nginx: its last component is opened
/// with `O_NOFOLLOW`.
fn walk_open_mode(
    path: &[u8],
    from: usize,
    flags: libc::c_int,
    mode: u32,
    owner: bool,
) -> io::Result<OwnedFd> {
    let end = path.len();
    let (mut at, mut p) = if from > 0 && from < end {
        (Some(openat(None, &path[..from], SEARCH_FLAGS)?), from + 1)
    } else if path.first() == Some(&b'/') {
        (Some(openat(None, b"/", SEARCH_FLAGS)?), 1)
    } else {
        (None, 0)
    };
    while let Some(i) = path[p.min(end)..].iter().position(|&c| c == b'/') {
        let cp = p + i;
        if cp == p {
            p += 1;
            continue;
        }
        let name = &path[p..cp];
        let dir = at.as_ref().map(|f| f.as_fd());
        let fd = if owner {
            openat_owner(dir, name, SEARCH_FLAGS)?
        } else {
            openat(dir, name, SEARCH_FLAGS | libc::O_NOFOLLOW)?
        };
        at = Some(fd);
        p = cp + 1;
    }
    let dir = at.as_ref().map(|f| f.as_fd());
    if p >= end {
        return openat_mode(dir, b".", flags, mode);
    }
    if owner && flags & libc::O_CREAT == 0 {
        openat_owner(dir, &path[p..], flags)
    } else {
        openat_mode(dir, &path[p..], flags | libc::O_NOFOLLOW, mode)
    }
}

/// Opens `path` with `flags` under the link rule `links`. `cached` makes it
/// the event loop's form: `EAGAIN` when the lookup would need I/O, and
/// `EAGAIN` too for `RefuseIfNotOwner`, whose walk has no such form.
/// `Refuse` is one `openat2(RESOLVE_NO_SYMLINKS)` from the unchecked
/// prefix; without `openat2` it is nginx's walk.
fn open_links(path: &Path, flags: libc::c_int, links: Links, cached: bool) -> io::Result<OwnedFd> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    let from = if links.from < bytes.len() {
        links.from
    } else {
        0
    };
    match links.policy {
        LinkPolicy::Follow => {
            let resolve = if cached {
                Resolve::CACHED
            } else {
                Resolve::NONE
            };
            if cached {
                openat2_flags(None, path, flags, resolve)
            } else {
                openat(None, bytes, flags)
            }
        }
        LinkPolicy::Refuse => {
            let base = if cached {
                Resolve::CACHED
            } else {
                Resolve::NONE
            };
            let resolve = base.union(Resolve::NO_SYMLINKS);
            let r = if from > 0 {
                let dir = openat2_flags(
                    None,
                    Path::new(std::ffi::OsStr::from_bytes(&bytes[..from])),
                    SEARCH_FLAGS,
                    base,
                )?;
                let rest = &bytes[from..];
                let rest = match rest.iter().position(|&c| c != b'/') {
                    Some(i) => &rest[i..],
                    None => b".".as_slice(),
                };
                openat2_flags(
                    Some(dir.as_fd()),
                    Path::new(std::ffi::OsStr::from_bytes(rest)),
                    flags,
                    resolve,
                )
            } else {
                openat2_flags(None, path, flags, resolve)
            };
            match r {
                Err(e) if !cached && e.raw_os_error() == Some(libc::ENOSYS) => {
                    walk_open(bytes, from, flags, false)
                }
                r => r,
            }
        }
        LinkPolicy::RefuseIfNotOwner if cached => Err(io::Error::from_raw_os_error(libc::EAGAIN)),
        LinkPolicy::RefuseIfNotOwner => walk_open(bytes, from, flags, true),
    }
}

/// Opens a log file for appending (created with `mode`) under `links`:
/// `O_WRONLY|O_APPEND|O_CREAT`, with nginx's checked walk for a rule other
/// than `Follow`. Blocking: for log writer threads.
pub fn open_append_links(path: &Path, links: Links, mode: u32) -> io::Result<std::fs::File> {
    use std::os::unix::ffi::OsStrExt;
    let flags = libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_CLOEXEC;
    let bytes = path.as_os_str().as_bytes();
    let from = if links.from < bytes.len() {
        links.from
    } else {
        0
    };
    let fd = match links.policy {
        LinkPolicy::Follow => openat_mode(None, bytes, flags, mode)?,
        LinkPolicy::Refuse => walk_open_mode(bytes, from, flags, mode, false)?,
        LinkPolicy::RefuseIfNotOwner => walk_open_mode(bytes, from, flags, mode, true)?,
    };
    Ok(std::fs::File::from(fd))
}

/// [`open_regular`] under the link rule `links`.
pub fn open_regular_links(
    path: &Path,
    cached: bool,
    links: Links,
) -> io::Result<(Option<OwnedFd>, FileMeta)> {
    if links.policy == LinkPolicy::Follow {
        return open_regular(path, cached);
    }
    let fd = open_links(path, READ_FLAGS, links, cached)?;
    let meta = fstat(&fd)?;
    match meta.kind {
        FileKind::Regular => Ok((Some(fd), meta)),
        _ => Ok((None, meta)),
    }
}

/// `stat()` under the link rule `links` (an `O_PATH` open and `fstat`);
/// `cached` as for [`open_regular_links`].
pub fn stat_links(path: &Path, cached: bool, links: Links) -> io::Result<FileMeta> {
    if links.policy == LinkPolicy::Follow {
        return if cached {
            stat_cached(path)
        } else {
            stat(path)
        };
    }
    let fd = open_links(path, SEARCH_FLAGS, links, cached)?;
    fstat(&fd)
}

/// What kind of file a [`FileMeta`] describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file: the only kind served.
    Regular,
    /// A directory: `index`, `autoindex` or a redirect to `uri/`.
    Directory,
    /// A symbolic link; only [`lstat`] reports it.
    Symlink,
    /// Anything else (FIFO, socket, device): never served.
    Other,
}

/// The fields of `struct stat` the server uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMeta {
    /// Size in bytes (`Content-Length`, range checks).
    pub size: u64,
    /// Modification time, seconds since the epoch (`Last-Modified`, `ETag`).
    pub mtime_sec: i64,
    /// Nanoseconds part of the modification time (cache validation).
    pub mtime_nsec: i64,
    /// Regular, directory, symlink or other.
    pub kind: FileKind,
    /// Inode number: with `dev`, the identity of the file for open-file caches.
    pub ino: u64,
    /// Device number holding the inode.
    pub dev: u64,
    /// Permission bits and type bits (`st_mode`).
    pub mode: u32,
    /// The owner (`disable_symlinks if_not_owner` compares owners).
    pub uid: u32,
}

impl FileMeta {
    pub(super) fn from_stat(st: &libc::stat) -> Self {
        let kind = match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => FileKind::Regular,
            libc::S_IFDIR => FileKind::Directory,
            libc::S_IFLNK => FileKind::Symlink,
            _ => FileKind::Other,
        };
        FileMeta {
            size: st.st_size as u64,
            mtime_sec: st.st_mtime,
            mtime_nsec: st.st_mtime_nsec,
            kind,
            ino: st.st_ino,
            dev: st.st_dev,
            mode: st.st_mode,
            uid: st.st_uid,
        }
    }
}

/// `fstat(fd)`. Never does I/O on an open file on local file systems.
pub fn fstat(fd: impl AsFd) -> io::Result<FileMeta> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is writable storage for one `struct stat`; on success the
    // kernel has filled all of it.
    cvt(unsafe { libc::fstat(fd.as_fd().as_raw_fd(), st.as_mut_ptr()) })?;
    // SAFETY: fstat succeeded, so `st` is initialized.
    Ok(FileMeta::from_stat(&unsafe { st.assume_init() }))
}

/// The number of names `fd`'s file has (`st_nlink` of `fstat`): 0 once it
/// was unlinked (or replaced by a rename). Never waits on a disk.
pub fn link_count(fd: impl AsFd) -> io::Result<u64> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is writable storage for one `struct stat`; on success the
    // kernel has filled all of it.
    cvt(unsafe { libc::fstat(fd.as_fd().as_raw_fd(), st.as_mut_ptr()) })?;
    // SAFETY: fstat succeeded, so `st` is initialized.
    let st = unsafe { st.assume_init() };
    // `nlink_t` is 64 bits on x86-64 and 32 on arm64.
    #[allow(clippy::unnecessary_cast)]
    Ok(st.st_nlink as u64)
}

/// `stat(path)`, following symlinks. May block on the path walk.
pub fn stat(path: &Path) -> io::Result<FileMeta> {
    stat_with(path, false)
}

/// `lstat(path)`: the link itself, not its target. May block on the path walk.
pub fn lstat(path: &Path) -> io::Result<FileMeta> {
    stat_with(path, true)
}

fn stat_with(path: &Path, link: bool) -> io::Result<FileMeta> {
    let cpath = c_path(path)?;
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `cpath` is NUL-terminated; `st` is writable storage for one
    // `struct stat`, filled by the kernel on success.
    let ret = unsafe {
        if link {
            libc::lstat(cpath.as_ptr(), st.as_mut_ptr())
        } else {
            libc::stat(cpath.as_ptr(), st.as_mut_ptr())
        }
    };
    cvt(ret)?;
    // SAFETY: the call succeeded, so `st` is initialized.
    Ok(FileMeta::from_stat(&unsafe { st.assume_init() }))
}

/// `pread(fd, buf, off)`: reads up to `buf.len()` bytes at `off`; may block.
/// Returns the count read, 0 at end of file.
pub fn pread(fd: impl AsFd, buf: &mut [u8], off: u64) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the call.
    let n = unsafe {
        libc::pread(
            fd.as_fd().as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            off as libc::off_t,
        )
    };
    cvt(n).map(|n| n as usize)
}

/// `preadv2(fd, [buf], off, RWF_NOWAIT)`: reads only what is in the page
/// cache. `EAGAIN` when the first byte isn't cached; a short count when only
/// a prefix is (the caller reads the rest on a pool thread).
pub fn preadv2_nowait(fd: impl AsFd, buf: &mut [u8], off: u64) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the call.
    unsafe { preadv2_nowait_raw(fd.as_fd(), buf.as_mut_ptr(), buf.len(), off) }
}

/// One `preadv2(RWF_NOWAIT)` of `len` bytes at `off` into `ptr`.
///
/// # Safety
/// `ptr` must be valid for writes of `len` bytes for the duration of the
/// call (it may be uninitialized: the kernel writes only what it returns).
unsafe fn preadv2_nowait_raw(
    fd: BorrowedFd<'_>,
    ptr: *mut u8,
    len: usize,
    off: u64,
) -> io::Result<usize> {
    let iov = libc::iovec {
        iov_base: ptr.cast(),
        iov_len: len,
    };
    // SAFETY: `iov` describes memory the caller vouches for; exactly one
    // iovec is passed.
    let n = unsafe {
        libc::preadv2(
            fd.as_raw_fd(),
            &iov,
            1,
            off as libc::off_t,
            libc::RWF_NOWAIT,
        )
    };
    cvt(n).map(|n| n as usize)
}

/// [`preadv2_nowait`] into `buf`'s spare capacity: reads up to `len`
/// bytes at `off` and appends what it read, without filling the room with
/// zeros first (a copy path reads 64–256 KiB per call; zeroing them cost
/// as much as the read's own copy).
pub fn preadv2_nowait_append(
    fd: impl AsFd,
    buf: &mut Vec<u8>,
    len: usize,
    off: u64,
) -> io::Result<usize> {
    buf.reserve(len);
    let spare = &mut buf.spare_capacity_mut()[..len];
    // SAFETY: `spare` is `len` bytes of `buf`'s allocation past its length,
    // valid for writes for the duration of the call.
    let n = unsafe { preadv2_nowait_raw(fd.as_fd(), spare.as_mut_ptr().cast(), len, off)? };
    // SAFETY: the kernel initialized the first `n <= len` bytes of the
    // spare capacity; the capacity holds them (reserved above).
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

/// The most iovecs [`probe_nowait`] passes to one `preadv2()`: with a
/// sink of 32 KiB, a probe of up to 2 MiB (well under `IOV_MAX`, 1024).
pub const PROBE_IOVECS: usize = 64;

/// How many of `len` bytes at `off` are in the page cache and up to date,
/// found without waiting: `preadv2(RWF_NOWAIT)` reads them into `sink` over
/// and over (every iovec of the call describes `sink`), so the bytes cross
/// only one small buffer that stays in the CPU's cache. The count is the
/// prefix the kernel could read without waiting: its read stops at the
/// first page that is absent or not up to date — locked under read I/O —
/// (`filemap_get_pages()` with `IOCB_NOWAIT`), and at the end of the file
/// (0 there). `EAGAIN` when the first page is not readable now. At most
/// `sink.len() * PROBE_IOVECS` bytes are probed.
pub fn probe_nowait(fd: impl AsFd, sink: &mut [u8], off: u64, len: usize) -> io::Result<usize> {
    if sink.is_empty() || len == 0 {
        return Ok(0);
    }
    let len = len.min(sink.len() * PROBE_IOVECS);
    let empty = libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    };
    let mut iov = [empty; PROBE_IOVECS];
    let mut count = 0;
    let mut left = len;
    while left > 0 {
        let part = left.min(sink.len());
        iov[count] = libc::iovec {
            iov_base: sink.as_mut_ptr().cast(),
            iov_len: part,
        };
        left -= part;
        count += 1;
    }
    // SAFETY: each of the first `count` iovecs describes `sink` (or a prefix
    // of it), valid for writes for the duration of the call and borrowed
    // mutably, so nothing else reads it meanwhile; the kernel fills the
    // iovecs in order, and iovecs that overlap are only written again.
    let n = unsafe {
        libc::preadv2(
            fd.as_fd().as_raw_fd(),
            iov.as_ptr(),
            count as libc::c_int,
            off as libc::off_t,
            libc::RWF_NOWAIT,
        )
    };
    cvt(n).map(|n| n as usize)
}

/// Page-cache state of a byte range, in pages (`struct cachestat`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStat {
    /// Pages in the page cache.
    pub cached: u64,
    /// Cached pages that are dirty.
    pub dirty: u64,
    /// Cached pages under writeback.
    pub writeback: u64,
    /// Pages evicted from the cache.
    pub evicted: u64,
    /// Evicted pages that were recently used (would have been hits).
    pub recently_evicted: u64,
}

/// `struct cachestat_range`.
#[repr(C)]
struct CacheStatRange {
    off: u64,
    len: u64,
}

/// `cachestat(fd, {off, len}, &cstat, 0)` (Linux 6.5+): how much of the range
/// is resident. `len == 0` means "to the end of the file". `ENOSYS` on older
/// kernels: the caller then relies on [`preadv2_nowait`] alone.
pub fn cachestat(fd: impl AsFd, off: u64, len: u64) -> io::Result<CacheStat> {
    let range = CacheStatRange { off, len };
    let mut cs = CacheStat::default();
    // SAFETY: `range` and `cs` are live `repr(C)` structs laid out as the
    // kernel's `cachestat_range` and `cachestat`; it reads the first and
    // writes the second during the call. Flags must be 0.
    let ret = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            fd.as_fd().as_raw_fd(),
            &range as *const CacheStatRange,
            &mut cs as *mut CacheStat,
            0 as libc::c_uint,
        )
    };
    cvt(ret)?;
    Ok(cs)
}

/// `sendfile(out, in, &off, count)`: copies up to `count` bytes of `input`
/// at `*off` to `out` in the kernel, advancing `*off` by the count sent.
/// Blocks on disk reads of uncached data; `EAGAIN` when a non-blocking `out`
/// is full.
pub fn sendfile(
    out: impl AsFd,
    input: impl AsFd,
    off: &mut u64,
    count: usize,
) -> io::Result<usize> {
    let mut o = *off as libc::off_t;
    // SAFETY: both descriptors are borrowed for the call; `o` is a valid,
    // writable off_t the kernel updates.
    let n = unsafe {
        libc::sendfile(
            out.as_fd().as_raw_fd(),
            input.as_fd().as_raw_fd(),
            &mut o,
            count,
        )
    };
    let n = cvt(n)?;
    *off = o as u64;
    Ok(n as usize)
}

/// Advice for [`fadvise`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    /// `POSIX_FADV_NORMAL`.
    Normal,
    /// `POSIX_FADV_SEQUENTIAL`: larger readahead.
    Sequential,
    /// `POSIX_FADV_RANDOM`: no readahead.
    Random,
    /// `POSIX_FADV_WILLNEED`: start reading the range into the cache now.
    WillNeed,
    /// `POSIX_FADV_DONTNEED`: drop the range from the cache.
    DontNeed,
}

/// `posix_fadvise(fd, off, len, advice)`. `WillNeed` may itself block on
/// some file systems: call it off the loop.
pub fn fadvise(fd: impl AsFd, off: u64, len: u64, advice: Advice) -> io::Result<()> {
    let advice = match advice {
        Advice::Normal => libc::POSIX_FADV_NORMAL,
        Advice::Sequential => libc::POSIX_FADV_SEQUENTIAL,
        Advice::Random => libc::POSIX_FADV_RANDOM,
        Advice::WillNeed => libc::POSIX_FADV_WILLNEED,
        Advice::DontNeed => libc::POSIX_FADV_DONTNEED,
    };
    // SAFETY: plain integer arguments on a borrowed descriptor; the function
    // returns an error number rather than setting errno.
    cvt_errno(unsafe {
        libc::posix_fadvise(
            fd.as_fd().as_raw_fd(),
            off as libc::off_t,
            len as libc::off_t,
            advice,
        )
    })
}

/// The piece [`read_into_cache`] reads at a time, into one buffer.
const READ_THROUGH_CHUNK: usize = 64 * 1024;

/// Brings `[off, off + len)` of `fd` into the page cache through the read
/// path and returns the bytes read (fewer at the end of the file): reads of
/// 64 KiB in a row into one buffer per thread, whose contents are never
/// looked at. The kernel's read-ahead follows a reader that goes front to
/// back, in windows that grow to the device's `read_ahead_kb`, and each of
/// its windows brings the next in larger folios.
///
/// Why not `posix_fadvise(WILLNEED)`, the faults of a mapping, or one large
/// read: all three fill the page cache with 4 KiB folios, where a
/// sequential reader gets large ones (ext4 on Linux 6.18: a 4 MiB file read
/// 64 KiB at a time sits in ~160 folios; read by `WILLNEED`, by an
/// `mlock()` of its mapping or by one 4 MiB `pread()`, in 1,024). A page
/// keeps its folio for as long as it stays cached, and every `sendfile()`
/// of the file pays per folio (a pipe buffer each, a fragment each in the
/// socket's buffers): in the slow-disk lab, a hot 4 MB file brought in by
/// `WILLNEED` and pinned was served at about a third of the rate of the
/// same file read in by its readers.
///
/// Waits for the disk: pool threads only.
pub fn read_into_cache(fd: impl AsFd, off: u64, len: u64) -> io::Result<u64> {
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> =
            std::cell::RefCell::new(vec![0; READ_THROUGH_CHUNK]);
    }
    BUF.with(|buf| {
        let mut buf = buf.borrow_mut();
        let mut done = 0u64;
        while done < len {
            let want = (len - done).min(READ_THROUGH_CHUNK as u64) as usize;
            match pread(&fd, &mut buf[..want], off + done) {
                Ok(0) => break,
                Ok(n) => done += n as u64,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    })
}

/// Write-behind for a file written front to back (`sync_file_range`):
/// starts writeback of the bytes just written at `[off, off + len)` and
/// waits until everything before `off` is on the device. A writer that calls
/// this after each write keeps at most about two writes of its file dirty
/// or under writeback, instead of leaving the page cache to fill with dirty
/// pages that the cgroup's reclaim would later have to wait for. Blocks on
/// the device: call it where waiting is allowed (a pool thread).
pub fn write_behind(fd: impl AsFd, off: u64, len: u64) -> io::Result<()> {
    let raw = fd.as_fd().as_raw_fd();
    // SAFETY: plain integer arguments on a borrowed descriptor.
    cvt(unsafe {
        libc::sync_file_range(
            raw,
            off as libc::off64_t,
            len as libc::off64_t,
            libc::SYNC_FILE_RANGE_WRITE,
        )
    })?;
    if off > 0 {
        // SAFETY: as above.
        cvt(unsafe {
            libc::sync_file_range(
                raw,
                0,
                off as libc::off64_t,
                libc::SYNC_FILE_RANGE_WAIT_BEFORE
                    | libc::SYNC_FILE_RANGE_WRITE
                    | libc::SYNC_FILE_RANGE_WAIT_AFTER,
            )
        })?;
    }
    Ok(())
}

/// `pipe2(O_CLOEXEC)`: `(read end, write end)`, both blocking.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is writable storage for the two descriptors.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: pipe2 succeeded: both are new descriptors nobody else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `fcntl(F_SETFL, ±O_NONBLOCK)` on `fd`'s open file description.
pub fn set_nonblocking(fd: impl AsFd, on: bool) -> io::Result<()> {
    let fd = fd.as_fd().as_raw_fd();
    // SAFETY: F_GETFL takes no pointer argument.
    let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    let flags = if on {
        flags | libc::O_NONBLOCK
    } else {
        flags & !libc::O_NONBLOCK
    };
    // SAFETY: F_SETFL takes an integer argument.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, flags) })?;
    Ok(())
}

/// `fcntl(F_SETFL, +O_DIRECT)` on `fd`'s open file description: its reads
/// go past the page cache, and must be aligned (`directio`). `EINVAL` where
/// the file system has no direct I/O (tmpfs).
pub fn set_direct(fd: impl AsFd) -> io::Result<()> {
    let fd = fd.as_fd().as_raw_fd();
    // SAFETY: F_GETFL takes no pointer argument.
    let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    // SAFETY: F_SETFL takes an integer argument.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_DIRECT) })?;
    Ok(())
}

/// Bytes available to unprivileged users on the file system holding `path`
/// (`statvfs()`: `f_bavail` × `f_frsize`), for `min_free`; `None` when the
/// call fails.
pub fn free_bytes(path: &Path) -> Option<u64> {
    let c = super::c_path(path).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a valid NUL-terminated path and `st` points to writable
    // memory of the size `statvfs` fills; it is read only after success.
    let r = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if r != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it initialized `st`.
    let st = unsafe { st.assume_init() };
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::io::Read;
    use std::os::unix::net::UnixStream;
    use std::path::PathBuf;

    /// A file under the system temp directory, removed on drop.
    struct TempFile(PathBuf);

    impl TempFile {
        fn new(tag: &str, contents: &[u8]) -> TempFile {
            let p = std::env::temp_dir().join(format!("nowait-sys-{}-{tag}", std::process::id()));
            fs::write(&p, contents).expect("write temp file");
            TempFile(p)
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = fs::remove_file(&self.0);
        }
    }

    /// `VmLck` of this process, in KiB.
    fn locked_kib() -> u64 {
        fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("VmLck:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    #[test]
    fn read_into_cache_reads_the_range_and_stops_at_the_end_of_the_file() {
        // Many pieces, and an end that is not a piece's.
        let len = (READ_THROUGH_CHUNK * 130 + 5) as u64;
        let f = TempFile::new("read-through", &vec![3u8; len as usize]);
        let fd = open_read(&f.0).unwrap();
        // Written pages are dirty, and DONTNEED skips them: write them out
        // first so that the range starts out of the cache.
        fs::File::open(&f.0).unwrap().sync_all().unwrap();
        fadvise(&fd, 0, 0, Advice::DontNeed).unwrap();
        assert_eq!(read_into_cache(&fd, 0, len).unwrap(), len);
        match cachestat(&fd, 0, len) {
            Ok(c) => assert_eq!(c.cached * 4096, len.div_ceil(4096) * 4096, "{c:?}"),
            // No cachestat() (kernels before 6.5): the read's count is the check.
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::ENOSYS), "{e}"),
        }
        // Past the end: what is there.
        assert_eq!(read_into_cache(&fd, len - 5, 1 << 20).unwrap(), 5);
        assert_eq!(read_into_cache(&fd, len, 10).unwrap(), 0);
    }

    /// The folios `len` bytes of `fd` sit in, counted through a mapping of
    /// them (`/proc/self/pagemap` for each page's frame, `/proc/kpageflags`
    /// for whether it is a compound page's tail): `None` without the right
    /// to read frame numbers (root), or when a page is not in memory.
    fn folios_of(fd: &OwnedFd, len: usize) -> Option<usize> {
        use std::io::{Seek, SeekFrom};
        const PAGE: usize = 4096;
        const KPF_COMPOUND_TAIL: u64 = 1 << 16;
        let m = map_locked(fd, len).ok()?;
        let base = m.addr.as_ptr() as usize;
        let mut pagemap = fs::File::open("/proc/self/pagemap").ok()?;
        let mut flags = fs::File::open("/proc/kpageflags").ok()?;
        let mut folios = 0;
        let mut word = [0u8; 8];
        for i in 0..len.div_ceil(PAGE) {
            pagemap
                .seek(SeekFrom::Start(((base / PAGE + i) * 8) as u64))
                .ok()?;
            pagemap.read_exact(&mut word).ok()?;
            let entry = u64::from_ne_bytes(word);
            let pfn = entry & ((1 << 55) - 1);
            if entry >> 63 == 0 || pfn == 0 {
                return None;
            }
            flags.seek(SeekFrom::Start(pfn * 8)).ok()?;
            flags.read_exact(&mut word).ok()?;
            if u64::from_ne_bytes(word) & KPF_COMPOUND_TAIL == 0 {
                folios += 1;
            }
        }
        Some(folios)
    }

    /// The regression test of the lab's "switch": a popular file read in
    /// by `WILLNEED` (and pinned) sat in 4 KiB folios and was sent at a
    /// third of the rate of one its readers had read in.
    #[test]
    fn read_into_cache_brings_a_file_in_folios_as_large_as_a_reader_gets() {
        let _ = crate::sys::process::raise_memlock_limit(8 << 20);
        let len = 4 << 20;
        let f = TempFile::new("folios", &vec![9u8; len]);
        fs::File::open(&f.0).unwrap().sync_all().unwrap();
        let fd = open_read(&f.0).unwrap();
        let pages = len / 4096;
        // What a plain reader gets (8 KiB reads front to back).
        fadvise(&fd, 0, 0, Advice::DontNeed).unwrap();
        std::io::copy(&mut fs::File::open(&f.0).unwrap(), &mut std::io::sink()).unwrap();
        let reader = folios_of(&fd, len);
        crate::require_or_skip!(
            reader.is_some(),
            "page frame numbers are readable by root only (/proc/self/pagemap)"
        );
        let reader = reader.unwrap();
        crate::require_or_skip!(
            reader * 2 < pages,
            "this file system caches a file read front to back in 4 KiB folios ({reader} for {pages} pages)"
        );
        fadvise(&fd, 0, 0, Advice::DontNeed).unwrap();
        assert_eq!(read_into_cache(&fd, 0, len as u64).unwrap(), len as u64);
        let read = folios_of(&fd, len).expect("the file's pages after reading it");
        assert!(
            read * 2 < pages,
            "read_into_cache left {read} folios for {pages} pages (a reader: {reader})"
        );
    }

    #[test]
    fn a_locked_mapping_holds_its_pages_until_dropped() {
        let _ = crate::sys::process::raise_memlock_limit(1 << 20);
        crate::require_or_skip!(
            crate::sys::process::memlock_limit().unwrap() >= 256 * 1024,
            "RLIMIT_MEMLOCK is below 256 KiB and cannot be raised"
        );
        let f = TempFile::new("locked", &vec![7u8; 256 * 1024]);
        let fd = open_read(&f.0).unwrap();
        let before = locked_kib();
        let m = map_locked(&fd, 256 * 1024).expect("mmap + mlock of 256 KiB");
        assert_eq!(m.len(), 256 * 1024);
        // Other tests of this process may lock or unlock meanwhile; ours
        // alone is 256 KiB.
        assert!(
            locked_kib() >= before + 256,
            "VmLck {} after {before}",
            locked_kib()
        );
        let during = locked_kib();
        drop(m);
        assert!(locked_kib() + 256 <= during, "unlocked on drop");
        assert_eq!(
            map_locked(&fd, 0).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
    }

    #[test]
    fn open_cached_succeeds_on_a_just_created_file() {
        let f = TempFile::new("cached", b"hello");
        let fd = open_cached(&f.0).expect("openat2 RESOLVE_CACHED on a hot path");
        let meta = fstat(&fd).unwrap();
        assert_eq!(meta.size, 5);
        assert_eq!(meta.kind, FileKind::Regular);
        let fd2 = open_nofollow_cached(&f.0).expect("no symlinks in a temp path");
        assert_eq!(fstat(&fd2).unwrap().ino, meta.ino);
    }

    #[test]
    fn preadv2_nowait_append_adds_what_it_read_after_what_was_there() {
        let f = TempFile::new("append", b"0123456789");
        let fd = open_read(&f.0).unwrap();
        // The file was just written: its pages are cached.
        let mut buf = b"ab".to_vec();
        assert_eq!(preadv2_nowait_append(&fd, &mut buf, 4, 3).unwrap(), 4);
        assert_eq!(buf, b"ab3456");
        // Past the end: what is there, then nothing.
        assert_eq!(preadv2_nowait_append(&fd, &mut buf, 100, 8).unwrap(), 2);
        assert_eq!(buf, b"ab345689");
        assert_eq!(preadv2_nowait_append(&fd, &mut buf, 100, 10).unwrap(), 0);
        assert_eq!(buf.len(), 8);
    }

    #[test]
    fn open_errors_keep_errno() {
        let missing = Path::new("/nonexistent-nowait-dir/x");
        // The slow open leaves a negative dentry behind, so the cached lookup
        // can then answer ENOENT on the loop instead of EAGAIN.
        assert_eq!(
            open_read(missing).unwrap_err().raw_os_error(),
            Some(libc::ENOENT)
        );
        assert_eq!(
            open_cached(missing).unwrap_err().raw_os_error(),
            Some(libc::ENOENT)
        );
        assert_eq!(
            stat(missing).unwrap_err().raw_os_error(),
            Some(libc::ENOENT)
        );
        let nul = Path::new("a\0b");
        assert_eq!(
            open_read(nul).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
    }

    #[test]
    fn nofollow_refuses_symlinks() {
        let f = TempFile::new("target", b"x");
        let link = std::env::temp_dir().join(format!("nowait-sys-{}-link", std::process::id()));
        let _ = fs::remove_file(&link);
        std::os::unix::fs::symlink(&f.0, &link).unwrap();
        let err = open_nofollow_cached(&link).unwrap_err();
        assert_eq!(lstat(&link).unwrap().kind, FileKind::Symlink);
        assert_eq!(stat(&link).unwrap().kind, FileKind::Regular);
        fs::remove_file(&link).unwrap();
        assert_eq!(err.raw_os_error(), Some(libc::ELOOP));
    }

    #[test]
    fn write_behind_leaves_nothing_dirty_before_the_last_write() {
        use std::os::unix::fs::FileExt;
        // Beside the build (a disk file system; /tmp may be tmpfs, which has
        // no writeback).
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join(format!("nowait-wb-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let f = fs::File::create(&path).unwrap();
        let piece = vec![7u8; 64 * 1024];
        for i in 0..4u64 {
            f.write_all_at(&piece, i * piece.len() as u64).unwrap();
            write_behind(&f, i * piece.len() as u64, piece.len() as u64).unwrap();
        }
        // cachestat counts the dirty and under-writeback pages of a range:
        // the first three writes are on the device.
        let c = cachestat(&f, 0, 3 * piece.len() as u64).unwrap();
        assert_eq!((c.dirty, c.writeback), (0, 0), "{c:?}");
        // Not a file: the kernel's error, not a silent success.
        let (r, _w) = pipe().unwrap();
        assert_eq!(
            write_behind(&r, 0, 1).unwrap_err().raw_os_error(),
            Some(libc::ESPIPE)
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stat_reports_directories() {
        let meta = stat(&std::env::temp_dir()).unwrap();
        assert_eq!(meta.kind, FileKind::Directory);
        let dir = open_read(&std::env::temp_dir()).unwrap();
        assert_eq!(fstat(&dir).unwrap().kind, FileKind::Directory);
    }

    #[test]
    fn pread_and_preadv2_nowait_read_a_just_written_file() {
        let f = TempFile::new("pread", b"0123456789");
        let fd = open_read(&f.0).unwrap();
        let mut buf = [0u8; 4];
        assert_eq!(pread(&fd, &mut buf, 3).unwrap(), 4);
        assert_eq!(&buf, b"3456");
        let mut buf = [0u8; 16];
        let n = preadv2_nowait(&fd, &mut buf, 6).expect("RWF_NOWAIT on cached data");
        assert_eq!(&buf[..n], b"6789");
        assert_eq!(
            preadv2_nowait(&fd, &mut buf, 10).unwrap(),
            0,
            "EOF is 0, not EAGAIN"
        );
    }

    #[test]
    fn probe_nowait_counts_the_readable_prefix() {
        let f = TempFile::new("probe", &vec![3u8; 100 * 1024]);
        let fd = open_read(&f.0).unwrap();
        let mut sink = [0u8; 4096];
        // 100 KiB just written: all of it in memory, probed through 4 KiB.
        assert_eq!(
            probe_nowait(&fd, &mut sink, 0, 100 * 1024).unwrap(),
            100 * 1024
        );
        assert_eq!(sink[0], 3);
        // Bounded by the iovecs, by the end of the file, 0 past it.
        assert_eq!(
            probe_nowait(&fd, &mut sink[..16], 0, 100 * 1024).unwrap(),
            16 * PROBE_IOVECS
        );
        assert_eq!(probe_nowait(&fd, &mut sink, 99 * 1024, 8192).unwrap(), 1024);
        assert_eq!(probe_nowait(&fd, &mut sink, 200 * 1024, 8192).unwrap(), 0);
        // Written back, then dropped from the page cache: the first page
        // is not readable without the disk now.
        fs::File::open(&f.0).unwrap().sync_all().unwrap();
        fadvise(&fd, 0, 0, Advice::DontNeed).unwrap();
        match probe_nowait(&fd, &mut sink, 0, 8192) {
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EAGAIN)),
            // tmpfs keeps its pages: nothing to drop.
            Ok(n) => assert_eq!(n, 8192),
        }
    }

    #[test]
    fn cachestat_reports_cached_pages_of_a_written_file() {
        let f = TempFile::new("cachestat", &vec![7u8; 64 * 1024]);
        let fd = open_read(&f.0).unwrap();
        let cs = cachestat(&fd, 0, 0).expect("cachestat (Linux 6.5+)");
        assert_eq!(
            cs.cached, 16,
            "64 KiB just written = 16 pages of 4 KiB: {cs:?}"
        );
        let first = cachestat(&fd, 0, 4096).unwrap();
        assert_eq!(first.cached, 1);
        fadvise(&fd, 0, 0, Advice::Sequential).unwrap();
    }

    #[test]
    fn sendfile_into_a_socketpair() {
        let f = TempFile::new("sendfile", b"abcdefghij");
        let fd = open_read(&f.0).unwrap();
        let (mut a, b) = UnixStream::pair().unwrap();
        let mut off = 2;
        let n = sendfile(&b, &fd, &mut off, 5).unwrap();
        assert_eq!((n, off), (5, 7));
        drop(b);
        let mut got = Vec::new();
        a.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"cdefg");
    }

    #[test]
    fn pipe_and_nonblocking() {
        let (r, w) = pipe().unwrap();
        set_nonblocking(&r, true).unwrap();
        let mut buf = [0u8; 1];
        let mut reader = std::fs::File::from(r);
        assert_eq!(
            reader.read(&mut buf).unwrap_err().kind(),
            std::io::ErrorKind::WouldBlock
        );
        drop(w);
        assert_eq!(reader.read(&mut buf).unwrap(), 0);
    }

    #[test]
    fn sendfile_stops_at_end_of_file() {
        let f = TempFile::new("sendfile-eof", b"xyz");
        let fd = open_read(&f.0).unwrap();
        let (mut a, b) = UnixStream::pair().unwrap();
        let mut off = 0;
        assert_eq!(sendfile(&b, &fd, &mut off, 100).unwrap(), 3);
        assert_eq!(sendfile(&b, &fd, &mut off, 100).unwrap(), 0);
        drop(b);
        let mut got = String::new();
        a.read_to_string(&mut got).unwrap();
        assert_eq!(got, "xyz");
    }

    /// `disable_symlinks`: a link anywhere after the unchecked prefix
    /// fails with `ELOOP` (`on`), the same owner passes (`if_not_owner`),
    /// and the loop's form answers `EAGAIN` for the walk it cannot make.
    #[test]
    fn link_rules() {
        let dir = std::env::temp_dir().join(format!("nowait-links-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("real")).unwrap();
        fs::write(dir.join("real/f"), b"x").unwrap();
        std::os::unix::fs::symlink("real", dir.join("link")).unwrap();
        std::os::unix::fs::symlink("f", dir.join("real/flink")).unwrap();
        let refuse = Links {
            policy: LinkPolicy::Refuse,
            from: 0,
        };
        let owner = Links {
            policy: LinkPolicy::RefuseIfNotOwner,
            from: 0,
        };
        let errno =
            |r: io::Result<(Option<OwnedFd>, FileMeta)>| r.err().and_then(|e| e.raw_os_error());
        assert!(open_regular_links(&dir.join("real/f"), false, refuse).is_ok());
        assert_eq!(
            errno(open_regular_links(&dir.join("link/f"), false, refuse)),
            Some(libc::ELOOP)
        );
        assert_eq!(
            errno(open_regular_links(&dir.join("real/flink"), false, refuse)),
            Some(libc::ELOOP)
        );
        // The walk nginx makes without openat2 refuses them too.
        use std::os::unix::ffi::OsStrExt;
        let walk = |p: &std::path::Path| walk_open(p.as_os_str().as_bytes(), 0, READ_FLAGS, false);
        assert!(walk(&dir.join("real/f")).is_ok());
        assert!(walk(&dir.join("link/f")).is_err());
        assert_eq!(
            walk(&dir.join("real/flink"))
                .err()
                .and_then(|e| e.raw_os_error()),
            Some(libc::ELOOP)
        );
        // Links of the same owner pass `if_not_owner`.
        assert!(open_regular_links(&dir.join("link/flink"), false, owner).is_ok());
        assert_eq!(
            errno(open_regular_links(&dir.join("real/f"), true, owner)),
            Some(libc::EAGAIN)
        );
        // `from=`: the link inside the unchecked prefix is followed.
        let prefix = dir.join("link");
        let from = Links {
            policy: LinkPolicy::Refuse,
            from: prefix.as_os_str().len(),
        };
        assert!(open_regular_links(&dir.join("link/f"), false, from).is_ok());
        assert!(stat_links(&dir.join("link"), false, refuse).is_err());
        assert!(stat_links(&dir.join("real"), false, refuse).is_ok());
        fs::remove_dir_all(&dir).unwrap();
    }
}

/// A file's first `len` bytes mapped read-only and shared, and locked in
/// memory (`mmap` + `mlock`): while it lives, the file's pages in that range
/// stay in the page cache and up to date — reclaim cannot take them — so a
/// `sendfile()` of the range never waits for a read. Nothing reads through
/// the mapping; dropping it (`munmap`) unlocks the pages.
#[derive(Debug)]
pub struct LockedMapping {
    addr: std::ptr::NonNull<libc::c_void>,
    len: usize,
}

// SAFETY: the mapping is never read or written through `addr`; the pointer
// is only handed back to munmap, from whichever thread drops it.
unsafe impl Send for LockedMapping {}
// SAFETY: as above; `&LockedMapping` allows nothing but `len()`.
unsafe impl Sync for LockedMapping {}

impl LockedMapping {
    /// The mapped (and locked) length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never: [`map_locked`] refuses 0).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for LockedMapping {
    fn drop(&mut self) {
        // SAFETY: addr/len are exactly what mmap returned and nothing else
        // refers to the mapping; munmap of a valid mapping cannot fail.
        unsafe { libc::munmap(self.addr.as_ptr(), self.len) };
    }
}

/// Maps `fd`'s first `len` bytes and locks them in memory: the pages not in
/// the page cache are read in first, so this waits on the disk — call it
/// from a pool thread. `ENOMEM`/`EAGAIN` say the locked-memory limit
/// (`RLIMIT_MEMLOCK`) or the file's end was reached; `len` 0 is `EINVAL`.
pub fn map_locked(fd: impl AsFd, len: usize) -> io::Result<LockedMapping> {
    if len == 0 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: a new mapping chosen by the kernel (addr NULL), of a
    // descriptor the caller holds; the result is checked against
    // MAP_FAILED before use.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd.as_fd().as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let Some(addr) = std::ptr::NonNull::new(addr) else {
        return Err(io::Error::from_raw_os_error(libc::ENOMEM));
    };
    // Owned from here: an error below unmaps it on drop.
    let mapping = LockedMapping { addr, len };
    // SAFETY: the range is the mapping just made.
    cvt(unsafe { libc::mlock(mapping.addr.as_ptr(), len) })?;
    Ok(mapping)
}
