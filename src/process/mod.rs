//! The process: start-up in nginx's order, the generations of workers, and
//! the signals that drive them.
//!
//! Start-up: refuse what is not implemented; bind every listening socket;
//! check the log files can be opened; fork to the background (`daemon on`)
//! before any thread exists; write the pid file; block the control signals;
//! open the logs and start the pools; start the workers (which set their
//! priority and CPUs and drop to `user`: [`sched`]). Then the main thread
//! waits for signals: SIGHUP reloads (a new generation starts on the same
//! sockets, the old one finishes its requests), SIGQUIT stops gracefully,
//! SIGTERM/SIGINT stop at once, SIGUSR1 reopens the logs.

pub mod confine;
pub mod copy_tuning;
pub mod environ;
pub mod identity;
pub mod paths;
pub mod pidfile;
pub mod privsep;
pub mod sched;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::config::LoadOptions;
use crate::config::model::Config;
use crate::log::{Level, LogFiles, say};
use crate::server::core::shared::Shared;
use crate::server::core::site::Site;
use crate::server::engine::listen::{self, Listeners, Note};
use crate::server::engine::worker::{
    self, AcceptMutex, Control, Worker, WorkerSocket, WorkerSockets,
};
use crate::sys::signal::{Signal, block_control_signals};

/// How often the main thread looks for finished old generations.
const REAP_INTERVAL: Duration = Duration::from_millis(500);

/// One configuration's running workers.
struct Generation {
    /// Tells the workers what to do.
    control: watch::Sender<Control>,
    /// Their threads.
    workers: Vec<Worker>,
    /// What they serve (kept for log reopening and pool shutdown).
    site: Arc<Site>,
}

