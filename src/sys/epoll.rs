//! `EPOLLEXCLUSIVE` accepting on a socket shared by several workers.
//!
//! Each worker's reactor (tokio) owns an epoll instance that nowait cannot
//! pass flags to. To wake only one worker per new connection on a shared
//! listening socket, as nginx does with `accept_mutex off`, each worker
//! makes a small epoll instance of its own holding the socket with
//! `EPOLLEXCLUSIVE`, and registers that instance (an epoll descriptor is
//! itself pollable) with its reactor. The kernel then wakes one of the
//! instances for each connection.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

use super::cvt;

/// Log name of [`exclusive_epoll`].
pub const EPOLL_CTL: &str = "epoll_ctl";
/// Log name of [`accept4`].
pub const ACCEPT4: &str = "accept4";

/// A new epoll instance holding `listener` for `EPOLLIN | EPOLLEXCLUSIVE`.
pub fn exclusive_epoll(listener: impl AsFd) -> io::Result<OwnedFd> {
    // SAFETY: epoll_create1 takes only flags.
    let ep = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
    // SAFETY: a successful epoll_create1 returns a descriptor nobody else owns.
    let ep = unsafe { OwnedFd::from_raw_fd(ep) };
    let mut ev = libc::epoll_event {
        events: (libc::EPOLLIN | libc::EPOLLEXCLUSIVE) as u32,
        u64: 0,
    };
    // SAFETY: both descriptors are open for the call; `ev` is a live
    // epoll_event the kernel only reads.
    cvt(unsafe {
        libc::epoll_ctl(
            ep.as_raw_fd(),
            libc::EPOLL_CTL_ADD,
            listener.as_fd().as_raw_fd(),
            &mut ev,
        )
    })?;
    Ok(ep)
}

/// `accept4(listener, SOCK_NONBLOCK | SOCK_CLOEXEC)`: a connection ready for
/// a reactor, with its peer address. `EAGAIN` when none is waiting.
pub fn accept4(listener: impl AsFd) -> io::Result<(std::net::TcpStream, SocketAddr)> {
    let lfd = listener.as_fd().as_raw_fd();
    // SAFETY: `try_init` hands us storage and a length for a socket address;
    // accept4 writes at most that many bytes and updates the length, which
    // is the contract `try_init` requires.
    let (fd, addr) = unsafe {
        socket2::SockAddr::try_init(|storage, len| {
            cvt(libc::accept4(
                lfd,
                storage.cast(),
                len,
                libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            ))
        })
    }?;
    // SAFETY: a successful accept4 returns a new socket nobody else owns.
    let stream = unsafe { std::net::TcpStream::from_raw_fd(fd) };
    let addr = addr
        .as_socket()
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EAFNOSUPPORT))?;
    Ok((stream, addr))
}

/// Registers `ep` (an epoll instance from [`exclusive_epoll`]) with the
/// current tokio reactor for readability.
pub fn register(ep: OwnedFd) -> io::Result<tokio::io::unix::AsyncFd<OwnedFd>> {
    // SAFETY: an `OwnedFd` is a valid open descriptor that stays open and
    // keeps referring to the same file description until the `AsyncFd`,
    // which takes ownership of it, is dropped; `as_raw_fd` on it always
    // returns that same descriptor.
    unsafe { tokio::io::unix::AsyncFd::register_with_interest(ep, tokio::io::Interest::READABLE) }
        .map_err(|e| e.into())
}
