//! The one declarative table of every directive nowait reads: its name, the
//! contexts it may appear in, how many arguments it takes, whether it opens a
//! block, whether it is implemented yet, and the function that applies it.
//!
//! The README's directive reference is generated from this table
//! (`nowait --directives`), and a test keeps the two in agreement.

use super::build::{Builder, Scope};
use super::syntax::Directive;
use super::{set_core, set_http, set_proxy, set_server};

/// Context bits, as nginx's `NGX_MAIN_CONF`, `NGX_HTTP_SRV_CONF`, ….
pub type Contexts = u8;
/// The main (top-level) context.
pub const MAIN: Contexts = 1;
/// Inside `events { }`.
pub const EVENTS: Contexts = 1 << 1;
/// Inside `http { }`.
pub const HTTP: Contexts = 1 << 2;
/// Inside `server { }`.
pub const SERVER: Contexts = 1 << 3;
/// Inside `location { }`.
pub const LOCATION: Contexts = 1 << 4;
/// Inside `upstream { }`.
pub const UPSTREAM: Contexts = 1 << 5;
/// http, server and location: the inherited settings.
pub const HSL: Contexts = HTTP | SERVER | LOCATION;
/// Every context (for `include`).
pub const ANY: Contexts = MAIN | EVENTS | HTTP | SERVER | LOCATION | UPSTREAM;

/// The names of the contexts, for the reference.
pub const CONTEXT_NAMES: [(Contexts, &str); 6] = [
    (MAIN, "main"),
    (EVENTS, "events"),
    (HTTP, "http"),
    (SERVER, "server"),
    (LOCATION, "location"),
    (UPSTREAM, "upstream"),
];

/// How many arguments a directive takes (after its name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Args {
    /// Exactly this many.
    Exactly(usize),
    /// Between the two, inclusive.
    Between(usize, usize),
    /// At least this many.
    AtLeast(usize),
}

impl Args {
    /// Whether `n` arguments fit.
    pub fn accepts(self, n: usize) -> bool {
        match self {
            Args::Exactly(k) => n == k,
            Args::Between(lo, hi) => (lo..=hi).contains(&n),
            Args::AtLeast(k) => n >= k,
        }
    }
}

/// Whether a directive works yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Implemented.
    Ready,
    /// Parsed and validated; starting the server with it fails until the
    /// caching-proxy release.
    NotYet,
}

