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

/// `setsockopt(TCP_DEFER_ACCEPT, secs)`: `listen ... deferred`; the kernel
/// wakes `accept()` only once data arrived (or after `secs`).
pub fn set_defer_accept(sock: impl AsFd, secs: u32) -> io::Result<()> {
    let val = libc::c_int::try_from(secs).unwrap_or(libc::c_int::MAX);
    // SAFETY: `val` is a live c_int and we pass its exact size; the kernel
    // copies it during the call.
    cvt(unsafe {
        libc::setsockopt(
            sock.as_fd().as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_DEFER_ACCEPT,
            (&val as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

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
