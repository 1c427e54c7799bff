//! The [`Server`] guard: runs nowait or the real nginx on a free loopback
//! port with a configuration written to a fresh prefix directory, and stops
//! it on drop.
//!
//! Both are started the same way, so that one configuration text means the
//! same thing to both: `-p <prefix>/ -c <prefix>/nginx.conf -e stderr
//! -g "daemon off;"`. The configuration therefore must not say `daemon`
//! itself (nginx rejects the duplicate). Relative paths in it (`pid`,
//! `*_temp_path`, `include mime.types`) resolve inside the prefix, which also
//! receives a copy of the repository's `conf/mime.types`.
//!
//! A line ending in `# nginx only` is dropped for nowait: it carries
//! directives nowait has no use for (nginx's request-body and proxy temp
//! paths, which a static server that discards bodies never writes).
//!
//! Placeholders substituted in the configuration: `{port}` (the free port)
//! and `{prefix}` (the prefix directory, no trailing slash). Anything else,
//! such as a document root, is the caller's to substitute first.

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use super::tmp::TempDir;

/// Where the differential tests expect the reference server.
pub const NGINX_BIN: &str = "/usr/sbin/nginx";
/// How long a server may take to accept connections before the test fails.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause between two readiness probes.
const READY_POLL: Duration = Duration::from_millis(20);
/// How many free ports a start tries when another process takes the one
/// it was given before the server binds it.
const PORT_ATTEMPTS: u32 = 4;
/// How long a server may take to exit after SIGTERM before it gets SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// Which program a [`Server`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The binary under test.
    Nowait,
    /// The reference: Debian's nginx 1.22 at [`NGINX_BIN`].
    Nginx,
}

impl Kind {
    /// The program's name, as it appears in `Server` headers.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Nowait => "nowait",
            Kind::Nginx => "nginx",
        }
    }

    /// The path of the program's binary.
    pub fn program(self) -> &'static str {
        match self {
            Kind::Nowait => env!("CARGO_BIN_EXE_nowait"),
            Kind::Nginx => NGINX_BIN,
        }
    }
}

/// A running server; SIGTERM (then SIGKILL) on drop.
pub struct Server {
    /// Which program this is.
    kind: Kind,
    /// The loopback port it listens on.
    port: u16,
    /// The child process; `None` once reaped.
    child: Option<Child>,
    /// Where its stderr goes, kept for diagnostics.
    stderr_path: PathBuf,
    /// The prefix directory; declared last so it is removed after the stop.
    prefix: TempDir,
}

impl Server {
    /// Starts nowait with `conf`; see the module header for placeholders.
    pub fn nowait(conf: &str) -> Server {
        Server::start(Kind::Nowait, conf)
    }

    /// Starts the server under test: nowait, or the real nginx when the
    /// environment says `NOWAIT_TEST_NGINX=1`. Running a test file against
    /// nginx checks that what it asserts is nginx's behaviour; tests of
    /// nowait's own words (its name, its log messages) use
    /// [`Server::nowait`] instead.
    pub fn tested(conf: &str) -> Server {
        if std::env::var_os("NOWAIT_TEST_NGINX").is_some_and(|v| v == "1") {
            Server::nginx(conf)
        } else {
            Server::nowait(conf)
        }
    }

    /// Starts the real nginx with `conf`; see the module header.
    pub fn nginx(conf: &str) -> Server {
        Server::start(Kind::Nginx, conf)
    }

    /// Starts `kind` with `conf` and waits until its port accepts
    /// connections; panics with the server's stderr if it exits or does not
    /// listen within [`READY_TIMEOUT`].
    pub fn start(kind: Kind, conf: &str) -> Server {
        Server::start_with_dirs(kind, conf, &[])
    }

    /// [`Server::start`] with `dirs` made in the prefix first (`logs`, for a
    /// configuration that keeps nginx's default log paths).
    pub fn start_with_dirs(kind: Kind, conf: &str, dirs: &[&str]) -> Server {
        Server::start_with_env(kind, conf, dirs, &[])
    }

    /// nowait started as [`Server::nowait`] with `env` in its environment
    /// (a test build's knobs: `NOWAIT_TEST_*`).
    pub fn nowait_with_env(conf: &str, env: &[(&str, &str)]) -> Server {
        Server::start_with_env(Kind::Nowait, conf, &[], env)
    }

