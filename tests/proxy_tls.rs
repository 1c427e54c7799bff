//! Black-box tests of the proxy over TLS (`proxy_pass https://…` and the
//! `proxy_ssl_*` directives), in front of scripted upstreams behind rustls
//! (`Upstream::start_tls`), which record each handshake: the server name
//! sent, whether the session was resumed, the client certificate.
//!
//! Covered: requests over TLS with and without kept-alive connections,
//! session resumption, `proxy_ssl_verify` (the right CA, a wrong one, the
//! name, the depth, a revoked certificate) with nginx's log lines,
//! `proxy_ssl_server_name` and `proxy_ssl_name`, a client certificate
//! (and one named with variables that cannot be loaded: a 500),
//! `proxy_next_upstream` past a failed handshake, chunked and large
//! bodies, a WebSocket upgrade.
//!
//! Every test is checked against nginx 1.22 with `NOWAIT_TEST_NGINX=1`
//! (`Server::tested`); `tests/differential_proxy_tls.rs` runs both side by
//! side.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::proxy::{conf, get, start};
use common::tls::{self, Origin, fixture};
use common::upstream::Handshake;
use common::wait::until;
use common::{Conn, Server, Upstream, body, pattern};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// How long a test waits for an effect that must come (a bound, not a
/// speed requirement).
const WAIT: Duration = Duration::from_secs(10);

/// An origin behind TLS that answers every request with `200` and the
/// request's target as its body, keeping the connection as asked.
fn origin(o: Origin) -> Upstream {
    Upstream::start_tls(tls::origin(&o), |c| {
        while let Some(req) = c.read_request() {
            let keep = req.keep_alive();
            let target = req.target();
            let out = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n{}\r\n{target}",
                target.len(),
                if keep { "" } else { "Connection: close\r\n" }
            );
            if !c.write(out.as_bytes()) || !keep {
                return;
            }
        }
    })
}

/// The handshakes of `up`, once `n` have ended.
fn handshakes(up: &Upstream, n: usize) -> Vec<Handshake> {
    assert!(
        until(WAIT, || up.handshakes().len() >= n),
        "{n} handshakes: {:?}",
        up.handshakes()
    );
    up.handshakes()
}

/// Whether the server's error log has a line with every one of `parts`.
fn logged(server: &common::Server, parts: &[&str]) -> bool {
    until(WAIT, || {
        server
            .stderr()
            .lines()
            .any(|l| parts.iter().all(|p| l.contains(p)))
    })
}

