//! A scripted upstream for the proxy's black-box tests: a loopback server
//! that speaks raw bytes exactly as a test says, and records what it was
//! sent, so that a test can check both sides of nowait.
//!
//! [`Upstream::start`] serves every accepted connection on a thread of its
//! own with the test's handler, which drives an [`UpstreamConn`]: read a
//! request, write bytes (all at once or slowly), sleep, close, half-close,
//! reset. [`Upstream::fixed`] and [`Upstream::echo`] are the common cases.
//!
//! Every request read is recorded ([`Upstream::requests`]) with the number
//! of the connection it came on, and accepted connections are counted, so
//! a test can tell whether nowait reused a kept-alive connection.
//!
//! [`Upstream::start_tls`] is the same upstream behind TLS (rustls, with
//! the configuration the test gives): each connection's handshake is done
//! before the handler runs, and what it showed is recorded
//! ([`Upstream::handshakes`]: the server name sent, whether the session
//! was resumed, the client's certificate, or why it failed).
//!
//! On drop, the upstream stops accepting, closes its port, shuts down the
//! connections still open (a handler blocked in a read sees the end) and,
//! if a handler panicked (a failed assertion inside it), panics with its
//! message so the test fails. std only (and `socket2` for `SO_LINGER`),
//! and strict about what it parses, so that it cannot hide a bug of
//! nowait's.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long a read waits for the peer before giving up: far longer than
/// any test waits, short enough that a forgotten thread ends.
pub const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the stop on drop waits to wake the accepting thread.
const WAKE_TIMEOUT: Duration = Duration::from_secs(1);
/// Size of one read.
const READ_CHUNK: usize = 16 * 1024;

/// One request as the upstream received it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// The connection it came on: 0 for the first accepted, and so on.
    pub connection: usize,
    /// The head exactly as sent, blank line included.
    pub head: Vec<u8>,
    /// The body's payload (chunked framing removed).
    pub body: Vec<u8>,
    /// The body exactly as sent (with its chunked framing, if any).
    pub raw_body: Vec<u8>,
}

impl Recorded {
    /// The head as text (lossy).
    pub fn head_text(&self) -> String {
        String::from_utf8_lossy(&self.head).into_owned()
    }

    /// The request line without CRLF.
    pub fn request_line(&self) -> String {
        self.head_text().lines().next().unwrap_or("").to_string()
    }

    /// The method.
    pub fn method(&self) -> String {
        self.request_line()
            .split(' ')
            .next()
            .unwrap_or("")
            .to_string()
    }

    /// The request target.
    pub fn target(&self) -> String {
        self.request_line()
            .split(' ')
            .nth(1)
            .unwrap_or("")
            .to_string()
    }

    /// The value of the first header named `name` (case-insensitive),
    /// without the spaces around it.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers_named(name).into_iter().next()
    }

    /// The values of every header named `name`, in order.
    pub fn headers_named(&self, name: &str) -> Vec<String> {
        header_values(&self.head, name)
    }

    /// Whether the client asked to keep the connection: HTTP/1.1 without
    /// `Connection: close`, HTTP/1.0 with `Connection: keep-alive`.
    pub fn keep_alive(&self) -> bool {
        let tokens: Vec<String> = self
            .headers_named("Connection")
            .iter()
            .flat_map(|v| v.split(',').map(|t| t.trim().to_ascii_lowercase()))
            .collect();
        if self.request_line().ends_with("HTTP/1.1") {
            !tokens.iter().any(|t| t == "close")
        } else {
            tokens.iter().any(|t| t == "keep-alive")
        }
    }
}

/// The values of the headers named `name` in the head `head`.
fn header_values(head: &[u8], name: &str) -> Vec<String> {
    String::from_utf8_lossy(head)
        .lines()
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim().to_string())
        .collect()
}

/// What a TLS upstream saw of one connection's handshake.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Handshake {
    /// The connection: 0 for the first accepted, and so on.
    pub connection: usize,
    /// The server name the client sent (SNI).
    pub server_name: Option<String>,
    /// Whether the client resumed a session.
    pub resumed: bool,
    /// The client's certificate (DER), when it sent one.
    pub client_cert: Option<Vec<u8>>,
    /// The protocol (`TLSv1.2`, `TLSv1.3`).
    pub protocol: Option<String>,
    /// Why the handshake failed, if it did.
    pub failed: Option<String>,
}

