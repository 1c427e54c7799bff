//! The request body on its way upstream: read whole first (into memory or
//! a temp file) when it must be sent again to a next server or cannot be
//! streamed, else streamed from the client as it arrives, framed by the
//! protocol; then written after the request's head.
//!
//! Owns: [`BodyPlan`], reading the client's body for the upstream
//! ([`prepare`]) and sending head and body ([`send`]). Must not: decide
//! about retries (it reports whether any of a streamed body went out).

use std::io::IoSlice;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::config::model::NextUpstream;
use crate::http::status::Status;
use crate::io::deadline;
use crate::io::file::FileLayer;
use crate::log::Level;
use crate::upstream::conn::{Conn, WriteError};

use super::protocol::{BodyFraming, Protocol};
use super::tries::{Failure, upstream_failure};
use super::{Upstream, UpstreamConf};
use crate::server::core::reply::Reply;
use crate::server::core::request::Req;
use crate::server::core::site::Site;
use crate::server::engine::client::{Client, RequestBody};

/// How the request body goes upstream.
pub enum BodyPlan {
    /// None.
    None,
    /// Bytes in memory (`proxy_set_body`, or a body read whole into
    /// memory): sent again to the next server if need be.
    Memory(Bytes),
    /// A body read whole into a temp file.
    File(crate::io::temp::TempFile),
    /// `proxy_pass_request_body off`: the client's body was read and
    /// dropped, but its length is still announced, as nginx's
    /// `$proxy_internal_body_length` does; nothing follows the head.
    LengthOnly(u64),
    /// Read from the client while sending (`proxy_request_buffering
    /// off`); chunked upstream when `chunked`.
    Stream {
        /// Send `Transfer-Encoding: chunked`.
        chunked: bool,
        /// The client's `Content-Length`, when it sent one.
        length: Option<u64>,
        /// Whether any of it was sent (then no next server can get it).
        started: bool,
    },
}

impl BodyPlan {
    pub fn framing(&self) -> BodyFraming {
        match self {
            BodyPlan::None => BodyFraming::None,
            BodyPlan::Memory(b) => BodyFraming::Length(b.len() as u64),
            BodyPlan::File(t) => BodyFraming::Length(t.len),
            BodyPlan::LengthOnly(n) => BodyFraming::Length(*n),
            BodyPlan::Stream { chunked: true, .. } => BodyFraming::Chunked,
            BodyPlan::Stream { length, .. } => {
                length.map_or(BodyFraming::None, BodyFraming::Length)
            }
        }
    }
}

