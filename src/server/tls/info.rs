//! What a TLS handshake negotiated, kept with the connection for the
//! `$ssl_*` variables and the log (nginx reads them from the `SSL` object
//! when a variable is evaluated; rustls's state gives them once, at the end
//! of the handshake, and they do not change after).

use rustls::ServerConnection;
use rustls::pki_types::CertificateDer;

use crate::tls::client_verify::Verdict;

/// The certificate a client sent, and what its verification found.
#[derive(Clone, Debug)]
pub struct ClientCert {
    /// The chain as sent, the client's own certificate first.
    pub chain: Vec<CertificateDer<'static>>,
    /// The verdict (`$ssl_client_verify`; 495 when it fails).
    pub verdict: Verdict,
}

impl ClientCert {
    /// The client's own certificate, DER.
    pub fn der(&self) -> &[u8] {
        self.chain.first().map_or(&[], |c| c.as_ref())
    }
}

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
    /// The cipher suites the client offered, by IANA code (`$ssl_ciphers`).
    pub offered_suites: Vec<u16>,
    /// The groups the client offered, by IANA code (`$ssl_curves`).
    pub offered_groups: Vec<u16>,
    /// The ALPN protocol agreed on, if any.
    pub alpn: Option<Vec<u8>>,
    /// The client's certificate, when one was asked for and sent.
    pub client: Option<ClientCert>,
    /// `$ssl_session_id`: the id of the session as nowait's session cache
    /// keeps it (see [`crate::tls::sessions`]), if it keeps it.
    pub session_id: Option<Vec<u8>>,
}

impl TlsInfo {
    /// What `conn` negotiated, with what the client offered, the verdict
    /// on the client's certificate and the session's id.
    pub fn of(
        conn: &ServerConnection,
        offered_suites: Vec<u16>,
        offered_groups: Vec<u16>,
        verdict: Option<Verdict>,
        session_id: Option<Vec<u8>>,
    ) -> TlsInfo {
        TlsInfo {
            protocol: conn
                .protocol_version()
                .map_or("", |v| crate::tls::ciphers::protocol_name(u16::from(v))),
            cipher: conn
                .negotiated_cipher_suite()
                .and_then(|s| crate::tls::ciphers::openssl_name(u16::from(s.suite())))
                .unwrap_or(""),
            server_name: conn.server_name().map(str::to_string),
            reused: matches!(conn.handshake_kind(), Some(rustls::HandshakeKind::Resumed)),
            offered_suites,
            offered_groups,
            alpn: conn.alpn_protocol().map(<[u8]>::to_vec),
            client: match (verdict, conn.peer_certificates()) {
                (Some(verdict), Some(chain)) if !chain.is_empty() => Some(ClientCert {
                    chain: chain.iter().map(|c| c.clone().into_owned()).collect(),
                    verdict,
                }),
                _ => None,
            },
            session_id,
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
        _ => None,
    }
}
