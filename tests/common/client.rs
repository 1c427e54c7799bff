//! A client that keeps one connection open across several steps: write
//! some bytes, read exactly one response, check whether the server closed.
//! [`exchange`](super::exchange) sends everything and reads to the end; the
//! serving tests also need to interleave (send, read one, wait, send again)
//! and to observe the connection's state in between.
//!
//! Every read is bounded by a timeout, so no test can hang on a server that
//! never answers. A connection is TCP ([`Conn::open`]) or to a unix-domain
//! socket (`listen unix:`, [`Conn::open_unix`]).

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use super::response::{Response, parse_first};

/// How long to wait for connect().
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long [`Conn::response`] waits for a response to complete.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);
/// Size of one read.
const READ_CHUNK: usize = 64 * 1024;

/// What the server did with the connection within a wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// It closed it (FIN or RST).
    Closed,
    /// It sent nothing and kept it open.
    Open,
}

/// A connected stream the client reads with a timeout.
pub trait Stream: Read + Write {
    /// `SO_RCVTIMEO`.
    fn set_read_timeout(&self, limit: Option<Duration>) -> std::io::Result<()>;
}

impl Stream for TcpStream {
    fn set_read_timeout(&self, limit: Option<Duration>) -> std::io::Result<()> {
        TcpStream::set_read_timeout(self, limit)
    }
}

impl Stream for UnixStream {
    fn set_read_timeout(&self, limit: Option<Duration>) -> std::io::Result<()> {
        UnixStream::set_read_timeout(self, limit)
    }
}

/// One client connection and what was read from it but not yet consumed.
pub struct Conn<S: Stream = TcpStream> {
    /// The connection.
    pub stream: S,
    /// Bytes read and not yet returned as a response.
    buf: Vec<u8>,
    /// Whether the server closed the connection.
    closed: bool,
}

impl Conn<UnixStream> {
    /// Connects to the unix-domain socket at `path`; panics when that fails.
    pub fn open_unix(path: &Path) -> Conn<UnixStream> {
        Conn::try_open_unix(path).unwrap_or_else(|e| panic!("connect {}: {e}", path.display()))
    }

    /// Connects to the unix-domain socket at `path`.
    pub fn try_open_unix(path: &Path) -> std::io::Result<Conn<UnixStream>> {
        Ok(Conn {
            stream: UnixStream::connect(path)?,
            buf: Vec::new(),
            closed: false,
        })
    }
}

impl Conn {
    /// Connects to the loopback `port`; panics when that fails.
    pub fn open(port: u16) -> Conn {
        Conn::try_open(port).unwrap_or_else(|e| panic!("connect 127.0.0.1:{port}: {e}"))
    }

    /// Connects to the loopback `port`.
    pub fn try_open(port: u16) -> std::io::Result<Conn> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let stream = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            buf: Vec::new(),
            closed: false,
        })
    }
}

impl<S: Stream> Conn<S> {
    /// Writes `bytes` in one write; panics when that fails.
    pub fn send(&mut self, bytes: &[u8]) {
        self.stream
            .write_all(bytes)
            .unwrap_or_else(|e| panic!("write to server: {e}"));
    }

    /// Writes `bytes`, returning the error instead of panicking.
    pub fn try_send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Reads one complete response to a request with `method`, waiting up
    /// to [`RESPONSE_TIMEOUT`]. `None` when the server closed or went
    /// silent first; the bytes read stay available in [`Conn::pending`].
    pub fn response_to(&mut self, method: &str) -> Option<Response> {
        self.response_within(method, RESPONSE_TIMEOUT)
    }

    /// [`Conn::response_to`] for a `GET`.
    pub fn response(&mut self) -> Option<Response> {
        self.response_to("GET")
    }

    /// Reads one complete response, waiting up to `limit`.
    pub fn response_within(&mut self, method: &str, limit: Duration) -> Option<Response> {
        self.read_one(method, limit, true)
    }