impl Generation {
    /// Tells the workers to hand their idle upstream connections to the
    /// process's tier and waits (at most [`HAND_OVER_WAIT`]) until they
    /// have: the next generation then finds them there from its first
    /// request.
    fn hand_over(&self) {
        let _ = self.control.send(Control::HandOver);
        let deadline = std::time::Instant::now() + HAND_OVER_WAIT;
        while !self
            .workers
            .iter()
            .all(|w| w.handed.load(std::sync::atomic::Ordering::Acquire) || w.thread.is_finished())
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    fn finished(&self) -> bool {
        self.workers.iter().all(|w| w.thread.is_finished())
    }

    fn join(self) {
        for w in self.workers {
            let _ = w.thread.join();
        }
        self.site.flush_logs();
        let shared = self.site.shared.clone();
        drop(self.site);
        // Pools this generation alone held (a reload dropped them) go now.
        shared.reap_pools();
    }
}

/// The number of workers `worker_processes` asks for.
pub fn worker_count(c: &Config) -> usize {
    c.main.worker_processes.count()
}

/// What stops `config` from running though it parsed: the directives
/// nowait refuses ([`crate::config::refuse_not_implemented`]), then too few
/// `worker_connections` for the listening sockets, as nginx's
/// `ngx_event_init_conf` checks once they are known (each `reuseport`
/// address counts once per worker, and one more connection is nginx's
/// channel to its master): `0 worker_connections are not enough for 1
/// listening sockets`.
pub fn refusals(config: &Config) -> Vec<String> {
    let mut out = crate::config::refuse_not_implemented(config);
    let workers = worker_count(config);
    let listening: usize = wanted_listens(config)
        .iter()
        .map(|l| if l.reuseport { workers } else { 1 })
        .sum();
    let connections = config.events.worker_connections;
    if connections < listening + 1 {
        out.push(format!(
            "{connections} worker_connections are not enough for {listening} listening sockets"
        ));
    }
    out
}

fn wanted_listens(c: &Config) -> Vec<crate::config::model::Listen> {
    let all = c.http.iter().flat_map(|h| {
        h.servers.iter().flat_map(|s| {
            // `deferred` holds a silent connection as long as the server
            // would wait for its head (nginx's `post_accept_timeout`).
            let secs = u32::try_from(s.srv.client_header_timeout.as_secs()).unwrap_or(u32::MAX);
            s.listens.iter().cloned().map(move |mut l| {
                l.deferred_secs = secs;
                l
            })
        })
    });
    listen::wanted(all)
}

/// The listening sockets of the running server. Dropped on a way out
/// before the error log exists (a failed start-up), it closes them and
/// removes unix-domain sockets' files, saying what failed on the
/// terminal; the normal exit closes them itself ([`Bound::close`]), into
/// the error log.
struct Bound(Listeners);

impl Bound {
    /// Closes every socket (removing unix-domain sockets' files, as nginx's
    /// master at exit) and logs what failed.
    fn close(&mut self, log: &crate::log::ErrorLog) {
        log_notes(log, std::mem::take(&mut self.0).close());
    }
}

impl Drop for Bound {
    fn drop(&mut self) {
        for n in std::mem::take(&mut self.0).close() {
            say(&format!("[{}] {}", n.level.as_str(), n.text));
        }
    }
}

/// Writes what the listening sockets noted into the error log.
fn log_notes(log: &crate::log::ErrorLog, notes: Vec<Note>) {
    for n in notes {
        log.log(n.level, None, format_args!("{}", n.text));
    }
}

/// What `-t` checks beyond the syntax, as `nginx -t` does: no directive is
/// refused as not implemented, and the `user` exists (nginx looks it up
/// while parsing). `Ok` carries the warnings to print; `Err` the `[emerg]`
/// lines.
///
/// Unlike `nginx -t`, the log files are not opened and the temporary
/// directories not made: `-t` creates nothing, so it can check a
/// configuration meant for another prefix or machine (a start reports a
/// log it cannot open, or a directory it cannot make, before it serves).
pub fn test_files(config: &Config) -> Result<Vec<String>, Vec<String>> {
    let refused = refusals(config);
    if !refused.is_empty() {
        return Err(refused);
    }
    let (_, warning) = identity::resolve(&config.main).map_err(|e| vec![e])?;
    Ok(warning.into_iter().collect())
}

/// Opens (creating) every log file once, so that a bad path is reported on
/// the terminal before the server forks away from it.
fn check_logs(c: &Config) -> Result<(), String> {
    let paths = privsep::log_paths(c);
    for p in paths {
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&p)
            .map_err(|e| {
                format!(
                    "open() \"{}\" failed ({})",
                    p.display(),
                    crate::sys::error::errno_text(&e)
                )
            })?;
    }
    Ok(())
}

/// The longest a reload waits for the old workers to hand over their idle
/// upstream connections (a loop answers within a turn).
const HAND_OVER_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// Descriptors reserved beyond two per worker connection: listening
/// sockets, logs, pools' and the cache's own.
const FD_SLACK: u64 = 256;

