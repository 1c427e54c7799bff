//! Socket options behind nginx directives that socket2 does not cover
//! directly, and one-line helpers for those it does.
//!
//! Prefer socket2 (`SO_REUSEPORT`, backlog, buffers) in callers; this file only
//! holds what needs a raw `setsockopt` or deserves a directive-shaped name.

use super::cvt;
use socket2::SockRef;
use std::io;
use std::os::fd::{AsFd, AsRawFd};

/// Log name of every wrapper here.
pub const SETSOCKOPT: &str = "setsockopt";

/// `setsockopt(TCP_CORK, on)`: `tcp_nopush`. With it on, the kernel sends only
/// full segments, so a response head and the first file bytes share packets;
/// turning it off flushes what is held.
pub fn set_tcp_nopush(sock: impl AsFd, on: bool) -> io::Result<()> {
    SockRef::from(&sock.as_fd()).set_tcp_cork(on)
}

/// `getsockopt(TCP_CORK)`.
pub fn tcp_nopush(sock: impl AsFd) -> io::Result<bool> {
    SockRef::from(&sock.as_fd()).tcp_cork()
}

/// `setsockopt(TCP_NODELAY, on)`: `tcp_nodelay`, no Nagle delay for keep-alive
/// responses.
pub fn set_tcp_nodelay(sock: impl AsFd, on: bool) -> io::Result<()> {
    SockRef::from(&sock.as_fd()).set_tcp_nodelay(on)
}

/// `setsockopt(SO_LINGER, {on, 0})`: the next close resets the connection
/// (`reset_timedout_connection`), freeing its buffers at once.
pub fn set_reset_on_close(sock: impl AsFd) -> io::Result<()> {
    SockRef::from(&sock.as_fd()).set_linger(Some(std::time::Duration::ZERO))
}

/// `setsockopt(TCP_DEFER_ACCEPT, secs)`: `listen ... deferred`; the kernel
/// wakes `accept()` only once data arrived (or after `secs`).
pub fn set_defer_accept(sock: impl AsFd, secs: u32) -> io::Result<()> {
    set_tcp_int(sock, libc::TCP_DEFER_ACCEPT, secs)
}

/// `setsockopt(TCP_FASTOPEN, qlen)`: `listen ... fastopen=N`, the queue of
/// connections whose data came with their SYN, not yet accepted.
pub fn set_fastopen(sock: impl AsFd, qlen: u32) -> io::Result<()> {
    set_tcp_int(sock, libc::TCP_FASTOPEN, qlen)
}

