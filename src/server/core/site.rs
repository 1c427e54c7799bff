//! One configuration generation, ready to serve: the typed configuration
//! plus everything derived from it once (virtual-host tables, MIME tables,
//! pools, open logs). Shared read-only by every worker through an `Arc`; a
//! reload builds a new `Site` while the old one finishes its requests.

use std::collections::HashMap;
use std::sync::Arc;

use crate::config::model::{
    AccessLogs, AccessTarget, Config, HttpConf, ListenAddr, LogFormat, LogTarget, Server,
};
use crate::io::Pools;
use crate::log::writer::DEFAULT_BUFFER_BYTES;
use crate::log::{Batching, Destination, DynamicLogs, ErrorLog, LogFiles, LogWriter};
use crate::sys::error::SysError;

use crate::server::core::vhost::VirtualHosts;

/// Everything the workers need from one configuration.
pub struct Site {
    /// The configuration itself.
    pub config: Config,
    /// Server selection tables.
    pub vhosts: VirtualHosts,
    /// The named thread pools.
    pub pools: Pools,
    /// The error log.
    pub error_log: ErrorLog,
    /// Access log writers by destination.
    pub access_logs: HashMap<Destination, Arc<LogWriter>>,
    /// The writer of access logs whose file name has variables, when the
    /// configuration has any.
    pub dynamic_logs: Option<DynamicLogs>,
    /// Every open log file, for reopen (SIGUSR1) and flush at exit.
    pub log_files: LogFiles,
    /// What outlives this generation: pools, idle upstream connections,
    /// measurements.
    pub shared: Arc<crate::server::core::shared::Shared>,
    /// The upstream groups, with this generation's peer state.
    pub upstreams: crate::server::upstream::groups::Groups,
    /// The cache zones by name (the process's, kept across reloads).
    pub caches: HashMap<String, Arc<crate::cache::zone::Zone>>,
    /// The `limit_req` and `limit_conn` zones (the process's tables).
    pub limits: crate::server::core::hooks::access::Limits,
    /// Each server's TLS, by server index (`None` for a server without
    /// TLS).
    pub tls: Vec<Option<crate::server::engine::tls::ServerTls>>,
    /// Each location's client configuration for upstreams spoken to over
    /// TLS, by plan id (`UpstreamTlsPlan::id`), with its peers' sessions.
    pub upstream_tls: Vec<Arc<crate::tls::client::UpstreamTls>>,
    /// Each location's certificates loaded per request
    /// (`proxy_ssl_certificate` with variables), by plan id.
    pub upstream_certs: Vec<Arc<crate::server::engine::tls::dynamic::Loaded>>,
}

fn destination(t: &LogTarget) -> Destination {
    match t {
        LogTarget::Stderr => Destination::Stderr,
        LogTarget::File(p) => Destination::File(p.clone()),
    }
}

