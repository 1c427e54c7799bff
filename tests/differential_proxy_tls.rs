//! Differential test of the proxy over TLS: nowait and the real nginx 1.22
//! (Debian's, with OpenSSL 3.0) run the same configuration, each in front
//! of its own set of origins behind rustls (the same scripts, so that each
//! origin records only what its own proxy did), and get the same requests
//! in the same order. Compared, request by request: the status and the
//! body; origin by origin: each handshake's server name, whether it
//! resumed a session, whether a client certificate came, the protocol; and
//! the error log's lines, their time, process, connection number and
//! ports taken out.
//!
//! nginx keeps one session per upstream server for every location that
//! proxies to it, nowait one per location and server: each location here
//! has origins of its own, so the two keep the same sessions.
//!
//! Run: `cargo test --test differential_proxy_tls -- --nocapture`

mod common;

use std::path::Path;

use common::proxy::conf;
use common::server::{Kind, NGINX_BIN};
use common::tls::{self, Origin, fixture};
use common::upstream::Handshake;
use common::wait::until;
use common::{Server, Upstream, body, client};

/// How long the comparison waits for what must come.
const WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// An origin that answers `200` with the request's target.
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

/// A server that answers a ClientHello in plain HTTP.
fn plain() -> Upstream {
    Upstream::start(|c| {
        c.wait_closed(std::time::Duration::from_millis(200));
        c.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        c.wait_closed(WAIT);
    })
}

