//! TLS machinery that knows nothing of HTTP: what nginx's ssl module
//! loads (certificates, keys, ticket keys), the rustls configuration made
//! of it, the session caches and ticket keys shared by every worker, and
//! OpenSSL's cipher strings, group lists and names (nginx hands its
//! settings to OpenSSL, and its `$ssl_*` variables print OpenSSL's names).
//!
//! - [`material`]: certificate chains and keys read from PEM, checked as
//!   nginx checks them, with nginx's words for what is wrong.
//! - [`tickets`]: session tickets under nginx's `ssl_session_ticket_key`
//!   files (48 or 80 bytes; the first encrypts, all decrypt).
//! - [`sessions`]: the session caches (`ssl_session_cache`), process-wide
//!   and kept across reloads.
//! - [`server`]: the rustls server configuration of one `server` block.
//! - [`client`]: the rustls client configuration of a location that
//!   proxies over TLS (`proxy_ssl_*`), with each peer's sessions.
//! - [`verify`]: an upstream's certificate judged as nginx judges it after
//!   the handshake (`proxy_ssl_verify`): OpenSSL's verify results and
//!   `X509_check_host`'s names.
//! - [`openssl_verify`]: a chain verified as OpenSSL verifies it, for the
//!   version 1 certificates and CRLs ([`crl`]) webpki refuses.
//! - [`peer_key`]: the handshake's signatures checked with the key of a
//!   peer's certificate of any version.
//! - [`openssl_text`]: OpenSSL's words for a file that cannot be loaded,
//!   as nginx prints them.
//! - [`ciphers`], [`groups`]: OpenSSL 3.0's cipher strings and group lists
//!   read as OpenSSL reads them, without OpenSSL (IANA codes and names only).
//! - [`ocsp`]: OCSP stapling's requests, responses, their checks, and each
//!   certificate's staple; [`x509`] and [`der`]: the certificate fields and
//!   the DER they need; [`hello`]: what a ClientHello's bytes say that
//!   rustls does not (the name as sent, a TLS 1.2 ticket asked for, a
//!   staple asked for).
//!
//! What this module must not do: read a file or wait (the configuration
//! loader reads the files and hands over their bytes; handshakes run where
//! the server puts them), or know about HTTP.

pub mod ciphers;
pub mod client;
pub mod client_verify;
pub mod crl;
pub mod der;
pub mod encrypted;
pub mod groups;
pub mod hello;
pub mod material;
pub mod ocsp;
pub mod openssl_text;
pub mod openssl_verify;
pub mod peer_key;
pub mod server;
pub mod sessions;
pub mod tickets;
pub mod verify;
pub mod x509;
pub mod x509_print;

/// The clock as nginx's `ngx_time()`: seconds since the epoch.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// The crypto provider nowait's TLS runs on (aws-lc-rs: chosen by
/// measurement, see docs/architecture.md, "TLS").
pub fn provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}

/// `provider` offering only these cipher suites (TLS 1.3's first, in their
/// order, then TLS 1.2's in the cipher string's) and key-exchange groups,
/// all by IANA code; an error when no group is left.
pub fn restricted(
    provider: &rustls::crypto::CryptoProvider,
    tls12_suites: &[u16],
    tls13_suites: &[u16],
    groups: &[u16],
) -> Result<rustls::crypto::CryptoProvider, String> {
    let mut provider = provider.clone();
    provider.cipher_suites.retain(|suite| match suite {
        rustls::SupportedCipherSuite::Tls13(_) => tls13_suites.contains(&u16::from(suite.suite())),
        rustls::SupportedCipherSuite::Tls12(_) => tls12_suites.contains(&u16::from(suite.suite())),
    });
    let rank = |list: &[u16], code: u16| {
        list.iter()
            .position(|&c| c == code)
            .unwrap_or(usize::MAX / 2)
    };
    provider.cipher_suites.sort_by_key(|suite| {
        let code = u16::from(suite.suite());
        match suite {
            rustls::SupportedCipherSuite::Tls13(_) => rank(tls13_suites, code),
            rustls::SupportedCipherSuite::Tls12(_) => usize::MAX / 2 + rank(tls12_suites, code),
        }
    });
    let all_groups = provider.kx_groups.clone();
    provider.kx_groups = groups
        .iter()
        .filter_map(|&code| {
            all_groups
                .iter()
                .find(|g| u16::from(g.name()) == code)
                .copied()
        })
        .collect();
    if provider.kx_groups.is_empty() {
        return Err("no key exchange group left to offer".to_string());
    }
    Ok(provider)
}
