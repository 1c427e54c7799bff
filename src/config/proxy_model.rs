//! The reverse proxy's typed configuration: upstream groups and their
//! servers, where `proxy_pass` sends a request, and the value types of the
//! `proxy_*` directives. Re-exported by [`super::model`].
//!
//! Everything here is checked and resolved at load time, on the main thread:
//! upstream server names are already addresses, `proxy_pass` already names
//! its upstream. The proxy handler reads these types; it never parses.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::source::Loc;
use super::template::Template;

/// nginx's `weight=` default.
pub const DEFAULT_WEIGHT: u32 = 1;
/// nginx's `max_fails=` default.
pub const DEFAULT_MAX_FAILS: u32 = 1;
/// nginx's `fail_timeout=` default.
pub const DEFAULT_FAIL_TIMEOUT: Duration = Duration::from_secs(10);
/// nginx's `keepalive_requests` default inside `upstream`.
pub const DEFAULT_UPSTREAM_KEEPALIVE_REQUESTS: u64 = 1000;
/// nginx's `keepalive_timeout` default inside `upstream`.
pub const DEFAULT_UPSTREAM_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(60);
/// nginx's `keepalive_time` default inside `upstream`.
pub const DEFAULT_UPSTREAM_KEEPALIVE_TIME: Duration = Duration::from_secs(3600);

/// An upstream group: an `upstream NAME { … }` block, or one nginx makes
/// implicitly for a `proxy_pass http://host:port` that names no block.
#[derive(Clone, Debug)]
pub struct Upstream {
    /// The block's name; for an implicit group `host:port` (`unix:PATH` for
    /// a socket). Unique within [`super::model::HttpConf::upstreams`].
    pub name: String,
    /// The servers, in order (backup servers included, flagged).
    pub servers: Vec<UpstreamServer>,
    /// The balancing method.
    pub balance: UpstreamBalance,
    /// `keepalive N`: idle connections cached per worker; `None` when unset,
    /// or when a balancing method was set after it (nginx then warns
    /// "load balancing method redefined" and the cache is not used).
    pub keepalive: Option<u32>,
    /// `keepalive_requests` (1000).
    pub keepalive_requests: u64,
    /// `keepalive_timeout` (60s).
    pub keepalive_timeout: Duration,
    /// `keepalive_time` (1h).
    pub keepalive_time: Duration,
    /// `zone NAME [SIZE]`: the shared-memory zone's name and its size as
    /// written here (`None` when another `zone` of that name gave it).
    pub zone: Option<(String, Option<u64>)>,
    /// Made by `proxy_pass`, not written as a block.
    pub implicit: bool,
    /// nginx's `uscf->host`: what a `proxy_pass` host is compared with
    /// (case-insensitively) — the block's name, or the implicit group's host
    /// (`[::1]` with brackets; the socket path for `unix:`).
    pub host: String,
    /// nginx's `uscf->port`: 0 for a block (any port in a URL is refused),
    /// the URL's port (default 80) for an implicit group. A `proxy_pass`
    /// with variables picks a group at run time by host and port as nginx's
    /// `ngx_http_upstream_init_request` does.
    pub port: u16,
    /// Where it was declared (for an implicit group: the first `proxy_pass`
    /// that named it).
    pub loc: Loc,
}

/// One `server` of an upstream group.
#[derive(Clone, Debug)]
pub struct UpstreamServer {
    /// The address as written (`localhost:8080`, `unix:/tmp/s`); for an
    /// implicit group, the host and port of the `proxy_pass` URL.
    pub address: String,
    /// What it resolved to at load time: one entry per address the name
    /// resolved to, each with the port (default 80).
    pub addrs: Vec<UpstreamAddr>,
    /// `weight=` (1; never 0).
    pub weight: u32,
    /// `max_fails=` (1; 0 disables failure accounting).
    pub max_fails: u32,
    /// `fail_timeout=` (10s).
    pub fail_timeout: Duration,
    /// `backup`. Only round robin and `least_conn` accept it; a `server …
    /// backup` written before `hash`, `ip_hash` or `random` is accepted, as
    /// by nginx, and those methods then never use it.
    pub backup: bool,
    /// `down`.
    pub down: bool,
    /// `max_conns=` (0: no limit).
    pub max_conns: u32,
    /// Where it was written.
    pub loc: Loc,
}

