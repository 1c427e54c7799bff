//! Syntax tree → typed configuration: walks the tree against the directive
//! table, applies each directive to its scope, then merges levels and checks
//! cross-references. Every error is collected; none stops the walk.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::dirs::Dirs;
use super::error::{ConfError, Diagnostics};
use super::model::{EventsConf, HttpConf, Location, MainConf, RewriteOp, Server, Upstream};
use super::set_upstream::{UpstreamEntry, UpstreamState};
use super::source::Loc;
use super::syntax::Directive;
use super::table::{self, Contexts, Status};
use super::template::Template;
use super::zones::Zones;

/// `buffer=`, `flush=` and `gzip=` of a buffered access log.
pub type BufferedParams = (Option<u64>, Option<std::time::Duration>, Option<u32>);

/// Main-context values as written, before defaults (so duplicates show).
#[derive(Debug, Default)]
pub struct MainSet {
    /// `worker_processes`.
    pub worker_processes: Option<super::model::WorkerProcesses>,
    /// `user`.
    pub user: Option<(String, Option<String>)>,
    /// Where `user` was set.
    pub user_loc: Option<Loc>,
    /// `daemon`.
    pub daemon: Option<bool>,
    /// `pid`.
    pub pid: Option<PathBuf>,
    /// `error_log`.
    pub error_logs: Vec<super::model::ErrorLogConf>,
    /// `thread_pool`.
    pub thread_pools: Vec<super::model::ThreadPoolConf>,
    /// `worker_shutdown_timeout`.
    pub worker_shutdown_timeout: Option<std::time::Duration>,
    /// `worker_rlimit_nofile`.
    pub worker_rlimit_nofile: Option<u64>,
    /// `worker_priority`.
    pub worker_priority: Option<i32>,
    /// `worker_cpu_affinity`.
    pub worker_cpu_affinity: Option<super::set_sched::CpuAffinity>,
    /// `env`, in order.
    pub env: Vec<super::model::EnvVar>,
    /// `events`.
    pub events: Option<EventsConf>,
    /// The events block's own duplicates tracker.
    pub events_set: EventsSet,
    /// `http`.
    pub http: Option<HttpConf>,
}

/// Which events directives were written (for "is duplicate").
#[derive(Debug, Default)]
pub struct EventsSet {
    /// `worker_connections` seen.
    pub worker_connections: bool,
    /// `accept_mutex` seen.
    pub accept_mutex: bool,
    /// `accept_mutex_delay` seen.
    pub accept_mutex_delay: bool,
    /// `multi_accept` seen.
    pub multi_accept: bool,
    /// `use` seen.
    pub use_method: bool,
    /// `loop_turn_budget` seen.
    pub turn_budget: bool,
}

