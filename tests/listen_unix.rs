//! `listen unix:/path`: the real binary serving over a unix-domain socket,
//! spoken to in raw bytes. What nginx 1.22 does: the socket file made by
//! `bind()` with mode 0666 and removed at exit (and by a reload that drops
//! the `listen`), `bind() … failed (98: Address already in use)` when the
//! file exists, `-t` leaving nothing behind; `$remote_addr` is `unix:`,
//! `$server_addr` the socket's `unix:/path`, the ports empty; `allow
//! unix:` / `deny unix:`, `set_real_ip_from unix:`, limits keyed by
//! `$binary_remote_addr`, and the proxy both ways.
//!
//! Every configuration also listens on the loopback `{port}`: the harness
//! waits for it, and nowait binds every socket before it accepts on any.

mod common;

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::client::{Conn, get, get_unix, request_unix};
use common::{Conf, Server, Upstream, body, wait};

/// How long a file may take to appear or go after a signal.
const SIGNAL_EFFECT: Duration = Duration::from_secs(10);

/// The socket path `name` in the server's prefix.
fn sock(s: &Server, name: &str) -> PathBuf {
    s.prefix().join(name)
}

/// A configuration with one server on `{port}` and `unix:{prefix}/u.sock`
/// holding `inside`.
fn on_both(inside: &str) -> String {
    Conf::http(&format!(
        "server {{\n listen 127.0.0.1:{{port}};\n listen unix:{{prefix}}/u.sock;\n \
         server_name localhost;\n{inside}\n}}\n"
    ))
    .render()
}

#[test]
fn a_get_over_a_unix_socket_names_its_addresses_as_nginx() {
    let s = Server::nowait(&on_both(
        "location = /vars { return 200 \"[$remote_addr][$remote_port][$server_addr][$server_port][$binary_remote_addr][$proxy_add_x_forwarded_for]\"; }",
    ));
    let path = sock(&s, "u.sock");
    let r = get_unix(&path, "/vars");
    assert_eq!(r.status, 200);
    assert_eq!(
        body(&r),
        format!("[unix:][][unix:{}][][unix:][unix:]", path.display())
    );
    // The same location over TCP, for contrast.
    let r = get(s.port(), "/vars");
    assert!(body(&r).starts_with("[127.0.0.1]["), "{}", body(&r));
    assert!(body(&r).contains(&format!("][127.0.0.1][{}][", s.port())));
}

#[test]
fn the_access_log_says_unix() {
    let conf = Conf::http(
        "log_format u '$remote_addr|$remote_port|$server_addr|$server_port|$status';\n\
         server {\n listen 127.0.0.1:{port};\n listen unix:{prefix}/u.sock;\n \
         access_log {prefix}/access.log u;\n location / { return 204; }\n}\n",
    )
    .render();
    let s = Server::nowait(&conf);
    let path = sock(&s, "u.sock");
    assert_eq!(get_unix(&path, "/").status, 204);
    let log = s.prefix().join("access.log");
    let want = format!("unix:||unix:{}||204\n", path.display());
    assert!(
        wait::until(SIGNAL_EFFECT, || wait::read_text(&log) == want),
        "{:?}",
        wait::read_text(&log)
    );
    // A head refused before any location: the client's words too.
    let r = request_unix(&path, "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n");
    assert_eq!(r.status, 400);
    assert!(
        wait::until(SIGNAL_EFFECT, || {
            let text = wait::read_text(&log);
            let last = text.lines().nth(1).unwrap_or_default().to_string();
            last.starts_with("unix:||") && last.ends_with("|400")
        }),
        "{:?}",
        wait::read_text(&log)
    );
}

