//! OCSP stapling (`ssl_stapling`, `ssl_stapling_file`,
//! `ssl_stapling_responder`, `ssl_stapling_verify`,
//! `ssl_trusted_certificate`) against a real responder, `openssl ocsp`,
//! that each test starts with the fixtures of tests/tls/make-ocsp.sh; the
//! same setups run by nginx 1.22, whose behaviour is the reference: what a
//! client gets stapled (a rustls client, which asks for the status in
//! every hello), from which handshake on, and what is logged when nothing
//! is. The `-t` messages are compared with `nginx -t`'s.
//!
//! Without `openssl` or nginx the tests say SKIPPED, and fail under
//! `NOWAIT_REQUIRE_ALL=1`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::nginx_t::{self, messages};
use common::server::{Kind, NGINX_BIN, free_port};
use common::tls::{fixture, get_on, handshake_staple};
use common::wait::{read_text, until};
use common::{Conf, Server, TempDir, require_or_skip};
use rustls::version::{TLS12, TLS13};

/// Debian's OpenSSL command line: the responder, and the reader of what
/// is stapled.
const OPENSSL: &str = "/usr/bin/openssl";
/// How long a responder on loopback may take to start, or a fetch to
/// land (they take milliseconds).
const WAIT: Duration = Duration::from_secs(20);
/// The responder's port in ocsp-leaf.crt's Authority Information Access
/// (`http://127.84.7.3:19347/`): below the ephemeral range, and no other
/// test listens on it.
const AIA_PORT: u16 = 19347;
/// What `openssl ocsp` prints once it accepts requests.
const RESPONDER_READY: &str = "waiting for OCSP client connections";
/// What a fetch's log lines end with (`ngx_ssl_ocsp_log_error`).
const FETCHING: &str = "while requesting certificate status";

/// A running `openssl ocsp`; killed on drop. It must not be connected to
/// without a request: OpenSSL 3.0's responder then spins.
struct Responder {
    child: Child,
    port: u16,
    dir: TempDir,
}

impl Responder {
    /// Answers from the database `index`, signed by the fixture `signer`
    /// (its `.crt` and `.key`), with a nextUpdate ten minutes on, on a
    /// free port.
    fn start(index: &str, signer: &str) -> Responder {
        let mut last = String::new();
        for _ in 0..4 {
            match Responder::start_on(free_port(), index, signer) {
                Ok(r) => return r,
                Err(e) => last = e,
            }
        }
        panic!("openssl ocsp does not start: {last}");
    }

