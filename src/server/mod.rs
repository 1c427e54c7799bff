//! Serving, in three floors as nginx splits `src/http` from
//! `src/http/modules` (docs/architecture.md, "The server's floors"):
//!
//! - [`engine`]: what carries bytes to and from a client: listening
//!   sockets, workers, the HTTP/1 connection ([`engine::h1`]), TLS. It
//!   hands each request to the core with what the request needs of its
//!   connection ([`engine::conn_info::ConnInfo`]).
//! - [`core`]: the request as every module sees it, whatever wire carries
//!   it (nginx's `ngx_http_request.c`, `ngx_http_core_module.c`,
//!   `ngx_http_variables.c`, the header and write filters): the request and
//!   its reply, the phase walk, locations and virtual hosts, variables,
//!   subrequests, sending.
//! - [`modules`]: nginx's modules (static files, autoindex, SSI, the
//!   filters, access, rewrite, status, the access log). The engine and
//!   the core reach them only through what [`modules`] itself declares,
//!   never a module's file; a module never reaches into another's folder
//!   (tests/server_layers.rs checks all three).
//! - [`upstream`]: the upstream engine every upstream protocol runs in
//!   (nginx's `ngx_http_upstream.c`): tries, connect, the request body,
//!   the response path, the cache's phases; [`proxy`] is its HTTP plug-in
//!   (`proxy_pass`).

pub mod core;
pub mod engine;
pub mod modules;
pub mod proxy;
pub mod upstream;