/// Reads the body first when it must be whole (`proxy_request_buffering
/// on`, or a chunked body to an HTTP/1.0 upstream), else plans to stream it.
pub async fn prepare<P: Protocol>(
    site: &Site,
    r: &mut Req<'_>,
    client: &mut Client<'_>,
    files: FileLayer<'_>,
    conf: &UpstreamConf<'_>,
    protocol: &P,
) -> Result<BodyPlan, Box<Reply>> {
    if let Some(t) = conf.set_body {
        return Ok(BodyPlan::Memory(Bytes::from(r.expand(t))));
    }
    if !r.is_main() {
        // A subrequest sends the body its parent read, if any (nginx's
        // `sr->request_body = r->request_body`); it never reads one.
        return Ok(match &r.body.in_memory {
            Some(b) if conf.pass_request_body => {
                r.upstream.body_length = Some(b.len() as u64);
                BodyPlan::Memory(Bytes::from(b.to_vec()))
            }
            _ => BodyPlan::None,
        });
    }
    if !r.head.has_body() {
        // `Content-Length: 0` is still announced upstream, as nginx's
        // `$content_length` default does.
        if r.head.content_length == Some(0) {
            return Ok(BodyPlan::LengthOnly(0));
        }
        return Ok(BodyPlan::None);
    }
    let chunked = r.head.chunked;
    // Without `proxy_pass_request_body` nginx still reads the body whole
    // (and announces its length): it never streams it.
    let stream = conf.pass_request_body
        && !conf.request_buffering
        && (!chunked || protocol.streams_chunked(r));
    if stream {
        r.upstream.body_chunked = chunked;
        r.upstream.body_length = r.head.content_length;
        return Ok(BodyPlan::Stream {
            chunked,
            length: r.head.content_length,
            started: false,
        });
    }
    let keep_name = site.config.uses_request_body_file
        || r.conf.client_body_in_file_only == crate::config::model::BodyInFile::On;
    let read = client.read_all(r.head, r.conf, files, keep_name).await;
    if !conf.pass_request_body {
        if let Ok(body) = &read {
            r.body.received = body.len();
            r.upstream.body_length = Some(body.len());
            return Ok(BodyPlan::LengthOnly(body.len()));
        }
    }
    match read {
        Ok(RequestBody::Memory(b)) => {
            r.body.received = b.len() as u64;
            r.body.in_memory = Some(Arc::new(b.to_vec()));
            r.upstream.body_length = Some(b.len() as u64);
            Ok(BodyPlan::Memory(b))
        }
        Ok(RequestBody::File(t)) => {
            r.body.received = t.len;
            if t.named {
                r.body.file = Some(t.path.clone());
            }
            r.upstream.body_length = Some(t.len);
            Ok(BodyPlan::File(t))
        }
        Err(e) => {
            r.error_log().log(
                e.level,
                Some(r.conn_no),
                format_args!("{}{}", e.message, r.log_context()),
            );
            Err(Box::new(body_failure_reply(e.status)))
        }
    }
}

/// What the client gets when its body could not be read: the error page
/// of `status`; nothing when it is gone (nginx logs 400) or timed out
/// (nginx terminates the request on NGX_HTTP_REQUEST_TIME_OUT and logs 408).
pub fn body_failure_reply(status: Option<Status>) -> Reply {
    match status {
        Some(Status::REQUEST_TIME_OUT) => Reply::aborted(Status::REQUEST_TIME_OUT),
        Some(s) => Reply::special(s),
        None => Reply::aborted(Status::BAD_REQUEST),
    }
}

fn send_failure(e: WriteError) -> Failure {
    match e {
        WriteError::TimedOut => upstream_failure(
            NextUpstream::TIMEOUT,
            "upstream timed out (110: Connection timed out) while sending request to upstream",
        ),
        WriteError::Io(e) => upstream_failure(
            NextUpstream::ERROR,
            format!(
                "writev() failed ({}) while sending request to upstream",
                crate::sys::error::errno_text(&e)
            ),
        ),
    }
}

