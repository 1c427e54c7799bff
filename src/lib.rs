//! nowait: a static file server and caching reverse proxy for Linux that reads
//! nginx's configuration language and whose event loops never wait on a disk.
//!
//! The crate's parts, in the order a request meets them:
//!
//! - [`cli`]: the nginx-style command line (`-c -p -e -g -t -T -s -v -V`).
//! - [`config`]: configuration text → syntax tree (file:line on every node) →
//!   validated, typed, merged configuration. One declarative directive table.
//! - [`process`]: pid file, signals, daemonizing, privilege drop.
//! - [`server`]: listening sockets (one per worker under `reuseport`), the
//!   worker event loops and the HTTP/1.1 connection state machine.
//! - [`tls`]: TLS machinery that knows nothing of HTTP: OpenSSL's cipher
//!   strings and group lists, and the names nginx prints for them.
//! - [`http`]: the protocol pieces that do no I/O: request heads, URIs,
//!   ranges, conditionals, response heads, error pages.
//! - [`upstream`]: the servers behind `proxy_pass`: choosing one per attempt
//!   (nginx's balancers, `split_clients`), reading what they answer
//!   (response heads, body framing, keep-alive).
//! - [`cache`]: `proxy_cache`: keys, nginx's file format, freshness policy.
//! - [`io`]: the never-blocking file layer and the named thread pools.
//! - [`body`]: bodies that stream (an upstream response), chunked framing,
//!   the tee that feeds the cache writer.
//! - [`log`]: error and access logs, written off the event loops.
//! - [`metrics`]: loop blocked time, latency histograms, pool counters.
//! - [`tls`]: TLS without HTTP: certificates and keys, the rustls
//!   configuration of a server, session caches and ticket keys.
//! - [`sys`]: every raw system call, behind safe wrappers. The only module
//!   allowed `unsafe`.
//! - `testing` (test builds only): what a test does when the machine lacks
//!   what it needs (`NOWAIT_REQUIRE_ALL`).
//!
//! The protocol engine and the I/O layer are internal: the library exists so
//! that unit tests, benchmarks and fuzz targets can reach them, not as an API.

#![deny(unsafe_code)]

pub mod acme;
pub mod body;
pub mod cache;
pub mod cli;
pub mod config;
pub mod http;
pub mod io;
pub mod log;
pub mod metrics;
pub mod process;
pub mod server;
pub mod sys;
#[cfg(any(test, feature = "test-faults"))]
pub mod testing;
pub mod tls;
pub mod upstream;

/// The name printed in `Server` headers, error pages and log lines.
pub const NAME: &str = "nowait";
/// The version printed by `-v` and in `Server` headers.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A build label given at compile time (`NOWAIT_BUILD=…`), nowait's
/// counterpart of nginx's `--build=`: shown by `server_tokens build` and
/// `-V`.
pub const BUILD: Option<&str> = option_env!("NOWAIT_BUILD");

/// What the `Server` header and error pages say: `nowait/VERSION` under
/// `server_tokens on`, `nowait` under `off`, and `nowait/VERSION (BUILD)`
/// under `build` when a build label was compiled in (nginx's
/// `NGINX_VER_BUILD`).
pub fn signature(tokens: config::inherit::ServerTokens) -> &'static str {
    use config::inherit::ServerTokens;
    const WITH_VERSION: &str = concat!("nowait/", env!("CARGO_PKG_VERSION"));
    match tokens {
        ServerTokens::Off => NAME,
        ServerTokens::On => WITH_VERSION,
        ServerTokens::Build => match BUILD {
            Some(b) => {
                static WITH_BUILD: std::sync::OnceLock<String> = std::sync::OnceLock::new();
                WITH_BUILD.get_or_init(|| format!("{WITH_VERSION} ({b})"))
            }
            None => WITH_VERSION,
        },
    }
}