/// A connection's bytes: plain, or through TLS.
enum Io {
    /// TCP.
    Plain(TcpStream),
    /// TLS over TCP, its handshake done.
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>),
}

impl Io {
    /// The socket under it.
    fn tcp(&self) -> &TcpStream {
        match self {
            Io::Plain(s) => s,
            Io::Tls(s) => &s.sock,
        }
    }
}

impl Read for Io {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Io::Plain(s) => s.read(buf),
            Io::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Io {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Io::Plain(s) => s.write(buf),
            Io::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Io::Plain(s) => s.flush(),
            Io::Tls(s) => s.flush(),
        }
    }
}

/// What the upstream's threads share.
#[derive(Default)]
struct Shared {
    /// Requests read, in the order they were read.
    requests: Mutex<Vec<Recorded>>,
    /// The TLS it speaks, if any.
    tls: Option<Arc<rustls::ServerConfig>>,
    /// Each TLS connection's handshake, in the order they ended.
    handshakes: Mutex<Vec<Handshake>>,
    /// Connections accepted.
    accepted: AtomicUsize,
    /// A handle to each connection still open, to shut it down on drop.
    open: Mutex<HashMap<usize, TcpStream>>,
    /// The messages of handlers that panicked.
    panics: Mutex<Vec<String>>,
    /// Set on drop: the next accepted connection is the wake-up call.
    stopping: AtomicBool,
}

/// Locks `m`, even if a panicking handler poisoned it: the data is plain.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running scripted upstream; stopped on drop.
pub struct Upstream {
    /// Where it listens.
    addr: SocketAddr,
    /// State shared with its threads.
    shared: Arc<Shared>,
    /// The accepting thread.
    acceptor: Option<JoinHandle<()>>,
}

impl Upstream {
    /// Listens on 127.0.0.1 on a free port and serves each connection with
    /// `handler` on a thread of its own; the connection is closed when the
    /// handler returns.
    pub fn start(handler: impl Fn(&mut UpstreamConn) + Send + Sync + 'static) -> Upstream {
        Upstream::serve(None, handler)
    }

    /// [`Upstream::start`] behind TLS with `config`: the handler runs once
    /// a connection's handshake is done (a failed one is recorded, and the
    /// connection closed).
    pub fn start_tls(
        config: Arc<rustls::ServerConfig>,
        handler: impl Fn(&mut UpstreamConn) + Send + Sync + 'static,
    ) -> Upstream {
        Upstream::serve(Some(config), handler)
    }

