//! Differential test of `listen unix:`: nowait and the real nginx 1.22 run
//! the same configuration, each with a unix-domain socket in its own
//! prefix beside its loopback port, and answer the same raw requests sent
//! over their sockets alike: status line, the framing, entity and
//! `Location` headers, a header the configuration adds with the client's
//! address, and the body. Each server's socket path is normalized to
//! `SOCK` (the paths differ by prefix), and the product name in error
//! pages to `SERVER`.
//!
//! The cases: a static file and a missing one; the connection's variables
//! (`$remote_addr`, `$remote_port`, `$server_addr`, `$server_port`,
//! `$binary_remote_addr`, `$proxy_add_x_forwarded_for`); a directory's
//! redirect with and without a `Host` (nginx then names the socket:
//! `http://unix:/path/dir/`); `allow`/`deny` with `unix:` and `all`;
//! `set_real_ip_from unix:`; keep-alive; and `limit_req` keyed by
//! `$binary_remote_addr`, which all unix-domain clients share.
//!
//! Needs `/usr/sbin/nginx`. Run: `cargo test --test differential_unix`.

mod common;

use std::path::PathBuf;

use common::client::{Conn, request_unix};
use common::{Conf, Fixture, Response, Server};

/// The server's locations (its root is the fixture's).
const LOCATIONS: &str = "\
    add_header X-IP \"$remote_addr|$realip_remote_addr\" always;\n\
    location = /vars { return 200 \"[$remote_addr][$remote_port][$server_addr][$server_port][$binary_remote_addr][$proxy_add_x_forwarded_for]\\n\"; }\n\
    location /allow_unix/ { allow unix:; deny all; }\n\
    location /deny_unix/ { deny unix:; }\n\
    location /deny_all/ { deny all; }\n\
    location /inet_only/ { allow 127.0.0.1; deny all; }\n\
    location /realip/ { set_real_ip_from unix:; alias {root}/; }\n\
    location /realip_lo/ { set_real_ip_from 127.0.0.1; alias {root}/; }\n\
    location /limited/ { limit_req zone=one; alias {root}/; }";

/// The headers compared when either server sends them.
const COMPARED: [&str; 9] = [
    "Content-Type",
    "Content-Length",
    "Transfer-Encoding",
    "Connection",
    "Location",
    "Last-Modified",
    "ETag",
    "Accept-Ranges",
    "X-IP",
];

/// A request with `Host: localhost` that closes the connection.
fn get(path: &str, extra: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{extra}Connection: close\r\n\r\n")
}

/// The requests, each on a connection of its own, in order (the last two
/// share `limit_req`'s key).
fn cases() -> Vec<String> {
    vec![
        get("/index.html", ""),
        get("/missing.html", ""),
        get("/vars", ""),
        get("/vars", "X-Forwarded-For: 192.0.2.9\r\n"),
        get("/dir", ""),
        "GET /dir HTTP/1.0\r\n\r\n".to_string(),
        "HEAD /index.html HTTP/1.0\r\n\r\n".to_string(),
        get("/allow_unix/index.html", ""),
        get("/deny_unix/index.html", ""),
        get("/deny_all/index.html", ""),
        get("/inet_only/index.html", ""),
        get("/realip/index.html", "X-Real-IP: 192.0.2.1\r\n"),
        get("/realip_lo/index.html", "X-Real-IP: 192.0.2.1\r\n"),
        get("/limited/index.html", ""),
        get("/limited/index.html", ""),
    ]
}

/// The server's socket.
fn sock(s: &Server) -> PathBuf {
    s.prefix().join("u.sock")
}

/// What is compared of one response, with the server's socket path as
/// `SOCK` (and `Content-Length` counted as if the body said `SOCK`).
fn view(r: &Response, s: &Server) -> String {
    let path = sock(s).to_string_lossy().into_owned();
    let text = String::from_utf8_lossy(&r.body);
    let shorter = text.matches(&path).count() * (path.len() - "SOCK".len());
    let mut out = format!("{}\n", r.status_line);
    for name in COMPARED {
        if let Some(v) = r.header(name) {
            let v = match (name, v.parse::<usize>()) {
                ("Content-Length", Ok(n)) => (n - shorter).to_string(),
                _ => v.replace(&path, "SOCK"),
            };
            out.push_str(&format!("{name}: {v}\n"));
        }
    }
    let body = text
        .replace(&path, "SOCK")
        .replace(concat!("nowait/", env!("CARGO_PKG_VERSION")), "SERVER")
        .replace("nginx/1.22.1", "SERVER");
    out.push_str(&body);
    out
}

/// Two requests on one kept-alive connection, as one view.
fn keep_alive(s: &Server) -> String {
    let mut c = Conn::open_unix(&sock(s));
    let mut out = String::new();
    for _ in 0..2 {
        c.send(b"GET /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n");
        let r = c.response().expect("a response on the kept connection");
        out.push_str(&view(&r, s));
    }
    out
}

#[test]
fn answers_over_a_unix_socket_match_nginx() {
    let f = Fixture::build();
    let conf = Conf::http(&format!(
        "limit_req_zone $binary_remote_addr zone=one:1m rate=1r/m;\n\
         server {{\n listen 127.0.0.1:{{port}};\n listen unix:{{prefix}}/u.sock;\n \
         server_name localhost;\n root {{root}};\n{LOCATIONS}\n}}\n"
    ))
    .root(f.root())
    .render();
    let nginx = Server::nginx(&conf);
    let nowait = Server::nowait(&conf);
    let mut mismatches = Vec::new();
    let mut seen = String::new();
    let cases = cases();
    for raw in &cases {
        let want = view(&request_unix(&sock(&nginx), raw), &nginx);
        let got = view(&request_unix(&sock(&nowait), raw), &nowait);
        seen.push_str(&want);
        if want != got {
            mismatches.push(format!("{raw:?}\n--- nginx\n{want}\n--- nowait\n{got}"));
        }
    }
    let (want, got) = (keep_alive(&nginx), keep_alive(&nowait));
    if want != got {
        mismatches.push(format!("keep-alive\n--- nginx\n{want}\n--- nowait\n{got}"));
    }
    // The cases reach what they are about (nginx's side).
    for part in [
        "Location: http://unix:SOCK/dir/\n",
        "Location: http://localhost/dir/\n",
        "[unix:][][unix:SOCK][][unix:][192.0.2.9, unix:]",
        "X-IP: 192.0.2.1|unix:\n",
        "HTTP/1.1 403 Forbidden\n",
        "HTTP/1.1 503 Service Temporarily Unavailable\n",
    ] {
        assert!(seen.contains(part), "no {part:?} in:\n{seen}");
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} cases differ:\n{}",
        mismatches.len(),
        cases.len() + 1,
        mismatches.join("\n")
    );
}
