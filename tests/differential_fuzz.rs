//! Differential fuzzing of request parsing: mutated requests (seeded from
//! `differential/corpus.txt`) sent to nowait and to the real nginx 1.22
//! with the same configuration, outcomes compared and sorted into classes
//! (see `differential/fuzz.rs` for the method).
//!
//! Two bounded runs are part of the test command, each a few seconds from
//! a fixed seed: the static server (`differential/nginx.conf`) and the
//! proxy (both proxies in front of a recording origin; what each forwarded
//! is compared too). Each fails on a hung connection or on a class of
//! difference not listed in `differential/known-differences.txt` as
//! `fuzz CLASS: reason`.
//!
//! Longer runs: `scripts/fuzz-requests.py` (it runs the ignored
//! `fuzz_run` below with these variables):
//! - `NOWAIT_FUZZ_SEED` (default 1), `NOWAIT_FUZZ_COUNT` (cases, default
//!   1000), `NOWAIT_FUZZ_SECONDS` (a time limit, default none),
//!   `NOWAIT_FUZZ_JOBS` (cases at once, default 2; proxy mode runs one),
//!   `NOWAIT_FUZZ_MODE` (`static` or `proxy`), `NOWAIT_FUZZ_REPORT` (a file
//!   for the report besides stdout), `NOWAIT_FUZZ_FIRST` (the first index).
//! - `NOWAIT_DIFF_SELF=1`: a second nginx in place of nowait, which shows
//!   how much the method itself disagrees (it should be nothing).
//!
//! Needs `/usr/sbin/nginx` (scripts/install-test-deps.sh).

mod common;
#[path = "differential/compare.rs"]
#[allow(dead_code)]
mod compare;
#[path = "differential/corpus.rs"]
#[allow(dead_code)]
mod corpus;
#[path = "differential/fuzz.rs"]
mod fuzz;

use std::path::Path;
use std::time::{Duration, Instant};

use common::proxy::conf as proxy_conf;
use common::server::{Kind, NGINX_BIN};
use common::{Fixture, Server};
use fuzz::{
    Found, Origin, QUIET, QUIET_CONFIRM, Report, classify, forward_class, forwarded, probe,
};

/// The fixed seed of the bounded runs.
const TEST_SEED: u64 = 20_261_124;
/// How long the bounded static run may take.
const TEST_STATIC_TIME: Duration = Duration::from_secs(5);
/// How long the bounded proxy run may take.
const TEST_PROXY_TIME: Duration = Duration::from_secs(3);
/// Cases at once in the bounded static run.
const TEST_JOBS: usize = 2;

fn data(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/differential")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn known() -> corpus::Known {
    corpus::parse_known(&data("known-differences.txt"))
        .unwrap_or_else(|e| panic!("known-differences.txt:\n{}", e.join("\n")))
}

fn seeds() -> Vec<Vec<u8>> {
    let cases = corpus::parse_corpus(&data("corpus.txt"))
        .unwrap_or_else(|e| panic!("corpus.txt:\n{}", e.join("\n")))
        .into_iter()
        .collect::<Vec<_>>();
    fuzz::seeds(&cases)
}

fn tested_kind() -> Kind {
    if std::env::var_os("NOWAIT_DIFF_SELF").is_some_and(|v| v == "1") {
        Kind::Nginx
    } else {
        Kind::Nowait
    }
}

fn need_nginx() {
    assert!(
        Path::new(NGINX_BIN).exists(),
        "{NGINX_BIN} is missing: the differential fuzzer needs the real nginx. \
         Install it with scripts/install-test-deps.sh (as root)."
    );
}

/// Both probes at once.
fn probe_both(a: u16, b: u16, req: &[u8], quiet: Duration) -> (fuzz::Probe, fuzz::Probe) {
    std::thread::scope(|s| {
        let tb = s.spawn(|| probe(b, req, quiet));
        let pa = probe(a, req, quiet);
        (pa, tb.join().unwrap_or_else(|_| panic!("probe panicked")))
    })
}

/// Runs the static-server fuzzer.
fn run_static(seed: u64, first: u64, count: u64, deadline: Instant, jobs: usize) -> Report {
    need_nginx();
    let seeds = seeds();
    let fixture = Fixture::build();
    let conf = data("nginx.conf").replace("{root}", &fixture.root().to_string_lossy());
    let reference = Server::nginx(&conf);
    let tested = Server::start(tested_kind(), &conf);
    let (a, b) = (reference.port(), tested.port());
    let one = |i: u64| -> (Vec<u8>, Found) {
        let req = fuzz::mutate(&seeds, seed, first + i);
        let mut quiet = QUIET;
        loop {
            let (pa, pb) = probe_both(a, b, &req, quiet);
            match classify(&req, (&pa, a), (&pb, b)) {
                Some(_) if quiet == QUIET => quiet = QUIET_CONFIRM,
                class => return (req, class.map(|c| (c, pa.bytes, pb.bytes))),
            }
        }
    };
    let report = fuzz::run_many(count, deadline, jobs, &one);
    if report.hung > 0 {
        eprintln!("--- nowait stderr ---\n{}", tested.stderr());
    }
    report
}