/// One proxy's world: its origins, by name, and the server.
struct Side {
    origins: Vec<(&'static str, Upstream)>,
    _plain: Upstream,
    server: Server,
}

/// The origins every side has: (name, certificate, asks for a client
/// certificate).
const ORIGINS: [(&str, &str, bool); 10] = [
    ("ok", "localhost-ec", false),
    ("wrong", "localhost-ec", false),
    ("name", "localhost-ec", false),
    ("depth", "chain", false),
    ("revoked", "revoked", false),
    ("sni", "localhost-rsa", false),
    ("client", "localhost-ec", true),
    ("resume", "localhost-ec", false),
    ("ka", "localhost-ec", false),
    ("next", "localhost-ec", false),
];

/// The requests, in order.
const REQUESTS: [&str; 16] = [
    "/ok/a",
    "/wrong/a",
    "/name/a",
    "/depth0/a",
    "/depth1/a",
    "/revoked/a",
    "/sni-off/a",
    "/sni-on/a",
    "/sni-named/a?n=www.example.com:8443",
    "/client/a",
    "/resume/a",
    "/resume/b",
    "/resume/c",
    "/ka/a",
    "/ka/b",
    "/next/a",
];

fn start(kind: Kind) -> Side {
    let origins: Vec<(&'static str, Upstream)> = ORIGINS
        .iter()
        .map(|&(name, cert, client_auth)| {
            let o = Origin {
                cert,
                client_auth,
                ..Origin::default()
            };
            (name, origin(o))
        })
        .collect();
    let addr = |name: &str| {
        origins
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, u)| u.addr().to_string())
            .expect("an origin of that name")
    };
    let plain = plain();
    let verify = "proxy_ssl_verify on; proxy_ssl_name localhost;";
    let http = format!(
        "upstream sni.test {{ server {sni}; }}
         upstream ka {{ server {ka}; keepalive 2; }}
         upstream next {{ server {plain}; server {next}; }}",
        sni = addr("sni"),
        ka = addr("ka"),
        plain = plain.addr(),
        next = addr("next"),
    );
    let server = format!(
        "proxy_ssl_trusted_certificate {ca};
         location /ok/ {{ proxy_pass https://{ok}; {verify} }}
         location /wrong/ {{ proxy_pass https://{wrong}; {verify}
             proxy_ssl_trusted_certificate {other}; }}
         location /name/ {{ proxy_pass https://{name}; proxy_ssl_verify on;
             proxy_ssl_name example.com; }}
         location /depth0/ {{ proxy_pass https://{depth}; {verify} proxy_ssl_verify_depth 0;
             proxy_ssl_session_reuse off; }}
         location /depth1/ {{ proxy_pass https://{depth}; {verify} proxy_ssl_session_reuse off; }}
         location /revoked/ {{ proxy_pass https://{revoked}; {verify} proxy_ssl_crl {crl}; }}
         location /sni-off/ {{ proxy_pass https://sni.test; proxy_ssl_session_reuse off; }}
         location /sni-on/ {{ proxy_pass https://sni.test; proxy_ssl_server_name on;
             proxy_ssl_session_reuse off; }}
         location /sni-named/ {{ proxy_pass https://sni.test; proxy_ssl_server_name on;
             proxy_ssl_name $arg_n; proxy_ssl_session_reuse off; }}
         location /client/ {{ proxy_pass https://{client}; proxy_ssl_certificate {ccrt};
             proxy_ssl_certificate_key {ckey}; }}
         location /resume/ {{ proxy_pass https://{resume}; }}
         location /ka/ {{ proxy_pass https://ka; proxy_http_version 1.1;
             proxy_set_header Connection \"\"; }}
         location /next/ {{ proxy_pass https://next; }}",
        ok = addr("ok"),
        wrong = addr("wrong"),
        name = addr("name"),
        depth = addr("depth"),
        revoked = addr("revoked"),
        client = addr("client"),
        resume = addr("resume"),
        ca = fixture("ca.crt"),
        other = fixture("other.crt"),
        crl = fixture("ca.crl"),
        ccrt = fixture("client.crt"),
        ckey = fixture("client.key"),
    );
    let text = conf(None, &http, &server);
    Side {
        origins,
        _plain: plain,
        server: Server::start(kind, &text),
    }
}

/// What one side did, as text to compare.
fn observe(side: &Side) -> Vec<String> {
    let mut out = Vec::new();
    for path in REQUESTS {
        let r = client::get(side.server.port(), path);
        // The server's name in its error pages is its own.
        let text = body(&r)
            .replace("nginx/1.22.1", "SERVER")
            .replace(concat!("nowait/", env!("CARGO_PKG_VERSION")), "SERVER");
        out.push(format!("{path}: {} {text:?}", r.status));
    }
    for (name, up) in &side.origins {
        let seen: Vec<String> = up.handshakes().iter().map(describe).collect();
        out.push(format!(
            "origin {name}: {} connections, handshakes {seen:?}",
            up.connections()
        ));
    }
    // The log lines of the failures (one per failed request: /wrong/,
    // /name/, /depth0/, /revoked/, and /next/'s first server).
    until(WAIT, || {
        side.server
            .stderr()
            .lines()
            .filter(|l| l.contains("[error]"))
            .count()
            >= 5
    });
    for line in side
        .server
        .stderr()
        .lines()
        .filter(|l| l.contains("[error]"))
    {
        out.push(normalize(line));
    }
    out
}

/// A handshake as compared: what the origin saw.
fn describe(h: &Handshake) -> String {
    format!(
        "sni={:?} resumed={} client_cert={} {} {:?}",
        h.server_name,
        h.resumed,
        h.client_cert.is_some(),
        h.protocol.as_deref().unwrap_or("-"),
        h.failed.as_ref().map(|_| "failed"),
    )
}

/// An error log line without its time, process and connection number,
/// and with every port as `PORT`.
fn normalize(line: &str) -> String {
    let from_level = line.find('[').map_or(line, |i| &line[i..]);
    // `[error] 123#456: *7 message` → `[error] message`.
    let mut words = from_level.splitn(4, ' ');
    let level = words.next().unwrap_or("");
    let _pid = words.next();
    let rest: Vec<&str> = words.collect();
    let text = rest.join(" ");
    let text = text.strip_prefix('*').map_or(text.as_str(), |t| {
        t.split_once(' ').map_or(t, |(_, after)| after)
    });
    let mut out = String::new();
    let whole = format!("{level} {text}");
    let mut chars = whole.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if out.ends_with("127.0.0.1:") || out.ends_with("localhost:") {
            while chars.peek().is_some_and(|d| d.is_ascii_digit()) {
                chars.next();
            }
            out.push_str("PORT");
        }
    }
    out
}

#[test]
fn nowait_proxies_over_tls_as_nginx_does() {
    assert!(
        Path::new(NGINX_BIN).exists(),
        "{NGINX_BIN} is missing: run scripts/install-test-deps.sh (as root)"
    );
    let nginx = observe(&start(Kind::Nginx));
    let nowait = observe(&start(Kind::Nowait));
    let mut differ = Vec::new();
    for (i, (a, b)) in nginx.iter().zip(&nowait).enumerate() {
        if a != b {
            differ.push(format!("#{i}\n  nginx:  {a}\n  nowait: {b}"));
        }
    }
    if nginx.len() != nowait.len() {
        differ.push(format!(
            "nginx said {} things, nowait {}:\nnginx:\n{}\nnowait:\n{}",
            nginx.len(),
            nowait.len(),
            nginx.join("\n"),
            nowait.join("\n")
        ));
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    // Not an empty comparison: the failures are there.
    assert!(nginx.iter().any(|l| l.contains("certificate verify error")));
}
