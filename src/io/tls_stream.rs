//! A TLS connection over a TCP socket registered with the worker's
//! reactor: rustls's state machine driven by the socket's readiness, with
//! the same calls the server makes on a plain socket (try a read or a
//! write, wait until one may succeed).
//!
//! Reads decrypt what the socket holds and return plaintext; writes
//! encrypt into rustls's buffer and send what the socket takes. Encrypted
//! bytes a write left in the buffer go first on the next write, and
//! [`TlsStream::writable`] waits until they are gone, so a caller that
//! waits for writability before saying "sent" never leaves the end of a
//! response behind; [`TlsStream::flush`] sends the rest at the end of a
//! response. The connection is single-threaded (one worker's task at a
//! time), so its state sits in a `RefCell`: no borrow is held across an
//! await.
//!
//! The same stream serves both sides: a client's connection to nowait
//! (a rustls `ServerConnection`) and nowait's connection to an upstream
//! (a `ClientConnection`, `proxy_pass https://…`); [`Side`] says which.
//!
//! What this module must not do: wait on anything but the socket, or
//! decide anything about HTTP.

use std::cell::{Cell, RefCell};
use std::io::{self, IoSlice, Read, Write};
use std::ops::DerefMut;
use std::os::fd::{AsFd, BorrowedFd};

use rustls::{ClientConnection, ConnectionCommon, ServerConnection};
use tokio::net::TcpStream;

/// A rustls connection of either side: what [`TlsStream`] drives (every
/// call it makes is rustls's `ConnectionCommon`'s, the same for both).
pub trait Side: DerefMut<Target = ConnectionCommon<Self::Data>> + std::fmt::Debug {
    /// rustls's side-specific state.
    type Data;

    /// Moves the TLS 1.3 early data rustls decrypted into `into` (a
    /// server's: a client sends early data, it never reads any).
    fn take_early(&mut self, _into: &mut Vec<u8>) {}
}

impl Side for ServerConnection {
    type Data = rustls::server::ServerConnectionData;

    fn take_early(&mut self, into: &mut Vec<u8>) {
        if let Some(mut ed) = self.early_data() {
            let _ = ed.read_to_end(into);
        }
    }
}

impl Side for ClientConnection {
    type Data = rustls::client::ClientConnectionData;
}

/// How much encrypted output rustls may hold before writes of plaintext
/// are refused (`WouldBlock` until the socket takes some): a record's
/// worth above the largest write the server makes at once.
pub const SEND_BUFFER_LIMIT: usize = 160 * 1024;

/// A TLS connection whose handshake is complete: a client's
/// (`ServerConnection`, the default) or an upstream's (`ClientConnection`).
/// A client's may still wait for the client's Finished: with TLS 1.3 early
/// data (`ssl_early_data`) the stream is handed over once the server's
/// Finished is sent, and what the client sent early is read first; the
/// Finished is taken as it comes.
#[derive(Debug)]
pub struct TlsStream<C: Side = ServerConnection> {
    /// The socket and the TLS state; `None` only once taken apart
    /// ([`TlsStream::into_parts`]), so that dropping a whole stream can say
    /// `close_notify` and taking it apart does not.
    whole: Option<Whole<C>>,
}

#[derive(Debug)]
struct Whole<C> {
    tcp: TcpStream,
    tls: RefCell<C>,
    /// The peer closed its side of the socket.
    eof: Cell<bool>,
    /// Early data taken from rustls and not read yet: read before
    /// anything after it.
    early: RefCell<Vec<u8>>,
    /// Whether the last read returned early data.
    read_early: Cell<bool>,
}

/// What a TLS connection holds for a reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// Decrypted bytes.
    Plaintext,
    /// The end: `close_notify`, or the socket closed.
    Closed,
    /// Nothing yet.
    Nothing,
}

/// The socket as rustls reads and writes it: non-blocking calls that
/// report `WouldBlock` and keep tokio's readiness exact.
pub struct Sock<'a>(pub &'a TcpStream);

impl Read for Sock<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
}

impl Write for Sock<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.0.try_write_vectored(bufs)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<C: Side> AsFd for TlsStream<C> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.w().tcp.as_fd()
    }
}

impl<C: Side> TlsStream<C> {
    /// A stream over `tcp` whose handshake `tls` completed.
    pub fn new(tcp: TcpStream, tls: C) -> TlsStream<C> {
        TlsStream::with_early(tcp, tls, Vec::new())
    }