/// A resolved upstream address.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum UpstreamAddr {
    /// An IPv4 or IPv6 address and port.
    Inet(SocketAddr),
    /// A Unix-domain socket path.
    Unix(PathBuf),
}

impl std::fmt::Display for UpstreamAddr {
    /// As nginx names a peer (`$upstream_addr`): `127.0.0.1:8080`,
    /// `[::1]:8080`, `unix:/tmp/s`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamAddr::Inet(a) => write!(f, "{a}"),
            UpstreamAddr::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// How an upstream group picks a server.
#[derive(Clone, Debug)]
pub enum UpstreamBalance {
    /// Weighted round robin (no method written).
    RoundRobin,
    /// `least_conn`.
    LeastConn,
    /// `ip_hash`.
    IpHash,
    /// `random [two [least_conn]]` (`least_conn` is the only method of two
    /// in nginx 1.22, so `two` says it all).
    Random {
        /// `two`: pick two at random, then the one with fewer connections.
        two: bool,
    },
    /// `hash KEY [consistent]`.
    Hash {
        /// The key, evaluated per request.
        key: Template,
        /// `consistent` (ketama).
        consistent: bool,
    },
}

/// `proxy_pass URL`.
#[derive(Clone, Debug)]
pub struct ProxyPass {
    /// The URL as written.
    pub url: Template,
    /// What it resolved to.
    pub target: ProxyTarget,
    /// Where it was written.
    pub loc: Loc,
    /// The location's TLS to its upstreams (nginx's `plcf->upstream.ssl`):
    /// made when the levels are merged for an `https://` URL or one with
    /// variables (which may turn out to be `https://`), shared with the
    /// `if` blocks inside that inherit this `proxy_pass`.
    pub tls: Option<std::sync::Arc<super::ssl_model::UpstreamTlsPlan>>,
}

/// Where `proxy_pass` sends requests.
#[derive(Clone, Debug)]
pub enum ProxyTarget {
    /// A URL without variables, resolved at load time.
    Static(ProxyUrl),
    /// The URL has variables (any `$`, as nginx counts them): it is evaluated
    /// per request, its scheme checked then, and its host looked up among the
    /// upstream groups by [`Upstream::host`] and [`Upstream::port`] before
    /// being resolved.
    Dynamic,
}

/// A `proxy_pass` URL without variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxyUrl {
    /// The [`Upstream::name`] of the group it sends to (a block, or the
    /// implicit group made for it).
    pub upstream: String,
    /// `$proxy_host`: the host, with `:port` unless the port is the
    /// default (80); `localhost` for a Unix socket. Shared with each
    /// request's `$proxy_host`.
    pub host_header: std::sync::Arc<str>,
    /// `$proxy_port`: the port as written, `80` when none is written or it
    /// is the default; empty for a socket. Shared with each request's
    /// `$proxy_port`.
    pub port: std::sync::Arc<str>,
    /// Where the default cache key's first part ends in the URL as
    /// written (see [`super::proxy_url::ProxyVars::key_start`]).
    pub key_start: usize,
    /// The URI part after the host (`/`, `/x/`, `?a=1`); `None` when absent.
    pub uri: Option<String>,
    /// The URL names a Unix socket (`http://unix:/path:/uri`).
    pub unix: bool,
    /// `https://`: the upstream is spoken to over TLS.
    pub tls: bool,
}

/// `proxy_http_version`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyHttpVersion {
    /// HTTP/1.0 (nginx's default).
    V10,
    /// HTTP/1.1.
    V11,
}

/// `proxy_redirect`.
///
/// After loading, a location with a `proxy_pass` without variables never
/// holds `Default`: it holds the rule nginx derives (the `proxy_pass` URL →
/// the location's prefix, or URL`/` → `/` when the URL has no URI part),
/// and nested locations that set nothing inherit that rule, as in nginx.
/// `Default` left in a resolved configuration rewrites nothing.
#[derive(Clone, Debug)]
pub enum ProxyRedirect {
    /// Nothing written at any level.
    Default,
    /// `proxy_redirect off`.
    Off,
    /// Rules, tried in order (`proxy_redirect default` contributes the rule
    /// derived from the `proxy_pass` above it).
    Rules(Vec<RedirectRule>),
}

