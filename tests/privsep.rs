//! Black-box tests of privilege separation: started as root with `user
//! nobody`, nowait's serving process holds no root at all (every thread
//! `nobody`, no capability, `NoNewPrivs`), a helper process keeps root, and
//! what needs root afterwards goes through it: a reload that listens on a
//! port below 1024, `SIGUSR1` reopening a log in a root-only folder.
//!
//! These tests need root (they run as root in CI); they fail, not skip,
//! without it.

mod common;

use std::time::Duration;

use common::client::get;
use common::wait::until;
use common::{Conf, Fixture, Server};

/// `nobody`'s uid and `nogroup`'s gid on Debian.
const NOBODY: u32 = 65534;
/// How long a reload or a reopen may take to show.
const WAIT: Duration = Duration::from_secs(10);

/// The value of `key` in a `/proc/.../status` text.
fn field<'a>(status: &'a str, key: &str) -> &'a str {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} line in {status}"))
        .trim()
}

fn uids(status: &str) -> Vec<u32> {
    field(status, "Uid:")
        .split_whitespace()
        .map(|v| v.parse().expect("a number"))
        .collect()
}

fn assert_root() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    assert_eq!(
        uids(&status)[1],
        0,
        "the privilege tests must run as root (as in CI)"
    );
}

/// The pids whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/status"))
                .is_ok_and(|s| field(&s, "PPid:") == pid.to_string())
        })
        .collect()
}

/// A configuration serving `f` as nobody, with `extra` in its server.
fn conf(f: &Fixture, extra: &str) -> String {
    Conf::server(&format!("root {{root}};\naio threads;\n{extra}"))
        .main("user nobody nogroup;\nworker_processes 2;")
        .root(f.root())
        .render()
}

#[test]
fn the_serving_process_has_no_root_no_capability_and_no_new_privileges() {
    assert_root();
    let f = Fixture::build();
    let s = Server::nowait(&conf(&f, ""));
    assert_eq!(get(s.port(), "/index.html").status, 200);
    let pid = s.pid().unwrap();
    let tasks: Vec<_> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|e| e.ok())
        .collect();
    assert!(tasks.len() > 3, "workers, pool and log threads are running");
    for t in &tasks {
        let status = std::fs::read_to_string(t.path().join("status")).unwrap();
        let name = field(&status, "Name:");
        assert_eq!(uids(&status), [NOBODY; 4], "thread {name}");
        assert_eq!(field(&status, "CapEff:"), "0000000000000000", "{name}");
        assert_eq!(field(&status, "CapPrm:"), "0000000000000000", "{name}");
        assert_eq!(field(&status, "CapBnd:"), "0000000000000000", "{name}");
        assert_eq!(field(&status, "NoNewPrivs:"), "1", "{name}");
    }
    // The helper: one child, root, one thread.
    let helpers = children(pid);
    assert_eq!(helpers.len(), 1, "one helper process: {helpers:?}");
    let status = std::fs::read_to_string(format!("/proc/{}/status", helpers[0])).unwrap();
    assert_eq!(uids(&status), [0; 4], "the helper keeps root");
    assert_eq!(field(&status, "Threads:"), "1");
}

/// A port below 1024 that nothing listens on now.
fn free_low_port() -> u16 {
    (900..1000)
        .find(|p| std::net::TcpListener::bind(("127.0.0.1", *p)).is_ok())
        .expect("a free port below 1024")
}

#[test]
fn a_reload_listens_on_a_port_below_1024_through_the_helper() {
    assert_root();
    let f = Fixture::build();
    let s = Server::nowait(&conf(&f, ""));
    // Served once: the signals are handled from now on.
    assert_eq!(get(s.port(), "/index.html").status, 200);
    let low = free_low_port();
    let second = format!(
        "server {{\n listen 127.0.0.1:{low};\n root {};\n}}\n",
        f.root().display()
    );
    let text = conf(&f, "").replace("access_log off;\n", &format!("access_log off;\n{second}"));
    s.write_conf(&text);
    s.signal("HUP");
    assert!(
        until(WAIT, || std::net::TcpStream::connect(("127.0.0.1", low))
            .is_ok()),
        "port {low} does not listen after the reload; stderr:\n{}",
        s.stderr()
    );
    assert_eq!(get(low, "/index.html").status, 200);
    assert_eq!(get(s.port(), "/index.html").status, 200);
    // Dropping the listen again frees the port: the helper holds no socket.
    s.write_conf(&conf(&f, ""));
    s.signal("HUP");
    assert!(
        until(WAIT, || std::net::TcpListener::bind(("127.0.0.1", low))
            .is_ok()),
        "port {low} is still bound after a reload without it; stderr:\n{}",
        s.stderr()
    );
}