    /// [`Responder::start`] on `port`.
    fn start_on(port: u16, index: &str, signer: &str) -> Result<Responder, String> {
        let dir = TempDir::new("ocsp");
        let out_path = dir.path().join("out.log");
        let out = std::fs::File::create(&out_path).expect("the responder's log");
        let child = Command::new(OPENSSL)
            .args([
                "ocsp",
                "-index",
                &fixture(index),
                "-port",
                &port.to_string(),
            ])
            .args(["-rsigner", &fixture(&format!("{signer}.crt"))])
            .args(["-rkey", &fixture(&format!("{signer}.key"))])
            .args(["-CA", &fixture("ca.crt"), "-nmin", "10"])
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("dup"))
            .stderr(out)
            .spawn()
            .expect("openssl runs");
        let mut r = Responder { child, port, dir };
        let ready = until(WAIT, || {
            read_text(&out_path).contains(RESPONDER_READY)
                || r.child.try_wait().ok().flatten().is_some()
        });
        let log = read_text(&out_path);
        if ready && log.contains(RESPONDER_READY) {
            Ok(r)
        } else {
            Err(format!("on port {port}: {log}"))
        }
    }

    /// The URL to give `ssl_stapling_responder`.
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What it printed (the requests it got).
    fn log(&self) -> String {
        read_text(&self.dir.path().join("out.log"))
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether the tools these tests run are here (said, or failed under
/// `NOWAIT_REQUIRE_ALL=1`).
macro_rules! require_tools {
    () => {
        require_or_skip!(Path::new(OPENSSL).exists(), "{OPENSSL} is not installed");
        require_or_skip!(
            Path::new(NGINX_BIN).exists(),
            "{NGINX_BIN} is not installed"
        );
    };
}

/// A server on `{port}` with the certificate `cert` (its key `key`) and
/// the stapling directives `stapling`.
fn conf_with(cert: &str, key: &str, stapling: &str, location: &str) -> String {
    Conf::http(&format!(
        "server {{
            listen 127.0.0.1:{{port}} ssl;
            server_name localhost;
            ssl_certificate {};
            ssl_certificate_key {};
            ssl_protocols TLSv1.2 TLSv1.3;
            {stapling}
            location / {{ return 200 \"{location}\"; }}
        }}",
        fixture(cert),
        fixture(key),
    ))
    .render()
}

/// [`conf_with`] for ocsp-leaf.
fn conf(stapling: &str) -> String {
    conf_with("ocsp-leaf.crt", "ocsp-leaf.key", stapling, "ok")
}

/// The staple of one handshake (TLS 1.3).
fn staple(s: &Server) -> Option<Vec<u8>> {
    handshake_staple(s.port(), "localhost", &TLS13).0
}

/// The first handshake's staple, and the first one stapled after it
/// within [`WAIT`].
fn fetched(s: &Server) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let first = staple(s);
    let mut later = None;
    until(WAIT, || {
        later = staple(s);
        later.is_some()
    });
    (first, later)
}

/// What `openssl ocsp` reads in a stapled response: its `Cert Status`.
fn cert_status(der: &[u8]) -> String {
    let dir = TempDir::new("staple");
    let path = dir.path().join("staple.der");
    std::fs::write(&path, der).expect("write the staple");
    let out = Command::new(OPENSSL)
        .args(["ocsp", "-respin"])
        .arg(&path)
        .args(["-resp_text", "-noverify"])
        .output()
        .expect("openssl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Cert Status: "))
        .unwrap_or("(none)")
        .to_string()
}

/// The fetch's `[error]` lines, OpenSSL's error codes left out
/// (`error:13800065:OCSP routines::`: nowait has its reasons, not its
/// codes).
fn fetch_errors(s: &Server) -> Vec<String> {
    let codes = regex::Regex::new(r"error:[0-9A-F]{8}:[A-Za-z0-9 ]+::").unwrap();
    messages(&s.stderr(), "error")
        .into_iter()
        .filter(|m| m.contains(FETCHING))
        .map(|m| codes.replace_all(&m, "").into_owned())
        .collect()
}

/// Waits for a fetch's error line holding `needle`.
fn logs(s: &Server, needle: &str) -> bool {
    until(WAIT, || fetch_errors(s).iter().any(|m| m.contains(needle)))
}

#[test]
fn a_staple_is_fetched_when_a_handshake_asks_and_sent_from_then_on() {
    require_tools!();
    let r = Responder::start("ocsp-index.txt", "ca");
    let stapling = format!(
        "ssl_stapling on; ssl_stapling_responder {}; ssl_trusted_certificate {};",
        r.url(),
        fixture("ca.crt")
    );
    for kind in [Kind::Nginx, Kind::Nowait] {
        let s = Server::start(kind, &conf(&stapling));
        let (first, later) = fetched(&s);
        assert_eq!(first, None, "{kind:?}: the first handshake staples nothing");
        let later = later.unwrap_or_else(|| panic!("{kind:?} stapled nothing: {}", s.stderr()));
        assert_eq!(cert_status(&later), "good", "{kind:?}");
        let (tls12, mut c) = handshake_staple(s.port(), "localhost", &TLS12);
        assert_eq!(
            tls12.as_deref(),
            Some(&later[..]),
            "{kind:?}: over TLS 1.2 too"
        );
        assert_eq!(common::body(&get_on(&mut c, "localhost", "/")), "ok");
        assert_eq!(fetch_errors(&s), Vec::<String>::new(), "{kind:?}");
    }
    // Each server asked once, as nginx asks: the SHA-1 CertID, base64 and
    // escaped in the path.
    let asked: Vec<String> = r
        .log()
        .lines()
        .filter(|l| l.contains("GET /MF"))
        .map(str::to_string)
        .collect();
    assert_eq!(asked.len(), 2, "{}", r.log());
    assert_eq!(asked[0], asked[1], "the same request");
}