impl Site {
    /// Opens the logs and starts the pools of `config`. `files` carries log
    /// files already open from a previous generation (kept, not reopened).
    pub fn new(
        mut config: Config,
        mut files: LogFiles,
        shared: &Arc<crate::server::core::shared::Shared>,
        identity: crate::server::core::shared::Identity,
        thread_init: crate::io::pool::ThreadInit,
    ) -> Result<Site, SysError> {
        let mut error_log = ErrorLog::new();
        for e in &config.main.error_logs {
            let w = files.open(destination(&e.target))?;
            error_log.add(w, e.level);
        }
        let mut access_logs = HashMap::new();
        let mut dynamic = false;
        if let Some(h) = &config.http {
            // How each file gathers lines: the `buffer=` of any log naming
            // it applies to all of them, as nginx's buffer belongs to the
            // open file.
            let mut batching: HashMap<Destination, Batching> = HashMap::new();
            for conf in h.loc_confs() {
                if let AccessLogs::Logs(list) = &conf.access_log {
                    for l in list {
                        if let (AccessTarget::Fixed(t), Some(bytes)) = (&l.target, l.buffer) {
                            batching.insert(
                                destination(t),
                                Batching {
                                    bytes: bytes as usize,
                                    wait: l.flush,
                                    gzip: l.gzip,
                                },
                            );
                        }
                    }
                }
            }
            for conf in h.loc_confs() {
                if let AccessLogs::Logs(list) = &conf.access_log {
                    for l in list {
                        let AccessTarget::Fixed(t) = &l.target else {
                            dynamic = true;
                            continue;
                        };
                        let d = destination(t);
                        if let std::collections::hash_map::Entry::Vacant(e) = access_logs.entry(d) {
                            let how = batching.get(e.key()).copied().unwrap_or_default();
                            // Room for a whole buffer while the last is written.
                            let capacity = DEFAULT_BUFFER_BYTES.max(2 * how.bytes);
                            let w = files.open_batched(e.key().clone(), capacity, how)?;
                            e.insert(w);
                        }
                    }
                }
            }
        }
        if let Some(h) = &mut config.http {
            // Each level's `error_log`, or the main one: requests log where
            // they are served.
            let mut failed = None;
            h.each_loc_conf_mut(&mut |conf| {
                if conf.error_log.confs.is_empty() {
                    conf.error_log.log = error_log.clone();
                    return;
                }
                let mut log = ErrorLog::new();
                for e in &conf.error_log.confs {
                    match files.open(destination(&e.target)) {
                        Ok(w) => log.add(w, e.level),
                        Err(err) => failed = Some(err),
                    }
                }
                conf.error_log.log = log;
            });
            if let Some(e) = failed {
                return Err(e);
            }
        }
        // A failed write to an access log is an `[alert]` in the error log,
        // as nginx's `write() to "…" failed (28: No space left on device)`;
        // not for a file that is also an error log (the alert would go to
        // the file that fails, and the writer would hold itself).
        for w in access_logs.values() {
            let is_error_log = error_log.writers().any(|e| Arc::ptr_eq(e, w));
            w.set_write_alert((!is_error_log).then(|| write_alert(&error_log)));
        }
        let dynamic_logs = if dynamic {
            Some(DynamicLogs::start().map_err(|e| SysError::new("pthread_create", e))?)
        } else {
            None
        };
        let caches = match &config.http {
            Some(h) => shared.zones_for(&h.cache_paths, &thread_init, &error_log),
            None => HashMap::new(),
        };
        let pools: Pools = shared
            .pools_for(
                &config.main.thread_pools,
                identity,
                config.main.worker_priority,
                thread_init.clone(),
            )
            .map_err(|(name, e)| {
                SysError::with_arg("pthread_create", format!("thread pool \"{name}\""), e)
            })?;
        let workers = config.main.worker_processes.count();
        let upstreams = match &config.http {
            Some(h) => {
                crate::server::upstream::groups::Groups::new(h, workers, shared).map_err(|e| {
                    SysError::with_arg("upstream", e, std::io::ErrorKind::InvalidInput.into())
                })?
            }
            None => crate::server::upstream::groups::Groups::default(),
        };
        let limits = match &config.http {
            Some(h) => shared.limits.limits_for(h).map_err(|e| {
                SysError::with_arg("limit zone", e, std::io::ErrorKind::InvalidInput.into())
            })?,
            None => Default::default(),
        };
        let vhosts = config
            .http
            .as_ref()
            .map(VirtualHosts::new)
            .unwrap_or_default();
        let tls = match &config.http {
            Some(h) => crate::server::engine::tls::configs(h, &shared.tls).map_err(|e| {
                SysError::with_arg("SSL_CTX_new", e, std::io::ErrorKind::InvalidInput.into())
            })?,
            None => Vec::new(),
        };
        let upstream_tls = match &config.http {
            Some(h) => crate::server::upstream::tls::configs(h).map_err(|e| {
                SysError::with_arg("SSL_CTX_new", e, std::io::ErrorKind::InvalidInput.into())
            })?,
            None => Vec::new(),
        };
        let upstream_certs = upstream_tls.iter().map(|_| Arc::default()).collect();
        if let Some(h) = &config.http {
            // The issuers' threads take this configuration (and start, at
            // the first one); the certificates their state paths hold are
            // served from now on.
            shared.acme.configure(&h.acme, &error_log);
        }
        crate::server::core::hooks::status_ring::start(shared, &thread_init, &error_log);
        if let Err(e) = crate::io::pressure::start(&thread_init) {
            // Without it memory counts as plentiful: the loops keep
            // `sendfile()`ing what they find in memory.
            error_log.log(
                crate::log::Level::Alert,
                None,
                format_args!("could not start the memory pressure sampler ({e})"),
            );
        }
        Ok(Site {
            config,
            vhosts,
            pools,
            error_log,
            access_logs,
            dynamic_logs,
            log_files: files,
            shared: shared.clone(),
            upstreams,
            caches,
            limits,
            tls,
            upstream_tls,
            upstream_certs,
        })
    }

    /// Writes every log line accepted so far, static and dynamic files
    /// alike (the exit path: it waits on the disk).
    pub fn flush_logs(&self) {
        self.log_files.flush_all();
        if let Some(d) = &self.dynamic_logs {
            d.close();
        }
    }

    /// Every upstream server's figures, for the status page.
    pub fn upstream_samples(&self) -> Vec<crate::metrics::upstream::PeerSample> {
        self.upstreams.samples(&self.shared)
    }

