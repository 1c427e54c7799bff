//! TLS 1.3 early data (`ssl_early_data`) and `$ssl_early_data`, with a
//! rustls client that resumes a session and sends its request as 0-RTT
//! data: the request is answered, `$ssl_early_data` is `1` for it and
//! empty for a request after the handshake, and nothing is taken early
//! with `ssl_early_data off`. Replays are the application's to refuse, as
//! in nginx: `proxy_set_header Early-Data $ssl_early_data;` tells the
//! upstream. Against Debian's nginx, `openssl s_client -early_data`
//! finds both servers take the request early and say so alike.
//!
//! Without `openssl` or nginx the differential test says SKIPPED, and
//! fails under `NOWAIT_REQUIRE_ALL=1`.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use common::nginx_t;
use common::response::{Response, parse_first};
use common::tls::{self, Options, fixture};
use common::{Conf, Server, require_or_skip};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

/// A nowait server with TLS 1.3, a session cache and `ssl_early_data
/// early`, answering `$ssl_early_data` (`-` when empty).
fn server(early: &str, extra: &str) -> Server {
    let conf = Conf::http(&format!(
        "server {{ listen 127.0.0.1:{{port}} ssl; server_name localhost;
            ssl_certificate {}; ssl_certificate_key {};
            ssl_protocols TLSv1.3; ssl_session_cache shared:s:1m;
            ssl_early_data {early};
            location / {{ return 200 \"[$ssl_early_data]\"; }}
            {extra} }}",
        fixture("localhost-rsa.crt"),
        fixture("localhost-rsa.key"),
    ))
    .render();
    Server::nowait(&conf)
}

/// A client that keeps sessions and sends early data when it may.
fn client() -> Arc<ClientConfig> {
    let mut c = (*tls::client(&Options {
        versions: vec![&rustls::version::TLS13],
        resume: true,
        ..Options::default()
    }))
    .clone();
    c.enable_early_data = true;
    Arc::new(c)
}

/// Sends `GET path` (closing) on a new connection, as early data when
/// the client may: the response, and whether the server took it early.
fn get(port: u16, config: &Arc<ClientConfig>, path: &str) -> (Response, bool) {
    let sock = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let mut conn = ClientConnection::new(config.clone(), name).expect("a connection");
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let sent_early = match conn.early_data() {
        Some(mut e) => {
            e.write_all(request.as_bytes()).expect("early data");
            true
        }
        None => false,
    };
    let mut s = StreamOwned::new(conn, sock);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock).expect("the handshake");
    }
    let accepted = sent_early && s.conn.is_early_data_accepted();
    if !accepted {
        s.write_all(request.as_bytes()).expect("the request");
    }
    let mut got = Vec::new();
    match s.read_to_end(&mut got) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {}
        Err(e) => panic!("read: {e} after {} bytes", got.len()),
    }
    (
        parse_first(&got, false, true).expect("a response").0,
        accepted,
    )
}

#[test]
fn a_request_in_early_data_is_answered_and_says_so() {
    let s = server("on", "");
    let config = client();
    let (r, early) = get(s.port(), &config, "/");
    assert!(!early, "nothing to resume yet");
    assert_eq!(common::body(&r), "[]");
    let (r, early) = get(s.port(), &config, "/");
    assert!(early, "the server refused the early data");
    assert_eq!(r.status, 200);
    assert_eq!(common::body(&r), "[1]");
    // The ticket is single-use: the next connection resumes with the
    // ticket it got since, and sends early data again.
    let (r, early) = get(s.port(), &config, "/");
    assert!(early);
    assert_eq!(common::body(&r), "[1]");
}

#[test]
fn without_ssl_early_data_nothing_is_taken_early() {
    let s = server("off", "");
    let config = client();
    for _ in 0..2 {
        let (r, early) = get(s.port(), &config, "/");
        assert!(!early);
        assert_eq!(common::body(&r), "[]");
    }
}

#[test]
fn a_proxied_request_tells_the_upstream_it_came_early() {
    let upstream = common::Server::nowait(
        &Conf::server("location / { return 200 \"early=$http_early_data\"; }").render(),
    );
    let s = server(
        "on",
        &format!(
            "location /up {{ proxy_pass http://127.0.0.1:{}/; proxy_set_header Early-Data $ssl_early_data; }}",
            upstream.port()
        ),
    );
    let config = client();
    let (r, _) = get(s.port(), &config, "/up");
    assert_eq!(common::body(&r), "early=");
    let (r, early) = get(s.port(), &config, "/up");
    assert!(early);
    assert_eq!(common::body(&r), "early=1");
}

/// Debian's OpenSSL command line.
const OPENSSL: &str = "/usr/bin/openssl";

/// What `openssl s_client` prints for a request sent after a full
/// handshake and then as early data on the resumed session: each
/// response's body line, and whether the early data was accepted.
fn s_client_early(port: u16, dir: &std::path::Path) -> String {
    use std::process::{Command, Stdio};
    let request = dir.join("request.txt");
    std::fs::write(
        &request,
        "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let session = dir.join(format!("session-{port}"));
    let run = |args: &[&std::ffi::OsStr], stdin: Stdio| {
        let out = Command::new("timeout")
            .arg("20")
            .arg(OPENSSL)
            .args(["s_client", "-connect", &format!("127.0.0.1:{port}")])
            .args(args)
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .output()
            .expect("openssl s_client runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with('[') || l.contains("Early data"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    // The first request goes after the handshake (its answer brings the
    // ticket), the second as early data on the session it left.
    let first = run(
        &[
            "-ign_eof".as_ref(),
            "-sess_out".as_ref(),
            session.as_os_str(),
        ],
        Stdio::from(std::fs::File::open(&request).unwrap()),
    );
    let again = run(
        &[
            "-ign_eof".as_ref(),
            "-sess_in".as_ref(),
            session.as_os_str(),
            "-early_data".as_ref(),
            request.as_os_str(),
        ],
        Stdio::null(),
    );
    format!("{first} | {again}")
}

#[test]
fn nginx_and_nowait_take_openssl_s_early_data_alike() {
    require_or_skip!(
        std::path::Path::new(OPENSSL).exists(),
        "{OPENSSL} is not installed"
    );
    require_or_skip!(
        std::path::Path::new(nginx_t::NGINX).exists(),
        "{} is not installed",
        nginx_t::NGINX
    );
    let conf = Conf::http(&format!(
        "server {{ listen 127.0.0.1:{{port}} ssl; server_name localhost;
            ssl_certificate {}; ssl_certificate_key {};
            ssl_protocols TLSv1.3; ssl_session_cache shared:s:1m; ssl_early_data on;
            location / {{ return 200 \"[$ssl_early_data]\\n\"; }} }}",
        fixture("localhost-rsa.crt"),
        fixture("localhost-rsa.key"),
    ))
    .render();
    let dir = common::TempDir::new("tls-early");
    let nginx = Server::nginx(&conf);
    let ours = Server::nowait(&conf);
    // nginx reads `$ssl_early_data` when the variable is evaluated: a
    // client Finished that arrives first (a loaded machine) makes it
    // empty. nowait decides when the request's head is read, before the
    // Finished is taken: always `1`, nginx's answer on an idle machine.
    const EARLY: &str = "Early data was not sent [] | Early data was accepted [1]";
    const LATE: &str = "Early data was not sent [] | Early data was accepted []";
    let nginx_says = s_client_early(nginx.port(), dir.path());
    assert!(
        nginx_says == EARLY || nginx_says == LATE,
        "nginx: {nginx_says}"
    );
    assert_eq!(s_client_early(ours.port(), dir.path()), EARLY);
}
