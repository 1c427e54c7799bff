//! The differential `-t` harness: each configuration is tested with
//! `nowait -t` and with nginx 1.22's `nginx -t` (Debian's `/usr/sbin/nginx`,
//! which must be installed: the tests fail without it), and the first
//! `[emerg]` message of each must be the same text, file and line included.
//! nowait reports every error and nginx only the first; the configurations
//! given to [`check_bad`] have one error each, and nowait must report only
//! that one (no follow-on errors).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Debian's nginx 1.22.
pub const NGINX: &str = "/usr/sbin/nginx";

/// A fresh prefix directory holding one configuration file, removed when
/// dropped.
pub struct Conf {
    /// The prefix directory.
    pub dir: PathBuf,
}

impl Conf {
    /// A prefix holding `text` as `test.conf`.
    pub fn new(name: &str, text: &str) -> Conf {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "nowait-conft-{}-{}-{name}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("logs")).unwrap();
        std::fs::write(dir.join("test.conf"), text).unwrap();
        Conf { dir }
    }

    /// The configuration file's path.
    pub fn file(&self) -> String {
        self.dir.join("test.conf").to_string_lossy().into_owned()
    }

    /// `-t` with `program`: (exit code, stderr).
    pub fn test_with(&self, program: &str) -> (Option<i32>, String) {
        let prefix = format!("{}/", self.dir.display());
        let out = Command::new(program)
            .args(["-t", "-e", "stderr", "-p", &prefix, "-c", &self.file()])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{program} runs: {e}"));
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// `nginx -t`.
    pub fn nginx(&self) -> (Option<i32>, String) {
        assert!(
            Path::new(NGINX).exists(),
            "{NGINX} is required for the differential tests (apt-get install nginx-light)"
        );
        self.test_with(NGINX)
    }

    /// `nowait -t`.
    pub fn nowait(&self) -> (Option<i32>, String) {
        self.test_with(env!("CARGO_BIN_EXE_nowait"))
    }
}

impl Drop for Conf {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The messages of one level in either program's stderr, without the
/// program's prefix (`nginx: ` / `nowait: `) or the log's time and pid
/// (`2026/01/01 00:00:00 [emerg] 12#12: `).
pub fn messages(stderr: &str, level: &str) -> Vec<String> {
    let tag = format!("[{level}] ");
    stderr
        .lines()
        .filter_map(|l| l.split_once(&tag).map(|(_, m)| m))
        .map(|m| match m.split_once(": ") {
            Some((pid, rest)) if pid.split('#').all(|p| p.parse::<u32>().is_ok()) => {
                rest.to_string()
            }
            _ => m.to_string(),
        })
        .collect()
}

/// `events {}` and an `http` block holding `body`, whose first line is the
/// file's line 3.
pub fn http(body: &str) -> String {
    format!("events {{}}\nhttp {{\n{body}\n}}\n")
}

/// A server for the bodies below (nginx -t binds nothing).
pub const SERVER: &str = "server { listen 127.0.0.1:18080;";

/// One bad configuration: its name, the http block's body, nginx's message
/// (`PREFIX` and `FILE` stand for the test's directory and file) and the
/// line it names (`None` for a message without one).
pub type Bad = (&'static str, String, &'static str, Option<u32>);

/// Runs every case with both programs; fails listing every mismatch.
pub fn check_bad(cases: Vec<Bad>) {
    check_bad_files(
        cases
            .into_iter()
            .map(|(name, body, message, line)| (name, http(&body), message, line))
            .collect(),
    );
}

/// [`check_bad`] for whole files: the text is the configuration file.
pub fn check_bad_files(cases: Vec<Bad>) {
    let mut failures = Vec::new();
    for (name, text, message, line) in cases {
        let conf = Conf::new(name, &text);
        let message = message
            .replace("PREFIX", &conf.dir.to_string_lossy())
            .replace("FILE", &conf.file());
        let want = match line {
            Some(n) => format!("{message} in {}:{n}", conf.file()),
            None => message,
        };
        let (ncode, nerr) = conf.nginx();
        let (wcode, werr) = conf.nowait();
        let ngx = messages(&nerr, "emerg");
        let now = messages(&werr, "emerg");
        if ncode != Some(1) || ngx.first() != Some(&want) {
            failures.push(format!(
                "{name}: nginx says {ngx:?} (exit {ncode:?}), the test expects {want:?}"
            ));
        }
        if wcode != Some(1) || now != [want.clone()] {
            failures.push(format!(
                "{name}: nowait says {now:?} (exit {wcode:?}), nginx {want:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// Runs every configuration with both programs: both accept it, with the
/// same warnings.
pub fn check_good(cases: Vec<(&'static str, String)>) {
    check_good_files(
        cases
            .into_iter()
            .map(|(name, body)| (name, http(&body)))
            .collect(),
    );
}

/// [`check_good`] for whole files: the text is the configuration file.
pub fn check_good_files(cases: Vec<(&'static str, String)>) {
    let mut failures = Vec::new();
    for (name, text) in cases {
        let conf = Conf::new(name, &text);
        let (ncode, nerr) = conf.nginx();
        let (wcode, werr) = conf.nowait();
        if ncode != Some(0) {
            failures.push(format!("{name}: nginx refuses it: {nerr}"));
        }
        if wcode != Some(0) {
            failures.push(format!("{name}: nowait refuses it: {werr}"));
        }
        let (nw, ww) = (messages(&nerr, "warn"), messages(&werr, "warn"));
        if nw != ww {
            failures.push(format!(
                "{name}: warnings differ: nginx {nw:?}, nowait {ww:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// A server block holding `body`.
pub fn s(body: &str) -> String {
    format!("{SERVER} {body} }}")
}
