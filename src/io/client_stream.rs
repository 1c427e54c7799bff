//! A client's connection: TCP, a unix-domain socket (`listen unix:`), or
//! TLS over TCP (`listen … ssl`), as one type with the calls the server
//! makes on it.
//!
//! Each call is one `match` and the stream's own call: nothing is boxed or
//! allocated per call, so the TCP path costs what it did when it was a bare
//! `TcpStream`. Options that exist only for TCP (`TCP_NODELAY`, `TCP_CORK`)
//! are not set on a unix-domain socket, as nginx does not set them there
//! (`ngx_event_accept` disables both for `AF_UNIX`).
//!
//! A TLS connection reads and writes plaintext through rustls
//! ([`super::tls_stream`]); what only a plain socket can do (`sendfile()`
//! into it, a pool thread writing to it) the server does not ask of one.
//!
//! What this module must not do: decide anything about HTTP, or make a
//! raw system call (those are in `crate::sys::socket`).

use std::io::{self, IoSlice};
use std::os::fd::{AsFd, BorrowedFd};
use std::task::{Context, Poll};

use tokio::io::Interest;
use tokio::net::{TcpStream, UnixStream};

use crate::sys::socket::{self as sys_socket, Idle};

use super::ready::Registered;
use super::tls_stream::{Held, TlsStream};

/// A client connection registered with the current worker's reactor.
#[derive(Debug)]
pub enum ClientStream {
    /// A TCP connection.
    Tcp(TcpStream),
    /// A unix-domain stream connection.
    Unix(UnixStream),
    /// TLS over TCP, its handshake done.
    Tls(Box<TlsStream>),
}

/// A client connection registered with no reactor: parked in a worker's
/// epoll instance, or on its way to another worker (a reload).
#[derive(Debug)]
pub enum StdClientStream {
    /// A TCP connection.
    Tcp(std::net::TcpStream),
    /// A unix-domain stream connection.
    Unix(std::os::unix::net::UnixStream),
    /// TLS over TCP: the socket, the connection's TLS state, and early
    /// data taken from it and not read yet.
    Tls(std::net::TcpStream, Box<rustls::ServerConnection>, Vec<u8>),
}

impl AsFd for ClientStream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            ClientStream::Tcp(s) => s.as_fd(),
            ClientStream::Unix(s) => s.as_fd(),
            ClientStream::Tls(s) => s.as_fd(),
        }
    }
}

impl AsFd for StdClientStream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            StdClientStream::Tcp(s) | StdClientStream::Tls(s, _, _) => s.as_fd(),
            StdClientStream::Unix(s) => s.as_fd(),
        }
    }
}

impl StdClientStream {
    /// Shuts the writing side down (the start of a lingering close).
    pub fn shutdown_write(&self) -> io::Result<()> {
        match self {
            StdClientStream::Tcp(s) | StdClientStream::Tls(s, _, _) => {
                s.shutdown(std::net::Shutdown::Write)
            }
            StdClientStream::Unix(s) => s.shutdown(std::net::Shutdown::Write),
        }
    }
}

impl Registered for ClientStream {
    fn try_io_ready<R>(
        &self,
        interest: Interest,
        f: impl FnOnce() -> io::Result<R>,
    ) -> io::Result<R> {
        self.try_io(interest, f)
    }
}

impl ClientStream {
    /// Registers a plain socket with the current worker's reactor.
    pub fn from_std(s: StdClientStream) -> io::Result<ClientStream> {
        Ok(match s {
            StdClientStream::Tcp(s) => ClientStream::Tcp(TcpStream::from_std(s)?),
            StdClientStream::Unix(s) => ClientStream::Unix(UnixStream::from_std(s)?),
            StdClientStream::Tls(s, tls, early) => ClientStream::Tls(Box::new(
                TlsStream::with_early(TcpStream::from_std(s)?, *tls, early),
            )),
        })
    }

    /// Leaves the reactor: the plain socket, still non-blocking.
    pub fn into_std(self) -> io::Result<StdClientStream> {
        Ok(match self {
            ClientStream::Tcp(s) => StdClientStream::Tcp(s.into_std()?),
            ClientStream::Unix(s) => StdClientStream::Unix(s.into_std()?),
            ClientStream::Tls(s) => {
                let (tcp, tls, early) = s.into_parts();
                StdClientStream::Tls(tcp.into_std()?, Box::new(tls), early)
            }
        })
    }