/// Sends the head and the body; returns the bytes sent.
pub async fn send<P: Protocol>(
    r: &mut Req<'_>,
    u: &mut Upstream<'_, '_, '_, P>,
    conn: &Conn,
) -> Result<u64, Failure> {
    let timeout = u.conf.send_timeout;
    let head = &u.request[..];
    let client = &mut *u.client;
    let files = u.files;
    let protocol = &u.protocol;
    let body = &mut u.body;
    let mut sent = head.len() as u64;
    match body {
        BodyPlan::None | BodyPlan::LengthOnly(_) => {
            conn.write_all(head, timeout).await.map_err(send_failure)?
        }
        BodyPlan::Memory(b) => {
            // Head and a small body in one write.
            write_vectored(conn, &[head, b], timeout)
                .await
                .map_err(send_failure)?;
            sent += b.len() as u64;
        }
        BodyPlan::File(t) => {
            conn.write_all(head, timeout).await.map_err(send_failure)?;
            let mut off = 0;
            while off < t.len {
                let n = (t.len - off).min(64 * 1024) as usize;
                let piece = files.read_temp(t, off, n).await.map_err(|e| Failure {
                    level: Level::Crit,
                    ..upstream_failure(
                        NextUpstream::ERROR,
                        format!("{e} while sending request to upstream"),
                    )
                })?;
                if piece.is_empty() {
                    break;
                }
                conn.write_all(&piece, timeout)
                    .await
                    .map_err(send_failure)?;
                off += piece.len() as u64;
            }
            sent += off;
        }
        BodyPlan::Stream {
            chunked, started, ..
        } => {
            // The part of the body that came with the head goes in the same
            // write, as nginx sends it.
            let preread = client.preread_piece(r.head, r.conf);
            let mut first = head.to_vec();
            if let Some(p) = &preread {
                protocol.frame_body(p, *chunked, &mut first);
            }
            conn.write_all(&first, timeout)
                .await
                .map_err(send_failure)?;
            sent += (first.len() - head.len()) as u64;
            *started = true;
            // A body that fits the body buffer stays readable as
            // `$request_body`, as nginx's last buffers do when it streams.
            let keep_max = r.conf.client_body_buffer_size as usize;
            let mut kept = Some(Vec::new());
            if let Some(p) = &preread {
                r.body.received += p.len() as u64;
                kept = kept.filter(|_| p.len() <= keep_max).map(|mut k| {
                    k.extend_from_slice(p);
                    k
                });
            }
            loop {
                let piece = client
                    .next_piece(r.head, r.conf)
                    .await
                    .map_err(|e| Failure {
                        // The client's fault: nothing to retry elsewhere.
                        kind: NextUpstream::OFF,
                        message: e.message,
                        level: e.level,
                        client_status: Some(e.status),
                        internal: false,
                        request_sent: true,
                        cached: false,
                    })?;
                let Some(piece) = piece else {
                    let mut end = Vec::new();
                    protocol.end_body(*chunked, &mut end);
                    if !end.is_empty() {
                        conn.write_all(&end, timeout).await.map_err(send_failure)?;
                        sent += end.len() as u64;
                    }
                    if let Some(body) = kept.take() {
                        r.body.in_memory = Some(Arc::new(body));
                    }
                    break;
                };
                // What else already arrived (the end of the body among it)
                // goes in the same write, as nginx passes what it read.
                let mut out = Vec::with_capacity(piece.len() + 12);
                let mut next = Some(piece);
                let mut ended = false;
                while let Some(piece) = next.take() {
                    r.body.received += piece.len() as u64;
                    kept = kept
                        .filter(|k| k.len() + piece.len() <= keep_max)
                        .map(|mut k| {
                            k.extend_from_slice(&piece);
                            k
                        });
                    protocol.frame_body(&piece, *chunked, &mut out);
                    match client.buffered_piece() {
                        Some(Some(more)) => next = Some(more),
                        Some(None) => ended = true,
                        None => {}
                    }
                }
                if ended {
                    protocol.end_body(*chunked, &mut out);
                }
                conn.write_all(&out, timeout).await.map_err(send_failure)?;
                sent += out.len() as u64;
                if ended {
                    if let Some(body) = kept.take() {
                        r.body.in_memory = Some(Arc::new(body));
                    }
                    break;
                }
            }
        }
    }
    Ok(sent)
}

async fn write_vectored(conn: &Conn, parts: &[&[u8]], timeout: Duration) -> Result<(), WriteError> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut done = 0;
    while done < total {
        let mut skip = done;
        let slices: Vec<IoSlice<'_>> = parts
            .iter()
            .filter_map(|p| {
                if skip >= p.len() {
                    skip -= p.len();
                    None
                } else {
                    let s = IoSlice::new(&p[skip..]);
                    skip = 0;
                    Some(s)
                }
            })
            .collect();
        match conn.try_write_vectored(&slices) {
            Ok(0) => return Err(WriteError::Io(std::io::ErrorKind::WriteZero.into())),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                deadline::within(timeout, conn.writable())
                    .await
                    .map_err(|_| WriteError::TimedOut)?
                    .map_err(WriteError::Io)?;
            }
            Err(e) => return Err(WriteError::Io(e)),
        }
    }
    // Through TLS, what was encrypted and not yet sent goes now: the
    // upstream answers only once it has the whole request.
    conn.flush(timeout).await
}
