//! Shared helpers for the black-box tests in `tests/`: they start real server
//! binaries and speak raw bytes to them over loopback TCP (or a unix-domain
//! socket, `listen unix:`). std only, so that the harness cannot hide a bug
//! behind a client library's leniency.
//!
//! - [`tmp`]: a fresh, unique directory per test, removed on drop.
//! - [`server`]: the [`Server`] guard that runs nowait or the real nginx with
//!   a configuration template (`{port}`, `{root}`, `{prefix}`) and kills it
//!   on drop.
//! - [`cached`]: a caching nowait in a directory the test keeps, with
//!   environment variables and its status page read as numbers.
//! - [`client`]: one connection kept across steps (send, read one
//!   response, see whether the server closed it), TCP or unix-domain.
//! - [`conf`]: the main and `events` sections around a test's `http` block.
//! - [`exchange`]: write raw request bytes, read the raw reply.
//! - [`response`]: split a byte stream into HTTP/1.x responses.
//! - [`request`]: find the methods in a raw byte stream of requests (the
//!   response parser needs them to know which responses answer `HEAD`).
//! - [`wait`]: bounded polling for effects that follow a request.
//! - [`upstream`]: a scripted upstream for the proxy's tests: raw bytes
//!   out, every request it receives recorded.
//! - [`proxy`]: configurations for the proxy tests (one server in front
//!   of scripted upstreams).
//! - [`fixture`]: the document root every test serves, with fixed mtimes.
//! - [`nginx_t`]: `nowait -t` against `nginx -t`, first `[emerg]` line.
//! - [`require`], [`require_or_skip!`]: what a test does when the machine
//!   lacks what it needs (root, a kernel feature, a second CPU): it fails
//!   under `NOWAIT_REQUIRE_ALL=1` (scripts/test.sh, CI), else says
//!   `SKIPPED: <test>: <reason>` on the terminal and returns. Never a
//!   silent early return.
//!
//! Each test crate uses a different subset of these helpers, so the unused
//! rest is not dead code.
#![allow(dead_code, unused_imports)]

pub mod cached;
pub mod client;
pub mod conf;
pub mod exchange;
pub mod fixture;
pub mod nginx_t;
pub mod proxy;
pub mod request;
pub mod response;
pub mod server;
pub mod tls;
pub mod tmp;
pub mod upstream;
pub mod wait;

pub use client::{Conn, State};
pub use conf::Conf;
pub use exchange::{Exchange, exchange, raw_exchange};
pub use fixture::Fixture;
pub use request::request_methods;
pub use response::{Parsed, Response, parse_responses};
pub use server::Server;
pub use tmp::TempDir;
pub use upstream::{Recorded, Upstream, UpstreamConn};

// The crate's own (`nowait::testing`), so that its unit tests and these
// tests skip and fail alike.
pub use nowait::testing::{require, say};
pub use nowait::{require_or_skip, test_name};

/// Whether the tests run as root (the privilege, fault and confinement
/// tests need it; CI runs them as root).
#[allow(dead_code)]
pub fn is_root() -> bool {
    nowait::sys::process::geteuid() == 0
}

/// `len` bytes of deterministic content in which every 4-byte-aligned
/// word differs from its neighbours (the offset, scrambled), so a
/// misplaced slice shows.
#[allow(dead_code)]
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len.div_ceil(4))
        .flat_map(|i| ((i as u32).wrapping_mul(2_654_435_761) ^ 0x9e37_79b9).to_le_bytes())
        .take(len)
        .collect()
}

/// A response body as text (lossy), for assertions.
#[allow(dead_code)]
pub fn body(r: &Response) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

/// A per-worker series of the status page at `/status`
/// (`nowait_NAME{worker=…}`), in worker order.
#[allow(dead_code)]
pub fn per_worker(port: u16, name: &str) -> Vec<u64> {
    let page = body(&client::get(port, "/status"));
    let prefix = format!("{name}{{worker=");
    page.lines()
        .filter(|l| l.starts_with(&prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .collect()
}

/// The server under test with `root` the fixture's and `extra` added to the
/// server block (see [`Server::tested`]).
#[allow(dead_code)]
pub fn serve(fixture: &Fixture, extra: &str) -> Server {
    let conf = Conf::server(&format!("root {{root}};\n{extra}"))
        .root(fixture.root())
        .render();
    Server::tested(&conf)
}
