//! The client side of a connection as content handlers see it: the socket,
//! the bytes already read past the request head, and the request body —
//! read whole (`proxy_request_buffering on`: into memory up to
//! `client_body_buffer_size`, then into a temp file in
//! `client_body_temp_path`, written through the file layer) or piece by
//! piece as it arrives (`proxy_request_buffering off`).
//!
//! Limits are nginx's: `client_max_body_size` (413), `client_body_timeout`
//! between reads (408), framing errors (400). A client that closes early
//! gets nothing (nginx logs 400 and closes). A body nobody read is
//! discarded by the connection after the response, as before.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::config::inherit::{BodyInFile, LocConf};
use crate::http::chunked::ChunkedDecoder;
use crate::http::request::RequestHead;
use crate::http::response::CONTINUE;
use crate::http::status::Status;
use crate::io::client_stream::ClientStream;
use crate::io::file::{FileError, FileLayer};
use crate::io::temp::TempFile;

use crate::server::core::send;

/// The most a read from the client asks for at once.
const READ_CHUNK: usize = 16 * 1024;

/// The client connection, lent to the content handler.
pub struct Client<'c> {
    /// The socket.
    pub stream: &'c ClientStream,
    /// Bytes read past the request head: the start of the body, perhaps the
    /// next request.
    pub buf: &'c mut Vec<u8>,
    /// How far the body has been read.
    pub body: BodyProgress,
    /// Whether `100 Continue` was sent.
    pub continue_sent: bool,
}

/// How far a request body has been read.
#[derive(Debug)]
pub enum BodyProgress {
    /// Nobody has started reading it (the connection discards it later).
    Untouched,
    /// Reading has started or finished.
    Reading(BodyReader),
    /// Reading failed: the connection cannot be kept.
    Failed,
}

/// Why a request body could not be read.
#[derive(Debug)]
pub struct BodyError {
    /// The status to answer, `None` when the client is gone (nothing to
    /// answer; nginx logs 400 or 408 and closes).
    pub status: Option<Status>,
    /// nginx's log line.
    pub message: String,
    /// The level nginx logs it at (`info` for client faults, `crit`/`alert`
    /// for our own).
    pub level: crate::log::Level,
}

impl BodyError {
    fn client(status: Option<Status>, message: impl Into<String>) -> BodyError {
        BodyError {
            status,
            message: message.into(),
            level: crate::log::Level::Info,
        }
    }

    fn file(e: FileError) -> BodyError {
        BodyError {
            status: Some(Status::INTERNAL_SERVER_ERROR),
            message: e.to_string(),
            level: crate::log::Level::Crit,
        }
    }
}

/// The framing of a body being read.
#[derive(Debug)]
enum Framing {
    /// `Content-Length`: bytes left.
    Length(u64),
    /// Chunked.
    Chunked(Box<ChunkedDecoder>),
    /// All read.
    Done,
}

/// Reads a request body piece by piece, decoding its framing.
#[derive(Debug)]
pub struct BodyReader {
    framing: Framing,
    /// Body bytes decoded so far.
    pub received: u64,
    /// `client_max_body_size` (0: no limit), for the chunked check.
    max: u64,
}

impl BodyReader {
    /// A reader for `head`'s body.
    pub fn new(head: &RequestHead, max: u64) -> BodyReader {
        let framing = match head.content_length {
            Some(0) => Framing::Done,
            Some(n) => Framing::Length(n),
            None if head.chunked => {
                Framing::Chunked(Box::new(ChunkedDecoder::new((max != 0).then_some(max))))
            }
            None => Framing::Done,
        };
        BodyReader {
            framing,
            received: 0,
            max,
        }
    }

    /// Whether the whole body has been read.
    pub fn is_done(&self) -> bool {
        matches!(self.framing, Framing::Done)
    }

