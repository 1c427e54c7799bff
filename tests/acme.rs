//! Black-box tests of nginx's ACME module (`acme_issuer`,
//! `acme_certificate`, `$acme_certificate`) against a real ACME server:
//! Debian's `pebble`, started here on loopback with `pebble-challtestsrv`
//! as its DNS (every name is 127.0.0.1), HTTP-01 validated on the port
//! nowait serves plain HTTP on. Pebble's own HTTPS uses the localhost
//! fixture (trusted through `ssl_trusted_certificate`), and its issuing
//! root, fetched from its management port, verifies what nowait serves.
//!
//! Covered: the first certificate end to end (beside a server whose
//! certificate names have other variables), its state reused after a
//! restart (no new order), a short-lived certificate renewed, a challenge
//! pebble cannot reach (nginx-acme's words, nothing served, tried again
//! later), a reload while pebble is validating the order's challenge (held
//! by a relay until the reload is done), the certificate served from
//! memory once issued, and `$acme_certificate` in a server without
//! `acme_certificate` (no pebble needed).

mod common;

use std::io::Write;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
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
/// `state`, a TLS server for `NAME`, a plain server on `http_port`
/// (answering `/generation` with `generation`, to tell a reload done).
fn conf(p: &Pebble, state: &Path, http_port: u16) -> String {
    conf_with(p, state, http_port, "1", "")
}

/// [`conf`] with the plain server's `generation` and `extra` servers.
fn conf_with(p: &Pebble, state: &Path, http_port: u16, generation: &str, extra: &str) -> String {
    format!(
        "error_log {{prefix}}/error.log debug;
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
        location = /generation {{ return 200 \"{generation}\"; }}
        location / {{ return 404; }}
    }}
{extra}}}
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

/// The line of `log` that says `what`.
fn line_of<'a>(log: &'a str, what: &str) -> &'a str {
    log.lines()
        .find(|l| l.contains(what))
        .unwrap_or_else(|| panic!("no line with {what:?}: {log}"))
}

/// Waits until the issuer's thread has looked at the order and found it
/// not due (nginx-acme's debug line) in the log after the first line
/// that says `after`.
fn wait_not_due(s: &Server, after: &str) {
    const NOT_DUE: &str =
        "acme: certificate is not due for renewal, acme issuer: \"pebble\", order: \"acme.test-";
    let seen = wait::until(Duration::from_secs(30), || {
        let log = error_log(s);
        let Some(at) = log.find(after) else {
            return false;
        };
        log[at..]
            .lines()
            .any(|l| l.contains("[debug]") && l.contains(NOT_DUE))
    });
    assert!(seen, "the order was not looked at again: {}", error_log(s));
}

/// A relay from a port of its own to `to` that holds each connection
/// until [`Gate::open`]: pebble's validation of a challenge, made through
/// it, waits while the test does something else.
struct Gate {
    port: u16,
    /// Connections accepted so far.
    arrived: Arc<AtomicUsize>,
    open: Arc<(Mutex<bool>, Condvar)>,
}

impl Gate {
    fn new(to: u16) -> Gate {
        let listener = TcpListener::bind(("127.0.0.1", 0)).expect("the relay's port");
        let port = listener.local_addr().unwrap().port();
        let arrived = Arc::new(AtomicUsize::new(0));
        let open = Arc::new((Mutex::new(false), Condvar::new()));
        let (count, gate) = (arrived.clone(), open.clone());
        std::thread::spawn(move || {
            for c in listener.incoming() {
                let Ok(c) = c else { return };
                count.fetch_add(1, Ordering::SeqCst);
                let gate = gate.clone();
                std::thread::spawn(move || {
                    let (lock, cv) = &*gate;
                    let mut open = lock.lock().unwrap();
                    while !*open {
                        open = cv.wait(open).unwrap();
                    }
                    drop(open);
                    relay(c, to);
                });
            }
        });
        Gate {
            port,
            arrived,
            open,
        }
    }

    fn arrived(&self) -> usize {
        self.arrived.load(Ordering::SeqCst)
    }

    fn open(&self) {
        let (lock, cv) = &*self.open;
        *lock.lock().unwrap() = true;
        cv.notify_all();
    }
}

