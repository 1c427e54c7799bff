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

/// Whether the reference nginx reads `directive` (in `body`, a server
/// block or an `http` line): a directive Debian backported in a later
/// build of its nginx 1.22.1 is unknown to an older one. When it is not,
/// the checks of that directive compare nowait with the messages the test
/// records (taken from the build that has it), and say so.
pub fn nginx_knows(directive: &str, body: &str) -> bool {
    let conf = Conf::new("knows", &http(body));
    let (_, err) = conf.nginx();
    let known = !err.contains(&format!("unknown directive \"{directive}\""));
    if !known {
        eprintln!(
            "note: this nginx ({}) does not know \"{directive}\": nowait is checked against \
             the messages the test records",
            nginx_version()
        );
    }
    known
}

/// What `nginx -v` prints.
fn nginx_version() -> String {
    Command::new(NGINX)
        .arg("-v")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stderr).trim().to_string())
        .unwrap_or_default()
}

/// [`check_bad`], with nginx's side checked only when `with_nginx`
/// ([`nginx_knows`]); nowait's always is.
pub fn check_bad_against(cases: Vec<Bad>, with_nginx: bool) {
    check_bad_files_against(
        cases
            .into_iter()
            .map(|(name, body, message, line)| (name, http(&body), message, line))
            .collect(),
        with_nginx,
    );
}

/// [`check_good`], with nginx's side checked only when `with_nginx`.
pub fn check_good_against(cases: Vec<(&'static str, String)>, with_nginx: bool) {
    check_good_files_against(
        cases
            .into_iter()
            .map(|(name, body)| (name, http(&body)))
            .collect(),
        with_nginx,
    );
}

/// [`check_bad`] for whole files: the text is the configuration file.
pub fn check_bad_files(cases: Vec<Bad>) {
    check_bad_files_against(cases, true);
}

fn check_bad_files_against(cases: Vec<Bad>, with_nginx: bool) {
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
        let (wcode, werr) = conf.nowait();
        let now = messages(&werr, "emerg");
        if with_nginx {
            let (ncode, nerr) = conf.nginx();
            let ngx = messages(&nerr, "emerg");
            if ncode != Some(1) || ngx.first() != Some(&want) {
                failures.push(format!(
                    "{name}: nginx says {ngx:?} (exit {ncode:?}), the test expects {want:?}"
                ));
            }
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
    check_good_files_against(cases, true);
}

fn check_good_files_against(cases: Vec<(&'static str, String)>, with_nginx: bool) {
    let mut failures = Vec::new();
    for (name, text) in cases {
        let conf = Conf::new(name, &text);
        let (wcode, werr) = conf.nowait();
        if wcode != Some(0) {
            failures.push(format!("{name}: nowait refuses it: {werr}"));
        }
        let ww = messages(&werr, "warn");
        if !with_nginx {
            if !ww.is_empty() {
                failures.push(format!("{name}: nowait warns {ww:?}"));
            }
            continue;
        }
        let (ncode, nerr) = conf.nginx();
        if ncode != Some(0) {
            failures.push(format!("{name}: nginx refuses it: {nerr}"));
        }
        let nw = messages(&nerr, "warn");
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
