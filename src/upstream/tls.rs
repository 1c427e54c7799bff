//! TLS to an upstream (`proxy_pass https://…`), as nginx's
//! `ngx_http_upstream_ssl_init_connection` and
//! `ngx_http_upstream_ssl_handshake` run it: the name the connection is
//! for (`proxy_ssl_name`, sent as SNI with `proxy_ssl_server_name on`
//! unless it is an address), the handshake over the connected socket
//! within what is left of `proxy_connect_timeout`, then, with
//! `proxy_ssl_verify on`, the certificate judged ([`crate::tls::verify`]).
//! Each failure is said in nginx's words, for the proxy to log with
//! ` while SSL handshaking to upstream` and its context; every one is an
//! `error` for `proxy_next_upstream` but the timeout, which is `timeout`.
//!
//! nginx runs the handshake on its loop. Here its key operations (each
//! step that processes the server's records: the key exchange and the
//! signature checks, and the chain check after it) run in the `ssl` pool,
//! as the server side's do: measured, a full handshake costs the client
//! 0.1 to 0.35 ms of CPU and the chain check 0.07 ms more, more than a
//! loop's turn should spend on one connection (docs/architecture.md,
//! "TLS"). Only the socket's reads and writes, and the first message,
//! stay on the loop. A full pool fails the handshake at once, an `error`
//! for `proxy_next_upstream`.
//!
//! What this module must not do: read a file, or wait on anything but the
//! socket.

use std::io;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use rustls::pki_types::{ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection};
use tokio::net::TcpStream;

use crate::io::pool::Pool;
use crate::io::tls_stream::{Sock, TlsStream, send_held};
use crate::log::Level;
use crate::tls::verify::{Verifier, check_host};

/// Why a handshake with an upstream failed.
#[derive(Debug)]
pub struct HandshakeError {
    /// nginx's words (`SSL_do_handshake() failed (SSL: …)`, `upstream SSL
    /// certificate verify error: (20:…)`), without the context.
    pub message: String,
    /// The level nginx logs it at (`error` for what an upstream does,
    /// `crit` for a TLS failure OpenSSL's list does not name).
    pub level: Level,
    /// `proxy_connect_timeout` passed (nginx's `timeout`, 504) rather than
    /// an error (`error`, 502).
    pub timed_out: bool,
}

impl HandshakeError {
    fn error(message: impl Into<String>) -> HandshakeError {
        HandshakeError {
            message: message.into(),
            level: Level::Error,
            timed_out: false,
        }
    }
}

/// The name a connection is for, as `ngx_http_upstream_ssl_name` makes it
/// of `name` (`proxy_ssl_name`, or the upstream group's host): without a
/// port (`host:port`, `[v6]:port`); whether it is sent as SNI
/// (`proxy_ssl_server_name on`, a name that is not empty nor an address:
/// RFC 6066 allows no address).
pub fn ssl_name(name: &str, server_name: bool) -> (String, bool) {
    let after_bracket = if name.starts_with('[') {
        name.find(']').unwrap_or(0)
    } else {
        0
    };
    let name = match name[after_bracket..].find(':') {
        Some(i) => &name[..after_bracket + i],
        None => name,
    };
    let sni = server_name
        && !name.is_empty()
        && !name.starts_with('[')
        && name.parse::<std::net::Ipv4Addr>().is_err();
    (name.to_string(), sni)
}

/// The rustls name of a connection to `peer` for `name`: the name, when
/// it is one rustls can send (a DNS name: sent when the configuration
/// sends names) or an address (never sent); else the peer's address. It
/// is also what rustls keeps the peer's sessions under.
fn server_name(name: &str, peer: Option<IpAddr>) -> ServerName<'static> {
    if let Ok(ServerName::DnsName(dns)) = ServerName::try_from(name.to_string()) {
        return ServerName::DnsName(dns);
    }
    let ip = name
        .parse::<IpAddr>()
        .ok()
        .or(peer)
        .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
    ServerName::IpAddress(ip.into())
}

/// A connection to make: the configuration, the name it is for (sent as
/// SNI when `sni`), and with `proxy_ssl_verify on` what judges the
/// certificate.
pub struct Handshake {
    /// The location's configuration for this peer.
    pub config: Arc<ClientConfig>,
    /// The name, without its port.
    pub name: String,
    /// Whether the name is sent.
    pub sni: bool,
    /// `proxy_ssl_verify on`.
    pub verifier: Option<Arc<Verifier>>,
}

