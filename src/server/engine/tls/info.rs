//! What a TLS handshake negotiated, kept with the connection for the
//! `$ssl_*` variables and the log (nginx reads them from the `SSL` object
//! when a variable is evaluated; rustls's state gives them once, at the end
//! of the handshake, and they do not change after).

use rustls::ServerConnection;
use rustls::pki_types::CertificateDer;

use crate::tls::client_verify::Verdict;
use crate::tls::ocsp::client::Outcome;

/// The certificate a client sent, and what its verification found.
#[derive(Clone, Debug)]
pub struct ClientCert {
    /// The chain as sent, the client's own certificate first.
    pub chain: Vec<CertificateDer<'static>>,
    /// The verdict (`$ssl_client_verify`; 495 when it fails).
    pub verdict: Verdict,
    /// What `ssl_ocsp` found of a verified certificate (`None`: not
    /// checked).
    pub ocsp: Option<Outcome>,
}

impl ClientCert {
    /// Why `ssl_ocsp` refuses the certificate, in nginx's words
    /// (`ngx_ssl_ocsp_get_status`).
    pub fn ocsp_failure(&self) -> Option<&'static str> {
        self.ocsp.and_then(Outcome::failure)
    }

    /// The client's own certificate, DER.
    pub fn der(&self) -> &[u8] {
        self.chain.first().map_or(&[], |c| c.as_ref())
    }
}

/// The length of a session id (`SSL3_SSL_SESSION_ID_LENGTH`).
pub const SESSION_ID_LEN: usize = 32;

/// The handshake's outcome, as nginx's variables print it.
#[derive(Clone, Debug, Default)]
pub struct TlsInfo {
    /// `$ssl_protocol`: `TLSv1.2`, `TLSv1.3`.
    pub protocol: &'static str,
    /// `$ssl_cipher`: OpenSSL's name of the suite.
    pub cipher: &'static str,
    /// `$ssl_server_name`: the SNI the client sent.
    pub server_name: Option<String>,
    /// `$ssl_session_reused`: `r` when the session was resumed.
    pub reused: bool,
    /// `$ssl_session_id`: the session's id (empty when OpenSSL would give
    /// it none).
    pub session_id: Vec<u8>,
    /// `$ssl_curve`: the key-exchange group, by IANA code (none when a
    /// TLS 1.2 session resumed without one).
    pub group: Option<u16>,
    /// The cipher suites the client offered, by IANA code (`$ssl_ciphers`).
    pub offered_suites: Vec<u16>,
    /// The groups the client offered, by IANA code (`$ssl_curves`).
    pub offered_groups: Vec<u16>,
    /// The ALPN protocol agreed on, if any (`$ssl_alpn_protocol`).
    pub alpn: Option<Vec<u8>>,
    /// The client's certificate, when one was asked for and sent.
    pub client: Option<ClientCert>,
}

/// What decides a session's id, besides the connection.
pub struct Session {
    /// An id made for this connection's session.
    pub id: [u8; SESSION_ID_LEN],
    /// The session id the ClientHello offered.
    pub offered: Vec<u8>,
    /// The id under which the handshake stored a new session in the
    /// session cache.
    pub stored: Option<Vec<u8>>,
    /// Whether the client asked for a TLS 1.2 ticket and the server
    /// issues tickets.
    pub ticket: bool,
    /// Whether the server gives ids to TLS 1.2 sessions without tickets
    /// (its session cache is not `off`).
    pub tls12_ids: bool,
}

/// A random id for a new session (all zeros if the kernel gives no
/// randomness, which it does once booted: the id only names the session
/// in logs).
pub fn new_session_id() -> [u8; SESSION_ID_LEN] {
    let mut id = [0u8; SESSION_ID_LEN];
    let _ = crate::sys::random::getrandom(&mut id);
    id
}

