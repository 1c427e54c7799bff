//! OCSP for client certificates (`ssl_ocsp`, `ssl_ocsp_responder`,
//! `ssl_ocsp_cache`) against a real responder, `openssl ocsp`, whose
//! database each test writes for the fixture client.crt; the same setups
//! run by nginx 1.22, whose behaviour is the reference: what
//! `$ssl_client_verify` says and whether the request is refused (495,
//! nginx's 400 page). The configuration errors are `nginx -t`'s.
//!
//! Without `openssl` or nginx the tests say SKIPPED, and fail under
//! `NOWAIT_REQUIRE_ALL=1`.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::nginx_t::check_bad;
use common::server::{Kind, NGINX_BIN, free_port};
use common::tls::{self, Options, fixture};
use common::wait::{read_text, until};
use common::{Conf, Server, TempDir, require_or_skip};

/// Debian's OpenSSL command line: the responder.
const OPENSSL: &str = "/usr/bin/openssl";
/// How long a responder on loopback may take to start.
const WAIT: Duration = Duration::from_secs(20);
/// What `openssl ocsp` prints once it accepts requests.
const RESPONDER_READY: &str = "waiting for OCSP client connections";

/// Whether the tools these tests run are here.
macro_rules! require_tools {
    () => {
        require_or_skip!(Path::new(OPENSSL).exists(), "{OPENSSL} is not installed");
        require_or_skip!(
            Path::new(NGINX_BIN).exists(),
            "{NGINX_BIN} is not installed"
        );
    };
}

/// A running `openssl ocsp` signing with the CA; killed on drop.
struct Responder {
    child: Child,
    port: u16,
    _dir: TempDir,
}

