//! A caching nowait for the cache's black-box tests: started in a
//! directory the test keeps (so that it can be killed with SIGKILL and
//! started again on the same cache), with environment variables (the
//! `NOWAIT_TEST_STALL` fault injection), its status page read as numbers.
//!
//! The configuration is the test's `http` body; `{port}` is the listening
//! port and `{dir}` the directory. It runs as root (`user root;`) so that
//! cache paths anywhere the test makes them are writable.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::server::free_port;

/// How long the server may take to accept connections.
const READY: Duration = Duration::from_secs(10);
/// The longest a test's read waits for bytes before failing.
pub const IO_TIMEOUT: Duration = Duration::from_secs(20);

/// A running nowait; SIGKILL on drop.
pub struct Cached {
    child: Option<Child>,
    /// Its directory (configuration, logs, caches the test puts there).
    pub dir: PathBuf,
    /// Its port.
    pub port: u16,
}

impl Cached {
    /// Starts nowait in `dir` (made if missing) with `http` and `env`.
    pub fn start(dir: &Path, http: &str, env: &[(&str, String)]) -> Cached {
        Cached::start_main(dir, "", http, env)
    }

    /// As [`Cached::start`], with `main` directives (`thread_pool`).
    pub fn start_main(dir: &Path, main: &str, http: &str, env: &[(&str, String)]) -> Cached {
        let conf = format!(
            "user root;\nworker_processes 1;\nerror_log {d}/error.log info;\npid {d}/nowait.pid;\n{main}\n\
             events {{ worker_connections 256; }}\nhttp {{\n access_log off;\n{http}\n}}\n",
            d = dir.display()
        );
        Cached::start_text(dir, &conf, env)
    }

    /// Starts nowait in `dir` (made if missing) with the whole
    /// configuration `text` (`{port}`, `{dir}` substituted; relative paths
    /// are relative to `dir`).
    pub fn start_text(dir: &Path, text: &str, env: &[(&str, String)]) -> Cached {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        let port = free_port();
        let conf = text
            .replace("{port}", &port.to_string())
            .replace("{dir}", &dir.to_string_lossy());
        let conf_path = dir.join("nowait.conf");
        std::fs::write(&conf_path, conf).unwrap_or_else(|e| panic!("write conf: {e}"));
        let stderr = std::fs::File::create(dir.join("stderr.log")).expect("stderr file");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_nowait"));
        cmd.arg("-p")
            .arg(format!("{}/", dir.display()))
            .arg("-c")
            .arg(&conf_path)
            .args(["-g", "daemon off;"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("spawn nowait");
        let c = Cached {
            child: Some(child),
            dir: dir.to_path_buf(),
            port,
        };
        let deadline = Instant::now() + READY;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nowait did not start: {}",
                std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        c
    }

    /// SIGKILL, and wait for the process to be gone.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The error log so far.
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }

    /// The value of the status page line starting with `series` (a metric
    /// name with its labels, as printed), summed over matching lines; the
    /// page is at `/status`.
    pub fn metric(&self, series: &str) -> u64 {
        self.metric_where(series, "")
    }

    /// As [`Cached::metric`], over the lines that also contain `label`
    /// (`status=\"BYPASS\"`).
    pub fn metric_where(&self, series: &str, label: &str) -> u64 {
        let page = super::client::get(self.port, "/status");
        let text = String::from_utf8_lossy(&page.body).into_owned();
        text.lines()
            .filter(|l| l.starts_with(series) && l.contains(label))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .map(|v| v as u64)
            .sum()
    }
}

impl Drop for Cached {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A connection that sends `GET path` (`version` `1.0` or `1.1`) and reads
/// as bytes arrive.
pub struct Reader {
    stream: TcpStream,
    /// Everything read so far.
    pub got: Vec<u8>,
    /// Whether the server closed the connection.
    pub closed: bool,
}

impl Reader {
    /// Sends the request with `extra` header lines (each ending in CRLF).
    pub fn get(port: u16, path: &str, version: &str, extra: &str) -> Reader {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
        let req = format!(
            "GET {path} HTTP/{version}\r\nHost: localhost\r\nConnection: close\r\n{extra}\r\n"
        );
        stream.write_all(req.as_bytes()).expect("send");
        Reader {
            stream,
            got: Vec::new(),
            closed: false,
        }
    }

    /// Reads until `want` bytes of body came (after the head), the
    /// connection closed, or the timeout (a failure).
    pub fn body_at_least(&mut self, want: usize) -> &[u8] {
        loop {
            if let Some(b) = self.body() {
                if b.len() >= want {
                    break;
                }
            }
            if self.closed {
                break;
            }
            self.read_some();
        }
        self.body().unwrap_or(&[])
    }

    /// Reads to the end of the connection.
    pub fn read_to_end(&mut self) -> &[u8] {
        while !self.closed {
            self.read_some();
        }
        &self.got
    }

    fn read_some(&mut self) {
        let mut buf = [0u8; 65536];
        match self.stream.read(&mut buf) {
            Ok(0) => self.closed = true,
            Ok(n) => self.got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                panic!(
                    "no bytes within {IO_TIMEOUT:?}; got {:?}",
                    String::from_utf8_lossy(&self.got)
                )
            }
            Err(_) => self.closed = true,
        }
    }

    /// The head as text, once complete.
    pub fn head(&self) -> Option<String> {
        let end = find(&self.got, b"\r\n\r\n")?;
        Some(String::from_utf8_lossy(&self.got[..end]).into_owned())
    }

    /// The raw bytes after the head, once the head is complete.
    pub fn body(&self) -> Option<&[u8]> {
        let end = find(&self.got, b"\r\n\r\n")?;
        Some(&self.got[end + 4..])
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Every regular file under `dir`, recursively, sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Waits, bounded, until `cond` holds; panics with `what` otherwise.
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + IO_TIMEOUT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