#[test]
fn usr1_reopens_a_log_in_a_root_only_folder() {
    assert_root();
    let f = Fixture::build();
    let dir = common::tmp::TempDir::new("privsep-logs");
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    common::tmp::set_mode(&logs, 0o700);
    let log = logs.join("access.log");
    let s = Server::nowait(&conf(&f, &format!("access_log {};", log.display())));
    assert_eq!(get(s.port(), "/index.html").status, 200);
    assert!(until(WAIT, || common::wait::read_text(&log)
        .contains("/index.html")));
    std::fs::rename(&log, logs.join("access.log.1")).unwrap();
    s.signal("USR1");
    assert!(
        until(WAIT, || log.exists()),
        "no new log after SIGUSR1; stderr:\n{}",
        s.stderr()
    );
    assert_eq!(get(s.port(), "/after").status, 404);
    assert!(until(WAIT, || common::wait::read_text(&log).contains("/after")));
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(&log).unwrap().uid(), 0, "root's file");
    assert!(!common::wait::read_text(&logs.join("access.log.1")).contains("/after"));
}

#[test]
fn a_reload_reads_a_configuration_only_root_can_read() {
    assert_root();
    let f = Fixture::build();
    let s = Server::nowait(&conf(&f, "location = /v { return 200 v1; }"));
    // Served once: the signals are handled from now on.
    assert_eq!(common::body(&get(s.port(), "/v")), "v1");
    s.write_conf(&conf(&f, "location = /v { return 200 v2; }"));
    common::tmp::set_mode(&s.conf_path(), 0o600);
    s.signal("HUP");
    assert!(
        until(WAIT, || common::body(&get(s.port(), "/v")) == "v2"),
        "still v1; stderr:\n{}",
        s.stderr()
    );
}

#[test]
fn landlock_refuses_a_file_outside_the_roots_reached_by_a_symlink() {
    assert_root();
    let f = Fixture::build();
    let outside = common::tmp::TempDir::new("privsep-outside");
    let secret = outside.path().join("readable.txt");
    std::fs::write(&secret, "world-readable, outside every root\n").unwrap();
    common::tmp::set_mode(outside.path(), 0o755);
    common::tmp::set_mode(&secret, 0o644);
    std::os::unix::fs::symlink(&secret, f.root().join("outside-link.txt")).unwrap();
    let s = Server::nowait(&conf(&f, ""));
    assert_eq!(get(s.port(), "/index.html").status, 200);
    // nobody may read the file; Landlock says no (EACCES, as nginx's 403).
    assert_eq!(get(s.port(), "/outside-link.txt").status, 403);
    // Through the thread pool too.
    std::os::unix::fs::symlink(&secret, f.root().join("dir/outside-link.txt")).unwrap();
    assert_eq!(get(s.port(), "/dir/outside-link.txt").status, 403);
    assert_eq!(get(s.port(), "/dir/file.txt").status, 200);
}

#[test]
fn a_reload_warns_of_a_root_outside_the_start_up_confinement() {
    assert_root();
    let f = Fixture::build();
    let s = Server::nowait(&conf(&f, "location = /v { return 200 v1; }"));
    assert_eq!(common::body(&get(s.port(), "/v")), "v1");
    let other = common::tmp::TempDir::new("privsep-new-root");
    std::fs::write(other.path().join("new.txt"), "new\n").unwrap();
    common::tmp::set_mode(other.path(), 0o755);
    common::tmp::set_mode(&other.path().join("new.txt"), 0o644);
    let text = conf(&f, "location = /v { return 200 v2; }").replace(
        "access_log off;\n",
        &format!(
            "access_log off;\nserver {{ listen 127.0.0.1:{{port}}; server_name new; root {}; }}\n",
            other.path().display()
        ),
    )
    .replace("error_log stderr;", "error_log stderr warn;");
    s.write_conf(&text);
    s.signal("HUP");
    assert!(until(WAIT, || common::body(&get(s.port(), "/v")) == "v2"));
    assert!(
        until(WAIT, || s
            .stderr()
            .contains("outside what this process may reach")),
        "no warning; stderr:\n{}",
        s.stderr()
    );
}

#[test]
fn paths_only_root_can_reach_do_not_stop_the_start() {
    // nginx starts when its workers' user cannot reach a temp path or a
    // root (a prefix made by `mktemp -d` is 0700 root) and answers 403 for
    // what they cannot open; so does nowait, whose confinement leaves out
    // what the serving process could not reach anyway.
    assert_root();
    let f = Fixture::build();
    let closed = common::tmp::TempDir::new("privsep-root-only");
    std::fs::create_dir_all(closed.path().join("www")).unwrap();
    std::fs::write(closed.path().join("www/secret.txt"), "secret\n").unwrap();
    common::tmp::set_mode(closed.path(), 0o700);
    let text = conf(
        &f,
        &format!(
            "client_body_temp_path {dir}/body;\nlocation /secret.txt {{ root {dir}/www; }}",
            dir = closed.path().display()
        ),
    );
    let s = Server::nowait(&text);
    assert_eq!(get(s.port(), "/index.html").status, 200);
    assert_eq!(get(s.port(), "/secret.txt").status, 403);
}
