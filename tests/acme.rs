//! Black-box tests of nginx's ACME module (`acme_issuer`,
//! `acme_certificate`, `$acme_certificate`) against a real ACME server:
//! Debian's `pebble`, started here on loopback with `pebble-challtestsrv`
//! as its DNS (every name is 127.0.0.1), HTTP-01 validated on the port
//! nowait serves plain HTTP on. Pebble's own HTTPS uses the localhost
//! fixture (trusted through `ssl_trusted_certificate`), and its issuing
//! root, fetched from its management port, verifies what nowait serves.
//!
//! Covered: the first certificate end to end, its state reused after a
//! restart (no new order), a short-lived certificate renewed, a challenge
//! pebble cannot reach (nginx-acme's words, nothing served, tried again
//! later), a reload while an order is under way.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::server::free_port;
use common::tls::{self, fixture};
use common::{Server, TempDir, wait};

const PEBBLE: &str = "/usr/bin/pebble";
const CHALLTESTSRV: &str = "/usr/bin/pebble-challtestsrv";
/// The name the certificates are for (pebble's DNS answers 127.0.0.1).
const NAME: &str = "acme.test";

/// pebble and its DNS, ended when dropped.
struct Pebble {
    children: Vec<Child>,
    dir: TempDir,
    /// The ACME directory's port.
    port: u16,
    /// The management port (`/roots/0`).
    management: u16,
}

impl Drop for Pebble {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Pebble {
    /// Starts pebble validating HTTP-01 on `http_port`, issuing
    /// certificates valid `validity` seconds (0: pebble's default), with
    /// `env` added (`PEBBLE_VA_*`).
    fn start(http_port: u16, validity: u64, env: &[(&str, &str)]) -> Pebble {
        let dir = TempDir::new("pebble");
        let (port, management, dns, tls_port, dns_mgmt) = (
            free_port(),
            free_port(),
            free_port(),
            free_port(),
            free_port(),
        );
        let mut config = serde_json::json!({"pebble": {
            "listenAddress": format!("127.0.0.1:{port}"),
            "managementListenAddress": format!("127.0.0.1:{management}"),
            "certificate": fixture("localhost-rsa.crt"),
            "privateKey": fixture("localhost-rsa.key"),
            "httpPort": http_port,
            "tlsPort": tls_port,
            "ocspResponderURL": "",
            "externalAccountBindingRequired": false,
        }});
        if validity > 0 {
            config["pebble"]["certificateValidityPeriod"] = validity.into();
        }
        let conf = dir.path().join("pebble.json");
        std::fs::write(&conf, config.to_string()).unwrap();
        let log = |name: &str| std::fs::File::create(dir.path().join(name)).unwrap();
        let dns_child = Command::new(CHALLTESTSRV)
            .args(["-dns01", &format!("127.0.0.1:{dns}")])
            .args(["-http01", "", "-https01", "", "-tlsalpn01", ""])
            .args(["-management", &format!("127.0.0.1:{dns_mgmt}")])
            .args(["-defaultIPv4", "127.0.0.1", "-defaultIPv6", ""])
            .stdin(Stdio::null())
            .stdout(log("dns.log"))
            .stderr(log("dns.err"))
            .spawn()
            .expect("pebble-challtestsrv");
        let out = log("pebble.log");
        let pebble = Command::new(PEBBLE)
            .arg("-config")
            .arg(&conf)
            .args(["-dnsserver", &format!("127.0.0.1:{dns}")])
            .env("PEBBLE_VA_NOSLEEP", "1")
            .env("PEBBLE_WFE_NONCEREJECT", "0")
            .env("PEBBLE_AUTHZREUSE", "0")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("pebble");
        let p = Pebble {
            children: vec![dns_child, pebble],
            dir,
            port,
            management,
        };
        let up = wait::until(Duration::from_secs(20), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
                && std::net::TcpStream::connect(("127.0.0.1", management)).is_ok()
        });
        assert!(up, "pebble did not start: {}", p.log());
        p
    }

    fn log(&self) -> String {
        wait::read_text(&self.dir.path().join("pebble.log"))
    }

    /// How many orders pebble was asked for.
    fn orders(&self) -> usize {
        self.log().matches("POST /order-plz").count()
    }

    /// The root pebble issues under (PEM).
    fn root(&self) -> Vec<u8> {
        let config = tls::client(&tls::Options::default());
        let mut s =
            tls::connect(self.management, "localhost", &config).expect("pebble's management");
        let r = tls::get_on(&mut s, "localhost", "/roots/0");
        assert_eq!(r.status, 200, "roots/0");
        r.body
    }
}

