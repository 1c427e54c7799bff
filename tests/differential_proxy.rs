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
use proxy_cases::{Case, DEFAULT_ANSWER, cases};

/// Response fields a proxy decides on, compared besides the static ones.
const PROXY_HEADERS: &[&str] = &["X-Up", "Refresh", "X-Pad", "X-Accel-Redirect", "Upgrade"];

/// The configuration: one location per case, and the targets of internal
/// redirects.
fn configuration(cases: &[Case], dead: &str) -> String {
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
fn upstream(cases: &[Case]) -> Upstream {
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

#[test]
fn proxy_matches_nginx() {
    assert!(
        Path::new(NGINX_BIN).exists(),
        "{NGINX_BIN} is missing: run scripts/install-test-deps.sh (as root)"
    );
    let only: Option<Vec<String>> = std::env::var("NOWAIT_DIFF_ONLY")
        .ok()
        .map(|s| s.split(',').map(str::to_string).collect());
    let mut all = cases();
    if let Some(only) = &only {
        all.retain(|c| only.iter().any(|o| o == c.name));
    }
    let known_text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/differential/known-differences.txt"),
    )
    .expect("read known-differences.txt");
    let known = corpus::parse_known(&known_text).expect("known-differences.txt");
    let listed: Vec<&String> = known
        .cases
        .keys()
        .filter(|k| k.starts_with("proxy-"))
        .collect();
    let names: Vec<String> = cases()
        .iter()
        .map(|c| format!("proxy-{}", c.name))
        .collect();
    let stale: Vec<&&String> = listed.iter().filter(|k| !names.contains(k)).collect();
    assert!(
        stale.is_empty(),
        "known-differences.txt names unknown proxy cases: {stale:?}"
    );

    let dead = format!("127.0.0.1:{}", free_port());
    let server_block = configuration(&all, &dead);
    let (up_nginx, up_nowait) = (upstream(&all), upstream(&all));
    let nginx = Server::start(Kind::Nginx, &conf(Some(&up_nginx), "", &server_block));
    let nowait = Server::start(Kind::Nowait, &conf(Some(&up_nowait), "", &server_block));

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
                let (va, vb) = (ra.header(h), rb.header(h));
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
        "differential_proxy: {} cases, {known_hit} known differences, {failed} failed",
        all.len()
    );
    if failed > 0 {
        eprintln!("--- nginx stderr ---\n{}", nginx.stderr());
        eprintln!("--- nowait stderr ---\n{}", nowait.stderr());
    }
    assert_eq!(
        failed, 0,
        "{failed} proxy cases differ from nginx (see above)"
    );
}