    /// [`Server::start_with_dirs`] with `env` in the server's environment.
    pub fn start_with_env(kind: Kind, conf: &str, dirs: &[&str], env: &[(&str, &str)]) -> Server {
        let prefix = TempDir::new(kind.name());
        let dir = prefix.path().to_path_buf();
        for d in dirs {
            std::fs::create_dir_all(dir.join(d))
                .unwrap_or_else(|e| panic!("mkdir {}/{d}: {e}", dir.display()));
        }
        let mime = Path::new(env!("CARGO_MANIFEST_DIR")).join("conf/mime.types");
        let mime_text =
            std::fs::read(&mime).unwrap_or_else(|e| panic!("read {}: {e}", mime.display()));
        write(&dir.join("mime.types"), &mime_text);
        let conf_path = dir.join("nginx.conf");
        let stderr_path = dir.join("stderr.log");
        let mut prefix = Some(prefix);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let port = free_port();
            let text = for_kind(kind, conf)
                .replace("{port}", &port.to_string())
                .replace("{prefix}", &dir.to_string_lossy());
            write(&conf_path, text.as_bytes());
            let stderr = File::create(&stderr_path)
                .unwrap_or_else(|e| panic!("create {}: {e}", stderr_path.display()));
            let stdout = stderr
                .try_clone()
                .unwrap_or_else(|e| panic!("dup {}: {e}", stderr_path.display()));
            let child = Command::new(kind.program())
                .arg("-p")
                .arg(format!("{}/", dir.display()))
                .arg("-c")
                .arg(&conf_path)
                .args(["-e", "stderr", "-g", "daemon off;"])
                .envs(env.iter().copied())
                .stdin(Stdio::null())
                .stdout(stdout)
                .stderr(stderr)
                .spawn()
                .unwrap_or_else(|e| panic!("spawn {}: {e}", kind.program()));
            let mut server = Server {
                kind,
                port,
                child: Some(child),
                stderr_path: stderr_path.clone(),
                prefix: prefix.take().expect("the prefix is kept until a start"),
            };
            match server.wait_ready() {
                Ok(()) => {
                    server.wait_unix_ready(&text);
                    return server;
                }
                // The free port was taken by another process between
                // `free_port` and the server's bind: try another one.
                Err(e) if attempt < PORT_ATTEMPTS && e.contains("Address already in use") => {
                    server.child = None;
                    prefix = Some(std::mem::replace(
                        &mut server.prefix,
                        TempDir::new(kind.name()),
                    ));
                }
                Err(e) => panic!("{e}"),
            }
        }
    }

    /// The loopback port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Which program this is.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The prefix directory (configuration, pid file, logs, temp paths).
    pub fn prefix(&self) -> &Path {
        self.prefix.path()
    }

    /// The server's process id (nowait is one process; for nginx, the
    /// master's); `None` once it has been reaped.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The configuration file the server was started with.
    pub fn conf_path(&self) -> PathBuf {
        self.prefix.path().join("nginx.conf")
    }

    /// Replaces the configuration file with `conf`, substituting `{port}`
    /// and `{prefix}` as at start; the server reads it on its next reload.
    pub fn write_conf(&self, conf: &str) {
        let conf = for_kind(self.kind, conf)
            .replace("{port}", &self.port.to_string())
            .replace("{prefix}", &self.prefix.path().to_string_lossy());
        write(&self.conf_path(), conf.as_bytes());
    }

    /// Sends `signal` (a name `kill` knows: `HUP`, `QUIT`, `USR1`…) to the
    /// server process; panics when it is already reaped or `kill` fails.
    pub fn signal(&self, signal: &str) {
        let pid = self.pid().expect("the server is still running");
        send_signal(pid, signal);
    }

    /// Runs the binary's own control command, `-s <name>` with this
    /// server's `-p` and `-c` (`reload`, `reopen`, `quit`, `stop`), and
    /// returns its exit status and stderr.
    ///
    /// The command finds the server by its pid file, which a server writes
    /// only after its port accepts connections (when [`Server::start`]
    /// returns): on a loaded machine a command run at once could find none.
    /// So it first waits, up to [`READY_TIMEOUT`], for a `*.pid` file in the
    /// prefix while the server runs.
    pub fn control(&self, name: &str) -> (std::process::ExitStatus, String) {
        let deadline = Instant::now() + READY_TIMEOUT;
        while self.child.is_some() && !self.has_pid_file() && Instant::now() < deadline {
            sleep(READY_POLL);
        }
        control(self.kind, self.prefix.path(), &self.conf_path(), name)
    }

    /// Whether a pid file is in the prefix.
    fn has_pid_file(&self) -> bool {
        std::fs::read_dir(self.prefix.path()).is_ok_and(|dir| {
            dir.flatten()
                .any(|e| e.path().extension().is_some_and(|x| x == "pid"))
        })
    }

    /// Waits up to `limit` for the process to exit; its status if it did.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        let child = self.child.as_mut()?;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            sleep(READY_POLL);
        }
    }

    /// Everything the server wrote to stderr and stdout so far.
    pub fn stderr(&self) -> String {
        std::fs::read(&self.stderr_path)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_else(|e| format!("(cannot read {}: {e})", self.stderr_path.display()))
    }

    /// Waits until every `listen unix:PATH` of `conf` accepts connections.
    /// The loopback port is ready first: a server binds and listens on its
    /// sockets one after another, so a unix-domain socket can still be
    /// bound but not listening (`ECONNREFUSED`) when the port answers — on
    /// a loaded machine, for long enough that a test's first connect met it.
    fn wait_unix_ready(&self, conf: &str) {
        let paths = conf.lines().filter_map(|l| {
            let rest = l.trim().strip_prefix("listen unix:")?;
            Some(PathBuf::from(rest.split([' ', ';']).next()?))
        });
        for path in paths {
            let deadline = Instant::now() + READY_TIMEOUT;
            while std::os::unix::net::UnixStream::connect(&path).is_err() {
                assert!(
                    Instant::now() < deadline,
                    "{} did not accept on unix:{} within {READY_TIMEOUT:?}; stderr:\n{}",
                    self.kind.name(),
                    path.display(),
                    self.stderr()
                );
                sleep(READY_POLL);
            }
        }
    }

    /// Whether a listening socket on the port is one of this server's
    /// process's descriptors (`/proc/net/tcp`'s inode among
    /// `/proc/PID/fd`'s sockets). Without the child's pid, true.
    fn owns_listener(&self) -> bool {
        let Some(child) = self.child.as_ref() else {
            return true;
        };
        let inodes = listen_inodes(self.port, true);
        if inodes.is_empty() {
            // A listener this table does not show (IPv6 wildcard): trust
            // the connect, as before.
            return true;
        }
        let Ok(fds) = std::fs::read_dir(format!("/proc/{}/fd", child.id())) else {
            return false;
        };
        fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|target| {
                let t = target.to_string_lossy();
                t.strip_prefix("socket:[")
                    .and_then(|r| r.strip_suffix(']'))
                    .is_some_and(|ino| inodes.iter().any(|i| i == ino))
            })
        })
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    return Err(format!(
                        "{} exited before listening on port {} ({status}); stderr:\n{}",
                        self.kind.name(),
                        self.port,
                        self.stderr()
                    ));
                }
            }
            // Ready once the port accepts and the listener is this
            // server's: another test's server may hold a port `free_port`
            // gave out twice, and this one, failing to bind, would have
            // its requests answered by the other's configuration.
            if TcpStream::connect_timeout(&addr, READY_POLL).is_ok() && self.owns_listener() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "{} did not listen on port {} within {READY_TIMEOUT:?}; stderr:\n{}",
                    self.kind.name(),
                    self.port,
                    self.stderr()
                ));
            }
            sleep(READY_POLL);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // std can only send SIGKILL; SIGTERM lets nginx's master stop its
        // workers instead of orphaning them on the port.
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            sleep(READY_POLL);
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// A loopback port that was free a moment ago: bind port 0, read, release.
/// Another process may take it before the server binds it; that rare race
/// shows up as a server failing to start, with its stderr saying so.
///
/// Never the same port twice in one test process: the kernel may hand out
/// a port it just released again, and a test that asks for two (a server
/// with two `listen`s) then got one port twice (`a duplicate listen`).
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<std::collections::BTreeSet<u16>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    loop {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap_or_else(|e| panic!("bind 127.0.0.1:0: {e}"));
        let port = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("getsockname: {e}"))
            .port();
        if GIVEN.lock().unwrap_or_else(|e| e.into_inner()).insert(port) {
            return port;
        }
    }
}

