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
