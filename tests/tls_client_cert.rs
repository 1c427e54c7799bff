//! Client certificates (`ssl_verify_client`, `ssl_client_certificate`,
//! `ssl_trusted_certificate`, `ssl_verify_depth`, `ssl_crl`) and the
//! per-connection TLS variables, against Debian's nginx: the same
//! configuration run by both, the same `openssl s_client` connections
//! (each client certificate of `tests/tls/`), the same access log lines
//! (`$ssl_client_verify`, the DNs, serial, fingerprint, dates, the PEM
//! forms, `$status`) and the same `info` lines; the configuration errors
//! in nginx's words; the refusals (495, 496) through `error_page`.
//!
//! Without `openssl` or nginx the differential tests say SKIPPED, and
//! fail under `NOWAIT_REQUIRE_ALL=1`.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::nginx_t::{self, check_bad};
use common::tls::{self, Options, fixture};
use common::{Conf, Server, require_or_skip};

/// Debian's OpenSSL command line.
const OPENSSL: &str = "/usr/bin/openssl";

/// How long a server may take to log a request that has been answered.
const LOG_TIMEOUT: Duration = Duration::from_secs(10);

/// The access log format: every variable of the module, `|` apart.
const FORMAT: &str = "$ssl_client_verify|$ssl_client_s_dn|$ssl_client_i_dn|\
$ssl_client_s_dn_legacy|$ssl_client_i_dn_legacy|$ssl_client_serial|\
$ssl_client_fingerprint|$ssl_client_v_start|$ssl_client_v_end|$ssl_client_v_remain|\
$ssl_client_raw_cert|$ssl_client_escaped_cert|$ssl_client_cert|$ssl_session_id|$ssl_early_data|$status";

/// The CRLs of the CA and of the intermediate, in one file.
fn both_crls(dir: &Path) -> String {
    let mut both = std::fs::read(fixture("client-ca.crl")).expect("client-ca.crl");
    both.extend(std::fs::read(fixture("int.crl")).expect("int.crl"));
    let path = dir.join("both.crl");
    std::fs::write(&path, both).expect("both.crl is written");
    path.to_string_lossy().into_owned()
}

