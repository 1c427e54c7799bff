//! A connection to an upstream server, TCP or a unix socket, registered
//! with the worker's reactor while in use and while the worker keeps it
//! idle (`idle.rs`); and its unregistered form, a plain socket, that the
//! process's keep-alive tier keeps for any worker (`keepalive.rs`).
//!
//! Connecting never waits on the loop: the socket is non-blocking and the
//! wait for the handshake is bounded by `proxy_connect_timeout`. Failures
//! carry nginx's words: `connect() failed (111: Connection refused)`,
//! `upstream timed out (110: Connection timed out)`.

use std::io::{self, IoSlice};
use std::os::fd::{AsFd, BorrowedFd};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::net::{TcpStream, UnixStream};

use super::peer::PeerAddr;
use crate::io::ready;
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
}

/// A connection between requests: registered with no reactor.
#[derive(Debug)]
pub enum IdleConn {
    /// TCP.
    Tcp(std::net::TcpStream),
    /// A unix socket.
    Unix(std::os::unix::net::UnixStream),
}

impl AsFd for IdleConn {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            IdleConn::Tcp(s) => s.as_fd(),
            IdleConn::Unix(s) => s.as_fd(),
        }
    }
}

impl AsFd for Conn {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Conn::Tcp(s) => s.as_fd(),
            Conn::Unix(s) => s.as_fd(),
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
                message: format!("connect() failed ({})", crate::config::errno_text(&e)),
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
        })
    }

    /// Leaves this worker's reactor, for the keep-alive cache.
    pub fn into_idle(self) -> io::Result<IdleConn> {
        Ok(match self {
            Conn::Tcp(s) => IdleConn::Tcp(s.into_std()?),
            Conn::Unix(s) => IdleConn::Unix(s.into_std()?),
        })
    }

    /// Reads what is there into the spare capacity of `buf`; `WouldBlock`
    /// when nothing is, 0 at the end of the stream.
    pub fn try_read_buf(&self, buf: &mut Vec<u8>) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => ready::recv(s, buf),
            Conn::Unix(s) => ready::recv(s, buf),
        }
    }

    /// What the connection shows while idle, without reading it: quiet at
    /// no cost when the reactor has seen nothing since it was drained.
    pub fn peek(&self) -> sys_socket::Idle {
        match self {
            Conn::Tcp(s) => ready::peek(s),
            Conn::Unix(s) => ready::peek(s),
        }
    }

    /// Writes what the socket takes now from `bufs`.
    pub fn try_write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.try_write_vectored(bufs),
            Conn::Unix(s) => s.try_write_vectored(bufs),
        }
    }

    /// Waits until the connection may be read.
    pub async fn readable(&self) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.readable().await,
            Conn::Unix(s) => s.readable().await,
        }
    }

    /// Waits until the connection may be written.
    pub async fn writable(&self) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.writable().await,
            Conn::Unix(s) => s.writable().await,
        }
    }

    /// Polls read readiness (for body sources polled by the sender).
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Conn::Tcp(s) => s.poll_read_ready(cx),
            Conn::Unix(s) => s.poll_read_ready(cx),
        }
    }

    /// Polls write readiness.
    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Conn::Tcp(s) => s.poll_write_ready(cx),
            Conn::Unix(s) => s.poll_write_ready(cx),
        }
    }

    /// Writes all of `data`, each wait bounded by `timeout`
    /// (`proxy_send_timeout`).
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
        Ok(())
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
            WriteError::Io(e) => write!(f, "writev() failed ({})", crate::config::errno_text(e)),
            WriteError::TimedOut => f.write_str("upstream timed out (110: Connection timed out)"),
        }
    }
}
