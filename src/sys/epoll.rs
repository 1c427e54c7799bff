//! `EPOLLEXCLUSIVE` accepting on a socket shared by several workers, and
//! the epoll instance of each worker that holds its long-idle connections.
//!
//! Each worker's reactor (tokio) owns an epoll instance that nowait cannot
//! pass flags to. To wake only one worker per new connection on a shared
//! listening socket, as nginx does with `accept_mutex off`, each worker
//! makes a small epoll instance of its own holding the socket with
//! `EPOLLEXCLUSIVE`, and registers that instance (an epoll descriptor is
//! itself pollable) with its reactor. The kernel then wakes one of the
//! instances for each connection.

use std::io;
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
/// a reactor (TCP or unix-domain, as the listener), with its peer address.
/// `EAGAIN` when none is waiting.
pub fn accept4(listener: impl AsFd) -> io::Result<(OwnedFd, socket2::SockAddr)> {
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
    let stream = unsafe { OwnedFd::from_raw_fd(fd) };
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

/// Log name of [`wait_now`].
pub const EPOLL_WAIT: &str = "epoll_wait";

/// A new, empty epoll instance (close-on-exec).
pub fn create() -> io::Result<OwnedFd> {
    // SAFETY: epoll_create1 takes only flags.
    let ep = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
    // SAFETY: a successful epoll_create1 returns a descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(ep) })
}

/// Adds `fd` to `ep` for readability and hang-up (level-triggered), with
/// `data` returned by [`wait_now`] for it.
pub fn add_readable(ep: impl AsFd, fd: impl AsFd, data: u64) -> io::Result<()> {
    let mut ev = libc::epoll_event {
        events: (libc::EPOLLIN | libc::EPOLLRDHUP) as u32,
        u64: data,
    };
    // SAFETY: both descriptors are open for the call (borrowed); `ev` is a
    // live epoll_event the kernel only reads.
    cvt(unsafe {
        libc::epoll_ctl(
            ep.as_fd().as_raw_fd(),
            libc::EPOLL_CTL_ADD,
            fd.as_fd().as_raw_fd(),
            &mut ev,
        )
    })?;
    Ok(())
}

/// Removes `fd` from `ep`.
pub fn delete(ep: impl AsFd, fd: impl AsFd) -> io::Result<()> {
    let mut ev = libc::epoll_event { events: 0, u64: 0 };
    // SAFETY: both descriptors are open for the call (borrowed); the event
    // is ignored by EPOLL_CTL_DEL (and non-null for old kernels).
    cvt(unsafe {
        libc::epoll_ctl(
            ep.as_fd().as_raw_fd(),
            libc::EPOLL_CTL_DEL,
            fd.as_fd().as_raw_fd(),
            &mut ev,
        )
    })?;
    Ok(())
}

/// The data of up to `max` ready descriptors of `ep`, without waiting,
/// appended to `out`; how many.
pub fn wait_now(ep: impl AsFd, out: &mut Vec<u64>, max: usize) -> io::Result<usize> {
    let mut events: Vec<libc::epoll_event> = Vec::with_capacity(max);
    // SAFETY: `events` has room for `max` entries, the count passed; the
    // kernel writes at most that many and returns how many it wrote.
    let n = cvt(unsafe {
        libc::epoll_wait(
            ep.as_fd().as_raw_fd(),
            events.as_mut_ptr(),
            max.min(i32::MAX as usize) as i32,
            0,
        )
    })? as usize;
    // SAFETY: the kernel initialised the first `n` entries.
    unsafe { events.set_len(n) };
    out.extend(events.iter().map(|e| e.u64));
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_readable_socket_is_reported_with_its_data_until_deleted() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let mut c = std::net::TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (s, _) = l.accept().expect("accept");
        let ep = create().expect("epoll");
        add_readable(&ep, &s, 42).expect("add");
        let mut out = Vec::new();
        assert_eq!(wait_now(&ep, &mut out, 8).expect("wait"), 0);
        c.write_all(b"x").expect("write");
        let mut tries = 0;
        while out.is_empty() && tries < 1000 {
            wait_now(&ep, &mut out, 8).expect("wait");
            std::thread::sleep(std::time::Duration::from_millis(1));
            tries += 1;
        }
        assert_eq!(out, vec![42]);
        delete(&ep, &s).expect("delete");
        out.clear();
        assert_eq!(wait_now(&ep, &mut out, 8).expect("wait"), 0);
    }
}
