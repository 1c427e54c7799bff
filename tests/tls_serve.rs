//! Black-box tests of TLS on the client side (nginx's ssl module): files
//! over TLS, the certificate SNI and the client's signature schemes pick,
//! the `$ssl_*` variables, session resumption by ticket and by cache, the
//! protocols offered, plain HTTP sent to a TLS port (497), refused
//! handshakes, and bad handshakes that disturb nothing else.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::tls::{self, Options, fixture};
use common::{Conf, Fixture, Server};
use rustls::SignatureScheme;

/// A server on `{port}` with `ssl` and the localhost RSA certificate,
/// holding `extra`.
fn tls_server(root: &std::path::Path, extra: &str) -> Server {
    let conf = Conf::http(&format!(
        "server {{
            listen 127.0.0.1:{{port}} ssl;
            server_name localhost;
            root {{root}};
            ssl_certificate {};
            ssl_certificate_key {};
            ssl_protocols TLSv1.2 TLSv1.3;
            location = /vars {{ return 200 \"$scheme $https $ssl_protocol $ssl_cipher $ssl_server_name $ssl_session_reused\"; }}
            {extra}
        }}",
        fixture("localhost-rsa.crt"),
        fixture("localhost-rsa.key"),
    ))
    .root(root)
    .render();
    Server::nowait(&conf)
}

#[test]
fn files_are_served_over_tls_with_and_without_keep_alive() {
    let f = Fixture::build();
    let big = common::pattern(1 << 20);
    std::fs::write(f.root().join("big.bin"), &big).unwrap();
    let s = tls_server(
        f.root(),
        "sendfile on; location /aio/ { alias {root}/; aio threads; }",
    );
    let r = tls::get(s.port(), "localhost", "/dir/file.txt");
    assert_eq!(r.status, 200);
    let config = tls::client(&Options::default());
    let mut c = tls::connect(s.port(), "localhost", &config).unwrap();
    for path in ["/big.bin", "/aio/big.bin", "/big.bin"] {
        let r = tls::get_keepalive(&mut c, "localhost", path);
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.body.len(), big.len(), "{path}");
        assert!(r.body == big, "{path}: the body differs");
    }
}

#[test]
fn variables_say_what_the_handshake_negotiated() {
    let f = Fixture::build();
    let s = tls_server(f.root(), "");
    let r = tls::get(s.port(), "localhost", "/vars");
    assert_eq!(
        common::body(&r),
        "https on TLSv1.3 TLS_AES_256_GCM_SHA384 localhost ."
    );
    let opts = Options {
        versions: vec![&rustls::version::TLS12],
        ..Options::default()
    };
    let mut c = tls::connect(s.port(), "localhost", &tls::client(&opts)).unwrap();
    let r = tls::get_on(&mut c, "localhost", "/vars");
    assert_eq!(
        common::body(&r),
        "https on TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384 localhost ."
    );
}