#[test]
fn allow_and_deny_unix_match_unix_clients_only() {
    // No files: a request let in is a 404 (access.t's way), one refused
    // a 403.
    let s = Server::nowait(&on_both(
        "root {prefix}/none;\n \
         location /allow_unix { allow unix:; deny all; }\n \
         location /deny_unix { deny unix:; }\n \
         location /deny_all { deny all; }\n \
         location /inet_only { allow 127.0.0.1; deny all; }",
    ));
    let path = sock(&s, "u.sock");
    // (location, over unix, over TCP), as access.t.
    for (loc, unix, tcp) in [
        ("/allow_unix", 404, 403),
        ("/deny_unix", 403, 404),
        ("/deny_all", 403, 403),
        ("/inet_only", 403, 404),
    ] {
        assert_eq!(get_unix(&path, loc).status, unix, "{loc} over unix");
        assert_eq!(get(s.port(), loc).status, tcp, "{loc} over TCP");
    }
}

#[test]
fn keep_alive_and_pipelining_over_a_unix_socket() {
    let s = Server::nowait(&on_both(
        "location / { return 200 \"$connection:$connection_requests\"; }",
    ));
    let mut c = Conn::open_unix(&sock(&s, "u.sock"));
    let req = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
    c.send(req);
    let first = body(&c.response().expect("a first response"));
    // After a pause the connection has been parked and comes back.
    std::thread::sleep(Duration::from_millis(300));
    c.send(req);
    let second = body(&c.response().expect("a second response"));
    let (conn, n) = second.split_once(':').expect("connection:requests");
    assert_eq!(first, format!("{conn}:1"));
    assert_eq!(n, "2");
    // Two pipelined at once.
    c.send(&[&req[..], &req[..]].concat());
    assert_eq!(body(&c.response().expect("third")), format!("{conn}:3"));
    assert_eq!(body(&c.response().expect("fourth")), format!("{conn}:4"));
}

#[test]
fn the_socket_file_is_mode_0666_and_removed_at_exit() {
    let mut s = Server::nowait(&on_both("location / { return 204; }"));
    let path = sock(&s, "u.sock");
    let meta = std::fs::symlink_metadata(&path).expect("the socket file");
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o7777, 0o666);
    // Made by whoever started the server (as root, the privileged helper
    // binds it: root's file, as nginx's master makes it).
    let ours = std::fs::metadata(s.prefix()).expect("the prefix").uid();
    assert_eq!(meta.uid(), ours);
    s.signal("QUIT");
    assert!(s.wait_exit(SIGNAL_EFFECT).is_some(), "{}", s.stderr());
    assert!(!path.exists(), "{} left behind", path.display());
}

#[test]
fn sigterm_removes_the_socket_file_too() {
    let mut s = Server::nowait(&on_both("location / { return 204; }"));
    let path = sock(&s, "u.sock");
    assert!(path.exists());
    s.signal("TERM");
    assert!(s.wait_exit(SIGNAL_EFFECT).is_some(), "{}", s.stderr());
    assert!(!path.exists(), "{} left behind", path.display());
}

/// Runs the binary with `args` in `prefix` until it exits: its exit code
/// and stderr.
fn run(prefix: &Path, conf: &str, args: &[&str]) -> (Option<i32>, String) {
    let conf_path = prefix.join("nginx.conf");
    let conf = common::server::for_kind(common::server::Kind::Nowait, conf);
    std::fs::write(&conf_path, conf).expect("write the configuration");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("conf/mime.types"),
        prefix.join("mime.types"),
    )
    .expect("copy mime.types");
    let out = Command::new(env!("CARGO_BIN_EXE_nowait"))
        .arg("-p")
        .arg(format!("{}/", prefix.display()))
        .arg("-c")
        .arg(&conf_path)
        .args(["-e", "stderr", "-g", "daemon off;"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the nowait binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`on_both`] with its placeholders filled for `prefix` and `port`.
fn on_both_in(prefix: &Path, port: u16) -> String {
    on_both("location / { return 204; }")
        .replace("{port}", &port.to_string())
        .replace("{prefix}", &prefix.to_string_lossy())
}

#[test]
fn an_existing_file_is_address_already_in_use_and_is_kept() {
    let dir = common::TempDir::new("unix-inuse");
    let path = dir.path().join("u.sock");
    // A stale socket file, as a crashed server leaves it.
    drop(std::os::unix::net::UnixListener::bind(&path).expect("bind a stale socket"));
    let port = common::server::free_port();
    let (code, stderr) = run(dir.path(), &on_both_in(dir.path(), port), &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "[emerg] bind() to unix:{} failed (98: Address already in use)",
            path.display()
        )),
        "{stderr}"
    );
    // Not ours to remove: the next start fails the same way, as nginx's.
    assert!(path.exists());
}

