//! Serving: listening sockets, worker event loops, connections, and the
//! request handling between the HTTP protocol pieces ([`crate::http`]) and
//! the file layer ([`crate::io`]).
//!
//! - [`listen`]: sockets, bound once and kept across reloads (`reuseport`:
//!   one per worker).
//! - [`worker`]: a thread per worker, each a current-thread tokio runtime.
//! - [`conn`]: one connection's loop: head, body, reply, keep-alive.
//! - [`park`]: connections waiting for a request, held outside any task
//!   (a slab and a deadline queue per worker); handed to the next
//!   generation on reload.
//! - [`read`]: reading heads and bodies within limits, lingering close.
//! - [`phases`]: the request's walk: rewrite, location, content, `error_page`.
//! - [`access`]: between location and content: `realip`, `limit_req`,
//!   `limit_conn`, `allow`/`deny`, `auth_basic`, `satisfy`.
//! - [`stub_status`]: the `stub_status` and `empty_gif` handlers.
//! - [`status_page`]: `nowait_status`: Prometheus text, the live page, its JSON.
//! - [`status_ring`]: the sampler that fills the live page's ring once a second.
//! - [`rewrite`]: the rewrite module's scripts (`rewrite`, `return`, `set`,
//!   `if`, `break`); [`script_if`] their conditions and file tests.
//! - [`proxy`]: `proxy_pass`, the reverse proxy's content handler and the
//!   HTTP plug-in of [`upstream`], the upstream engine (tries, connect,
//!   response path, the cache's phases) every upstream protocol runs in.
//! - [`client`]: the client as handlers see it, and request bodies;
//!   [`client_addr`] its address (inet or unix-domain).
//! - [`vars`]: variables and templates evaluated for a request; [`named`]
//!   the configuration's own (`set`, `map`, `split_clients`, captures).
//! - [`static_file`]: URI → file, index, redirects, conditionals,
//!   `gzip_static`; [`autoindex`] directory listings.
//! - [`headers_filter`]: `expires`, `add_header`, `add_trailer` on a reply.
//! - [`filter`]: the output filters between a reply and its destination
//!   (gunzip, charset, gzip, range, [`ssi`], [`sub_filter`], [`addition`]).
//! - [`subrequest`]: running the phases for another URI on a request's
//!   behalf (SSI `include`), output streamed in order or kept in memory.
//! - [`pace`]: `limit_rate`: how fast a response may be written.
//! - [`redirect`]: absolute `Location`s, `auto_redirect`, MSIE pages.
//! - [`try_files`]: the precontent phase.
//! - [`file_rules`]: a location's `disable_symlinks` and `open_file_cache`
//!   rules for one lookup.
//! - [`send`]: writing replies (`sendfile` or buffered reads).
//! - [`stream`]: writing streamed bodies, reading ahead within a bound.
//! - [`shared`]: what outlives a reload (pools, idle upstream connections,
//!   measurements).
//! - [`site`], [`vhost`], [`locate`], [`request`], [`reply`]: the data they share.

pub mod access;
pub mod access_log;
pub mod addition;
pub mod autoindex;
pub mod balance;
pub mod client;
pub mod client_addr;
pub mod conn;
pub mod conn_buf;
pub mod file_rules;
pub mod filter;
pub mod headers_filter;
pub mod hot_wait;
pub mod listen;
pub mod locate;
pub mod max_headers;
pub mod named;
pub mod pace;
pub mod park;
pub mod phases;
pub mod proxy;
pub mod read;
pub mod redirect;
pub mod reply;
pub mod request;
pub mod rewrite;
pub mod script_if;
pub mod send;
pub mod shared;
pub mod site;
pub mod ssi;
pub mod static_file;
pub mod status_page;
pub mod status_ring;
pub mod stream;
pub mod stub_status;
pub mod sub_filter;
pub mod subrequest;
pub mod tls;
pub mod try_files;
pub mod upstream;
pub mod vars;
pub mod vhost;
pub mod worker;