/// The servers of the differential test, one per server name: each way
/// of verifying.
fn servers(crls: &str) -> String {
    let server = |name: &str, body: &str| {
        format!(
            "server {{ listen 127.0.0.1:{{port}} ssl; server_name {name};
                ssl_certificate {}; ssl_certificate_key {};
                ssl_session_cache shared:{name}:1m;
                access_log {{prefix}}/tls.log t;
                {body}
                location / {{ return 200 \"ok\\n\"; }} }}\n",
            fixture("localhost-rsa.crt"),
            fixture("localhost-rsa.key"),
        )
    };
    let ca = fixture("ca.crt");
    [
        server(
            "optional.test",
            &format!("ssl_verify_client optional; ssl_client_certificate {ca}; ssl_verify_depth 2;"),
        ),
        server(
            "noca.test",
            &format!("ssl_verify_client optional_no_ca; ssl_client_certificate {ca};"),
        ),
        server(
            "crl.test",
            &format!(
                "ssl_verify_client on; ssl_client_certificate {ca}; ssl_crl {};",
                fixture("client-ca.crl")
            ),
        ),
        server(
            "crl2.test",
            &format!("ssl_verify_client on; ssl_client_certificate {ca}; ssl_crl {crls}; ssl_verify_depth 2; ssl_session_tickets off;"),
        ),
        server(
            "depth0.test",
            &format!("ssl_verify_client on; ssl_client_certificate {ca}; ssl_verify_depth 0;"),
        ),
        server(
            "trusted.test",
            &format!(
                "ssl_verify_client on; ssl_trusted_certificate {ca}; ssl_client_certificate {};",
                fixture("ca2.crt")
            ),
        ),
        server("off.test", ""),
    ]
    .concat()
}

/// A client of the differential test: the server name and what
/// `s_client` is given.
type Case = (&'static str, Vec<String>);

fn cases() -> Vec<Case> {
    let cert = |name: &str| {
        vec![
            "-cert".to_string(),
            fixture(&format!("{name}.crt")),
            "-key".to_string(),
            fixture(&format!("{name}.key")),
        ]
    };
    let chain = || {
        let mut v = cert("client-int");
        v.extend(["-cert_chain".to_string(), fixture("int.crt")]);
        v
    };
    let mut out: Vec<Case> = Vec::new();
    for name in [
        "client",
        "client-ca2",
        "client-self",
        "client-expired",
        "client-revoked",
        "client-odd",
        "client-int",
        "localhost-rsa",
        "int",
    ] {
        out.push(("optional.test", cert(name)));
    }
    out.push(("optional.test", chain()));
    out.push(("optional.test", Vec::new()));
    for name in [
        "client",
        "client-ca2",
        "client-self",
        "client-expired",
        "client-int",
    ] {
        out.push(("noca.test", cert(name)));
    }
    for name in ["client", "client-revoked", "client-self"] {
        out.push(("crl.test", cert(name)));
    }
    out.push(("crl.test", chain()));
    out.push(("crl.test", Vec::new()));
    out.push(("crl2.test", chain()));
    out.push(("depth0.test", chain()));
    out.push(("depth0.test", cert("client")));
    out.push(("trusted.test", cert("client")));
    out.push(("trusted.test", cert("client-ca2")));
    out.push(("off.test", cert("client")));
    let mut tls12 = cert("client");
    tls12.push("-tls1_2".to_string());
    out.push(("crl2.test", tls12));
    out
}

/// The new lines of `path` since it had `before` bytes, once there is one.
fn new_line(path: &Path, before: usize) -> String {
    let deadline = Instant::now() + LOG_TIMEOUT;
    loop {
        let now = std::fs::read_to_string(path).unwrap_or_default();
        if let Some(line) = now.get(before..).and_then(|s| s.lines().next()) {
            return line.to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "nothing logged in {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What one `s_client` connection to `server` made: the status line, the
/// access log line (a session id said by its length: ids are random) and
/// the `info` lines about the certificate.
fn run(server: &Server, (name, args): &Case) -> String {
    let log = server.prefix().join("tls.log");
    let errors = server.prefix().join("info.log");
    let before = std::fs::read(&log).map_or(0, |b| b.len());
    let errors_before = std::fs::read(&errors).map_or(0, |b| b.len());
    let mut child = Command::new("timeout")
        .arg("20")
        .arg(OPENSSL)
        .args(["s_client", "-quiet", "-connect"])
        .arg(format!("127.0.0.1:{}", server.port()))
        .args(["-servername", name])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("openssl s_client runs");
    let mut stdin = child.stdin.take().expect("a pipe");
    stdin
        .write_all(format!("GET / HTTP/1.0\r\nHost: {name}\r\n\r\n").as_bytes())
        .expect("the request is written");
    drop(stdin);
    let out = child.wait_with_output().expect("s_client ends");
    let response = String::from_utf8_lossy(&out.stdout);
    let status = response
        .lines()
        .next()
        .unwrap_or("(no response)")
        .to_string();
    let mut line = new_line(&log, before);
    let fields: Vec<&str> = line.split('|').collect();
    if let Some(id) = fields.get(13).filter(|id| **id != "-") {
        let shown = format!("<{} hex digits>", id.len());
        line = line.replacen(&format!("|{id}|"), &format!("|{shown}|"), 1);
    }
    let info = std::fs::read_to_string(&errors).unwrap_or_default();
    let about: Vec<String> = info
        .get(errors_before..)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once("[info] ").map(|(_, m)| m))
        .filter_map(|m| m.split_once(": ").map(|(_, m)| m))
        .filter(|m| m.contains("SSL certificate"))
        .map(|m| m.split(", client:").next().unwrap_or(m).to_string())
        .collect();
    format!("{status}\n{line}\n{}", about.join("\n"))
}

#[test]
fn nginx_and_nowait_judge_and_print_client_certificates_alike() {
    require_or_skip!(Path::new(OPENSSL).exists(), "{OPENSSL} is not installed");
    require_or_skip!(
        Path::new(nginx_t::NGINX).exists(),
        "{} is not installed",
        nginx_t::NGINX
    );
    let dir = common::TempDir::new("tls-client-crls");
    let crls = both_crls(dir.path());
    let conf = Conf::http(&format!(
        "log_format t '{FORMAT}';
         error_log {{prefix}}/info.log info;
         {}",
        servers(&crls)
    ))
    .render();
    let nginx = Server::nginx(&conf);
    let ours = Server::nowait(&conf);
    let mut wrong = Vec::new();
    for case in cases() {
        let want = run(&nginx, &case);
        let got = run(&ours, &case);
        if want != got {
            // Only what differs: the status, the log's fields, the info.
            let split =
                |s: &str| -> Vec<String> { s.split(['\n', '|']).map(str::to_string).collect() };
            let (w, g) = (split(&want), split(&got));
            let differ: Vec<String> = (0..w.len().max(g.len()))
                .filter(|&i| w.get(i) != g.get(i))
                .map(|i| format!("#{i}: nginx {:?}, nowait {:?}", w.get(i), g.get(i)))
                .collect();
            wrong.push(format!(
                "{} {:?}:\n  {}",
                case.0,
                case.1
                    .iter()
                    .map(|a| a.rsplit('/').next().unwrap_or(a))
                    .collect::<Vec<_>>(),
                differ.join("\n  ")
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// The CA names a server sends in its CertificateRequest, as
/// `openssl s_client` lists them, for a handshake naming `sni`.
fn ca_names(server: &Server, sni: &str) -> Vec<String> {
    let out = Command::new("timeout")
        .arg("20")
        .arg(OPENSSL)
        .args(["s_client", "-connect"])
        .arg(format!("127.0.0.1:{}", server.port()))
        .args(["-servername", sni])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output()
        .expect("openssl s_client runs");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .skip_while(|l| !l.starts_with("Acceptable client certificate CA names"))
        .skip(1)
        .take_while(|l| !l.starts_with("Client Certificate Types") && !l.starts_with("Requested"))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_certificate_request_names_the_client_certificate_cas_only() {
    require_or_skip!(Path::new(OPENSSL).exists(), "{OPENSSL} is not installed");
    require_or_skip!(
        Path::new(nginx_t::NGINX).exists(),
        "{} is not installed",
        nginx_t::NGINX
    );
    let dir = common::TempDir::new("tls-client-names");
    let conf = Conf::http(&format!(
        "log_format t '{FORMAT}'; {}",
        servers(&both_crls(dir.path()))
    ))
    .render();
    let nginx = Server::nginx(&conf);
    let ours = Server::nowait(&conf);
    for sni in ["optional.test", "trusted.test", "noca.test"] {
        let want = ca_names(&nginx, sni);
        assert!(!want.is_empty(), "{sni}: nginx names no CA");
        assert_eq!(ca_names(&ours, sni), want, "{sni}");
    }
}

#[test]
fn verification_errors_are_said_in_nginx_words() {
    require_or_skip!(
        Path::new(nginx_t::NGINX).exists(),
        "{} is not installed",
        nginx_t::NGINX
    );
    let tls = format!(
        "listen 127.0.0.1:18443 ssl; ssl_certificate {}; ssl_certificate_key {};",
        fixture("localhost-rsa.crt"),
        fixture("localhost-rsa.key")
    );
    let s = |body: &str| format!("server {{ {tls} {body} }}");
    let ca = fixture("ca.crt");
    let key = fixture("client.key");
    let missing_ca = "SSL_CTX_load_verify_locations(\"/nonexistent.crt\") failed (SSL: error:80000002:system library::No such file or directory:calling fopen(/nonexistent.crt, r) error:10000080:BIO routines::no such file error:05880002:x509 certificate routines::system lib)";
    let not_ca = Box::leak(
        format!("SSL_CTX_load_verify_locations(\"{key}\") failed (SSL: error:05800088:x509 certificate routines::no certificate or crl found)")
            .into_boxed_str(),
    );
    let not_crl = Box::leak(
        format!("X509_LOOKUP_load_file(\"{key}\") failed (SSL: error:05800088:x509 certificate routines::no certificate or crl found)")
            .into_boxed_str(),
    );
    check_bad(vec![
        (
            "verify without CAs",
            s("ssl_verify_client on;"),
            "no ssl_client_certificate for ssl_verify_client",
            None,
        ),
        (
            "optional without CAs",
            s("ssl_verify_client optional;"),
            "no ssl_client_certificate for ssl_verify_client",
            None,
        ),
        (
            "trusted CAs are not named CAs",
            s(&format!(
                "ssl_verify_client on; ssl_trusted_certificate {ca};"
            )),
            "no ssl_client_certificate for ssl_verify_client",
            None,
        ),
        (
            "a missing CA file",
            s("ssl_verify_client on; ssl_client_certificate /nonexistent.crt;"),
            missing_ca,
            None,
        ),
        (
            "a missing trusted file, verification off",
            s("ssl_trusted_certificate /nonexistent.crt;"),
            missing_ca,
            None,
        ),
        (
            "a key as CA file",
            s(&format!(
                "ssl_verify_client on; ssl_client_certificate {key};"
            )),
            not_ca,
            None,
        ),
        (
            "a key as CRL file",
            s(&format!(
                "ssl_verify_client on; ssl_client_certificate {ca}; ssl_crl {key};"
            )),
            not_crl,
            None,
        ),
        (
            "a negative depth",
            s("ssl_verify_depth -1;"),
            "\"ssl_verify_depth\" directive invalid number",
            Some(3),
        ),
    ]);
}

/// A nowait server on `{port}` verifying client certificates as
/// `verify` says, with `extra` in its server block.
fn verifying(verify: &str, extra: &str) -> Server {
    let conf = Conf::http(&format!(
        "server {{ listen 127.0.0.1:{{port}} ssl; server_name localhost;
            ssl_certificate {}; ssl_certificate_key {};
            ssl_verify_client {verify}; ssl_client_certificate {}; ssl_protocols TLSv1.2 TLSv1.3;
            location / {{ return 200 \"$ssl_client_verify $ssl_client_s_dn\"; }}
            {extra} }}",
        fixture("localhost-rsa.crt"),
        fixture("localhost-rsa.key"),
        fixture("ca.crt"),
    ))
    .render();
    Server::nowait(&conf)
}

/// Client options presenting `name`'s certificate.
fn presenting(name: &str) -> Options {
    Options {
        client_cert: Some((
            fixture(&format!("{name}.crt")),
            fixture(&format!("{name}.key")),
        )),
        ..Options::default()
    }
}

#[test]
fn refusals_go_through_error_page_and_close_the_connection() {
    let s = verifying(
        "on",
        "error_page 495 496 = /refused; location = /refused { return 403 \"refused $ssl_client_verify\"; }",
    );
    let r = tls::get(s.port(), "localhost", "/");
    assert_eq!(r.status, 403);
    assert_eq!(common::body(&r), "refused NONE");
    let config = tls::client(&presenting("client-self"));
    let mut c = tls::connect(s.port(), "localhost", &config).expect("the handshake");
    let r = tls::get_on(&mut c, "localhost", "/");
    assert_eq!(r.status, 403);
    assert_eq!(common::body(&r), "refused FAILED:self-signed certificate");
    assert_eq!(r.header("connection").as_deref(), Some("close"));
    let config = tls::client(&presenting("client"));
    let mut c = tls::connect(s.port(), "localhost", &config).expect("the handshake");
    for _ in 0..2 {
        let r = tls::get_keepalive(&mut c, "localhost", "/");
        assert_eq!(r.status, 200);
        assert_eq!(
            common::body(&r),
            "SUCCESS CN=client one,O=nowait tests,C=XX"
        );
    }
}

#[test]
fn without_error_page_the_refusals_are_nginx_s_400_pages() {
    let s = verifying("on", "");
    let r = tls::get(s.port(), "localhost", "/");
    assert_eq!(r.status, 400);
    assert!(
        common::body(&r).contains("<center>No required SSL certificate was sent</center>"),
        "{}",
        common::body(&r)
    );
    let config = tls::client(&presenting("client-expired"));
    let mut c = tls::connect(s.port(), "localhost", &config).expect("the handshake");
    let r = tls::get_on(&mut c, "localhost", "/");
    assert_eq!(r.status, 400);
    assert!(
        common::body(&r).contains("<center>The SSL certificate error</center>"),
        "{}",
        common::body(&r)
    );
}

#[test]
fn a_resumed_session_keeps_its_certificate_and_verdict() {
    let s = verifying(
        "optional",
        "ssl_session_cache shared:c:1m; ssl_session_tickets off; location = /id { return 200 \"$ssl_session_reused $ssl_session_id $ssl_client_verify\"; }",
    );
    for (versions, same_id) in [
        (vec![&rustls::version::TLS12], true),
        (vec![&rustls::version::TLS13], false),
    ] {
        let opts = Options {
            versions,
            resume: true,
            tickets: false,
            ..presenting("client")
        };
        let config = tls::client(&opts);
        let mut first = tls::connect(s.port(), "localhost", &config).expect("the handshake");
        let a = common::body(&tls::get_on(&mut first, "localhost", "/id"));
        let mut again = tls::connect(s.port(), "localhost", &config).expect("the handshake");
        let b = common::body(&tls::get_on(&mut again, "localhost", "/id"));
        let (fa, fb): (Vec<&str>, Vec<&str>) = (a.split(' ').collect(), b.split(' ').collect());
        assert_eq!(fa[0], ".", "{a}");
        assert_eq!(fb[0], "r", "{b}");
        assert_eq!(fa[1].len(), 64, "{a}");
        assert!(
            fa[1]
                .bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
            "{a}"
        );
        // A TLS 1.2 session keeps its id; a TLS 1.3 one resumed from a
        // ticket is stored again under the next ticket's.
        assert_eq!(fa[1] == fb[1], same_id, "{a} / {b}");
        assert_eq!(fa[2], "SUCCESS", "{a}");
        assert_eq!(fb[2], "SUCCESS", "{b}");
    }
}

/// nginx's `ngx_http_set_virtual_server`: a Host other than the server
/// name the handshake chose a server by, for a server that verifies
/// client certificates, is 421, answered by the handshake's server and
/// closing; a Host naming a server that verifies nothing, or a handshake
/// whose name chose no server, goes on as usual.
#[test]
fn a_host_other_than_the_sni_of_a_verifying_server_is_misdirected() {
    let block = |name: &str, cert: &str, verify: &str| {
        format!(
            "server {{ listen 127.0.0.1:{{port}} ssl; server_name {name};
                ssl_certificate {}; ssl_certificate_key {};
                ssl_verify_client {verify}; ssl_client_certificate {};
                location / {{ return 200 \"{name} $ssl_client_verify\"; }} }}\n",
            fixture(&format!("{cert}.crt")),
            fixture(&format!("{cert}.key")),
            fixture("ca.crt"),
        )
    };
    // example.com, the default server, has the certificate of
    // www.example.com, a name no server has.
    let conf = Conf::http(&format!(
        "{}{}{}",
        block("example.com", "example", "optional"),
        block("localhost", "localhost-rsa", "on"),
        block("other.test", "other", "off"),
    ))
    .render();
    let s = Server::nowait(&conf);
    let get = |sni: &str, host: &str| {
        let config = tls::client(&Options::default());
        let mut c = tls::connect(s.port(), sni, &config).expect("the handshake");
        tls::get_on(&mut c, host, "/")
    };
    let r = get("example.com", "localhost");
    assert_eq!(r.status, 421);
    assert_eq!(r.header("connection").as_deref(), Some("close"));
    assert_eq!(get("localhost", "example.com").status, 421);
    let r = get("example.com", "other.test");
    assert_eq!(
        (r.status, common::body(&r)),
        (200, "other.test NONE".into())
    );
    let r = get("example.com", "example.com");
    assert_eq!(
        (r.status, common::body(&r)),
        (200, "example.com NONE".into())
    );
    // A name no server has chose none: the Host's server judges.
    assert_eq!(get("www.example.com", "localhost").status, 400);
}
