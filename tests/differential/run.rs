//! The differential runner shared by `tests/differential.rs` (static files,
//! the protocol) and `tests/differential_rewrite.rs` (the rewrite and map
//! modules): one configuration run by nginx and by nowait, one corpus of
//! raw requests, one list of known differences. See `differential.rs` for
//! the method and the environment variables.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::server::{Kind, NGINX_BIN};
use crate::common::{Fixture, Server, exchange, request_methods};
use crate::compare::{Mismatch, Outcome, compare};
use crate::corpus::{Case, parse_corpus, parse_known};

/// Cases run at once; each one is a separate connection per server.
const PARALLEL: usize = 8;

/// One differential suite: its files under `tests/differential/`.
pub struct Suite {
    /// The configuration both servers run.
    pub conf: &'static str,
    /// The requests.
    pub corpus: &'static str,
    /// The differences kept on purpose.
    pub known: &'static str,
    /// The corpus must keep at least this many cases.
    pub min_cases: usize,
}

fn data(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/differential")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn load_cases(suite: &Suite) -> Vec<Case> {
    parse_corpus(&data(suite.corpus))
        .unwrap_or_else(|errors| panic!("{}:\n{}", suite.corpus, errors.join("\n")))
}

/// The corpus and the known-differences list are well-formed and agree.
pub fn corpus_is_well_formed(suite: &Suite) {
    let cases = load_cases(suite);
    assert!(
        cases.len() >= suite.min_cases,
        "{} has {} cases, want at least {}",
        suite.corpus,
        cases.len(),
        suite.min_cases
    );
    let known = parse_known(&data(suite.known))
        .unwrap_or_else(|errors| panic!("{}:\n{}", suite.known, errors.join("\n")));
    let stale: Vec<&String> = known
        .cases
        .keys()
        // `proxy-` cases are differential_proxy.rs's and `tls-` cases
        // differential_tls.rs's, in the same list.
        .filter(|k| {
            !k.starts_with("proxy-")
                && !k.starts_with("tls-")
                && !cases.iter().any(|c| &c.name == *k)
        })
        .collect();
    assert!(
        stale.is_empty(),
        "{} names unknown cases: {stale:?}",
        suite.known
    );
}

/// The differential run itself.
pub fn nowait_matches_nginx(suite: &Suite) {
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

    let mut cases = load_cases(suite);
    if let Some(only) = &only {
        cases.retain(|c| only.contains(&c.name));
        assert!(!cases.is_empty(), "NOWAIT_DIFF_ONLY matches no case");
    }
    let known = parse_known(&data(suite.known))
        .unwrap_or_else(|errors| panic!("{}:\n{}", suite.known, errors.join("\n")));

    let fixture = Fixture::build();
    let conf = data(suite.conf).replace("{root}", &fixture.root().to_string_lossy());
    let reference = Server::nginx(&conf);
    let tested = Server::start(tested_kind, &conf);

    let results = run_all(&cases, reference.port(), tested.port(), verbose >= 2);

    let mut failed = 0;
    let mut known_hit = 0;
    for (case, (summary, all)) in cases.iter().zip(&results) {
        let entry = known.cases.get(&case.name);
        if all.is_empty() {
            if verbose > 0 {
                println!("ok    {:<40} {summary}", case.name);
            }
            if let Some(k) = entry {
                println!(
                    "note  {}: listed as a known difference ({}) but matches now",
                    case.name, k.reason
                );
            }
            continue;
        }
        let fields: Vec<&str> = all.iter().map(|m| m.field.as_str()).collect();
        // A case fails on any mismatch that neither its entry names nor a
        // `field` line excuses in every case.
        let unexcused = known.unexcused(&case.name, &fields);
        let tag = match entry {
            _ if !unexcused.is_empty() => {
                failed += 1;
                match entry {
                    Some(k) => format!(
                        "FAIL  {}: listed for {} only, differs in {} too",
                        case.name,
                        k.fields.join(", "),
                        unexcused.join(", ")
                    ),
                    None => format!("FAIL  {}", case.name),
                }
            }
            Some(k) => {
                known_hit += 1;
                format!("known {} ({})", case.name, k.reason)
            }
            None => {
                // Only fields that differ on purpose in every case.
                known_hit += 1;
                if verbose > 0 {
                    let reason = known.field_reason(fields[0]).unwrap_or_default();
                    println!("known {} (field: {reason})", case.name);
                }
                continue;
            }
        };
        println!("{tag}  [{}:{}]", suite.corpus, case.line);
        for m in all
            .iter()
            .filter(|m| known.field_reason(&m.field).is_none())
        {
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
