//! Raw request/response exchanges over one loopback TCP connection.
//!
//! The client writes bytes exactly as given and reads whatever comes back.
//! Reading stops at the first of: the server closes the connection; every
//! expected response has arrived and nothing more came for [`SETTLE`]; no
//! byte came for [`IDLE_TIMEOUT`]; [`TOTAL_TIMEOUT`] passed.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use super::request::request_methods;
use super::response::parse_responses;

/// How long to wait for connect().
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long to wait for a byte while a response is still missing.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long to wait for stray extra bytes once all responses are in.
pub const SETTLE: Duration = Duration::from_millis(200);
/// Upper bound on one exchange, however slowly bytes trickle in.
const TOTAL_TIMEOUT: Duration = Duration::from_secs(20);
/// Size of one read.
const READ_CHUNK: usize = 64 * 1024;

/// What came back on one connection.
#[derive(Clone, Debug, Default)]
pub struct Exchange {
    /// Every byte the server sent.
    pub bytes: Vec<u8>,
    /// Whether the server closed the connection (FIN or RST) before the
    /// client stopped reading.
    pub closed: bool,
    /// Whether the close was a reset; not deterministic across runs when
    /// the server closes with unread request bytes, so informational only.
    pub reset: bool,
    /// A write that failed because the server had already closed.
    pub write_error: Option<String>,
}

/// Writes `request` in one write and returns every byte read back.
pub fn raw_exchange(port: u16, request: &[u8]) -> Vec<u8> {
    let methods = request_methods(request);
    exchange(port, &[request.to_vec()], &methods).bytes
}

/// Writes each segment in one write; before writing the next segment, waits
/// until one more response (interim ones count) than before has arrived.
/// `methods` are all requests' methods in order: their number is how many
/// final responses to wait for at the end, and `HEAD` tells the parser
/// that a response has no body.
pub fn exchange(port: u16, segments: &[Vec<u8>], methods: &[String]) -> Exchange {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let stream = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)
        .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream
        .set_nodelay(true)
        .unwrap_or_else(|e| panic!("setsockopt TCP_NODELAY: {e}"));
    let mut reader = Reader {
        stream,
        out: Exchange::default(),
        started: Instant::now(),
    };
    for (i, segment) in segments.iter().enumerate() {
        if let Err(e) = reader.stream.write_all(segment) {
            reader.out.write_error = Some(format!("write segment {i}: {e}"));
            break;
        }
        if i + 1 < segments.len() {
            let before = reader.responses(methods, false);
            reader.read_until(false, |r| r.responses(methods, false) > before);
            if reader.out.closed {
                break;
            }
        }
    }
    let want = methods.len();
    reader.read_until(true, |r| r.finals(methods) >= want);
    reader.out
}

/// The connection and what was read from it so far.
struct Reader {
    stream: TcpStream,
    out: Exchange,
    started: Instant,
}

impl Reader {
    /// Complete responses so far, interim ones included.
    fn responses(&self, methods: &[String], at_eof: bool) -> usize {
        parse_responses(&self.out.bytes, methods, at_eof)
            .responses
            .len()
    }

    /// Complete final responses so far.
    fn finals(&self, methods: &[String]) -> usize {
        parse_responses(&self.out.bytes, methods, false).finals()
    }

    /// Reads until the server closes or times out, or `done` holds: then
    /// returns at once, or with `settle` waits up to [`SETTLE`] for more.
    fn read_until(&mut self, settle: bool, done: impl Fn(&Reader) -> bool) {
        let mut buf = vec![0; READ_CHUNK];
        while !self.out.closed {
            if !settle && done(self) {
                return;
            }
            let timeout = if done(self) { SETTLE } else { IDLE_TIMEOUT };
            let left = TOTAL_TIMEOUT.saturating_sub(self.started.elapsed());
            if left.is_zero() {
                return;
            }
            self.stream
                .set_read_timeout(Some(timeout.min(left)))
                .unwrap_or_else(|e| panic!("setsockopt SO_RCVTIMEO: {e}"));
            match self.stream.read(&mut buf) {
                Ok(0) => self.out.closed = true,
                Ok(n) => {
                    self.out.bytes.extend_from_slice(&buf[..n]);
                    if !settle && done(self) {
                        return;
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::ConnectionReset => {
                    self.out.closed = true;
                    self.out.reset = true;
                }
                Err(e) => panic!("read from server: {e}"),
            }
        }
    }
}
