//! Privilege separation: the small root helper beside the serving process.
//!
//! When nowait starts as root with a `user` to serve as, it forks a helper
//! before any thread exists (see [`start`]); the serving process then
//! becomes `user` for the whole process, with no capabilities left (the
//! bounding set emptied too) and `PR_SET_NO_NEW_PRIVS`. Everything that
//! still needs root afterwards is asked of the helper over a socket pair
//! (`crate::sys::privsep`), which answers only these requests, each checked
//! against the configuration it loaded itself:
//!
//! - open a log file for appending (`SIGUSR1`, reload): only a file an
//!   `error_log` or `access_log` of the current or previous configuration
//!   names;
//! - bind a socket the serving process made and sent (a port below 1024
//!   on reload, a unix-domain socket's file in a folder only root may
//!   write): only an address a `listen` of the current or previous
//!   configuration names; a unix-domain socket's file is then made mode
//!   0666, as nginx's master does;
//! - set the nice value of one of the serving process's threads: no lower
//!   than the `worker_priority` of the current or previous configuration
//!   (a worker's thread raising its priority, as nginx's workers do as
//!   root before `setuid()`);
//! - remove a unix-domain listening socket's file (a reload dropped the
//!   `listen`, or the server exits, as nginx's master removes it): only a
//!   path a `listen unix:` of the current or previous configuration
//!   names, and only while it is a socket;
//! - load the configuration again (reload): the helper reads and checks the
//!   configuration as root (the main file, its includes), creates the temp
//!   and cache directories for `user`, makes the new configuration's files
//!   and addresses the allowed ones, and sends the files' text, which the
//!   serving process then parses itself.
//!
//! This is the privilege separation of OpenBSD's httpd and relayd. nginx's
//! master process keeps root and parses every reload in the process that
//! holds it; here the root process never meets a client byte. See
//! docs/security.md for the threat model and its limits.
//!
//! What this module must not do: give the helper a request that takes a
//! path or an address the configuration does not name.

use std::collections::BTreeSet;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::config::LoadOptions;
use crate::config::model::{AccessLogs, AccessTarget, Config, ListenAddr, LogTarget};
use crate::sys::privsep::{
    self as wire, OP_BIND, OP_OPEN_LOG, OP_RELOAD, OP_REMOVE_PID, OP_REMOVE_SOCKET,
    OP_SET_PRIORITY, Side, drop_process_privileges, send_reply,
};

use super::identity::{self, Identity};

/// The mode of a log file the helper creates (as nginx's, 0644).
const LOG_FILE_MODE: u32 = 0o644;

/// What the helper agrees to do for one configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allowed {
    /// Log files named by `error_log` and fixed `access_log` paths.
    pub logs: BTreeSet<PathBuf>,
    /// Addresses named by `listen` (unix-domain paths included).
    pub listens: BTreeSet<ListenAddr>,
    /// The highest priority (lowest nice value) a serving thread may be
    /// given: a negative `worker_priority`, else 0 (none above the
    /// process's).
    pub priority: i32,
}

impl Allowed {
    /// What `c` names.
    pub fn of(c: &Config) -> Allowed {
        Allowed {
            logs: log_paths(c).into_iter().collect(),
            listens: c
                .http
                .iter()
                .flat_map(|h| h.servers.iter().flat_map(|s| s.listens.iter()))
                .map(|l| l.addr.clone())
                .collect(),
            priority: c.main.worker_priority.unwrap_or(0).min(0),
        }
    }

    /// Both configurations' names: the previous configuration stays in use
    /// when the serving process fails to start the new one, and its logs
    /// must still reopen.
    fn union(&self, other: &Allowed) -> Allowed {
        Allowed {
            logs: self.logs.union(&other.logs).cloned().collect(),
            listens: self.listens.union(&other.listens).cloned().collect(),
            priority: self.priority.min(other.priority),
        }
    }
}

