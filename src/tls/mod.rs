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
//!
//! What this module must not do: read a file or wait (the configuration
//! loader reads the files and hands over their bytes; handshakes run where
//! the server puts them), or know about HTTP.

pub mod ciphers;
pub mod groups;
pub mod material;
pub mod server;
pub mod sessions;
pub mod tickets;

/// The crypto provider nowait's TLS runs on (aws-lc-rs: chosen by
/// measurement, see docs/architecture.md, "TLS").
pub fn provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}
