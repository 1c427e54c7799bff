//! Certificates named with variables (`ssl_certificate
//! certs/$ssl_server_name.crt;`), loaded per handshake, and `data:`
//! values, against Debian's nginx: the same configuration, the same
//! handshakes (a name whose files exist, one whose do not, none), the
//! same `[error]` and `[info]` lines; a file replaced on disk is served
//! from the next handshake on.
//!
//! Without `openssl` or nginx the differential test says SKIPPED, and
//! fails under `NOWAIT_REQUIRE_ALL=1`.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::nginx_t::{self, check_good};
use common::tls::{self, fixture};
use common::{Conf, Server, require_or_skip};

/// Debian's OpenSSL command line.
const OPENSSL: &str = "/usr/bin/openssl";

/// How long a server may take to log what a handshake did.
const LOG_TIMEOUT: Duration = Duration::from_secs(10);

/// A configuration whose one server names its pair by `$ssl_server_name`
/// in `dir`, logging errors at `info` to `info.log`. The directory exists
/// before the server starts: the serving process may read under it
/// (Landlock's rules name existing directories).
fn per_name_conf(dir: &Path) -> String {
    Conf::http(&format!(
        "error_log {{prefix}}/info.log info;
         server {{ listen 127.0.0.1:{{port}} ssl; server_name localhost;
             ssl_certificate {0}/$ssl_server_name.crt;
             ssl_certificate_key {0}/$ssl_server_name.key;
             location / {{ return 200 \"ok $ssl_server_name\"; }} }}",
        dir.display()
    ))
    .render()
}

/// Puts the pair `cert`/`key` of the fixtures in `dir` as `NAME.*`.
fn install(dir: &Path, name: &str, cert: &str, key: &str) {
    std::fs::copy(fixture(cert), dir.join(format!("{name}.crt"))).unwrap();
    std::fs::copy(fixture(key), dir.join(format!("{name}.key"))).unwrap();
}

/// The `error` and `info` lines about the handshake that `s_client`
/// naming `sni` makes, without time, pid and connection number, and
/// whether a response came.
fn handshake(server: &Server, sni: Option<&str>) -> String {
    let log = server.prefix().join("info.log");
    let before = std::fs::read(&log).map_or(0, |b| b.len());
    let mut cmd = Command::new("timeout");
    cmd.arg("20")
        .arg(OPENSSL)
        .args(["s_client", "-quiet", "-connect"])
        .arg(format!("127.0.0.1:{}", server.port()));
    if let Some(n) = sni {
        cmd.args(["-servername", n]);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("openssl s_client runs");
    let mut stdin = child.stdin.take().expect("a pipe");
    stdin
        .write_all(b"GET / HTTP/1.0\r\n\r\n")
        .expect("the request is written");
    drop(stdin);
    let out = child.wait_with_output().expect("s_client ends");
    let body = String::from_utf8_lossy(&out.stdout);
    let answered = body.lines().last().unwrap_or("(nothing)").to_string();
    let deadline = Instant::now() + LOG_TIMEOUT;
    let lines = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<String> = text
            .get(before..)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("[error]") || l.contains("SSL_do_handshake"))
            .map(|l| {
                let level = if l.contains("[error]") {
                    "error"
                } else {
                    "info"
                };
                let msg = l.split_once(": *").map_or(l, |(_, m)| m);
                let msg = msg.split_once(' ').map_or(msg, |(_, m)| m);
                format!("[{level}] {}", msg.split(", client:").next().unwrap_or(msg))
            })
            .collect();
        if answered.starts_with("ok") || lines.len() >= 2 || Instant::now() > deadline {
            break lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    format!("{answered}\n{}", lines.join("\n"))
}

#[test]
fn nginx_and_nowait_load_certificates_by_name_alike() {
    require_or_skip!(Path::new(OPENSSL).exists(), "{OPENSSL} is not installed");
    require_or_skip!(
        Path::new(nginx_t::NGINX).exists(),
        "{} is not installed",
        nginx_t::NGINX
    );
    let dir = common::TempDir::new("tls-names-certs");
    install(
        dir.path(),
        "localhost",
        "localhost-rsa.crt",
        "localhost-rsa.key",
    );
    let conf = per_name_conf(dir.path());
    let nginx = Server::nginx(&conf);
    let ours = Server::nowait(&conf);
    let mut wrong = Vec::new();
    for sni in [Some("localhost"), Some("missing.test"), None] {
        let (want, got) = (handshake(&nginx, sni), handshake(&ours, sni));
        if want != got {
            wrong.push(format!("{sni:?}:\n  nginx:  {want:?}\n  nowait: {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

#[test]
fn a_replaced_certificate_is_served_from_the_next_handshake() {
    let dir = common::TempDir::new("tls-names-replaced");
    install(
        dir.path(),
        "localhost",
        "localhost-rsa.crt",
        "localhost-rsa.key",
    );
    let s = Server::nowait(&per_name_conf(dir.path()));
    let config = tls::client(&tls::Options::default());
    for _ in 0..20 {
        let c = tls::connect(s.port(), "localhost", &config).expect("the handshake");
        assert!(tls::peer_names(&c).contains("localhost"));
        let scheme = c.conn.negotiated_cipher_suite().map(|s| s.suite());
        assert!(format!("{scheme:?}").contains("RSA"), "{scheme:?}");
    }
    // The ECDSA pair under the same names: a new file, a new identity.
    install(
        dir.path(),
        "localhost",
        "localhost-ec.crt",
        "localhost-ec.key",
    );
    let c = tls::connect(s.port(), "localhost", &config).expect("the handshake");
    let scheme = c.conn.negotiated_cipher_suite().map(|s| s.suite());
    assert!(format!("{scheme:?}").contains("ECDSA"), "{scheme:?}");
    let mut c = c;
    assert_eq!(
        common::body(&tls::get_on(&mut c, "localhost", "/")),
        "ok localhost"
    );
}

#[test]
fn data_values_are_certificates_in_the_configuration() {
    require_or_skip!(
        Path::new(nginx_t::NGINX).exists(),
        "{} is not installed",
        nginx_t::NGINX
    );
    let pem = |f: &str| std::fs::read_to_string(fixture(f)).unwrap();
    let body = format!(
        "server {{ listen 127.0.0.1:18443 ssl; ssl_certificate \"data:{}\"; ssl_certificate_key \"data:{}\"; }}",
        pem("localhost-ec.crt"),
        pem("localhost-ec.key")
    );
    check_good(vec![("data: pair", body.clone())]);
    let conf = Conf::http(&body.replace("18443", "{port}")).render();
    let s = Server::nowait(&conf);
    let config = tls::client(&tls::Options::default());
    let c = tls::connect(s.port(), "localhost", &config).expect("the handshake");
    assert!(tls::peer_names(&c).contains("localhost"));
}