#[test]
fn a_staple_file_is_sent_from_the_first_handshake_as_read() {
    require_tools!();
    let file = std::fs::read(fixture("ocsp-leaf.der")).unwrap();
    // No issuer and no responder are needed, nor checks made.
    let stapling = format!(
        "ssl_stapling on; ssl_stapling_file {};",
        fixture("ocsp-leaf.der")
    );
    for kind in [Kind::Nginx, Kind::Nowait] {
        let s = Server::start(kind, &conf(&stapling));
        assert_eq!(staple(&s).as_deref(), Some(&file[..]), "{kind:?}");
        assert_eq!(
            handshake_staple(s.port(), "localhost", &TLS12).0.as_deref(),
            Some(&file[..])
        );
    }
}

/// Runs a responder signing with `signer` and a server with
/// `ssl_stapling_verify verify` trusting the file `trusted`; what each server
/// stapled (its `Cert Status`) or logged.
fn verify_outcome(
    signer: &str,
    verify: &str,
    trusted: &str,
) -> Vec<(Kind, Result<String, Vec<String>>)> {
    let r = Responder::start("ocsp-index.txt", signer);
    let stapling = format!(
        "ssl_stapling on; ssl_stapling_verify {verify}; ssl_stapling_responder {}; ssl_trusted_certificate {};",
        r.url(),
        trusted
    );
    let mut out = Vec::new();
    for kind in [Kind::Nginx, Kind::Nowait] {
        let s = Server::start(kind, &conf(&stapling));
        let (first, later) = fetched(&s);
        assert_eq!(first, None);
        out.push((
            kind,
            later
                .map(|d| cert_status(&d))
                .ok_or_else(|| fetch_errors(&s)),
        ));
    }
    out
}

#[test]
fn verify_on_staples_what_the_issuer_signed() {
    require_tools!();
    for (kind, got) in verify_outcome("ca", "on", &fixture("ca.crt")) {
        assert_eq!(got, Ok("good".to_string()), "{kind:?}");
    }
}

#[test]
fn verify_on_staples_what_a_delegated_responder_signed() {
    require_tools!();
    for (kind, got) in verify_outcome("ocsp-responder", "on", &fixture("ca.crt")) {
        assert_eq!(got, Ok("good".to_string()), "{kind:?}");
    }
}

#[test]
fn verify_on_staples_nothing_a_stranger_signed_and_verify_off_does() {
    require_tools!();
    let on = verify_outcome("rogue-ca", "on", &fixture("ca.crt"));
    let [(_, nginx), (_, nowait)] = &on[..] else {
        panic!("two servers")
    };
    assert_eq!(nowait, nginx, "nowait and nginx");
    let errors = nginx.clone().expect_err("nginx staples nothing");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with(
            "OCSP_basic_verify() failed (SSL: certificate verify error:Verify error: self-signed certificate) while requesting certificate status, responder: 127.0.0.1, peer: 127.0.0.1:"
        ),
        "{errors:?}"
    );
    // Without verify the signature is still checked, against the
    // certificate the answer carries, and passes.
    for (kind, got) in verify_outcome("rogue-ca", "off", &fixture("ca.crt")) {
        assert_eq!(got, Ok("good".to_string()), "{kind:?}");
    }
}

/// ssl_stapling.t's "verify - root not trusted": a trusted root that is
/// not the certificate's issuer signs nothing for it (OpenSSL 3.0 trusts
/// no root for OCSP signing without auxiliary trust).
#[test]
fn verify_on_staples_nothing_a_trusted_stranger_root_signed() {
    require_tools!();
    let dir = TempDir::new("trusted");
    let both = dir.path().join("both.crt");
    let pem = [fixture("ca.crt"), fixture("rogue-ca.crt")]
        .iter()
        .map(|f| std::fs::read_to_string(f).expect("a fixture"))
        .collect::<String>();
    std::fs::write(&both, pem).expect("the trusted file");
    let on = verify_outcome("rogue-ca", "on", &both.display().to_string());
    let [(_, nginx), (_, nowait)] = &on[..] else {
        panic!("two servers")
    };
    assert_eq!(nowait, nginx, "nowait and nginx");
    let errors = nginx.clone().expect_err("nginx staples nothing");
    assert!(
        errors[0].starts_with("OCSP_basic_verify() failed (SSL: root ca not trusted) while requesting certificate status"),
        "{errors:?}"
    );
}

