//! The request core: one request type that the phases, the content
//! handlers, the filters and the log see, whichever connection carries it
//! (nginx's `ngx_http_request.c`, `ngx_http_core_module.c`,
//! `ngx_http_variables.c`, and its header and write filters). It never
//! names the HTTP/1 connection, and reaches a module only through what
//! [`crate::server::modules`] declares.
//!
//! - [`request`], [`reply`]: the request and what answers it.
//! - [`hooks`]: the one seam to the modules: each hook where the core hands
//!   a request to a module, and the state modules keep on the core's objects.
//! - [`phases`]: the request's walk: rewrite, location, content, `error_page`.
//! - [`site`], [`vhost`], [`locate`]: a generation's configuration, its
//!   virtual hosts, a URI's location.
//! - [`shared`]: what outlives a reload (pools, idle upstream connections,
//!   measurements).
//! - [`vars`]: variables and templates evaluated for a request; [`named`]
//!   the configuration's own (`set`, `map`, `split_clients`, captures).
//! - [`script_if`]: the conditions and file tests of `if`.
//! - [`subrequest`]: running the phases for another URI on a request's
//!   behalf (SSI `include`), output streamed in order or kept in memory.
//! - [`file_rules`]: a location's `disable_symlinks` and `open_file_cache`
//!   rules for one lookup.
//! - [`redirect`]: absolute `Location`s, `auto_redirect`, MSIE pages.
//! - [`send`]: writing replies (`sendfile` or buffered reads); [`stream`]
//!   streamed bodies, read ahead within a bound; [`pace`] `limit_rate`.

pub mod file_rules;
pub mod hooks;
pub mod locate;
pub mod named;
pub mod pace;
pub mod phases;
pub mod redirect;
pub mod reply;
pub mod request;
pub mod script_if;
pub mod send;
pub mod shared;
pub mod site;
pub mod stream;
pub mod subrequest;
pub mod vars;
pub mod vhost;
