//! The validated, typed configuration: what the rest of nowait reads.
//!
//! Built by [`super::load`] from the syntax tree; every value here has been
//! checked, every default applied (see [`super::inherit`]), and every
//! cross-reference (thread pools, log formats, variables) resolved.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::inherit::{LocConf, LocSet, SrvConf, SrvSet};
use super::source::{Loc, SourceFile};
use super::template::Template;

pub use super::cache_model::{CachePath, ProxyStore};
pub use super::core_model::{TryFallback, TryFile, TryFiles};
pub use super::listen_addr::ListenAddr;
pub use super::map::Map;
pub use super::script::{
    Condition, FileTest, If, Return, Rewrite, RewriteFlag, RewriteOp, SetTarget, SetVar,
};
pub use super::set_sched::{CpuAffinity, CpuMask};

pub use super::proxy_model::{
    BodyInFile, DEFAULT_FAIL_TIMEOUT, DEFAULT_MAX_FAILS, DEFAULT_UPSTREAM_KEEPALIVE_REQUESTS,
    DEFAULT_UPSTREAM_KEEPALIVE_TIME, DEFAULT_UPSTREAM_KEEPALIVE_TIMEOUT, DEFAULT_WEIGHT,
    IGNORABLE_HEADERS, NextUpstream, ProxyHttpVersion, ProxyPass, ProxyRedirect, ProxyTarget,
    ProxyUrl, RedirectFrom, RedirectRule, Upstream, UpstreamAddr, UpstreamBalance, UpstreamServer,
};

/// The whole configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The main context.
    pub main: MainConf,
    /// The `events` block.
    pub events: EventsConf,
    /// The `http` block, if any.
    pub http: Option<HttpConf>,
    /// Directives that parse and validate but whose behaviour comes with a
    /// later release: starting with any of them fails (`-t` accepts them).
    pub not_implemented: Vec<(String, Loc)>,
    /// The prefix (`-p`): relative paths resolve against it.
    pub prefix: PathBuf,
    /// The main configuration file, if one was read.
    pub conf_file: Option<PathBuf>,
    /// Every file read, for `-T`.
    pub files: Vec<SourceFile>,
    /// The other files the configuration read (certificates, keys), for a
    /// reload's privileged helper to pass on.
    pub data_files: Vec<(PathBuf, Vec<u8>)>,
    /// Whether `$realpath_root` is used anywhere (see `server::core::phases`).
    pub uses_realpath_root: bool,
    /// Whether `$request_body_file` is used anywhere (see `server::proxy`).
    pub uses_request_body_file: bool,
}

impl Config {
    /// The directory of the configuration file (nginx's `conf_prefix`),
    /// the prefix without one: the ssl module's files resolve against it,
    /// those named with variables too.
    pub fn conf_prefix(&self) -> &std::path::Path {
        self.conf_file
            .as_deref()
            .and_then(std::path::Path::parent)
            .unwrap_or(&self.prefix)
    }
}

/// `worker_processes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerProcesses {
    /// One per available core.
    Auto,
    /// A fixed number.
    Count(usize),
}