#[test]
fn a_failed_start_removes_the_socket_files_it_made() {
    let dir = common::TempDir::new("unix-failed");
    let (made, stale) = (dir.path().join("a.sock"), dir.path().join("b.sock"));
    drop(std::os::unix::net::UnixListener::bind(&stale).expect("bind a stale socket"));
    let conf = Conf::http(
        "server {\n listen 127.0.0.1:{port};\n listen unix:{prefix}/a.sock;\n \
         listen unix:{prefix}/b.sock;\n}\n",
    )
    .render()
    .replace("{port}", &common::server::free_port().to_string())
    .replace("{prefix}", &dir.path().to_string_lossy());
    let (code, stderr) = run(dir.path(), &conf, &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("(98: Address already in use)"), "{stderr}");
    // nginx would leave a.sock, and its next start would fail on it.
    assert!(!made.exists(), "{} left behind", made.display());
    assert!(stale.exists());
}

#[test]
fn a_configuration_test_leaves_no_socket_file() {
    let dir = common::TempDir::new("unix-t");
    let port = common::server::free_port();
    let (code, stderr) = run(dir.path(), &on_both_in(dir.path(), port), &["-t"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("test is successful"), "{stderr}");
    assert!(!dir.path().join("u.sock").exists());
}

#[test]
fn a_reload_adds_and_drops_unix_sockets() {
    let conf = |name: &str| {
        Conf::http(&format!(
            "server {{\n listen 127.0.0.1:{{port}};\n listen unix:{{prefix}}/{name};\n \
             location / {{ return 200 \"{name} $server_addr\"; }}\n}}\n"
        ))
        .main("error_log {prefix}/error.log info;")
        .render()
    };
    let s = Server::nowait(&conf("a.sock"));
    let (a, b) = (sock(&s, "a.sock"), sock(&s, "b.sock"));
    assert_eq!(
        body(&get_unix(&a, "/")),
        format!("a.sock unix:{}", a.display())
    );
    s.write_conf(&conf("b.sock"));
    s.signal("HUP");
    assert!(
        wait::until(SIGNAL_EFFECT, || b.exists() && !a.exists()),
        "a: {}, b: {}; stderr:\n{}",
        a.exists(),
        b.exists(),
        s.stderr()
    );
    // The new generation answers on the new socket; the old one is gone.
    assert!(wait::until(SIGNAL_EFFECT, || {
        body(&get_unix(&b, "/")) == format!("b.sock unix:{}", b.display())
    }));
    assert!(std::os::unix::net::UnixStream::connect(&a).is_err());
    // Bound by the privileged helper when there is one: the starter's
    // file, 0666, as at start-up.
    let meta = std::fs::symlink_metadata(&b).expect("the new socket file");
    assert_eq!(meta.permissions().mode() & 0o7777, 0o666);
    let ours = std::fs::metadata(s.prefix()).expect("the prefix").uid();
    assert_eq!(meta.uid(), ours);
    // nginx's words for the socket a reload closed.
    let log = s.prefix().join("error.log");
    let line = format!("deleting socket {}", a.display());
    assert!(
        wait::until(SIGNAL_EFFECT, || wait::read_text(&log)
            .lines()
            .any(|l| l.contains("[warn] ") && l.ends_with(&line))),
        "{}",
        wait::read_text(&log)
    );
}

#[test]
fn default_server_and_server_name_per_unix_address() {
    let conf = Conf::http(
        "server {\n listen 127.0.0.1:{port};\n listen unix:{prefix}/u.sock;\n \
         server_name one;\n return 200 \"one\";\n}\n\
         server {\n listen unix:{prefix}/u.sock default_server;\n \
         server_name two;\n return 200 \"two\";\n}\n\
         server {\n listen unix:{prefix}/v.sock;\n server_name three;\n return 200 \"three\";\n}\n",
    )
    .render();
    let s = Server::nowait(&conf);
    let (u, v) = (sock(&s, "u.sock"), sock(&s, "v.sock"));
    let host = |path: &Path, h: &str| {
        body(&request_unix(
            path,
            &format!("GET / HTTP/1.1\r\nHost: {h}\r\nConnection: close\r\n\r\n"),
        ))
    };
    assert_eq!(host(&u, "one"), "one");
    assert_eq!(host(&u, "two"), "two");
    assert_eq!(host(&u, "other"), "two");
    assert_eq!(host(&v, "one"), "three");
    // The TCP address has its own default: the first server.
    assert_eq!(body(&get(s.port(), "/")), "one");
}

#[test]
fn realip_trusts_unix_clients_under_set_real_ip_from_unix() {
    // realip_hostname.t's way: the address seen after the access phases,
    // in a header of the content's reply (`return` would answer first).
    let s = Server::nowait(&on_both(
        "add_header X-IP \"$remote_addr $realip_remote_addr\" always;\n \
         location /unix { set_real_ip_from unix:; empty_gif; }\n \
         location /lo { set_real_ip_from 127.0.0.1; empty_gif; }",
    ));
    let path = sock(&s, "u.sock");
    let ask = |loc: &str| {
        request_unix(
            &path,
            &format!(
                "GET {loc} HTTP/1.1\r\nHost: localhost\r\nX-Real-IP: 192.0.2.1\r\n\
                 Connection: close\r\n\r\n"
            ),
        )
        .header("x-ip")
    };
    assert_eq!(ask("/unix").as_deref(), Some("192.0.2.1 unix:"));
    assert_eq!(ask("/lo").as_deref(), Some("unix: unix:"));
}

#[test]
fn limits_keyed_by_binary_remote_addr_share_one_key_for_unix_clients() {
    let conf = Conf::http(
        "limit_req_zone $binary_remote_addr zone=r:1m rate=1r/m;\n\
         server {\n listen 127.0.0.1:{port};\n listen unix:{prefix}/u.sock;\n \
         location / { limit_req zone=r; empty_gif; }\n}\n",
    )
    .render();
    let s = Server::nowait(&conf);
    let path = sock(&s, "u.sock");
    // Every unix-domain client is `unix:`, as in nginx: one key for all.
    assert_eq!(get_unix(&path, "/").status, 200);
    assert_eq!(get_unix(&path, "/").status, 503);
    // The TCP client has its own.
    assert_eq!(get(s.port(), "/").status, 200);
}

#[test]
fn proxy_pass_to_a_unix_listen_of_nowait_itself() {
    let s = Server::nowait(&on_both(
        "location /front/ { proxy_pass http://unix:{prefix}/u.sock:/back/; \
         proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for; }\n \
         location /back/ { return 200 \"[$remote_addr][$http_x_forwarded_for][$server_addr]\"; }",
    ));
    let path = sock(&s, "u.sock");
    let r = get(s.port(), "/front/x");
    assert_eq!(r.status, 200);
    assert_eq!(
        body(&r),
        format!("[unix:][127.0.0.1][unix:{}]", path.display())
    );
}

#[test]
fn a_unix_client_proxied_to_a_tcp_upstream() {
    let up = Upstream::echo();
    let s = Server::nowait(&on_both(&format!(
        "location / {{ proxy_pass http://127.0.0.1:{}; \
         proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for; \
         proxy_set_header X-Real-IP $remote_addr; }}",
        up.port()
    )));
    let path = sock(&s, "u.sock");
    let r = request_unix(
        &path,
        "GET /a HTTP/1.1\r\nHost: localhost\r\nX-Forwarded-For: 192.0.2.9\r\n\
         Connection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    let seen = up.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].header("x-forwarded-for").as_deref(),
        Some("192.0.2.9, unix:")
    );
    assert_eq!(seen[0].header("x-real-ip").as_deref(), Some("unix:"));
}

#[test]
fn stub_status_and_nowait_status_answer_over_a_unix_socket() {
    let s = Server::nowait(&on_both(
        "location = /stub { stub_status; }\n location = /status { nowait_status; }",
    ));
    let path = sock(&s, "u.sock");
    let r = get_unix(&path, "/stub");
    assert_eq!(r.status, 200);
    assert!(body(&r).starts_with("Active connections: "), "{}", body(&r));
    let r = get_unix(&path, "/status");
    assert_eq!(r.status, 200);
    assert!(body(&r).contains("nowait_connections"), "{}", body(&r));
}

#[test]
fn files_with_sendfile_and_tcp_nopush_and_through_the_pool() {
    let f = common::Fixture::build();
    // sendfile, with tcp_nopush (TCP_CORK, not set on a unix socket), and
    // aio threads (the pool writes to the connection's duplicate).
    for extra in [
        "sendfile on; tcp_nopush on; sendfile_max_chunk 64k;",
        "sendfile off;",
        "sendfile on; aio threads;",
    ] {
        let conf = Conf::http(&format!(
            "server {{\n listen 127.0.0.1:{{port}};\n listen unix:{{prefix}}/u.sock;\n \
             root {{root}};\n {extra}\n}}\n"
        ))
        .root(f.root())
        .render();
        let s = Server::nowait(&conf);
        let r = get_unix(&sock(&s, "u.sock"), "/big.bin");
        assert_eq!(r.status, 200, "{extra}");
        assert!(
            r.body == common::fixture::big_content(),
            "{extra}: body differs"
        );
    }
}

#[test]
fn every_way_of_accepting_takes_unix_connections() {
    // accept_mutex off: each worker's EPOLLEXCLUSIVE instance; on: the
    // socket in each worker's reactor; multi_accept takes several at once.
    for events in [
        "accept_mutex off;",
        "accept_mutex on;",
        "accept_mutex on; multi_accept on;",
        "multi_accept on;",
    ] {
        let conf = Conf::http(
            "server {\n listen 127.0.0.1:{port};\n listen unix:{prefix}/u.sock;\n \
             location / { return 200 \"ok\"; }\n}\n",
        )
        .main("worker_processes 2;")
        .events(&format!("worker_connections 64; {events}"))
        .render();
        let s = Server::nowait(&conf);
        let path = sock(&s, "u.sock");
        let mut open: Vec<Conn<std::os::unix::net::UnixStream>> =
            (0..8).map(|_| Conn::open_unix(&path)).collect();
        for c in &mut open {
            c.send(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
        }
        for c in &mut open {
            let r = c
                .response()
                .unwrap_or_else(|| panic!("{events}: no response"));
            assert_eq!(body(&r), "ok", "{events}");
        }
    }
}

#[test]
fn a_reload_keeps_the_socket_and_hands_waiting_unix_connections_over() {
    let conf = |text: &str| {
        Conf::http(&format!(
            "server {{\n listen 127.0.0.1:{{port}};\n listen unix:{{prefix}}/u.sock;\n \
             location / {{ return 200 \"{text}\"; }}\n}}\n"
        ))
        .render()
    };
    let s = Server::nowait(&conf("old"));
    let path = sock(&s, "u.sock");
    let mut kept = Conn::open_unix(&path);
    kept.send(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(body(&kept.response().expect("a first response")), "old");
    let inode = std::fs::metadata(&path).expect("the socket file").ino();
    s.write_conf(&conf("new"));
    s.signal("HUP");
    assert!(
        wait::until(SIGNAL_EFFECT, || body(&get_unix(&path, "/")) == "new"),
        "{}",
        s.stderr()
    );
    // The same socket (no rebind), and the waiting connection was kept and
    // is served by the new configuration.
    assert_eq!(
        std::fs::metadata(&path).expect("the socket file").ino(),
        inode
    );
    kept.send(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(body(&kept.response().expect("a second response")), "new");
}