    fn serve(
        tls: Option<Arc<rustls::ServerConfig>>,
        handler: impl Fn(&mut UpstreamConn) + Send + Sync + 'static,
    ) -> Upstream {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap_or_else(|e| panic!("bind 127.0.0.1:0: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("getsockname: {e}"));
        let shared = Arc::new(Shared {
            tls,
            ..Shared::default()
        });
        let handler: Arc<dyn Fn(&mut UpstreamConn) + Send + Sync> = Arc::new(handler);
        let acceptor = {
            let shared = shared.clone();
            thread::Builder::new()
                .name(format!("upstream:{}", addr.port()))
                .spawn(move || accept_loop(listener, shared, handler))
                .unwrap_or_else(|e| panic!("spawn the accepting thread: {e}"))
        };
        Upstream {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// Answers every request with `response` (one complete response),
    /// keeping the connection while both the request and the response
    /// allow it: it closes after a request that asked to, and after a
    /// response that says `Connection: close`, is HTTP/1.0, or has no
    /// length (its body ends with the close).
    pub fn fixed(response: &[u8]) -> Upstream {
        let response = response.to_vec();
        let closes = response_closes(&response);
        Upstream::start(move |c| {
            while let Some(request) = c.read_request() {
                if !c.write(&response) || closes || !request.keep_alive() {
                    return;
                }
            }
        })
    }

    /// Answers every request with `200 OK` whose body is the request's head
    /// and then its body (payload), so that a test can see what nowait sent
    /// upstream; an `X-Upstream-Connection` header gives the connection's
    /// number. Keeps the connection as the request allows.
    pub fn echo() -> Upstream {
        Upstream::start(|c| {
            while let Some(request) = c.read_request() {
                let keep = request.keep_alive();
                let mut body = request.head.clone();
                body.extend_from_slice(&request.body);
                let mut out = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                     X-Upstream-Connection: {}\r\n{}\r\n",
                    body.len(),
                    c.id(),
                    if keep { "" } else { "Connection: close\r\n" }
                )
                .into_bytes();
                if request.method() != "HEAD" {
                    out.extend_from_slice(&body);
                }
                if !c.write(&out) || !keep {
                    return;
                }
            }
        })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The address it listens on (127.0.0.1:port).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request read so far, in the order read.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.requests).clone()
    }

    /// How many connections were accepted so far.
    pub fn connections(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Every TLS handshake that ended so far, in the order they ended.
    pub fn handshakes(&self) -> Vec<Handshake> {
        lock(&self.shared.handshakes).clone()
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wake the thread blocked in accept(); it sees `stopping` and ends,
        // closing the listening socket.
        let _ = TcpStream::connect_timeout(&self.addr, WAKE_TIMEOUT);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        for (_, stream) in lock(&self.shared.open).drain() {
            let _ = stream.shutdown(Shutdown::Both);
        }
        let panics = lock(&self.shared.panics).clone();
        if !panics.is_empty() && !thread::panicking() {
            panic!("an upstream handler panicked: {}", panics.join("; "));
        }
    }
}

/// Accepts connections until the upstream is dropped.
fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    handler: Arc<dyn Fn(&mut UpstreamConn) + Send + Sync>,
) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let id = shared.accepted.fetch_add(1, Ordering::SeqCst);
        let _ = stream.set_nodelay(true);
        let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
        if let Ok(handle) = stream.try_clone() {
            lock(&shared.open).insert(id, handle);
        }
        let (shared, handler) = (shared.clone(), handler.clone());
        let spawned = thread::Builder::new()
            .name(format!("upstream-conn#{id}"))
            .spawn(move || serve(id, stream, shared, handler));
        if let Err(e) = spawned {
            panic!("spawn a connection thread: {e}");
        }
    }
}

/// Runs the handler on one connection, recording a panic.
fn serve(
    id: usize,
    stream: TcpStream,
    shared: Arc<Shared>,
    handler: Arc<dyn Fn(&mut UpstreamConn) + Send + Sync>,
) {
    let io = match &shared.tls {
        None => Io::Plain(stream),
        Some(config) => match tls_handshake(id, stream, config.clone()) {
            (Some(io), seen) => {
                lock(&shared.handshakes).push(seen);
                io
            }
            (None, seen) => {
                lock(&shared.handshakes).push(seen);
                lock(&shared.open).remove(&id);
                return;
            }
        },
    };
    let mut conn = UpstreamConn {
        id,
        stream: Some(io),
        buf: Vec::new(),
        shared: shared.clone(),
    };
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| handler(&mut conn))) {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a non-text panic".to_string());
        lock(&shared.panics).push(format!("connection #{id}: {message}"));
    }
    conn.close();
}

/// The server side of a TLS handshake on connection `id`: the stream and
/// what the handshake showed, or no stream and why it failed.
fn tls_handshake(
    id: usize,
    mut sock: TcpStream,
    config: Arc<rustls::ServerConfig>,
) -> (Option<Io>, Handshake) {
    let mut seen = Handshake {
        connection: id,
        ..Handshake::default()
    };
    let mut conn = match rustls::ServerConnection::new(config) {
        Ok(c) => c,
        Err(e) => {
            seen.failed = Some(e.to_string());
            return (None, seen);
        }
    };
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(&mut sock) {
            // The alert rustls queued, if any, goes out.
            let _ = conn.write_tls(&mut sock);
            seen.failed = Some(e.to_string());
            return (None, seen);
        }
    }
    seen.server_name = conn.server_name().map(str::to_string);
    seen.resumed = conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
    seen.client_cert = conn
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.as_ref().to_vec());
    seen.protocol = conn.protocol_version().map(|v| match v {
        rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3".to_string(),
        rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2".to_string(),
        other => format!("{other:?}"),
    });
    (
        Some(Io::Tls(Box::new(rustls::StreamOwned::new(conn, sock)))),
        seen,
    )
}