impl WorkerProcesses {
    /// How many workers run: `auto` is one per CPU this process may use.
    pub fn count(self) -> usize {
        match self {
            WorkerProcesses::Count(n) => n,
            WorkerProcesses::Auto => std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// The main context's settings.
#[derive(Clone, Debug)]
pub struct MainConf {
    /// `worker_processes` (default 1).
    pub worker_processes: WorkerProcesses,
    /// `user USER [GROUP]` (default `nobody`); `None` when the embedded
    /// configuration keeps the invoking user.
    pub user: Option<(String, Option<String>)>,
    /// Where `user` was set, for error messages.
    pub user_loc: Option<Loc>,
    /// `daemon` (default on).
    pub daemon: bool,
    /// `pid` (default `logs/nowait.pid`); `None` writes no pid file.
    pub pid: Option<PathBuf>,
    /// `error_log` destinations (default `logs/error.log error`).
    pub error_logs: Vec<ErrorLogConf>,
    /// `thread_pool`, in order of appearance, plus `default` when `aio
    /// threads` names no pool and none called `default` was declared.
    pub thread_pools: Vec<ThreadPoolConf>,
    /// `worker_shutdown_timeout`: how long a worker told to quit lets its
    /// connections finish before it closes them (`None`: no limit).
    pub worker_shutdown_timeout: Option<std::time::Duration>,
    /// `worker_rlimit_nofile`: the descriptor limit (`RLIMIT_NOFILE`, soft
    /// and hard) set at start and at each reload.
    pub worker_rlimit_nofile: Option<u64>,
    /// `worker_priority`: the nice value of each worker's thread (default
    /// 0); `None` for 0, which, as in nginx, leaves the process's.
    pub worker_priority: Option<i32>,
    /// `worker_cpu_affinity`: the CPUs each worker's thread is bound to
    /// (default: not bound).
    pub worker_cpu_affinity: Option<CpuAffinity>,
    /// `env`, in order: the variables the serving process keeps or sets;
    /// every other inherited one but `TZ` is removed at start.
    pub env: Vec<EnvVar>,
}

/// One `env` directive: `NAME` keeps an inherited variable, `NAME=VALUE`
/// sets one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvVar {
    /// The variable's name.
    pub name: String,
    /// The value given, if any (`None`: the inherited one, if any).
    pub value: Option<String>,
}

/// Where an error log goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogTarget {
    /// A file, by absolute path.
    File(PathBuf),
    /// Standard error.
    Stderr,
}

/// One `error_log`.
#[derive(Clone, Debug)]
pub struct ErrorLogConf {
    /// The destination.
    pub target: LogTarget,
    /// The lowest level written.
    pub level: LogLevel,
}

/// Error log levels are the log layer's.
pub use crate::log::Level as LogLevel;

/// `thread_pool NAME threads=N [max_queue=M]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadPoolConf {
    /// The pool's name.
    pub name: String,
    /// How many threads run tasks.
    pub threads: usize,
    /// How many tasks may wait; 0 = none wait.
    pub max_queue: usize,
    /// Where it was declared (`None` for the implicit `default`).
    pub loc: Option<Loc>,
}

/// nginx's implicit pool: `thread_pool default threads=32 max_queue=65536`.
pub const DEFAULT_POOL: (&str, usize, usize) = ("default", 32, 65536);

/// The `events` block.
#[derive(Clone, Debug)]
pub struct EventsConf {
    /// `worker_connections` (default 512).
    pub worker_connections: usize,
    /// `accept_mutex` (default off, as in nginx 1.11.3+).
    pub accept_mutex: bool,
    /// `accept_mutex_delay` (default 500 ms): how long a worker that did
    /// not get the accept mutex waits, when no event comes, before trying
    /// again.
    pub accept_mutex_delay: std::time::Duration,
    /// `multi_accept` (default off).
    pub multi_accept: bool,
    /// `loop_turn_budget` (nowait's own; default 250 µs, `None` for off):
    /// how long a turn of a worker's loop runs tasks before the rest wait
    /// for the next turn (`metrics::timed`).
    pub turn_budget: Option<std::time::Duration>,
}

impl Default for EventsConf {
    fn default() -> Self {
        EventsConf {
            worker_connections: 512,
            accept_mutex: false,
            accept_mutex_delay: std::time::Duration::from_millis(500),
            multi_accept: false,
            turn_budget: Some(crate::metrics::timed::DEFAULT_TURN_BUDGET),
        }
    }
}

