//! Process-wide calls: identities, users and groups, privilege drop,
//! signalling another process, daemonizing.
//!
//! `daemonize` and `drop_privileges` change the whole process; call them from
//! the main thread during startup, in that order, before any thread (worker,
//! pool, log writer, signal thread) is spawned.

use super::error::{SysError, SysResultExt};
use super::{c_string, cvt, cvt_errno};
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

/// Log name of [`getpwnam`].
pub const GETPWNAM: &str = "getpwnam";
/// Log name of [`getgrnam`].
pub const GETGRNAM: &str = "getgrnam";
/// Log name of the `setgid` step of [`drop_privileges`].
pub const SETGID: &str = "setgid";
/// Log name of the `initgroups` step of [`drop_privileges`].
pub const INITGROUPS: &str = "initgroups";
/// Log name of the `setuid` step of [`drop_privileges`].
pub const SETUID: &str = "setuid";
/// Log name of [`kill`].
pub const KILL: &str = "kill";
/// Log name of the `fork` step of [`daemonize`].
pub const FORK: &str = "fork";
/// Log name of the `setsid` step of [`daemonize`].
pub const SETSID: &str = "setsid";
/// Log name of the `dup2` steps of [`daemonize`].
pub const DUP2: &str = "dup2";

/// Starting size of the buffer for `getpwnam_r`/`getgrnam_r`; doubled on
/// `ERANGE` up to [`MAX_NSS_BUFFER`].
const NSS_BUFFER: usize = 1024;
/// Largest buffer tried for one user or group entry (a group with very many
/// members needs a lot).
const MAX_NSS_BUFFER: usize = 1 << 20;

/// The process id (`getpid`).
pub fn getpid() -> u32 {
    std::process::id()
}

/// The calling thread's kernel id (`gettid`): the `#tid` of error log lines.
pub fn gettid() -> u32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// The effective user id (`geteuid`): privileges can be dropped only from 0.
pub fn geteuid() -> u32 {
    // SAFETY: geteuid takes no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// A user entry: its id and primary group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct User {
    /// `pw_uid`.
    pub uid: u32,
    /// `pw_gid`, the primary group.
    pub gid: u32,
}