/// The block a directive appears in, with the value being built for it.
pub enum Scope<'a> {
    /// The main context.
    Main(&'a mut MainSet),
    /// `events { }`.
    Events(&'a mut EventsConf, &'a mut EventsSet),
    /// `http { }`.
    Http(&'a mut HttpConf),
    /// `server { }`.
    Server(&'a mut Server),
    /// `location { }`, or the block of an `if` in a location (the
    /// location's `noname` is set).
    Location(&'a mut Location),
    /// The block of an `if` in a server: rewrite instructions only, and
    /// the settings the block writes (nginx gives it a location
    /// configuration that no request ever uses).
    ServerIf(&'a mut Vec<RewriteOp>, &'a mut super::inherit::LocSet),
    /// `upstream { }`, with what the block has set beyond the model.
    Upstream(&'a mut Upstream, &'a mut UpstreamState),
    /// `acme_issuer { }` (nginx's ACME module), as written.
    AcmeIssuer(&'a mut super::set_acme::IssuerSet),
}

impl Scope<'_> {
    /// This scope's context bit.
    pub fn context(&self) -> Contexts {
        match self {
            Scope::Main(_) => table::MAIN,
            Scope::Events(..) => table::EVENTS,
            Scope::Http(_) => table::HTTP,
            Scope::Server(_) => table::SERVER,
            Scope::Location(l) if l.lmt => table::LMT,
            Scope::Location(l) if l.noname => table::LIF,
            Scope::Location(_) => table::LOCATION,
            Scope::ServerIf(..) => table::SIF,
            Scope::Upstream(..) => table::UPSTREAM,
            Scope::AcmeIssuer(_) => table::ACME_ISSUER,
        }
    }

    /// The inherited settings of an http, server or location scope.
    pub fn loc_set(&mut self) -> Option<&mut super::inherit::LocSet> {
        match self {
            Scope::Http(h) => Some(&mut h.set),
            Scope::Server(s) => Some(&mut s.set),
            Scope::Location(l) => Some(&mut l.set),
            Scope::ServerIf(_, set) => Some(set),
            _ => None,
        }
    }

    /// The rewrite script of a server, location or `if` scope.
    pub fn script(&mut self) -> Option<&mut Vec<RewriteOp>> {
        match self {
            Scope::Server(s) => Some(&mut s.rewrite),
            Scope::Location(l) => Some(&mut l.rewrite),
            Scope::ServerIf(script, _) => Some(script),
            _ => None,
        }
    }

    /// The server-wide settings of an http or server scope.
    pub fn srv_set(&mut self) -> Option<&mut super::inherit::SrvSet> {
        match self {
            Scope::Http(h) => Some(&mut h.srv_set),
            Scope::Server(s) => Some(&mut s.srv_set),
            _ => None,
        }
    }
}

/// The state of one load: where paths resolve and what was found.
pub struct Builder {
    /// Relative paths (root, logs, pid) resolve against this.
    pub prefix: PathBuf,
    /// The directory of the configuration file (nginx's `conf_prefix`):
    /// the ssl module's files resolve against it.
    pub conf_prefix: PathBuf,
    /// Every message so far.
    pub diags: Diagnostics,
    /// Directives that are parsed but not implemented yet.
    pub not_implemented: Vec<(String, Loc)>,
    /// Uses of directives that are accepted and have no effect
    /// ([`Status::NoEffect`]), which `-t` reports.
    pub no_effect: Vec<ConfError>,
    /// Names of configuration-defined variables used anywhere, checked once
    /// all are defined.
    pub var_uses: Vec<(String, Loc)>,
    /// Variables defined by the configuration (`set`, `map`,
    /// `split_clients`, named captures).
    pub defined_vars: HashSet<String>,
    /// The variables `set` assigns, lowercase.
    pub set_vars: HashSet<String>,
    /// The named captures of regular expressions, lowercase.
    pub capture_vars: HashSet<String>,
    /// Whether some `set` assigns a built-in or family variable.
    pub sets_builtins: bool,
    /// `aio threads=…` uses, checked against the declared pools.
    pub pool_uses: Vec<(Template, Loc)>,
    /// `proxy_cache` names with variables, checked against the cache zones
    /// once `split_clients` values are known.
    pub cache_zone_uses: Vec<(Template, Loc)>,
    /// Zones a `proxy_cache` named that no `proxy_cache_path` declared,
    /// already reported as unknown (so not again as zones without a size).
    pub unknown_cache_zones: HashSet<String>,
    /// `access_log … FORMAT` uses, checked against `log_format`.
    pub log_format_uses: Vec<(String, Loc)>,
    /// Buffered access log files and their `(buffer, flush, gzip)`: one
    /// file may not be buffered two ways.
    pub buffered_logs: Vec<(PathBuf, BufferedParams)>,
    /// Whether any template uses `$realpath_root` (resolving it costs a
    /// file-system walk per request, made only when needed).
    pub uses_realpath_root: bool,
    /// Whether any template uses `$request_body_file` (request bodies then
    /// keep their temp file's name while the request lasts).
    pub uses_request_body_file: bool,
    /// Upstream groups, blocks and implicit, in nginx's order (moved into
    /// the http configuration when the load finishes).
    pub upstreams: Vec<UpstreamEntry>,
    /// Implicit upstream groups that a later `upstream` block of the same
    /// host took over: (old name, block name), for the `proxy_pass`es
    /// that named the implicit group.
    pub upstream_renames: Vec<(String, String)>,
    /// Shared-memory zones declared so far.
    pub zones: Zones,
    /// Temp and cache directories written so far.
    pub dirs: Dirs,
    /// Where the `http` block closes: nginx reports what it finds when
    /// merging levels there.
    pub http_end: Option<Loc>,
    /// Files the configuration names whose bytes it needs (certificates,
    /// keys, ticket keys), as read.
    pub data: DataFiles,
}

/// Files a configuration names and reads while it loads (certificates,
/// keys), not configuration text: from the files the privileged helper
/// read for a reload, or from the file system. What was read is kept, so
/// that the helper can hand it to the serving process.
#[derive(Debug, Default)]
pub struct DataFiles {
    /// Path → bytes, when another process read them.
    preloaded: Option<std::sync::Arc<std::collections::HashMap<PathBuf, Vec<u8>>>>,
    /// Every file read so far, in order.
    pub read: Vec<(PathBuf, Vec<u8>)>,
}

impl DataFiles {
    /// Files taken from `preloaded` when given (a path not in it is "not
    /// found"), else from the file system.
    pub fn new(
        preloaded: Option<std::sync::Arc<std::collections::HashMap<PathBuf, Vec<u8>>>>,
    ) -> DataFiles {
        DataFiles {
            preloaded,
            read: Vec::new(),
        }
    }

    /// The bytes of `path` (read once per load, however many directives
    /// name it).
    pub fn read(&mut self, path: &Path) -> std::io::Result<Vec<u8>> {
        if let Some((_, b)) = self.read.iter().find(|(p, _)| p == path) {
            return Ok(b.clone());
        }
        let bytes = match &self.preloaded {
            Some(files) => files
                .get(path)
                .cloned()
                .ok_or_else(|| std::io::Error::from_raw_os_error(libc::ENOENT))?,
            None => std::fs::read(path)?,
        };
        self.read.push((path.to_path_buf(), bytes.clone()));
        Ok(bytes)
    }
}

impl Builder {
    /// A builder resolving relative paths against `prefix`.
    pub fn new(prefix: PathBuf) -> Builder {
        Builder {
            conf_prefix: prefix.clone(),
            prefix,
            diags: Diagnostics::default(),
            not_implemented: Vec::new(),
            no_effect: Vec::new(),
            var_uses: Vec::new(),
            defined_vars: HashSet::new(),
            set_vars: HashSet::new(),
            capture_vars: HashSet::new(),
            sets_builtins: false,
            pool_uses: Vec::new(),
            cache_zone_uses: Vec::new(),
            unknown_cache_zones: HashSet::new(),
            log_format_uses: Vec::new(),
            buffered_logs: Vec::new(),
            uses_realpath_root: false,
            uses_request_body_file: false,
            upstreams: Vec::new(),
            upstream_renames: Vec::new(),
            zones: Zones::default(),
            dirs: Dirs::default(),
            http_end: None,
            data: DataFiles::default(),
        }
    }

    /// Records an error at `loc`.
    pub fn error(&mut self, message: impl Into<String>, loc: &Loc) {
        self.diags
            .push(ConfError::emerg(message, Some(loc.clone())));
    }

    /// Records an `[emerg]` line at `loc` that does not stop the
    /// configuration ([`super::error::Level::EmergIgnored`]).
    pub fn error_continue(&mut self, message: impl Into<String>, loc: &Loc) {
        self.diags.push(ConfError {
            level: super::error::Level::EmergIgnored,
            message: message.into(),
            loc: Some(loc.clone()),
        });
    }

    /// Records a `[notice]` at `loc` that `-t` prints (something accepted
    /// that does less than the text says).
    pub fn notice(&mut self, message: impl Into<String>, loc: &Loc) {
        self.no_effect
            .push(ConfError::notice(message, Some(loc.clone())));
    }

    /// Records a warning at `loc`.
    pub fn warn(&mut self, message: impl Into<String>, loc: &Loc) {
        self.diags.push(ConfError::warn(message, Some(loc.clone())));
    }

    /// Resolves a path against the configuration file's directory, as
    /// nginx's `ngx_conf_full_name(cycle, name, 1)` (the ssl module's
    /// certificates, keys and other files).
    pub fn conf_full_path(&self, p: &str) -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.conf_prefix.join(p)
        }
    }

    /// Resolves a path against the prefix, as nginx's `ngx_conf_full_name`.
    pub fn full_path(&self, p: &str) -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.prefix.join(p)
        }
    }

    /// Defines the variable `name` (kept lowercase, as nginx does).
    pub fn define(&mut self, name: &str) {
        self.defined_vars.insert(name.to_ascii_lowercase());
    }

    /// Defines the named captures of `re` as variables.
    pub fn define_captures(&mut self, re: &crate::config::regex::Regex) {
        for name in re.capture_names().into_iter().flatten() {
            let lower = name.to_ascii_lowercase();
            self.defined_vars.insert(lower.clone());
            self.capture_vars.insert(lower);
        }
    }

    /// Parses a template argument and remembers its variables for checking.
    pub fn template(&mut self, s: &str, loc: &Loc) -> Result<Template, String> {
        let t = Template::parse(s)?;
        for v in t.vars() {
            match v {
                super::vars::Var::Named(name) => {
                    self.var_uses.push((name.to_string(), loc.clone()));
                }
                super::vars::Var::Builtin(super::vars::Builtin::RealpathRoot) => {
                    self.uses_realpath_root = true;
                }
                super::vars::Var::Builtin(super::vars::Builtin::RequestBodyFile) => {
                    self.uses_request_body_file = true;
                }
                _ => {}
            }
        }
        Ok(t)
    }

    /// Applies every directive of `body` to `scope`.
    pub fn walk(&mut self, scope: &mut Scope<'_>, body: &[Directive]) {
        for d in body {
            self.apply(scope, d);
        }
    }

    fn apply(&mut self, scope: &mut Scope<'_>, d: &Directive) {
        let ctx = scope.context();
        let mut specs = table::lookup(&d.name).peekable();
        if specs.peek().is_none() {
            self.error(format!("unknown directive \"{}\"", d.name), &d.loc);
            return;
        }
        let Some(spec) = specs.find(|s| s.contexts & ctx != 0) else {
            self.error(
                format!("\"{}\" directive is not allowed here", d.name),
                &d.loc,
            );
            return;
        };
        if spec.block && d.block.is_none() {
            self.error(
                format!("directive \"{}\" has no opening \"{{\"", d.name),
                &d.loc,
            );
            return;
        }
        if !spec.block && d.block.is_some() {
            self.error(
                format!("directive \"{}\" is not terminated by \";\"", d.name),
                &d.loc,
            );
            return;
        }
        if !spec.args.accepts(d.args.len()) {
            self.error(
                format!("invalid number of arguments in \"{}\" directive", d.name),
                &d.loc,
            );
            return;
        }
        match spec.status {
            Status::NotYet if ctx != table::UPSTREAM => {
                self.not_implemented.push((d.name.clone(), d.loc.clone()));
            }
            Status::NoEffect(why) => self.no_effect.push(ConfError::notice(
                format!(
                    "\"{}\" is accepted and has no effect in nowait ({why})",
                    d.name
                ),
                Some(d.loc.clone()),
            )),
            _ => {}
        }
        if let Err(msg) = (spec.set)(self, scope, d) {
            self.error(msg, &d.loc);
        }
    }
}

