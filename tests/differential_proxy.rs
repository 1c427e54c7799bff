//! Differential test of the proxy: nowait and the real nginx 1.22 run the
//! same configuration in front of the same scripted upstream (one each,
//! so that each records what its own proxy sent), and every case's
//! request is sent to both. Compared: status lines, the headers in
//! `compare::COMPARED_HEADERS` and [`PROXY_HEADERS`], bodies, whether
//! the client connection was closed, and what the upstream received —
//! request lines and header blocks in order, and bodies.
//!
//! Normalized first: each upstream's and each server's own port, and the
//! server's name in error pages. Intended differences are listed in
//! `differential/known-differences.txt` under `proxy-<case>` with the
//! fields that differ and their reason; those fields are reported and do
//! not fail, any other field of the case does (the `field` lines of the
//! static corpus do not apply here).
//!
//! The header cases ([`header_suites`]) run in suites of their own, each
//! with its own `http` and `server` level settings.
//!
//! Run: `cargo test --test differential_proxy -- --nocapture`
//! (`NOWAIT_DIFF_ONLY=name,name` runs only those cases).

mod common;
#[path = "differential/compare.rs"]
#[allow(dead_code)]
mod compare;
#[path = "differential/corpus.rs"]
#[allow(dead_code)]
mod corpus;
#[path = "differential/proxy_cases.rs"]
mod proxy_cases;

use std::path::Path;

use common::proxy::conf;
use common::server::{Kind, NGINX_BIN, free_port};
use common::{Server, Upstream, exchange, request_methods};
use compare::{Outcome, compare};
use proxy_cases::{Case, DEFAULT_ANSWER, HTTP, Suite, cases, header_suites};

/// Response fields a proxy decides on, compared besides the static ones
/// (every field of the name, in order).
const PROXY_HEADERS: &[&str] = &[
    "X-Up",
    "Refresh",
    "X-Pad",
    "X-Accel-Redirect",
    "X-Accel-Expires",
    "X-Accel-Buffering",
    "X-Accel-Limit-Rate",
    "X-Accel-Charset",
    "Upgrade",
    "X-Foo",
    "X-Bar",
    "Date",
    "Server",
];

/// The `Date` and `Server` the header cases' upstream sends: any other
/// value is the server's own, which differs between nginx and nowait.
const UPSTREAM_OWN: [(&str, &str); 2] = [
    ("Date", "Mon, 01 Jan 2001 00:00:00 GMT"),
    ("Server", "upstream-server"),
];

/// A case's location text written with `{upport}` stands for the port of
/// the server's own upstream.
const UPSTREAM_PORT: &str = "{upport}";

/// The configuration: one location per case, and the targets of internal
/// redirects.
fn configuration(cases: &[&Case], dead: &str) -> String {
    let mut server = String::from("location /target/ { return 200 \"target $uri\"; }\n");
    for c in cases {
        server.push_str(&format!(
            "location /{} {{ {} }}\n",
            c.name,
            c.location.replace("DEAD", dead)
        ));
    }
    server
}

/// The scripted upstream for one server: each case's answer by target.
fn upstream(cases: &[&Case]) -> Upstream {
    let scripts: Vec<(String, Vec<u8>)> = cases
        .iter()
        .filter_map(|c| c.answer.map(|a| (format!("/{}", c.name), a.to_vec())))
        .collect();
    Upstream::start(move |conn| {
        while let Some(req) = conn.read_request() {
            let target = req.target();
            let script = scripts
                .iter()
                .filter(|(key, _)| target.starts_with(key.as_str()))
                .max_by_key(|(key, _)| key.len());
            let host = req.header("Host").unwrap_or_default();
            match script {
                Some((_, answer)) => {
                    let answer = String::from_utf8_lossy(answer).replace("UPADDR", &host);
                    conn.write(answer.as_bytes());
                    return;
                }
                None => {
                    if !conn.write(DEFAULT_ANSWER) || !req.keep_alive() {
                        return;
                    }
                }
            }
        }
    })
}

/// What the upstream received for one case, normalized: request lines
/// and header blocks, then bodies.
fn received(up: &Upstream, from: usize) -> String {
    let port = up.port().to_string();
    up.requests()[from..]
        .iter()
        .map(|r| {
            format!(
                "{}{}",
                r.head_text().replace(&port, "UPPORT"),
                String::from_utf8_lossy(&r.body)
            )
        })
        .collect::<Vec<_>>()
        .join("|")
}

/// The values of the fields named `name`, normalized: a `Date` or
/// `Server` the upstream did not send is the server's own.
fn proxy_fields(r: &common::Response, name: &str) -> Vec<String> {
    r.headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| {
            match UPSTREAM_OWN
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
            {
                Some((_, up)) if v != up => "(own)".to_string(),
                _ => v.clone(),
            }
        })
        .collect()
}