/// Whether a connection must be closed after `response` for its end to be
/// seen: HTTP/1.0, `Connection: close`, or no length on a response that
/// has a body.
fn response_closes(response: &[u8]) -> bool {
    let head_len = head_end(response).unwrap_or(response.len());
    let head = &response[..head_len];
    let text = String::from_utf8_lossy(head);
    let status_line = text.lines().next().unwrap_or("");
    let status = status_line.split(' ').nth(1).unwrap_or("");
    let bodiless = status.starts_with('1') || status == "204" || status == "304";
    let has_length = !header_values(head, "Content-Length").is_empty()
        || header_values(head, "Transfer-Encoding")
            .iter()
            .any(|v| v.to_ascii_lowercase().contains("chunked"));
    status_line.starts_with("HTTP/1.0")
        || header_values(head, "Connection")
            .iter()
            .any(|v| v.to_ascii_lowercase().contains("close"))
        || (!bodiless && !has_length)
}

/// Where the head at the start of `buf` ends (after its blank line).
fn head_end(buf: &[u8]) -> Option<usize> {
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4);
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|p| p + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// One accepted connection, as a handler drives it.
pub struct UpstreamConn {
    /// Its number in accept order, from 0.
    id: usize,
    /// The connection; `None` once closed or reset.
    stream: Option<Io>,
    /// Bytes read and not yet part of a returned request.
    buf: Vec<u8>,
    /// Where requests are recorded.
    shared: Arc<Shared>,
}

impl UpstreamConn {
    /// The connection's number: 0 for the first accepted, and so on.
    pub fn id(&self) -> usize {
        self.id
    }

    /// Reads the next request: its head, then its body per
    /// `Content-Length` or chunked coding. Records it and returns it;
    /// `None` when the peer closes (or goes silent for [`READ_TIMEOUT`])
    /// before a whole request came. Panics on a malformed chunked body.
    pub fn read_request(&mut self) -> Option<Recorded> {
        let head_len = loop {
            if let Some(end) = head_end(&self.buf) {
                break end;
            }
            if !self.fill() {
                return None;
            }
        };
        let head = self.buf[..head_len].to_vec();
        let chunked = header_values(&head, "Transfer-Encoding")
            .iter()
            .any(|v| v.to_ascii_lowercase().contains("chunked"));
        let (body, body_len) = if chunked {
            self.read_chunked(head_len)?
        } else {
            let length = match header_values(&head, "Content-Length").first() {
                Some(v) => v
                    .parse::<usize>()
                    .unwrap_or_else(|_| panic!("upstream got Content-Length {v:?}")),
                None => 0,
            };
            while self.buf.len() < head_len + length {
                if !self.fill() {
                    return None;
                }
            }
            (self.buf[head_len..head_len + length].to_vec(), length)
        };
        let raw_body = self.buf[head_len..head_len + body_len].to_vec();
        self.buf.drain(..head_len + body_len);
        let recorded = Recorded {
            connection: self.id,
            head,
            body,
            raw_body,
        };
        lock(&self.shared.requests).push(recorded.clone());
        Some(recorded)
    }

    /// Decodes the chunked body starting at `start` in the buffer, reading
    /// as needed: its payload and its length as sent.
    fn read_chunked(&mut self, start: usize) -> Option<(Vec<u8>, usize)> {
        let mut payload = Vec::new();
        let mut pos = start;
        loop {
            let line = self.line_at(pos)?;
            let text = String::from_utf8_lossy(&self.buf[pos..pos + line]).into_owned();
            pos += line + 2;
            let digits = text.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(digits, 16)
                .unwrap_or_else(|_| panic!("upstream got a bad chunk size line {text:?}"));
            if size == 0 {
                // Trailer fields, then the blank line.
                loop {
                    let line = self.line_at(pos)?;
                    pos += line + 2;
                    if line == 0 {
                        return Some((payload, pos - start));
                    }
                }
            }
            while self.buf.len() < pos + size + 2 {
                if !self.fill() {
                    return None;
                }
            }
            payload.extend_from_slice(&self.buf[pos..pos + size]);
            assert_eq!(
                &self.buf[pos + size..pos + size + 2],
                b"\r\n",
                "upstream got chunk data not followed by CRLF"
            );
            pos += size + 2;
        }
    }

