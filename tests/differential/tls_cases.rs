//! The cases of `differential_tls.rs`: configurations (the inside of
//! `http {}`, with `{port}`, `{port1}` … `{port3}`, `{fix}` for the
//! fixtures' folder, `{root}` for the document root, `{upstream}` for a
//! recording echo upstream) and the probes run against them, in order;
//! and the misconfigurations `-t` is asked about.

use crate::tls_probes::{Curl, SClient};

/// One differential case.
pub struct Case {
    /// Its name (`tls-NAME` in known-differences.txt).
    pub name: &'static str,
    /// Main-context directives.
    pub main: &'static str,
    /// The inside of `http {}`.
    pub http: String,
    /// What the clients do, in order.
    pub probes: Vec<Probe>,
    /// Whether it needs the echo upstream (`{upstream}`).
    pub upstream: bool,
}

/// One client action.
pub enum Probe {
    /// `openssl s_client`.
    S(SClient),
    /// `curl`.
    Curl(Curl),
    /// Plain TCP bytes to a port (index).
    Raw(usize, String),
    /// A rustls client's view of the records of `GET path`.
    Records {
        /// The port's index.
        port: usize,
        /// TLS 1.3 (else 1.2).
        tls13: bool,
        /// What is fetched.
        path: &'static str,
    },
    /// How the server ends a connection the client ends.
    ClientClose {
        /// The port's index.
        port: usize,
        /// With close_notify (else a bare shutdown of the client's side).
        notify: bool,
    },
    /// The access log's lines since the last look (at least this many).
    Log(usize),
    /// A reload of the same configuration.
    Reload,
    /// A pause, in seconds (for session expiry).
    Sleep(u64),
    /// The probe, against a second instance of the same configuration.
    Twin(Box<Probe>),
}

/// The localhost RSA certificate.
const RSA: &str =
    "ssl_certificate {fix}/localhost-rsa.crt; ssl_certificate_key {fix}/localhost-rsa.key;";
/// The localhost ECDSA certificate.
const EC: &str =
    "ssl_certificate {fix}/localhost-ec.crt; ssl_certificate_key {fix}/localhost-ec.key;";
/// Both protocols nowait speaks (nginx 1.22's default lacks TLSv1.3).
const BOTH: &str = "ssl_protocols TLSv1.2 TLSv1.3;";
/// A location that says what the request saw.
const VARS: &str = "location / { return 200 \"$server_name|$ssl_server_name|$host|$scheme|$https|$server_port|$ssl_protocol\\n\"; }";

/// `s_client` on port `port` with `args` (space-separated), sending an
/// HTTP/1.0 request: the client then waits for the server to close, and
/// TLS 1.3 tickets, sent after the handshake, have arrived by then
/// (`-reconnect` sends nothing: it only reconnects).
fn s(port: usize, args: &str) -> Probe {
    let input = if args.contains("-reconnect") {
        Vec::new()
    } else {
        b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n".to_vec()
    };
    Probe::S(SClient {
        port,
        args: args.split_whitespace().map(str::to_string).collect(),
        input,
    })
}

/// `s_client` sending `request` (`\n` become CRLF).
fn sr(port: usize, args: &str, request: &str) -> Probe {
    Probe::S(SClient {
        port,
        args: args.split_whitespace().map(str::to_string).collect(),
        input: request.replace('\n', "\r\n").into_bytes(),
    })
}

/// A closing `GET path` for `host`.
fn get(path: &str, host: &str) -> String {
    format!("GET {path} HTTP/1.1\nHost: {host}\nConnection: close\n\n")
}

/// `curl https://host:PORT/path` with `args`.
fn curl(port: usize, host: &str, path: &str, args: &str) -> Probe {
    Probe::Curl(Curl {
        port,
        host: host.into(),
        path: path.into(),
        args: args.split_whitespace().map(str::to_string).collect(),
        body: true,
    })
}

/// [`curl`] whose body is not compared (only its length).
fn curl_length(port: usize, host: &str, path: &str, args: &str) -> Probe {
    match curl(port, host, path, args) {
        Probe::Curl(c) => Probe::Curl(Curl { body: false, ..c }),
        other => other,
    }
}

fn case(name: &'static str, http: String, probes: Vec<Probe>) -> Case {
    Case {
        name,
        main: "",
        http,
        probes,
        upstream: false,
    }
}

/// A server on `{port}` with TLS and `body`.
fn server(body: &str) -> String {
    format!(
        "server {{ listen 127.0.0.1:{{port}} ssl; server_name localhost; root {{root}}; {body} }}"
    )
}

