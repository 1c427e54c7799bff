//! Black-box tests of the process: the pid file, SIGTERM (stop now),
//! SIGQUIT (stop gracefully), SIGHUP (reload, with a good and a broken
//! configuration, under load) and `daemon on` with `-s stop`.
//!
//! Every wait is bounded; a test asserts what happens, never how fast.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::client::{Conn, State, get};
use common::server::{Kind, control, for_kind, free_port, listening_sockets, send_signal};
use common::wait::{read_text, until};
use common::{Conf, Server, TempDir};

/// Upper bound on a process exiting or a signal taking effect.
const EXIT_WAIT: Duration = Duration::from_secs(10);
/// A file large enough that sending it takes many socket-buffer refills.
const HUGE: usize = 64 * 1024 * 1024;

fn version_conf(text: &str) -> String {
    Conf::http(&format!(
        "server {{ listen 127.0.0.1:{{port}}; location / {{ return 200 \"{text}\"; }} }}"
    ))
    .render()
}

fn pid_file(s: &Server) -> std::path::PathBuf {
    s.prefix().join("nginx.pid")
}

#[test]
fn pid_file_holds_the_pid_and_is_removed_at_exit() {
    let mut s = Server::tested(&version_conf("v1"));
    let path = pid_file(&s);
    let pid = s.pid().unwrap();
    assert!(
        until(EXIT_WAIT, || read_text(&path) == format!("{pid}\n")),
        "pid file: {:?}",
        read_text(&path)
    );
    s.signal("TERM");
    let status = s.wait_exit(EXIT_WAIT).expect("exits on SIGTERM");
    assert!(status.success(), "{status}");
    assert!(!path.exists(), "the pid file outlives the server");
}