#[test]
fn requests_go_over_tls_and_kept_alive_connections_keep_their_tls() {
    let up = origin(Origin::default());
    let server = start(
        &up,
        "upstream ka { server UP; keepalive 2; }",
        "location /ka/ { proxy_pass https://ka/; proxy_http_version 1.1;
             proxy_set_header Connection \"\"; }
         location /once/ { proxy_pass https://UP/; proxy_ssl_session_reuse off; }",
    );
    for path in ["a", "b", "c"] {
        let r = get(&server, &format!("/ka/{path}"));
        assert_eq!((r.status, body(&r)), (200, format!("/{path}")));
    }
    // One connection, one handshake, for the three.
    assert_eq!(up.connections(), 1);
    let seen = handshakes(&up, 1);
    // nginx 1.22 offers TLSv1 to TLSv1.2 by default, and no name.
    assert_eq!(seen[0].protocol.as_deref(), Some("TLSv1.2"));
    assert_eq!(seen[0].server_name, None);
    assert_eq!(
        up.requests()
            .iter()
            .map(|r| r.connection)
            .collect::<Vec<_>>(),
        [0, 0, 0]
    );
    // Without keepalive each request has its own connection.
    for path in ["d", "e"] {
        assert_eq!(
            body(&get(&server, &format!("/once/{path}"))),
            format!("/{path}")
        );
    }
    assert_eq!(up.connections(), 3);
    assert_eq!(handshakes(&up, 3).len(), 3);
}

#[test]
fn sessions_are_resumed_unless_proxy_ssl_session_reuse_is_off() {
    for protocol in ["TLSv1.2", "TLSv1.3"] {
        let up = origin(Origin::default());
        let server = start(
            &up,
            &format!("proxy_ssl_protocols {protocol};"),
            "location /on/ { proxy_pass https://UP/; }
             location /off/ { proxy_pass https://UP/; proxy_ssl_session_reuse off; }",
        );
        for _ in 0..3 {
            assert_eq!(get(&server, "/on/x").status, 200);
        }
        let seen = handshakes(&up, 3);
        let resumed: Vec<bool> = seen.iter().map(|h| h.resumed).collect();
        assert_eq!(resumed, [false, true, true], "{protocol}: {seen:?}");
        assert!(seen.iter().all(|h| h.protocol.as_deref() == Some(protocol)));
        for _ in 0..2 {
            assert_eq!(get(&server, "/off/x").status, 200);
        }
        let seen = handshakes(&up, 5);
        assert!(!seen[3].resumed && !seen[4].resumed, "{protocol}: {seen:?}");
    }
}

#[test]
fn a_resumed_session_is_verified_with_the_certificate_it_was_made_with() {
    let up = origin(Origin::default());
    let server = start(
        &up,
        &format!(
            "proxy_ssl_verify on; proxy_ssl_trusted_certificate {}; proxy_ssl_name localhost;",
            fixture("ca.crt")
        ),
        "location / { proxy_pass https://UP; }",
    );
    for _ in 0..3 {
        let r = get(&server, "/v");
        assert_eq!(r.status, 200, "{}", server.stderr());
    }
    let resumed: Vec<bool> = handshakes(&up, 3).iter().map(|h| h.resumed).collect();
    assert_eq!(resumed, [false, true, true]);
}

#[test]
fn proxy_ssl_verify_passes_with_the_right_ca_and_fails_in_nginx_words() {
    let leaf = origin(Origin::default());
    let chained = origin(Origin {
        cert: "chain",
        ..Origin::default()
    });
    let revoked = origin(Origin {
        cert: "revoked",
        ..Origin::default()
    });
    // Sessions are not reused here: nginx keeps one per peer for every
    // location, and a resumed session keeps the verification it had.
    let server = start(
        &leaf,
        &format!(
            "proxy_ssl_session_reuse off; proxy_ssl_verify on;
             proxy_ssl_trusted_certificate {}; proxy_ssl_name localhost;",
            fixture("ca.crt")
        ),
        &format!(
            "location /ok/ {{ proxy_pass https://UP/; }}
             location /wrong-ca/ {{ proxy_pass https://UP/; proxy_ssl_trusted_certificate {}; }}
             location /name/ {{ proxy_pass https://UP/; proxy_ssl_name example.com; }}
             location /address/ {{ proxy_pass https://UP/; proxy_ssl_name $proxy_host; }}
             location /depth0/ {{ proxy_pass https://{chained}/; proxy_ssl_verify_depth 0; }}
             location /depth1/ {{ proxy_pass https://{chained}/; }}
             location /revoked/ {{ proxy_pass https://{revoked}/; proxy_ssl_crl {}; }}
             location /not-checked/ {{ proxy_pass https://{revoked}/; }}
             location /off/ {{ proxy_pass https://UP/; proxy_ssl_verify off; proxy_ssl_name example.com; }}",
            fixture("other.crt"),
            fixture("ca.crl"),
            chained = chained.addr(),
            revoked = revoked.addr(),
        ),
    );
    for (path, status) in [
        ("/ok/", 200),
        ("/wrong-ca/", 502),
        ("/name/", 502),
        ("/address/", 502),
        ("/depth0/", 502),
        ("/depth1/", 200),
        ("/revoked/", 502),
        ("/not-checked/", 200),
        ("/off/", 200),
    ] {
        assert_eq!(get(&server, path).status, status, "{path}");
    }
    let failed = |path: &str, what: &str| {
        assert!(
            logged(
                &server,
                &[
                    "[error]",
                    what,
                    " while SSL handshaking to upstream, client: 127.0.0.1, server: localhost, ",
                    &format!("request: \"GET {path} HTTP/1.1\", upstream: \"https://"),
                ]
            ),
            "{path}: {what}:\n{}",
            server.stderr()
        );
    };
    failed(
        "/wrong-ca/",
        "upstream SSL certificate verify error: (21:unable to verify the first certificate)",
    );
    failed(
        "/name/",
        "upstream SSL certificate does not match \"example.com\"",
    );
    // An address is a name like another for X509_check_host: the
    // certificate's IP address does not count.
    failed(
        "/address/",
        &format!(
            "upstream SSL certificate does not match \"{}\"",
            leaf.addr().ip()
        ),
    );
    failed(
        "/depth0/",
        "upstream SSL certificate verify error: (20:unable to get local issuer certificate)",
    );
    failed(
        "/revoked/",
        "upstream SSL certificate verify error: (23:certificate revoked)",
    );
}

/// An upstream whose certificate is X.509 version 1 (what `openssl req
/// -x509` makes without extensions, as nginx's tests do), under a v1 root
/// with a v1 CRL: the handshake's signature is checked with its key, the
/// chain is judged as OpenSSL judges it, and its name is its common name.
#[test]
fn a_version_1_certificate_and_crl_are_judged_as_openssl_judges_them() {
    let v1 = origin(Origin {
        cert: "v1/leaf",
        ..Origin::default()
    });
    let server = start(
        &v1,
        &format!(
            "proxy_ssl_session_reuse off; proxy_ssl_verify on;
             proxy_ssl_trusted_certificate {}; proxy_ssl_name localhost;",
            fixture("v1/root.crt")
        ),
        &format!(
            "location /ok/ {{ proxy_pass https://UP/; }}
             location /crl/ {{ proxy_pass https://UP/; proxy_ssl_crl {}; }}
             location /revoked/ {{ proxy_pass https://UP/; proxy_ssl_crl {}; }}
             location /name/ {{ proxy_pass https://UP/; proxy_ssl_name example.com; }}
             location /off/ {{ proxy_pass https://UP/; proxy_ssl_verify off; }}",
            fixture("v1/root-empty.crl"),
            fixture("v1/root.crl"),
        ),
    );
    for (path, status) in [
        ("/ok/", 200),
        ("/crl/", 200),
        ("/revoked/", 502),
        ("/name/", 502),
        ("/off/", 200),
    ] {
        assert_eq!(get(&server, path).status, status, "{path}");
    }
    assert!(
        logged(
            &server,
            &["upstream SSL certificate verify error: (23:certificate revoked)"]
        ),
        "{}",
        server.stderr()
    );
}

#[test]
fn the_name_is_sent_only_with_proxy_ssl_server_name_on() {
    let up = origin(Origin::default());
    let server = start(
        &up,
        "upstream backend.test { server UP; }",
        "location /off/ { proxy_pass https://backend.test/; }
         location /on/ { proxy_pass https://backend.test/; proxy_ssl_server_name on; }
         location /named/ { proxy_pass https://backend.test/; proxy_ssl_server_name on;
             proxy_ssl_name $arg_n; }
         location /address/ { proxy_pass https://UP/; proxy_ssl_server_name on; }",
    );
    let cases = [
        ("/off/", None),
        ("/on/", Some("backend.test")),
        // The port goes: nginx strips it from any name.
        ("/named/?n=www.example.com:8443", Some("www.example.com")),
        // RFC 6066 names no address: none is sent.
        ("/named/?n=127.0.0.1", None),
        ("/address/", None),
    ];
    for (i, (path, sent)) in cases.iter().enumerate() {
        assert_eq!(get(&server, path).status, 200, "{path}");
        let seen = handshakes(&up, i + 1);
        assert_eq!(seen[i].server_name.as_deref(), *sent, "{path}");
    }
}

/// proxy_ssl_certificate_vars.t: names with variables are evaluated per
/// request (an empty certificate name sends none), an encrypted key is
/// opened with `proxy_ssl_password_file`, and each request's connection
/// sends the certificate it named.
#[test]
fn a_client_certificate_named_with_variables_is_loaded_per_request() {
    let up = origin(Origin {
        client_auth: true,
        ..Origin::default()
    });
    let dir = common::tls::fixtures();
    let server = start(
        &up,
        "",
        &format!(
            "location /var/ {{ proxy_pass https://UP/; proxy_ssl_session_reuse off;
                 proxy_ssl_certificate {dir}/$arg_cert.crt;
                 proxy_ssl_certificate_key {dir}/$arg_key.key;
                 proxy_ssl_password_file {dir}/password.txt; }}
             location /none/ {{ proxy_pass https://UP/; proxy_ssl_session_reuse off;
                 proxy_ssl_certificate $arg_cert; proxy_ssl_certificate_key $arg_cert; }}",
            dir = dir.display(),
        ),
    );
    for path in [
        "/var/?cert=client&key=client",
        "/var/?cert=client&key=client-enc",
        "/var/?cert=client-int-chain&key=client-int",
        "/var/?cert=client&key=client",
        "/none/",
    ] {
        assert_eq!(get(&server, path).status, 200, "{path}");
    }
    let seen = handshakes(&up, 5);
    let der = |name: &str| {
        CertificateDer::from_pem_file(fixture(name))
            .unwrap()
            .as_ref()
            .to_vec()
    };
    let sent: Vec<Option<Vec<u8>>> = seen.iter().map(|h| h.client_cert.clone()).collect();
    assert_eq!(
        sent,
        [
            Some(der("client.crt")),
            Some(der("client.crt")),
            Some(der("client-int.crt")),
            Some(der("client.crt")),
            None
        ]
    );
}

/// Issue 33: a client certificate named with variables that cannot be
/// loaded is the request's own failure, not the upstream's: nginx's
/// `ngx_http_upstream_ssl_init_connection` answers 500 and tries no next
/// server (nowait answered 502 and went on to the next one).
#[test]
fn a_client_certificate_that_cannot_be_loaded_is_a_500_and_no_next_upstream() {
    let first = origin(Origin {
        client_auth: true,
        ..Origin::default()
    });
    let second = origin(Origin {
        client_auth: true,
        ..Origin::default()
    });
    let dir = common::tls::fixtures();
    let text = conf(
        Some(&first),
        &format!(
            "upstream pair {{ server {}; server {}; }}",
            first.addr(),
            second.addr()
        ),
        &format!(
            "location / {{ proxy_pass https://pair; proxy_ssl_session_reuse off;
                 proxy_ssl_certificate {dir}/$arg_cert.crt;
                 proxy_ssl_certificate_key {dir}/$arg_cert.key; }}",
            dir = dir.display(),
        ),
    );
    let server = Server::tested(&text);
    assert_eq!(get(&server, "/?cert=missing").status, 500);
    assert!(
        logged(
            &server,
            &[
                "[error]",
                "cannot load certificate",
                "missing.crt",
                "while connecting to upstream",
            ]
        ),
        "{}",
        server.stderr()
    );
    // One connection was opened (the certificate is loaded for it, before
    // its handshake), and the next server was not tried.
    assert!(until(WAIT, || first.connections() + second.connections() >= 1));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!((first.connections(), second.connections()), (1, 0));
    // The peer was not marked failed (one failure takes it out for
    // `fail_timeout`): round robin goes on from it as from a success.
    for _ in 0..2 {
        assert_eq!(get(&server, "/?cert=client").status, 200);
    }
    assert_eq!((first.connections(), second.connections()), (2, 1));
}

#[test]
fn a_client_certificate_goes_to_an_origin_that_asks_for_one() {
    let up = origin(Origin {
        client_auth: true,
        ..Origin::default()
    });
    let server = start(
        &up,
        "",
        &format!(
            "location /with/ {{ proxy_pass https://UP/; proxy_ssl_certificate {};
                 proxy_ssl_certificate_key {}; proxy_ssl_session_reuse off; }}
             location /without/ {{ proxy_pass https://UP/; proxy_ssl_session_reuse off; }}",
            fixture("client.crt"),
            fixture("client.key"),
        ),
    );
    assert_eq!(get(&server, "/with/").status, 200);
    assert_eq!(get(&server, "/without/").status, 200);
    let seen = handshakes(&up, 2);
    let client = CertificateDer::from_pem_file(fixture("client.crt")).unwrap();
    assert_eq!(seen[0].client_cert.as_deref(), Some(client.as_ref()));
    assert_eq!(seen[1].client_cert, None);
}

#[test]
fn a_failed_handshake_is_an_error_for_proxy_next_upstream() {
    // A server that answers the ClientHello in plain HTTP: what it sends
    // is no TLS record. (It waits for the hello first: Debian's nginx
    // says "upstream prematurely sent response" of an answer that comes
    // before its handshake has begun, an `error` all the same.)
    let plain = Upstream::start(|c| {
        c.wait_closed(Duration::from_millis(200));
        c.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        c.wait_closed(WAIT);
    });
    let up = origin(Origin::default());
    let text = conf(
        Some(&up),
        &format!(
            "upstream pair {{ server {}; server UP; }}
             upstream alone {{ server {}; }}",
            plain.addr(),
            plain.addr()
        ),
        "location / { proxy_pass https://pair; add_header X-Up $upstream_addr always; }
         location /alone/ { proxy_pass https://alone; }",
    )
    // The warning a failure that takes a server out writes.
    .replace("error_log stderr;", "error_log stderr warn;");
    let server = Server::tested(&text);
    let r = get(&server, "/x");
    assert_eq!((r.status, body(&r)), (200, "/x".to_string()));
    assert_eq!(
        r.header("X-Up").as_deref(),
        Some(format!("{}, {}", plain.addr(), up.addr()).as_str())
    );
    assert!(
        logged(
            &server,
            &[
                "[error]",
                "SSL_do_handshake() failed (SSL: error:0A00010B:SSL routines::wrong version number) while SSL handshaking to upstream",
                &format!("upstream: \"https://{}/x\"", plain.addr()),
            ]
        ),
        "{}",
        server.stderr()
    );
    assert!(
        logged(
            &server,
            &[
                "[warn]",
                "upstream server temporarily disabled while SSL handshaking to upstream"
            ]
        ),
        "{}",
        server.stderr()
    );
    // Without a next server the failure is the answer.
    assert_eq!(get(&server, "/alone/").status, 502);
}

#[test]
fn chunked_and_large_bodies_come_whole_over_tls() {
    let big = pattern(1 << 20);
    let served = big.clone();
    let up = Upstream::start_tls(tls::origin(&Origin::default()), move |c| {
        while let Some(req) = c.read_request() {
            let ok = if req.target() == "/chunked" {
                let mut out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
                for piece in served.chunks(100_000).take(5) {
                    out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                    out.extend_from_slice(piece);
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"0\r\n\r\n");
                c.write(&out)
            } else {
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
                    served.len()
                );
                c.write(head.as_bytes()) && c.write_slowly(&served, 64 * 1024, Duration::ZERO)
            };
            if !ok || !req.keep_alive() {
                return;
            }
        }
    });
    let server = start(
        &up,
        "upstream ka { server UP; keepalive 2; }",
        "location / { proxy_pass https://ka; proxy_http_version 1.1;
             proxy_set_header Connection \"\"; }
         location /unbuffered/ { proxy_pass https://ka/; proxy_http_version 1.1;
             proxy_set_header Connection \"\"; proxy_buffering off; }",
    );
    for prefix in ["", "/unbuffered"] {
        let r = get(&server, &format!("{prefix}/big"));
        assert_eq!(r.status, 200, "{prefix}");
        assert!(
            r.body == big,
            "{prefix}: {} bytes, not the 1 MiB sent",
            r.body.len()
        );
        let r = get(&server, &format!("{prefix}/chunked"));
        assert_eq!(r.status, 200, "{prefix}");
        assert!(r.body == big[..500_000], "{prefix}: {} bytes", r.body.len());
    }
    // All four over the one kept-alive connection.
    assert_eq!(up.connections(), 1);
}

#[test]
fn a_websocket_upgrade_relays_bytes_over_tls() {
    let up = Upstream::start_tls(tls::origin(&Origin::default()), |c| {
        let Some(req) = c.read_request() else { return };
        assert_eq!(req.header("Upgrade").as_deref(), Some("websocket"));
        c.write(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
              Connection: Upgrade\r\n\r\nhi",
        );
        loop {
            let closed = c.wait_closed(Duration::from_millis(50));
            let got = c.take_pending();
            if !got.is_empty() && !c.write(&got.to_ascii_uppercase()) {
                return;
            }
            if closed {
                return;
            }
        }
    });
    let server = start(
        &up,
        "",
        "location / { proxy_pass https://UP; proxy_http_version 1.1;
             proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection upgrade; }",
    );
    let mut c = Conn::open(server.port());
    c.send(
        b"GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n\
          Connection: Upgrade\r\n\r\n",
    );
    let r = c.next_response("GET").expect("the 101");
    assert_eq!(r.status, 101);
    let wait_for = |c: &mut Conn, want: &[u8]| {
        until(WAIT, || {
            c.quiet_for(Duration::from_millis(20));
            c.pending().ends_with(want)
        })
    };
    assert!(wait_for(&mut c, b"hi"), "{:?}", c.pending());
    c.send(b"ping");
    assert!(wait_for(&mut c, b"hiPING"), "{:?}", c.pending());
    // A message larger than a record, both ways.
    let big = vec![b'x'; 100_000];
    c.send(&big);
    let want: Vec<u8> = [&b"hiPING"[..], &vec![b'X'; 100_000]].concat();
    assert!(wait_for(&mut c, &want), "{} bytes", c.pending().len());
}

#[test]
fn a_silent_upstream_times_the_handshake_out() {
    // It takes the connection and says nothing.
    let silent = Upstream::start(|c| {
        c.wait_closed(WAIT);
    });
    let up = origin(Origin::default());
    let server = start(
        &up,
        &format!(
            "upstream pair {{ server {}; server UP; }}
             upstream alone {{ server {}; }}",
            silent.addr(),
            silent.addr()
        ),
        "proxy_connect_timeout 300ms;
         location / { proxy_pass https://pair; add_header X-Up $upstream_addr always; }
         location /alone/ { proxy_pass https://alone; }
         location /error-only/ { proxy_pass https://pair; proxy_next_upstream error; }",
    );
    let r = get(&server, "/x");
    assert_eq!((r.status, body(&r)), (200, "/x".to_string()));
    assert_eq!(
        r.header("X-Up").as_deref(),
        Some(format!("{}, {}", silent.addr(), up.addr()).as_str())
    );
    assert!(
        logged(
            &server,
            &[
                "[error]",
                "upstream timed out (110: Connection timed out) while SSL handshaking to upstream",
                &format!("upstream: \"https://{}/x\"", silent.addr()),
            ]
        ),
        "{}",
        server.stderr()
    );
    // A timeout is `timeout`, not `error`: 504.
    assert_eq!(get(&server, "/alone/").status, 504);
}

#[test]
fn urls_with_variables_go_over_tls() {
    let up = origin(Origin::default());
    let server = start(
        &up,
        "upstream backend.test { server UP; }",
        "location /address/ { set $u UP; proxy_pass https://$u$request_uri;
             proxy_ssl_server_name on; }
         location /group/ { proxy_pass https://$arg_g$request_uri; proxy_ssl_server_name on; }
         location /plain/ { proxy_pass http://$arg_h$request_uri; }",
    );
    let r = get(&server, "/address/x");
    assert_eq!((r.status, body(&r)), (200, "/address/x".to_string()));
    let r = get(&server, "/group/y?g=backend.test");
    assert_eq!(
        (r.status, body(&r)),
        (200, "/group/y?g=backend.test".to_string())
    );
    let seen = handshakes(&up, 2);
    // An address is never sent; a group's host is.
    assert_eq!(seen[0].server_name, None);
    assert_eq!(seen[1].server_name.as_deref(), Some("backend.test"));
    // The same location speaks plain HTTP to an `http://` URL.
    let plain = Upstream::fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nplain");
    let r = get(&server, &format!("/plain/?h={}", plain.addr()));
    assert_eq!((r.status, body(&r)), (200, "plain".to_string()));
}

/// nowait only: the process keeps one keep-alive cache across
/// generations, TLS connections with their TLS state, so one made before
/// a reload serves requests after it when its TLS is configured alike.
#[test]
fn kept_alive_tls_connections_survive_a_reload() {
    let up = origin(Origin::default());
    let location = |generation: u32| {
        format!(
            "location / {{ proxy_pass https://u; proxy_http_version 1.1;
                 proxy_set_header Connection \"\"; add_header X-Gen {generation}; }}
             location /other-name/ {{ proxy_pass https://u; proxy_http_version 1.1;
                 proxy_set_header Connection \"\"; proxy_ssl_server_name on;
                 proxy_ssl_name other.test; }}"
        )
    };
    let http = "upstream u { server UP; keepalive 8; }";
    let server = Server::nowait(&conf(Some(&up), http, &location(1)));
    assert_eq!(get(&server, "/").header("X-Gen").as_deref(), Some("1"));
    assert_eq!(up.connections(), 1);
    server.write_conf(&conf(Some(&up), http, &location(2)));
    server.signal("HUP");
    assert!(
        until(WAIT, || get(&server, "/").header("X-Gen").as_deref()
            == Some("2")),
        "the reload did not take: {}",
        server.stderr()
    );
    for _ in 0..3 {
        assert_eq!(get(&server, "/").status, 200);
    }
    assert_eq!(up.connections(), 1, "the connection was not reused");
    assert_eq!(handshakes(&up, 1).len(), 1);
    // Another name is another connection: the cache keys by TLS.
    assert_eq!(get(&server, "/other-name/").status, 200);
    assert_eq!(up.connections(), 2);
    let seen = handshakes(&up, 2);
    assert_eq!(seen[1].server_name.as_deref(), Some("other.test"));
}

#[test]
fn an_idle_connection_the_upstream_closed_is_not_reused() {
    // Each connection serves one request and closes (TLS close_notify,
    // then FIN) without saying so in its response.
    let closed = Arc::new(AtomicUsize::new(0));
    let count = closed.clone();
    let up = Upstream::start_tls(tls::origin(&Origin::default()), move |c| {
        if c.read_request().is_some() {
            c.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
            c.close();
            count.fetch_add(1, Ordering::SeqCst);
        }
    });
    let server = start(
        &up,
        "upstream u { server UP; keepalive 8; }",
        "location / { proxy_pass https://u; proxy_http_version 1.1;
             proxy_set_header Connection \"\"; }",
    );
    for i in 0..3 {
        let r = get(&server, "/");
        assert_eq!(
            (r.status, body(&r).as_str()),
            (200, "ok"),
            "{}",
            server.stderr()
        );
        // The close is on the idle connection before the next request.
        assert!(until(WAIT, || closed.load(Ordering::SeqCst) == i + 1));
    }
    assert_eq!(up.connections(), 3);
    // Each close was seen while the connection was idle: no request went
    // to a closed one (which would fail, be logged, and be tried again).
    assert!(!server.stderr().contains("[error]"), "{}", server.stderr());
}