    /// A stream over `tcp` whose handshake `tls` completed, or waits only
    /// for the client's Finished after `early` data.
    pub fn with_early(tcp: TcpStream, mut tls: C, early: Vec<u8>) -> TlsStream<C> {
        tls.set_buffer_limit(Some(SEND_BUFFER_LIMIT));
        TlsStream {
            whole: Some(Whole {
                tcp,
                tls: RefCell::new(tls),
                eof: Cell::new(false),
                early: RefCell::new(early),
                read_early: Cell::new(false),
            }),
        }
    }

    /// Whether the last bytes read came in early data, before the
    /// handshake completed (`$ssl_early_data` of the request they end).
    pub fn in_early_data(&self) -> bool {
        self.w().read_early.get()
    }

    /// Moves the early data rustls decrypted into the stream's; whether
    /// any is held.
    fn take_early(&self, tls: &mut C) -> bool {
        let mut early = self.w().early.borrow_mut();
        tls.take_early(&mut early);
        !early.is_empty()
    }

    fn w(&self) -> &Whole<C> {
        self.whole
            .as_ref()
            .expect("a TLS stream is whole until it is taken apart")
    }

    /// The socket.
    pub fn tcp(&self) -> &TcpStream {
        &self.w().tcp
    }

    /// Into its parts (leaving the reactor, or for another worker's),
    /// saying nothing to the peer: the socket, the TLS state, and early
    /// data not read yet.
    pub fn into_parts(mut self) -> (TcpStream, C, Vec<u8>) {
        let w = self
            .whole
            .take()
            .expect("a TLS stream is whole until it is taken apart");
        (w.tcp, w.tls.into_inner(), w.early.into_inner())
    }

    /// Sends what rustls holds, as much as the socket takes now: `Ok` once
    /// nothing is left, `WouldBlock` if some is.
    fn send_held(&self, tls: &mut C) -> io::Result<()> {
        send_held(&self.w().tcp, tls)
    }

