//! Asking an OCSP responder, as nginx's OCSP client in
//! `ngx_event_openssl_stapling.c` does for stapling and for client
//! certificates alike (`ngx_ssl_ocsp_request` … `ngx_ssl_ocsp_read_handler`):
//! the host resolved by the server's `resolver`, else the addresses found
//! at load (with nginx's warning for a name); each address in turn until
//! one answers, over non-blocking sockets, within [`OCSP_TIMEOUT`]; every
//! failure logged in nginx's words, with its context
//! (`ngx_ssl_ocsp_log_error`).
//!
//! What this module must not do: block its loop (every step is awaited),
//! or judge the answer (`tls::ocsp::verify` does).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::ocsp_http::{self, Head};
use crate::log::{ErrorLog, Level};
use crate::upstream::resolve::Resolver;

/// How long one address may take to connect, take the request and answer
/// (nginx's `staple->timeout`, 60 s, on the read and the write).
pub const OCSP_TIMEOUT: Duration = Duration::from_secs(60);
/// The most of an answer read, head and body (nginx's 16 KiB buffer:
/// what does not fit is cut off, and fails to decode).
pub const MAX_ANSWER: usize = 16384;
/// The read size.
const READ_CHUNK: usize = 4096;

/// A responder to ask, and what the log says of the asking.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    /// The host as written in its URL (the `Host` header, and what a
    /// `resolver` looks up).
    pub host: &'a str,
    /// Its port.
    pub port: u16,
    /// The URL's path, the request's prefix.
    pub uri: &'a str,
    /// The host's addresses found at load, tried in turn.
    pub addrs: &'a [SocketAddr],
    /// The server's `resolver`, if it has one.
    pub resolver: Option<&'a Arc<Resolver>>,
    /// `resolver_timeout`.
    pub resolver_timeout: Duration,
    /// The certificate's file (a staple's), for the log.
    pub name: Option<&'a str>,
}

impl Target<'_> {
    /// What nginx's log handler adds to the asking's messages
    /// (`ngx_ssl_ocsp_log_error`).
    pub fn context(&self, peer: Option<SocketAddr>) -> String {
        let peer = peer.map(|p| format!(", peer: {p}")).unwrap_or_default();
        let name = self
            .name
            .map(|n| format!(", certificate: \"{n}\""))
            .unwrap_or_default();
        format!(
            " while requesting certificate status, responder: {}{peer}{name}",
            self.host
        )
    }
}

/// Asks `t` about `der` (an `OCSPRequest`): the address that answered
/// 200 and the answer's body, or `None` (logged; nginx gives up on any
/// other status without a word).
pub async fn ask(t: &Target<'_>, der: &[u8], log: &ErrorLog) -> Option<(SocketAddr, Vec<u8>)> {
    let request = ocsp_http::request(t.uri, t.host, der);
    let addrs = addresses(t, log).await?;
    for addr in addrs {
        if let Some((code, body)) = exchange(t, log, addr, &request).await {
            return (code == 200).then_some((addr, body));
        }
    }
    None
}

/// The responder's addresses: an address literal as it is; a name by the
/// `resolver`, else (warned, as nginx) the addresses found at load.
async fn addresses(t: &Target<'_>, log: &ErrorLog) -> Option<Vec<SocketAddr>> {
    let host = t.host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(vec![SocketAddr::new(ip, t.port)]);
    }
    let Some(resolver) = t.resolver else {
        let level = if t.addrs.is_empty() {
            Level::Error
        } else {
            Level::Warn
        };
        log.log(
            level,
            None,
            format_args!(
                "no resolver defined to resolve {}{}",
                t.host,
                t.context(None)
            ),
        );
        return (!t.addrs.is_empty()).then(|| t.addrs.to_vec());
    };
    match resolver.resolve(t.host, t.resolver_timeout).await {
        Ok(ips) => Some(
            ips.into_iter()
                .map(|ip| SocketAddr::new(ip, t.port))
                .collect(),
        ),
        Err(e) => {
            log.log(
                Level::Error,
                None,
                format_args!("{} could not be resolved ({e}){}", t.host, t.context(None)),
            );
            None
        }
    }
}

/// One address asked: the status code and the body, or `None` (logged)
/// to try the next (`ngx_ssl_ocsp_next`).
async fn exchange(
    t: &Target<'_>,
    log: &ErrorLog,
    addr: SocketAddr,
    request: &[u8],
) -> Option<(u16, Vec<u8>)> {
    let deadline = Instant::now() + OCSP_TIMEOUT;
    let err = |msg: std::fmt::Arguments<'_>| {
        log.log(
            Level::Error,
            None,
            format_args!("{msg}{}", t.context(Some(addr))),
        );
    };
    let timed_out = || {
        err(format_args!(
            "OCSP responder timed out (110: Connection timed out)"
        ))
    };
    let mut sock = match tokio::time::timeout_at(deadline.into(), TcpStream::connect(addr)).await {
        Err(_) => {
            timed_out();
            return None;
        }
        // nginx connects without waiting and learns of a refusal when it
        // reads: it says so, then that the responder closed.
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            err(format_args!(
                "recv() failed ({})",
                crate::sys::error::errno_text(&e)
            ));
            err(format_args!("OCSP responder prematurely closed connection"));
            return None;
        }
        Ok(Err(e)) => {
            err(format_args!(
                "connect() failed ({})",
                crate::sys::error::errno_text(&e)
            ));
            return None;
        }
        Ok(Ok(s)) => s,
    };
    match tokio::time::timeout_at(deadline.into(), sock.write_all(request)).await {
        Err(_) => {
            timed_out();
            return None;
        }
        Ok(Err(e)) => {
            err(format_args!(
                "send() failed ({})",
                crate::sys::error::errno_text(&e)
            ));
            return None;
        }
        Ok(Ok(())) => {}
    }
    let mut buf = Vec::with_capacity(READ_CHUNK);
    let mut chunk = [0u8; READ_CHUNK];
    while buf.len() < MAX_ANSWER {
        let room = (MAX_ANSWER - buf.len()).min(READ_CHUNK);
        match tokio::time::timeout_at(deadline.into(), sock.read(&mut chunk[..room])).await {
            Err(_) => {
                timed_out();
                return None;
            }
            Ok(Err(e)) => {
                err(format_args!(
                    "recv() failed ({})",
                    crate::sys::error::errno_text(&e)
                ));
                break;
            }
            Ok(Ok(0)) => break,
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
        }
        if let Head::Invalid(msg) = ocsp_http::head(&buf) {
            err(format_args!("{msg}"));
            return None;
        }
    }
    match ocsp_http::head(&buf) {
        Head::Done { code, body } => Some((code, buf.split_off(body))),
        Head::Invalid(msg) => {
            err(format_args!("{msg}"));
            None
        }
        Head::Incomplete => {
            err(format_args!("OCSP responder prematurely closed connection"));
            None
        }
    }
}