/// The `http` block.
#[derive(Clone, Debug, Default)]
pub struct HttpConf {
    /// What the http block itself set of the inherited settings.
    pub set: LocSet,
    /// The same, resolved against the defaults.
    pub conf: LocConf,
    /// Server-wide settings set at http level.
    pub srv_set: SrvSet,
    /// The virtual servers, in order.
    pub servers: Vec<Server>,
    /// `log_format` by name (`combined` is predefined).
    pub log_formats: HashMap<String, LogFormat>,
    /// Upstream groups: `upstream` blocks and the implicit groups
    /// `proxy_pass` makes, in the order nginx declares them.
    pub upstreams: Vec<Upstream>,
    /// The TLS of every location that proxies over TLS, by
    /// [`super::ssl_model::UpstreamTlsPlan::id`].
    pub upstream_tls: Vec<Arc<super::ssl_model::UpstreamTlsPlan>>,
    /// `split_clients` blocks.
    pub split_clients: Vec<SplitClients>,
    /// `map` blocks.
    pub maps: Vec<Map>,
    /// What defines each configuration-defined variable, by name (built
    /// once the whole configuration is read).
    pub var_defs: HashMap<Arc<str>, VarDef>,
    /// Whether some `set` assigns a built-in or family variable (`$http_x`,
    /// `$proxy_host` …): only then do their reads look for a stored value.
    pub sets_builtins: bool,
    /// `proxy_cache_path` declarations.
    pub cache_paths: Vec<CachePath>,
    /// `map_hash_max_size` (set before the first `map`, or nginx's default
    /// taken there).
    pub map_hash_max_size: Option<u64>,
    /// `map_hash_bucket_size`, aligned to the cache line.
    pub map_hash_bucket_size: Option<u64>,
    /// `server_names_hash_max_size` (accepted: nowait's server lookup has
    /// no fixed-size hash).
    pub server_names_hash_max_size: Option<u64>,
    /// `server_names_hash_bucket_size` (accepted, as above).
    pub server_names_hash_bucket_size: Option<u64>,
    /// The charsets the configuration names and its `charset_map` tables.
    pub charsets: crate::http::charset::Charsets,
    /// `limit_req_zone` declarations.
    pub limit_req_zones: Vec<super::access_model::LimitZone>,
    /// `limit_conn_zone` declarations.
    pub limit_conn_zones: Vec<super::access_model::LimitZone>,
    /// `variables_hash_max_size` (accepted: nowait resolves variables
    /// when loading, without a hash).
    pub variables_hash_max_size: Option<u64>,
    /// `variables_hash_bucket_size` (accepted, as above).
    pub variables_hash_bucket_size: Option<u64>,
    /// nginx's ACME module: issuers, the zone, the certificates servers
    /// ask for.
    pub acme: super::acme_model::AcmeConf,
}

impl HttpConf {
    /// Calls `f` on every resolved inherited configuration, as
    /// [`HttpConf::loc_confs`] lists them (e.g. to give each its open
    /// error log).
    pub fn each_loc_conf_mut(&mut self, f: &mut dyn FnMut(&mut LocConf)) {
        fn walk(l: &mut Location, f: &mut dyn FnMut(&mut LocConf)) {
            f(&mut l.conf);
            l.children_mut().for_each(|c| walk(c, f));
        }
        f(&mut self.conf);
        for s in &mut self.servers {
            f(&mut s.conf);
            s.locations.iter_mut().for_each(|l| walk(l, f));
        }
    }

    /// Every resolved inherited configuration: http, each server, and each
    /// location at any depth (e.g. to open every access log once).
    pub fn loc_confs(&self) -> Vec<&LocConf> {
        fn walk<'a>(l: &'a Location, out: &mut Vec<&'a LocConf>) {
            out.push(&l.conf);
            l.children().for_each(|c| walk(c, out));
        }
        let mut out = vec![&self.conf];
        for s in &self.servers {
            out.push(&s.conf);
            s.locations.iter().for_each(|l| walk(l, &mut out));
        }
        out
    }
}

/// A `server` block.
#[derive(Clone, Debug, Default)]
pub struct Server {
    /// `listen` (default `*:80` as root, `*:8000` otherwise, as nginx).
    pub listens: Vec<Listen>,
    /// `server_name` entries (default `""`).
    pub names: Vec<String>,
    /// The `~regex` entries of `names`, compiled once when read (the
    /// referer module's `server_names` matches them per request).
    pub name_regexes: Vec<crate::config::regex::Regex>,
    /// Inherited settings this block set.
    pub set: LocSet,
    /// Resolved inherited settings at server level.
    pub conf: LocConf,
    /// Server-wide settings this block set.
    pub srv_set: SrvSet,
    /// Resolved server-wide settings.
    pub srv: SrvConf,
    /// The rewrite module's script at server level, run before a location
    /// is chosen (and again after each internal redirect).
    pub rewrite: Vec<RewriteOp>,
    /// The locations, in order of appearance.
    pub locations: Vec<Location>,
    /// Where the block starts.
    pub loc: Option<Loc>,
    /// The content handler of requests no location matches (`stub_status`
    /// at server level).
    pub handler: Handler,
    /// `try_files` at server level: for requests no location matches.
    pub try_files: Option<TryFiles>,
    /// Its TLS, when it has any (`listen … ssl`, `ssl on`, certificates
    /// or `ssl_reject_handshake`).
    pub tls: Option<Arc<super::ssl_model::TlsPlan>>,
    /// `acme_certificate` (nginx's ACME module): what it orders, its
    /// identifiers filled from `server_name` once the block is read.
    pub acme: Option<super::acme_model::AcmeOrder>,
}