/// The names of every case of every suite.
fn all_names() -> Vec<String> {
    cases()
        .iter()
        .chain(header_suites().iter().flat_map(|s| s.cases.iter()))
        .map(|c| format!("proxy-{}", c.name))
        .collect()
}

/// Runs `suite` against nginx and nowait; the number of cases that
/// differ and are not known differences.
fn run(suite: &Suite) -> usize {
    assert!(
        Path::new(NGINX_BIN).exists(),
        "{NGINX_BIN} is missing: run scripts/install-test-deps.sh (as root)"
    );
    let only: Option<Vec<String>> = std::env::var("NOWAIT_DIFF_ONLY")
        .ok()
        .map(|s| s.split(',').map(str::to_string).collect());
    let mut all: Vec<&Case> = suite.cases.iter().collect();
    if let Some(only) = &only {
        all.retain(|c| only.iter().any(|o| o == c.name));
    }
    if all.is_empty() {
        return 0;
    }
    let known_text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/differential/known-differences.txt"),
    )
    .expect("read known-differences.txt");
    let known = corpus::parse_known(&known_text).expect("known-differences.txt");
    let names = all_names();
    let stale: Vec<&String> = known
        .cases
        .keys()
        .filter(|k| k.starts_with("proxy-") && !names.contains(k))
        .collect();
    assert!(
        stale.is_empty(),
        "known-differences.txt names unknown proxy cases: {stale:?}"
    );

    let dead = format!("127.0.0.1:{}", free_port());
    let server_block = format!("{}\n{}", suite.server, configuration(&all, &dead));
    let (up_nginx, up_nowait) = (upstream(&all), upstream(&all));
    let conf_for = |up: &Upstream| {
        let port = up.port().to_string();
        conf(
            Some(up),
            &suite.http.replace(UPSTREAM_PORT, &port),
            &server_block.replace(UPSTREAM_PORT, &port),
        )
    };
    let nginx = Server::start(Kind::Nginx, &conf_for(&up_nginx));
    let nowait = Server::start(Kind::Nowait, &conf_for(&up_nowait));

    let (mut failed, mut known_hit) = (0, 0);
    for case in &all {
        let raw = case.request.replace("{name}", case.name).into_bytes();
        let methods = request_methods(&raw);
        let before = (up_nginx.requests().len(), up_nowait.requests().len());
        let segments = [raw];
        let (a, b) = std::thread::scope(|s| {
            let b = s.spawn(|| exchange(nowait.port(), &segments, &methods));
            (
                exchange(nginx.port(), &segments, &methods),
                b.join().expect("exchange"),
            )
        });
        let oa = Outcome::new(&a, &methods, nginx.port());
        let ob = Outcome::new(&b, &methods, nowait.port());
        let mut diffs: Vec<(String, String, String)> = compare(&oa, &ob)
            .into_iter()
            .map(|m| (m.field, m.reference, m.tested))
            .collect();
        for (i, (ra, rb)) in oa
            .parsed
            .responses
            .iter()
            .zip(&ob.parsed.responses)
            .enumerate()
        {
            for h in PROXY_HEADERS {
                let (va, vb) = (proxy_fields(ra, h), proxy_fields(rb, h));
                if va != vb {
                    diffs.push((
                        format!("response {} header {h}", i + 1),
                        format!("{va:?}"),
                        format!("{vb:?}"),
                    ));
                }
            }
        }
        let (sent_a, sent_b) = (
            received(&up_nginx, before.0),
            received(&up_nowait, before.1),
        );
        if sent_a != sent_b {
            diffs.push((
                "upstream received".into(),
                format!("{sent_a:?}"),
                format!("{sent_b:?}"),
            ));
        }
        if diffs.is_empty() {
            println!("ok    {}", case.name);
            continue;
        }
        // A listed case fails still on a field its entry does not name.
        let key = format!("proxy-{}", case.name);
        let fields: Vec<&str> = diffs.iter().map(|(f, _, _)| f.as_str()).collect();
        let not_named = known.not_named(&key, &fields);
        let tag = match known.cases.get(&key) {
            Some(k) if not_named.is_empty() => {
                known_hit += 1;
                format!("known {} ({})", case.name, k.reason)
            }
            Some(k) => {
                failed += 1;
                format!(
                    "FAIL  {}: listed for {} only, differs in {} too",
                    case.name,
                    k.fields.join(", "),
                    not_named.join(", ")
                )
            }
            None => {
                failed += 1;
                format!("FAIL  {}", case.name)
            }
        };
        println!("{tag}");
        for (field, a, b) in diffs {
            println!("      {field}:\n        nginx:  {a}\n        nowait: {b}");
        }
    }
    println!(
        "differential_proxy ({}): {} cases, {known_hit} known differences, {failed} failed",
        suite.name,
        all.len()
    );
    if failed > 0 {
        eprintln!("--- nginx stderr ---\n{}", nginx.stderr());
        eprintln!("--- nowait stderr ---\n{}", nowait.stderr());
    }
    failed
}