    /// Whether what is read now came in TLS 1.3 early data, before the
    /// handshake completed.
    pub fn in_early_data(&self) -> bool {
        matches!(self, ClientStream::Tls(s) if s.in_early_data())
    }

    /// Whether it is a unix-domain connection.
    pub fn is_unix(&self) -> bool {
        matches!(self, ClientStream::Unix(_))
    }

    /// The TLS connection, when it is one.
    pub fn tls(&self) -> Option<&TlsStream> {
        match self {
            ClientStream::Tls(s) => Some(s),
            _ => None,
        }
    }

    /// Whether bytes may be handed to the socket directly (`sendfile()`,
    /// a pool thread's write): not through TLS.
    pub fn is_plain(&self) -> bool {
        !matches!(self, ClientStream::Tls(_))
    }

    /// Waits until the connection may be read.
    pub async fn readable(&self) -> io::Result<()> {
        match self {
            ClientStream::Tcp(s) => s.readable().await,
            ClientStream::Unix(s) => s.readable().await,
            ClientStream::Tls(s) => s.readable().await,
        }
    }

    /// Waits until the connection may be written.
    pub async fn writable(&self) -> io::Result<()> {
        match self {
            ClientStream::Tcp(s) => s.writable().await,
            ClientStream::Unix(s) => s.writable().await,
            ClientStream::Tls(s) => s.writable().await,
        }
    }

    /// Whether a TLS connection holds encrypted bytes the socket has not
    /// taken yet (never a plain socket).
    pub fn holds_output(&self) -> bool {
        self.tls().is_some_and(|s| s.holds_output())
    }

    /// Sends what a TLS connection still holds encrypted (nothing to do on
    /// a plain socket, which holds nothing): the end of a response.
    pub async fn flush(&self) -> io::Result<()> {
        match self {
            ClientStream::Tls(s) => s.flush().await,
            _ => Ok(()),
        }
    }