/// `setsockopt(IPPROTO_TCP, opt, value)` of an int-valued option (values
/// past `c_int` are taken as its largest).
fn set_tcp_int(sock: impl AsFd, opt: libc::c_int, value: u32) -> io::Result<()> {
    let val = libc::c_int::try_from(value).unwrap_or(libc::c_int::MAX);
    // SAFETY: `val` is a live c_int and we pass its exact size; the kernel
    // copies it during the call.
    cvt(unsafe {
        libc::setsockopt(
            sock.as_fd().as_raw_fd(),
            libc::IPPROTO_TCP,
            opt,
            (&val as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// `getsockopt(IPPROTO_TCP, opt)` of an int-valued option (`TCP_FASTOPEN`,
/// `TCP_DEFER_ACCEPT`): what tests read back.
#[cfg(test)]
pub fn tcp_int_option(sock: impl AsFd, opt: libc::c_int) -> io::Result<libc::c_int> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are live locals of the sizes given; the kernel
    // writes at most `len` bytes into `v` during the call.
    cvt(unsafe {
        libc::getsockopt(
            sock.as_fd().as_raw_fd(),
            libc::IPPROTO_TCP,
            opt,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    })?;
    Ok(v)
}

/// `recv()` into the spare capacity of `buf`, which grows by what arrived.
///
/// A direct system call: glibc's `recv` is a thread-cancellation point and
/// brackets every call with two bookkeeping calls (measured at ~1 % of a
/// small request's CPU time); a worker never cancels threads.
pub fn recv_spare(sock: impl AsFd, buf: &mut Vec<u8>) -> io::Result<usize> {
    let spare = buf.spare_capacity_mut();
    let n = retry_eintr(|| {
        // SAFETY: the kernel writes at most `spare.len()` bytes into the
        // spare capacity, which `buf` owns and nothing else borrows during
        // the call; no address is asked for (null, null).
        cvt(unsafe {
            libc::syscall(
                libc::SYS_recvfrom,
                sock.as_fd().as_raw_fd(),
                spare.as_mut_ptr(),
                spare.len(),
                0,
                std::ptr::null_mut::<libc::sockaddr>(),
                std::ptr::null_mut::<libc::socklen_t>(),
            )
        })
    })? as usize;
    // SAFETY: the kernel initialized the first `n` spare bytes (n ≤ their
    // count, as it never writes past the length it was given).
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

/// `send(MSG_NOSIGNAL)`: a closed peer is an `EPIPE` error, not a signal.
/// A direct system call, for the reason given at [`recv_spare`].
pub fn send(sock: impl AsFd, data: &[u8]) -> io::Result<usize> {
    let n = retry_eintr(|| {
        // SAFETY: the kernel reads at most `data.len()` bytes from `data`,
        // which lives through the call; no address is given (null, 0).
        cvt(unsafe {
            libc::syscall(
                libc::SYS_sendto,
                sock.as_fd().as_raw_fd(),
                data.as_ptr(),
                data.len(),
                libc::MSG_NOSIGNAL,
                std::ptr::null::<libc::sockaddr>(),
                0 as libc::socklen_t,
            )
        })
    })?;
    Ok(n as usize)
}

/// What an idle connection holds, seen without reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Idle {
    /// Nothing to read: still open and quiet.
    Quiet,
    /// The peer closed it (or reset it).
    Closed,
    /// Bytes arrived that nobody asked for.
    Data,
}

/// Looks at an idle connection without reading from it
/// (`recv(MSG_PEEK | MSG_DONTWAIT)`): an upstream keep-alive connection is
/// reused only while [`Idle::Quiet`].
pub fn peek_idle(sock: impl AsFd) -> Idle {
    let mut byte = [0u8; 1];
    let r = retry_eintr(|| {
        // SAFETY: the kernel writes at most one byte into `byte`, which lives
        // through the call; no address is asked for.
        cvt(unsafe {
            libc::syscall(
                libc::SYS_recvfrom,
                sock.as_fd().as_raw_fd(),
                byte.as_mut_ptr(),
                1usize,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
                std::ptr::null_mut::<libc::sockaddr>(),
                std::ptr::null_mut::<libc::socklen_t>(),
            )
        })
    });
    match r {
        Ok(0) => Idle::Closed,
        Ok(_) => Idle::Data,
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Idle::Quiet,
        Err(_) => Idle::Closed,
    }
}

/// Repeats a system call interrupted by a signal.
fn retry_eintr(mut call: impl FnMut() -> io::Result<libc::c_long>) -> io::Result<libc::c_long> {
    loop {
        match call() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn send_and_recv_spare_carry_bytes() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        assert_eq!(send(&a, b"hello").unwrap(), 5);
        let mut buf = b"> ".to_vec();
        buf.reserve(16);
        let mut got = 0;
        while got < 5 {
            got += recv_spare(&b, &mut buf).unwrap();
        }
        assert_eq!(buf, b"> hello");
        drop(b);
        // A closed peer: an error (EPIPE or ECONNRESET), never SIGPIPE.
        let mut failed = false;
        for _ in 0..100 {
            if send(&a, &[0; 1024]).is_err() {
                failed = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(failed);
    }

    #[test]
    fn cork_and_nodelay_toggle() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        set_tcp_nopush(&s, true).unwrap();
        assert!(tcp_nopush(&s).unwrap());
        set_tcp_nopush(&s, false).unwrap();
        assert!(!tcp_nopush(&s).unwrap());
        set_tcp_nodelay(&s, true).unwrap();
        assert!(s.nodelay().unwrap());
        set_defer_accept(&l, 5).unwrap();
    }

    #[test]
    fn errors_keep_errno() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let err = set_tcp_nopush(&a, true).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EOPNOTSUPP));
    }
}
