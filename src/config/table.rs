//! The one declarative table of every directive nowait reads: its name, the
//! contexts it may appear in, how many arguments it takes, whether it opens a
//! block, whether it is implemented yet, and the function that applies it.
//!
//! The README's directive reference is generated from this table
//! (`nowait --directives`), and a test keeps the two in agreement.

use super::build::{Builder, Scope};
use super::syntax::Directive;
use super::{
    set_access, set_acme, set_autoindex, set_cache, set_cache_path, set_charset, set_core,
    set_core_http, set_gzip, set_headers, set_http, set_limit, set_log, set_map, set_max_headers,
    set_output, set_proxy, set_proxy_ssl, set_realip, set_rewrite, set_sched, set_server,
    set_split_clients, set_ssi, set_ssl, set_sub, set_upstream,
};

/// Context bits, as nginx's `NGX_MAIN_CONF`, `NGX_HTTP_SRV_CONF`, ….
pub type Contexts = u16;
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
/// Inside an `if` block of a server (nginx's `NGX_HTTP_SIF_CONF`).
pub const SIF: Contexts = 1 << 6;
/// Inside an `if` block of a location (nginx's `NGX_HTTP_LIF_CONF`).
pub const LIF: Contexts = 1 << 7;
/// Inside a `limit_except` block (nginx's `NGX_HTTP_LMT_CONF`).
pub const LMT: Contexts = 1 << 8;
/// Inside an `acme_issuer` block (nginx's ACME module).
pub const ACME_ISSUER: Contexts = 1 << 9;
/// http, server and location: the inherited settings.
pub const HSL: Contexts = HTTP | SERVER | LOCATION;
/// Where the rewrite module's instructions go: server, location, and the
/// `if` blocks of both.
pub const SCRIPT: Contexts = SERVER | SIF | LOCATION | LIF;
/// Every context (for `include`).
pub const ANY: Contexts =
    MAIN | EVENTS | HTTP | SERVER | LOCATION | UPSTREAM | SIF | LIF | LMT | ACME_ISSUER;

