//! A connection to an upstream server, TCP, a unix socket or TLS over TCP
//! (`proxy_pass https://…`, see [`super::tls`]), registered with the
//! worker's reactor while in use and while the worker keeps it idle
//! (`idle.rs`); and its unregistered form, a plain socket (with its TLS
//! state, for a TLS one), that the process's keep-alive tier keeps for any
//! worker (`keepalive.rs`).
//!
//! Through TLS every read and write is rustls's, driven by the socket's
//! readiness ([`TlsStream`]): what a write encrypted and the socket did not
//! take yet is sent by the next write or by [`Conn::flush`], which the
//! writers call once they have nothing more to write. Nothing reaches a TLS
//! upstream but through these calls (no `sendfile()`, no `splice()`).
//!
//! Connecting never waits on the loop: the socket is non-blocking and the
//! wait for the handshake is bounded by `proxy_connect_timeout`. Failures
//! carry nginx's words: `connect() failed (111: Connection refused)`,
//! `upstream timed out (110: Connection timed out)`.

use std::io::{self, IoSlice};
use std::os::fd::{AsFd, BorrowedFd};
use std::task::{Context, Poll};
use std::time::Duration;

use rustls::ClientConnection;
use tokio::net::{TcpStream, UnixStream};

use super::peer::PeerAddr;
use crate::io::ready;
use crate::io::tls_stream::{Held, TlsStream};
use crate::sys::socket as sys_socket;

/// Why a connection could not be made.
#[derive(Debug)]
pub struct ConnectError {
    /// nginx's message (`connect() failed (111: Connection refused)`).
    pub message: String,
    /// Whether it was `proxy_connect_timeout` (nginx's 504, `timeout` for
    /// `proxy_next_upstream`) rather than an error (502, `error`).
    pub timed_out: bool,
}

/// A connection in use.
#[derive(Debug)]
pub enum Conn {
    /// TCP.
    Tcp(TcpStream),
    /// A unix socket (`server unix:/path`).
    Unix(UnixStream),
    /// TLS over TCP, its handshake done.
    Tls(Box<TlsStream<ClientConnection>>),
}

/// A connection between requests: registered with no reactor.
#[derive(Debug)]
pub enum IdleConn {
    /// TCP.
    Tcp(std::net::TcpStream),
    /// A unix socket.
    Unix(std::os::unix::net::UnixStream),
    /// TLS over TCP: the socket and the connection's TLS state.
    Tls(std::net::TcpStream, Box<ClientConnection>),
}

impl AsFd for IdleConn {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            IdleConn::Tcp(s) | IdleConn::Tls(s, _) => s.as_fd(),
            IdleConn::Unix(s) => s.as_fd(),
        }
    }
}

impl AsFd for Conn {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Conn::Tcp(s) => s.as_fd(),
            Conn::Unix(s) => s.as_fd(),
            Conn::Tls(s) => s.as_fd(),
        }
    }
}

impl Conn {
    /// Connects to `addr` within `timeout`; `keepalive`: `SO_KEEPALIVE`
    /// on the socket (`proxy_socket_keepalive`).
    pub async fn connect(
        addr: &PeerAddr,
        timeout: Duration,
        keepalive: bool,
    ) -> Result<Conn, ConnectError> {
        let attempt = async {
            match addr {
                PeerAddr::Inet(a) => TcpStream::connect(a).await.map(|s| {
                    // nginx sets TCP_NODELAY on upstream connections.
                    let _ = s.set_nodelay(true);
                    if keepalive {
                        let _ = socket2::SockRef::from(&s).set_keepalive(true);
                    }
                    Conn::Tcp(s)
                }),
                PeerAddr::Unix(p) => UnixStream::connect(p).await.map(Conn::Unix),
            }
        };
        match tokio::time::timeout(timeout, attempt).await {
            Ok(Ok(c)) => Ok(c),
            Ok(Err(e)) => Err(ConnectError {
                message: format!("connect() failed ({})", crate::sys::error::errno_text(&e)),
                timed_out: false,
            }),
            Err(_) => Err(ConnectError {
                message: "upstream timed out (110: Connection timed out)".into(),
                timed_out: true,
            }),
        }
    }

    /// Takes an idle connection back into this worker's reactor.
    pub fn from_idle(idle: IdleConn) -> io::Result<Conn> {
        Ok(match idle {
            IdleConn::Tcp(s) => Conn::Tcp(TcpStream::from_std(s)?),
            IdleConn::Unix(s) => Conn::Unix(UnixStream::from_std(s)?),
            IdleConn::Tls(s, tls) => {
                Conn::Tls(Box::new(TlsStream::new(TcpStream::from_std(s)?, *tls)))
            }
        })
    }

    /// Leaves this worker's reactor, for the keep-alive cache.
    pub fn into_idle(self) -> io::Result<IdleConn> {
        Ok(match self {
            Conn::Tcp(s) => IdleConn::Tcp(s.into_std()?),
            Conn::Unix(s) => IdleConn::Unix(s.into_std()?),
            Conn::Tls(s) => {
                let (tcp, tls, _) = s.into_parts();
                IdleConn::Tls(tcp.into_std()?, Box::new(tls))
            }
        })
    }