/// Runs the handshake `h` over `tcp` before `deadline`, its key
/// operations in `pool` (on the loop without one), then the check
/// `proxy_ssl_verify` asks for.
pub async fn handshake(
    tcp: TcpStream,
    h: Handshake,
    pool: Option<&Arc<Pool>>,
    deadline: Instant,
) -> Result<TlsStream<ClientConnection>, HandshakeError> {
    let peer = tcp.peer_addr().ok().map(|a| a.ip());
    let sent = if h.sni { h.name.as_str() } else { "" };
    let mut conn =
        ClientConnection::new(h.config, server_name(sent, peer)).map_err(|e| tls_failure(&e))?;
    let job = Arc::new(Check {
        verifier: h.verifier,
        name: h.name,
    });
    while conn.is_handshaking() {
        flush(&tcp, &mut conn, deadline).await?;
        if !conn.is_handshaking() {
            break;
        }
        match conn.read_tls(&mut Sock(&tcp)) {
            Ok(0) => {
                return Err(HandshakeError::error(
                    "peer closed connection in SSL handshake",
                ));
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                wait(deadline, tcp.readable()).await?;
                continue;
            }
            Err(e) => return Err(gone(&e)),
        }
        let (c, stepped) = step(conn, job.clone(), pool).await?;
        conn = c;
        if let Err(e) = stepped {
            // The alert rustls queued goes out if the socket takes it.
            let _ = send_held(&tcp, &mut conn);
            return Err(e);
        }
    }
    // A TLS 1.2 client speaks last (its Finished): it must be sent.
    flush(&tcp, &mut conn, deadline).await?;
    Ok(TlsStream::new(tcp, conn))
}

/// What is checked once the handshake is over.
struct Check {
    /// `proxy_ssl_verify on`.
    verifier: Option<Arc<Verifier>>,
    /// The name the certificate must have.
    name: String,
}

impl Check {
    /// With `proxy_ssl_verify on`: the certificate the upstream sent (kept
    /// with a resumed session) verified, then its name compared, as
    /// `ngx_http_upstream_ssl_handshake` does after the handshake.
    fn run(&self, conn: &ClientConnection) -> Result<(), HandshakeError> {
        let Some(verifier) = &self.verifier else {
            return Ok(());
        };
        let chain = conn.peer_certificates().unwrap_or_default();
        verifier.verify(chain, UnixTime::now()).map_err(|e| {
            HandshakeError::error(format!("upstream SSL certificate verify error: ({e})"))
        })?;
        match chain.first() {
            Some(leaf) if check_host(leaf, &self.name) => Ok(()),
            _ => Err(HandshakeError::error(format!(
                "upstream SSL certificate does not match \"{}\"",
                self.name
            ))),
        }
    }
}

/// Processes the records read (and, when the handshake ends with them,
/// checks the certificate), in `pool` if there is one. The connection
/// comes back with what happened; an `Err` of its own is a pool that
/// could not take the work (said as the pool says it).
async fn step(
    mut conn: ClientConnection,
    job: Arc<Check>,
    pool: Option<&Arc<Pool>>,
) -> Result<(ClientConnection, Result<(), HandshakeError>), HandshakeError> {
    let work = move || {
        let r = match conn.process_new_packets() {
            Err(e) => Err(tls_failure(&e)),
            Ok(_) if conn.is_handshaking() => Ok(()),
            Ok(_) => job.run(&conn),
        };
        (conn, r)
    };
    let Some(pool) = pool else {
        return Ok(work());
    };
    let refused = |e: String| HandshakeError {
        message: e,
        level: Level::Error,
        timed_out: false,
    };
    match pool.submit(work) {
        Ok(done) => done.await.map_err(|e| refused(e.to_string())),
        Err(e) => Err(refused(e.to_string())),
    }
}

/// Sends what the connection holds before `deadline`.
async fn flush(
    tcp: &TcpStream,
    conn: &mut ClientConnection,
    deadline: Instant,
) -> Result<(), HandshakeError> {
    loop {
        match send_held(tcp, conn) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                wait(deadline, tcp.writable()).await?;
            }
            Err(e) => return Err(gone(&e)),
        }
    }
}

/// Waits for the socket until `deadline`: past it, nginx's timeout.
async fn wait(
    deadline: Instant,
    ready: impl std::future::Future<Output = io::Result<()>>,
) -> Result<(), HandshakeError> {
    match tokio::time::timeout_at(deadline.into(), ready).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(gone(&e)),
        Err(_) => Err(HandshakeError {
            message: "upstream timed out (110: Connection timed out)".to_string(),
            level: Level::Error,
            timed_out: true,
        }),
    }
}

/// The socket failed under the handshake (nginx's `SSL_ERROR_SYSCALL`
/// with an empty error queue: "peer closed connection in SSL handshake
/// (104: Connection reset by peer)").
fn gone(e: &io::Error) -> HandshakeError {
    HandshakeError::error(format!(
        "peer closed connection in SSL handshake ({})",
        crate::sys::error::errno_text(e)
    ))
}

/// A TLS failure as `ngx_ssl_connection_error` logs it: OpenSSL's words
/// where rustls's error has an OpenSSL counterpart (an alert the upstream
/// sent, bytes that are no TLS record), at `error` when OpenSSL's reason is
/// one nginx lists as a handshake failure (`c->log_error` is
/// `NGX_ERROR_ERR` for upstreams), else at `crit`.
fn tls_failure(e: &rustls::Error) -> HandshakeError {
    let (text, listed) = openssl_reason(e);
    HandshakeError {
        message: format!("SSL_do_handshake() failed (SSL: {text})"),
        level: if listed { Level::Error } else { Level::Crit },
        timed_out: false,
    }
}

