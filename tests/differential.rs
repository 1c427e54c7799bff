//! Differential test: nowait against the real nginx 1.22, byte for byte.
//!
//! Both servers run `differential/nginx.conf` over the same fixture document
//! root (`common/fixture.rs`). Every case of `differential/corpus.txt` is
//! sent as raw bytes to each; the responses are split and compared: status
//! line, the headers in `compare::COMPARED_HEADERS` when either sends them,
//! the body, leftover bytes, and whether the server closed the connection.
//! Server name/version in error pages, the multipart boundary and each
//! server's own port in `Location` are normalized first.
//!
//! Differences kept on purpose are listed, with their reason, in
//! `differential/known-differences.txt`: those cases are reported but do not
//! fail. Every other mismatch is reported (case, field, both values) and
//! the test fails once at the end with the count.
//!
//! Needs `/usr/sbin/nginx` (Debian's nginx-light): run
//! `scripts/install-test-deps.sh` as root. Tests run as root so that the
//! workers drop to `nobody` like in production.
//!
//! Run: `cargo test --test differential -- --nocapture`
//!
//! Environment:
//! - `NOWAIT_DIFF_SELF=1`: compare nginx against a second nginx instead of
//!   nowait. All cases must pass: this proves the corpus is deterministic,
//!   so that every mismatch against nowait is nowait's.
//! - `NOWAIT_DIFF_ONLY=name,name`: run only these cases.
//! - `NOWAIT_DIFF_VERBOSE=1`: print nginx's outcome of every case; `=2`:
//!   with the response heads.
//! - `NOWAIT_TEST_KEEP_TMP=1`: keep the temp dirs (configs, stderr logs).

mod common;
#[path = "differential/compare.rs"]
mod compare;
#[path = "differential/corpus.rs"]
mod corpus;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::server::{Kind, NGINX_BIN};
use common::{Fixture, Server, exchange, request_methods};
use compare::{Mismatch, Outcome, compare};
use corpus::{Case, parse_corpus, parse_known};

/// The corpus must keep at least this many cases.
const MIN_CASES: usize = 150;
/// Cases run at once; each one is a separate connection per server.
const PARALLEL: usize = 8;

fn data(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/differential")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn load_cases() -> Vec<Case> {
    parse_corpus(&data("corpus.txt"))
        .unwrap_or_else(|errors| panic!("corpus.txt:\n{}", errors.join("\n")))
}

/// The corpus and the known-differences list are well-formed and agree.
#[test]
fn corpus_is_well_formed() {
    let cases = load_cases();
    assert!(
        cases.len() >= MIN_CASES,
        "corpus.txt has {} cases, want at least {MIN_CASES}",
        cases.len()
    );
    let known = parse_known(&data("known-differences.txt"))
        .unwrap_or_else(|errors| panic!("known-differences.txt:\n{}", errors.join("\n")));
    let stale: Vec<&String> = known
        .cases
        .keys()
        // `proxy-` cases are differential_proxy.rs's.
        .filter(|k| !k.starts_with("proxy-") && !cases.iter().any(|c| &c.name == *k))
        .collect();
    assert!(
        stale.is_empty(),
        "known-differences.txt names unknown cases: {stale:?}"
    );
}