/// The session probes: a new session saved, then offered, in TLS 1.2
/// and 1.3, then `-reconnect` in TLS 1.2; and the log of it all.
fn resumption(port: usize) -> Vec<Probe> {
    let mut p = Vec::new();
    for v in ["-tls1_2", "-tls1_3"] {
        p.push(sr(
            port,
            &format!("-servername localhost {v} -sess_out {{sess}}"),
            &get("/", "localhost"),
        ));
        p.push(sr(
            port,
            &format!("-servername localhost {v} -sess_in {{sess}}"),
            &get("/", "localhost"),
        ));
    }
    p.push(s(port, "-servername localhost -tls1_2 -reconnect"));
    p.push(Probe::Log(4));
    p
}

/// Every live case.
pub fn cases() -> Vec<Case> {
    let mut all = vec![
        case(
            "sni",
            format!(
                "server {{ listen 127.0.0.1:{{port}} ssl; server_name localhost; {RSA} {VARS} }}
                 server {{ listen 127.0.0.1:{{port}} ssl; server_name example.com www.example.com; ssl_certificate {{fix}}/example.crt; ssl_certificate_key {{fix}}/example.key; {VARS} }}
                 server {{ listen 127.0.0.1:{{port}} ssl; server_name *.wild.test; ssl_certificate {{fix}}/other.crt; ssl_certificate_key {{fix}}/other.key; {VARS} }}
                 server {{ listen 127.0.0.1:{{port}} ssl; server_name .dot.test; {EC} {VARS} }}
                 server {{ listen 127.0.0.1:{{port}} ssl; server_name ~^re\\d+\\.test$; ssl_certificate {{fix}}/expired.crt; ssl_certificate_key {{fix}}/expired.key; {VARS} }}"
            ),
            vec![
                sr(0, "-servername localhost", &get("/", "localhost")),
                sr(0, "-servername www.example.com", &get("/", "www.example.com")),
                sr(0, "-servername EXAMPLE.com", &get("/", "example.com")),
                sr(0, "-servername a.wild.test", &get("/", "a.wild.test")),
                sr(0, "-servername dot.test", &get("/", "dot.test")),
                sr(0, "-servername b.dot.test", &get("/", "b.dot.test")),
                sr(0, "-servername re42.test", &get("/", "re42.test")),
                sr(0, "-servername unknown.test", &get("/", "unknown.test")),
                sr(0, "-noservername", &get("/", "localhost")),
                sr(0, "-servername 127.0.0.1", &get("/", "127.0.0.1")),
                // The Host picks the server, whatever the SNI said.
                sr(0, "-servername www.example.com", &get("/", "localhost")),
                sr(0, "-servername www.example.com", &get("/", "nowhere.test")),
                sr(0, "-servername www.example.com", "GET / HTTP/1.0\n\n"),
                curl(0, "127.0.0.1", "/", ""),
                curl(0, "www.example.com", "/", ""),
                Probe::Log(15),
            ],
        ),
        case(
            "sni-default-server",
            format!(
                "server {{ listen 127.0.0.1:{{port}} ssl; server_name localhost; {RSA} {VARS} }}
                 server {{ listen 127.0.0.1:{{port}} ssl default_server; server_name other.test; ssl_certificate {{fix}}/other.crt; ssl_certificate_key {{fix}}/other.key; {VARS} }}"
            ),
            vec![
                sr(0, "-noservername", "GET / HTTP/1.0\n\n"),
                sr(0, "-servername unknown.test", &get("/", "unknown.test")),
                sr(0, "-servername localhost", &get("/", "localhost")),
            ],
        ),
        case(
            "sigalgs",
            server(&format!("{RSA} {EC} {BOTH} {VARS}")),
            vec![
                s(0, "-servername localhost"),
                s(0, "-servername localhost -sigalgs RSA-PSS+SHA256"),
                s(0, "-servername localhost -sigalgs ECDSA+SHA256"),
                s(0, "-servername localhost -sigalgs ECDSA+SHA384:RSA-PSS+SHA256"),
                s(0, "-servername localhost -tls1_2 -sigalgs RSA+SHA256"),
                s(0, "-servername localhost -tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256"),
                s(0, "-servername localhost -tls1_2 -cipher ECDHE-ECDSA-AES128-GCM-SHA256"),
                s(0, "-servername localhost -tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES128-GCM-SHA256"),
                s(0, "-servername localhost -sigalgs ed25519"),
            ],
        ),
        case(
            "sigalgs-ecdsa-first",
            server(&format!("{EC} {RSA} {BOTH} {VARS}")),
            vec![
                s(0, "-servername localhost"),
                s(0, "-servername localhost -tls1_2"),
                s(0, "-servername localhost -sigalgs RSA-PSS+SHA256:ECDSA+SHA256"),
            ],
        ),
        case(
            "protocols-default",
            server(&format!("{RSA} {VARS}")),
            vec![
                sr(0, "-servername localhost", &get("/", "localhost")),
                s(0, "-servername localhost -tls1_3"),
                s(0, "-servername localhost -tls1_1"),
                curl(0, "localhost", "/", ""),
                curl(0, "localhost", "/", "--tlsv1.3"),
            ],
        ),
        case(
            "protocols-tls12",
            server(&format!("{RSA} ssl_protocols TLSv1.2; {VARS}")),
            vec![s(0, "-servername localhost"), s(0, "-servername localhost -tls1_3")],
        ),
        case(
            "protocols-tls13",
            server(&format!("{RSA} ssl_protocols TLSv1.3; {VARS}")),
            vec![s(0, "-servername localhost"), s(0, "-servername localhost -tls1_2")],
        ),
        case(
            "protocols-both",
            server(&format!("{RSA} {BOTH} {VARS}")),
            vec![
                sr(0, "-servername localhost", &get("/", "localhost")),
                s(0, "-servername localhost -tls1_2"),
                curl(0, "localhost", "/", "--tls-max 1.2"),
            ],
        ),
        case(
            "protocols-sni",
            format!(
                "server {{ listen 127.0.0.1:{{port}} ssl; server_name localhost; {RSA} ssl_protocols TLSv1.2; {VARS} }}
                 server {{ listen 127.0.0.1:{{port}} ssl; server_name www.example.com; ssl_certificate {{fix}}/example.crt; ssl_certificate_key {{fix}}/example.key; {BOTH} {VARS} }}"
            ),
            vec![
                s(0, "-servername localhost"),
                s(0, "-servername www.example.com"),
            ],
        ),
        case(
            "ciphers-client-order",
            server(&format!(
                "{RSA} {BOTH} ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES256-GCM-SHA384; {VARS}"
            )),
            vec![
                s(0, "-servername localhost -tls1_2"),
                s(0, "-servername localhost -tls1_2 -cipher ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-GCM-SHA256"),
                s(0, "-servername localhost -tls1_3 -ciphersuites TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256"),
                s(0, "-servername localhost -tls1_2 -cipher ECDHE-ECDSA-AES128-GCM-SHA256"),
            ],
        ),
        case(
            "ciphers-server-order",
            server(&format!(
                "{RSA} {BOTH} ssl_prefer_server_ciphers on; ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES256-GCM-SHA384; {VARS}"
            )),
            vec![
                s(0, "-servername localhost -tls1_2"),
                s(0, "-servername localhost -tls1_2 -cipher ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-GCM-SHA256"),
                s(0, "-servername localhost -tls1_3 -ciphersuites TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256"),
            ],
        ),
        case(
            "ciphers-tls13-command",
            server(&format!(
                "{RSA} {BOTH} ssl_conf_command Ciphersuites TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256; {VARS}"
            )),
            vec![
                s(0, "-servername localhost"),
                s(0, "-servername localhost -ciphersuites TLS_AES_256_GCM_SHA384"),
                s(0, "-servername localhost -ciphersuites TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256"),
            ],
        ),
        case(
            "curves",
            server(&format!("{RSA} {BOTH} ssl_ecdh_curve secp384r1; {VARS}")),
            vec![
                sr(0, "-servername localhost", &get("/", "localhost")),
                s(0, "-servername localhost -tls1_2"),
                s(0, "-servername localhost -groups X25519"),
                s(0, "-servername localhost -tls1_2 -groups X25519"),
                s(0, "-servername localhost -groups X25519:secp384r1"),
            ],
        ),
        case(
            "curves-order",
            server(&format!("{RSA} {BOTH} ssl_ecdh_curve X25519:prime256v1; {VARS}")),
            vec![
                s(0, "-servername localhost -groups prime256v1:X25519"),
                s(0, "-servername localhost -tls1_2 -groups prime256v1:X25519"),
                s(0, "-servername localhost -groups secp384r1:prime256v1"),
            ],
        ),
        case(
            "curves-order-server",
            server(&format!(
                "{RSA} {BOTH} ssl_ecdh_curve X25519:prime256v1; ssl_prefer_server_ciphers on; {VARS}"
            )),
            vec![
                s(0, "-servername localhost -groups prime256v1:X25519"),
                s(0, "-servername localhost -tls1_2 -groups prime256v1:X25519"),
            ],
        ),
        case(
            "alpn",
            server(&format!("{RSA} {BOTH} location / {{ return 200 \"[$ssl_alpn_protocol]\\n\"; }}")),
            vec![
                sr(0, "-servername localhost -alpn h2", &get("/", "localhost")),
                sr(0, "-servername localhost -alpn http/1.1", &get("/", "localhost")),
                sr(0, "-servername localhost -alpn h2,http/1.1", &get("/", "localhost")),
                sr(0, "-servername localhost -alpn http/1.0,http/1.1", &get("/", "localhost")),
                sr(0, "-servername localhost -alpn http/1.0", "GET / HTTP/1.0\n\n"),
                sr(0, "-servername localhost", &get("/", "localhost")),
                curl(0, "localhost", "/", "--http2"),
                curl(0, "localhost", "/", "--http1.1"),
                Probe::Log(7),
            ],
        ),
    ];
    // Session resumption under each session cache, with and without
    // tickets.
    for (name, settings) in [
        ("resume-default", ""),
        ("resume-cache-off", "ssl_session_cache off;"),
        (
            "resume-cache-off-no-tickets",
            "ssl_session_cache off; ssl_session_tickets off;",
        ),
        (
            "resume-cache-none-no-tickets",
            "ssl_session_cache none; ssl_session_tickets off;",
        ),
        (
            "resume-builtin-no-tickets",
            "ssl_session_cache builtin:1000; ssl_session_tickets off;",
        ),
        (
            "resume-shared-no-tickets",
            "ssl_session_cache shared:S:1m; ssl_session_tickets off;",
        ),
        (
            "resume-shared-tickets",
            "ssl_session_cache builtin shared:S:1m;",
        ),
    ] {
        all.push(case(
            name,
            server(&format!("{RSA} {BOTH} {settings} {VARS}")),
            resumption(0),
        ));
    }
    all.extend([
        case(
            "ticket-key-two-servers",
            format!(
                "ssl_session_ticket_key {{fix}}/ticket80.key; {BOTH}
                 server {{ listen 127.0.0.1:{{port}} ssl; server_name localhost; {RSA} {VARS} }}
                 server {{ listen 127.0.0.1:{{port1}} ssl; server_name localhost; {RSA} {VARS} }}
                 server {{ listen 127.0.0.1:{{port2}} ssl; server_name localhost; {EC} {VARS} }}"
            ),
            vec![
                s(0, "-servername localhost -tls1_2 -sess_out {sess}"),
                s(1, "-servername localhost -tls1_2 -sess_in {sess}"),
                s(2, "-servername localhost -tls1_2 -sess_in {sess}"),
                s(0, "-servername localhost -tls1_3 -sess_out {sess}"),
                s(1, "-servername localhost -tls1_3 -sess_in {sess}"),
                s(2, "-servername localhost -tls1_3 -sess_in {sess}"),
            ],
        ),
        case(
            "ticket-key-rotation",
            format!(
                "{BOTH}
                 server {{ listen 127.0.0.1:{{port}} ssl; server_name localhost; {RSA} ssl_session_ticket_key {{fix}}/ticket80.key; {VARS} }}
                 server {{ listen 127.0.0.1:{{port1}} ssl; server_name localhost; {RSA} ssl_session_ticket_key {{fix}}/ticket80b.key; ssl_session_ticket_key {{fix}}/ticket80.key; {VARS} }}"
            ),
            vec![
                s(0, "-servername localhost -tls1_3 -sess_out {sess}"),
                s(1, "-servername localhost -tls1_3 -sess_in {sess}"),
                s(1, "-servername localhost -tls1_3 -sess_out {sess}"),
                s(0, "-servername localhost -tls1_3 -sess_in {sess}"),
                s(1, "-servername localhost -tls1_2 -sess_out {sess}"),
                s(1, "-servername localhost -tls1_2 -sess_in {sess}"),
                s(0, "-servername localhost -tls1_2 -sess_in {sess}"),
            ],
        ),
        case(
            "ticket-key-two-instances",
            server(&format!("{RSA} {BOTH} ssl_session_ticket_key {{fix}}/ticket48.key; {VARS}")),
            vec![
                s(0, "-servername localhost -tls1_2 -sess_out {sess}"),
                Probe::Twin(Box::new(s(0, "-servername localhost -tls1_2 -sess_in {sess}"))),
                s(0, "-servername localhost -tls1_3 -sess_out {sess}"),
                Probe::Twin(Box::new(s(0, "-servername localhost -tls1_3 -sess_in {sess}"))),
            ],
        ),
        Case {
            main: "worker_processes 4;",
            ..case(
                "ticket-key-workers",
                server(&format!("{RSA} {BOTH} ssl_session_ticket_key {{fix}}/ticket80.key; {VARS}")),
                vec![
                    s(0, "-servername localhost -tls1_3 -sess_out {sess}"),
                    s(0, "-servername localhost -tls1_3 -sess_in {sess}"),
                    s(0, "-servername localhost -tls1_3 -sess_in {sess}"),
                    s(0, "-servername localhost -tls1_3 -sess_in {sess}"),
                    s(0, "-servername localhost -tls1_2 -reconnect"),
                ],
            )
        },
        case(
            "ticket-key-reload",
            server(&format!("{RSA} {BOTH} ssl_session_ticket_key {{fix}}/ticket80.key; {VARS}")),
            vec![
                s(0, "-servername localhost -tls1_3 -sess_out {sess}"),
                Probe::Reload,
                s(0, "-servername localhost -tls1_3 -sess_in {sess}"),
                s(0, "-servername localhost -tls1_2 -sess_out {sess}"),
                Probe::Reload,
                s(0, "-servername localhost -tls1_2 -sess_in {sess}"),
            ],
        ),
        case(
            "tickets-reload-without-key",
            server(&format!("{RSA} {BOTH} {VARS}")),
            vec![
                s(0, "-servername localhost -tls1_3 -sess_out {sess}"),
                Probe::Reload,
                s(0, "-servername localhost -tls1_3 -sess_in {sess}"),
            ],
        ),
        case(
            "cache-reload",
            server(&format!(
                "{RSA} {BOTH} ssl_session_cache shared:S:1m; ssl_session_tickets off; {VARS}"
            )),
            vec![
                s(0, "-servername localhost -tls1_2 -sess_out {sess}"),
                Probe::Reload,
                s(0, "-servername localhost -tls1_2 -sess_in {sess}"),
            ],
        ),
        case(
            "session-timeout",
            format!(
                "{BOTH}
                 server {{ listen 127.0.0.1:{{port}} ssl; server_name localhost; {RSA} ssl_session_timeout 1s; {VARS} }}
                 server {{ listen 127.0.0.1:{{port1}} ssl; server_name localhost; {RSA} ssl_session_timeout 1s; ssl_session_cache shared:T:1m; ssl_session_tickets off; {VARS} }}"
            ),
            vec![
                s(0, "-servername localhost -tls1_3 -sess_out {sess}"),
                Probe::Sleep(3),
                s(0, "-servername localhost -tls1_3 -sess_in {sess}"),
                s(1, "-servername localhost -tls1_2 -sess_out {sess}"),
                Probe::Sleep(3),
                s(1, "-servername localhost -tls1_2 -sess_in {sess}"),
            ],
        ),
        case(
            "log-variables",
            format!(
                "server {{ listen 127.0.0.1:{{port}} ssl; listen 127.0.0.1:{{port1}}; server_name localhost; {RSA} {BOTH} ssl_session_cache shared:L:1m; root {{root}}; }}"
            ),
            vec![
                sr(0, "-servername localhost", &get("/index.html?a=1", "localhost")),
                sr(0, "-servername localhost -tls1_2 -curves prime256v1:secp384r1", &get("/index.html", "localhost")),
                sr(0, "-noservername -tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256", "GET / HTTP/1.0\n\n"),
                sr(0, "-servername localhost -tls1_3 -ciphersuites TLS_CHACHA20_POLY1305_SHA256 -alpn http/1.1", &get("/", "localhost")),
                curl(0, "localhost", "/index.html", ""),
                Probe::Raw(1, "GET /index.html HTTP/1.0\r\n\r\n".into()),
                Probe::Log(6),
            ],
        ),
        case(
            "plain-http-to-tls-port",
            format!(
                "server {{ listen 127.0.0.1:{{port}} ssl; server_name localhost; {RSA} {VARS} }}
                 server {{ listen 127.0.0.1:{{port}} ssl; server_name redirect.test; {RSA} error_page 497 https://$host:$server_port$request_uri; }}
                 server {{ listen 127.0.0.1:{{port}} ssl; server_name moved.test; {RSA} error_page 497 =301 https://$host$request_uri; }}
                 server {{ listen 127.0.0.1:{{port}} ssl; server_name page.test; {RSA} root {{root}}; error_page 497 /index.html; }}
                 server {{ listen 127.0.0.1:{{port}} ssl; server_name ok.test; {RSA} root {{root}}; error_page 497 =200 /index.html; }}"
            ),
            vec![
                Probe::Raw(0, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".into()),
                Probe::Raw(0, "GET /x?a=b HTTP/1.1\r\nHost: redirect.test\r\n\r\nGET /y HTTP/1.1\r\nHost: redirect.test\r\n\r\n".into()),
                Probe::Raw(0, "GET /x HTTP/1.1\r\nHost: moved.test\r\n\r\n".into()),
                Probe::Raw(0, "GET /x HTTP/1.1\r\nHost: page.test\r\n\r\n".into()),
                Probe::Raw(0, "GET /x HTTP/1.1\r\nHost: ok.test\r\n\r\n".into()),
                Probe::Raw(0, "HEAD / HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n\r\n".into()),
                Probe::Raw(0, "GET / HTTP/1.0\r\n\r\n".into()),
                Probe::Raw(0, "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nabcde".into()),
                Probe::Raw(0, "\r\n".into()),
                Probe::Log(8),
            ],
        ),
        case(
            "reject-handshake",
            format!(
                "server {{ listen 127.0.0.1:{{port}} ssl; server_name localhost; {RSA} {BOTH} {VARS} }}
                 server {{ listen 127.0.0.1:{{port}} ssl; server_name reject.test; ssl_reject_handshake on; }}"
            ),
            vec![
                s(0, "-servername reject.test"),
                s(0, "-servername reject.test -tls1_2"),
                s(0, "-servername localhost"),
                s(0, "-noservername"),
                curl(0, "reject.test", "/", ""),
            ],
        ),
        case(
            "reject-handshake-default",
            format!(
                "{BOTH}
                 server {{ listen 127.0.0.1:{{port}} ssl; ssl_reject_handshake on; }}
                 server {{ listen 127.0.0.1:{{port}} ssl; server_name localhost; {RSA} {VARS} }}"
            ),
            vec![
                s(0, "-noservername"),
                s(0, "-servername unknown.test"),
                s(0, "-servername localhost"),
                s(0, "-servername localhost -tls1_2"),
            ],
        ),
        case(
            "ssl-and-plain-listen",
            format!(
                "server {{ listen 127.0.0.1:{{port}} ssl; listen 127.0.0.1:{{port1}}; server_name localhost; {RSA} {VARS} }}"
            ),
            vec![
                sr(0, "-servername localhost", &get("/", "localhost")),
                Probe::Raw(1, "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".into()),
                curl(0, "localhost", "/", ""),
                s(1, "-servername localhost"),
            ],
        ),
        case(
            "ssl-on",
            format!("server {{ listen 127.0.0.1:{{port}}; ssl on; server_name localhost; {RSA} {VARS} }}"),
            vec![
                sr(0, "-servername localhost", &get("/", "localhost")),
                Probe::Raw(0, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".into()),
            ],
        ),
        case(
            "buffer-size",
            format!(
                "{BOTH}
                 server {{ listen 127.0.0.1:{{port}} ssl; server_name localhost; {RSA} root {{root}}; }}
                 server {{ listen 127.0.0.1:{{port1}} ssl; server_name localhost; {RSA} root {{root}}; ssl_buffer_size 4k; }}
                 server {{ listen 127.0.0.1:{{port2}} ssl; server_name localhost; {RSA} root {{root}}; ssl_buffer_size 100; }}"
            ),
            vec![
                Probe::Records { port: 0, tls13: true, path: "/64k.bin" },
                Probe::Records { port: 0, tls13: false, path: "/64k.bin" },
                Probe::Records { port: 1, tls13: true, path: "/64k.bin" },
                Probe::Records { port: 1, tls13: false, path: "/64k.bin" },
                Probe::Records { port: 2, tls13: true, path: "/64k.bin" },
                Probe::Records { port: 2, tls13: false, path: "/64k.bin" },
            ],
        ),
        case(
            "connection-ends",
            server(&format!("{RSA} {BOTH} {VARS} location = /64k.bin {{ }}")),
            vec![
                Probe::ClientClose { port: 0, notify: true },
                Probe::ClientClose { port: 0, notify: false },
                Probe::Records { port: 0, tls13: true, path: "/64k.bin" },
                Probe::Log(3),
            ],
        ),
        case(
            "pipelined",
            server(&format!("{RSA} {BOTH} {VARS} location /i {{ alias {{root}}/index.html; }}")),
            vec![
                sr(
                    0,
                    "-servername localhost",
                    "GET /i HTTP/1.1\nHost: localhost\n\nGET / HTTP/1.1\nHost: localhost\n\nHEAD /i HTTP/1.1\nHost: localhost\nConnection: close\n\n",
                ),
                sr(0, "-servername localhost -tls1_2", "GET /i HTTP/1.1\nHost: localhost\n\nGET /i HTTP/1.0\n\n"),
                Probe::Log(5),
            ],
        ),
        case(
            "big-file",
            server(&format!(
                "{RSA} {BOTH} sendfile on; location /aio/ {{ alias {{root}}/; aio threads; }} location /direct/ {{ alias {{root}}/; sendfile off; }}"
            )),
            vec![
                curl(0, "localhost", "/big.bin", ""),
                curl(0, "localhost", "/aio/big.bin", ""),
                curl(0, "localhost", "/direct/big.bin", "--tls-max 1.2"),
                curl(0, "localhost", "/aio/big.bin", "-r 1000-2000000"),
            ],
        ),
    ]);
    let mut up = case(
        "big-body-proxied",
        server(&format!(
            "{RSA} {BOTH} client_max_body_size 8m; location /up {{ proxy_pass http://127.0.0.1:{{upstream}}; proxy_set_header Connection close; }}"
        )),
        vec![
            // The echo's answer holds the request's head, which each
            // proxy writes its way: what reached the upstream is compared.
            curl_length(0, "localhost", "/up", "--data-binary @{root}/big.bin"),
            curl_length(
                0,
                "localhost",
                "/up",
                "--data-binary @{root}/64k.bin -H Transfer-Encoding:chunked",
            ),
        ],
    );
    up.upstream = true;
    all.push(up);
    all
}

/// A file's name and what makes its bytes.
pub type MisconfFile = (&'static str, fn() -> Vec<u8>);

/// Files the `-t` cases name (`{dir}/NAME`), written in the test's folder.
pub const MISCONF_FILES: &[MisconfFile] = &[
    ("empty.pem", Vec::new),
    ("key47.key", || vec![7; 47]),
    ("dh512.pem", || DH512.as_bytes().to_vec()),
    ("dh2048.pem", || FFDHE2048.as_bytes().to_vec()),
    ("garbage.pem", || {
        b"-----BEGIN CERTIFICATE-----\n@@@@\n-----END CERTIFICATE-----\n".to_vec()
    }),
];

/// `openssl dhparam 512`: refused as too small.
const DH512: &str = "-----BEGIN DH PARAMETERS-----
MEYCQQC6O2tK5xfAE8MychWh3JeIjmW8fk34X9ceTBjr6y5SswGoypTycuT80sFw
ehiCOZCzyGKS2zyz3s2XhzoabAaXAgEC
-----END DH PARAMETERS-----
";

/// RFC 7919's ffdhe2048.
const FFDHE2048: &str = "-----BEGIN DH PARAMETERS-----
MIIBCAKCAQEA//////////+t+FRYortKmq/cViAnPTzx2LnFg84tNpWp4TZBFGQz
+8yTnc4kmz75fS/jY2MMddj2gbICrsRhetPfHtXV/WVhJDP1H18GbtCFY2VVPe0a
87VXE15/V8k1mE8McODmi3fipona8+/och3xWKE2rec1MKzKT0g6eXq8CrGCsyT7
YdEIqUuyyOP7uWrat2DX9GgdT0Kj3jlN9K5W7edjcrsZCwenyO4KbXCeAvzhzffi
7MA0BM0oNC9hkXL+nOmFg/+OTxIy7vKBg8P+OxtMb61zO7X8vC7CIAXFjvGDfRaD
ssbzSibBsu/6iGtCOGEoXJf//////////wIBAg==
-----END DH PARAMETERS-----
";

/// The `-t` cases: a name and the inside of `http {}` (`{fix}`: the
/// fixtures, `{dir}`: the test's folder with [`MISCONF_FILES`]).
pub fn misconfigurations() -> Vec<(&'static str, String)> {
    let srv = |body: &str| format!("server {{ listen 127.0.0.1:18443 ssl; {body} }}");
    let with = |more: &str| srv(&format!("{RSA} {more}"));
    vec![
        (
            "missing-cert",
            srv("ssl_certificate /nonexistent.crt; ssl_certificate_key {fix}/localhost-rsa.key;"),
        ),
        (
            "missing-key",
            srv("ssl_certificate {fix}/localhost-rsa.crt; ssl_certificate_key /nonexistent.key;"),
        ),
        (
            "wrong-key",
            srv("ssl_certificate {fix}/localhost-rsa.crt; ssl_certificate_key {fix}/stray.key;"),
        ),
        (
            "wrong-key-type",
            srv(
                "ssl_certificate {fix}/localhost-rsa.crt; ssl_certificate_key {fix}/localhost-ec.key;",
            ),
        ),
        (
            "empty-cert",
            srv("ssl_certificate {dir}/empty.pem; ssl_certificate_key {fix}/localhost-rsa.key;"),
        ),
        (
            "empty-key",
            srv("ssl_certificate {fix}/localhost-rsa.crt; ssl_certificate_key {dir}/empty.pem;"),
        ),
        (
            "garbage-cert",
            srv("ssl_certificate {dir}/garbage.pem; ssl_certificate_key {fix}/localhost-rsa.key;"),
        ),
        (
            "key-as-cert",
            srv(
                "ssl_certificate {fix}/localhost-rsa.key; ssl_certificate_key {fix}/localhost-rsa.key;",
            ),
        ),
        (
            "cert-as-key",
            srv(
                "ssl_certificate {fix}/localhost-rsa.crt; ssl_certificate_key {fix}/localhost-rsa.crt;",
            ),
        ),
        ("no-certificate", srv("")),
        (
            "certificate-without-key",
            srv("ssl_certificate {fix}/localhost-rsa.crt;"),
        ),
        (
            "two-certificates-one-key",
            with("ssl_certificate {fix}/localhost-ec.crt;"),
        ),
        (
            "key-without-certificate",
            "server { listen 127.0.0.1:18443; ssl_certificate_key {fix}/localhost-rsa.key; }"
                .into(),
        ),
        (
            "default-server-without-certificate",
            format!(
                "{} server {{ listen 127.0.0.1:18443 ssl; server_name x; {RSA} }}",
                srv("")
            ),
        ),
        (
            "http-level-certificate-without-key",
            "ssl_certificate {fix}/localhost-rsa.crt; server { listen 127.0.0.1:18443 ssl; }"
                .into(),
        ),
        ("bad-ciphers", with("ssl_ciphers FOO;")),
        (
            "ciphers-with-unknown-exclusion",
            with("ssl_ciphers HIGH:!FOO;"),
        ),
        ("ciphers-rustls-lacks", with("ssl_ciphers AES128-SHA;")),
        ("bad-curve", with("ssl_ecdh_curve foo;")),
        ("bad-curve-in-list", with("ssl_ecdh_curve prime256v1:foo;")),
        ("curve-rustls-lacks", with("ssl_ecdh_curve secp521r1;")),
        ("protocols-tls1-only", with("ssl_protocols TLSv1;")),
        (
            "protocols-sslv3-tls11",
            with("ssl_protocols SSLv3 TLSv1.1;"),
        ),
        ("protocols-unknown", with("ssl_protocols TLSv1.4;")),
        (
            "protocols-twice",
            with("ssl_protocols TLSv1.2; ssl_protocols TLSv1.3 TLSv1.2;"),
        ),
        ("dhparam-missing", with("ssl_dhparam /nonexistent.pem;")),
        ("dhparam-empty", with("ssl_dhparam {dir}/empty.pem;")),
        ("dhparam-too-small", with("ssl_dhparam {dir}/dh512.pem;")),
        ("dhparam-2048", with("ssl_dhparam {dir}/dh2048.pem;")),
        (
            "ticket-key-wrong-size",
            with("ssl_session_ticket_key {dir}/key47.key;"),
        ),
        (
            "ticket-key-missing",
            with("ssl_session_ticket_key /nonexistent.key;"),
        ),
        (
            "ticket-key-48",
            with("ssl_session_ticket_key {fix}/ticket48.key;"),
        ),
        ("session-cache-invalid", with("ssl_session_cache foo;")),
        (
            "session-cache-too-small",
            with("ssl_session_cache shared:X:10k;"),
        ),
        (
            "session-cache-bad-size",
            with("ssl_session_cache shared:X:abc;"),
        ),
        (
            "session-cache-builtin-bad",
            with("ssl_session_cache builtin:abc;"),
        ),
        ("session-timeout-invalid", with("ssl_session_timeout abc;")),
        ("buffer-size-invalid", with("ssl_buffer_size abc;")),
        (
            "ssl-on",
            format!("server {{ listen 127.0.0.1:18443; ssl on; {RSA} }}"),
        ),
        (
            "ssl-on-without-certificate",
            "server { listen 127.0.0.1:18443; ssl on; }".into(),
        ),
        (
            "ssl-off",
            "server { listen 127.0.0.1:18443; ssl off; }".into(),
        ),
        (
            "ssl-twice",
            format!("server {{ listen 127.0.0.1:18443; ssl on; ssl off; {RSA} }}"),
        ),
        (
            "expired-certificate",
            srv("ssl_certificate {fix}/expired.crt; ssl_certificate_key {fix}/expired.key;"),
        ),
        (
            "reject-without-certificate",
            srv("ssl_reject_handshake on;"),
        ),
        ("conf-command-unknown", with("ssl_conf_command Foo bar;")),
        (
            "conf-command-bad-ciphersuites",
            with("ssl_conf_command Ciphersuites TLS_FOO;"),
        ),
        (
            "prefer-server-ciphers-invalid",
            with("ssl_prefer_server_ciphers maybe;"),
        ),
        (
            "session-tickets-invalid",
            with("ssl_session_tickets maybe;"),
        ),
        (
            "ssl-in-location",
            format!(
                "server {{ listen 127.0.0.1:18443 ssl; {RSA} location / {{ ssl_protocols TLSv1.2; }} }}"
            ),
        ),
    ]
}