#[test]
fn sni_picks_the_server_and_its_certificate() {
    let f = Fixture::build();
    let conf = Conf::http(&format!(
        "server {{
            listen 127.0.0.1:{{port}} ssl;
            server_name localhost;
            ssl_certificate {};
            ssl_certificate_key {};
            location / {{ return 200 \"default\"; }}
        }}
        server {{
            listen 127.0.0.1:{{port}} ssl;
            server_name example.com www.example.com;
            ssl_certificate {};
            ssl_certificate_key {};
            location / {{ return 200 \"example\"; }}
        }}",
        fixture("localhost-rsa.crt"),
        fixture("localhost-rsa.key"),
        fixture("example.crt"),
        fixture("example.key"),
    ))
    .root(f.root())
    .render();
    let s = Server::nowait(&conf);
    let config = tls::client(&Options::default());
    let mut c = tls::connect(s.port(), "www.example.com", &config).unwrap();
    assert!(tls::peer_names(&c).contains("example.com"));
    assert_eq!(
        common::body(&tls::get_on(&mut c, "www.example.com", "/")),
        "example"
    );
    let mut c = tls::connect(s.port(), "localhost", &config).unwrap();
    assert!(!tls::peer_names(&c).contains("example.com"));
    assert_eq!(
        common::body(&tls::get_on(&mut c, "localhost", "/")),
        "default"
    );
    // A name no server has gets the default server's certificate, which
    // the client then refuses for that name.
    assert!(tls::connect(s.port(), "unknown.test", &config).is_err());
}

#[test]
fn the_client_s_signature_schemes_pick_rsa_or_ecdsa() {
    let f = Fixture::build();
    let conf = Conf::server(&format!(
        "listen 127.0.0.1:{{port}} ssl;
         ssl_certificate {}; ssl_certificate_key {};
         ssl_certificate {}; ssl_certificate_key {};
         ssl_protocols TLSv1.2 TLSv1.3;
         location / {{ return 200 \"$ssl_cipher\"; }}",
        fixture("localhost-rsa.crt"),
        fixture("localhost-rsa.key"),
        fixture("localhost-ec.crt"),
        fixture("localhost-ec.key"),
    ))
    .root(f.root())
    .render()
    .replace("listen 127.0.0.1:{port};\n", "");
    let s = Server::nowait(&conf);
    let ecdsa = Options {
        versions: vec![&rustls::version::TLS12],
        schemes: Some(vec![SignatureScheme::ECDSA_NISTP256_SHA256]),
        ..Options::default()
    };
    let mut c = tls::connect(s.port(), "localhost", &tls::client(&ecdsa)).unwrap();
    assert_eq!(
        common::body(&tls::get_on(&mut c, "localhost", "/")),
        "ECDHE-ECDSA-AES256-GCM-SHA384"
    );
    let rsa = Options {
        versions: vec![&rustls::version::TLS12],
        schemes: Some(vec![
            SignatureScheme::RSA_PSS_SHA256,
            SignatureScheme::RSA_PKCS1_SHA256,
        ]),
        ..Options::default()
    };
    let mut c = tls::connect(s.port(), "localhost", &tls::client(&rsa)).unwrap();
    assert_eq!(
        common::body(&tls::get_on(&mut c, "localhost", "/")),
        "ECDHE-RSA-AES256-GCM-SHA384"
    );
}

/// Two connections from one client: the second resumes (`$ssl_session_reused`
/// is `r`), by ticket by default, and by the session cache with tickets off.
#[test]
fn sessions_resume_by_ticket_and_by_cache() {
    let f = Fixture::build();
    for (extra, tickets) in [
        ("", true),
        (
            "ssl_session_tickets off; ssl_session_cache shared:SSL:1m;",
            false,
        ),
    ] {
        let s = tls_server(f.root(), extra);
        for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
            let opts = Options {
                versions: vec![version],
                resume: true,
                tickets,
                ..Options::default()
            };
            let config = tls::client(&opts);
            let mut first = tls::connect(s.port(), "localhost", &config).unwrap();
            let r = tls::get_on(&mut first, "localhost", "/vars");
            assert!(
                common::body(&r).ends_with(" ."),
                "{extra}: {}",
                common::body(&r)
            );
            let mut second = tls::connect(s.port(), "localhost", &config).unwrap();
            let r = tls::get_on(&mut second, "localhost", "/vars");
            assert!(
                common::body(&r).ends_with(" r"),
                "{extra} {version:?}: {}",
                common::body(&r)
            );
        }
    }
    // Neither tickets nor a cache: nothing resumes.
    let s = tls_server(f.root(), "ssl_session_tickets off;");
    let opts = Options {
        versions: vec![&rustls::version::TLS12],
        resume: true,
        ..Options::default()
    };
    let config = tls::client(&opts);
    for _ in 0..2 {
        let mut c = tls::connect(s.port(), "localhost", &config).unwrap();
        assert!(common::body(&tls::get_on(&mut c, "localhost", "/vars")).ends_with(" ."));
    }
}

#[test]
fn only_the_protocols_ssl_protocols_names_are_spoken() {
    let f = Fixture::build();
    for (protocols, ok13, ok12) in [("TLSv1.2", false, true), ("TLSv1.3", true, false)] {
        let s = tls_server(f.root(), "").port();
        let _ = s;
        let conf = Conf::server(&format!(
            "ssl_certificate {}; ssl_certificate_key {}; ssl_protocols {protocols};
             location / {{ return 200 \"$ssl_protocol\"; }}",
            fixture("localhost-ec.crt"),
            fixture("localhost-ec.key"),
        ))
        .render()
        .replace("listen 127.0.0.1:{port};", "listen 127.0.0.1:{port} ssl;");
        let s = Server::nowait(&conf);
        for (version, ok) in [
            (&rustls::version::TLS13, ok13),
            (&rustls::version::TLS12, ok12),
        ] {
            let opts = Options {
                versions: vec![version],
                ..Options::default()
            };
            let got = tls::connect(s.port(), "localhost", &tls::client(&opts));
            assert_eq!(got.is_ok(), ok, "{protocols} against {version:?}");
        }
    }
}

/// nginx 1.22's default protocols are TLSv1 TLSv1.1 TLSv1.2: without
/// `ssl_protocols`, TLS 1.3 is not offered.
#[test]
fn the_default_protocols_are_nginx_1_22_s() {
    let conf = Conf::server(&format!(
        "ssl_certificate {}; ssl_certificate_key {}; location / {{ return 200 \"$ssl_protocol\"; }}",
        fixture("localhost-ec.crt"),
        fixture("localhost-ec.key"),
    ))
    .render()
    .replace("listen 127.0.0.1:{port};", "listen 127.0.0.1:{port} ssl;");
    let s = Server::nowait(&conf);
    assert_eq!(
        common::body(&tls::get(s.port(), "localhost", "/")),
        "TLSv1.2"
    );
}

#[test]
fn plain_http_to_a_tls_port_is_answered_497() {
    let f = Fixture::build();
    let s = tls_server(f.root(), "");
    let r = common::client::get(s.port(), "/x");
    assert_eq!(r.status, 400);
    assert!(common::body(&r).contains("The plain HTTP request was sent to HTTPS port"));
    assert_eq!(r.header("connection").as_deref(), Some("close"));
    // The server's error_page applies (the request has no location yet),
    // with the request's own variables.
    let s = tls_server(
        f.root(),
        "error_page 497 =301 https://$host:$server_port$request_uri;",
    );
    let r = common::client::request(
        s.port(),
        "GET /redir/a?b=1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 301);
    assert_eq!(
        r.header("location").as_deref(),
        Some(format!("https://localhost:{}/redir/a?b=1", s.port()).as_str())
    );
}

/// Bytes that are no ClientHello, a ClientHello cut short that then
/// stalls, and a client that closes mid-handshake: each connection ends,
/// and the worker serves the next client as before.
#[test]
fn bad_handshakes_end_their_connection_only() {
    let f = Fixture::build();
    let s = tls_server(f.root(), "");
    // A TLS record header announcing a handshake, then garbage.
    let mut c = TcpStream::connect(("127.0.0.1", s.port())).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(&[0x16, 0x03, 0x01, 0x00, 0x10]).unwrap();
    c.write_all(&[0xff; 16]).unwrap();
    let mut buf = [0u8; 64];
    let n = c.read(&mut buf).unwrap_or(0);
    // An alert (0x15) or nothing, then the close.
    assert!(n == 0 || buf[0] == 0x15, "{:?}", &buf[..n]);
    // An oversized record length.
    let mut c = TcpStream::connect(("127.0.0.1", s.port())).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(&[0x16, 0x03, 0x01, 0xff, 0xff]).unwrap();
    c.write_all(&[0u8; 1024]).unwrap();
    let n = c.read(&mut buf).unwrap_or(0);
    assert!(n == 0 || buf[0] == 0x15, "{:?}", &buf[..n]);
    // A client that goes away mid-handshake.
    let mut c = TcpStream::connect(("127.0.0.1", s.port())).unwrap();
    c.write_all(&[0x16, 0x03, 0x01]).unwrap();
    drop(c);
    assert_eq!(tls::get(s.port(), "localhost", "/dir/file.txt").status, 200);
}

/// A handshake that stalls is closed when `client_header_timeout` runs out.
#[test]
fn a_stalled_handshake_times_out() {
    let f = Fixture::build();
    let s = tls_server(f.root(), "client_header_timeout 1s;");
    let mut c = TcpStream::connect(("127.0.0.1", s.port())).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(&[0x16, 0x03, 0x01, 0x00, 0x40, 0x01]).unwrap();
    let started = std::time::Instant::now();
    let mut buf = [0u8; 16];
    let n = c.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "closed without an answer");
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "closed by the server, not the client's timeout"
    );
}

#[test]
fn ssl_reject_handshake_refuses_names_it_covers() {
    let conf = Conf::http(&format!(
        "server {{
            listen 127.0.0.1:{{port}} ssl default_server;
            ssl_reject_handshake on;
        }}
        server {{
            listen 127.0.0.1:{{port}} ssl;
            server_name localhost;
            ssl_certificate {};
            ssl_certificate_key {};
            location / {{ return 200 \"ok\"; }}
        }}",
        fixture("localhost-ec.crt"),
        fixture("localhost-ec.key"),
    ))
    .render();
    let s = Server::nowait(&conf);
    assert_eq!(common::body(&tls::get(s.port(), "localhost", "/")), "ok");
    let config = tls::client(&Options::default());
    let e = tls::connect(s.port(), "other.test", &config).expect_err("refused");
    assert!(
        e.to_string().contains("UnrecognisedName") || e.to_string().contains("unrecognized"),
        "{e}"
    );
}

/// The status page counts handshakes by outcome and shows each served
/// certificate's expiry.
#[test]
fn the_status_page_counts_handshakes_and_shows_expiry() {
    let f = Fixture::build();
    let s = tls_server(f.root(), "location = /status { nowait_status; }");
    let opts = Options {
        versions: vec![&rustls::version::TLS13],
        resume: true,
        ..Options::default()
    };
    let config = tls::client(&opts);
    for _ in 0..2 {
        let mut c = tls::connect(s.port(), "localhost", &config).unwrap();
        tls::get_on(&mut c, "localhost", "/vars");
    }
    assert_eq!(common::client::get(s.port(), "/x").status, 400);
    let page = common::body(&tls::get(s.port(), "localhost", "/status"));
    let value = |name: &str| -> f64 {
        page.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))
            .unwrap_or_else(|| panic!("{name} not on the page:\n{page}"))
    };
    assert!(value("nowait_tls_handshakes_total{result=\"full\"}") >= 2.0);
    assert!(value("nowait_tls_handshakes_total{result=\"resumed\"}") >= 1.0);
    assert_eq!(
        value("nowait_tls_handshakes_total{result=\"plain_http\"}"),
        1.0
    );
    assert!(value("nowait_tls_handshake_seconds_count") >= 3.0);
    let expiry = format!(
        "nowait_tls_certificate_expiry_seconds{{server=\"localhost\",file=\"{}\"}}",
        fixture("localhost-rsa.crt")
    );
    assert!(value(&expiry) > 4.0e9, "the fixture is valid for 100 years");
}

/// Regression: a certificate named with variables, loaded by the
/// handshakes, was missing from `nowait_tls_certificate_expiry_seconds`.
#[test]
fn a_certificate_loaded_per_handshake_shows_its_expiry() {
    let dir = fixture("localhost-rsa.crt");
    let dir = std::path::Path::new(&dir)
        .parent()
        .unwrap()
        .display()
        .to_string();
    let conf = Conf::server(&format!(
        "ssl_certificate {dir}/$ssl_server_name-rsa.crt;
         ssl_certificate_key {dir}/$ssl_server_name-rsa.key;
         location = /status {{ nowait_status; }}"
    ))
    .render()
    .replace("listen 127.0.0.1:{port};", "listen 127.0.0.1:{port} ssl;");
    let s = Server::nowait(&conf);
    let page = common::body(&tls::get(s.port(), "localhost", "/status"));
    let expiry = format!(
        "nowait_tls_certificate_expiry_seconds{{server=\"localhost\",file=\"{}\"}} ",
        fixture("localhost-rsa.crt")
    );
    let line = page
        .lines()
        .find(|l| l.starts_with(&expiry))
        .unwrap_or_else(|| panic!("{expiry} not on the page:\n{page}"));
    let t: f64 = line[expiry.len()..].trim().parse().unwrap();
    assert!(t > 4.0e9, "the fixture is valid for 100 years: {line}");
}

/// An expired certificate is warned about at start (nginx says nothing),
/// and served all the same.
#[test]
fn an_expired_certificate_is_warned_about_and_served() {
    let conf = Conf::server(&format!(
        "ssl_certificate {}; ssl_certificate_key {}; location / {{ return 200 \"ok\"; }}",
        fixture("expired.crt"),
        fixture("expired.key"),
    ))
    .render()
    .replace("listen 127.0.0.1:{port};", "listen 127.0.0.1:{port} ssl;");
    let s = Server::nowait(&conf);
    assert!(
        s.stderr().contains("certificate \"") && s.stderr().contains("expired.crt\" expired "),
        "{}",
        s.stderr()
    );
    // The client refuses it, as any would; the server served the handshake.
    let e = tls::connect(s.port(), "localhost", &tls::client(&Options::default())).unwrap_err();
    assert!(e.to_string().contains("xpired"), "{e}");
}

/// The access log of `s` (in its prefix), once it holds `n` lines.
fn log_lines(s: &Server, n: usize) -> Vec<String> {
    let path = s.prefix().join("access.log");
    common::wait::until(Duration::from_secs(10), || {
        common::wait::read_text(&path).lines().count() >= n
    });
    common::wait::read_text(&path)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Regression: a ClientHello whose ALPN list has no protocol nginx speaks
/// got a bare close (rustls's alert was dropped) where OpenSSL answers
/// `no_application_protocol`; and a list with http/1.0 alone is nginx's
/// http/1.0, not a failure.
#[test]
fn alpn_without_a_protocol_nginx_speaks_is_refused_with_no_application_protocol() {
    let f = Fixture::build();
    let s = tls_server(
        f.root(),
        "location = /alpn { return 200 \"[$ssl_alpn_protocol]\"; }",
    );
    for (tls13, version) in [
        (true, &rustls::version::TLS13),
        (false, &rustls::version::TLS12),
    ] {
        let opts = Options {
            versions: vec![version],
            alpn: vec![b"h2".to_vec()],
            ..Options::default()
        };
        let e = tls::connect(s.port(), "localhost", &tls::client(&opts)).expect_err("refused");
        assert!(
            e.to_string().contains("NoApplicationProtocol"),
            "TLS 1.3 {tls13}: {e}"
        );
    }
    let opts = Options {
        alpn: vec![b"http/1.0".to_vec()],
        ..Options::default()
    };
    let mut c = tls::connect(s.port(), "localhost", &tls::client(&opts)).unwrap();
    assert_eq!(
        common::body(&tls::get_on(&mut c, "localhost", "/alpn")),
        "[http/1.0]"
    );
}

/// Regression: an X.509 v1 certificate (no extensions, as `openssl req
/// -x509` makes it and nginx's own tests use) was refused at start
/// ("UnsupportedCertVersion"); OpenSSL serves it.
#[test]
fn an_x509_v1_certificate_is_served() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tls/testdata");
    let conf = Conf::server(&format!(
        "ssl_certificate {}; ssl_certificate_key {}; location / {{ return 200 \"v1\"; }}",
        data.join("v1.crt").display(),
        data.join("v1.key").display(),
    ))
    .render()
    .replace("listen 127.0.0.1:{port};", "listen 127.0.0.1:{port} ssl;");
    let s = Server::nowait(&conf);
    // The test CA did not sign it: OpenSSL's client shows what it got.
    let out = std::process::Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &format!("127.0.0.1:{}", s.port()),
            "-servername",
            "v1.test",
        ])
        .stdin(std::process::Stdio::null())
        .output();
    let Ok(out) = out else {
        assert!(common::require(
            false,
            "an_x509_v1_certificate_is_served",
            "openssl is missing"
        ));
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("subject=CN = v1.test"), "{text}");
}

