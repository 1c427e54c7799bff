//! The raw side of privilege separation: the channel between the serving
//! process and its privileged helper, and the calls that take root away.
//!
//! The channel is an `AF_UNIX` `SOCK_SEQPACKET` socket pair (message
//! boundaries kept, so a request is one message); descriptors travel as
//! `SCM_RIGHTS`. A request is one message: an opcode byte and its argument
//! (a path, an address), with the descriptor of a socket to bind attached.
//! A reply is one or more messages of at most [`CHUNK`] bytes, each opened
//! by a "more follows" byte; the first carries an errno (0: success) as four
//! little-endian bytes, and an opened descriptor when there is one.
//!
//! The serving process's end is installed once ([`install_client`]); the
//! hooks below ([`open_log`], [`bind`], [`bind_unix`], [`remove_socket`],
//! [`reload`]) use it when it exists and otherwise return `None` or do the
//! call themselves, so that the layers that open logs (`log`), bind sockets
//! and remove unix-domain sockets' files (`server::engine::listen`) and read the
//! configuration (`config`) need not know about the helper's policy, which
//! lives in `process::privsep`.
//!
//! What this module must not do: decide what the helper allows.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use super::cvt;
use super::error::{SysError, SysResultExt};

/// The largest message either side sends (a reply longer than this, the
/// configuration's text, comes in several).
pub const CHUNK: usize = 32 * 1024;

/// Opcode: open a log file for appending (argument: the path).
pub const OP_OPEN_LOG: u8 = b'L';
/// Opcode: bind the attached socket (argument: the address as text,
/// `127.0.0.1:80`, `[::1]:80` or `unix:/path`).
pub const OP_BIND: u8 = b'B';
/// Opcode: remove a unix-domain listening socket's file (argument: its
/// path), closed for good (a reload dropped it, or the server exits).
pub const OP_REMOVE_SOCKET: u8 = b'U';
/// Opcode: load the configuration again as root and send its files' text.
pub const OP_RELOAD: u8 = b'R';
/// Opcode: the serving process is exiting: remove the pid file now, so it
/// is gone when the process is (as nginx's master removes it before it
/// exits).
pub const OP_REMOVE_PID: u8 = b'P';
/// Opcode: set a thread's nice value (argument: `TID NICE` as text), one
/// the serving process may not set itself (a negative `worker_priority`).
pub const OP_SET_PRIORITY: u8 = b'N';

/// The mode of a unix-domain listening socket's file: every user may
/// connect (nginx's `chmod()` after `bind()`, 0666).
pub const UNIX_SOCKET_MODE: u32 = 0o666;

/// Log name of the `socketpair` call.
pub const SOCKETPAIR: &str = "socketpair";
/// Log name of [`fork_helper`].
pub const FORK: &str = "fork";
/// Log name of the privilege drop's `prctl` calls.
pub const PRCTL: &str = "prctl";
/// Log name of the `capset` call.
pub const CAPSET: &str = "capset";

/// The serving process's end of the channel, once installed.
static CLIENT: OnceLock<Mutex<OwnedFd>> = OnceLock::new();

/// Which side of [`fork_helper`] the caller is on.
pub enum Side {
    /// The parent: the serving process, with its end of the channel.
    Server(OwnedFd),
    /// The child: the privileged helper, with its end.
    Helper(OwnedFd),
}