#[test]
fn a_revoked_certificate_is_stapled_nothing() {
    require_tools!();
    let r = Responder::start("ocsp-revoked.txt", "ca");
    let stapling = format!("ssl_stapling on; ssl_stapling_responder {};", r.url());
    let stapling = format!("{stapling} ssl_trusted_certificate {};", fixture("ca.crt"));
    let want = format!(
        "certificate status \"revoked\" in the OCSP response {FETCHING}, responder: 127.0.0.1, peer: 127.0.0.1:{}, certificate: \"{}\"",
        r.port,
        fixture("ocsp-leaf.crt")
    );
    for kind in [Kind::Nginx, Kind::Nowait] {
        let s = Server::start(kind, &conf(&stapling));
        assert_eq!(staple(&s), None);
        assert!(logs(&s, "revoked"), "{kind:?}: {}", s.stderr());
        assert_eq!(staple(&s), None, "{kind:?}");
        assert_eq!(fetch_errors(&s), std::slice::from_ref(&want), "{kind:?}");
    }
}

#[test]
fn a_responder_down_staples_nothing_and_handshakes_go_on() {
    require_tools!();
    let port = free_port();
    let stapling = format!(
        "ssl_stapling on; ssl_stapling_responder http://127.0.0.1:{port}; ssl_trusted_certificate {};",
        fixture("ca.crt")
    );
    let tail = format!(
        "{FETCHING}, responder: 127.0.0.1, peer: 127.0.0.1:{port}, certificate: \"{}\"",
        fixture("ocsp-leaf.crt")
    );
    let want = [
        format!("recv() failed (111: Connection refused) {tail}"),
        format!("OCSP responder prematurely closed connection {tail}"),
    ];
    for kind in [Kind::Nginx, Kind::Nowait] {
        let s = Server::start(kind, &conf(&stapling));
        let (first, mut c) = handshake_staple(s.port(), "localhost", &TLS13);
        assert_eq!(first, None);
        assert_eq!(
            common::body(&get_on(&mut c, "localhost", "/")),
            "ok",
            "{kind:?}"
        );
        assert!(logs(&s, "prematurely closed"), "{kind:?}: {}", s.stderr());
        assert_eq!(fetch_errors(&s), want, "{kind:?}");
        // Five minutes before the next try: nothing more is logged.
        let (again, mut c) = handshake_staple(s.port(), "localhost", &TLS12);
        assert_eq!(again, None);
        assert_eq!(common::body(&get_on(&mut c, "localhost", "/")), "ok");
        assert_eq!(fetch_errors(&s), want, "{kind:?}");
    }
}

#[test]
fn the_certificate_s_own_responder_is_asked_without_ssl_stapling_responder() {
    require_tools!();
    let r = match Responder::start_on(AIA_PORT, "ocsp-index.txt", "ca") {
        Ok(r) => r,
        Err(e) => panic!("the responder of ocsp-leaf.crt's AIA needs port {AIA_PORT}: {e}"),
    };
    let stapling = format!(
        "ssl_stapling on; ssl_trusted_certificate {};",
        fixture("ca.crt")
    );
    for kind in [Kind::Nginx, Kind::Nowait] {
        let s = Server::start(kind, &conf(&stapling));
        let (first, later) = fetched(&s);
        assert_eq!(first, None);
        let later = later.unwrap_or_else(|| panic!("{kind:?}: {}", s.stderr()));
        assert_eq!(cert_status(&later), "good");
    }
    assert_eq!(r.log().matches("GET /MF").count(), 2, "{}", r.log());
}

