//! Reads from sockets registered with a worker's reactor that keep the
//! reactor's readiness exact, so that a socket with nothing to read costs no
//! system call.
//!
//! The reactor is edge-triggered: it marks a socket readable when epoll
//! reports an edge, and forgets it only when a read fails with `EAGAIN`.
//! A read that returns less than it asked for has drained the socket (TCP
//! and unix stream sockets copy everything queued up to the length asked),
//! so the mark is dropped then, without the `EAGAIN` read: nginx's
//! `ngx_unix_recv` sets `rev->ready = 0` on such a short read. Anything that
//! arrives later is a new edge, which the reactor reports at its next turn.
//! The next read, or [`peek`], then sees "nothing yet" without a call.
//!
//! What this module must not do: block, or drop a mark while bytes or an
//! end of stream may still wait (the reactor's "closed" marks are never
//! dropped here).

use std::io;
use std::os::fd::AsFd;

use tokio::io::Interest;
use tokio::net::{TcpStream, UnixStream};

use crate::sys::socket::{self as sys_socket, Idle};

/// A stream socket registered with the current worker's reactor.
pub trait Registered: AsFd {
    /// Runs `f` if the reactor marks the socket ready for `interest`; a
    /// `WouldBlock` from `f` drops the mark (tokio's `try_io`).
    fn try_io_ready<R>(
        &self,
        interest: Interest,
        f: impl FnOnce() -> io::Result<R>,
    ) -> io::Result<R>;
}

impl Registered for TcpStream {
    fn try_io_ready<R>(
        &self,
        interest: Interest,
        f: impl FnOnce() -> io::Result<R>,
    ) -> io::Result<R> {
        self.try_io(interest, f)
    }
}

impl Registered for UnixStream {
    fn try_io_ready<R>(
        &self,
        interest: Interest,
        f: impl FnOnce() -> io::Result<R>,
    ) -> io::Result<R> {
        self.try_io(interest, f)
    }
}

/// Reads what is there into the spare capacity of `buf` (which grows by
/// what arrived): `WouldBlock` when nothing is (no system call when the
/// reactor has seen nothing since the last drain), 0 at the end of the
/// stream. A read shorter than the spare capacity drops the readable mark.
pub fn recv<S: Registered>(sock: &S, buf: &mut Vec<u8>) -> io::Result<usize> {
    let asked = buf.capacity() - buf.len();
    let n = sock.try_io_ready(Interest::READABLE, || sys_socket::recv_spare(sock, buf))?;
    if n > 0 && n < asked {
        drained(sock);
    }
    Ok(n)
}

/// Drops the readable mark: the caller has just seen the socket empty.
/// Must be called in the same poll as that observation (the reactor cannot
/// have run in between, so every edge it reported was read).
fn drained<S: Registered>(sock: &S) {
    let _ = sock.try_io_ready(Interest::READABLE, || {
        Err::<(), _>(io::ErrorKind::WouldBlock.into())
    });
}

/// What an idle socket shows, without consuming it: [`Idle::Quiet`] at no
/// cost when the reactor has seen nothing since it was last drained;
/// otherwise a `recv(MSG_PEEK)` decides, and a quiet answer drops the mark.
pub fn peek<S: Registered>(sock: &S) -> Idle {
    let looked = sock.try_io_ready(Interest::READABLE, || match sys_socket::peek_idle(sock) {
        Idle::Quiet => Err(io::ErrorKind::WouldBlock.into()),
        seen => Ok(seen),
    });
    match looked {
        Ok(seen) => seen,
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Idle::Quiet,
        Err(_) => Idle::Closed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn pair() -> (TcpStream, TcpStream) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (b, _) = l.accept().await.unwrap();
        (a, b)
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_short_read_leaves_the_socket_quiet_until_more_arrives() {
        rt().block_on(async {
            let (a, b) = pair().await;
            b.writable().await.unwrap();
            b.try_write(b"hello").unwrap();
            a.readable().await.unwrap();
            let mut buf = Vec::with_capacity(64);
            assert_eq!(recv(&a, &mut buf).unwrap(), 5);
            // Drained: no mark, so nothing to read and quiet, without a call.
            let e = recv(&a, &mut buf).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
            assert_eq!(peek(&a), Idle::Quiet);
            // New bytes are a new edge: seen once the reactor runs.
            b.try_write(b"more").unwrap();
            a.readable().await.unwrap();
            assert_eq!(peek(&a), Idle::Data);
            assert_eq!(recv(&a, &mut buf).unwrap(), 4);
            assert_eq!(&buf[..], b"hellomore");
            // The peer's close is seen too.
            drop(b);
            a.readable().await.unwrap();
            assert_eq!(peek(&a), Idle::Closed);
        });
    }

    #[test]
    fn a_full_read_keeps_the_mark() {
        rt().block_on(async {
            let (a, b) = pair().await;
            b.writable().await.unwrap();
            b.try_write(b"0123456789").unwrap();
            a.readable().await.unwrap();
            let mut buf = Vec::with_capacity(4);
            let asked = buf.capacity();
            assert_eq!(recv(&a, &mut buf).unwrap(), asked);
            // More may wait: the next read asks the kernel.
            buf.reserve(64);
            assert_eq!(recv(&a, &mut buf).unwrap(), 10 - asked);
        });
    }
}