    /// The length of the CRLF-ended line at `pos` (CRLF excluded), reading
    /// until it is complete.
    fn line_at(&mut self, pos: usize) -> Option<usize> {
        loop {
            if let Some(n) = self.buf[pos.min(self.buf.len())..]
                .windows(2)
                .position(|w| w == b"\r\n")
            {
                return Some(n);
            }
            if !self.fill() {
                return None;
            }
        }
    }

    /// Reads once more into the buffer; false at the end, on a timeout or
    /// an error.
    fn fill(&mut self) -> bool {
        let Some(stream) = self.stream.as_mut() else {
            return false;
        };
        let mut chunk = [0u8; READ_CHUNK];
        loop {
            match stream.read(&mut chunk) {
                Ok(0) => return false,
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return true;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }

    /// Bytes read after the last request returned (a pipelined request,
    /// or whatever follows).
    pub fn pending(&self) -> &[u8] {
        &self.buf
    }

    /// Takes the bytes [`UpstreamConn::pending`] holds (for a handler that
    /// relays raw bytes, as after an upgrade).
    pub fn take_pending(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }

    /// Waits up to `limit` for the peer to close its side (or reset),
    /// keeping what arrives meanwhile in [`UpstreamConn::pending`]; whether
    /// it closed.
    pub fn wait_closed(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let closed = loop {
            let Some(stream) = self.stream.as_mut() else {
                break true;
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || stream.tcp().set_read_timeout(Some(left)).is_err() {
                break false;
            }
            let mut chunk = [0u8; READ_CHUNK];
            match stream.read(&mut chunk) {
                Ok(0) => break true,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    break false;
                }
                Err(_) => break true,
            }
        };
        if let Some(stream) = self.stream.as_ref() {
            let _ = stream.tcp().set_read_timeout(Some(READ_TIMEOUT));
        }
        closed
    }

    /// Writes all of `bytes` at once; whether they were written (false once
    /// the peer has gone or the connection was closed here).
    pub fn write(&mut self, bytes: &[u8]) -> bool {
        match self.stream.as_mut() {
            Some(stream) => stream.write_all(bytes).is_ok() && stream.flush().is_ok(),
            None => false,
        }
    }

    /// Writes `bytes` in pieces of `piece` bytes with `delay` between two
    /// pieces (TCP_NODELAY is on: each piece leaves at once); whether all
    /// were written.
    pub fn write_slowly(&mut self, bytes: &[u8], piece: usize, delay: Duration) -> bool {
        for (i, part) in bytes.chunks(piece.max(1)).enumerate() {
            if i > 0 {
                thread::sleep(delay);
            }
            if !self.write(part) {
                return false;
            }
        }
        true
    }

    /// Sleeps `ms` milliseconds.
    pub fn sleep(&self, ms: u64) {
        thread::sleep(Duration::from_millis(ms));
    }

    /// Shuts down the writing side (FIN) and keeps reading.
    pub fn half_close(&mut self) {
        if let Some(stream) = self.stream.as_ref() {
            let _ = stream.tcp().shutdown(Shutdown::Write);
        }
    }

    /// Closes the connection (FIN, after TLS's `close_notify`; the kernel
    /// sends RST instead if bytes sent to us were left unread).
    pub fn close(&mut self) {
        if let Some(Io::Tls(s)) = self.stream.as_mut() {
            s.conn.send_close_notify();
            let _ = s.conn.write_tls(&mut s.sock);
        }
        self.drop_stream();
    }

    /// Forgets the socket, and the handle kept for the stop on drop, which
    /// shares it (or the close would not release the socket).
    fn drop_stream(&mut self) {
        lock(&self.shared.open).remove(&self.id);
        self.stream = None;
    }

    /// Resets the connection: `SO_LINGER` 0, then close, so the kernel
    /// sends RST and the peer's next read fails with ECONNRESET.
    pub fn reset(&mut self) {
        if let Some(stream) = self.stream.as_ref() {
            let _ = socket2::SockRef::from(stream.tcp()).set_linger(Some(Duration::ZERO));
        }
        self.drop_stream();
    }
}