/// Runs the proxy fuzzer: one case at a time, since each origin's record
/// is read per case.
fn run_proxy(seed: u64, first: u64, count: u64, deadline: Instant) -> Report {
    need_nginx();
    let seeds = seeds();
    let (oa, ob) = (Origin::start(), Origin::start());
    let conf = |o: &Origin| {
        proxy_conf(
            None,
            "",
            &format!("location / {{ proxy_pass http://127.0.0.1:{}; }}", o.port),
        )
    };
    let reference = Server::nginx(&conf(&oa));
    let tested = Server::start(tested_kind(), &conf(&ob));
    let (a, b) = (reference.port(), tested.port());
    let one = |i: u64| -> (Vec<u8>, Found) {
        let req = fuzz::mutate(&seeds, seed, first + i);
        let mut quiet = QUIET;
        loop {
            oa.take();
            ob.take();
            let (pa, pb) = probe_both(a, b, &req, quiet);
            let (fa, fb) = (
                forwarded(&oa.take(), oa.port),
                forwarded(&ob.take(), ob.port),
            );
            // A difference the client sees shows the replies; one only the
            // origin sees shows what each proxy forwarded.
            let found = match classify(&req, (&pa, a), (&pb, b)) {
                Some(c) => Some((c, pa.bytes, pb.bytes)),
                None => forward_class(&fa, &fb).map(|c| (c, fa.into_bytes(), fb.into_bytes())),
            };
            match found {
                Some(_) if quiet == QUIET => quiet = QUIET_CONFIRM,
                found => return (req, found.map(|(c, x, y)| (format!("proxy {c}"), x, y))),
            }
        }
    };
    fuzz::run_many(count, deadline, 1, &one)
}

/// Prints the report and fails on a hang or an unlisted class.
fn check(report: &Report, seed: u64) {
    let known = known();
    println!("{}", report.render(seed, &known.fuzz));
    let unlisted: Vec<&String> = report
        .classes
        .keys()
        .filter(|c| !known.fuzz.contains_key(*c))
        .collect();
    assert_eq!(report.hung, 0, "a server hung (see the report above)");
    assert!(
        unlisted.is_empty(),
        "classes of differences not in known-differences.txt: {unlisted:#?}"
    );
}

/// A few seconds of the static server's fuzzing from a fixed seed.
#[test]
fn fuzz_static_agrees_with_nginx() {
    let deadline = Instant::now() + TEST_STATIC_TIME;
    let report = run_static(TEST_SEED, 0, u64::MAX, deadline, TEST_JOBS);
    check(&report, TEST_SEED);
}

/// A few seconds of the proxy's fuzzing from a fixed seed.
#[test]
fn fuzz_proxy_agrees_with_nginx() {
    let deadline = Instant::now() + TEST_PROXY_TIME;
    let report = run_proxy(TEST_SEED, 0, u64::MAX, deadline);
    check(&report, TEST_SEED);
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}={v:?} is not a number"))
        })
        .unwrap_or(default)
}

/// The long run the script drives; see the file header.
#[test]
#[ignore = "run by scripts/fuzz-requests.py"]
fn fuzz_run() {
    let seed = env_u64("NOWAIT_FUZZ_SEED", 1);
    let count = env_u64("NOWAIT_FUZZ_COUNT", 1000);
    let first = env_u64("NOWAIT_FUZZ_FIRST", 0);
    let jobs = env_u64("NOWAIT_FUZZ_JOBS", 2) as usize;
    let deadline = match std::env::var("NOWAIT_FUZZ_SECONDS") {
        Ok(_) => Instant::now() + Duration::from_secs(env_u64("NOWAIT_FUZZ_SECONDS", 0)),
        Err(_) => Instant::now() + Duration::from_secs(365 * 24 * 3600),
    };
    let mode = std::env::var("NOWAIT_FUZZ_MODE").unwrap_or_else(|_| "static".into());
    let started = Instant::now();
    let report = match mode.as_str() {
        "static" => run_static(seed, first, count, deadline, jobs),
        "proxy" => run_proxy(seed, first, count, deadline),
        other => panic!("NOWAIT_FUZZ_MODE={other:?}: want static or proxy"),
    };
    let mut text = report.render(seed, &known().fuzz);
    text.push_str(&format!(
        "\nmode {mode}, first index {first}, {} jobs, {:.1} s\n",
        jobs,
        started.elapsed().as_secs_f64()
    ));
    println!("{text}");
    if let Ok(path) = std::env::var("NOWAIT_FUZZ_REPORT") {
        std::fs::write(&path, &text).unwrap_or_else(|e| panic!("write {path}: {e}"));
    }
}