#[test]
fn sigterm_stops_with_connections_open() {
    let root = huge_root();
    let conf = Conf::server("root {root};").root(root.path()).render();
    let mut s = Server::tested(&conf);
    let mut idle = Conn::open(s.port());
    idle.send(b"GET /x.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(idle.response().is_some());
    let mut busy = Conn::open(s.port());
    busy.send(b"GET /huge.bin HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(
        !busy.quiet_for(Duration::from_secs(5)),
        "the download started"
    );
    s.signal("TERM");
    assert!(
        s.wait_exit(EXIT_WAIT).is_some(),
        "still running after SIGTERM"
    );
    assert_eq!(idle.wait_closed(EXIT_WAIT), State::Closed);
}

/// A document root with `huge.bin` ([`HUGE`] bytes) and `x.txt`.
fn huge_root() -> TempDir {
    let dir = TempDir::new("signals-root");
    let data: Vec<u8> = (0..HUGE).map(|i| (i % 251) as u8).collect();
    std::fs::write(dir.path().join("huge.bin"), data).unwrap();
    std::fs::write(dir.path().join("x.txt"), "x\n").unwrap();
    for f in ["huge.bin", "x.txt"] {
        common::tmp::set_mode(&dir.path().join(f), 0o644);
    }
    dir
}

#[test]
fn sigquit_finishes_the_download_in_flight_and_refuses_new_connections() {
    let root = huge_root();
    let conf = Conf::server("root {root};").root(root.path()).render();
    let mut s = Server::tested(&conf);
    let mut idle = Conn::open(s.port());
    idle.send(b"GET /x.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(idle.response().is_some());
    let mut busy = Conn::open(s.port());
    busy.send(b"GET /huge.bin HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(
        !busy.quiet_for(Duration::from_secs(5)),
        "the download started"
    );

    s.signal("QUIT");
    // New connections are refused once the listening sockets are closed.
    assert!(
        until(EXIT_WAIT, || Conn::try_open(s.port()).is_err()),
        "still accepting after SIGQUIT"
    );
    // The idle keep-alive connection is closed...
    assert_eq!(idle.wait_closed(EXIT_WAIT), State::Closed);
    // ... the download completes...
    let mut got = busy.pending().to_vec();
    let mut buf = vec![0; 1 << 20];
    let deadline = Instant::now() + Duration::from_secs(60);
    busy.stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    while Instant::now() < deadline {
        match busy.stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let head_end = got
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head")
        + 4;
    assert_eq!(got.len() - head_end, HUGE, "the download was cut short");
    assert!(
        got[head_end..]
            .iter()
            .enumerate()
            .all(|(i, &b)| b == (i % 251) as u8),
        "the download's bytes differ from the file"
    );
    // ... and then the process exits.
    let status = s.wait_exit(EXIT_WAIT).expect("exits after the download");
    assert!(status.success(), "{status}");
}

#[test]
fn reload_switches_to_the_new_configuration() {
    let s = Server::tested(&version_conf("v1"));
    assert_eq!(common::body(&get(s.port(), "/")), "v1");
    // A keep-alive connection from before the reload, in the middle of
    // its next request's head.
    let mut before = Conn::open(s.port());
    before.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(common::body(&before.response().expect("v1")), "v1");
    before.send(b"GET / HTTP/1.1\r\nHo");

    s.write_conf(&version_conf("v2"));
    let (status, stderr) = s.control("reload");
    assert!(status.success(), "-s reload: {status}: {stderr}");
    assert!(
        until(EXIT_WAIT, || common::body(&get(s.port(), "/")) == "v2"),
        "still v1 after the reload"
    );
    // The old connection finishes its request under the old
    // configuration, then is closed.
    before.send(b"st: x\r\n\r\n");
    let r = before
        .response()
        .expect("the request begun before the reload");
    assert_eq!((r.status, common::body(&r).as_str()), (200, "v1"));
    // nowait says `Connection: close`; nginx says `keep-alive` and closes
    // anyway (its headers are out before it checks `ngx_exiting`).
    assert_eq!(before.wait_closed(EXIT_WAIT), State::Closed);
}

#[test]
fn no_connection_is_refused_during_reloads() {
    let s = Server::tested(&version_conf("v1"));
    let port = s.port();
    let done = Arc::new(AtomicBool::new(false));
    let client = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut failures = Vec::new();
            let mut bodies = std::collections::BTreeSet::new();
            for i in 0..200 {
                match Conn::try_open(port) {
                    Ok(mut c) => {
                        c.send(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
                        match c.response() {
                            Some(r) if r.status == 200 => {
                                bodies.insert(common::body(&r));
                            }
                            other => failures.push(format!("request {i}: {other:?}")),
                        }
                    }
                    Err(e) => failures.push(format!("connect {i}: {e}")),
                }
            }
            done.store(true, Ordering::Relaxed);
            (failures, bodies)
        })
    };
    let mut reloads = 0;
    while !done.load(Ordering::Relaxed) && reloads < 10 {
        reloads += 1;
        s.write_conf(&version_conf(&format!("v{}", reloads + 1)));
        let (status, stderr) = s.control("reload");
        assert!(status.success(), "-s reload: {status}: {stderr}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (failures, bodies) = client.join().expect("the client thread");
    assert!(
        failures.is_empty(),
        "{} failures: {failures:#?}",
        failures.len()
    );
    assert!(reloads > 0);
    assert!(!bodies.is_empty());
}

#[test]
fn reload_with_a_broken_configuration_keeps_the_old_one() {
    let s = Server::nowait(&version_conf("v1"));
    s.write_conf("events {}\nhttp { bogus_directive on; }\n");
    // `-s reload` itself would refuse the broken file; the signal goes
    // straight to the running server.
    s.signal("HUP");
    assert!(
        until(EXIT_WAIT, || s
            .stderr()
            .contains("the previous configuration stays in use")),
        "no error logged:\n{}",
        s.stderr()
    );
    let log = s.stderr();
    assert!(
        log.contains("unknown directive \"bogus_directive\""),
        "{log}"
    );
    assert!(log.contains("[emerg]"), "{log}");
    let r = get(s.port(), "/");
    assert_eq!((r.status, common::body(&r).as_str()), (200, "v1"));
    // A later good reload still works.
    s.write_conf(&version_conf("v2"));
    s.signal("HUP");
    assert!(until(EXIT_WAIT, || common::body(&get(s.port(), "/")) == "v2"));
}

/// Kills a daemon left running by a failed test.
struct DaemonGuard(Option<u32>);

impl Drop for DaemonGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            if running(pid) {
                send_signal(pid, "KILL");
            }
        }
    }
}

/// Whether `pid` is a live (not zombie) process.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(") ")
                .map(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
        })
        .unwrap_or(false)
}

#[test]
fn daemon_on_detaches_and_stops_on_s_stop() {
    let prefix = TempDir::new("daemon");
    let port = free_port();
    let conf_text = Conf::http(&format!(
        "server {{ listen 127.0.0.1:{port}; return 200 \"daemon\"; }}"
    ))
    .render()
    .replace("error_log stderr;", "error_log error.log;");
    let conf_text = for_kind(Kind::Nowait, &conf_text);
    let conf = prefix.path().join("nginx.conf");
    std::fs::write(&conf, conf_text).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("conf/mime.types"),
        prefix.path().join("mime.types"),
    )
    .unwrap();
    let mut starter = Command::new(Kind::Nowait.program())
        .arg("-p")
        .arg(format!("{}/", prefix.path().display()))
        .arg("-c")
        .arg(&conf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn nowait");
    let mut started = None;
    until(EXIT_WAIT, || {
        started = starter.try_wait().ok().flatten();
        started.is_some()
    });
    let Some(status) = started else {
        let _ = starter.kill();
        let _ = starter.wait();
        panic!("the command did not return: not daemonized");
    };
    assert!(status.success(), "{status}");

    let pid_path = prefix.path().join("nginx.pid");
    assert!(
        until(EXIT_WAIT, || read_text(&pid_path)
            .trim()
            .parse::<u32>()
            .is_ok()),
        "no pid file; error.log:\n{}",
        read_text(&prefix.path().join("error.log"))
    );
    let pid: u32 = read_text(&pid_path).trim().parse().unwrap();
    let _guard = DaemonGuard(Some(pid));
    assert_ne!(pid, starter.id(), "the server is not the process started");
    assert!(running(pid));
    assert!(
        until(EXIT_WAIT, || Conn::try_open(port).is_ok()),
        "the daemon does not listen"
    );
    assert_eq!(common::body(&get(port, "/")), "daemon");

    let (status, stderr) = control(Kind::Nowait, prefix.path(), &conf, "stop");
    assert!(status.success(), "-s stop: {status}: {stderr}");
    assert!(
        until(EXIT_WAIT, || !running(pid)),
        "still running after -s stop"
    );
    assert!(
        until(EXIT_WAIT, || !pid_path.exists()),
        "the pid file remains"
    );
    assert!(Conn::try_open(port).is_err(), "still listening");
}

