//! The wire formats nginx speaks to application servers, as pure,
//! I/O-free codecs the upstream engine's protocol plug-ins call: they
//! encode a request into bytes and read a response from bytes given in
//! pieces, and own no socket, buffer policy or configuration.
//!
//! - [`fastcgi`]: FastCGI 1.0 records (`ngx_http_fastcgi_module`).
//! - [`uwsgi`]: the uwsgi request packet (`ngx_http_uwsgi_module`).
//! - [`scgi`]: the SCGI request netstring (`ngx_http_scgi_module`).
//! - [`memcached`]: `get`, the `VALUE`/`END` line and the value's trailer
//!   (`ngx_http_memcached_module`).

pub mod fastcgi;
pub mod memcached;
pub mod scgi;
pub mod uwsgi;
