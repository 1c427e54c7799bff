//! What a request knows of the connection that carries it: who the client
//! is, where it arrived, when, and what its TLS handshake said. The engine
//! makes one per connection and hands it to [`crate::server::core`] with
//! each request, so that the request never names the HTTP/1 connection
//! (an HTTP/2 stream will hand the same).

use std::sync::Arc;
use std::time::Instant;

use crate::config::model::ListenAddr;
use crate::server::engine::client_addr::ClientAddr;
use crate::server::engine::tls::info::TlsInfo;

/// Where a connection came from and where it arrived.
#[derive(Clone, Debug)]
pub struct ConnInfo {
    /// The client.
    pub peer: ClientAddr,
    /// Our local address (a unix-domain connection's is its listening
    /// socket's path).
    pub local: ListenAddr,
    /// The address of the listening socket that accepted it.
    pub socket_addr: ListenAddr,
    /// Its serial number.
    pub conn_no: u64,
    /// When it was accepted (`$connection_time`).
    pub accepted: Instant,
    /// Whether the address speaks TLS (`listen … ssl`): with no `tls`
    /// below, the client sent plain HTTP to it (nginx's 497).
    pub https_port: bool,
    /// What its TLS handshake negotiated.
    pub tls: Option<Arc<TlsInfo>>,
}