    /// Polls read readiness (a parked connection's wake-up).
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            ClientStream::Tcp(s) => s.poll_read_ready(cx),
            ClientStream::Unix(s) => s.poll_read_ready(cx),
            ClientStream::Tls(s) if s.has_plaintext() => Poll::Ready(Ok(())),
            ClientStream::Tls(s) => s.tcp().poll_read_ready(cx),
        }
    }

    /// Runs `f` if the reactor marks the connection ready for `interest`;
    /// a `WouldBlock` from `f` drops the mark (tokio's `try_io`). On a TLS
    /// connection `f` sees the socket under TLS: for calls that move no
    /// data (options, a reset), never for reads or writes.
    pub fn try_io<R>(
        &self,
        interest: Interest,
        f: impl FnOnce() -> io::Result<R>,
    ) -> io::Result<R> {
        match self {
            ClientStream::Tcp(s) => s.try_io(interest, f),
            ClientStream::Unix(s) => s.try_io(interest, f),
            ClientStream::Tls(s) => s.tcp().try_io(interest, f),
        }
    }

    /// Writes what the connection takes now of `buf` (`send()` without
    /// `SIGPIPE` on a plain socket, encrypted on a TLS one).
    pub fn try_send(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            ClientStream::Tls(s) => s.try_write(buf),
            _ => self.try_io(Interest::WRITABLE, || sys_socket::send(self, buf)),
        }
    }

    /// Reads what is there into the spare capacity of `buf` (see
    /// [`super::ready::recv`]): `WouldBlock` when nothing is, 0 at the end.
    pub fn recv(&self, buf: &mut Vec<u8>) -> io::Result<usize> {
        match self {
            ClientStream::Tcp(s) => super::ready::recv(s, buf),
            ClientStream::Unix(s) => super::ready::recv(s, buf),
            ClientStream::Tls(s) => s.try_read_buf(buf),
        }
    }

    /// What an idle connection shows, without consuming it (see
    /// [`super::ready::peek`]): on a TLS one, plaintext waiting, else what
    /// the socket under it shows.
    pub fn peek_idle(&self) -> Idle {
        match self {
            ClientStream::Tcp(s) => super::ready::peek(s),
            ClientStream::Unix(s) => super::ready::peek(s),
            ClientStream::Tls(s) if s.has_plaintext() => Idle::Data,
            ClientStream::Tls(s) => {
                let idle = super::ready::peek(s.tcp());
                if idle == Idle::Closed {
                    // The client ended without close_notify: none is
                    // sent back (see `TlsStream::close_notify`).
                    s.peer_gone();
                }
                idle
            }
        }
    }

    /// Reads what is there into `buf`; `WouldBlock` when nothing is, 0 at
    /// the end of the stream.
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            ClientStream::Tcp(s) => s.try_read(buf),
            ClientStream::Unix(s) => s.try_read(buf),
            ClientStream::Tls(s) => s.try_read(buf),
        }
    }

    /// Reads what is there into the spare capacity of `buf`, which grows
    /// by what arrived; `WouldBlock` when nothing is, 0 at the end.
    pub fn try_read_buf(&self, buf: &mut Vec<u8>) -> io::Result<usize> {
        match self {
            ClientStream::Tcp(s) => s.try_read_buf(buf),
            ClientStream::Unix(s) => s.try_read_buf(buf),
            ClientStream::Tls(s) => s.try_read_buf(buf),
        }
    }

    /// Writes what the socket takes now of `buf`.
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            ClientStream::Tcp(s) => s.try_write(buf),
            ClientStream::Unix(s) => s.try_write(buf),
            ClientStream::Tls(s) => s.try_write(buf),
        }
    }

    /// Writes what the socket takes now of `bufs`.
    pub fn try_write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            ClientStream::Tcp(s) => s.try_write_vectored(bufs),
            ClientStream::Unix(s) => s.try_write_vectored(bufs),
            ClientStream::Tls(s) => s.try_write_vectored(bufs),
        }
    }

    /// Waits until a byte can be read or the client closed, reading
    /// nothing: 1 when a byte waits, 0 at the end of the stream.
    pub async fn peek_byte(&self) -> io::Result<usize> {
        match self {
            ClientStream::Tcp(s) => s.peek(&mut [0u8; 1]).await,
            // Through TLS a byte is plaintext: records are read (and kept
            // for the next read) until some comes, or the end.
            ClientStream::Tls(s) => loop {
                match s.fill() {
                    Ok(Held::Plaintext) => return Ok(1),
                    Ok(Held::Closed) => return Ok(0),
                    Ok(Held::Nothing) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                s.tcp().readable().await?;
            },
            // tokio has no `peek` for unix streams: the same wait, with
            // `recv(MSG_PEEK)` once the reactor says readable.
            ClientStream::Unix(s) => loop {
                s.readable().await?;
                let seen = s.try_io(Interest::READABLE, || match sys_socket::peek_idle(s) {
                    Idle::Quiet => Err(io::ErrorKind::WouldBlock.into()),
                    Idle::Data => Ok(1),
                    Idle::Closed => Ok(0),
                });
                match seen {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    r => return r,
                }
            },
        }
    }

    /// `TCP_NODELAY` (`tcp_nodelay`); nothing on a unix-domain socket.
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        match self {
            ClientStream::Tcp(s) => s.set_nodelay(on),
            ClientStream::Tls(s) => s.tcp().set_nodelay(on),
            ClientStream::Unix(_) => Ok(()),
        }
    }

    /// `TCP_CORK` (`tcp_nopush` while sending a file); nothing on a
    /// unix-domain socket.
    pub fn set_nopush(&self, on: bool) -> io::Result<()> {
        match self {
            ClientStream::Tcp(s) => sys_socket::set_tcp_nopush(s, on),
            ClientStream::Tls(s) => sys_socket::set_tcp_nopush(s.tcp(), on),
            ClientStream::Unix(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_unix_stream_reads_writes_peeks_and_parks() {
        rt().block_on(async {
            let (a, b) = UnixStream::pair().unwrap();
            let a = ClientStream::Unix(a);
            assert!(a.is_unix());
            // TCP-only options are no-ops, not errors.
            a.set_nodelay(true).unwrap();
            a.set_nopush(true).unwrap();
            b.writable().await.unwrap();
            b.try_write(b"hi").unwrap();
            assert_eq!(a.peek_byte().await.unwrap(), 1);
            let mut buf = Vec::with_capacity(16);
            a.readable().await.unwrap();
            assert_eq!(a.try_read_buf(&mut buf).unwrap(), 2);
            assert_eq!(&buf[..], b"hi");
            // Out of the reactor and back, as a parked connection.
            let a = ClientStream::from_std(a.into_std().unwrap()).unwrap();
            a.writable().await.unwrap();
            assert_eq!(a.try_write_vectored(&[IoSlice::new(b"yo")]).unwrap(), 2);
            let mut got = [0u8; 2];
            b.readable().await.unwrap();
            assert_eq!(b.try_read(&mut got).unwrap(), 2);
            assert_eq!(&got, b"yo");
            drop(b);
            assert_eq!(a.peek_byte().await.unwrap(), 0);
        });
    }
}
