//! What a TLS handshake negotiated, kept with the connection for the
//! `$ssl_*` variables and the log (nginx reads them from the `SSL` object
//! when a variable is evaluated; rustls's state gives them once, at the end
//! of the handshake, and they do not change after).

use rustls::ServerConnection;

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
}

impl TlsInfo {
    /// What `conn` negotiated, with what the client offered.
    pub fn of(
        conn: &ServerConnection,
        offered_suites: Vec<u16>,
        offered_groups: Vec<u16>,
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
        }
    }
}