    /// Every log destination's counters, for the status page: the files
    /// (and stderr) this generation writes, and the writer of logs whose
    /// names have variables.
    pub fn log_samples(&self) -> Vec<crate::metrics::logs::LogSample> {
        let mut out: Vec<_> = self
            .log_files
            .iter()
            .map(|w| {
                let stats = w.stats();
                crate::metrics::logs::LogSample {
                    log: match w.destination() {
                        Destination::Stderr => "stderr".to_string(),
                        Destination::File(p) => p.display().to_string(),
                    },
                    written: stats.written,
                    dropped: stats.dropped,
                    write_errors: stats.write_errors,
                }
            })
            .collect();
        out.sort_by(|a, b| a.log.cmp(&b.log));
        if let Some(d) = &self.dynamic_logs {
            out.push(crate::metrics::logs::LogSample {
                log: crate::metrics::logs::DYNAMIC_LOG.to_string(),
                dropped: d.dropped(),
                ..Default::default()
            });
        }
        out
    }

    /// Every worker's measurements (the process's, across reloads).
    pub fn worker_metrics(&self) -> Vec<Arc<crate::metrics::WorkerMetrics>> {
        self.shared.all_worker_metrics()
    }

    /// The http block (a site without one serves nothing).
    pub fn http(&self) -> Option<&HttpConf> {
        self.config.http.as_ref()
    }

    /// The server for a connection and host.
    pub fn server(
        &self,
        socket_addr: &ListenAddr,
        local: &ListenAddr,
        host: Option<&str>,
    ) -> Option<&Server> {
        let h = self.http()?;
        h.servers.get(self.vhosts.find(socket_addr, local, host))
    }

    /// [`Site::server`], with the `server_name` regular expression that
    /// chose it, if one did.
    pub fn server_match(
        &self,
        socket_addr: &ListenAddr,
        local: &ListenAddr,
        host: Option<&str>,
    ) -> Option<(&Server, Option<&crate::config::regex::Regex>)> {
        let h = self.http()?;
        let (i, re) = self.vhosts.find_match(socket_addr, local, host);
        Some((h.servers.get(i)?, re))
    }

    /// The server a handshake's `sni` named, when it named one
    /// (nginx's `hc->ssl_servername`, set only then), by index; `sni` is
    /// taken as `ngx_http_validate_host` leaves it (lower case, no final
    /// dot).
    pub fn sni_server(
        &self,
        socket_addr: &ListenAddr,
        local: &ListenAddr,
        sni: &str,
    ) -> Option<&Server> {
        let h = self.http()?;
        let i = self.vhosts.named(socket_addr, local, sni)?;
        h.servers.get(i)
    }

    /// Whether connections accepted on `socket_addr` speak TLS.
    pub fn is_ssl(&self, socket_addr: &ListenAddr) -> bool {
        self.vhosts.is_ssl(socket_addr)
    }

    /// The TLS a handshake naming `sni` gets on this connection, as
    /// nginx's `ngx_http_ssl_servername` picks it: `(true, None)` when the
    /// server it names refuses handshakes (`ssl_reject_handshake`); else
    /// that server's configuration, or the address's default server's when
    /// the named one has none.
    pub fn tls_server(
        &self,
        socket_addr: &ListenAddr,
        local: &ListenAddr,
        sni: Option<&str>,
    ) -> Option<(bool, Option<&crate::server::engine::tls::ServerTls>)> {
        let h = self.http()?;
        let lower = sni.map(str::to_ascii_lowercase);
        let i = self.vhosts.find(socket_addr, local, lower.as_deref());
        let s = h.servers.get(i)?;
        if s.srv.ssl_reject_handshake {
            return Some((true, None));
        }
        if let Some(Some(c)) = self.tls.get(i) {
            return Some((false, Some(c)));
        }
        let d = self.vhosts.default_index(socket_addr, local)?;
        let reject = h.servers.get(d).is_some_and(|s| s.srv.ssl_reject_handshake);
        Some((reject, self.tls.get(d).and_then(Option::as_ref)))
    }

    /// A log format by name.
    pub fn log_format(&self, name: &str) -> Option<&LogFormat> {
        self.http()?.log_formats.get(name)
    }

    /// The access log writer for a target.
    pub fn access_writer(&self, t: &LogTarget) -> Option<&Arc<LogWriter>> {
        self.access_logs.get(&destination(t))
    }
}

/// Logs a failed access-log write as nginx does, to `log`:
/// `[alert] … write() to "FILE" failed (28: No space left on device)`.
fn write_alert(log: &ErrorLog) -> crate::log::WriteAlert {
    let log = log.clone();
    Arc::new(move |path: &std::path::Path, e: &std::io::Error| {
        log.log(
            crate::log::Level::Alert,
            None,
            format_args!(
                "write() to \"{}\" failed ({})",
                path.display(),
                match e.raw_os_error() {
                    Some(n) => format!("{n}: {}", crate::sys::error::strerror(n)),
                    None => e.to_string(),
                }
            ),
        );
    })
}