#[test]
fn a_reload_keeps_the_staple() {
    require_tools!();
    // nginx fetches again after a reload, stapling nothing meanwhile;
    // nowait keeps the staple of a certificate whose setup is unchanged.
    let r = Responder::start("ocsp-index.txt", "ca");
    let stapling = format!(
        "ssl_stapling on; ssl_stapling_responder {}; ssl_trusted_certificate {};",
        r.url(),
        fixture("ca.crt")
    );
    let s = Server::nowait(&conf_with(
        "ocsp-leaf.crt",
        "ocsp-leaf.key",
        &stapling,
        "v1",
    ));
    let (_, before) = fetched(&s);
    let before = before.unwrap_or_else(|| panic!("nothing stapled: {}", s.stderr()));
    // The responder is gone: a fetch now would fail and say so.
    drop(r);
    s.write_conf(&conf_with(
        "ocsp-leaf.crt",
        "ocsp-leaf.key",
        &stapling,
        "v2",
    ));
    let (status, stderr) = s.control("reload");
    assert!(status.success(), "reload: {stderr}");
    let mut after = None;
    let reloaded = until(WAIT, || {
        let (got, mut c) = handshake_staple(s.port(), "localhost", &TLS13);
        after = got;
        common::body(&get_on(&mut c, "localhost", "/")) == "v2"
    });
    assert!(reloaded, "still v1: {}", s.stderr());
    assert_eq!(
        after.as_deref(),
        Some(&before[..]),
        "the first handshake after the reload"
    );
    assert_eq!(
        fetch_errors(&s),
        Vec::<String>::new(),
        "no fetch was needed"
    );
}

/// A configuration for `-t` with the server `body` (its certificate and
/// directives) on a TLS port.
fn t_server(body: &str) -> String {
    format!("server {{ listen 127.0.0.1:18443 ssl; {body} }}")
}

/// `ssl_certificate` and its key for the fixture `name`.
fn cert(name: &str, key: &str) -> String {
    format!(
        "ssl_certificate {}; ssl_certificate_key {};",
        fixture(name),
        fixture(key)
    )
}

#[test]
fn stapling_that_cannot_be_done_is_ignored_with_nginx_s_warnings() {
    require_tools!();
    let leaf = cert("ocsp-leaf.crt", "ocsp-leaf.key");
    let rsa = cert("localhost-rsa.crt", "localhost-rsa.key");
    let trusted = format!("ssl_trusted_certificate {};", fixture("ca.crt"));
    let file = format!("ssl_stapling_file {};", fixture("ocsp-leaf.der"));
    nginx_t::check_good(vec![
        ("no issuer", t_server(&format!("{leaf} ssl_stapling on;"))),
        (
            "issuer in the chain",
            t_server(&format!(
                "{} ssl_stapling on;",
                cert("ocsp-chain.crt", "ocsp-leaf.key")
            )),
        ),
        (
            "no responder url",
            t_server(&format!("{rsa} {trusted} ssl_stapling on;")),
        ),
        (
            "two certificates",
            t_server(&format!(
                "{leaf} {rsa} {trusted} ssl_stapling on; ssl_stapling_verify on;"
            )),
        ),
        (
            "https responder",
            t_server(&format!(
                "{leaf} {trusted} ssl_stapling on; ssl_stapling_responder https://127.0.0.1:1/;"
            )),
        ),
        (
            "bad port",
            t_server(&format!(
                "{leaf} {trusted} ssl_stapling on; ssl_stapling_responder http://127.0.0.1:99999/;"
            )),
        ),
        (
            "a file needs no issuer",
            t_server(&format!("{leaf} ssl_stapling on; {file}")),
        ),
        (
            "stapling off",
            t_server(&format!("{leaf} {file} {trusted}")),
        ),
        (
            "inherited from http",
            format!("ssl_stapling on; {trusted} {}", t_server(&rsa)),
        ),
    ]);
}