/// Copies `c` to a connection to `to` and back until either side ends.
fn relay(c: TcpStream, to: u16) {
    let Ok(up) = TcpStream::connect(("127.0.0.1", to)) else {
        return;
    };
    let (Ok(mut c_in), Ok(mut up_out)) = (c.try_clone(), up.try_clone()) else {
        return;
    };
    let there = std::thread::spawn(move || {
        let _ = std::io::copy(&mut c_in, &mut up_out);
        let _ = up_out.shutdown(Shutdown::Write);
    });
    let (mut up_in, mut c_out) = (up, c);
    let _ = std::io::copy(&mut up_in, &mut c_out);
    let _ = c_out.flush();
    let _ = c_out.shutdown(Shutdown::Both);
    let _ = there.join();
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
    // Beside the ACME server, one whose certificate names have other
    // variables: loaded per handshake from files, as without ACME.
    let certs = TempDir::new("acme-certs");
    for ext in ["crt", "key"] {
        std::fs::copy(
            fixture(&format!("other.{ext}")),
            certs.path().join(format!("other.test.{ext}")),
        )
        .unwrap();
    }
    let named = format!(
        "    server {{
        listen 127.0.0.1:{{port}} ssl;
        server_name other.test;
        ssl_certificate {0}/$ssl_server_name.crt;
        ssl_certificate_key {0}/$ssl_server_name.key;
        location / {{ return 200 \"named\\n\"; }}
        location = /status {{ nowait_status; }}
    }}
",
        certs.path().display()
    );
    let text = conf_with(&p, &state_dir, http_port, "1", &named);
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
        let issued = line_of(&log, "certificate issued, renewal scheduled at ");
        assert!(issued.contains("[info]"), "{issued}");
        assert!(
            issued.contains(", acme issuer: \"pebble\", order: \"acme.test-"),
            "{issued}"
        );
        let account = line_of(&log, "account \"https://localhost:");
        assert!(
            account.contains("[info]") && account.contains("\" created, acme issuer: \"pebble\""),
            "{account}"
        );
        // The other server's certificate, by its variable names.
        let mut o = tls::connect(
            s.port(),
            "other.test",
            &tls::client(&tls::Options::default()),
        )
        .expect("the certificate named with variables");
        assert!(
            tls::peer_names(&o).contains("other.test"),
            "{}",
            tls::peer_names(&o)
        );
        assert_eq!(
            common::body(&tls::get_on(&mut o, "other.test", "/")),
            "named\n"
        );
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
    // The held certificate is on the status page with its expiry (the
    // metrics are the process's: the other server's page shows it).
    let mut o = tls::connect(
        s.port(),
        "other.test",
        &tls::client(&tls::Options::default()),
    )
    .expect("the certificate named with variables");
    let page = common::body(&tls::get_on(&mut o, "other.test", "/status"));
    let held = format!(
        "nowait_tls_certificate_expiry_seconds{{server=\"{NAME}\",file=\"$acme_certificate\"}} "
    );
    assert!(
        page.lines().any(|l| l.starts_with(&held)),
        "{held} not on the page:\n{page}"
    );
    // The issuer's thread looks at the order and finds it not due: no new
    // order.
    wait_not_due(&s, "");
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
    // pebble validates through the gate: the order is under way, its
    // token registered and pebble waiting for the answer, until it opens.
    let gate = Gate::new(http_port);
    let p = Pebble::start(gate.port, 0, &[]);
    let state = TempDir::new("acme-state");
    let state_dir = state.path().join("pebble");
    let s = nowait(&conf(&p, &state_dir, http_port));
    let validating = wait::until(Duration::from_secs(60), || gate.arrived() >= 1);
    assert!(
        validating,
        "pebble did not validate: {}\n{}",
        error_log(&s),
        p.log()
    );
    assert_eq!(p.orders(), 1, "{}", p.log());
    assert!(
        !error_log(&s).contains("certificate issued"),
        "{}",
        error_log(&s)
    );
    // The reload, while the order waits on pebble.
    s.write_conf(&conf_with(&p, &state_dir, http_port, "2", ""));
    s.signal("HUP");
    let reloaded = wait::until(Duration::from_secs(20), || {
        common::body(&common::client::get(http_port, "/generation")) == "2"
    });
    assert!(
        reloaded,
        "the reload did not take effect: {}",
        error_log(&s)
    );
    assert!(
        !error_log(&s).contains("certificate issued"),
        "{}",
        error_log(&s)
    );
    gate.open();
    // The new generation serves what the order issued.
    let config = client_for(&p.root());
    let leaf = served_leaf(s.port(), &config, Duration::from_secs(60));
    let leaf = leaf.unwrap_or_else(|| panic!("nothing served after the reload: {}", error_log(&s)));
    let log = error_log(&s);
    assert_eq!(log.matches("certificate issued").count(), 1, "{log}");
    assert!(
        !log.contains("[alert]") && !log.contains("[emerg]"),
        "{log}"
    );
    // The issuer's thread takes the new configuration once the order is
    // done and finds the certificate not due: no second order. (Its
    // "certificate issued" line may follow that check: it is written
    // once the order's state is stored, and the check reads that state.)
    wait_not_due(&s, "reconfiguring");
    assert_eq!(
        p.orders(),
        1,
        "the reload started a second order: {}",
        error_log(&s)
    );
    // The certificate is served from memory: the state directory's copy
    // gone, handshakes still get it.
    for e in std::fs::read_dir(&state_dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "crt" || x == "key") {
            std::fs::write(&path, b"not a certificate").unwrap();
        }
    }
    let again = served_leaf(s.port(), &config, Duration::from_secs(10));
    assert_eq!(again.as_deref(), Some(&leaf[..]), "{}", error_log(&s));
}

#[test]
fn acme_certificate_variables_in_a_server_without_acme_certificate_fail_its_handshakes() {
    // nginx-acme: the variables are not found there, so the certificate
    // cannot be loaded at the handshake; the configuration is accepted.
    let s = nowait(
        "error_log {prefix}/error.log info;
events {}
http {
    access_log off;
    server {
        listen 127.0.0.1:{port} ssl;
        server_name localhost;
        ssl_certificate $acme_certificate;
        ssl_certificate_key $acme_certificate_key;
        location / { return 200; }
    }
}
",
    );
    assert!(
        tls::connect(
            s.port(),
            "localhost",
            &tls::client(&tls::Options::default())
        )
        .is_err(),
        "a handshake succeeded"
    );
    let said = wait::until(Duration::from_secs(10), || {
        error_log(&s).contains("cert cb error")
    });
    let log = error_log(&s);
    assert!(said, "{log}");
    // The empty name is the prefix, a directory, as nginx reads it.
    let line = line_of(&log, "cannot load certificate");
    assert!(line.contains("[error]"), "{line}");
    let prefix = format!("cannot load certificate \"{}/\": ", s.prefix().display());
    assert!(line.contains(&prefix), "{line}");
    assert!(line.contains("PEM_read_bio_X509_AUX() failed"), "{line}");
}