/// The names of the contexts, for the reference. An `if` in either place
/// is `if`; one only allowed in a location's is `if in location`.
pub const CONTEXT_NAMES: [(Contexts, &str); 9] = [
    (MAIN, "main"),
    (EVENTS, "events"),
    (HTTP, "http"),
    (SERVER, "server"),
    (LOCATION, "location"),
    (UPSTREAM, "upstream"),
    (SIF | LIF, "if"),
    (LMT, "limit_except"),
    (ACME_ISSUER, "acme_issuer"),
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
    /// Implemented: read at run time (`tests/directive_readers.rs` checks
    /// that code outside `config/` reads it).
    Ready,
    /// Accepted and checked as nginx checks it, and has no effect in nowait,
    /// for the reason given: it sizes nginx's own memory (a hash, a pool) or
    /// does nothing on Linux in nginx either. The reference says so, and
    /// `-t` says so for every use (`[notice]`).
    NoEffect(&'static str),
    /// Parsed and validated; starting the server with it fails until the
    /// release that serves it.
    NotYet,
}

/// Why a `*_hash_max_size` / `*_hash_bucket_size` directive has no effect.
const HASH: &str = "it sizes one of nginx's hash tables; nowait's tables grow as needed, so there is nothing to size and no list is refused for outgrowing it";
/// Why a `*_hash_max_size` / `*_hash_bucket_size` directive whose hash
/// nginx builds from the configuration has no effect beyond its checks.
const HASH_CHECKED: &str = "it sizes one of nginx's hash tables; nowait's tables grow as needed, so there is nothing to size, but a list is checked against the sizes as nginx checks it (the same [emerg] and [warn])";
/// Why a `*_pool_size` directive has no effect.
const POOL: &str =
    "it sizes nginx's memory pools; nowait allocates what a connection or request needs";

/// Why `acme_shared_zone` has no effect.
const ACME_ZONE: &str = "it sizes the shared memory nginx's ACME module keeps certificates, keys and challenges in; nowait keeps them in the process's memory, which grows as needed";

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
#[allow(unused_imports)] // no row is `NotYet` today; rows to come may be
use Status::{NoEffect, NotYet, Ready};

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
    spec!("worker_rlimit_nofile", MAIN, Exactly(1), false, Ready, set_core_http::worker_rlimit_nofile, "worker_rlimit_nofile number;", "—"),
    spec!("worker_priority", MAIN, Exactly(1), false, Ready, set_sched::worker_priority, "worker_priority number;", "0"),
    spec!("worker_cpu_affinity", MAIN, AtLeast(1), false, Ready, set_sched::worker_cpu_affinity, "worker_cpu_affinity cpumask ... | auto [cpumask];", "—"),
    spec!("env", MAIN, Exactly(1), false, Ready, set_core::env, "env variable[=value];", "TZ"),
    spec!("worker_shutdown_timeout", MAIN, Exactly(1), false, Ready, set_core_http::worker_shutdown_timeout, "worker_shutdown_timeout time;", "—"),
    // events
    spec!("worker_connections", EVENTS, Exactly(1), false, Ready, set_core::worker_connections, "worker_connections number;", "512"),
    spec!("accept_mutex", EVENTS, Exactly(1), false, Ready, set_core::accept_mutex, "accept_mutex on | off;", "off"),
    spec!("accept_mutex_delay", EVENTS, Exactly(1), false, Ready, set_core::accept_mutex_delay, "accept_mutex_delay time;", "500ms"),
    spec!("multi_accept", EVENTS, Exactly(1), false, Ready, set_core::multi_accept, "multi_accept on | off;", "off"),
    spec!("loop_turn_budget", EVENTS, Exactly(1), false, Ready, set_core::loop_turn_budget, "loop_turn_budget time | off;", "250us"),
    spec!("use", EVENTS, Exactly(1), false, Ready, set_core::use_method, "use epoll;", "epoll"),
    // http
    spec!("server", HTTP, Exactly(0), true, Ready, set_server::server, "server { ... }", "—"),
    spec!("log_format", HTTP, AtLeast(2), false, Ready, set_log::log_format, "log_format name string ...;", "combined \"...\""),
    spec!("types", HSL, Exactly(0), true, Ready, set_http::types, "types { ... }", "text/html html; image/gif gif; image/jpeg jpg;"),
    spec!("default_type", HSL, Exactly(1), false, Ready, set_http::default_type, "default_type mime-type;", "text/plain"),
    spec!("access_log", HSL | LIF | LMT, AtLeast(1), false, Ready, set_log::access_log, "access_log path [format [buffer=size] [gzip[=level]] [flush=time] [if=condition]] | off;", "logs/access.log combined"),
    spec!("sendfile", HSL | LIF, Exactly(1), false, Ready, set_http::sendfile, "sendfile on | off;", "off"),
    spec!("directio", HSL, Exactly(1), false, Ready, set_http::directio, "directio size | off;", "off"),
    spec!("directio_alignment", HSL, Exactly(1), false, Ready, set_http::directio_alignment, "directio_alignment size;", "512"),
    spec!("sendfile_max_chunk", HSL, Exactly(1), false, Ready, set_http::sendfile_max_chunk, "sendfile_max_chunk size;", "2m"),
    spec!("tcp_nopush", HSL, Exactly(1), false, Ready, set_http::tcp_nopush, "tcp_nopush on | off;", "off"),
    spec!("tcp_nodelay", HSL, Exactly(1), false, Ready, set_http::tcp_nodelay, "tcp_nodelay on | off;", "on"),
    spec!("keepalive_timeout", HSL, Between(1, 2), false, Ready, set_core_http::keepalive_timeout, "keepalive_timeout timeout [header_timeout];", "75s"),
    spec!("keepalive_requests", HSL, Exactly(1), false, Ready, set_http::keepalive_requests, "keepalive_requests number;", "1000"),
    spec!("send_timeout", HSL, Exactly(1), false, Ready, set_http::send_timeout, "send_timeout time;", "60s"),
    spec!("client_max_body_size", HSL, Exactly(1), false, Ready, set_http::client_max_body_size, "client_max_body_size size;", "1m"),
    spec!("client_body_temp_path", HSL, Between(1, 4), false, Ready, set_http::client_body_temp_path, "client_body_temp_path path [level1 [level2 [level3]]];", "client_body_temp"),
    spec!("client_header_timeout", HTTP | SERVER, Exactly(1), false, Ready, set_http::client_header_timeout, "client_header_timeout time;", "60s"),
    spec!("client_header_buffer_size", HTTP | SERVER, Exactly(1), false, Ready, set_http::client_header_buffer_size, "client_header_buffer_size size;", "1k"),
    spec!("large_client_header_buffers", HTTP | SERVER, Exactly(2), false, Ready, set_http::large_client_header_buffers, "large_client_header_buffers number size;", "4 8k"),
    spec!("server_tokens", HSL, Exactly(1), false, Ready, set_core_http::server_tokens, "server_tokens on | off | build;", "on"),
    spec!("aio", HSL, Exactly(1), false, Ready, set_http::aio, "aio off | threads[=pool];", "off"),
    spec!("aio_fast_path", HSL, Exactly(1), false, Ready, set_http::aio_fast_path, "aio_fast_path on | off;", "on"),
    spec!("nowait_status", LOCATION, Exactly(0), false, Ready, set_server::nowait_status, "nowait_status;", "—"),
    spec!("aio_write", HSL, Exactly(1), false, Ready, set_http::aio_write, "aio_write on | off;", "on"),
    spec!("root", HSL | LIF, Exactly(1), false, Ready, set_http::root, "root path;", "html"),
    spec!("alias", LOCATION, Exactly(1), false, Ready, set_http::alias, "alias path;", "—"),
    spec!("index", HSL, AtLeast(1), false, Ready, set_http::index, "index file ...;", "index.html"),
    spec!("error_page", HSL | LIF, AtLeast(2), false, Ready, set_http::error_page, "error_page code ... [=[response]] uri;", "—"),
    spec!("add_header", HSL | LIF, Between(2, 3), false, Ready, set_http::add_header, "add_header name value [always];", "—"),
    spec!("output_buffers", HSL, Exactly(2), false, Ready, set_output::output_buffers, "output_buffers number size;", "2 32k"),
    spec!("postpone_output", HSL, Exactly(1), false, Ready, set_output::postpone_output, "postpone_output size;", "1460"),
    spec!("subrequest_output_buffer_size", HSL, Exactly(1), false, Ready, set_output::subrequest_output_buffer_size, "subrequest_output_buffer_size size;", "4k"),
    // headers filter
    spec!("expires", HSL | LIF, Between(1, 2), false, Ready, set_headers::expires, "expires [modified] time | epoch | max | off;", "off"),
    spec!("add_trailer", HSL | LIF, Between(2, 3), false, Ready, set_headers::add_trailer, "add_trailer name value [always];", "—"),
    // http core: the everyday directives
    spec!("error_log", HSL, Between(1, 2), false, Ready, set_core_http::error_log, "error_log file | stderr [level];", "logs/error.log error"),
    spec!("log_not_found", HSL, Exactly(1), false, Ready, set_core_http::log_not_found, "log_not_found on | off;", "on"),
    spec!("log_subrequest", HSL, Exactly(1), false, Ready, set_core_http::log_subrequest, "log_subrequest on | off;", "off"),
    spec!("if_modified_since", HSL, Exactly(1), false, Ready, set_core_http::if_modified_since, "if_modified_since off | exact | before;", "exact"),
    spec!("etag", HSL, Exactly(1), false, Ready, set_core_http::etag, "etag on | off;", "on"),
    spec!("chunked_transfer_encoding", HSL, Exactly(1), false, Ready, set_core_http::chunked_transfer_encoding, "chunked_transfer_encoding on | off;", "on"),
    spec!("absolute_redirect", HSL, Exactly(1), false, Ready, set_core_http::absolute_redirect, "absolute_redirect on | off;", "on"),
    spec!("port_in_redirect", HSL, Exactly(1), false, Ready, set_core_http::port_in_redirect, "port_in_redirect on | off;", "on"),
    spec!("server_name_in_redirect", HSL, Exactly(1), false, Ready, set_core_http::server_name_in_redirect, "server_name_in_redirect on | off;", "off"),
    spec!("msie_padding", HSL, Exactly(1), false, Ready, set_core_http::msie_padding, "msie_padding on | off;", "on"),
    spec!("msie_refresh", HSL, Exactly(1), false, Ready, set_core_http::msie_refresh, "msie_refresh on | off;", "off"),
    spec!("internal", LOCATION, Exactly(0), false, Ready, set_core_http::internal, "internal;", "—"),
    spec!("try_files", SERVER | LOCATION, AtLeast(2), false, Ready, set_core_http::try_files, "try_files file ... uri | file ... =code;", "—"),
    spec!("limit_rate", HSL | LIF, Exactly(1), false, Ready, set_core_http::limit_rate, "limit_rate rate;", "0"),
    spec!("limit_rate_after", HSL | LIF, Exactly(1), false, Ready, set_core_http::limit_rate, "limit_rate_after size;", "0"),
    spec!("keepalive_time", HSL, Exactly(1), false, Ready, set_core_http::keepalive_time, "keepalive_time time;", "1h"),
    spec!("keepalive_disable", HSL, Between(1, 2), false, Ready, set_core_http::keepalive_disable, "keepalive_disable none | browser ...;", "msie6"),
    spec!("lingering_close", HSL, Exactly(1), false, Ready, set_core_http::lingering_close, "lingering_close off | on | always;", "on"),
    spec!("lingering_time", HSL, Exactly(1), false, Ready, set_core_http::lingering_time, "lingering_time time;", "30s"),
    spec!("lingering_timeout", HSL, Exactly(1), false, Ready, set_core_http::lingering_timeout, "lingering_timeout time;", "5s"),
    spec!("reset_timedout_connection", HSL, Exactly(1), false, Ready, set_core_http::reset_timedout_connection, "reset_timedout_connection on | off;", "off"),
    spec!("send_lowat", HSL, Exactly(1), false, NoEffect("Linux has no SO_SNDLOWAT to set: nginx ignores it there too, with the same warning"), set_core_http::send_lowat, "send_lowat size;", "0"),
    spec!("read_ahead", HSL, Exactly(1), false, Ready, set_core_http::read_ahead, "read_ahead size;", "0"),
    spec!("recursive_error_pages", HSL, Exactly(1), false, Ready, set_core_http::recursive_error_pages, "recursive_error_pages on | off;", "off"),
    spec!("disable_symlinks", HSL, Between(1, 2), false, Ready, set_core_http::disable_symlinks, "disable_symlinks off | on | if_not_owner [from=part];", "off"),
    spec!("open_file_cache", HSL, Between(1, 2), false, Ready, set_core_http::open_file_cache, "open_file_cache off | max=N [inactive=time];", "off"),
    spec!("open_file_cache_valid", HSL, Exactly(1), false, Ready, set_core_http::open_file_cache_valid, "open_file_cache_valid time;", "60s"),
    spec!("open_file_cache_min_uses", HSL, Exactly(1), false, Ready, set_core_http::open_file_cache_min_uses, "open_file_cache_min_uses number;", "1"),
    spec!("open_file_cache_errors", HSL, Exactly(1), false, Ready, set_core_http::open_file_cache_errors, "open_file_cache_errors on | off;", "off"),
    spec!("open_file_cache_events", HSL, Exactly(1), false, NoEffect("nginx uses it only with kqueue (BSD); on Linux it does nothing in nginx either"), set_core_http::open_file_cache_events, "open_file_cache_events on | off;", "off"),
    spec!("types_hash_max_size", HSL, Exactly(1), false, NoEffect(HASH), set_core_http::types_hash_max_size, "types_hash_max_size size;", "1024"),
    spec!("types_hash_bucket_size", HSL, Exactly(1), false, NoEffect(HASH), set_core_http::types_hash_bucket_size, "types_hash_bucket_size size;", "64"),
    spec!("variables_hash_max_size", HTTP, Exactly(1), false, NoEffect(HASH), set_core_http::variables_hash, "variables_hash_max_size size;", "1024"),
    spec!("variables_hash_bucket_size", HTTP, Exactly(1), false, NoEffect(HASH), set_core_http::variables_hash, "variables_hash_bucket_size size;", "64"),
    spec!("connection_pool_size", HTTP | SERVER, Exactly(1), false, NoEffect(POOL), set_core_http::connection_pool_size, "connection_pool_size size;", "512"),
    spec!("request_pool_size", HTTP | SERVER, Exactly(1), false, NoEffect(POOL), set_core_http::request_pool_size, "request_pool_size size;", "4k"),
    spec!("ignore_invalid_headers", HTTP | SERVER, Exactly(1), false, Ready, set_core_http::ignore_invalid_headers, "ignore_invalid_headers on | off;", "on"),
    spec!("underscores_in_headers", HTTP | SERVER, Exactly(1), false, Ready, set_core_http::underscores_in_headers, "underscores_in_headers on | off;", "off"),
    spec!("max_headers", HTTP | SERVER, Exactly(1), false, Ready, set_max_headers::max_headers, "max_headers number;", "1000"),
    spec!("resolver", HSL, AtLeast(1), false, Ready, set_core_http::resolver, "resolver address ... [valid=time] [ipv6=on|off];", "—"),
    spec!("resolver_timeout", HSL, Exactly(1), false, Ready, set_core_http::resolver_timeout, "resolver_timeout time;", "30s"),
    spec!("open_log_file_cache", HSL, Between(1, 4), false, Ready, set_log::open_log_file_cache, "open_log_file_cache max=N [inactive=time] [min_uses=N] [valid=time] | off;", "off"),
    // server
    spec!("listen", SERVER, AtLeast(1), false, Ready, set_server::listen, "listen address[:port] | port | unix:path [default_server] [reuseport] [backlog=number] [rcvbuf=size] [sndbuf=size] [deferred] [bind] [ipv6only=on|off] [fastopen=number] [so_keepalive=on|off|[keepidle]:[keepintvl]:[keepcnt]];", "*:80 | *:8000"),
    spec!("server_name", SERVER, AtLeast(1), false, Ready, set_server::server_name, "server_name name ...;", "\"\""),
    spec!("location", SERVER | LOCATION, Between(1, 2), true, Ready, set_server::location, "location [ = | ~ | ~* | ^~ ] uri { ... } | location @name { ... }", "—"),
    spec!("merge_slashes", HTTP | SERVER, Exactly(1), false, Ready, set_http::merge_slashes, "merge_slashes on | off;", "on"),
    spec!("server_names_hash_max_size", HTTP, Exactly(1), false, NoEffect(HASH), set_http::server_names_hash_max_size, "server_names_hash_max_size size;", "512"),
    spec!("server_names_hash_bucket_size", HTTP, Exactly(1), false, NoEffect(HASH), set_http::server_names_hash_bucket_size, "server_names_hash_bucket_size size;", "32 | 64 | 128"),
    // ssl (TLS on the client side)
    spec!("ssl", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl, "ssl on | off;", "off"),
    spec!("ssl_certificate", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_certificate, "ssl_certificate file;", "—"),
    spec!("ssl_certificate_key", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_certificate_key, "ssl_certificate_key file;", "—"),
    spec!("ssl_password_file", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_password_file, "ssl_password_file file;", "—"),
    spec!("ssl_dhparam", HTTP | SERVER, Exactly(1), false, NoEffect("rustls has no finite-field Diffie-Hellman key exchange: the file is read and checked as nginx checks it, and the DHE cipher suites it would enable are not offered"), set_ssl::ssl_dhparam, "ssl_dhparam file;", "—"),
    spec!("ssl_ecdh_curve", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_ecdh_curve, "ssl_ecdh_curve curve;", "auto"),
    spec!("ssl_protocols", HTTP | SERVER, AtLeast(1), false, Ready, set_ssl::ssl_protocols, "ssl_protocols [SSLv2] [SSLv3] [TLSv1] [TLSv1.1] [TLSv1.2] [TLSv1.3];", "TLSv1 TLSv1.1 TLSv1.2"),
    spec!("ssl_ciphers", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_ciphers, "ssl_ciphers ciphers;", "HIGH:!aNULL:!MD5"),
    spec!("ssl_prefer_server_ciphers", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_prefer_server_ciphers, "ssl_prefer_server_ciphers on | off;", "off"),
    spec!("ssl_buffer_size", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_buffer_size, "ssl_buffer_size size;", "16k"),
    spec!("ssl_session_cache", HTTP | SERVER, Between(1, 2), false, Ready, set_ssl::ssl_session_cache, "ssl_session_cache off | none | [builtin[:size]] [shared:name:size];", "none"),
    spec!("ssl_session_timeout", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_session_timeout, "ssl_session_timeout time;", "5m"),
    spec!("ssl_session_tickets", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_session_tickets, "ssl_session_tickets on | off;", "on"),
    spec!("ssl_session_ticket_key", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_session_ticket_key, "ssl_session_ticket_key file;", "—"),
    spec!("ssl_verify_client", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_verify_client, "ssl_verify_client on | off | optional | optional_no_ca;", "off"),
    spec!("ssl_verify_depth", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_verify_depth, "ssl_verify_depth number;", "1"),
    spec!("ssl_client_certificate", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_client_certificate, "ssl_client_certificate file;", "—"),
    spec!("ssl_trusted_certificate", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_trusted_certificate, "ssl_trusted_certificate file;", "—"),
    spec!("ssl_crl", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_crl, "ssl_crl file;", "—"),
    spec!("ssl_stapling", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_stapling, "ssl_stapling on | off;", "off"),
    spec!("ssl_stapling_file", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_stapling_file, "ssl_stapling_file file;", "—"),
    spec!("ssl_stapling_responder", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_stapling_responder, "ssl_stapling_responder url;", "—"),
    spec!("ssl_stapling_verify", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_stapling_verify, "ssl_stapling_verify on | off;", "off"),
    spec!("ssl_ocsp", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_ocsp, "ssl_ocsp on | off | leaf;", "off"),
    spec!("ssl_ocsp_responder", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_ocsp_responder, "ssl_ocsp_responder url;", "—"),
    spec!("ssl_ocsp_cache", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_ocsp_cache, "ssl_ocsp_cache off | [shared:]name:size;", "off"),
    spec!("ssl_early_data", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_early_data, "ssl_early_data on | off;", "off"),
    spec!("ssl_reject_handshake", HTTP | SERVER, Exactly(1), false, Ready, set_ssl::ssl_reject_handshake, "ssl_reject_handshake on | off;", "off"),
    spec!("ssl_conf_command", HTTP | SERVER, Exactly(2), false, Ready, set_ssl::ssl_conf_command, "ssl_conf_command name value;", "—"),
    // rewrite
    spec!("rewrite", SCRIPT, Between(2, 3), false, Ready, set_rewrite::rewrite, "rewrite regex replacement [last | break | redirect | permanent];", "—"),
    spec!("return", SCRIPT, Between(1, 2), false, Ready, set_rewrite::return_, "return code [text] | code URL | URL;", "—"),
    spec!("break", SCRIPT, Exactly(0), false, Ready, set_rewrite::break_, "break;", "—"),
    spec!("if", SERVER | LOCATION, AtLeast(1), true, Ready, set_rewrite::if_, "if (condition) { ... }", "—"),
    spec!("set", SCRIPT, Exactly(2), false, Ready, set_rewrite::set, "set $variable value;", "—"),
    spec!("rewrite_log", HSL | SIF | LIF, Exactly(1), false, Ready, set_rewrite::rewrite_log, "rewrite_log on | off;", "off"),
    spec!("uninitialized_variable_warn", HSL | SIF | LIF, Exactly(1), false, Ready, set_rewrite::uninitialized_variable_warn, "uninitialized_variable_warn on | off;", "on"),
    // map, split_clients
    spec!("map", HTTP, Exactly(2), true, Ready, set_map::map, "map string $variable { ... }", "—"),
    spec!("map_hash_max_size", HTTP, Exactly(1), false, NoEffect(HASH_CHECKED), set_map::map_hash_max_size, "map_hash_max_size size;", "2048"),
    spec!("map_hash_bucket_size", HTTP, Exactly(1), false, NoEffect(HASH_CHECKED), set_map::map_hash_bucket_size, "map_hash_bucket_size size;", "32 | 64 | 128"),
    spec!("split_clients", HTTP, Exactly(2), true, Ready, set_split_clients::split_clients, "split_clients string $variable { ... }", "—"),
    // request bodies: parsed and validated, honoured with the proxy
    spec!("client_body_buffer_size", HSL, Exactly(1), false, Ready, set_proxy::client_body_buffer_size, "client_body_buffer_size size;", "8k"),
    spec!("client_body_timeout", HSL, Exactly(1), false, Ready, set_proxy::client_body_timeout, "client_body_timeout time;", "60s"),
    spec!("client_body_in_file_only", HSL, Exactly(1), false, Ready, set_proxy::client_body_in_file_only, "client_body_in_file_only on | clean | off;", "off"),
    spec!("client_body_in_single_buffer", HSL, Exactly(1), false, NoEffect("nowait always keeps a request body held in memory in one buffer"), set_proxy::client_body_in_single_buffer, "client_body_in_single_buffer on | off;", "off"),
    // upstream groups: parsed and validated, served with the proxy
    spec!("upstream", HTTP, Exactly(1), true, Ready, set_upstream::upstream, "upstream name { ... }", "—"),
    spec!("server", UPSTREAM, AtLeast(1), false, Ready, set_upstream::upstream_server, "server address [weight=number] [max_conns=number] [max_fails=number] [fail_timeout=time] [backup] [down];", "—"),
    spec!("hash", UPSTREAM, Between(1, 2), false, Ready, set_upstream::hash, "hash key [consistent];", "—"),
    spec!("ip_hash", UPSTREAM, Exactly(0), false, Ready, set_upstream::ip_hash, "ip_hash;", "—"),
    spec!("least_conn", UPSTREAM, Exactly(0), false, Ready, set_upstream::least_conn, "least_conn;", "—"),
    spec!("random", UPSTREAM, Between(0, 2), false, Ready, set_upstream::random, "random [two [least_conn]];", "—"),
    spec!("keepalive", UPSTREAM, Exactly(1), false, Ready, set_upstream::keepalive, "keepalive connections;", "—"),
    spec!("keepalive_requests", UPSTREAM, Exactly(1), false, Ready, set_upstream::keepalive_requests, "keepalive_requests number;", "1000"),
    spec!("keepalive_timeout", UPSTREAM, Exactly(1), false, Ready, set_upstream::keepalive_timeout, "keepalive_timeout timeout;", "60s"),
    spec!("keepalive_time", UPSTREAM, Exactly(1), false, Ready, set_upstream::keepalive_time, "keepalive_time time;", "1h"),
    spec!("zone", UPSTREAM, Between(1, 2), false, NoEffect("nowait's workers are threads of one process, so a group's state (failures, connection counts, max_conns) is shared by all of them with or without a zone, as nginx shares it with one"), set_upstream::zone, "zone name [size];", "—"),
    // reverse proxy: parsed and validated, served in a later release
    spec!("proxy_pass", LOCATION | LIF | LMT, Exactly(1), false, Ready, set_proxy::proxy_pass, "proxy_pass URL;", "—"),
    spec!("proxy_redirect", HSL, Between(1, 2), false, Ready, set_proxy::proxy_redirect, "proxy_redirect default | off | redirect replacement;", "default"),
    spec!("proxy_set_header", HSL, Exactly(2), false, Ready, set_proxy::proxy_set_header, "proxy_set_header field value;", "Host $proxy_host; Connection close;"),
    spec!("proxy_hide_header", HSL, Exactly(1), false, Ready, set_proxy::proxy_hide_header, "proxy_hide_header field;", "—"),
    spec!("proxy_pass_header", HSL, Exactly(1), false, Ready, set_proxy::proxy_pass_header, "proxy_pass_header field;", "—"),
    spec!("proxy_ignore_headers", HSL, AtLeast(1), false, Ready, set_proxy::proxy_ignore_headers, "proxy_ignore_headers field ...;", "—"),
    spec!("proxy_pass_request_headers", HSL, Exactly(1), false, Ready, set_proxy::proxy_pass_request_headers, "proxy_pass_request_headers on | off;", "on"),
    spec!("proxy_pass_request_body", HSL, Exactly(1), false, Ready, set_proxy::proxy_pass_request_body, "proxy_pass_request_body on | off;", "on"),
    spec!("proxy_set_body", HSL, Exactly(1), false, Ready, set_proxy::proxy_set_body, "proxy_set_body value;", "—"),
    spec!("proxy_method", HSL, Exactly(1), false, Ready, set_proxy::proxy_method, "proxy_method method;", "—"),
    spec!("proxy_http_version", HSL, Exactly(1), false, Ready, set_proxy::proxy_http_version, "proxy_http_version 1.0 | 1.1;", "1.0"),
    spec!("proxy_intercept_errors", HSL, Exactly(1), false, Ready, set_proxy::proxy_intercept_errors, "proxy_intercept_errors on | off;", "off"),
    spec!("proxy_buffering", HSL, Exactly(1), false, Ready, set_proxy::proxy_buffering, "proxy_buffering on | off;", "on"),
    spec!("proxy_request_buffering", HSL, Exactly(1), false, Ready, set_proxy::proxy_request_buffering, "proxy_request_buffering on | off;", "on"),
    spec!("proxy_buffer_size", HSL, Exactly(1), false, Ready, set_proxy::proxy_buffer_size, "proxy_buffer_size size;", "4k"),
    spec!("proxy_buffers", HSL, Exactly(2), false, Ready, set_proxy::proxy_buffers, "proxy_buffers number size;", "8 4k"),
    spec!("proxy_busy_buffers_size", HSL, Exactly(1), false, Ready, set_proxy::proxy_busy_buffers_size, "proxy_busy_buffers_size size;", "8k"),
    spec!("proxy_max_temp_file_size", HSL, Exactly(1), false, Ready, set_proxy::proxy_max_temp_file_size, "proxy_max_temp_file_size size;", "1024m"),
    spec!("proxy_temp_file_write_size", HSL, Exactly(1), false, Ready, set_proxy::proxy_temp_file_write_size, "proxy_temp_file_write_size size;", "8k"),
    spec!("proxy_temp_path", HSL, Between(1, 4), false, Ready, set_proxy::proxy_temp_path, "proxy_temp_path path [level1 [level2 [level3]]];", "proxy_temp 1 2"),
    spec!("proxy_connect_timeout", HSL, Exactly(1), false, Ready, set_proxy::proxy_connect_timeout, "proxy_connect_timeout time;", "60s"),
    spec!("proxy_read_timeout", HSL, Exactly(1), false, Ready, set_proxy::proxy_read_timeout, "proxy_read_timeout time;", "60s"),
    spec!("proxy_send_timeout", HSL, Exactly(1), false, Ready, set_proxy::proxy_send_timeout, "proxy_send_timeout time;", "60s"),
    spec!("proxy_limit_rate", HSL, Exactly(1), false, Ready, set_proxy::proxy_limit_rate, "proxy_limit_rate rate;", "0"),
    spec!("proxy_next_upstream", HSL, AtLeast(1), false, Ready, set_proxy::proxy_next_upstream, "proxy_next_upstream error | timeout | invalid_header | http_500 | http_502 | http_503 | http_504 | http_403 | http_404 | http_429 | non_idempotent | off ...;", "error timeout"),
    spec!("proxy_next_upstream_tries", HSL, Exactly(1), false, Ready, set_proxy::proxy_next_upstream_tries, "proxy_next_upstream_tries number;", "0"),
    spec!("proxy_next_upstream_timeout", HSL, Exactly(1), false, Ready, set_proxy::proxy_next_upstream_timeout, "proxy_next_upstream_timeout time;", "0"),
    spec!("proxy_force_ranges", HSL, Exactly(1), false, Ready, set_proxy::proxy_force_ranges, "proxy_force_ranges on | off;", "off"),
    spec!("proxy_socket_keepalive", HSL, Exactly(1), false, Ready, set_proxy::proxy_socket_keepalive, "proxy_socket_keepalive on | off;", "off"),
    spec!("proxy_ignore_client_abort", HSL, Exactly(1), false, Ready, set_proxy::proxy_ignore_client_abort, "proxy_ignore_client_abort on | off;", "off"),
    spec!("proxy_headers_hash_max_size", HSL, Exactly(1), false, NoEffect(HASH_CHECKED), set_proxy::proxy_headers_hash_max_size, "proxy_headers_hash_max_size size;", "512"),
    spec!("proxy_headers_hash_bucket_size", HSL, Exactly(1), false, NoEffect(HASH_CHECKED), set_proxy::proxy_headers_hash_bucket_size, "proxy_headers_hash_bucket_size size;", "64"),
    // proxy over TLS (`proxy_pass https://…`)
    spec!("proxy_ssl_session_reuse", HSL, Exactly(1), false, Ready, set_proxy_ssl::proxy_ssl_session_reuse, "proxy_ssl_session_reuse on | off;", "on"),
    spec!("proxy_ssl_protocols", HSL, AtLeast(1), false, Ready, set_proxy_ssl::proxy_ssl_protocols, "proxy_ssl_protocols [SSLv2] [SSLv3] [TLSv1] [TLSv1.1] [TLSv1.2] [TLSv1.3];", "TLSv1 TLSv1.1 TLSv1.2"),
    spec!("proxy_ssl_ciphers", HSL, Exactly(1), false, Ready, set_proxy_ssl::proxy_ssl_ciphers, "proxy_ssl_ciphers ciphers;", "DEFAULT"),
    spec!("proxy_ssl_name", HSL, Exactly(1), false, Ready, set_proxy_ssl::proxy_ssl_name, "proxy_ssl_name name;", "$proxy_host"),
    spec!("proxy_ssl_server_name", HSL, Exactly(1), false, Ready, set_proxy_ssl::proxy_ssl_server_name, "proxy_ssl_server_name on | off;", "off"),
    spec!("proxy_ssl_verify", HSL, Exactly(1), false, Ready, set_proxy_ssl::proxy_ssl_verify, "proxy_ssl_verify on | off;", "off"),
    spec!("proxy_ssl_verify_depth", HSL, Exactly(1), false, Ready, set_proxy_ssl::proxy_ssl_verify_depth, "proxy_ssl_verify_depth number;", "1"),
    spec!("proxy_ssl_trusted_certificate", HSL, Exactly(1), false, Ready, set_proxy_ssl::proxy_ssl_trusted_certificate, "proxy_ssl_trusted_certificate file;", "—"),
    spec!("proxy_ssl_crl", HSL, Exactly(1), false, Ready, set_proxy_ssl::proxy_ssl_crl, "proxy_ssl_crl file;", "—"),
    spec!("proxy_ssl_certificate", HSL, Exactly(1), false, Ready, set_proxy_ssl::proxy_ssl_certificate, "proxy_ssl_certificate file;", "—"),
    spec!("proxy_ssl_certificate_key", HSL, Exactly(1), false, Ready, set_proxy_ssl::proxy_ssl_certificate_key, "proxy_ssl_certificate_key file;", "—"),
    spec!("proxy_ssl_password_file", HSL, Exactly(1), false, Ready, set_proxy_ssl::proxy_ssl_password_file, "proxy_ssl_password_file file;", "—"),
    spec!("proxy_ssl_conf_command", HSL, Exactly(2), false, Ready, set_proxy_ssl::proxy_ssl_conf_command, "proxy_ssl_conf_command name value;", "—"),
    // proxy cache and store: parsed and validated, served with the cache engine
    spec!("proxy_cache_path", HTTP, AtLeast(2), false, Ready, set_cache_path::proxy_cache_path, "proxy_cache_path path [levels=levels] [use_temp_path=on|off] keys_zone=name:size [inactive=time] [max_size=size] [min_free=size] [manager_files=number] [manager_sleep=time] [manager_threshold=time] [loader_files=number] [loader_sleep=time] [loader_threshold=time];", "—"),
    spec!("proxy_cache", HSL, Exactly(1), false, Ready, set_cache::proxy_cache, "proxy_cache zone | off;", "off"),
    spec!("proxy_cache_key", HSL, Exactly(1), false, Ready, set_cache::proxy_cache_key, "proxy_cache_key string;", "$scheme$proxy_host$request_uri"),
    spec!("proxy_cache_valid", HSL, AtLeast(1), false, Ready, set_cache::proxy_cache_valid, "proxy_cache_valid [code ...] time;", "—"),
    spec!("proxy_cache_methods", HSL, AtLeast(1), false, Ready, set_cache::proxy_cache_methods, "proxy_cache_methods GET | HEAD | POST ...;", "GET HEAD"),
    spec!("proxy_cache_convert_head", HSL, Exactly(1), false, Ready, set_cache::proxy_cache_convert_head, "proxy_cache_convert_head on | off;", "on"),
    spec!("proxy_cache_min_uses", HSL, Exactly(1), false, Ready, set_cache::proxy_cache_min_uses, "proxy_cache_min_uses number;", "1"),
    spec!("proxy_cache_bypass", HSL, AtLeast(1), false, Ready, set_cache::proxy_cache_bypass, "proxy_cache_bypass string ...;", "—"),
    spec!("proxy_no_cache", HSL, AtLeast(1), false, Ready, set_cache::proxy_no_cache, "proxy_no_cache string ...;", "—"),
    spec!("proxy_cache_use_stale", HSL, AtLeast(1), false, Ready, set_cache::proxy_cache_use_stale, "proxy_cache_use_stale error | timeout | invalid_header | updating | http_500 | http_502 | http_503 | http_504 | http_403 | http_404 | http_429 | off ...;", "off"),
    spec!("proxy_cache_background_update", HSL, Exactly(1), false, Ready, set_cache::proxy_cache_background_update, "proxy_cache_background_update on | off;", "off"),
    spec!("proxy_cache_revalidate", HSL, Exactly(1), false, Ready, set_cache::proxy_cache_revalidate, "proxy_cache_revalidate on | off;", "off"),
    spec!("proxy_cache_lock", HSL, Exactly(1), false, Ready, set_cache::proxy_cache_lock, "proxy_cache_lock on | off;", "off"),
    spec!("proxy_cache_lock_timeout", HSL, Exactly(1), false, Ready, set_cache::proxy_cache_lock_timeout, "proxy_cache_lock_timeout time;", "5s"),
    spec!("proxy_cache_lock_age", HSL, Exactly(1), false, Ready, set_cache::proxy_cache_lock_age, "proxy_cache_lock_age time;", "5s"),
    spec!("proxy_cache_max_range_offset", HSL, Exactly(1), false, Ready, set_cache::proxy_cache_max_range_offset, "proxy_cache_max_range_offset number;", "—"),
    spec!("proxy_store", HSL, Exactly(1), false, Ready, set_cache::proxy_store, "proxy_store on | off | string;", "off"),
    spec!("proxy_store_access", HSL, Between(1, 3), false, Ready, set_cache::proxy_store_access, "proxy_store_access users:permissions ...;", "user:rw"),
    // autoindex
    spec!("random_index", LOCATION, Exactly(1), false, Ready, set_autoindex::random_index, "random_index on | off;", "off"),
    spec!("autoindex", HSL, Exactly(1), false, Ready, set_autoindex::autoindex, "autoindex on | off;", "off"),
    spec!("autoindex_format", HSL, Exactly(1), false, Ready, set_autoindex::autoindex_format, "autoindex_format html | xml | json | jsonp;", "html"),
    spec!("autoindex_localtime", HSL, Exactly(1), false, Ready, set_autoindex::autoindex_localtime, "autoindex_localtime on | off;", "off"),
    spec!("autoindex_exact_size", HSL, Exactly(1), false, Ready, set_autoindex::autoindex_exact_size, "autoindex_exact_size on | off;", "on"),
    // gzip, gzip_static, gunzip
    spec!("gzip", HSL | LIF, Exactly(1), false, Ready, set_gzip::gzip, "gzip on | off;", "off"),
    spec!("gzip_buffers", HSL, Exactly(2), false, Ready, set_gzip::gzip_buffers, "gzip_buffers number size;", "32 4k"),
    spec!("gzip_types", HSL, AtLeast(1), false, Ready, set_gzip::gzip_types, "gzip_types mime-type ...;", "text/html"),
    spec!("gzip_comp_level", HSL, Exactly(1), false, Ready, set_gzip::gzip_comp_level, "gzip_comp_level level;", "1"),
    spec!("gzip_window", HSL, Exactly(1), false, NoEffect("the deflater (flate2's Rust backend) always uses a 32K window; the stream is standard gzip"), set_gzip::gzip_window, "gzip_window size;", "32k"),
    spec!("gzip_hash", HSL, Exactly(1), false, NoEffect("the deflater (flate2's Rust backend) sizes its own hash; the stream is standard gzip"), set_gzip::gzip_hash, "gzip_hash size;", "64k"),
    spec!("postpone_gzipping", HSL, Exactly(1), false, Ready, set_gzip::postpone_gzipping, "postpone_gzipping size;", "0"),
    spec!("gzip_no_buffer", HSL, Exactly(1), false, Ready, set_gzip::gzip_no_buffer, "gzip_no_buffer on | off;", "off"),
    spec!("gzip_min_length", HSL, Exactly(1), false, Ready, set_gzip::gzip_min_length, "gzip_min_length length;", "20"),
    spec!("gzip_vary", HSL, Exactly(1), false, Ready, set_gzip::gzip_vary, "gzip_vary on | off;", "off"),
    spec!("gzip_http_version", HSL, Exactly(1), false, Ready, set_gzip::gzip_http_version, "gzip_http_version 1.0 | 1.1;", "1.1"),
    spec!("gzip_proxied", HSL, AtLeast(1), false, Ready, set_gzip::gzip_proxied, "gzip_proxied off | expired | no-cache | no-store | private | no_last_modified | no_etag | auth | any ...;", "off"),
    spec!("gzip_disable", HSL, AtLeast(1), false, Ready, set_gzip::gzip_disable, "gzip_disable regex ...;", "—"),
    spec!("gzip_static", HSL, Exactly(1), false, Ready, set_gzip::gzip_static, "gzip_static on | off | always;", "off"),
    spec!("gunzip", HSL, Exactly(1), false, Ready, set_gzip::gunzip, "gunzip on | off;", "off"),
    spec!("gunzip_buffers", HSL, Exactly(2), false, Ready, set_gzip::gunzip_buffers, "gunzip_buffers number size;", "32 4k"),
    // charset
    spec!("charset", HSL | LIF, Exactly(1), false, Ready, set_charset::charset, "charset charset | off;", "off"),
    spec!("source_charset", HSL | LIF, Exactly(1), false, Ready, set_charset::source_charset, "source_charset charset;", "—"),
    spec!("override_charset", HSL | LIF, Exactly(1), false, Ready, set_charset::override_charset, "override_charset on | off;", "off"),
    spec!("charset_types", HSL, AtLeast(1), false, Ready, set_charset::charset_types, "charset_types mime-type ...;", "text/html text/xml text/plain text/vnd.wap.wml application/javascript application/rss+xml"),
    spec!("charset_map", HTTP, Exactly(2), true, Ready, set_charset::charset_map, "charset_map charset1 charset2 { ... }", "—"),
    // ranges
    spec!("max_ranges", HSL, Exactly(1), false, Ready, set_autoindex::max_ranges, "max_ranges number;", "—"),
    // ssi
    spec!("ssi", HSL | LIF, Exactly(1), false, Ready, set_ssi::ssi, "ssi on | off;", "off"),
    spec!("ssi_silent_errors", HSL, Exactly(1), false, Ready, set_ssi::ssi_silent_errors, "ssi_silent_errors on | off;", "off"),
    spec!("ssi_ignore_recycled_buffers", HSL, Exactly(1), false, NoEffect("it is about nginx's buffer recycling, which nowait's SSI does not have"), set_ssi::ssi_ignore_recycled_buffers, "ssi_ignore_recycled_buffers on | off;", "off"),
    spec!("ssi_last_modified", HSL, Exactly(1), false, Ready, set_ssi::ssi_last_modified, "ssi_last_modified on | off;", "off"),
    spec!("ssi_min_file_chunk", HSL, Exactly(1), false, NoEffect("it sizes the file buffers nginx's SSI keeps; nowait's SSI reads a file in its own pieces"), set_ssi::ssi_min_file_chunk, "ssi_min_file_chunk size;", "1k"),
    spec!("ssi_value_length", HSL, Exactly(1), false, Ready, set_ssi::ssi_value_length, "ssi_value_length length;", "255"),
    spec!("ssi_types", HSL, AtLeast(1), false, Ready, set_ssi::ssi_types, "ssi_types mime-type ...;", "text/html"),
    // sub
    spec!("sub_filter", HSL, Exactly(2), false, Ready, set_sub::sub_filter, "sub_filter string replacement;", "—"),
    spec!("sub_filter_last_modified", HSL, Exactly(1), false, Ready, set_sub::sub_filter_last_modified, "sub_filter_last_modified on | off;", "off"),
    spec!("sub_filter_once", HSL, Exactly(1), false, Ready, set_sub::sub_filter_once, "sub_filter_once on | off;", "on"),
    spec!("sub_filter_types", HSL, AtLeast(1), false, Ready, set_sub::sub_filter_types, "sub_filter_types mime-type ...;", "text/html"),
    // addition
    spec!("add_before_body", HSL, Exactly(1), false, Ready, set_sub::add_before_body, "add_before_body uri;", "—"),
    spec!("add_after_body", HSL, Exactly(1), false, Ready, set_sub::add_after_body, "add_after_body uri;", "—"),
    spec!("addition_types", HSL, AtLeast(1), false, Ready, set_sub::addition_types, "addition_types mime-type ...;", "text/html"),
    // access control: allow/deny, basic authentication, satisfy
    spec!("allow", HSL | LMT, Exactly(1), false, Ready, set_access::allow_deny, "allow address | CIDR | unix: | all;", "—"),
    spec!("deny", HSL | LMT, Exactly(1), false, Ready, set_access::allow_deny, "deny address | CIDR | unix: | all;", "—"),
    spec!("limit_except", LOCATION, AtLeast(1), true, Ready, set_access::limit_except, "limit_except method ... { ... }", "—"),
    spec!("secure_link", HSL, Exactly(1), false, Ready, set_access::secure_link, "secure_link expression;", "—"),
    spec!("secure_link_md5", HSL, Exactly(1), false, Ready, set_access::secure_link_md5, "secure_link_md5 expression;", "—"),
    spec!("secure_link_secret", HSL, Exactly(1), false, Ready, set_access::secure_link_secret, "secure_link_secret word;", "—"),
    spec!("valid_referers", SERVER | LOCATION, AtLeast(1), false, Ready, set_access::valid_referers, "valid_referers none | blocked | server_names | string ...;", "—"),
    spec!("referer_hash_max_size", HSL, Exactly(1), false, NoEffect(HASH), set_access::referer_hash_size, "referer_hash_max_size size;", "2048"),
    spec!("referer_hash_bucket_size", HSL, Exactly(1), false, NoEffect(HASH), set_access::referer_hash_size, "referer_hash_bucket_size size;", "64"),
    spec!("satisfy", HSL, Exactly(1), false, Ready, set_access::satisfy, "satisfy all | any;", "all"),
    spec!("auth_delay", HSL, Exactly(1), false, Ready, set_access::auth_delay, "auth_delay time;", "0s"),
    spec!("auth_basic", HSL | LMT, Exactly(1), false, Ready, set_access::auth_basic, "auth_basic string | off;", "off"),
    spec!("auth_basic_user_file", HSL | LMT, Exactly(1), false, Ready, set_access::auth_basic_user_file, "auth_basic_user_file file;", "—"),
    // request and connection rate limits
    spec!("limit_req_zone", HTTP, Exactly(3), false, Ready, set_limit::limit_req_zone, "limit_req_zone key zone=name:size rate=rate;", "—"),
    spec!("limit_req", HSL, Between(1, 3), false, Ready, set_limit::limit_req, "limit_req zone=name [burst=number] [nodelay | delay=number];", "—"),
    spec!("limit_req_status", HSL, Exactly(1), false, Ready, set_limit::limit_req_status, "limit_req_status code;", "503"),
    spec!("limit_req_log_level", HSL, Exactly(1), false, Ready, set_limit::limit_req_log_level, "limit_req_log_level info | notice | warn | error;", "error"),
    spec!("limit_req_dry_run", HSL, Exactly(1), false, Ready, set_limit::limit_req_dry_run, "limit_req_dry_run on | off;", "off"),
    spec!("limit_conn_zone", HTTP, Exactly(2), false, Ready, set_limit::limit_conn_zone, "limit_conn_zone key zone=name:size;", "—"),
    spec!("limit_conn", HSL, Exactly(2), false, Ready, set_limit::limit_conn, "limit_conn zone number;", "—"),
    spec!("limit_conn_status", HSL, Exactly(1), false, Ready, set_limit::limit_conn_status, "limit_conn_status code;", "503"),
    spec!("limit_conn_log_level", HSL, Exactly(1), false, Ready, set_limit::limit_conn_log_level, "limit_conn_log_level info | notice | warn | error;", "error"),
    spec!("limit_conn_dry_run", HSL, Exactly(1), false, Ready, set_limit::limit_conn_dry_run, "limit_conn_dry_run on | off;", "off"),
    // the client's address from a trusted proxy's header
    spec!("set_real_ip_from", HSL, Exactly(1), false, Ready, set_realip::set_real_ip_from, "set_real_ip_from address | CIDR | unix:;", "—"),
    spec!("real_ip_header", HSL, Exactly(1), false, Ready, set_realip::real_ip_header, "real_ip_header field | X-Real-IP | X-Forwarded-For;", "X-Real-IP"),
    spec!("real_ip_recursive", HSL, Exactly(1), false, Ready, set_realip::real_ip_recursive, "real_ip_recursive on | off;", "off"),
    // small content handlers
    spec!("stub_status", SERVER | LOCATION, Between(0, 1), false, Ready, set_realip::stub_status, "stub_status;", "—"),
    spec!("empty_gif", LOCATION, Exactly(0), false, Ready, set_realip::empty_gif, "empty_gif;", "—"),
    // nginx's ACME module (nginx/nginx-acme, not in nginx 1.22)
    spec!("acme_issuer", HTTP, Exactly(1), true, Ready, set_acme::acme_issuer, "acme_issuer name { ... }", "—"),
    spec!("uri", ACME_ISSUER, Exactly(1), false, Ready, set_acme::uri, "uri uri;", "—"),
    spec!("account_key", ACME_ISSUER, Exactly(1), false, Ready, set_acme::account_key, "account_key alg[:size] | file;", "ecdsa:256"),
    spec!("challenge", ACME_ISSUER, Exactly(1), false, Ready, set_acme::challenge, "challenge http-01;", "http-01"),
    spec!("common_name_in_csr", ACME_ISSUER, Exactly(1), false, Ready, set_acme::common_name_in_csr, "common_name_in_csr on | off;", "off"),
    spec!("contact", ACME_ISSUER, Exactly(1), false, Ready, set_acme::contact, "contact URL;", "—"),
    spec!("external_account_key", ACME_ISSUER, Exactly(2), false, Ready, set_acme::external_account_key, "external_account_key kid file;", "—"),
    spec!("preferred_chain", ACME_ISSUER, Exactly(1), false, Ready, set_acme::preferred_chain, "preferred_chain name;", "—"),
    spec!("profile", ACME_ISSUER, Between(1, 2), false, Ready, set_acme::profile, "profile name [require];", "—"),
    spec!("ssl_trusted_certificate", ACME_ISSUER, Exactly(1), false, Ready, set_acme::ssl_trusted_certificate, "ssl_trusted_certificate file;", "system CA bundle"),
    spec!("ssl_verify", ACME_ISSUER, Exactly(1), false, Ready, set_acme::ssl_verify, "ssl_verify on | off;", "on"),
    spec!("state_path", ACME_ISSUER, Exactly(1), false, Ready, set_acme::state_path, "state_path path | off;", "acme_<name>"),
    spec!("accept_terms_of_service", ACME_ISSUER, Exactly(0), false, Ready, set_acme::accept_terms_of_service, "accept_terms_of_service;", "—"),
    spec!("acme_shared_zone", HTTP, Exactly(1), false, NoEffect(ACME_ZONE), set_acme::acme_shared_zone, "acme_shared_zone zone=name:size;", "zone=ngx_acme_shared:256k"),
    spec!("acme_certificate", SERVER, AtLeast(1), false, Ready, set_acme::acme_certificate, "acme_certificate issuer [identifier ...] [key=alg[:size]];", "—"),
];