impl Server {
    /// `$server_name`: the first name, without the leading `.` of a
    /// `.example.com` form (nginx's `cscf->server_name`); empty without
    /// `server_name`.
    pub fn name(&self) -> &str {
        let first = self.names.first().map_or("", String::as_str);
        first.strip_prefix('.').unwrap_or(first)
    }
}

/// One `listen`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listen {
    /// Address and port, or a unix-domain socket's path.
    pub addr: ListenAddr,
    /// `default_server`.
    pub default_server: bool,
    /// `ssl`: connections to the address speak TLS.
    pub ssl: bool,
    /// `reuseport`: one socket per worker.
    pub reuseport: bool,
    /// `backlog=N` (default 511, nginx's on Linux).
    pub backlog: i32,
    /// Whether `backlog=` was written (an option that makes two listens conflict).
    pub backlog_set: bool,
    /// `rcvbuf=size`.
    pub rcvbuf: Option<usize>,
    /// `sndbuf=size`.
    pub sndbuf: Option<usize>,
    /// `bind`.
    pub bind: bool,
    /// `deferred`: `TCP_DEFER_ACCEPT`, so that `accept()` wakes only once
    /// the request's first bytes arrived.
    pub deferred: bool,
    /// How long the kernel holds a deferred connection without data, in
    /// seconds: the server's `client_header_timeout` (nginx's
    /// `post_accept_timeout`), filled in when the sockets are made.
    pub deferred_secs: u32,
    /// `fastopen=N`: `TCP_FASTOPEN`'s queue of connections whose first data
    /// came with the SYN.
    pub fastopen: Option<u32>,
    /// `ipv6only=on|off` (on by default): an IPv6 socket that takes IPv6
    /// only.
    pub ipv6only: bool,
    /// `so_keepalive=on|off|[idle]:[interval]:[count]`.
    pub so_keepalive: Option<SoKeepalive>,
    /// Where it was written.
    pub loc: Loc,
}

/// `listen … so_keepalive=`: TCP keep-alive probes on accepted connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoKeepalive {
    /// `SO_KEEPALIVE` on (`on` or a triple) or off (`off`).
    pub on: bool,
    /// `TCP_KEEPIDLE`, seconds.
    pub idle: Option<u32>,
    /// `TCP_KEEPINTVL`, seconds.
    pub interval: Option<u32>,
    /// `TCP_KEEPCNT`.
    pub count: Option<u32>,
}

/// The default `backlog=` on Linux (NGX_LISTEN_BACKLOG).
pub const DEFAULT_BACKLOG: i32 = 511;

impl Listen {
    /// A listen on `addr` with no options, written at `loc`.
    pub fn new(addr: ListenAddr, loc: Loc) -> Listen {
        Listen {
            addr,
            default_server: false,
            ssl: false,
            reuseport: false,
            backlog: DEFAULT_BACKLOG,
            backlog_set: false,
            rcvbuf: None,
            sndbuf: None,
            bind: false,
            deferred: false,
            deferred_secs: 0,
            fastopen: None,
            ipv6only: true,
            so_keepalive: None,
            loc,
        }
    }

    /// Whether any socket option was written (nginx allows them once per address).
    pub fn has_options(&self) -> bool {
        self.reuseport
            || self.backlog_set
            || self.rcvbuf.is_some()
            || self.sndbuf.is_some()
            || self.bind
            || self.deferred
            || self.fastopen.is_some()
            || !self.ipv6only
            || self.so_keepalive.is_some()
    }
}

/// How a location matches a URI, in nginx's precedence order.
#[derive(Clone, Debug)]
pub enum LocationMatch {
    /// `location = /uri`.
    Exact(String),
    /// `location ^~ /prefix`: a prefix match that stops the regex search.
    PrefixNoRegex(String),
    /// `location /prefix`.
    Prefix(String),
    /// `location ~ re` (`case_insensitive` false) or `~* re` (true).
    Regex {
        /// The expression as written.
        source: String,
        /// The compiled expression.
        re: crate::config::regex::Regex,
        /// `~*`.
        case_insensitive: bool,
    },
    /// `location @name`: only for internal redirects (`error_page`).
    Named(String),
}

impl LocationMatch {
    /// The location as nginx names it in messages (`"/x"`).
    pub fn describe(&self) -> String {
        match self {
            LocationMatch::Exact(s) => format!("= {s}"),
            LocationMatch::PrefixNoRegex(s) => format!("^~ {s}"),
            LocationMatch::Prefix(s) => s.clone(),
            LocationMatch::Regex {
                source,
                case_insensitive,
                ..
            } => {
                format!("{} {source}", if *case_insensitive { "~*" } else { "~" })
            }
            LocationMatch::Named(s) => s.clone(),
        }
    }
}