/// Starts the workers of a site on the sockets.
fn start_generation(
    site: Arc<Site>,
    listeners: &Listeners,
    workers: usize,
    id: u64,
    init: &Arc<dyn Fn() + Send + Sync>,
) -> Result<Generation, String> {
    if let Some(n) = site.config.main.worker_rlimit_nofile {
        if let Err(e) = crate::sys::process::set_nofile_limit(n) {
            site.error_log.log(
                crate::log::Level::Alert,
                None,
                format_args!(
                    "setrlimit(RLIMIT_NOFILE, {n}) failed ({})",
                    crate::sys::error::errno_text(&e)
                ),
            );
        }
    }
    // Every descriptor the workers may hold (connections, upstreams, open
    // files), reserved now so no loop grows the table while it serves.
    let fds = (site.config.events.worker_connections as u64)
        .saturating_mul(2 * workers as u64)
        .saturating_add(FD_SLACK);
    if let Err(e) = crate::sys::process::reserve_fds(fds) {
        site.error_log.log(
            crate::log::Level::Warn,
            None,
            format_args!("reserving {fds} descriptors failed ({e})"),
        );
    }
    let (control, rx) = watch::channel(Control::Run);
    // `accept_mutex on`: a mutex per shared socket, for every worker.
    let mutexes: std::collections::HashMap<_, _> = listeners
        .by_addr
        .iter()
        .filter(|(_, a)| site.config.events.accept_mutex && !a.listen.reuseport)
        .map(|(addr, _)| (addr.clone(), Arc::new(AcceptMutex::default())))
        .collect();
    // The workers' counts and each shared socket's nudges, to spread
    // connections over the workers (`server::engine::balance`).
    let balance = Arc::new(crate::server::engine::balance::Balance::new(workers));
    let nudges: std::collections::HashMap<_, _> = listeners
        .by_addr
        .iter()
        .filter(|(_, a)| !a.listen.reuseport)
        .map(|(addr, _)| {
            let n = crate::server::engine::balance::Nudges::new(workers);
            (addr.clone(), Arc::new(n))
        })
        .collect();
    let mut started = Vec::new();
    for i in 0..workers {
        let sockets = listeners
            .for_worker(i)
            .map_err(|e| {
                format!(
                    "dup() of a listening socket failed ({})",
                    crate::sys::error::errno_text(&e)
                )
            })?
            .into_iter()
            .map(|(addr, socket)| WorkerSocket {
                shared: !listeners
                    .by_addr
                    .get(&addr)
                    .is_some_and(|a| a.listen.reuseport),
                mutex: mutexes.get(&addr).cloned(),
                nudges: nudges.get(&addr).cloned(),
                addr,
                socket,
            })
            .collect();
        let w = worker::spawn(
            i + 1,
            id,
            site.clone(),
            WorkerSockets {
                sockets,
                balance: balance.clone(),
            },
            rx.clone(),
            sched::worker_init(&site.config.main, i, &site.error_log, init),
        )
        .map_err(|e| {
            format!(
                "could not start worker thread ({})",
                crate::sys::error::errno_text(&e)
            )
        })?;
        started.push(w);
    }
    Ok(Generation {
        control,
        workers: started,
        site,
    })
}