#[test]
fn files_that_cannot_be_read_are_errors_as_nginx() {
    require_tools!();
    let dir = TempDir::new("stapling-files");
    let empty = dir.path().join("empty.der");
    std::fs::write(&empty, b"").unwrap();
    let missing = dir.path().join("missing");
    let leaf = cert("ocsp-leaf.crt", "ocsp-leaf.key");
    let shown = |p: &PathBuf| p.to_string_lossy().into_owned();
    // (directives, nginx's message up to what OpenSSL adds, whole when
    // OpenSSL adds nothing)
    let cases = [
        (
            format!("ssl_stapling on; ssl_stapling_file {};", shown(&empty)),
            format!("d2i_OCSP_RESPONSE_bio(\"{}\") failed", shown(&empty)),
            true,
        ),
        (
            format!("ssl_stapling on; ssl_stapling_file {};", fixture("ca.crt")),
            format!(
                "d2i_OCSP_RESPONSE_bio(\"{}\") failed (SSL: ",
                fixture("ca.crt")
            ),
            false,
        ),
        (
            format!("ssl_stapling on; ssl_stapling_file {};", shown(&missing)),
            format!("BIO_new_file(\"{}\") failed (", shown(&missing)),
            false,
        ),
        (
            format!("ssl_trusted_certificate {};", shown(&empty)),
            format!(
                "SSL_CTX_load_verify_locations(\"{}\") failed (SSL: ",
                shown(&empty)
            ),
            false,
        ),
        (
            format!("ssl_trusted_certificate {};", shown(&missing)),
            format!(
                "SSL_CTX_load_verify_locations(\"{}\") failed (",
                shown(&missing)
            ),
            false,
        ),
    ];
    let mut failures = Vec::new();
    for (directives, want, whole) in cases {
        let c = nginx_t::Conf::new(
            "stapling",
            &nginx_t::http(&t_server(&format!("{leaf} {directives}"))),
        );
        for (who, (code, err)) in [("nginx", c.nginx()), ("nowait", c.nowait())] {
            let got = messages(&err, "emerg");
            let ok = code == Some(1)
                && got.len() == 1
                && if whole {
                    got[0] == want
                } else {
                    got[0].starts_with(&want)
                };
            if !ok {
                failures.push(format!("{who}: {got:?} (exit {code:?}), expected {want:?}"));
            }
        }
        // The reasons in common: a missing file, an empty trusted file.
        let (_, ngx) = c.nginx();
        let (_, now) = c.nowait();
        for reason in [
            "No such file or directory",
            "no certificate or crl found",
            "wrong tag",
        ] {
            if ngx.contains(reason) != now.contains(reason) {
                failures.push(format!(
                    "{directives}: {reason:?}: nginx {ngx:?}, nowait {now:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// `openssl s_client` once, asking for the certificate's status or not:
/// whether it says a response was stapled.
fn s_client_stapled(port: u16, status: bool) -> bool {
    let mut cmd = Command::new(OPENSSL);
    cmd.args([
        "s_client",
        "-connect",
        &format!("127.0.0.1:{port}"),
        "-servername",
        "localhost",
    ]);
    if status {
        cmd.arg("-status");
    }
    let out = cmd.stdin(Stdio::null()).output().expect("openssl runs");
    String::from_utf8_lossy(&out.stdout).contains("OCSP Response Status: successful")
}

#[test]
fn only_a_client_that_asks_for_the_status_starts_a_fetch() {
    require_tools!();
    let r = Responder::start("ocsp-index.txt", "ca");
    let stapling = format!(
        "ssl_stapling on; ssl_stapling_responder {}; ssl_trusted_certificate {};",
        r.url(),
        fixture("ca.crt")
    );
    for kind in [Kind::Nginx, Kind::Nowait] {
        let s = Server::start(kind, &conf(&stapling));
        // OpenSSL calls nginx's status callback, which fetches, only for
        // a hello with status_request: these start nothing, so the first
        // client that asks still gets nothing.
        for _ in 0..3 {
            assert!(!s_client_stapled(s.port(), false), "{kind:?}");
        }
        assert!(
            !s_client_stapled(s.port(), true),
            "{kind:?}: nothing was fetched yet"
        );
        assert!(
            until(WAIT, || s_client_stapled(s.port(), true)),
            "{kind:?}: {}",
            s.stderr()
        );
    }
    assert_eq!(r.log().matches("GET /MF").count(), 2, "{}", r.log());
}

/// A name server on loopback answering every `A` question with 127.0.0.1
/// and every other with no records, keeping the names it was asked.
struct FakeDns {
    port: u16,
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeDns {
    fn start() -> FakeDns {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").expect("a UDP port");
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let port = sock.local_addr().unwrap().port();
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (a, st) = (asked.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            while !st.load(std::sync::atomic::Ordering::Relaxed) {
                let Ok((n, from)) = sock.recv_from(&mut buf) else {
                    continue;
                };
                if let Some((name, answer)) = FakeDns::answer(&buf[..n]) {
                    a.lock().unwrap().push(name);
                    let _ = sock.send_to(&answer, from);
                }
            }
        });
        FakeDns {
            port,
            asked,
            stop,
            thread: Some(thread),
        }
    }

    /// The name asked and the answer to `q`.
    fn answer(q: &[u8]) -> Option<(String, Vec<u8>)> {
        let mut at = 12;
        let mut labels = Vec::new();
        while *q.get(at)? != 0 {
            let len = usize::from(q[at]);
            labels.push(String::from_utf8_lossy(q.get(at + 1..at + 1 + len)?).into_owned());
            at += 1 + len;
        }
        let qtype = u16::from_be_bytes([*q.get(at + 1)?, *q.get(at + 2)?]);
        let question = q.get(12..at + 5)?;
        let a = qtype == 1;
        let mut r = Vec::new();
        r.extend_from_slice(&q[..2]);
        r.extend_from_slice(&[0x81, 0x80, 0, 1, 0, u8::from(a), 0, 0, 0, 0]);
        r.extend_from_slice(question);
        if a {
            r.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1]);
        }
        Some((labels.join("."), r))
    }
}

impl Drop for FakeDns {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_responder_named_by_host_is_resolved_by_the_resolver() {
    require_tools!();
    let r = Responder::start("ocsp-index.txt", "ca");
    let dns = FakeDns::start();
    let stapling = format!(
        "ssl_stapling on; ssl_stapling_responder http://localhost:{}; ssl_trusted_certificate {}; resolver 127.0.0.1:{};",
        r.port,
        fixture("ca.crt"),
        dns.port
    );
    for kind in [Kind::Nginx, Kind::Nowait] {
        let before = dns.asked.lock().unwrap().len();
        let s = Server::start(kind, &conf(&stapling));
        let (first, later) = fetched(&s);
        assert_eq!(first, None);
        let later = later.unwrap_or_else(|| panic!("{kind:?}: {}", s.stderr()));
        assert_eq!(cert_status(&later), "good");
        let asked = dns.asked.lock().unwrap()[before..].to_vec();
        assert!(
            !asked.is_empty() && asked.iter().all(|n| n == "localhost"),
            "{kind:?}: {asked:?}"
        );
    }
}

#[test]
fn a_responder_named_by_host_without_a_resolver_is_warned_of_and_asked() {
    require_tools!();
    let r = Responder::start("ocsp-index.txt", "ca");
    let stapling = format!(
        "ssl_stapling on; ssl_stapling_responder http://localhost:{}; ssl_trusted_certificate {};",
        r.port,
        fixture("ca.crt")
    );
    let want = format!(
        "no resolver defined to resolve localhost {FETCHING}, responder: localhost, certificate: \"{}\"",
        fixture("ocsp-leaf.crt")
    );
    // The warning needs a log that takes warnings.
    let text = conf(&stapling).replace("error_log stderr;", "error_log stderr warn;");
    for kind in [Kind::Nginx, Kind::Nowait] {
        let s = Server::start(kind, &text);
        let (first, later) = fetched(&s);
        assert_eq!(first, None, "{kind:?}: {}", s.stderr());
        assert!(
            later.is_some(),
            "{kind:?}: the address found at load is asked: {}",
            s.stderr()
        );
        let warned: Vec<String> = messages(&s.stderr(), "warn")
            .into_iter()
            .filter(|m| m.contains(FETCHING))
            .collect();
        assert_eq!(warned, std::slice::from_ref(&want), "{kind:?}");
    }
}
