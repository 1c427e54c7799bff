//! Every raw system call nowait makes, behind safe wrappers.
//!
//! This is the one module allowed `unsafe`; each block states its contract in a
//! `// SAFETY:` comment. Wrappers return [`std::io::Error`] carrying errno so
//! callers can log which call failed on which path, in nginx's words, through
//! [`SysError`]:
//!
//! ```text
//! openat2() "/srv/www/index.html" failed (11: Resource temporarily unavailable)
//! ```
//!
//! Each file covers one area and exports, beside every wrapper, the name it is
//! logged under (nginx's `ngx_open_file_n` habit):
//!
//! - [`error`]: [`SysError`] and [`SysResultExt`], the nginx-style message.
//! - [`file`](mod@file): `openat2(RESOLVE_CACHED)`, `open`, `fstat`/`stat`/`lstat`,
//!   `pread`, `preadv2(RWF_NOWAIT)`, `cachestat`, `sendfile`, `posix_fadvise`,
//!   `sync_file_range` (write-behind).
//! - [`dir`]: opening a directory (`openat2(O_DIRECTORY, RESOLVE_CACHED)`),
//!   reading its names (`fdopendir`/`readdir`) and `fstatat` of each.
//! - [`socket`]: the TCP options nginx directives map to (`tcp_nopush`,
//!   `tcp_nodelay`), through socket2 where it has them.
//! - [`landlock`]: confining the process to the paths it serves (Landlock).
//! - [`privsep`]: the channel to the privileged helper (`SCM_RIGHTS`), the
//!   process-wide privilege drop (capabilities, `PR_SET_NO_NEW_PRIVS`).
//! - [`process`]: users and groups, privilege drop, `kill`, `daemonize`, ids.
//! - [`crypt`]: `crypt_r()` of libcrypt, for `auth_basic`.
//! - [`env`]: replacing the process's environment (`env`), after `tzset`.
//! - [`random`]: `getrandom` and `gethostname`.
//! - [`sched`]: a thread's nice value and the CPUs it may run on.
//! - [`signal`]: blocking the control signals and waiting for them on one thread.
//! - [`time`]: `localtime_r` and the three timestamp formats nginx logs use.
//! - [`waker`]: wakers that carry a number (a parked connection's slot).
//! - [`alloc`]: the global allocator (mimalloc, its plain path for naturally
//!   aligned blocks).
//!
//! What this module must not do: decide policy. It never retries, falls back,
//! logs or offloads; callers (`io`, `server`, `process`) do.

#![allow(unsafe_code)]

pub mod alloc;
pub mod crypt;
pub mod dir;
pub mod env;
pub mod epoll;
pub mod error;
pub mod file;
pub mod landlock;
pub mod privsep;
pub mod process;
pub mod random;
pub mod sched;
pub mod signal;
pub mod socket;
pub mod time;
pub mod waker;

pub use error::{SysError, SysResultExt};

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Converts `path` to the NUL-terminated form the kernel takes.
///
/// A path with an interior NUL cannot name a file; it fails with `EINVAL`, as
/// the kernel would for a name it cannot represent.
fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Converts a plain string (user or group name) to a C string, `EINVAL` on NUL.
fn c_string(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Turns the `-1`/errno convention into an [`io::Result`].
fn cvt<T: Default + PartialOrd>(ret: T) -> io::Result<T> {
    if ret < T::default() {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Turns the "returns the error number" convention (pthread, posix_fadvise,
/// `*_r` lookups) into an [`io::Result`].
fn cvt_errno(ret: libc::c_int) -> io::Result<()> {
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(ret))
    }
}