impl Responder {
    /// Answers about client.crt: good (`V`), revoked (`R`), or unknown
    /// (no line).
    fn start(status: Option<char>) -> Responder {
        let dir = TempDir::new("ocsp");
        let serial = Command::new(OPENSSL)
            .args(["x509", "-noout", "-serial", "-in", &fixture("client.crt")])
            .output()
            .expect("openssl runs");
        let serial = String::from_utf8_lossy(&serial.stdout)
            .trim()
            .trim_start_matches("serial=")
            .to_string();
        let line = match status {
            Some('R') => format!("R\t491231235959Z\t200101000000Z\t{serial}\tunknown\t/CN=x\n"),
            Some(c) => format!("{c}\t491231235959Z\t\t{serial}\tunknown\t/CN=x\n"),
            None => String::new(),
        };
        let index = dir.path().join("index.txt");
        std::fs::write(&index, line).expect("the index");
        for _ in 0..4 {
            let port = free_port();
            let out_path = dir.path().join(format!("out-{port}.log"));
            let out = std::fs::File::create(&out_path).expect("the responder's log");
            let child = Command::new(OPENSSL)
                .args(["ocsp", "-index"])
                .arg(&index)
                .args(["-port", &port.to_string()])
                .args(["-rsigner", &fixture("ca.crt"), "-rkey", &fixture("ca.key")])
                .args(["-CA", &fixture("ca.crt"), "-nmin", "10"])
                .stdin(Stdio::null())
                .stdout(out.try_clone().expect("dup"))
                .stderr(out)
                .spawn()
                .expect("openssl runs");
            let mut r = Responder {
                child,
                port,
                _dir: TempDir::new("ocsp-unused"),
            };
            let ready = until(WAIT, || {
                read_text(&out_path).contains(RESPONDER_READY)
                    || r.child.try_wait().ok().flatten().is_some()
            });
            if ready && read_text(&out_path).contains(RESPONDER_READY) {
                r._dir = dir;
                return r;
            }
        }
        panic!("openssl ocsp does not start");
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server verifying client certificates with `ocsp` set.
fn conf(ocsp: &str) -> String {
    Conf::http(&format!(
        "server {{
            listen 127.0.0.1:{{port}} ssl;
            server_name localhost;
            ssl_certificate {};
            ssl_certificate_key {};
            ssl_verify_client on;
            ssl_client_certificate {};
            {ocsp}
            add_header X-Verify $ssl_client_verify always;
            location / {{ return 200 \"ok\"; }}
        }}",
        fixture("localhost-rsa.crt"),
        fixture("localhost-rsa.key"),
        fixture("ca.crt"),
    ))
    .render()
}

/// The status and `X-Verify` of a request with client.crt.
fn ask(s: &Server) -> (u16, String) {
    let config = tls::client(&Options {
        client_cert: Some((fixture("client.crt"), fixture("client.key"))),
        ..Options::default()
    });
    let mut c = tls::connect(s.port(), "localhost", &config).expect("the handshake");
    let r = tls::get_on(&mut c, "localhost", "/");
    (
        r.status,
        r.header("x-verify").unwrap_or_default().to_string(),
    )
}

/// What nginx and nowait answer under `ocsp`, both.
fn both(ocsp: &str) -> Vec<(u16, String)> {
    [Kind::Nginx, Kind::Nowait]
        .into_iter()
        .map(|kind| ask(&Server::start(kind, &conf(ocsp))))
        .collect()
}

#[test]
fn a_good_status_lets_the_request_through() {
    require_tools!();
    let r = Responder::start(Some('V'));
    let got = both(&format!("ssl_ocsp on; ssl_ocsp_responder {};", r.url()));
    assert_eq!(got, vec![(200, "SUCCESS".to_string()); 2]);
}

#[test]
fn a_revoked_or_unknown_certificate_is_refused_as_nginx_refuses_it() {
    require_tools!();
    let revoked = Responder::start(Some('R'));
    let got = both(&format!(
        "ssl_ocsp leaf; ssl_ocsp_responder {};",
        revoked.url()
    ));
    assert_eq!(
        got,
        vec![(400, "FAILED:certificate revoked".to_string()); 2]
    );
    let unknown = Responder::start(None);
    let got = both(&format!(
        "ssl_ocsp on; ssl_ocsp_responder {};",
        unknown.url()
    ));
    assert_eq!(
        got,
        vec![(400, "FAILED:certificate status unknown".to_string()); 2]
    );
}

#[test]
fn no_responder_and_no_url_fail_the_status_request() {
    require_tools!();
    // Nothing listens there.
    let gone = format!(
        "ssl_ocsp on; ssl_ocsp_responder http://127.0.0.1:{};",
        free_port()
    );
    let failed = (400, "FAILED:certificate status request failed".to_string());
    assert_eq!(both(&gone), vec![failed.clone(); 2]);
    // client.crt names no responder.
    assert_eq!(both("ssl_ocsp on;"), vec![failed; 2]);
}

#[test]
fn a_cached_status_outlives_its_responder() {
    require_tools!();
    for kind in [Kind::Nginx, Kind::Nowait] {
        let r = Responder::start(Some('V'));
        let ocsp = format!(
            "ssl_ocsp on; ssl_ocsp_responder {}; ssl_ocsp_cache shared:OCSP:1m;",
            r.url()
        );
        let s = Server::start(kind, &conf(&ocsp));
        assert_eq!(ask(&s), (200, "SUCCESS".to_string()), "{kind:?}");
        // The responder is gone; the kept status answers.
        drop(r);
        assert_eq!(ask(&s), (200, "SUCCESS".to_string()), "{kind:?} cached");
    }
}

#[test]
fn the_directives_are_checked_as_nginx_checks_them() {
    require_tools!();
    let s = |body: &str| {
        format!(
            "server {{ listen 127.0.0.1:18443 ssl; ssl_certificate {}; ssl_certificate_key {}; \
             ssl_client_certificate {}; {body} }}",
            fixture("localhost-rsa.crt"),
            fixture("localhost-rsa.key"),
            fixture("ca.crt"),
        )
    };
    check_bad(vec![
        (
            "ssl_ocsp's values",
            s("ssl_ocsp maybe;"),
            "invalid value \"maybe\"",
            Some(3),
        ),
        (
            "a small cache",
            s("ssl_ocsp_cache shared:OCSP:1k;"),
            "OCSP cache \"shared:OCSP:1k\" is too small",
            Some(3),
        ),
        (
            "a cache not shared",
            s("ssl_ocsp_cache OCSP:1m;"),
            "invalid OCSP cache \"OCSP:1m\"",
            Some(3),
        ),
        (
            "two caches",
            s("ssl_ocsp_cache off; ssl_ocsp_cache off;"),
            "\"ssl_ocsp_cache\" directive is duplicate",
            Some(3),
        ),
        (
            "optional_no_ca",
            s("ssl_verify_client optional_no_ca; ssl_ocsp on;"),
            "\"ssl_ocsp\" is incompatible with \"ssl_verify_client optional_no_ca\"",
            None,
        ),
        (
            "a responder not http",
            s("ssl_verify_client on; ssl_ocsp on; ssl_ocsp_responder https://127.0.0.1;"),
            "invalid URL prefix in OCSP responder \"https://127.0.0.1\" in \"ssl_ocsp_responder\"",
            None,
        ),
    ]);
}