/// A `location` block.
#[derive(Clone, Debug)]
pub struct Location {
    /// How it matches.
    pub matcher: LocationMatch,
    /// Inherited settings this block set.
    pub set: LocSet,
    /// Resolved settings in force inside it.
    pub conf: LocConf,
    /// The rewrite module's script of this location, run when the request
    /// enters it.
    pub rewrite: Vec<RewriteOp>,
    /// `proxy_pass`.
    pub proxy_pass: Option<ProxyPass>,
    /// `nowait_status`: this location serves the measurements.
    pub status_page: bool,
    /// What makes the response when the request reaches the content phase
    /// here: one handler per location, chosen when the configuration is
    /// built.
    pub handler: Handler,
    /// Nested locations.
    pub locations: Vec<Location>,
    /// Whether this is the anonymous location of an `if` block (nginx's
    /// `noname`): never searched for, entered only by its `if`; its
    /// matcher is the enclosing location's, whose name it shares.
    pub noname: bool,
    /// `limit_except METHOD … { }`: the settings for the other methods.
    pub limit_except: Option<Box<LimitExcept>>,
    /// Whether this is the anonymous location of a `limit_except` block
    /// (also `noname`).
    pub lmt: bool,
    /// Where the block starts.
    pub loc: Loc,
    /// `try_files` (not inherited by nested locations, as in nginx).
    pub try_files: Option<TryFiles>,
    /// `internal`: only internal redirects may enter.
    pub internal: bool,
}

impl Location {
    /// A location matching with `matcher`, declared at `loc`, with nothing set.
    pub fn new(matcher: LocationMatch, loc: Loc) -> Location {
        Location {
            matcher,
            set: LocSet::default(),
            conf: LocConf::default(),
            rewrite: Vec::new(),
            proxy_pass: None,
            status_page: false,
            handler: Handler::default(),
            locations: Vec::new(),
            noname: false,
            limit_except: None,
            lmt: false,
            loc,
            try_files: None,
            internal: false,
        }
    }

    /// The locations inside this one: nested `location` blocks, the
    /// anonymous locations of its `if` blocks, and of its `limit_except`.
    pub fn children(&self) -> impl Iterator<Item = &Location> {
        self.locations
            .iter()
            .chain(self.rewrite.iter().filter_map(|op| match op {
                RewriteOp::If(i) => i.location.as_ref(),
                _ => None,
            }))
            .chain(self.limit_except.as_deref().map(|e| &e.location))
    }

    /// The location whose settings serve `method` here: the `limit_except`
    /// block's when the method is not one it lets through (nginx's
    /// `ngx_http_update_location_config`), else this one.
    pub fn for_method(&self, method: &str) -> &Location {
        match &self.limit_except {
            Some(e) if !e.methods.iter().any(|m| m == method) => &e.location,
            _ => self,
        }
    }

    /// [`Location::children`], mutably.
    pub fn children_mut(&mut self) -> impl Iterator<Item = &mut Location> {
        self.locations
            .iter_mut()
            .chain(self.rewrite.iter_mut().filter_map(|op| match op {
                RewriteOp::If(i) => i.location.as_mut(),
                _ => None,
            }))
            .chain(self.limit_except.as_deref_mut().map(|e| &mut e.location))
    }
}

/// `limit_except METHOD … { … }`.
#[derive(Clone, Debug)]
pub struct LimitExcept {
    /// The methods let through, uppercase (`GET` brings `HEAD`).
    pub methods: Vec<String>,
    /// The block's anonymous location: its settings apply to every other
    /// method.
    pub location: Location,
}

/// `root` or `alias`.
#[derive(Clone, Debug)]
pub enum Root {
    /// `root`: the URI is appended to it.
    Root(Template),
    /// `alias`: replaces the location's prefix.
    Alias(Template),
}

/// `types { … }`: extension → MIME type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Types {
    /// Lower-case extension → type.
    pub by_ext: HashMap<String, Arc<str>>,
}

impl Types {
    /// nginx's types when no `types` block is in force.
    pub fn builtin() -> Types {
        let mut by_ext = HashMap::new();
        by_ext.insert("html".into(), "text/html".into());
        by_ext.insert("gif".into(), "image/gif".into());
        by_ext.insert("jpg".into(), "image/jpeg".into());
        Types { by_ext }
    }
}