/// The differential run itself; see the file header.
#[test]
fn nowait_matches_nginx() {
    assert!(
        Path::new(NGINX_BIN).exists(),
        "{NGINX_BIN} is missing: the differential test needs the real nginx. \
         Install it with scripts/install-test-deps.sh (as root)."
    );
    let self_check = std::env::var_os("NOWAIT_DIFF_SELF").is_some_and(|v| v == "1");
    let tested_kind = if self_check {
        Kind::Nginx
    } else {
        Kind::Nowait
    };
    let tested_label = if self_check { "nginx#2" } else { "nowait" };
    let verbose: u8 = std::env::var("NOWAIT_DIFF_VERBOSE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let only: Option<Vec<String>> = std::env::var("NOWAIT_DIFF_ONLY")
        .ok()
        .map(|s| s.split(',').map(str::to_string).collect());

    let mut cases = load_cases();
    if let Some(only) = &only {
        cases.retain(|c| only.contains(&c.name));
        assert!(!cases.is_empty(), "NOWAIT_DIFF_ONLY matches no case");
    }
    let known = parse_known(&data("known-differences.txt"))
        .unwrap_or_else(|errors| panic!("known-differences.txt:\n{}", errors.join("\n")));

    let fixture = Fixture::build();
    let conf = data("nginx.conf").replace("{root}", &fixture.root().to_string_lossy());
    let reference = Server::nginx(&conf);
    let tested = Server::start(tested_kind, &conf);

    let results = run_all(&cases, reference.port(), tested.port(), verbose >= 2);

    let mut failed = 0;
    let mut known_hit = 0;
    for (case, (summary, all)) in cases.iter().zip(&results) {
        // Mismatches of fields that differ on purpose in every case.
        let (excused, mismatches): (Vec<_>, Vec<_>) = all
            .iter()
            .partition(|m| known.field_reason(&m.field).is_some());
        if mismatches.is_empty() && !excused.is_empty() {
            known_hit += 1;
            if verbose > 0 {
                let reason = known.field_reason(&excused[0].field).unwrap_or_default();
                println!("known {} (field: {reason})", case.name);
            }
            continue;
        }
        if mismatches.is_empty() {
            if verbose > 0 {
                println!("ok    {:<40} {summary}", case.name);
            }
            if let Some(reason) = known.cases.get(&case.name) {
                println!(
                    "note  {}: listed as a known difference ({reason}) but matches now",
                    case.name
                );
            }
            continue;
        }
        let tag = match known.cases.get(&case.name) {
            Some(reason) => {
                known_hit += 1;
                format!("known {} ({reason})", case.name)
            }
            None => {
                failed += 1;
                format!("FAIL  {}", case.name)
            }
        };
        println!("{tag}  [corpus.txt:{}]", case.line);
        for m in mismatches {
            println!(
                "      {}:\n        nginx:  {}\n        {tested_label}: {}",
                m.field, m.reference, m.tested
            );
        }
    }
    println!(
        "differential: {} cases, {} match, {known_hit} known differences, {failed} failed \
         (nginx vs {tested_label})",
        cases.len(),
        cases.len() - failed - known_hit
    );
    if failed > 0 {
        eprintln!("--- nginx stderr ---\n{}", tail(&reference.stderr()));
        eprintln!("--- {tested_label} stderr ---\n{}", tail(&tested.stderr()));
    }
    assert_eq!(
        failed, 0,
        "{failed} cases differ from nginx (see the report above)"
    );
}

/// Runs every case against both servers, [`PARALLEL`] at a time; returns
/// nginx's outcome in brief and the mismatches of each case, in corpus
/// order.
fn run_all(
    cases: &[Case],
    reference: u16,
    tested: u16,
    heads: bool,
) -> Vec<(String, Vec<Mismatch>)> {
    let next = AtomicUsize::new(0);
    let mut results: Vec<(String, Vec<Mismatch>)> = (0..cases.len())
        .map(|_| (String::new(), Vec::new()))
        .collect();
    let done: Vec<(usize, (String, Vec<Mismatch>))> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..PARALLEL)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(case) = cases.get(i) else {
                            return mine;
                        };
                        mine.push((i, run_case(case, reference, tested, heads)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| {
                w.join()
                    .unwrap_or_else(|_| panic!("a case runner panicked"))
            })
            .collect()
    });
    for (i, m) in done {
        results[i] = m;
    }
    results
}

fn run_case(case: &Case, reference: u16, tested: u16, heads: bool) -> (String, Vec<Mismatch>) {
    let methods = case
        .methods
        .clone()
        .unwrap_or_else(|| request_methods(&case.segments.concat()));
    // Both servers at once: slow cases (idle timeouts) then cost one wait.
    let (a, b) = std::thread::scope(|s| {
        let b = s.spawn(|| exchange(tested, &case.segments, &methods));
        let a = exchange(reference, &case.segments, &methods);
        (
            a,
            b.join()
                .unwrap_or_else(|_| panic!("case {} panicked", case.name)),
        )
    });
    let a = Outcome::new(&a, &methods, reference);
    let b = Outcome::new(&b, &methods, tested);
    let summary = if heads {
        format!("{}\n{}", a.summary(), a.heads())
    } else {
        a.summary()
    };
    (summary, compare(&a, &b))
}

/// The last lines of a log, enough to diagnose without flooding.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}