    /// Takes what of the body `buf` holds (at most `limit` bytes of data).
    fn take(&mut self, buf: &mut Vec<u8>, limit: usize) -> Result<Option<Bytes>, BodyError> {
        match &mut self.framing {
            Framing::Done => Ok(None),
            Framing::Length(left) => {
                let n = (*left).min(buf.len() as u64).min(limit as u64) as usize;
                if n == 0 {
                    return Ok(None);
                }
                let piece = Bytes::copy_from_slice(&buf[..n]);
                buf.drain(..n);
                *left -= n as u64;
                if *left == 0 {
                    self.framing = Framing::Done;
                }
                self.received += n as u64;
                Ok(Some(piece))
            }
            Framing::Chunked(dec) => {
                let mut out = Vec::new();
                let used = dec
                    .feed(buf, |d| out.extend_from_slice(d))
                    .map_err(|e| match e {
                        crate::http::chunked::ChunkedError::TooLarge { announced } => {
                            BodyError::client(
                                Some(e.status()),
                                format!(
                                    "client intended to send too large chunked body: {announced} bytes"
                                ),
                            )
                        }
                        e => BodyError::client(Some(e.status()), e.to_string()),
                    })?;
                buf.drain(..used);
                if dec.is_done() {
                    self.framing = Framing::Done;
                }
                self.received += out.len() as u64;
                let _ = self.max;
                Ok((!out.is_empty()).then(|| Bytes::from(out)))
            }
        }
    }
}

/// A request body read whole.
#[derive(Clone, Debug)]
pub enum RequestBody {
    /// In memory.
    Memory(Bytes),
    /// In a temp file (`len` bytes from its start).
    File(TempFile),
}