/// nowait's configuration: an issuer for pebble with its state under
/// `state`, a TLS server for `NAME`, a plain server on `http_port`.
fn conf(p: &Pebble, state: &Path, http_port: u16) -> String {
    format!(
        "error_log {{prefix}}/error.log info;
events {{}}
http {{
    access_log off;
    acme_issuer pebble {{
        uri https://localhost:{}/dir;
        contact admin@example.test;
        state_path {};
        ssl_trusted_certificate {};
        accept_terms_of_service;
    }}
    acme_shared_zone zone=ngx_acme_shared:1M;
    server {{
        listen 127.0.0.1:{{port}} ssl;
        server_name {NAME};
        acme_certificate pebble;
        ssl_certificate $acme_certificate;
        ssl_certificate_key $acme_certificate_key;
        location / {{ return 200 \"served\\n\"; }}
    }}
    server {{
        listen 127.0.0.1:{http_port};
        location / {{ return 404; }}
    }}
}}
",
        p.port,
        state.display(),
        fixture("ca.crt"),
    )
}

/// nowait with `text`, its prefix holding `logs/`.
fn nowait(text: &str) -> Server {
    Server::start_with_dirs(common::server::Kind::Nowait, text, &["logs"])
}

fn error_log(s: &Server) -> String {
    wait::read_text(&s.prefix().join("error.log"))
}

/// A client trusting only `root`.
fn client_for(root: &[u8]) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(root) {
        roots.add(c.expect("pebble's root")).expect("a root");
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    // Full handshakes only: a resumed session shows the certificate it
    // was made with, not the one served now.
    config.resumption = rustls::client::Resumption::disabled();
    Arc::new(config)
}

/// The leaf nowait serves for `NAME`, verified against `config`, once a
/// handshake succeeds (within `limit`).
fn served_leaf(port: u16, config: &Arc<rustls::ClientConfig>, limit: Duration) -> Option<Vec<u8>> {
    let mut leaf = None;
    wait::until(limit, || match tls::connect(port, NAME, config) {
        Ok(mut s) => {
            leaf = s
                .conn
                .peer_certificates()
                .and_then(|c| c.first())
                .map(|c| c.to_vec());
            let r = tls::get_on(&mut s, NAME, "/");
            assert_eq!(r.status, 200);
            true
        }
        Err(_) => false,
    });
    leaf
}

fn have_pebble() -> bool {
    Path::new(PEBBLE).exists() && Path::new(CHALLTESTSRV).exists()
}

#[test]
fn a_certificate_is_issued_served_and_reused_after_a_restart() {
    common::require_or_skip!(
        have_pebble(),
        "pebble is not installed (scripts/install-test-deps.sh)"
    );
    let http_port = free_port();
    let p = Pebble::start(http_port, 0, &[]);
    let state = TempDir::new("acme-state");
    let state_dir = state.path().join("pebble");
    let text = conf(&p, &state_dir, http_port);
    let config = client_for(&p.root());
    let first = {
        let s = nowait(&text);
        let leaf = served_leaf(s.port(), &config, Duration::from_secs(60));
        let log = error_log(&s);
        let leaf = leaf.unwrap_or_else(|| panic!("no certificate served: {log}\n{}", p.log()));
        assert!(
            leaf.windows(NAME.len()).any(|w| w == NAME.as_bytes()),
            "the leaf names {NAME}"
        );
        assert!(
            log.contains("[info]") && log.contains("certificate issued, renewal scheduled at "),
            "{log}"
        );
        assert!(
            log.contains("acme issuer: \"pebble\", order: \"acme.test-"),
            "{log}"
        );
        assert!(log.contains("account \"https://localhost:"), "{log}");
        leaf
    };
    let names: Vec<String> = std::fs::read_dir(&state_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for want in ["account.key", "account.url"] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("acme.test-") && n.ends_with(".crt")),
        "{names:?}"
    );
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("acme.test-") && n.ends_with(".key")),
        "{names:?}"
    );
    let orders = p.orders();
    assert_eq!(orders, 1, "{}", p.log());

    // A restart reads the state: the same certificate at the first
    // handshake, and no new order.
    let s = nowait(&text);
    let config2 = client_for(&p.root());
    let mut c =
        tls::connect(s.port(), NAME, &config2).expect("the stored certificate is served at once");
    let leaf = c
        .conn
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.to_vec());
    assert_eq!(leaf.as_deref(), Some(&first[..]));
    assert_eq!(tls::get_on(&mut c, NAME, "/").status, 200);
    // The issuer's thread has looked at its order once the account is
    // known or the order is judged not due: nothing more to wait for than
    // a moment; a new order would show in pebble's log.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        p.orders(),
        1,
        "a new order after the restart: {}",
        error_log(&s)
    );
    assert!(
        !error_log(&s).contains("certificate issued"),
        "{}",
        error_log(&s)
    );
}