/// nginx's "is duplicate" check for a value slot.
pub fn set_once<T>(slot: &mut Option<T>, value: T, name: &str) -> Result<(), String> {
    if slot.is_some() {
        return Err(format!("\"{name}\" directive is duplicate"));
    }
    *slot = Some(value);
    Ok(())
}

/// `invalid value "V" in "NAME" directive`.
pub fn invalid(d: &Directive, value: &str) -> String {
    format!("invalid value \"{value}\" in \"{}\" directive", d.name)
}

/// Sets an on/off directive once (`ngx_conf_set_flag_slot`: a repeat is a
/// duplicate whatever its value).
pub fn set_flag(slot: &mut Option<bool>, d: &Directive) -> Result<(), String> {
    if slot.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let v = super::value::flag(d.arg(0))
        .ok_or_else(|| format!("{}, it must be \"on\" or \"off\"", invalid(d, d.arg(0))))?;
    set_once(slot, v, &d.name)
}

/// The main-context conf of a finished load.
pub fn finish_main(set: MainSet, prefix: &Path, error_log: Option<&str>) -> MainConf {
    use super::model::{ErrorLogConf, LogLevel, LogTarget, WorkerProcesses};
    MainConf {
        worker_processes: set.worker_processes.unwrap_or(WorkerProcesses::Count(1)),
        user: Some(set.user.unwrap_or_else(|| ("nobody".to_string(), None))),
        user_loc: set.user_loc,
        daemon: set.daemon.unwrap_or(true),
        pid: Some(set.pid.unwrap_or_else(|| prefix.join("logs/nowait.pid"))),
        error_logs: if set.error_logs.is_empty() {
            // `-e` replaces the compiled-in default, as in nginx.
            let target = match error_log {
                Some("stderr") => LogTarget::Stderr,
                Some(p) => LogTarget::File(prefix.join(p)),
                None => LogTarget::File(prefix.join("logs/error.log")),
            };
            vec![ErrorLogConf {
                target,
                level: LogLevel::Error,
            }]
        } else {
            set.error_logs
        },
        thread_pools: set.thread_pools,
        worker_shutdown_timeout: set.worker_shutdown_timeout,
        worker_rlimit_nofile: set.worker_rlimit_nofile,
        // 0 is nginx's unset value: no `setpriority()` call.
        worker_priority: set.worker_priority.filter(|&p| p != 0),
        worker_cpu_affinity: set.worker_cpu_affinity,
        env: set.env,
    }
}
