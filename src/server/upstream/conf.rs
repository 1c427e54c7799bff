//! What the engine reads of a location's configuration (nginx's
//! `ngx_http_upstream_conf_t`): one type for every protocol, filled by the
//! protocol's own directives (`proxy_*` today; `fastcgi_*`, `uwsgi_*`,
//! `scgi_*`, `memcached_*`, `grpc_*` next), so that the engine never names
//! a directive.
//!
//! Not here yet: the cache's settings (`proxy_cache_*`), which the cache
//! still reads from the location by their `proxy_` names; see
//! docs/architecture.md.

use std::time::Duration;

use crate::config::model::{NextUpstream, ProxyStore};
use crate::config::template::Template;
use crate::io::temp::TempPath;

/// The engine's settings for one request.
#[derive(Clone, Copy)]
pub struct UpstreamConf<'a> {
    /// `*_connect_timeout` (the TLS handshake shares it).
    pub connect_timeout: Duration,
    /// `*_send_timeout`: each write of the request.
    pub send_timeout: Duration,
    /// `*_read_timeout`: each read of the response.
    pub read_timeout: Duration,
    /// `*_socket_keepalive`: SO_KEEPALIVE on new connections.
    pub socket_keepalive: bool,
    /// `*_buffer_size`: the response head must fit it.
    pub buffer_size: u64,
    /// `*_buffers`: (count, size).
    pub buffers: (u32, u64),
    /// `*_busy_buffers_size` in force.
    pub busy_buffers_size: u64,
    /// `*_max_temp_file_size` in force (0: no temp file).
    pub max_temp_file_size: u64,
    /// `*_temp_file_write_size` in force.
    pub temp_file_write_size: u64,
    /// `*_temp_path`.
    pub temp_path: &'a TempPath,
    /// `*_buffering`.
    pub buffering: bool,
    /// `*_request_buffering`: the client's body is read whole first.
    pub request_buffering: bool,
    /// `*_pass_request_body`.
    pub pass_request_body: bool,
    /// `proxy_set_body` and its twins: the body sent instead of the
    /// client's.
    pub set_body: Option<&'a Template>,
    /// `*_ignore_client_abort`.
    pub ignore_client_abort: bool,
    /// `*_intercept_errors`.
    pub intercept_errors: bool,
    /// `*_next_upstream`.
    pub next_upstream: NextUpstream,
    /// `*_next_upstream_tries` (0: no limit).
    pub next_upstream_tries: u32,
    /// `*_next_upstream_timeout` (0: no limit).
    pub next_upstream_timeout: Duration,
    /// `*_limit_rate`: bytes per second read from the upstream (0: none).
    pub limit_rate: u64,
    /// `*_force_ranges`.
    pub force_ranges: bool,
    /// `*_store`.
    pub store: &'a ProxyStore,
    /// `*_store_access`.
    pub store_access: u32,
}

impl<'a> UpstreamConf<'a> {
    /// Whether `proxy_store` (or its twin) keeps responses.
    pub fn stores(&self) -> bool {
        !matches!(self.store, ProxyStore::Off)
    }
}