/// What applies a directive: checks its arguments and records its value
/// in the scope; an `Err` is the message, to which the loader adds file:line.
pub type Setter = fn(&mut Builder, &mut Scope<'_>, &Directive) -> Result<(), String>;

/// One directive's entry.
pub struct Spec {
    /// The directive's name.
    pub name: &'static str,
    /// Where it may appear.
    pub contexts: Contexts,
    /// How many arguments it takes.
    pub args: Args,
    /// Whether it opens a block.
    pub block: bool,
    /// Implemented or not yet.
    pub status: Status,
    /// The function that applies it.
    pub set: Setter,
    /// Its syntax, for the reference.
    pub syntax: &'static str,
    /// Its default, for the reference (`—` for none).
    pub default: &'static str,
}

use Args::{AtLeast, Between, Exactly};
use Status::{NotYet, Ready};

macro_rules! spec {
    ($name:literal, $ctx:expr, $args:expr, $block:expr, $status:expr, $set:path, $syntax:literal, $default:literal) => {
        Spec {
            name: $name,
            contexts: $ctx,
            args: $args,
            block: $block,
            status: $status,
            set: $set,
            syntax: $syntax,
            default: $default,
        }
    };
}

/// Every directive. Two entries may share a name when their contexts differ
/// (`server` in `http` and in `upstream`). One line per directive, so the
/// table reads as a table: rustfmt would spread each entry over ten lines.
#[rustfmt::skip]
pub static DIRECTIVES: &[Spec] = &[
    // main
    spec!("worker_processes", MAIN, Exactly(1), false, Ready, set_core::worker_processes, "worker_processes number | auto;", "1"),
    spec!("user", MAIN, Between(1, 2), false, Ready, set_core::user, "user user [group];", "nobody"),
    spec!("daemon", MAIN, Exactly(1), false, Ready, set_core::daemon, "daemon on | off;", "on"),
    spec!("pid", MAIN, Exactly(1), false, Ready, set_core::pid, "pid file;", "logs/nowait.pid"),
    spec!("error_log", MAIN, Between(1, 2), false, Ready, set_core::error_log, "error_log file | stderr [level];", "logs/error.log error"),
    spec!("thread_pool", MAIN, Between(2, 3), false, Ready, set_core::thread_pool, "thread_pool name threads=number [max_queue=number];", "default threads=32 max_queue=65536"),
    spec!("include", ANY, Exactly(1), false, Ready, set_core::include, "include file | mask;", "—"),
    spec!("events", MAIN, Exactly(0), true, Ready, set_core::events, "events { ... }", "—"),
    spec!("http", MAIN, Exactly(0), true, Ready, set_http::http, "http { ... }", "—"),
    // events
    spec!("worker_connections", EVENTS, Exactly(1), false, Ready, set_core::worker_connections, "worker_connections number;", "512"),
    spec!("accept_mutex", EVENTS, Exactly(1), false, Ready, set_core::accept_mutex, "accept_mutex on | off;", "off"),
    spec!("multi_accept", EVENTS, Exactly(1), false, Ready, set_core::multi_accept, "multi_accept on | off;", "off"),
    spec!("use", EVENTS, Exactly(1), false, Ready, set_core::use_method, "use epoll;", "epoll"),
    // http
    spec!("server", HTTP, Exactly(0), true, Ready, set_server::server, "server { ... }", "—"),
    spec!("log_format", HTTP, AtLeast(2), false, Ready, set_http::log_format, "log_format name string ...;", "combined \"...\""),
    spec!("types", HSL, Exactly(0), true, Ready, set_http::types, "types { ... }", "text/html html; image/gif gif; image/jpeg jpg;"),
    spec!("default_type", HSL, Exactly(1), false, Ready, set_http::default_type, "default_type mime-type;", "text/plain"),
    spec!("access_log", HSL, AtLeast(1), false, Ready, set_http::access_log, "access_log path [format] | off;", "logs/access.log combined"),
    spec!("sendfile", HSL, Exactly(1), false, Ready, set_http::sendfile, "sendfile on | off;", "off"),
    spec!("sendfile_max_chunk", HSL, Exactly(1), false, Ready, set_http::sendfile_max_chunk, "sendfile_max_chunk size;", "2m"),
    spec!("tcp_nopush", HSL, Exactly(1), false, Ready, set_http::tcp_nopush, "tcp_nopush on | off;", "off"),
    spec!("tcp_nodelay", HSL, Exactly(1), false, Ready, set_http::tcp_nodelay, "tcp_nodelay on | off;", "on"),
    spec!("keepalive_timeout", HSL, Between(1, 2), false, Ready, set_http::keepalive_timeout, "keepalive_timeout timeout;", "75s"),
    spec!("keepalive_requests", HSL, Exactly(1), false, Ready, set_http::keepalive_requests, "keepalive_requests number;", "1000"),
    spec!("send_timeout", HSL, Exactly(1), false, Ready, set_http::send_timeout, "send_timeout time;", "60s"),
    spec!("client_max_body_size", HSL, Exactly(1), false, Ready, set_http::client_max_body_size, "client_max_body_size size;", "1m"),
    spec!("client_body_temp_path", HSL, Between(1, 4), false, Ready, set_http::client_body_temp_path, "client_body_temp_path path [level1 [level2 [level3]]];", "client_body_temp"),
    spec!("client_header_timeout", HTTP | SERVER, Exactly(1), false, Ready, set_http::client_header_timeout, "client_header_timeout time;", "60s"),
    spec!("client_header_buffer_size", HTTP | SERVER, Exactly(1), false, Ready, set_http::client_header_buffer_size, "client_header_buffer_size size;", "1k"),
    spec!("large_client_header_buffers", HTTP | SERVER, Exactly(2), false, Ready, set_http::large_client_header_buffers, "large_client_header_buffers number size;", "4 8k"),
    spec!("server_tokens", HSL, Exactly(1), false, Ready, set_http::server_tokens, "server_tokens on | off;", "on"),
    spec!("aio", HSL, Exactly(1), false, Ready, set_http::aio, "aio off | threads[=pool];", "off"),
    spec!("aio_fast_path", HSL, Exactly(1), false, Ready, set_http::aio_fast_path, "aio_fast_path on | off;", "on"),
    spec!("nowait_status", LOCATION, Exactly(0), false, Ready, set_server::nowait_status, "nowait_status;", "—"),
    spec!("aio_write", HSL, Exactly(1), false, Ready, set_http::aio_write, "aio_write on | off;", "on"),
    spec!("root", HSL, Exactly(1), false, Ready, set_http::root, "root path;", "html"),
    spec!("alias", LOCATION, Exactly(1), false, Ready, set_http::alias, "alias path;", "—"),
    spec!("index", HSL, AtLeast(1), false, Ready, set_http::index, "index file ...;", "index.html"),
    spec!("error_page", HSL, AtLeast(2), false, Ready, set_http::error_page, "error_page code ... [=[response]] uri;", "—"),
    spec!("add_header", HSL, Between(2, 3), false, Ready, set_http::add_header, "add_header name value [always];", "—"),
    // server
    spec!("listen", SERVER, AtLeast(1), false, Ready, set_server::listen, "listen address[:port] | port [default_server] [reuseport] [backlog=number] [rcvbuf=size] [sndbuf=size] [bind];", "*:80 | *:8000"),
    spec!("server_name", SERVER, AtLeast(1), false, Ready, set_server::server_name, "server_name name ...;", "\"\""),
    spec!("location", SERVER | LOCATION, Between(1, 2), true, Ready, set_server::location, "location [ = | ~ | ~* | ^~ ] uri { ... } | location @name { ... }", "—"),
    spec!("return", SERVER | LOCATION, Between(1, 2), false, Ready, set_server::return_, "return code [text] | code URL | URL;", "—"),
    // caching proxy: parsed and validated, served in a later release
    spec!("upstream", HTTP, Exactly(1), true, NotYet, set_proxy::upstream, "upstream name { ... }", "—"),
    spec!("server", UPSTREAM, AtLeast(1), false, NotYet, set_proxy::upstream_server, "server address [parameters];", "—"),
    spec!("split_clients", HTTP, Exactly(2), true, NotYet, set_proxy::split_clients, "split_clients string $variable { ... }", "—"),
    spec!("proxy_pass", LOCATION, Exactly(1), false, NotYet, set_proxy::proxy_pass, "proxy_pass URL;", "—"),
    spec!("proxy_cache_path", HTTP, AtLeast(2), false, NotYet, set_proxy::proxy_cache_path, "proxy_cache_path path [levels=levels] [use_temp_path=on|off] keys_zone=name:size [inactive=time] [max_size=size];", "—"),
    spec!("proxy_cache", HSL, Exactly(1), false, NotYet, set_proxy::proxy_cache, "proxy_cache zone | off;", "off"),
    spec!("proxy_cache_key", HSL, Exactly(1), false, NotYet, set_proxy::proxy_cache_key, "proxy_cache_key string;", "$scheme$proxy_host$request_uri"),
    spec!("proxy_cache_valid", HSL, AtLeast(1), false, NotYet, set_proxy::proxy_cache_valid, "proxy_cache_valid [code ...] time;", "—"),
];

/// The entries named `name`.
pub fn lookup(name: &str) -> impl Iterator<Item = &'static Spec> + use<'_> {
    DIRECTIVES.iter().filter(move |s| s.name == name)
}

/// The directive reference in Markdown, as the README carries it.
pub fn reference_markdown() -> String {
    let mut out = String::from(
        "| directive | syntax | default | contexts | status |\n|---|---|---|---|---|\n",
    );
    for s in DIRECTIVES {
        let ctx: Vec<&str> = CONTEXT_NAMES
            .iter()
            .filter(|(bit, _)| s.contexts & bit != 0)
            .map(|(_, n)| *n)
            .collect();
        let status = match s.status {
            Status::Ready => "yes",
            Status::NotYet => "parsed; not implemented yet",
        };
        out.push_str(&format!(
            "| `{}` | `{}` | `{}` | {} | {} |\n",
            s.name,
            s.syntax.replace('|', "\\|"),
            s.default.replace('|', "\\|"),
            ctx.join(", "),
            status
        ));
    }
    out
}