/// The listening sockets on 127.0.0.1:`port`, as rows of `/proc/net/tcp`
/// in state LISTEN (`0A`).
pub fn listening_sockets(port: u16) -> usize {
    listen_inodes(port, false).len()
}

/// The inodes of the listening sockets on 127.0.0.1:`port`, and on the
/// wildcard address too if `wildcard` (`/proc/net/tcp`, state LISTEN).
fn listen_inodes(port: u16, wildcard: bool) -> Vec<String> {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("read /proc/net/tcp");
    let local = format!("0100007F:{port:04X}");
    let any = format!("00000000:{port:04X}");
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let addr = cols.get(1).copied().unwrap_or("");
            ((addr == local || (wildcard && addr == any)) && cols.get(3) == Some(&"0A"))
                .then(|| cols.get(9).map(|s| s.to_string()))
                .flatten()
        })
        .collect()
}

/// `conf` as `kind` reads it: for nowait, without the lines ending in
/// `# nginx only` (see the module header).
pub fn for_kind(kind: Kind, conf: &str) -> String {
    match kind {
        Kind::Nowait => conf
            .lines()
            .filter(|l| !l.trim_end().ends_with("# nginx only"))
            .map(|l| format!("{l}\n"))
            .collect(),
        Kind::Nginx => conf.to_string(),
    }
}

/// Sends `signal` (a name `kill` knows) to `pid`; panics when `kill` fails.
pub fn send_signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap_or_else(|e| panic!("spawn kill: {e}"));
    assert!(status.success(), "kill -{signal} {pid}: {status}");
}

/// Runs `<program> -p <prefix>/ -c <conf> -s <name>`; its status and stderr.
pub fn control(
    kind: Kind,
    prefix: &Path,
    conf: &Path,
    name: &str,
) -> (std::process::ExitStatus, String) {
    let out = Command::new(kind.program())
        .arg("-p")
        .arg(format!("{}/", prefix.display()))
        .arg("-c")
        .arg(conf)
        .args(["-s", name])
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("spawn {} -s {name}: {e}", kind.program()));
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}