#[test]
fn proxy_matches_nginx() {
    let failed = run(&Suite {
        name: "proxy",
        http: HTTP,
        server: "",
        cases: cases(),
    });
    assert_eq!(
        failed, 0,
        "{failed} proxy cases differ from nginx (see above)"
    );
}

/// The `proxy_*` header family set at each level (http, server,
/// locations nested two and three deep) and inherited.
#[test]
fn proxy_header_inheritance_matches_nginx() {
    let failed: usize = header_suites().iter().map(run).sum();
    assert_eq!(
        failed, 0,
        "{failed} header cases differ from nginx (see above)"
    );
}

/// The `proxy_pass` URLs of [`unix_socket_urls_match_nginx`], each in a
/// location of its own (`SOCK` is the server's own upstream socket).
const UNIX_LOCATIONS: [(&str, &str); 6] = [
    ("/static/", "proxy_pass http://unix:SOCK:/s/;"),
    (
        "/var-uri/",
        "set $s \"unix:SOCK:/u?x=1\"; proxy_pass http://$s;",
    ),
    (
        "/var-query/",
        "set $s \"unix:SOCK:?x=1\"; proxy_pass http://$s;",
    ),
    ("/var-bare/", "set $s \"unix:SOCK\"; proxy_pass http://$s;"),
    (
        "/var-colon/",
        "set $s \"unix:SOCK:\"; proxy_pass http://$s;",
    ),
    (
        "/var-whole/",
        "set $t \"http://unix:SOCK:/w\"; proxy_pass $t;",
    ),
];

/// Listens on a unix-domain socket at `path` and answers every request
/// with `200` and its head as the body, one request per connection.
fn unix_echo(path: &Path) {
    use std::io::{Read, Write};
    let listener = std::os::unix::net::UnixListener::bind(path)
        .unwrap_or_else(|e| panic!("bind {}: {e}", path.display()));
    // The servers' workers may run as another user.
    common::tmp::set_mode(path, 0o777);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut head = Vec::new();
            let mut buf = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let mut answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                head.len()
            )
            .into_bytes();
            answer.extend_from_slice(&head);
            let _ = conn.write_all(&answer);
        }
    });
}

/// `proxy_pass` to a unix-domain socket, written and in a variable: the
/// request line, `Host: localhost`, and `$proxy_host|$proxy_port`
/// (`localhost|`, no port) as nginx sends them. Each server proxies to a
/// socket of its own; the paths are normalized to `SOCK`.
#[test]
fn unix_socket_urls_match_nginx() {
    assert!(
        Path::new(NGINX_BIN).exists(),
        "{NGINX_BIN} is missing: run scripts/install-test-deps.sh (as root)"
    );
    let dir = common::tmp::TempDir::new("proxy-unix");
    let mut answers = Vec::new();
    for kind in [Kind::Nginx, Kind::Nowait] {
        let sock = dir.path().join(format!("{}.sock", kind.name()));
        unix_echo(&sock);
        let sock_text = sock.to_string_lossy().into_owned();
        let locations: String = UNIX_LOCATIONS
            .iter()
            .map(|(path, inside)| {
                format!(
                    "location {path} {{ proxy_set_header X-PH \"$proxy_host|$proxy_port\"; {} }}\n",
                    inside.replace("SOCK", &sock_text)
                )
            })
            .collect();
        let server = Server::start(kind, &conf(None, "", &locations));
        let got: Vec<String> = UNIX_LOCATIONS
            .iter()
            .map(|(path, _)| {
                let r = common::client::get(server.port(), &format!("{path}x?a=1"));
                format!("{} {}", r.status, common::body(&r)).replace(&sock_text, "SOCK")
            })
            .collect();
        answers.push(got);
    }
    // Each answer is the upstream's: what was sent can be compared.
    for a in &answers[0] {
        assert!(a.starts_with("200 GET "), "nginx answered {a:?}");
    }
    let failed: Vec<String> = UNIX_LOCATIONS
        .iter()
        .zip(answers[0].iter().zip(&answers[1]))
        .filter(|(_, (a, b))| a != b)
        .map(|((path, _), (a, b))| format!("{path}:\n  nginx:  {a:?}\n  nowait: {b:?}"))
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