/// Regression: plain HTTP on a TLS port was logged with `$status` 497,
/// and a header too large with 494; nginx logs the 400 it sends.
#[test]
fn plain_http_to_a_tls_port_is_logged_as_the_400_sent() {
    let f = Fixture::build();
    let s = tls_server(
        f.root(),
        "access_log {prefix}/access.log; large_client_header_buffers 2 1k;",
    );
    let r = common::client::get(s.port(), "/x");
    assert_eq!(r.status, 400);
    let config = tls::client(&Options::default());
    let mut c = tls::connect(s.port(), "localhost", &config).unwrap();
    let big = "a".repeat(2000);
    write!(
        c,
        "GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: {big}\r\n\r\n"
    )
    .unwrap();
    let mut got = Vec::new();
    let _ = c.read_to_end(&mut got);
    assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 400"));
    let lines = log_lines(&s, 2);
    assert_eq!(lines.len(), 2, "{lines:?}");
    for l in &lines {
        assert!(l.contains("\" 400 "), "{l}");
    }
}

/// Regression: `$ssl_session_id`, `$ssl_curve` and `$ssl_alpn_protocol`
/// were unknown variables (a configuration using them did not load), and
/// `$ssl_server_name` was lower-cased.
#[test]
fn session_id_curve_alpn_and_the_name_as_sent_are_told() {
    let f = Fixture::build();
    let s = tls_server(
        f.root(),
        "ssl_session_cache shared:S:1m; ssl_session_tickets off;
         location = /s { return 200 \"$ssl_session_id|$ssl_curve|$ssl_alpn_protocol|$ssl_server_name|$ssl_session_reused\"; }",
    );
    let opts = Options {
        versions: vec![&rustls::version::TLS12],
        alpn: vec![b"http/1.1".to_vec()],
        resume: true,
        tickets: false,
        ..Options::default()
    };
    let config = tls::client(&opts);
    let mut c = tls::connect(s.port(), "LocalHost", &config).unwrap();
    let first = common::body(&tls::get_on(&mut c, "localhost", "/s"));
    let f1: Vec<&str> = first.split('|').collect();
    assert_eq!(f1[0].len(), 64, "{first}");
    assert!(
        f1[0]
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
        "{first}"
    );
    assert_eq!(
        &f1[1..],
        ["X25519", "http/1.1", "LocalHost", "."],
        "{first}"
    );
    // The resumed session says the id it was given.
    let mut c = tls::connect(s.port(), "LocalHost", &config).unwrap();
    let second = common::body(&tls::get_on(&mut c, "localhost", "/s"));
    let f2: Vec<&str> = second.split('|').collect();
    assert_eq!(f2[0], f1[0], "{second}");
    assert_eq!(f2[4], "r", "{second}");
}

/// Regression: a session made under one server resumed under another
/// with the same ticket key and other certificates (OpenSSL refuses it:
/// nginx's session id context is made of the certificates).
#[test]
fn a_session_resumes_only_where_the_same_certificates_serve() {
    let conf = Conf::http(&format!(
        "ssl_session_ticket_key {};
         ssl_protocols TLSv1.2 TLSv1.3;
         server {{ listen 127.0.0.1:{{port}} ssl; ssl_certificate {}; ssl_certificate_key {};
                  location / {{ return 200 \"$ssl_session_reused\"; }} }}
         server {{ listen 127.0.0.1:{{port1}} ssl; ssl_certificate {}; ssl_certificate_key {};
                  location / {{ return 200 \"$ssl_session_reused\"; }} }}
         server {{ listen 127.0.0.1:{{port2}} ssl; ssl_certificate {}; ssl_certificate_key {};
                  location / {{ return 200 \"$ssl_session_reused\"; }} }}",
        fixture("ticket80.key"),
        fixture("localhost-rsa.crt"),
        fixture("localhost-rsa.key"),
        fixture("localhost-rsa.crt"),
        fixture("localhost-rsa.key"),
        fixture("localhost-ec.crt"),
        fixture("localhost-ec.key"),
    ));
    let (p1, p2) = (common::server::free_port(), common::server::free_port());
    let conf = conf
        .render()
        .replace("{port1}", &p1.to_string())
        .replace("{port2}", &p2.to_string());
    let s = Server::nowait(&conf);
    for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let opts = Options {
            versions: vec![version],
            resume: true,
            ..Options::default()
        };
        let config = tls::client(&opts);
        let mut c = tls::connect(s.port(), "localhost", &config).unwrap();
        assert_eq!(common::body(&tls::get_on(&mut c, "localhost", "/")), ".");
        // The same certificates on another port: resumed.
        let mut c = tls::connect(p1, "localhost", &config).unwrap();
        assert_eq!(
            common::body(&tls::get_on(&mut c, "localhost", "/")),
            "r",
            "{version:?}"
        );
        // Other certificates: a new session.
        let mut c = tls::connect(p2, "localhost", &config).unwrap();
        assert_eq!(
            common::body(&tls::get_on(&mut c, "localhost", "/")),
            ".",
            "{version:?}"
        );
    }
}

/// Regression: nowait answered a client's close_notify with its own and
/// sent one after the client's FIN; nginx sends none once the client has
/// ended the connection (`no_send_shutdown`), and one when it ends it.
#[test]
fn no_close_notify_once_the_client_has_ended_the_connection() {
    let f = Fixture::build();
    let s = tls_server(f.root(), "");
    let config = tls::client(&Options::default());
    for notify in [true, false] {
        let mut c = tls::connect(s.port(), "localhost", &config).unwrap();
        let r = tls::get_keepalive(&mut c, "localhost", "/dir/file.txt");
        assert_eq!(r.status, 200);
        if notify {
            c.conn.send_close_notify();
            while c.conn.wants_write() {
                c.conn.write_tls(&mut c.sock).unwrap();
            }
        } else {
            c.sock.shutdown(std::net::Shutdown::Write).unwrap();
        }
        let mut notified = false;
        loop {
            match c.conn.read_tls(&mut c.sock) {
                Ok(0) => break,
                Ok(_) => {
                    notified |= c
                        .conn
                        .process_new_packets()
                        .is_ok_and(|st| st.peer_has_closed())
                }
                Err(e) => panic!("notify {notify}: {e}"),
            }
        }
        assert!(
            !notified,
            "close_notify sent after the client's {}",
            if notify { "close_notify" } else { "FIN" }
        );
    }
    // The server ending a connection still says so.
    let mut c = tls::connect(s.port(), "localhost", &config).unwrap();
    write!(c, "GET /dir/file.txt HTTP/1.0\r\n\r\n").unwrap();
    let mut got = Vec::new();
    c.read_to_end(&mut got)
        .expect("a close_notify ends the stream");
}

/// Regression: with an RSA and an ECDSA certificate, a TLS 1.2 client
/// that prefers an RSA suite got the ECDSA certificate (chosen by the
/// signature schemes); OpenSSL chooses the suite, then its certificate.
#[test]
fn tls12_takes_the_certificate_its_chosen_suite_needs() {
    let conf = Conf::server(&format!(
        "ssl_certificate {}; ssl_certificate_key {}; ssl_certificate {}; ssl_certificate_key {};
         ssl_protocols TLSv1.2 TLSv1.3; location / {{ return 200 \"$ssl_cipher\"; }}",
        fixture("localhost-ec.crt"),
        fixture("localhost-ec.key"),
        fixture("localhost-rsa.crt"),
        fixture("localhost-rsa.key"),
    ))
    .render()
    .replace("listen 127.0.0.1:{port};", "listen 127.0.0.1:{port} ssl;");
    let s = Server::nowait(&conf);
    let out = std::process::Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &format!("127.0.0.1:{}", s.port()),
            "-tls1_2",
            "-cipher",
            "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES128-GCM-SHA256",
        ])
        .stdin(std::process::Stdio::null())
        .output();
    let Ok(out) = out else {
        assert!(common::require(
            false,
            "tls12_takes_the_certificate_its_chosen_suite_needs",
            "openssl is missing"
        ));
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Cipher is ECDHE-RSA-AES128-GCM-SHA256"),
        "{text}"
    );
}

/// Regression: the ssl module's files were looked for under the prefix;
/// nginx looks for them in the configuration file's directory
/// (`conf_prefix`), which differs when `-c` names a file elsewhere.
#[test]
fn ssl_files_are_found_beside_the_configuration_file() {
    let dir = common::TempDir::new("tls-conf-dir");
    let conf_dir = dir.path().join("etc");
    std::fs::create_dir_all(conf_dir.join("certs")).unwrap();
    for name in ["localhost-ec.crt", "localhost-ec.key"] {
        std::fs::copy(fixture(name), conf_dir.join("certs").join(name)).unwrap();
    }
    std::fs::copy(fixture("ca.crt"), conf_dir.join("certs/ca.crt")).unwrap();
    let conf_file = conf_dir.join("test.conf");
    // The upstream side's files too (`proxy_ssl_certificate`,
    // `proxy_ssl_trusted_certificate`), which nginx also finds there.
    std::fs::write(
        &conf_file,
        "events {}\nhttp { server { listen 127.0.0.1:18443 ssl; ssl_certificate certs/localhost-ec.crt; ssl_certificate_key certs/localhost-ec.key;
         location / { proxy_pass https://127.0.0.1:1; proxy_ssl_certificate certs/localhost-ec.crt; proxy_ssl_certificate_key certs/localhost-ec.key;
                      proxy_ssl_verify on; proxy_ssl_trusted_certificate certs/ca.crt; } } }\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nowait"))
        .arg("-t")
        .arg("-p")
        .arg(format!("{}/", dir.path().display()))
        .arg("-c")
        .arg(&conf_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Stops the server it holds when dropped.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

/// Regression: certificates named with variables were looked for under
/// the prefix, where nginx looks for them beside the configuration file
/// (`ngx_ssl_load_certificate` resolves them against `conf_prefix`), and
/// the serving process could read only that directory.
#[test]
fn certificates_named_with_variables_are_found_beside_the_configuration_file() {
    let dir = common::TempDir::new("tls-conf-dir-vars");
    let conf_dir = dir.path().join("etc");
    std::fs::create_dir_all(conf_dir.join("certs")).unwrap();
    std::fs::create_dir_all(dir.path().join("logs")).unwrap();
    for (from, to) in [
        ("localhost-rsa.crt", "localhost.crt"),
        ("localhost-rsa.key", "localhost.key"),
    ] {
        std::fs::copy(fixture(from), conf_dir.join("certs").join(to)).unwrap();
    }
    let port = common::server::free_port();
    let conf_file = conf_dir.join("test.conf");
    std::fs::write(
        &conf_file,
        format!(
            "events {{}}\nhttp {{ server {{ listen 127.0.0.1:{port} ssl;
             ssl_certificate certs/$ssl_server_name.crt; ssl_certificate_key certs/$ssl_server_name.key;
             location / {{ return 200 \"named\"; }} }} }}\n"
        ),
    )
    .unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_nowait"))
        .arg("-p")
        .arg(format!("{}/", dir.path().display()))
        .arg("-c")
        .arg(&conf_file)
        .args(["-e", "stderr", "-g", "daemon off;"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _running = Running(child);
    assert!(
        common::wait::until(Duration::from_secs(10), || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        }),
        "nowait listens on {port}"
    );
    assert_eq!(common::body(&tls::get(port, "localhost", "/")), "named");
}

/// One `openssl s_client` connection with `-tls1_2`, offering the session
/// in `sess_in` if given, saving a new session in `sess_out`; returns
/// what it printed, the handshake's messages (`-msg`) included.
fn s_client_tls12(
    port: u16,
    sess_in: Option<&std::path::Path>,
    sess_out: &std::path::Path,
) -> String {
    let mut cmd = std::process::Command::new("openssl");
    cmd.args(["s_client", "-connect", &format!("127.0.0.1:{port}")])
        .args(["-servername", "localhost", "-tls1_2", "-ign_eof", "-msg"])
        .arg("-sess_out")
        .arg(sess_out);
    if let Some(p) = sess_in {
        cmd.arg("-sess_in").arg(p);
    }
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("openssl s_client runs (the test command installs openssl)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"GET /vars HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Regression (nginx-tests ssl_ocsp.t 13): a TLS 1.2 session resumed by
/// a ticket got a new ticket, as rustls renews them; nginx's OpenSSL does
/// not renew a ticket of its current key, and an OpenSSL client given a
/// new ticket on a resumed connection drops the session it resumed from
/// its cache (IO::Socket::SSL then offered nothing the next time). The
/// resumed connection now keeps the client's ticket, and it resumes
/// again.
#[test]
fn a_tls12_session_resumed_by_ticket_keeps_its_ticket() {
    let f = Fixture::build();
    let s = tls_server(f.root(), "");
    let (one, two) = (f.root().join("one.pem"), f.root().join("two.pem"));
    let out = s_client_tls12(s.port(), None, &one);
    assert!(out.contains("\nNew, TLSv1.2"), "{out}");
    assert!(out.contains(" localhost ."), "{out}");
    assert!(one.exists(), "the full handshake gave no session to save");
    for round in 0..2 {
        let out = s_client_tls12(s.port(), Some(&one), &two);
        assert!(out.contains("\nReused, TLSv1.2"), "round {round}: {out}");
        assert!(out.contains(" localhost r"), "round {round}: {out}");
        // No NewSessionTicket, or the empty one (a handshake header and
        // six bytes: lifetime and a zero length) that a client ignores.
        for line in out.lines().filter(|l| l.contains("NewSessionTicket")) {
            assert!(
                line.contains("[length 000a]"),
                "round {round}: the resumed connection renewed the ticket: {line}"
            );
        }
    }
}