impl TlsInfo {
    /// What `conn` negotiated, with what the client offered, the verdict
    /// on the client's certificate and what decides the session's id.
    pub fn of(
        conn: &ServerConnection,
        offered_suites: Vec<u16>,
        offered_groups: Vec<u16>,
        verdict: Option<Verdict>,
        session: &Session,
    ) -> TlsInfo {
        let reused = matches!(conn.handshake_kind(), Some(rustls::HandshakeKind::Resumed));
        let tls13 = conn.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3);
        TlsInfo {
            protocol: conn
                .protocol_version()
                .map_or("", |v| crate::tls::ciphers::protocol_name(u16::from(v))),
            cipher: conn
                .negotiated_cipher_suite()
                .and_then(|s| crate::tls::ciphers::openssl_name(u16::from(s.suite())))
                .unwrap_or(""),
            server_name: conn.server_name().map(str::to_string),
            reused,
            session_id: session_id(reused, tls13, session),
            group: conn
                .negotiated_key_exchange_group()
                .map(|g| u16::from(g.name())),
            offered_suites,
            offered_groups,
            alpn: conn.alpn_protocol().map(<[u8]>::to_vec),
            client: match (verdict, conn.peer_certificates()) {
                (Some(verdict), Some(chain)) if !chain.is_empty() => Some(ClientCert {
                    chain: chain.iter().map(|c| c.clone().into_owned()).collect(),
                    verdict,
                    ocsp: None,
                }),
                _ => None,
            },
        }
    }
}

/// Why a request on this connection is refused under `verify` (the
/// request's server's `ssl_verify_client`), as `ngx_http_process_request`
/// decides before the request is handled: the status (495, 496) and what
/// the error log says at `info`.
pub fn refusal(
    tls: &TlsInfo,
    verify: crate::config::ssl_model::VerifyClient,
) -> Option<(u16, String)> {
    use crate::config::ssl_model::VerifyClient;
    if verify == VerifyClient::Off {
        return None;
    }
    match &tls.client {
        Some(c)
            if c.verdict != Verdict::Success
                && !(verify == VerifyClient::OptionalNoCa
                    && c.verdict.optional_no_ca_accepts()) =>
        {
            Some((
                495,
                format!(
                    "client SSL certificate verify error: ({}:{})",
                    c.verdict.code(),
                    c.verdict.reason()
                ),
            ))
        }
        None if verify == VerifyClient::On => {
            Some((496, "client sent no required SSL certificate".to_string()))
        }
        // A verified certificate that OCSP refuses.
        Some(c) => c
            .ocsp_failure()
            .map(|why| (495, format!("client SSL certificate verify error: {why}"))),
        None => None,
    }
}

/// The session id OpenSSL would report. TLS 1.3: every session has one,
/// new at each connection, resumed or not (OpenSSL gives the session a
/// fresh id with each ticket it sends after the handshake). TLS 1.2: a
/// resumed session's is the one the client offered (by cache or by
/// ticket); a new one has none when it gets a ticket (RFC 5077 §3.4: the
/// server then sends an empty id, even where rustls also caches it) or
/// when the session cache is `off`, else the id it was cached under, or
/// one made for it (`none` pretends to cache).
fn session_id(reused: bool, tls13: bool, s: &Session) -> Vec<u8> {
    if tls13 {
        return s.id.to_vec();
    }
    if reused {
        return if s.offered.is_empty() {
            s.id.to_vec()
        } else {
            s.offered.clone()
        };
    }
    if s.ticket {
        return Vec::new();
    }
    match &s.stored {
        Some(id) => id.clone(),
        None if s.tls12_ids => s.id.to_vec(),
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(ticket: bool, stored: Option<&[u8]>, offered: &[u8]) -> Session {
        Session {
            id: [7; SESSION_ID_LEN],
            offered: offered.to_vec(),
            stored: stored.map(<[u8]>::to_vec),
            ticket,
            tls12_ids: true,
        }
    }

    /// Regression: a new TLS 1.2 session that got a ticket from a server
    /// with a session cache said the id rustls also cached it under;
    /// OpenSSL gives it none (nginx logs `-`). And a resumed TLS 1.3
    /// session said the id of the connection that made it; OpenSSL gives
    /// each connection's session a new one.
    #[test]
    fn session_ids_are_openssl_s() {
        let cached: &[u8] = &[1; SESSION_ID_LEN];
        assert_eq!(
            session_id(false, false, &session(true, Some(cached), b"")),
            b""
        );
        assert_eq!(
            session_id(false, false, &session(false, Some(cached), b"")),
            cached
        );
        assert_eq!(
            session_id(true, false, &session(true, None, cached)),
            cached
        );
        assert_eq!(
            session_id(true, true, &session(false, None, cached)),
            [7; 32]
        );
        assert_eq!(session_id(false, true, &session(true, None, b"")), [7; 32]);
    }
}