/// Every log file (not stderr, not syslog, not a path with variables) the
/// configuration names, in the order written.
pub fn log_paths(c: &Config) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for e in &c.main.error_logs {
        if let LogTarget::File(p) = &e.target {
            paths.push(p.clone());
        }
    }
    if let Some(h) = &c.http {
        for conf in h.loc_confs() {
            if let AccessLogs::Logs(list) = &conf.access_log {
                for l in list {
                    if let AccessTarget::Fixed(LogTarget::File(p)) = &l.target {
                        paths.push(p.clone());
                    }
                }
            }
            for e in &conf.error_log.confs {
                if let LogTarget::File(p) = &e.target {
                    paths.push(p.clone());
                }
            }
        }
    }
    paths
}

/// Forks the helper and drops the serving process's privileges to `id`
/// (the caller's process from now on runs as `id`, with no capabilities).
/// Must be called by the only thread. In the child this never returns:
/// it serves the helper's requests until the serving process closes the
/// channel, then removes the pid file and exits. `before_serving` runs in
/// the child first (closing what the helper must not hold: the listening
/// sockets).
pub fn start(
    config: &Config,
    load: &LoadOptions,
    id: &Identity,
    before_serving: impl FnOnce(),
) -> Result<(), String> {
    match wire::fork_helper().map_err(|e| e.to_string())? {
        Side::Helper(sock) => {
            before_serving();
            let code = serve(sock, config, load, id);
            std::process::exit(code)
        }
        Side::Server(sock) => {
            drop_process_privileges(id.uid, id.gid, &id.groups).map_err(|e| e.to_string())?;
            wire::install_client(sock);
            Ok(())
        }
    }
}

/// The helper's loop; returns the exit code.
fn serve(sock: OwnedFd, config: &Config, load: &LoadOptions, id: &Identity) -> i32 {
    // The control signals are the serving process's; the helper ends when
    // its channel does.
    let _signals = crate::sys::signal::block_control_signals();
    let mut current = Allowed::of(config);
    let mut allowed = current.clone();
    let mut pid_file = config.main.pid.clone();
    let mut buf = vec![0u8; wire::CHUNK];
    loop {
        let (n, fd) = match wire::recv(&sock, &mut buf) {
            Ok((0, _)) | Err(_) => break,
            Ok(x) => x,
        };
        let arg = &buf[1..n];
        let sent = match buf[0] {
            OP_OPEN_LOG => {
                let path = PathBuf::from(std::ffi::OsStr::from_bytes(arg));
                match open_log(&allowed, &path) {
                    Ok(f) => send_reply(&sock, 0, Some(f.as_raw_fd()), b""),
                    Err(e) => send_reply(&sock, errno(&e), None, b""),
                }
            }
            OP_BIND => match bind(&allowed, arg, fd) {
                Ok(None) => send_reply(&sock, 0, None, b""),
                Ok(Some(chmod)) => send_reply(&sock, 0, None, &wire::encode_errno(&chmod)),
                Err(e) => send_reply(&sock, errno(&e), None, b""),
            },
            OP_REMOVE_SOCKET => {
                let path = Path::new(std::ffi::OsStr::from_bytes(arg));
                match remove_socket(&allowed, path) {
                    Ok(()) => send_reply(&sock, 0, None, b""),
                    Err(e) => send_reply(&sock, errno(&e), None, b""),
                }
            }
            OP_RELOAD => match reload(load, id) {
                Ok((next, files, pid)) => {
                    allowed = current.union(&next);
                    current = next;
                    pid_file = pid;
                    send_reply(&sock, 0, None, &wire::encode_files(&files))
                }
                Err(e) => send_reply(&sock, libc::EINVAL, None, e.as_bytes()),
            },
            OP_SET_PRIORITY => match set_priority(&allowed, arg) {
                Ok(()) => send_reply(&sock, 0, None, b""),
                Err(e) => send_reply(&sock, errno(&e), None, b""),
            },
            OP_REMOVE_PID => {
                let r = match pid_file.take().map(std::fs::remove_file) {
                    Some(Err(e)) if e.kind() != std::io::ErrorKind::NotFound => errno(&e),
                    _ => 0,
                };
                send_reply(&sock, r, None, b"")
            }
            _ => send_reply(&sock, libc::EINVAL, None, b"unknown request"),
        };
        if sent.is_err() {
            break;
        }
    }
    // The serving process has exited (it may no longer remove a pid file
    // in a root-owned folder).
    if let Some(p) = pid_file {
        let _ = std::fs::remove_file(p);
    }
    0
}