#[test]
fn a_short_lived_certificate_is_renewed() {
    common::require_or_skip!(
        have_pebble(),
        "pebble is not installed (scripts/install-test-deps.sh)"
    );
    let http_port = free_port();
    // Valid 40 s: renewed at half its life, the issuer's thread waking no
    // sooner than 30 s after the first issue.
    let p = Pebble::start(http_port, 40, &[]);
    let state = TempDir::new("acme-state");
    let s = nowait(&conf(&p, &state.path().join("pebble"), http_port));
    let config = client_for(&p.root());
    let first = served_leaf(s.port(), &config, Duration::from_secs(60))
        .unwrap_or_else(|| panic!("no certificate: {}", error_log(&s)));
    let mut renewed = None;
    wait::until(Duration::from_secs(90), || {
        let leaf = served_leaf(s.port(), &config, Duration::from_secs(5));
        if leaf.as_ref().is_some_and(|l| *l != first) {
            renewed = leaf;
            return true;
        }
        std::thread::sleep(Duration::from_secs(1));
        false
    });
    assert!(renewed.is_some(), "not renewed: {}", error_log(&s));
    assert_eq!(
        error_log(&s).matches("certificate issued").count(),
        2,
        "{}",
        error_log(&s)
    );
    assert_eq!(p.orders(), 2);
}

#[test]
fn a_challenge_pebble_cannot_reach_is_logged_served_nothing_and_tried_again() {
    common::require_or_skip!(
        have_pebble(),
        "pebble is not installed (scripts/install-test-deps.sh)"
    );
    let http_port = free_port();
    // pebble validates on a port nothing listens on.
    let p = Pebble::start(free_port(), 0, &[]);
    let state = TempDir::new("acme-state");
    let s = nowait(&conf(&p, &state.path().join("pebble"), http_port));
    let failed = |n: usize| {
        move |log: &str| {
            log.matches("urn:ietf:params:acme:error:connection: ")
                .count()
                >= n
        }
    };
    let first = failed(1);
    let logged = wait::until(Duration::from_secs(60), || first(&error_log(&s)));
    let log = error_log(&s);
    assert!(logged, "{log}");
    let line = log
        .lines()
        .find(|l| l.contains("urn:ietf:params:acme:error:connection: "))
        .unwrap();
    assert!(line.contains("[warn]"), "{line}");
    assert!(
        line.contains(" while updating certificate, acme issuer: \"pebble\", order: \"acme.test-"),
        "{line}"
    );
    // Nothing is served for the name: the handshake fails.
    let config = client_for(&p.root());
    assert!(tls::connect(s.port(), NAME, &config).is_err());
    // The line is written once the alert is sent.
    let said = wait::until(Duration::from_secs(10), || {
        error_log(&s).contains("cert cb error")
    });
    assert!(said, "{}", error_log(&s));
    // Tried again a minute later (±2%), as nginx-acme's first retry.
    let second = failed(2);
    let again = wait::until(Duration::from_secs(100), || second(&error_log(&s)));
    assert!(again, "not tried again: {}", error_log(&s));
    assert_eq!(p.orders(), 2);
}

#[test]
fn a_reload_during_an_order_serves_what_the_order_issues() {
    common::require_or_skip!(
        have_pebble(),
        "pebble is not installed (scripts/install-test-deps.sh)"
    );
    let http_port = free_port();
    // pebble sleeps before validating: the order is under way for a while.
    let p = Pebble::start(
        http_port,
        0,
        &[("PEBBLE_VA_NOSLEEP", "0"), ("PEBBLE_VA_SLEEPTIME", "3")],
    );
    let state = TempDir::new("acme-state");
    let s = nowait(&conf(&p, &state.path().join("pebble"), http_port));
    let ordered = wait::until(Duration::from_secs(30), || p.orders() >= 1);
    assert!(ordered, "{}", p.log());
    s.signal("HUP");
    let config = client_for(&p.root());
    let leaf = served_leaf(s.port(), &config, Duration::from_secs(60));
    assert!(
        leaf.is_some(),
        "nothing served after the reload: {}",
        error_log(&s)
    );
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        p.orders(),
        1,
        "the reload started a second order: {}",
        error_log(&s)
    );
    assert_eq!(
        error_log(&s).matches("certificate issued").count(),
        1,
        "{}",
        error_log(&s)
    );
}