/// `getpwnam_r(name)`. A missing user is `NotFound` with errno unset, so it
/// logs as `getpwnam("name") failed (no such user)`.
pub fn getpwnam(name: &str) -> io::Result<User> {
    let cname = c_string(name)?;
    let mut buf = vec![0 as libc::c_char; NSS_BUFFER];
    loop {
        let mut pw = std::mem::MaybeUninit::<libc::passwd>::uninit();
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer refers to live, writable storage of the size
        // passed; getpwnam_r fills `pw` (pointing its strings into `buf`) and
        // sets `result` to `pw` or null.
        let ret = unsafe {
            libc::getpwnam_r(
                cname.as_ptr(),
                pw.as_mut_ptr(),
                buf.as_mut_ptr(),
                buf.len(),
                &mut result,
            )
        };
        if ret == libc::ERANGE && buf.len() < MAX_NSS_BUFFER {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        cvt_errno(ret)?;
        if result.is_null() {
            return Err(io::Error::new(io::ErrorKind::NotFound, "no such user"));
        }
        // SAFETY: `result` is non-null, so `pw` was filled in.
        let pw = unsafe { pw.assume_init() };
        return Ok(User {
            uid: pw.pw_uid,
            gid: pw.pw_gid,
        });
    }
}

/// `getgrnam_r(name)` → gid. A missing group is `NotFound` ("no such group").
pub fn getgrnam(name: &str) -> io::Result<u32> {
    let cname = c_string(name)?;
    let mut buf = vec![0 as libc::c_char; NSS_BUFFER];
    loop {
        let mut gr = std::mem::MaybeUninit::<libc::group>::uninit();
        let mut result: *mut libc::group = std::ptr::null_mut();
        // SAFETY: as in getpwnam: live, writable storage of the sizes passed.
        let ret = unsafe {
            libc::getgrnam_r(
                cname.as_ptr(),
                gr.as_mut_ptr(),
                buf.as_mut_ptr(),
                buf.len(),
                &mut result,
            )
        };
        if ret == libc::ERANGE && buf.len() < MAX_NSS_BUFFER {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        cvt_errno(ret)?;
        if result.is_null() {
            return Err(io::Error::new(io::ErrorKind::NotFound, "no such group"));
        }
        // SAFETY: `result` is non-null, so `gr` was filled in.
        return Ok(unsafe { gr.assume_init() }.gr_gid);
    }
}

/// Becomes `user:group` for good: `setgid(gid)`, `initgroups(user, gid)`,
/// `setuid(uid)`, in that order (the group calls need root). Each failure is
/// returned with its call and argument, e.g. `setuid(65534) failed (1:
/// Operation not permitted)`; the caller must exit on it, never continue as
/// root. Call before spawning threads: on Linux these calls are per thread at
/// the kernel level and glibc only broadcasts them to threads it knows of.
pub fn drop_privileges(user: &str, group: &str) -> Result<(), SysError> {
    let pw = getpwnam(user).on_arg(GETPWNAM, format!("\"{user}\""))?;
    let gid = getgrnam(group).on_arg(GETGRNAM, format!("\"{group}\""))?;
    // SAFETY: plain integer argument.
    cvt(unsafe { libc::setgid(gid) }).on_arg(SETGID, gid.to_string())?;
    let cuser = c_string(user).on_arg(INITGROUPS, format!("{user}, {gid}"))?;
    // SAFETY: `cuser` is NUL-terminated and outlives the call.
    cvt(unsafe { libc::initgroups(cuser.as_ptr(), gid) })
        .on_arg(INITGROUPS, format!("{user}, {gid}"))?;
    // SAFETY: plain integer argument.
    cvt(unsafe { libc::setuid(pw.uid) }).on_arg(SETUID, pw.uid.to_string())?;
    Ok(())
}

/// `kill(pid, sig)`: `-s reload` and friends send the signal to the pid in
/// the pid file. `ESRCH` means no such process (a stale pid file).
pub fn kill(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: plain integer arguments.
    cvt(unsafe { libc::kill(pid, sig) })?;
    Ok(())
}

/// Detaches from the terminal, nginx style: `fork()`, the parent `_exit(0)`s,
/// the child becomes a session leader (`setsid()`) and points stdin, stdout
/// and stderr at `/dev/null`. Returns in the child only.
///
/// Must be called before any thread is spawned (tokio runtimes, pools, log
/// writers, the signal thread): `fork()` copies only the calling thread, so
/// threads started earlier would be missing in the child, with whatever locks
/// they held (the allocator's, stdio's) left locked forever. This is checked,
/// not only documented: with more than one thread running the call fails
/// before forking. Between `fork()` and the return the child makes only raw
/// system calls on what was prepared before (no allocation, no lock), and
/// builds its error, if any, after them. Startup errors must already have
/// been printed: stderr is gone afterwards (the error log takes over).
pub fn daemonize() -> Result<(), SysError> {
    let threads = thread_count().on_path("opendir", Path::new(TASKS_DIR))?;
    if threads != 1 {
        return Err(SysError::new(
            FORK,
            io::Error::other(format!(
                "{threads} threads are running; daemonizing needs the only one"
            )),
        ));
    }
    // SAFETY: the process has one thread (checked above), so the child is a
    // complete copy of it.
    let pid = cvt(unsafe { libc::fork() }).on_call(FORK)?;
    if pid != 0 {
        // SAFETY: _exit ends the parent at once, without running atexit
        // handlers or flushing stdio buffers the child also holds.
        unsafe { libc::_exit(0) };
    }
    detach().map_err(|(call, errno)| {
        let e = io::Error::from_raw_os_error(errno);
        match call {
            OPEN => SysError::with_path(call, DEV_NULL_PATH, e),
            _ => SysError::new(call, e),
        }
    })
}

/// Where a process lists its threads, one directory each.
const TASKS_DIR: &str = "/proc/self/task";
/// `/dev/null`, NUL-terminated before the fork so that the child need not
/// allocate to name it.
const DEV_NULL: &CStr = c"/dev/null";
/// [`DEV_NULL`] for messages.
const DEV_NULL_PATH: &str = "/dev/null";
/// Log name of the `open` step of [`daemonize`].
const OPEN: &str = "open";

/// How many threads the process runs now.
fn thread_count() -> io::Result<usize> {
    Ok(std::fs::read_dir(TASKS_DIR)?.count())
}

/// The child's part of [`daemonize`]: `setsid()`, then `/dev/null` onto
/// descriptors 0, 1 and 2. Raw calls only, async-signal-safe; a failure is
/// the call's name and errno.
fn detach() -> Result<(), (&'static str, i32)> {
    let errno = || {
        io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    // SAFETY: no arguments; fails only if we already lead a process group,
    // which a fresh child never does.
    if unsafe { libc::setsid() } < 0 {
        return Err((SETSID, errno()));
    }
    // SAFETY: `DEV_NULL` is a NUL-terminated static string.
    let fd = unsafe { libc::open(DEV_NULL.as_ptr(), libc::O_RDWR) };
    if fd < 0 {
        return Err((OPEN, errno()));
    }
    for target in [libc::STDIN_FILENO, libc::STDOUT_FILENO, libc::STDERR_FILENO] {
        // SAFETY: `fd` is open; dup2 atomically replaces `target`.
        if unsafe { libc::dup2(fd, target) } < 0 {
            return Err((DUP2, errno()));
        }
    }
    if fd > libc::STDERR_FILENO {
        // SAFETY: `fd` is ours and no longer needed; 0–2 now hold copies.
        unsafe { libc::close(fd) };
    }
    Ok(())
}

/// The name of the user running us, for messages (`getpwuid_r(geteuid())`).
pub fn current_user_name() -> Option<String> {
    let mut buf = vec![0 as libc::c_char; NSS_BUFFER];
    let mut pw = std::mem::MaybeUninit::<libc::passwd>::uninit();
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: live, writable storage of the sizes passed, as in getpwnam.
    let ret = unsafe {
        libc::getpwuid_r(
            geteuid(),
            pw.as_mut_ptr(),
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        )
    };
    if ret != 0 || result.is_null() {
        return None;
    }
    // SAFETY: `result` is non-null, so `pw` was filled and `pw_name` points to
    // a NUL-terminated string inside `buf`, which is still alive.
    let name = unsafe { CStr::from_ptr(pw.assume_init().pw_name) };
    Some(name.to_string_lossy().into_owned())
}

/// Log name of [`getgrouplist`].
pub const GETGROUPLIST: &str = "getgrouplist";
/// Log name of [`drop_thread_privileges`] (the raw `setresuid` system call).
pub const SETRESUID: &str = "setresuid";

/// The supplementary groups of `user` whose primary group is `gid`
/// (`getgrouplist()`), to hand to [`drop_thread_privileges`].
pub fn getgrouplist(user: &str, gid: u32) -> io::Result<Vec<u32>> {
    let cuser = c_string(user)?;
    let mut n: libc::c_int = 32;
    loop {
        let mut groups = vec![0 as libc::gid_t; n as usize];
        let want = n;
        // SAFETY: `cuser` is NUL-terminated; `groups` has room for `n`
        // entries and `n` tells the call so; it writes the needed count back.
        let ret = unsafe { libc::getgrouplist(cuser.as_ptr(), gid, groups.as_mut_ptr(), &mut n) };
        if ret >= 0 {
            groups.truncate(n as usize);
            return Ok(groups);
        }
        if n <= want {
            n = want * 2;
        }
        if n > 65536 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
    }
}

/// Drops the privileges of the calling thread only: `setgroups`,
/// `setresgid`, `setresuid` as raw system calls. On Linux credentials belong
/// to threads; the C library's wrappers change every thread of the process,
/// these do not. nowait uses this so that its worker and pool threads serve
/// as the `user` of the configuration while the main thread keeps root for
/// reloads, as nginx's master process does. Fails loudly; the caller must
/// not go on serving as root.
pub fn drop_thread_privileges(uid: u32, gid: u32, groups: &[u32]) -> Result<(), SysError> {
    // SAFETY: `groups` is a live slice of gid_t-sized integers of the length
    // passed; the call only reads it.
    let r = unsafe { libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr()) };
    cvt(r as libc::c_int).on_arg("setgroups", format!("{} groups", groups.len()))?;
    // SAFETY: integer arguments only.
    let r = unsafe { libc::syscall(libc::SYS_setresgid, gid, gid, gid) };
    cvt(r as libc::c_int).on_arg("setresgid", gid.to_string())?;
    // SAFETY: integer arguments only.
    let r = unsafe { libc::syscall(libc::SYS_setresuid, uid, uid, uid) };
    cvt(r as libc::c_int).on_arg(SETRESUID, uid.to_string())?;
    Ok(())
}

/// `getrlimit(resource)`.
fn get_rlimit(resource: libc::__rlimit_resource_t) -> io::Result<libc::rlimit> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is writable storage for one `struct rlimit`.
    cvt(unsafe { libc::getrlimit(resource, &mut lim) })?;
    Ok(lim)
}

/// Sets `resource`'s soft limit to `n`, raising the hard limit to `n` if it
/// is lower (which needs privilege) but never lowering it.
fn raise_rlimit(resource: libc::__rlimit_resource_t, n: u64) -> io::Result<()> {
    let mut lim = get_rlimit(resource)?;
    lim.rlim_cur = n;
    lim.rlim_max = lim.rlim_max.max(n);
    // SAFETY: `lim` is a valid `struct rlimit`.
    cvt(unsafe { libc::setrlimit(resource, &lim) })?;
    Ok(())
}

/// The soft `RLIMIT_NOFILE`: how many descriptors this process may hold.
pub fn nofile_limit() -> io::Result<u64> {
    Ok(get_rlimit(libc::RLIMIT_NOFILE)?.rlim_cur)
}

/// Sets the soft `RLIMIT_NOFILE` to `n` (`worker_rlimit_nofile`), raising
/// the hard limit to `n` if it is lower (which needs privilege) but never
/// lowering it: in one long-lived process a lowered hard limit could not be
/// raised again by a later reload, as nginx's master can for new workers.
pub fn set_nofile_limit(n: u64) -> io::Result<()> {
    raise_rlimit(libc::RLIMIT_NOFILE, n)
}

/// The soft `RLIMIT_MEMLOCK`: how many bytes this process may lock.
pub fn memlock_limit() -> io::Result<u64> {
    Ok(get_rlimit(libc::RLIMIT_MEMLOCK)?.rlim_cur)
}

/// Raises `RLIMIT_MEMLOCK` (soft, and hard if lower) to at least `bytes`:
/// root can, before it gives up root; others get `EPERM` above their hard
/// limit. A higher limit is left as it is.
pub fn raise_memlock_limit(bytes: u64) -> io::Result<()> {
    if memlock_limit()? >= bytes {
        return Ok(());
    }
    raise_rlimit(libc::RLIMIT_MEMLOCK, bytes)
}

/// Grows this process's descriptor table to hold at least `n` descriptors
/// now, so that a worker never grows it while serving: growing a shared
/// table waits for an RCU grace period (`expand_fdtable`), milliseconds a
/// loop would stall. The table never shrinks. Capped by `RLIMIT_NOFILE`.
/// Returns the size reserved.
pub fn reserve_fds(n: u64) -> io::Result<u64> {
    let n = n.min(nofile_limit()?).min(i32::MAX as u64);
    if n < 2 {
        return Ok(0);
    }
    // SAFETY: a constant NUL-terminated path; the result is checked.
    let root = cvt(unsafe { libc::open(c"/".as_ptr(), libc::O_PATH | libc::O_CLOEXEC) })?;
    // SAFETY: `root` is the descriptor just opened, owned by nobody else.
    let root = unsafe { OwnedFd::from_raw_fd(root) };
    // The lowest free descriptor at or above n - 1: the table now has room
    // for n. Closed at once.
    // SAFETY: plain integer arguments on a borrowed descriptor.
    let high = cvt(unsafe {
        libc::fcntl(
            root.as_raw_fd(),
            libc::F_DUPFD_CLOEXEC,
            (n - 1) as libc::c_int,
        )
    })?;
    // SAFETY: fcntl succeeded: `high` is a new descriptor nobody else owns.
    drop(unsafe { OwnedFd::from_raw_fd(high) });
    Ok(n)
}

#[cfg(test)]
mod tests {

    #[test]
    fn reserving_descriptors_grows_the_table_now() {
        let fd_size = || {
            std::fs::read_to_string("/proc/self/status")
                .unwrap()
                .lines()
                .find_map(|l| l.strip_prefix("FDSize:"))
                .map(|v| v.trim().parse::<u64>().unwrap())
                .unwrap()
        };
        let want = fd_size() * 4;
        let got = reserve_fds(want).unwrap();
        assert!(got > 1, "RLIMIT_NOFILE too small to test");
        assert!(fd_size() >= got, "FDSize {} < {got}", fd_size());
    }

    use super::*;

    #[test]
    fn root_user_and_group_resolve() {
        assert_eq!(getpwnam("root").unwrap(), User { uid: 0, gid: 0 });
        assert_eq!(getgrnam("root").unwrap(), 0);
    }

    #[test]
    fn missing_user_logs_like_nginx() {
        let err = drop_privileges("no-such-user-nowait", "root").unwrap_err();
        assert_eq!(
            err.to_string(),
            "getpwnam(\"no-such-user-nowait\") failed (no such user)"
        );
        let err = getgrnam("no-such-group-nowait").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn ids_and_kill() {
        assert_eq!(getpid(), std::process::id());
        assert_ne!(gettid(), 0);
        assert!(current_user_name().is_some());
        kill(getpid() as i32, 0).expect("signal 0 to ourselves");
        // No pid can be this large (pid_max is at most 2^22).
        assert_eq!(
            kill(i32::MAX, 0).unwrap_err().raw_os_error(),
            Some(libc::ESRCH)
        );
    }

    /// Runs `daemonize` in a forked child so the test process survives: the
    /// child's `_exit(0)` stands for the shell seeing the server return, and
    /// the grandchild reports over a pipe that it leads its own session and
    /// that stdin is /dev/null. Only async-signal-safe calls follow the fork.
    #[test]
    fn daemonize_refuses_a_process_with_threads() {
        // SAFETY: the child spawns a thread, tries to daemonize and _exits
        // with the outcome; the parent only waits.
        let child = unsafe { libc::fork() };
        assert!(child >= 0);
        if child == 0 {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let other = std::thread::spawn(move || {
                let _ = rx.recv();
            });
            // 7, not 0: the old parent's `_exit(0)` must not pass for a refusal.
            let code = match daemonize() {
                Err(e) if e.call == FORK && e.to_string().contains("2 threads") => 7,
                Err(_) => 3,
                // The grandchild (if it got this far) is the one that returns.
                Ok(()) => 4,
            };
            drop(tx);
            let _ = other.join();
            // SAFETY: ends the child at once.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: `child` is our child; `status` is writable.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 7,
            "daemonize forked a process with two threads (status {status})"
        );
    }

    #[test]
    fn daemonize_detaches_and_parent_exits_zero() {
        let mut fds = [0; 2];
        // SAFETY: `fds` is writable for two descriptors.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        let null_rdev = std::fs::metadata("/dev/null")
            .map(|m| std::os::unix::fs::MetadataExt::rdev(&m))
            .unwrap();
        // SAFETY: the child only calls async-signal-safe functions and _exits.
        let child = unsafe { libc::fork() };
        assert!(child >= 0);
        if child == 0 {
            if daemonize().is_err() {
                // SAFETY: ends the child at once.
                unsafe { libc::_exit(2) };
            }
            // SAFETY: plain calls on our own descriptors; `st` is writable.
            unsafe {
                let mut st = std::mem::zeroed::<libc::stat>();
                libc::fstat(0, &mut st);
                let report = [(libc::getsid(0) == libc::getpid()) as u64, st.st_rdev];
                libc::write(fds[1], report.as_ptr().cast(), 16);
                libc::_exit(0);
            }
        }
        // SAFETY: closes our copy of the write end.
        unsafe { libc::close(fds[1]) };
        let mut status = 0;
        // SAFETY: `child` is our child; `status` is writable.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "status {status}"
        );
        let mut report = [0u64; 2];
        // SAFETY: `report` is writable for 16 bytes; read blocks until the
        // grandchild writes or exits.
        let n = unsafe { libc::read(fds[0], report.as_mut_ptr().cast(), 16) };
        // SAFETY: closes our read end.
        unsafe { libc::close(fds[0]) };
        assert_eq!(n, 16);
        assert_eq!(report, [1, null_rdev]);
    }
}