/// The errno of `e`, `EIO` when it has none.
fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// Opens `path` for appending if the configuration names it.
fn open_log(allowed: &Allowed, path: &Path) -> std::io::Result<std::fs::File> {
    if !allowed.logs.contains(path) {
        return Err(std::io::Error::from_raw_os_error(libc::EACCES));
    }
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(LOG_FILE_MODE)
        .custom_flags(libc::O_CLOEXEC)
        .open(path)
}

/// Binds the socket sent to the address asked, if a `listen` names it and
/// the descriptor is a socket. `Ok(Some(e))`: a unix-domain socket bound
/// whose file's `chmod()` failed with `e`.
fn bind(
    allowed: &Allowed,
    arg: &[u8],
    fd: Option<OwnedFd>,
) -> std::io::Result<Option<std::io::Error>> {
    let refused = || std::io::Error::from_raw_os_error(libc::EACCES);
    let addr = std::str::from_utf8(arg)
        .ok()
        .and_then(ListenAddr::parse_text)
        .ok_or_else(refused)?;
    if !allowed.listens.contains(&addr) {
        return Err(refused());
    }
    let fd = fd.ok_or_else(|| std::io::Error::from_raw_os_error(libc::EBADF))?;
    match addr {
        ListenAddr::Inet(a) => wire::bind_raw(&fd, a).map(|()| None),
        ListenAddr::Unix(p) => wire::bind_unix_raw(&fd, &p),
    }
}

/// Removes the unix-domain socket file `path` if a `listen` names it and
/// it is a socket (never a file that took its place).
fn remove_socket(allowed: &Allowed, path: &Path) -> std::io::Result<()> {
    if !allowed.listens.contains(&ListenAddr::Unix(path.into())) {
        return Err(std::io::Error::from_raw_os_error(libc::EACCES));
    }
    use std::os::unix::fs::FileTypeExt;
    if !std::fs::symlink_metadata(path)?.file_type().is_socket() {
        return Err(std::io::Error::from_raw_os_error(libc::ENOTSOCK));
    }
    std::fs::remove_file(path)
}

/// Sets the nice value of a thread of the serving process (`TID NICE`), no
/// lower than the configuration's `worker_priority`: what nginx's workers
/// do as root before `setuid()`. A thread of any other process is refused,
/// whatever its number.
fn set_priority(allowed: &Allowed, arg: &[u8]) -> std::io::Result<()> {
    let invalid = || std::io::Error::from_raw_os_error(libc::EINVAL);
    let text = std::str::from_utf8(arg).map_err(|_| invalid())?;
    let (tid, nice) = text.split_once(' ').ok_or_else(invalid)?;
    let tid: u32 = tid.parse().map_err(|_| invalid())?;
    let nice: i32 = nice.parse().map_err(|_| invalid())?;
    if nice < allowed.priority {
        return Err(std::io::Error::from_raw_os_error(libc::EACCES));
    }
    let task = format!("/proc/{}/task/{tid}", std::os::unix::process::parent_id());
    if !Path::new(&task).exists() {
        return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
    }
    crate::sys::sched::set_task_priority(tid, nice)
}

/// What the helper keeps of a configuration it loaded: what it allows,
/// its files (path, text), its pid file.
type Reloaded = (Allowed, Vec<(PathBuf, Vec<u8>)>, Option<PathBuf>);