/// Directives nginx does not have: nowait's own, marked so in the
/// reference. Each keeps nginx's behaviour when it is not written.
pub const NOWAIT_OWN: &[&str] = &["aio_fast_path", "loop_turn_budget", "nowait_status"];

/// Directives of nginx's ACME module (nginx/nginx-acme,
/// `ngx_http_acme_module`): not in nginx 1.22, an nginx module of its
/// own, marked so in the reference.
pub const NGINX_ACME: &[&str] = &[
    "acme_issuer",
    "uri",
    "account_key",
    "challenge",
    "common_name_in_csr",
    "contact",
    "external_account_key",
    "preferred_chain",
    "profile",
    "ssl_verify",
    "state_path",
    "accept_terms_of_service",
    "acme_shared_zone",
    "acme_certificate",
];

/// Whether `s` is a directive of nginx's ACME module.
pub fn is_nginx_acme(s: &Spec) -> bool {
    s.contexts == ACME_ISSUER || NGINX_ACME.contains(&s.name)
}

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
            .map(|&(bit, n)| match bit {
                b if b == SIF | LIF && s.contexts & SIF == 0 => "if in location",
                _ => n,
            })
            .collect();
        let status = match s.status {
            Status::Ready if NOWAIT_OWN.contains(&s.name) => "yes (nowait's own)".to_string(),
            Status::Ready if is_nginx_acme(s) => "yes (nginx's acme module)".to_string(),
            Status::NoEffect(why) if is_nginx_acme(s) => {
                format!("accepted, no effect (nginx's acme module): {why}")
            }
            Status::Ready => "yes".to_string(),
            Status::NoEffect(why) => format!("accepted, no effect: {why}"),
            Status::NotYet => "parsed; not implemented yet".to_string(),
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
