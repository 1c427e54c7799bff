//! The engine: what carries bytes to and from a client. It knows sockets,
//! workers and wire protocols; it hands each request to the core
//! ([`crate::server::core`]) and never names a module.
//!
//! - [`listen`]: sockets, bound once and kept across reloads (`reuseport`:
//!   one per worker).
//! - [`worker`]: a thread per worker, each a current-thread tokio runtime;
//!   [`balance`] spreads connections over them.
//! - [`h1`]: the HTTP/1 connection: reading heads and bodies, keep-alive,
//!   parking idle connections. HTTP/2 will sit beside it.
//! - [`conn_info`]: what a request knows of the connection that carries it.
//! - [`client`]: the client as handlers see it, and request bodies;
//!   [`client_addr`] its address (inet or unix-domain).
//! - [`tls`]: handshakes, certificates chosen per name, OCSP.

pub mod balance;
pub mod client;
pub mod client_addr;
pub mod conn_info;
pub mod h1;
pub mod listen;
pub mod tls;
pub mod worker;