/// The names of the server's worker threads (`worker#<n>.<generation>`).
fn worker_threads(s: &Server) -> Vec<String> {
    let pid = s.pid().expect("running");
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
                .map(|n| n.trim().to_string())
                .filter(|n| n.starts_with("worker#"))
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until every worker thread belongs to generation `generation`.
fn only_generation(s: &Server, generation: u32) -> bool {
    let suffix = format!(".{generation}");
    until(EXIT_WAIT, || {
        let w = worker_threads(s);
        !w.is_empty() && w.iter().all(|n| n.ends_with(&suffix))
    })
}

/// A reload may change `reuseport` and the worker count on an address the
/// running generation listens on, and add or remove addresses. nowait's
/// own (it checks its worker threads by generation).
#[test]
fn reload_can_add_reuseport_workers_and_move_ports() {
    let conf = |workers: u32, listen: &str, text: &str| {
        Conf::http(&format!(
            "server {{ listen {listen}; return 200 \"{text}\"; }}"
        ))
        .main(&format!("worker_processes {workers};"))
        .render()
    };
    let s = Server::nowait(&conf(1, "127.0.0.1:{port}", "one"));
    assert_eq!(common::body(&get(s.port(), "/")), "one");
    assert_eq!(listening_sockets(s.port()), 1);

    let other = free_port();
    s.write_conf(&conf(
        3,
        &format!("127.0.0.1:{{port}} reuseport; listen 127.0.0.1:{other}"),
        "three",
    ));
    let (status, stderr) = s.control("reload");
    assert!(status.success(), "-s reload: {status}: {stderr}");
    assert!(only_generation(&s, 2), "not reloaded:\n{}", s.stderr());
    assert_eq!(listening_sockets(s.port()), 3);
    assert_eq!(listening_sockets(other), 1);
    for _ in 0..20 {
        assert_eq!(common::body(&get(s.port(), "/")), "three");
    }
    assert_eq!(common::body(&get(other, "/")), "three");

    // Back to one shared socket: the other address stops listening.
    s.write_conf(&conf(1, "127.0.0.1:{port}", "back"));
    let (status, stderr) = s.control("reload");
    assert!(status.success(), "-s reload: {status}: {stderr}");
    assert!(only_generation(&s, 3), "not reloaded:\n{}", s.stderr());
    assert_eq!(listening_sockets(s.port()), 1);
    assert_eq!(listening_sockets(other), 0);
    for _ in 0..20 {
        assert_eq!(common::body(&get(s.port(), "/")), "back");
    }
}

#[test]
fn a_reload_that_changes_env_says_it_waits_for_a_restart() {
    let conf = |env: &str, text: &str| {
        Conf::http(&format!(
            "server {{ listen 127.0.0.1:{{port}}; location / {{ return 200 \"{text}\"; }} }}"
        ))
        .main(env)
        .main("error_log stderr warn;")
        .render()
    };
    let s = Server::nowait(&conf("env APP=1;", "v1"));
    // The same list: nothing to say.
    s.write_conf(&conf("env APP=1;", "v2"));
    s.signal("HUP");
    assert!(until(EXIT_WAIT, || common::body(&get(s.port(), "/")) == "v2"));
    assert!(!s.stderr().contains("\"env\""), "{}", s.stderr());
    s.write_conf(&conf("env APP=2;", "v3"));
    s.signal("HUP");
    assert!(
        until(EXIT_WAIT, || common::body(&get(s.port(), "/")) == "v3"),
        "{}",
        s.stderr()
    );
    assert!(
        until(EXIT_WAIT, || {
            s.stderr().lines().any(|l| l.contains("[warn]")
            && l.ends_with(": the \"env\" directives changed: the environment is set at start, the change takes effect when nowait is restarted"))
        }),
        "{}",
        s.stderr()
    );
}