/// One `proxy_redirect FROM TO` rule.
#[derive(Clone, Debug)]
pub struct RedirectRule {
    /// What is matched at the start of `Location` and `Refresh`.
    pub from: RedirectFrom,
    /// The replacement (may hold variables and regex captures).
    pub to: Template,
}

/// The matching side of a `proxy_redirect` rule.
#[derive(Clone, Debug)]
pub enum RedirectFrom {
    /// A prefix compared case-insensitively (may hold variables).
    Text(Template),
    /// `~regex` or `~*regex`.
    Regex {
        /// The compiled expression (`(?i)` added for `~*`).
        re: crate::config::regex::Regex,
        /// `~*`.
        case_insensitive: bool,
        /// The expression as written, without `~`/`~*`.
        source: String,
    },
}

/// `proxy_next_upstream`: when a request goes to the next server, as a set
/// of nginx's `NGX_HTTP_UPSTREAM_FT_*` conditions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct NextUpstream(pub u16);

impl NextUpstream {
    /// `error`.
    pub const ERROR: NextUpstream = NextUpstream(1);
    /// `timeout`.
    pub const TIMEOUT: NextUpstream = NextUpstream(1 << 1);
    /// `invalid_header`.
    pub const INVALID_HEADER: NextUpstream = NextUpstream(1 << 2);
    /// `http_500`.
    pub const HTTP_500: NextUpstream = NextUpstream(1 << 3);
    /// `http_502`.
    pub const HTTP_502: NextUpstream = NextUpstream(1 << 4);
    /// `http_503`.
    pub const HTTP_503: NextUpstream = NextUpstream(1 << 5);
    /// `http_504`.
    pub const HTTP_504: NextUpstream = NextUpstream(1 << 6);
    /// `http_403`.
    pub const HTTP_403: NextUpstream = NextUpstream(1 << 7);
    /// `http_404`.
    pub const HTTP_404: NextUpstream = NextUpstream(1 << 8);
    /// `http_429`.
    pub const HTTP_429: NextUpstream = NextUpstream(1 << 9);
    /// `non_idempotent`: also retry POST, LOCK, PATCH.
    pub const NON_IDEMPOTENT: NextUpstream = NextUpstream(1 << 10);
    /// `updating`: accepted, as nginx's shared mask accepts it; it means
    /// something only to `proxy_cache_use_stale`.
    pub const UPDATING: NextUpstream = NextUpstream(1 << 11);
    /// `off`: never (after merging it stands alone).
    pub const OFF: NextUpstream = NextUpstream(1 << 12);

    /// The names nginx accepts, with their bits, in nginx's order.
    pub const NAMES: [(&'static str, NextUpstream); 13] = [
        ("error", Self::ERROR),
        ("timeout", Self::TIMEOUT),
        ("invalid_header", Self::INVALID_HEADER),
        ("non_idempotent", Self::NON_IDEMPOTENT),
        ("http_500", Self::HTTP_500),
        ("http_502", Self::HTTP_502),
        ("http_503", Self::HTTP_503),
        ("http_504", Self::HTTP_504),
        ("http_403", Self::HTTP_403),
        ("http_404", Self::HTTP_404),
        ("http_429", Self::HTTP_429),
        ("updating", Self::UPDATING),
        ("off", Self::OFF),
    ];

    /// Whether every condition of `other` is in the set.
    pub const fn contains(self, other: NextUpstream) -> bool {
        self.0 & other.0 == other.0
    }

    /// The union of two sets.
    pub const fn union(self, other: NextUpstream) -> NextUpstream {
        NextUpstream(self.0 | other.0)
    }
}

/// `client_body_in_file_only`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyInFile {
    /// Bodies go to a file only when larger than the buffer.
    Off,
    /// Always to a file, removed after the request.
    Clean,
    /// Always to a file, kept.
    On,
}

/// The headers `proxy_ignore_headers` accepts, spelled as nginx spells them
/// (`ngx_http_upstream_ignore_headers_masks`).
pub const IGNORABLE_HEADERS: [&str; 9] = [
    "X-Accel-Redirect",
    "X-Accel-Expires",
    "X-Accel-Limit-Rate",
    "X-Accel-Buffering",
    "X-Accel-Charset",
    "Expires",
    "Cache-Control",
    "Set-Cookie",
    "Vary",
];