/// Runs the server; returns the exit code.
pub fn run(config: Config, load: LoadOptions) -> i32 {
    // The command line has already refused directives not implemented yet.
    // The environment first: only this thread runs yet.
    if let Err(e) = environ::apply(&config.main) {
        say(&format!("[emerg] {e}"));
        return 1;
    }
    let (identity, warning) = match identity::resolve(&config.main) {
        Ok(x) => x,
        Err(e) => {
            say(&format!("[emerg] {e}"));
            return 1;
        }
    };
    if let Some(w) = warning {
        say(&format!("[warn] {w}"));
    }
    // Control signals are blocked before the first socket listens: a
    // client that sees the port accept may signal at once, and the signal
    // must wait for the loop below rather than take its default action.
    let signals = match block_control_signals() {
        Ok(s) => s,
        Err(e) => {
            say(&format!(
                "[emerg] sigprocmask() failed ({})",
                crate::sys::error::errno_text(&e)
            ));
            return 1;
        }
    };
    let workers = worker_count(&config);
    let mut listeners = Bound(Listeners::default());
    let bound = listeners.0.update(&wanted_listens(&config), workers);
    for n in listeners.0.take_notes() {
        say(&format!("[{}] {}", n.level.as_str(), n.text));
    }
    if let Err(e) = bound {
        say(&format!("[emerg] {e}"));
        return 1;
    }
    if let Err(e) = check_logs(&config) {
        say(&format!("[emerg] {e}"));
        return 1;
    }
    if let Err(e) = paths::create(&config, identity.as_ref()) {
        say(&format!("[emerg] {e}"));
        return 1;
    }
    if config.main.daemon {
        if let Err(e) = crate::sys::process::daemonize() {
            say(&format!("[emerg] {e}"));
            return 1;
        }
    }
    let _pid_file = match &config.main.pid {
        Some(p) => match pidfile::PidFile::write(p, crate::sys::process::getpid()) {
            Ok(f) => Some(f),
            Err(e) => {
                say(&format!("[emerg] {e}"));
                return 1;
            }
        },
        None => None,
    };
    // Root and a `user` to serve as: the root part moves to a helper
    // forked now, while only this thread runs, and this process becomes
    // `user` for good (see `privsep`).
    let mut identity = identity;
    // The memory figures the loops' choice of copy or `sendfile()` goes by
    // are opened while they still can be (before Landlock).
    crate::io::pressure::open();
    // The budget of popular files held in memory while memory is short,
    // and the locked-memory limit it needs, raised while still root.
    crate::io::pins::init_budget();
    if let Some(id) = identity.as_ref().filter(|i| i.uid != 0) {
        // `worker_rlimit_nofile` may raise the hard limit: only root can,
        // so now (as nginx's workers do before they drop root). A reload
        // that raises it further than this is refused by the kernel.
        if let Some(n) = config.main.worker_rlimit_nofile {
            let _ = crate::sys::process::set_nofile_limit(n);
        }
        let mut listening = Some(&mut listeners.0);
        if let Err(e) = privsep::start(&config, &load, id, || {
            // The helper holds no listening socket: a port a reload
            // closes must be free again.
            if let Some(l) = listening.take() {
                *l = Listeners::default();
            }
        }) {
            say(&format!("[emerg] {e}"));
            return 1;
        }
        identity = None;
        // Then Landlock: only what the configuration names (this thread
        // is still the only one, so every thread started later inherits).
        if let Err(e) = confine::apply(&config) {
            say(&format!("[emerg] {e}"));
            return 1;
        }
    }
    let shared = Shared::new();
    let ids = identity.as_ref().map(|i| (i.uid, i.gid));
    let init = identity::thread_init(identity);
    let site = match Site::new(config, LogFiles::new(), &shared, ids, init.clone()) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            say(&format!("[emerg] {e}"));
            return 1;
        }
    };
    let mut generation_id = 1;
    let mut current = match start_generation(site, &listeners.0, workers, generation_id, &init) {
        Ok(g) => g,
        Err(e) => {
            say(&format!("[emerg] {e}"));
            return 1;
        }
    };
    log_started(&current, &listeners.0, workers);
    let mut old: Vec<Generation> = Vec::new();
    loop {
        let sig = match signals.wait_timeout(REAP_INTERVAL) {
            Ok(s) => s,
            Err(e) => {
                current.site.error_log.log(
                    Level::Alert,
                    None,
                    format_args!("sigtimedwait() failed ({e})"),
                );
                None
            }
        };
        reap(&mut old);
        shared.keepalive.sweep(std::time::Instant::now());
        if current.finished() {
            current.site.error_log.log(
                Level::Alert,
                None,
                format_args!("every worker of the current generation has exited"),
            );
            current.join();
            for g in old {
                g.join();
            }
            shared.shutdown_pools();
            return 1;
        }
        match sig {
            None => {}
            Some(Signal::Reload) => {
                current.site.error_log.log(
                    Level::Notice,
                    None,
                    format_args!("signal 1 (SIGHUP) received, reconfiguring"),
                );
                let next = reload(&load, &mut listeners.0, &shared, generation_id + 1, &|| {
                    current.hand_over()
                });
                log_notes(&current.site.error_log, listeners.0.take_notes());
                match next {
                    Ok(next) => {
                        generation_id += 1;
                        let prev = std::mem::replace(&mut current, next);
                        let _ = prev.control.send(Control::Quit);
                        old.push(prev);
                        log_started(&current, &listeners.0, worker_count(&current.site.config));
                    }
                    Err(e) => {
                        let _ = current.control.send(Control::Run);
                        current.site.error_log.log(
                            Level::Emerg,
                            None,
                            format_args!("{e}; the previous configuration stays in use"),
                        )
                    }
                }
            }
            Some(Signal::Reopen) => {
                current.site.error_log.log(
                    Level::Notice,
                    None,
                    format_args!("signal 10 (SIGUSR1) received, reopening logs"),
                );
                for e in current.site.log_files.reopen_all() {
                    current
                        .site
                        .error_log
                        .log(Level::Alert, None, format_args!("{e}"));
                }
            }
            Some(Signal::Upgrade) => {
                current.site.error_log.log(
                    Level::Notice,
                    None,
                    format_args!(
                        "signal 12 (SIGUSR2) received: nowait has no binary upgrade, ignored"
                    ),
                );
            }
            Some(s @ (Signal::Quit | Signal::Stop)) => {
                let graceful = s == Signal::Quit;
                current.site.error_log.log(
                    Level::Notice,
                    None,
                    format_args!(
                        "{}, exiting",
                        if graceful {
                            "signal 3 (SIGQUIT) received, shutting down gracefully"
                        } else {
                            "signal 15 (SIGTERM) received"
                        }
                    ),
                );
                let how = if graceful {
                    Control::Quit
                } else {
                    Control::Stop
                };
                for g in old.iter().chain(std::iter::once(&current)) {
                    let _ = g.control.send(how);
                }
                let site = current.site.clone();
                listeners.close(&site.error_log);
                current.join();
                for g in old {
                    g.join();
                }
                shared.shutdown_pools();
                site.error_log
                    .log(Level::Notice, None, format_args!("exit"));
                site.flush_logs();
                return 0;
            }
        }
    }
}