/// Loads the configuration as root, for a reload. Refuses a change of
/// `user` (the serving process cannot become someone else).
fn reload(load: &LoadOptions, id: &Identity) -> Result<Reloaded, String> {
    let loaded = crate::config::load(load).map_err(|e| crate::config::errors_text(&e))?;
    let config = loaded.config;
    let (next, _) = identity::resolve(&config.main)?;
    if next.as_ref() != Some(id) {
        return Err(
            "a new \"user\" needs a restart: the serving process has given up root".to_string(),
        );
    }
    super::paths::create(&config, next.as_ref())?;
    // The configuration's text, then the files it names that the serving
    // process may not be able to read (certificates and keys).
    let files = config
        .files
        .iter()
        .map(|f| (f.path.clone(), f.text.clone().into_bytes()))
        .chain(config.data_files.iter().cloned())
        .collect();
    Ok((Allowed::of(&config), files, config.main.pid.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed() -> Allowed {
        Allowed {
            logs: [PathBuf::from("/tmp/nowait-privsep-test/a.log")].into(),
            listens: [
                ListenAddr::parse_text("127.0.0.1:80").unwrap(),
                ListenAddr::parse_text("unix:/tmp/nowait-privsep-test/s.sock").unwrap(),
            ]
            .into(),
            priority: -5,
        }
    }

    #[test]
    fn a_log_the_configuration_does_not_name_is_refused() {
        let e = open_log(&allowed(), Path::new("/etc/shadow")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EACCES));
    }

    #[test]
    fn an_address_no_listen_names_is_refused_before_any_bind() {
        let e = bind(&allowed(), b"127.0.0.1:22", None).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EACCES));
        let e = bind(&allowed(), b"not an address", None).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EACCES));
        // Named, but nothing to bind.
        let e = bind(&allowed(), b"127.0.0.1:80", None).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
        // Unix-domain paths likewise.
        let e = bind(&allowed(), b"unix:/etc/x.sock", None).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EACCES));
        let e = bind(&allowed(), b"unix:/tmp/nowait-privsep-test/s.sock", None).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
    }

    #[test]
    fn only_a_named_socket_file_is_removed() {
        let e = remove_socket(&allowed(), Path::new("/etc/passwd")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EACCES));
        // Named, but a regular file took its place: kept.
        let dir = std::env::temp_dir().join(format!("nowait-privsep-rm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.sock");
        std::fs::write(&file, b"x").unwrap();
        let named = Allowed {
            logs: BTreeSet::new(),
            listens: [ListenAddr::Unix(file.as_path().into())].into(),
            ..Allowed::default()
        };
        let e = remove_socket(&named, &file).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTSOCK));
        assert!(file.exists());
        std::fs::remove_file(&file).unwrap();
        let l = std::os::unix::net::UnixListener::bind(&file).unwrap();
        remove_socket(&named, &file).unwrap();
        assert!(!file.exists());
        drop(l);
        let _ = std::fs::remove_dir(&dir);
    }

    #[test]
    fn the_previous_configuration_stays_allowed() {
        let next = Allowed {
            logs: [PathBuf::from("/b.log")].into(),
            listens: BTreeSet::new(),
            priority: 0,
        };
        let both = allowed().union(&next);
        assert_eq!(both.logs.len(), 2);
        assert_eq!(both.listens, allowed().listens);
        assert_eq!(both.priority, -5, "the higher of the two");
    }

    #[test]
    fn priorities_only_as_configured_and_only_for_the_server() {
        let e = set_priority(&allowed(), b"1 -6").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EACCES));
        for bad in [&b""[..], b"1", b"x -5", b"1 x", b"\xff 1"] {
            let e = set_priority(&allowed(), bad).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
        }
        // This thread is not one of the parent's (the test runner's
        // parent, here): refused before any call.
        let me = crate::sys::process::gettid();
        let e = set_priority(&allowed(), format!("{me} 0").as_bytes()).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ESRCH));
        let conf = crate::config::load_text("worker_priority -3;\nevents {}\n")
            .unwrap()
            .config;
        assert_eq!(Allowed::of(&conf).priority, -3);
        let conf = crate::config::load_text("worker_priority 4;\nevents {}\n")
            .unwrap()
            .config;
        assert_eq!(Allowed::of(&conf).priority, 0);
    }
}