    /// Reads the next response, interim (1xx) ones included, waiting up
    /// to [`RESPONSE_TIMEOUT`].
    pub fn next_response(&mut self, method: &str) -> Option<Response> {
        self.read_one(method, RESPONSE_TIMEOUT, false)
    }

    /// Reads responses until a final one (or, without `finals_only`, any
    /// one) is complete, and consumes the bytes up to its end.
    fn read_one(&mut self, method: &str, limit: Duration, finals_only: bool) -> Option<Response> {
        let deadline = Instant::now() + limit;
        loop {
            let mut pos = 0;
            while let Ok((r, used)) = parse_first(&self.buf[pos..], method == "HEAD", self.closed) {
                pos += used;
                if !finals_only || !r.is_interim() {
                    self.buf.drain(..pos);
                    return Some(r);
                }
            }
            if self.closed {
                return None;
            }
            // A close ends a body that runs to it: parse once more.
            if !self.fill(deadline) && !self.closed {
                return None;
            }
        }
    }

    /// Reads one chunk of whatever arrives before `deadline`; false when
    /// nothing came (timeout) or the server closed.
    fn fill(&mut self, deadline: Instant) -> bool {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        self.stream
            .set_read_timeout(Some(left))
            .unwrap_or_else(|e| panic!("setsockopt SO_RCVTIMEO: {e}"));
        let mut chunk = vec![0; READ_CHUNK];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    self.closed = true;
                    return false;
                }
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return true;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return false;
                }
                Err(_) => {
                    self.closed = true;
                    return false;
                }
            }
        }
    }

    /// Waits up to `limit` for the server to close the connection, reading
    /// (and keeping in [`Conn::pending`]) whatever it sends meanwhile.
    pub fn wait_closed(&mut self, limit: Duration) -> State {
        let deadline = Instant::now() + limit;
        while !self.closed {
            if !self.fill(deadline) && !self.closed {
                return State::Open;
            }
        }
        State::Closed
    }

    /// Whether anything arrives (or the server closes) within `limit`;
    /// what arrives is kept in [`Conn::pending`].
    pub fn quiet_for(&mut self, limit: Duration) -> bool {
        let before = self.buf.len();
        let deadline = Instant::now() + limit;
        let _ = self.fill(deadline);
        self.buf.len() == before && !self.closed
    }

    /// Bytes read but not returned as a response.
    pub fn pending(&self) -> &[u8] {
        &self.buf
    }

    /// Whether the server closed the connection (as far as read so far).
    pub fn is_closed(&self) -> bool {
        self.closed
    }
}

/// Sends one `GET path` with `Host: localhost` and `Connection: close` on a
/// fresh connection and returns the response; panics when none comes.
pub fn get(port: u16, path: &str) -> Response {
    request(
        port,
        &format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"),
    )
}

/// Sends `raw` on a fresh connection and returns the first final response;
/// panics when none comes.
pub fn request(port: u16, raw: &str) -> Response {
    first_response(Conn::open(port), raw)
}

/// [`get`] over the unix-domain socket at `socket`.
pub fn get_unix(socket: &Path, path: &str) -> Response {
    request_unix(
        socket,
        &format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"),
    )
}

/// [`request`] over the unix-domain socket at `socket`.
pub fn request_unix(socket: &Path, raw: &str) -> Response {
    first_response(Conn::open_unix(socket), raw)
}

/// Sends `raw` on `c` and returns the first final response; panics when
/// none comes.
fn first_response<S: Stream>(mut c: Conn<S>, raw: &str) -> Response {
    let method = raw.split(' ').next().unwrap_or("GET").to_string();
    c.send(raw.as_bytes());
    c.response_to(&method).unwrap_or_else(|| {
        panic!(
            "no response to {raw:?}; got {:?}",
            String::from_utf8_lossy(c.pending())
        )
    })
}