/// Makes the channel and forks the helper. The process must be running one
/// thread (checked: a fork of a threaded process leaves locks held by the
/// others locked forever in the child, and the child here runs ordinary
/// Rust code).
pub fn fork_helper() -> Result<Side, SysError> {
    let threads = std::fs::read_dir("/proc/self/task")
        .map(|d| d.count())
        .on_path("opendir", Path::new("/proc/self/task"))?;
    if threads != 1 {
        return Err(SysError::new(
            FORK,
            io::Error::other(format!(
                "{threads} threads are running; the helper must be forked by the only one"
            )),
        ));
    }
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` is a valid array of two ints the call fills.
    cvt(unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    })
    .on_call(SOCKETPAIR)?;
    // SAFETY: both descriptors were just created and are owned by nothing else.
    let (server, helper) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: the process has one thread (checked above), so the child is a
    // complete, consistent copy of it.
    let pid = cvt(unsafe { libc::fork() }).on_call(FORK)?;
    if pid == 0 {
        drop(server);
        Ok(Side::Helper(helper))
    } else {
        drop(helper);
        Ok(Side::Server(server))
    }
}

/// Sends one message of `data`, with `fd` attached as `SCM_RIGHTS`.
pub fn send(sock: &OwnedFd, data: &[u8], fd: Option<RawFd>) -> io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // u64s so the control buffer is aligned for cmsghdr.
    let mut control = [0u64; 4];
    // SAFETY: an all-zero msghdr is a valid "no name, no control" header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if let Some(fd) = fd {
        // SAFETY: CMSG_SPACE is a pure size computation.
        let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space;
        // SAFETY: msg_control points to `space` (≤ 32) writable, aligned
        // bytes, so the first header fits and CMSG_FIRSTHDR is not null.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<RawFd>(), fd);
        }
    }
    // SAFETY: `msg` points to live buffers for the duration of the call.
    let n = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Receives one message into `buf`: its length (0 at end of stream) and the
/// descriptor attached, if any (owned by the caller from now on).
pub fn recv(sock: &OwnedFd, buf: &mut [u8]) -> io::Result<(usize, Option<OwnedFd>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 4];
    // SAFETY: an all-zero msghdr is valid; we fill the buffers below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    let n = loop {
        // SAFETY: `msg` points to live buffers; CLOEXEC on received fds.
        let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n >= 0 {
            break n as usize;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    };
    let mut fd = None;
    // SAFETY: the kernel filled msg_control/msg_controllen; the CMSG macros
    // walk only within them.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let raw = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<RawFd>());
                // One descriptor per message in this protocol; any extra
                // one is closed rather than leaked.
                let owned = OwnedFd::from_raw_fd(raw);
                if fd.is_none() {
                    fd = Some(owned);
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if msg.msg_flags & libc::MSG_TRUNC != 0 {
        return Err(io::Error::other("privsep message truncated"));
    }
    Ok((n, fd))
}

/// Sends a reply: `errno` (0 for success), the descriptor if any, then
/// `payload` over as many messages as it takes.
pub fn send_reply(sock: &OwnedFd, errno: i32, fd: Option<RawFd>, payload: &[u8]) -> io::Result<()> {
    let mut first = Vec::with_capacity(CHUNK);
    let head = CHUNK - 5;
    let (now, mut rest) = payload.split_at(payload.len().min(head));
    first.push(u8::from(!rest.is_empty()));
    first.extend_from_slice(&errno.to_le_bytes());
    first.extend_from_slice(now);
    send(sock, &first, fd)?;
    while !rest.is_empty() {
        let (now, later) = rest.split_at(rest.len().min(CHUNK - 1));
        let mut m = Vec::with_capacity(now.len() + 1);
        m.push(u8::from(!later.is_empty()));
        m.extend_from_slice(now);
        send(sock, &m, None)?;
        rest = later;
    }
    Ok(())
}

/// A reply: errno (0 for success), the descriptor sent, the payload.
pub type Reply = (i32, Option<OwnedFd>, Vec<u8>);

/// Receives a reply sent by [`send_reply`].
pub fn recv_reply(sock: &OwnedFd) -> io::Result<Reply> {
    let mut buf = vec![0u8; CHUNK];
    let (n, fd) = recv(sock, &mut buf)?;
    if n < 5 {
        return Err(io::Error::other("the privileged helper is gone"));
    }
    let errno = i32::from_le_bytes([buf[1], buf[2], buf[3], buf[4]]);
    let mut more = buf[0] != 0;
    let mut payload = buf[5..n].to_vec();
    while more {
        let (n, _) = recv(sock, &mut buf)?;
        if n < 1 {
            return Err(io::Error::other("the privileged helper is gone"));
        }
        more = buf[0] != 0;
        payload.extend_from_slice(&buf[1..n]);
    }
    Ok((errno, fd, payload))
}

/// Installs the serving process's end of the channel; the hooks use it
/// from now on. A second call is ignored.
pub fn install_client(fd: OwnedFd) {
    let _ = CLIENT.set(Mutex::new(fd));
}

/// Whether a helper answers this process's privileged requests.
pub fn client_active() -> bool {
    CLIENT.get().is_some()
}

/// One request and its reply, under the channel's lock.
fn ask(op: u8, arg: &[u8], fd: Option<RawFd>) -> Option<io::Result<Reply>> {
    let lock = CLIENT.get()?;
    let sock = lock.lock().unwrap_or_else(|e| e.into_inner());
    let mut m = Vec::with_capacity(arg.len() + 1);
    m.push(op);
    m.extend_from_slice(arg);
    Some(send(&sock, &m, fd).and_then(|()| recv_reply(&sock)))
}

/// Opens the log file `path` through the helper (`None` when there is
/// none). The helper's refusal is `EACCES`.
pub fn open_log(path: &Path) -> Option<io::Result<File>> {
    let r = ask(OP_OPEN_LOG, path.as_os_str().as_bytes(), None)?;
    Some(r.and_then(|(errno, fd, _)| match (errno, fd) {
        (0, Some(fd)) => Ok(File::from(fd)),
        (0, None) => Err(io::Error::other("the privileged helper sent no descriptor")),
        (e, _) => Err(io::Error::from_raw_os_error(e)),
    }))
}

/// Binds `sock` to `addr`: through the helper when there is one (a port
/// below 1024 needs root; and a socket joining a `reuseport` group must
/// belong to the same user as the group's, which the helper makes root as
/// the sockets bound at start-up are), else itself.
pub fn bind(sock: &socket2::Socket, addr: SocketAddr) -> io::Result<()> {
    let raw = sock.as_fd().as_raw_fd();
    match ask(OP_BIND, addr.to_string().as_bytes(), Some(raw)) {
        Some(Ok((0, _, _))) => Ok(()),
        Some(Ok((errno, _, _))) => Err(io::Error::from_raw_os_error(errno)),
        Some(Err(e)) => Err(e),
        None => sock.bind(&addr.into()),
    }
}

/// Binds the unix-domain socket `sock` to `path` (creating the socket
/// file) and makes the file mode [`UNIX_SOCKET_MODE`]: through the helper
/// when there is one (the file is then root's, as nginx's master makes
/// it), else itself. `Ok(Some(e))`: bound, but the `chmod()` failed with
/// `e` (nginx logs it and goes on).
pub fn bind_unix(sock: &socket2::Socket, path: &Path) -> io::Result<Option<io::Error>> {
    let mut arg = b"unix:".to_vec();
    arg.extend_from_slice(path.as_os_str().as_bytes());
    match ask(OP_BIND, &arg, Some(sock.as_fd().as_raw_fd())) {
        Some(Ok((0, _, chmod))) => Ok(decode_errno(&chmod).map(io::Error::from_raw_os_error)),
        Some(Ok((errno, _, _))) => Err(io::Error::from_raw_os_error(errno)),
        Some(Err(e)) => Err(e),
        None => bind_unix_raw(sock, path),
    }
}

/// The `chmod()` errno a bind reply carries, if the chmod failed (four
/// little-endian bytes; none when it succeeded).
fn decode_errno(payload: &[u8]) -> Option<i32> {
    Some(i32::from_le_bytes(payload.get(..4)?.try_into().ok()?))
}

/// The payload of a bind reply for a `chmod()` that failed with `e`
/// (read back by [`bind_unix`]).
pub fn encode_errno(e: &io::Error) -> Vec<u8> {
    e.raw_os_error().unwrap_or(libc::EIO).to_le_bytes().to_vec()
}

/// Removes a unix-domain listening socket's file: through the helper when
/// there is one (the file is root's, in a folder the serving process may
/// not write), else itself.
pub fn remove_socket(path: &Path) -> io::Result<()> {
    match ask(OP_REMOVE_SOCKET, path.as_os_str().as_bytes(), None) {
        Some(r) => r.and_then(|(errno, _, _)| match errno {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        }),
        None => std::fs::remove_file(path),
    }
}

/// Asks the helper to load the configuration again (as root) and to send
/// the text of every file it read: `None` when there is no helper, the
/// helper's error messages when its load failed.
pub fn reload() -> Option<Result<Files, String>> {
    let r = ask(OP_RELOAD, b"", None)?;
    Some(match r {
        Err(e) => Err(format!("the privileged helper failed ({e})")),
        Ok((0, _, payload)) => decode_files(&payload)
            .ok_or_else(|| "the privileged helper sent a malformed file list".to_string()),
        Ok((_, _, payload)) => Err(String::from_utf8_lossy(&payload).into_owned()),
    })
}

/// Asks the helper to remove the pid file and waits until it has: `None`
/// when there is no helper.
pub fn remove_pid_file() -> Option<io::Result<()>> {
    let r = ask(OP_REMOVE_PID, b"", None)?;
    Some(r.and_then(|(errno, _, _)| match errno {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }))
}

/// Sets the nice value of the serving process's thread `tid` through the
/// helper (`None` when there is none): a priority above the process's
/// needs the privilege it gave up. The helper's refusal is `EACCES`.
pub fn set_priority(tid: u32, nice: i32) -> Option<io::Result<()>> {
    let r = ask(OP_SET_PRIORITY, format!("{tid} {nice}").as_bytes(), None)?;
    Some(r.and_then(|(errno, _, _)| match errno {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }))
}

/// Files as the helper hands them over: path and bytes.
pub type Files = Vec<(PathBuf, Vec<u8>)>;

/// Serialises files as (u32 path length, path, u32 length, bytes)*.
pub fn encode_files(files: &[(PathBuf, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (p, t) in files {
        let p = p.as_os_str().as_bytes();
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(p);
        out.extend_from_slice(&(t.len() as u32).to_le_bytes());
        out.extend_from_slice(t);
    }
    out
}

/// Reads what [`encode_files`] wrote; `None` if it is malformed.
pub fn decode_files(mut b: &[u8]) -> Option<Files> {
    fn take<'a>(b: &mut &'a [u8]) -> Option<&'a [u8]> {
        let len = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
        let v = b.get(4..4 + len)?;
        *b = &b[4 + len..];
        Some(v)
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let p = PathBuf::from(OsStr::from_bytes(take(&mut b)?));
        let t = take(&mut b)?.to_vec();
        out.push((p, t));
    }
    Some(out)
}

/// Binds a socket the serving process sent, for the helper: makes it
/// root's first (`fchown` of a socket sets the owner `SO_REUSEPORT`
/// compares), then binds.
pub fn bind_raw(sock: &OwnedFd, addr: SocketAddr) -> io::Result<()> {
    // SAFETY: integer arguments on an open descriptor.
    cvt(unsafe { libc::fchown(sock.as_raw_fd(), 0, 0) })?;
    let addr = socket2::SockAddr::from(addr);
    // SAFETY: `addr` holds a valid sockaddr of the length given; `sock` is
    // an open descriptor.
    cvt(unsafe { libc::bind(sock.as_raw_fd(), addr.as_ptr().cast(), addr.len()) })?;
    Ok(())
}

/// Binds a unix-domain socket to `path`, then `chmod()`s the file it
/// made to [`UNIX_SOCKET_MODE`] (for the helper, and for a process with
/// none). `Ok(Some(e))`: bound, the chmod failed.
pub fn bind_unix_raw(sock: impl AsFd, path: &Path) -> io::Result<Option<io::Error>> {
    let addr = socket2::SockAddr::unix(path)?;
    // SAFETY: `addr` holds a valid sockaddr_un of the length given; `sock`
    // is an open descriptor borrowed for the call.
    cvt(unsafe { libc::bind(sock.as_fd().as_raw_fd(), addr.as_ptr().cast(), addr.len()) })?;
    use std::os::unix::fs::PermissionsExt;
    let chmod = std::fs::set_permissions(path, std::fs::Permissions::from_mode(UNIX_SOCKET_MODE));
    Ok(chmod.err())
}

/// The highest capability number tried by [`drop_process_privileges`]
/// (the kernel refuses numbers past its last one with `EINVAL`).
const MAX_CAP: libc::c_int = 63;

/// Becomes `uid`/`gid` with `groups` for the whole process, for good:
/// empties the capability bounding set, `setgroups`, `setresgid`,
/// `setresuid` (glibc's wrappers, which change every thread, though the
/// process must have only one: checked), then clears the ambient,
/// inheritable, permitted and effective sets and sets `PR_SET_NO_NEW_PRIVS`.
/// The caller must exit on failure, never serve as root.
pub fn drop_process_privileges(uid: u32, gid: u32, groups: &[u32]) -> Result<(), SysError> {
    let threads = std::fs::read_dir("/proc/self/task")
        .map(|d| d.count())
        .on_path("opendir", Path::new("/proc/self/task"))?;
    if threads != 1 {
        return Err(SysError::new(
            "setresuid",
            io::Error::other(format!(
                "{threads} threads are running; privileges must be dropped by the only one"
            )),
        ));
    }
    for cap in 0..=MAX_CAP {
        // SAFETY: integer arguments only.
        let r = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINVAL) {
                break;
            }
            return Err(SysError::with_arg(
                PRCTL,
                format!("PR_CAPBSET_DROP, {cap}"),
                e,
            ));
        }
    }
    // SAFETY: `groups` is a live slice of gid_t of the length passed.
    cvt(unsafe { libc::setgroups(groups.len(), groups.as_ptr()) })
        .on_arg("setgroups", format!("{} groups", groups.len()))?;
    // SAFETY: integer arguments only.
    cvt(unsafe { libc::setresgid(gid, gid, gid) }).on_arg("setresgid", gid.to_string())?;
    // SAFETY: integer arguments only.
    cvt(unsafe { libc::setresuid(uid, uid, uid) }).on_arg("setresuid", uid.to_string())?;
    // SAFETY: integer arguments only.
    cvt(unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    })
    .on_arg(PRCTL, "PR_CAP_AMBIENT_CLEAR_ALL")?;
    clear_capabilities()?;
    set_no_new_privs()
}

/// `PR_SET_NO_NEW_PRIVS`: no `execve` can give this process (or its
/// children) privileges again; Landlock needs it too.
pub fn set_no_new_privs() -> Result<(), SysError> {
    // SAFETY: integer arguments only.
    cvt(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })
        .on_arg(PRCTL, "PR_SET_NO_NEW_PRIVS")?;
    Ok(())
}

/// `capset` with every set empty (version 3 headers, all threads' sets
/// being the caller's: only one thread runs).
fn clear_capabilities() -> Result<(), SysError> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    /// `_LINUX_CAPABILITY_VERSION_3`.
    const VERSION_3: u32 = 0x2008_0522;
    let mut h = Header {
        version: VERSION_3,
        pid: 0,
    };
    let d = [MaybeUninit::new(Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }); 2];
    // SAFETY: header and two data structs laid out as the kernel's
    // __user_cap_header_struct and __user_cap_data_struct[2].
    let r = unsafe { libc::syscall(libc::SYS_capset, &mut h as *mut Header, d.as_ptr()) };
    cvt(r as libc::c_int).on_call(CAPSET)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_survive_the_wire_format() {
        let files = vec![
            (
                PathBuf::from("/etc/nowait/nowait.conf"),
                b"events {}\n".to_vec(),
            ),
            (PathBuf::from("/etc/nowait/empty.conf"), Vec::new()),
            (
                PathBuf::from("/etc/nowait/ticket.key"),
                vec![0, 255, 1, 254],
            ),
        ];
        assert_eq!(decode_files(&encode_files(&files)), Some(files));
        assert_eq!(decode_files(&[1, 0, 0]), None);
        assert_eq!(decode_files(&[9, 0, 0, 0, b'a']), None);
    }

    #[test]
    fn a_long_reply_comes_back_whole_with_its_descriptor() {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: test-only; fills two ints.
        assert_eq!(
            unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0, fds.as_mut_ptr()) },
            0
        );
        // SAFETY: fresh descriptors.
        let (a, b) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let payload: Vec<u8> = (0..CHUNK * 3 + 17).map(|i| i as u8).collect();
        let file = File::open("/dev/null").unwrap();
        let p = payload.clone();
        let t = std::thread::spawn(move || {
            send_reply(&a, 0, Some(file.as_raw_fd()), &p).unwrap();
            send_reply(&a, libc::EACCES, None, b"refused").unwrap();
        });
        let (errno, fd, got) = recv_reply(&b).unwrap();
        assert_eq!((errno, got.len()), (0, payload.len()));
        assert_eq!(got, payload);
        assert!(fd.is_some());
        let (errno, fd, got) = recv_reply(&b).unwrap();
        assert_eq!(
            (errno, fd.is_none(), &got[..]),
            (libc::EACCES, true, &b"refused"[..])
        );
        t.join().unwrap();
    }
}