/// OpenSSL 3.0's error line for a rustls error, and whether nginx's list
/// of handshake failures names its reason.
fn openssl_reason(e: &rustls::Error) -> (String, bool) {
    use rustls::{AlertDescription as A, Error as E, InvalidMessage};
    let line = |reason: u32, text: &str| format!("error:0A{reason:06X}:SSL routines::{text}");
    match e {
        // Not a TLS record (a plain HTTP answer, say): OpenSSL reads its
        // first bytes as a record header with a wrong version.
        E::InvalidMessage(InvalidMessage::InvalidContentType)
        | E::InvalidMessage(InvalidMessage::UnknownProtocolVersion) => {
            (line(267, "wrong version number"), true)
        }
        E::AlertReceived(alert) => {
            let (n, text) = match alert {
                A::UnexpectedMessage => (10, "sslv3 alert unexpected message"),
                A::BadRecordMac => (20, "sslv3 alert bad record mac"),
                A::RecordOverflow => (22, "tlsv1 alert record overflow"),
                A::HandshakeFailure => (40, "sslv3 alert handshake failure"),
                A::BadCertificate => (42, "sslv3 alert bad certificate"),
                A::UnsupportedCertificate => (43, "sslv3 alert unsupported certificate"),
                A::CertificateRevoked => (44, "sslv3 alert certificate revoked"),
                A::CertificateExpired => (45, "sslv3 alert certificate expired"),
                A::CertificateUnknown => (46, "sslv3 alert certificate unknown"),
                A::IllegalParameter => (47, "sslv3 alert illegal parameter"),
                A::UnknownCA => (48, "tlsv1 alert unknown ca"),
                A::AccessDenied => (49, "tlsv1 alert access denied"),
                A::DecodeError => (50, "tlsv1 alert decode error"),
                A::DecryptError => (51, "tlsv1 alert decrypt error"),
                A::ProtocolVersion => (70, "tlsv1 alert protocol version"),
                A::InsufficientSecurity => (71, "tlsv1 alert insufficient security"),
                A::InternalError => (80, "tlsv1 alert internal error"),
                A::UserCanceled => (90, "tlsv1 alert user cancelled"),
                A::NoRenegotiation => (100, "tlsv1 alert no renegotiation"),
                A::UnrecognisedName => (112, "tlsv1 unrecognized name"),
                A::CertificateRequired => (116, "tlsv13 alert certificate required"),
                A::NoApplicationProtocol => (120, "tlsv1 alert no application protocol"),
                other => return (format!("received fatal alert: {other:?}"), false),
            };
            // nginx lists the alerts up to 1100 (no_renegotiation).
            (line(1000 + n, text), n <= 100)
        }
        E::PeerIncompatible(_) | E::PeerMisbehaved(_) => (e.to_string(), true),
        other => (other.to_string(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_lose_their_port_and_addresses_are_not_sent() {
        assert_eq!(
            ssl_name("example.com:8443", true),
            ("example.com".into(), true)
        );
        assert_eq!(
            ssl_name("example.com", false),
            ("example.com".into(), false)
        );
        assert_eq!(ssl_name("127.0.0.1:443", true), ("127.0.0.1".into(), false));
        assert_eq!(ssl_name("[::1]:443", true), ("[::1]".into(), false));
        assert_eq!(ssl_name("", true), (String::new(), false));
    }

    #[test]
    fn rustls_names_fall_back_to_the_peer_s_address() {
        let peer = Some(IpAddr::from([10, 0, 0, 1]));
        assert!(matches!(
            server_name("example.com", peer),
            ServerName::DnsName(_)
        ));
        let ServerName::IpAddress(ip) = server_name("127.0.0.1", peer) else {
            panic!("an address");
        };
        assert_eq!(IpAddr::from(ip), IpAddr::from([127, 0, 0, 1]));
        let ServerName::IpAddress(ip) = server_name("", peer) else {
            panic!("the peer's address");
        };
        assert_eq!(IpAddr::from(ip), IpAddr::from([10, 0, 0, 1]));
    }

    #[test]
    fn alerts_and_plain_answers_in_openssl_s_words() {
        let e = tls_failure(&rustls::Error::AlertReceived(
            rustls::AlertDescription::HandshakeFailure,
        ));
        assert_eq!(
            e.message,
            "SSL_do_handshake() failed (SSL: error:0A000410:SSL routines::sslv3 alert handshake failure)"
        );
        assert_eq!(e.level, Level::Error);
        let e = tls_failure(&rustls::Error::InvalidMessage(
            rustls::InvalidMessage::InvalidContentType,
        ));
        assert_eq!(
            e.message,
            "SSL_do_handshake() failed (SSL: error:0A00010B:SSL routines::wrong version number)"
        );
    }
}