/// `access_log`.
#[derive(Clone, Debug)]
pub enum AccessLogs {
    /// `access_log off`.
    Off,
    /// One or more logs.
    Logs(Vec<AccessLog>),
}

impl AccessLogs {
    /// nginx's default: `logs/access.log combined` (made absolute by the loader).
    pub fn default_log() -> AccessLogs {
        AccessLogs::Logs(vec![AccessLog {
            target: AccessTarget::Fixed(LogTarget::File(PathBuf::from("logs/access.log"))),
            format: "combined".into(),
            condition: None,
            buffer: None,
            flush: None,
            gzip: None,
        }])
    }
}

/// Where an access log's lines go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccessTarget {
    /// A file named without variables, or stderr: opened at start.
    Fixed(LogTarget),
    /// A file name with variables, made absolute: opened per line by the
    /// log's writer thread (through `open_log_file_cache`, if set).
    Variable(Template),
}

/// One access log destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessLog {
    /// Where lines go.
    pub target: AccessTarget,
    /// The `log_format` name.
    pub format: String,
    /// `if=condition`: a line is written only when it is neither empty nor `0`.
    pub condition: Option<Template>,
    /// `buffer=size`: lines are gathered up to this many bytes before a write.
    pub buffer: Option<u64>,
    /// `flush=time`: the longest a buffered line waits.
    pub flush: Option<std::time::Duration>,
    /// `gzip[=level]`: each write is a gzip member at this level.
    pub gzip: Option<u32>,
}

/// `log_format NAME [escape=…] string…`.
#[derive(Clone, Debug)]
pub struct LogFormat {
    /// The name.
    pub name: String,
    /// The concatenated format.
    pub template: Template,
    /// `escape=default | json | none`.
    pub escape: super::core_model::LogEscape,
}

/// The predefined `combined` format.
pub const COMBINED_FORMAT: &str = "$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \"$http_referer\" \"$http_user_agent\"";

/// `aio`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Aio {
    /// `aio off`: file operations on the event loop, as nginx does by default.
    Off,
    /// `aio threads[=pool]`: the pool's name, possibly with variables.
    Threads(Template),
}

/// `error_page code… [=[response]] uri`.
#[derive(Clone, Debug)]
pub struct ErrorPage {
    /// The statuses it applies to.
    pub codes: Vec<u16>,
    /// `=code` (`Some(Some(c))`), `=` (`Some(None)`: the target's status), or none.
    pub overwrite: Option<Option<u16>>,
    /// The URI (or `@name`, or an absolute URL for a redirect).
    pub uri: Template,
}

/// `add_header name value [always]`.
#[derive(Clone, Debug)]
pub struct AddHeader {
    /// Header name.
    pub name: String,
    /// Header value (may hold variables).
    pub value: Template,
    /// `always`: also on error responses.
    pub always: bool,
}

/// The content handler of a location (nginx's `clcf->handler`, or the
/// static/index modules when none is set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Handler {
    /// Files: `root`/`alias`, `index`, ranges, conditionals.
    #[default]
    Static,
    /// `nowait_status`: the measurements.
    Status,
    /// `proxy_pass`.
    Proxy,
    /// `stub_status`: nginx's connection counters as text.
    StubStatus,
    /// `empty_gif`: a 1×1 transparent GIF.
    EmptyGif,
}

/// What defines a configuration-defined variable (nginx's get handler of
/// the variable): a `map` or `split_clients` computes it when first read; a
/// regex's named capture is not found until a match sets it; a variable
/// only `set` assigns is empty (with a warning) until it is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarDef {
    /// `map`: the index in [`HttpConf::maps`].
    Map(usize),
    /// `split_clients`: the index in [`HttpConf::split_clients`].
    Split(usize),
    /// A named capture of a regular expression.
    Capture,
    /// Only `set` assigns it.
    Set,
}

/// `split_clients STRING $VAR { pct value; … }`.
#[derive(Clone, Debug)]
pub struct SplitClients {
    /// What is hashed.
    pub key: Template,
    /// The variable defined, without `$`.
    pub var: String,
    /// (share in hundredths of a percent, value); 0 stands for `*`, which
    /// takes whatever hash reaches it.
    pub parts: Vec<(u32, String)>,
    /// Where it was declared.
    pub loc: Loc,
}

/// A shared pointer to a resolved location configuration.
pub type LocConfRef = Arc<LocConf>;