impl RequestBody {
    /// The body's length.
    pub fn len(&self) -> u64 {
        match self {
            RequestBody::Memory(b) => b.len() as u64,
            RequestBody::File(t) => t.len,
        }
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'c> Client<'c> {
    /// The client of a connection whose head was just read.
    pub fn new(stream: &'c ClientStream, buf: &'c mut Vec<u8>) -> Client<'c> {
        Client {
            stream,
            buf,
            body: BodyProgress::Untouched,
            continue_sent: false,
        }
    }

    /// Resolves `true` once the client has closed its side while the
    /// request waits (nginx's `ngx_http_test_reading`), `false` as soon as
    /// bytes are there instead (a body, a pipelined request), which says
    /// nothing about a close. Reads nothing.
    pub async fn closed(&self) -> bool {
        if !self.buf.is_empty() {
            return false;
        }
        matches!(self.stream.peek_byte().await, Ok(0) | Err(_))
    }

    /// Sends `100 Continue` if the client asked for it and nothing was sent
    /// yet (nginx's `ngx_http_test_expect`, when the body is first read):
    /// even when body bytes came with the head, as nginx does.
    async fn send_continue(&mut self, head: &RequestHead, conf: &LocConf) -> Result<(), BodyError> {
        if head.expect_continue && !self.continue_sent {
            self.continue_sent = true;
            send::write_all(self.stream, CONTINUE, conf.send_timeout)
                .await
                .map_err(|_| BodyError::client(None, "client closed connection"))?;
        }
        Ok(())
    }

    /// The part of the body that arrived with the head, if it can be
    /// taken without waiting (and no `100 Continue` is due first): what
    /// nginx sends upstream in one write with the request head.
    pub fn preread_piece(&mut self, head: &RequestHead, conf: &LocConf) -> Option<Bytes> {
        if self.buf.is_empty() || head.expect_continue {
            return None;
        }
        if matches!(self.body, BodyProgress::Untouched) {
            self.body = BodyProgress::Reading(BodyReader::new(head, conf.client_max_body_size));
        }
        let BodyProgress::Reading(reader) = &mut self.body else {
            return None;
        };
        // An error is left for `next_piece` to report.
        reader.take(self.buf, READ_CHUNK).ok().flatten()
    }

    /// What of the body is already here, without waiting: `Some(Some(_))`
    /// a piece, `Some(None)` the end, `None` nothing yet (or an error that
    /// [`Client::next_piece`] reports).
    pub fn buffered_piece(&mut self) -> Option<Option<Bytes>> {
        let BodyProgress::Reading(reader) = &mut self.body else {
            return None;
        };
        if reader.is_done() {
            return Some(None);
        }
        match reader.take(self.buf, READ_CHUNK) {
            Ok(Some(piece)) => Some(Some(piece)),
            Ok(None) if reader.is_done() => Some(None),
            _ => None,
        }
    }

    /// The next piece of the body as it arrives; `Ok(None)` at its end.
    pub async fn next_piece(
        &mut self,
        head: &RequestHead,
        conf: &LocConf,
    ) -> Result<Option<Bytes>, BodyError> {
        if matches!(self.body, BodyProgress::Untouched) {
            self.send_continue(head, conf).await?;
            self.body = BodyProgress::Reading(BodyReader::new(head, conf.client_max_body_size));
        }
        loop {
            let BodyProgress::Reading(reader) = &mut self.body else {
                return Err(BodyError::client(None, "request body already failed"));
            };
            if reader.is_done() {
                return Ok(None);
            }
            match reader.take(self.buf, READ_CHUNK) {
                Ok(Some(piece)) => return Ok(Some(piece)),
                Ok(None) if reader.is_done() => return Ok(None),
                Ok(None) => {}
                Err(e) => {
                    self.body = BodyProgress::Failed;
                    return Err(e);
                }
            }
            if let Err(e) = read_more(self.stream, self.buf, conf.client_body_timeout).await {
                self.body = BodyProgress::Failed;
                return Err(e);
            }
        }
    }

    /// Reads the whole body: into memory up to `client_body_buffer_size`
    /// (and `client_body_in_single_buffer`), else into a temp file.
    pub async fn read_all(
        &mut self,
        head: &RequestHead,
        conf: &LocConf,
        files: FileLayer<'_>,
        keep_name: bool,
    ) -> Result<RequestBody, BodyError> {
        let in_file = conf.client_body_in_file_only != BodyInFile::Off;
        let limit = conf.client_body_buffer_size as usize;
        let mut mem: Vec<u8> = Vec::new();
        let mut file: Option<TempFile> = None;
        if in_file {
            let t = files
                .create_temp(&conf.client_body_temp_path, keep_name)
                .await
                .map_err(BodyError::file)?;
            file = Some(t);
        }
        while let Some(piece) = self.next_piece(head, conf).await? {
            match &mut file {
                Some(t) => {
                    files
                        .append_temp(t, Arc::from(&piece[..]))
                        .await
                        .map_err(BodyError::file)?;
                }
                None if mem.len() + piece.len() <= limit => mem.extend_from_slice(&piece),
                None => {
                    // The body outgrew memory: everything goes to a file,
                    // in order, as nginx writes it.
                    let mut t = files
                        .create_temp(&conf.client_body_temp_path, keep_name)
                        .await
                        .map_err(BodyError::file)?;
                    mem.extend_from_slice(&piece);
                    files
                        .append_temp(&mut t, Arc::from(std::mem::take(&mut mem)))
                        .await
                        .map_err(BodyError::file)?;
                    file = Some(t);
                }
            }
        }
        Ok(match file {
            Some(t) => RequestBody::File(t),
            None => RequestBody::Memory(Bytes::from(mem)),
        })
    }

    /// Bytes of body decoded so far.
    pub fn body_received(&self) -> u64 {
        match &self.body {
            BodyProgress::Reading(r) => r.received,
            _ => 0,
        }
    }
}

/// Reads more bytes into `buf`, waiting at most `timeout`. A client that
/// closes or resets mid-body gets no answer: nginx marks the connection
/// failed (`c->error`), logs 400 and closes
/// (`ngx_http_do_read_client_request_body`).
async fn read_more(
    stream: &ClientStream,
    buf: &mut Vec<u8>,
    timeout: Duration,
) -> Result<(), BodyError> {
    buf.reserve(READ_CHUNK);
    loop {
        match stream.recv(buf) {
            Ok(0) => {
                return Err(BodyError::client(
                    None,
                    "client prematurely closed connection",
                ));
            }
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => {
                return Err(BodyError::client(
                    None,
                    format!("recv() failed ({})", crate::sys::error::errno_text(&e)),
                ));
            }
        }
        match tokio::time::timeout(timeout, stream.readable()).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => {
                return Err(BodyError::client(
                    None,
                    "client prematurely closed connection",
                ));
            }
            Err(_) => {
                return Err(BodyError::client(
                    Some(Status::REQUEST_TIME_OUT),
                    "client timed out",
                ));
            }
        }
    }
}