    /// The TLS connection, when it is one.
    pub fn tls(&self) -> Option<&TlsStream<ClientConnection>> {
        match self {
            Conn::Tls(s) => Some(s),
            _ => None,
        }
    }

    /// Reads what is there into the spare capacity of `buf`; `WouldBlock`
    /// when nothing is, 0 at the end of the stream.
    pub fn try_read_buf(&self, buf: &mut Vec<u8>) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => ready::recv(s, buf),
            Conn::Unix(s) => ready::recv(s, buf),
            Conn::Tls(s) => s.try_read_buf(buf),
        }
    }

    /// What the connection shows while idle, without reading it: quiet at
    /// no cost when the reactor has seen nothing since it was drained.
    /// Through TLS, records that came meanwhile are read: a session ticket
    /// leaves the connection quiet, plaintext or the end do not.
    pub fn peek(&self) -> sys_socket::Idle {
        match self {
            Conn::Tcp(s) => ready::peek(s),
            Conn::Unix(s) => ready::peek(s),
            Conn::Tls(s) if s.has_plaintext() => sys_socket::Idle::Data,
            Conn::Tls(s) => match ready::peek(s.tcp()) {
                sys_socket::Idle::Data => match s.fill() {
                    Ok(Held::Plaintext) => sys_socket::Idle::Data,
                    Ok(Held::Closed) => sys_socket::Idle::Closed,
                    Ok(Held::Nothing) => sys_socket::Idle::Quiet,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => sys_socket::Idle::Quiet,
                    Err(_) => sys_socket::Idle::Closed,
                },
                seen => seen,
            },
        }
    }

    /// Writes what the socket takes now from `bufs` (through TLS: encrypts
    /// what rustls takes, see [`TlsStream::try_write_vectored`]).
    pub fn try_write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.try_write_vectored(bufs),
            Conn::Unix(s) => s.try_write_vectored(bufs),
            Conn::Tls(s) => s.try_write_vectored(bufs),
        }
    }

    /// Waits until the connection may be read (through TLS: plaintext is
    /// held, or the socket is readable).
    pub async fn readable(&self) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.readable().await,
            Conn::Unix(s) => s.readable().await,
            Conn::Tls(s) => s.readable().await,
        }
    }

    /// Waits until the connection may be written (through TLS: once what
    /// earlier writes encrypted is sent).
    pub async fn writable(&self) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.writable().await,
            Conn::Unix(s) => s.writable().await,
            Conn::Tls(s) => s.writable().await,
        }
    }

    /// Whether bytes written are still held to be sent (encrypted output
    /// of a TLS connection; never on a plain socket).
    pub fn holds_output(&self) -> bool {
        self.tls().is_some_and(|s| s.holds_output())
    }

    /// Sends what the connection still holds (see [`Conn::holds_output`]),
    /// waiting at most `timeout` for the socket each time.
    pub async fn flush(&self, timeout: Duration) -> Result<(), WriteError> {
        if !self.holds_output() {
            return Ok(());
        }
        crate::io::deadline::within(timeout, self.writable())
            .await
            .map_err(|_| WriteError::TimedOut)?
            .map_err(WriteError::Io)
    }

    /// Polls read readiness (for body sources polled by the sender).
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Conn::Tcp(s) => s.poll_read_ready(cx),
            Conn::Unix(s) => s.poll_read_ready(cx),
            Conn::Tls(s) if s.has_plaintext() => Poll::Ready(Ok(())),
            Conn::Tls(s) => s.tcp().poll_read_ready(cx),
        }
    }

    /// Polls write readiness.
    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Conn::Tcp(s) => s.poll_write_ready(cx),
            Conn::Unix(s) => s.poll_write_ready(cx),
            Conn::Tls(s) => s.tcp().poll_write_ready(cx),
        }
    }

    /// Writes all of `data`, each wait bounded by `timeout`
    /// (`proxy_send_timeout`), and sends it all (through TLS, what was
    /// encrypted too).
    pub async fn write_all(&self, mut data: &[u8], timeout: Duration) -> Result<(), WriteError> {
        while !data.is_empty() {
            match self.try_write_vectored(&[IoSlice::new(data)]) {
                Ok(0) => return Err(WriteError::Io(io::ErrorKind::WriteZero.into())),
                Ok(n) => data = &data[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    crate::io::deadline::within(timeout, self.writable())
                        .await
                        .map_err(|_| WriteError::TimedOut)?
                        .map_err(WriteError::Io)?;
                }
                Err(e) => return Err(WriteError::Io(e)),
            }
        }
        self.flush(timeout).await
    }
}

/// Why writing to an upstream failed.
#[derive(Debug)]
pub enum WriteError {
    /// The socket failed (`writev() failed (32: Broken pipe)`).
    Io(io::Error),
    /// `proxy_send_timeout` passed without progress.
    TimedOut,
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::Io(e) => {
                write!(f, "writev() failed ({})", crate::sys::error::errno_text(e))
            }
            WriteError::TimedOut => f.write_str("upstream timed out (110: Connection timed out)"),
        }
    }
}