fn log_started(g: &Generation, listeners: &Listeners, workers: usize) {
    let mut addrs: Vec<String> = listeners
        .by_addr
        .values()
        .map(|a| {
            format!(
                "{}{}",
                a.listen.addr,
                if a.listen.reuseport { " reuseport" } else { "" }
            )
        })
        .collect();
    addrs.sort();
    g.site.error_log.log(
        Level::Notice,
        None,
        format_args!(
            "{}/{} started {workers} worker(s) on {}",
            crate::NAME,
            crate::VERSION,
            addrs.join(", ")
        ),
    );
}

/// Joins the old generations that have finished.
fn reap(old: &mut Vec<Generation>) {
    let mut i = 0;
    while i < old.len() {
        if old[i].finished() {
            old.remove(i).join();
        } else {
            i += 1;
        }
    }
}

/// Loads the configuration again and starts a generation on it, as the
/// `user` it names (the main thread still has the privileges to switch).
fn reload(
    load: &LoadOptions,
    listeners: &mut Listeners,
    shared: &Arc<Shared>,
    id: u64,
    retire: &dyn Fn(),
) -> Result<Generation, String> {
    // With a privileged helper, it reads the files (as root) and checks
    // them; this process parses the same text.
    let loaded = match crate::sys::privsep::reload() {
        Some(files) => crate::config::load_from_files(load, files?),
        None => crate::config::load(load),
    }
    .map_err(|e| crate::config::errors_text(&e))?;
    let config = loaded.config;
    let refused = refusals(&config);
    if !refused.is_empty() {
        return Err(refused.join("; "));
    }
    let (identity, _) = if crate::sys::privsep::client_active() {
        // The whole process already serves as `user`; the helper made the
        // directories.
        (None, None)
    } else {
        let id = identity::resolve(&config.main)?;
        paths::create(&config, id.0.as_ref())?;
        id
    };
    let ids = identity.as_ref().map(|i| (i.uid, i.gid));
    let init = identity::thread_init(identity);
    let workers = worker_count(&config);
    listeners
        .update(&wanted_listens(&config), workers)
        .map_err(|e| e.to_string())?;
    let site =
        Site::new(config, LogFiles::new(), shared, ids, init.clone()).map_err(|e| e.to_string())?;
    if let Some(note) = environ::reload_note(&site.config.main) {
        site.error_log
            .log(Level::Warn, None, format_args!("{note}"));
    }
    for p in confine::uncovered_now(&site.config) {
        site.error_log.log(
            Level::Warn,
            None,
            format_args!(
                "\"{}\" is outside what this process may reach since it started (Landlock); serving it needs a restart",
                p.display()
            ),
        );
    }
    // The old generation's idle upstream connections go where the new one
    // looks for them before it serves its first request.
    retire();
    start_generation(Arc::new(site), listeners, workers, id, &init)
}
