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
//! - [`ciphers`], [`groups`]: OpenSSL 3.0's cipher strings and group lists
//!   read as OpenSSL reads them, without OpenSSL (IANA codes and names only).
//! - [`ocsp`]: OCSP stapling's requests, responses, their checks, and each
//!   certificate's staple; [`x509`] and [`der`]: the certificate fields and
//!   the DER they need; [`hello`]: whether a ClientHello asks for a staple.
//!
//! What this module must not do: read a file or wait (the configuration
//! loader reads the files and hands over their bytes; handshakes run where
//! the server puts them), or know about HTTP.

pub mod ciphers;
pub mod der;
pub mod groups;
pub mod hello;
pub mod material;
pub mod ocsp;
pub mod server;
pub mod sessions;
pub mod tickets;
pub mod x509;

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