    /// Reads plaintext into `buf`: `WouldBlock` when none can be had now,
    /// 0 at the end of the stream (a `close_notify`, or the peer's TCP
    /// close without one, which nginx also takes as the end).
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            {
                let mut tls = self.w().tls.borrow_mut();
                if self.take_early(&mut tls) {
                    let mut early = self.w().early.borrow_mut();
                    let n = buf.len().min(early.len());
                    buf[..n].copy_from_slice(&early[..n]);
                    early.drain(..n);
                    self.w().read_early.set(true);
                    return Ok(n);
                }
                match tls.reader().read(buf) {
                    Ok(n) => {
                        if n > 0 {
                            self.w().read_early.set(false);
                        }
                        return Ok(n);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                    Err(e) => return Err(e),
                }
            }
            if self.fill()? == Held::Closed {
                return Ok(0);
            }
        }
    }

    /// Notes that the peer's side of the socket has ended (seen without
    /// reading through TLS, by a peek).
    pub fn peer_gone(&self) {
        self.w().eof.set(true);
    }

    /// What a read would find now without touching the socket.
    pub fn held(&self) -> Held {
        let w = self.w();
        if !w.early.borrow().is_empty() {
            return Held::Plaintext;
        }
        if w.eof.get() {
            return Held::Closed;
        }
        let mut tls = w.tls.borrow_mut();
        let state = tls.process_new_packets();
        if state.is_ok() && self.take_early(&mut tls) {
            return Held::Plaintext;
        }
        match state {
            Ok(st) if st.plaintext_bytes_to_read() > 0 => Held::Plaintext,
            Ok(st) if st.peer_has_closed() => Held::Closed,
            Ok(_) => Held::Nothing,
            // A read will report the error.
            Err(_) => Held::Plaintext,
        }
    }

    /// Reads and decrypts records from the socket until plaintext or the
    /// end is held: `WouldBlock` when the socket has no more now.
    pub fn fill(&self) -> io::Result<Held> {
        let w = self.w();
        loop {
            match self.held() {
                Held::Nothing => {}
                held => return Ok(held),
            }
            let mut tls = w.tls.borrow_mut();
            if tls.read_tls(&mut Sock(&w.tcp))? == 0 {
                w.eof.set(true);
                return Ok(Held::Closed);
            }
            if let Err(e) = tls.process_new_packets() {
                // The alert rustls queued goes out if the socket takes it.
                let _ = send_held(&w.tcp, &mut *tls);
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
            // A key update's answer, tickets: sent as the socket allows.
            let _ = send_held(&w.tcp, &mut *tls);
        }
    }

    /// Reads plaintext into the spare capacity of `buf`, which grows by
    /// what arrived (see [`try_read`](Self::try_read)).
    pub fn try_read_buf(&self, buf: &mut Vec<u8>) -> io::Result<usize> {
        if buf.capacity() == buf.len() {
            buf.reserve(4096);
        }
        let start = buf.len();
        let cap = buf.capacity();
        buf.resize(cap, 0);
        let r = self.try_read(&mut buf[start..]);
        let n = *r.as_ref().unwrap_or(&0);
        buf.truncate(start + n);
        r
    }

    /// Whether a read now would not block: plaintext waits, or the end.
    pub fn has_plaintext(&self) -> bool {
        self.held() != Held::Nothing
    }

    /// Encrypts what it takes of `buf` and sends what the socket takes:
    /// `WouldBlock` while encrypted bytes of earlier writes wait.
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        self.try_write_vectored(&[IoSlice::new(buf)])
    }

    /// [`try_write`](Self::try_write) of several buffers, in order.
    pub fn try_write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let mut tls = self.w().tls.borrow_mut();
        self.send_held(&mut tls)?;
        let n = tls.writer().write_vectored(bufs)?;
        match self.send_held(&mut tls) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        if n == 0 && bufs.iter().any(|b| !b.is_empty()) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(n)
    }

    /// Waits until a read may find plaintext (or the end).
    pub async fn readable(&self) -> io::Result<()> {
        if self.has_plaintext() {
            return Ok(());
        }
        self.w().tcp.readable().await
    }

    /// Waits until encrypted bytes held back are sent and a write may
    /// succeed.
    pub async fn writable(&self) -> io::Result<()> {
        loop {
            {
                let mut tls = self.w().tls.borrow_mut();
                match self.send_held(&mut tls) {
                    Ok(()) => return Ok(()),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
            }
            self.w().tcp.writable().await?;
        }
    }

    /// Sends everything encrypted so far (the end of a response).
    pub async fn flush(&self) -> io::Result<()> {
        self.writable().await
    }

    /// Whether encrypted bytes wait to be sent.
    pub fn holds_output(&self) -> bool {
        self.w().tls.borrow().wants_write()
    }

    /// Queues a `close_notify` and sends what the socket takes now: the
    /// end of the connection, as nginx's `SSL_shutdown`. Not once the
    /// peer has ended its side (its `close_notify`, or the socket's end):
    /// nginx then sends none (`no_send_shutdown`).
    pub fn close_notify(&self) {
        let w = self.w();
        if peer_ended(w) {
            return;
        }
        let mut tls = w.tls.borrow_mut();
        tls.send_close_notify();
        let _ = self.send_held(&mut tls);
    }

    /// Runs `f` on the connection's state (what the handshake negotiated,
    /// for the variables).
    pub fn with_state<R>(&self, f: impl FnOnce(&C) -> R) -> R {
        f(&self.w().tls.borrow())
    }
}

/// Sends what `tls` holds, as much as `tcp` takes now: `Ok` once nothing
/// is left, `WouldBlock` if some is.
pub fn send_held<C: Side>(tcp: &TcpStream, tls: &mut C) -> io::Result<()> {
    while tls.wants_write() {
        tls.write_tls(&mut Sock(tcp))?;
    }
    Ok(())
}

/// Whether the peer has ended its side: the socket's end, or its
/// `close_notify` (nginx's `ngx_ssl_recv` then sets `no_send_shutdown`).
fn peer_ended<C: Side>(w: &Whole<C>) -> bool {
    w.eof.get()
        || w.tls
            .try_borrow_mut()
            .is_ok_and(|mut t| t.process_new_packets().is_ok_and(|st| st.peer_has_closed()))
}

impl<C: Side> Drop for TlsStream<C> {
    fn drop(&mut self) {
        // A connection that ends says so, as nginx's SSL_shutdown() does,
        // unless the peer ended it; nothing waits for the socket to take it.
        if let Some(w) = &self.whole {
            if peer_ended(w) {
                return;
            }
            if let Ok(mut tls) = w.tls.try_borrow_mut() {
                tls.send_close_notify();
                let _ = send_held(&w.tcp, &mut *tls);
            }
        }
    }
}
