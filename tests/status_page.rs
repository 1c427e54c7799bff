//! Black-box tests of the `nowait_status` location: each client gets its
//! format (Prometheus text, the live page, the JSON ring), the counters
//! belong to the process (several reloads under requests and they only
//! grow), and the live page, in a real headless Chromium, draws the load
//! it is given: quiet seconds, then a step of a known number of requests,
//! read back from the charts' SVG paths with the charts' own scale and
//! compared with the ring of per-second samples, second by second.
//!
//! The Chromium test needs Debian's `chromium` (scripts/install-test-deps.sh
//! installs it). Where it is missing it says `SKIPPED`, unless
//! `NOWAIT_REQUIRE_CHROMIUM=1` or `NOWAIT_REQUIRE_ALL=1` (scripts/test.sh
//! sets both) makes that a failure.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::client::{get, request};
use common::wait::until;
use common::{Conf, Server, TempDir};

/// Upper bound on a reload taking effect or the ring filling.
const WAIT: Duration = Duration::from_secs(15);
/// Chromium's virtual time for one load of the page: several of its
/// one-second refreshes.
const VIRTUAL_TIME_MS: u32 = 3000;
/// Upper bound on one Chromium run.
const CHROMIUM_TIMEOUT_S: u32 = 60;

/// A configuration with two workers, a pool, a static root, a status page,
/// `stub_status`, and a marker location that says which reload it is.
fn conf(root: &Path, version: u32) -> String {
    Conf::server(&format!(
        "root {{root}};\n\
         location / {{ aio threads=disk; }}\n\
         location = /status {{ nowait_status; }}\n\
         location = /basic {{ stub_status; }}\n\
         location = /version {{ return 200 \"v{version}\"; }}"
    ))
    .main("worker_processes 2;\nthread_pool disk threads=2;")
    .root(root)
    .render()
}

fn fixture() -> TempDir {
    let dir = TempDir::new("status-root");
    for i in 0..8 {
        std::fs::write(dir.path().join(format!("f{i}.txt")), vec![b'x'; 4096]).expect("write");
    }
    dir
}

/// The sums over all series of each metric of the Prometheus page that the
/// test follows (`name` → sum).
fn figures(port: u16) -> BTreeMap<&'static str, f64> {
    let page = common::body(&get(port, "/status"));
    let mut out = BTreeMap::new();
    for name in [
        "nowait_requests_total",
        "nowait_ttfb_seconds_count",
        "nowait_loop_turn_seconds_count",
        "nowait_loop_poll_seconds_count",
        "nowait_fast_path_total",
        "nowait_pool_tasks_total",
    ] {
        let sum = page
            .lines()
            .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        out.insert(name, sum);
    }
    // nginx's counter of requests, from stub_status's third number.
    let basic = common::body(&get(port, "/basic"));
    let requests = basic
        .lines()
        .nth(2)
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|n| n.parse().ok())
        .unwrap_or(-1.0);
    out.insert("stub_status requests", requests);
    out
}

#[test]
fn counters_keep_growing_across_reloads() {
    let root = fixture();
    let s = Server::nowait(&conf(root.path(), 0));
    let port = s.port();
    let mut last = figures(port);
    for version in 1..=4u32 {
        for i in 0..20 {
            assert_eq!(get(port, &format!("/f{}.txt", i % 8)).status, 200);
        }
        let now = figures(port);
        for (name, v) in &now {
            assert!(
                *v >= last[name],
                "{name} went back from {} to {v} before reload {version}",
                last[name]
            );
        }
        assert!(
            now["nowait_requests_total"] >= last["nowait_requests_total"] + 20.0,
            "20 requests counted: {last:?} → {now:?}"
        );
        assert!(now["stub_status requests"] >= last["stub_status requests"] + 20.0);
        assert!(now["nowait_loop_turn_seconds_count"] > last["nowait_loop_turn_seconds_count"]);
        last = now;
        s.write_conf(&conf(root.path(), version));
        let (status, stderr) = s.control("reload");
        assert!(status.success(), "-s reload: {status}: {stderr}");
        let want = format!("v{version}");
        assert!(
            until(WAIT, || common::body(&get(port, "/version")) == want),
            "reload {version} did not take effect"
        );
    }
    let end = figures(port);
    for (name, v) in &end {
        assert!(*v >= last[name], "{name} went back after the last reload");
    }
    // 80 file requests over four generations, all on the page.
    assert!(end["nowait_requests_total"] >= 80.0, "{end:?}");
    assert!(end["nowait_ttfb_seconds_count"] >= 80.0, "{end:?}");
}

#[test]
fn each_client_gets_its_format() {
    let root = fixture();
    let s = Server::nowait(&conf(root.path(), 0));
    let port = s.port();
    // A client of before the page, and Prometheus: the text.
    let plain = get(port, "/status");
    assert_eq!(plain.status, 200);
    assert!(
        plain
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/plain; version=0.0.4"))
    );
    assert!(common::body(&plain).contains("# TYPE nowait_loop_turn_seconds histogram"));
    let scrape = request(
        port,
        "GET /status HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\nConnection: close\r\n\r\n",
    );
    assert!(common::body(&scrape).contains("nowait_requests_total{worker="));
    // A browser: the page.
    let page = request(
        port,
        "GET /status HTTP/1.1\r\nHost: x\r\nAccept: text/html,application/xhtml+xml,*/*;q=0.8\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(
        page.header("content-type").as_deref(),
        Some("text/html; charset=utf-8")
    );
    assert!(common::body(&page).starts_with("<!DOCTYPE html>"));
    // ?format= decides before Accept.
    let text = request(
        port,
        "GET /status?format=prometheus HTTP/1.1\r\nHost: x\r\nAccept: text/html\r\nConnection: close\r\n\r\n",
    );
    assert!(common::body(&text).contains("# TYPE"));
    // The ring fills once a second.
    assert!(
        until(WAIT, || ring_seconds(port) >= 2),
        "the ring holds samples"
    );
    let json = get(port, "/status?format=json");
    assert_eq!(
        json.header("content-type").as_deref(),
        Some("application/json")
    );
    assert!(common::body(&json).contains("\"workers\":[{\"id\":1,"));
    // `since` leaves out the seconds up to it.
    assert_eq!(
        common::body(&get(port, "/status?format=json&since=99999999999")),
        "{\"seconds\":[]}"
    );
}

/// How many seconds the ring holds.
fn ring_seconds(port: u16) -> usize {
    common::body(&get(port, "/status?format=json"))
        .matches("\"t\":")
        .count()
}

/// Debian's Chromium, if installed.
fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// Runs headless Chromium on `url` with `args` and returns its stdout.
fn run_chromium(bin: &Path, profile: &Path, url: &str, args: &[&str]) -> String {
    let out = Command::new("timeout")
        .arg(CHROMIUM_TIMEOUT_S.to_string())
        .arg(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--window-size=1200,1000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--virtual-time-budget={VIRTUAL_TIME_MS}"))
        .args(args)
        .arg(url)
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether a dumped DOM holds chart `id` with its SVG drawn.
fn dom_has_chart(dom: &str, id: &str) -> bool {
    chart_section(dom, id).is_some_and(|rest| rest.contains("<svg") && rest.contains("<line"))
}

/// The part of a dumped DOM that is chart `id`'s box.
fn chart_section<'a>(dom: &'a str, id: &str) -> Option<&'a str> {
    let rest = dom.split(&format!("id=\"chart-{id}\"")).nth(1)?;
    Some(rest.split("class=\"chart\"").next().unwrap_or(rest))
}

/// The `d` of each chart's series path in a dumped DOM, by `data-series`.
fn series_paths(dom: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for tag in dom.split("<path ").skip(1) {
        let tag = tag.split('>').next().unwrap_or("");
        let attr = |name: &str| {
            let start = tag.find(&format!("{name}=\""))? + name.len() + 2;
            let len = tag[start..].find('"')?;
            Some(tag[start..start + len].to_string())
        };
        if let (Some(series), Some(d)) = (attr("data-series"), attr("d")) {
            out.insert(series, d);
        }
    }
    out
}

/// One second of the ring, the figures the requests and ttfb charts draw.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Sample {
    /// When the second ended (Unix seconds): the sample was taken in
    /// `[t, t + 1)` and counts what happened since the one before it.
    t: u64,
    requests: u64,
    p50_us: u64,
    p99_us: u64,
}

/// The number after `"name":` in `json`.
fn json_number(json: &str, name: &str) -> Option<u64> {
    let at = json.find(&format!("\"{name}\":"))? + name.len() + 3;
    let digits: String = json[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The ring as the page fetches it (`?format=json`), oldest first.
fn ring(port: u16) -> Vec<Sample> {
    let json = common::body(&get(port, "/status?format=json"));
    json.split("{\"t\":")
        .skip(1)
        .map(|one| {
            let one = format!("\"t\":{one}");
            let field =
                |name| json_number(&one, name).unwrap_or_else(|| panic!("no {name} in {one}"));
            Sample {
                t: field("t"),
                requests: field("requests"),
                p50_us: field("ttfb_p50_us"),
                p99_us: field("ttfb_p99_us"),
            }
        })
        .collect()
}

/// The wall clock, as the sampler reads it (Unix seconds).
fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is past 1970")
        .as_secs_f64()
}

// The page's chart geometry (status_page.html: W, H, PAD_L, PAD_R, PAD_T,
// PAD_B, MIN_WINDOW, WINDOW), to read the drawn points back as values.
const W: f64 = 600.0;
const H: f64 = 140.0;
const PAD_L: f64 = 48.0;
const PAD_R: f64 = 6.0;
const PAD_T: f64 = 8.0;
const PAD_B: f64 = 16.0;
const MIN_WINDOW: u64 = 60;
const MAX_WINDOW: u64 = 300;

/// The page's `niceMax`: the y axis' top for a largest value `v`.
fn nice_max(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|top| v <= *top)
        .unwrap_or(10.0 * p)
}

/// The points of a series path (`M x,y L x,y …`), in order.
fn path_points(d: &str) -> Vec<(f64, f64)> {
    d.split(['M', 'L'])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (x, y) = p.split_once(',').unwrap_or_else(|| panic!("point {p:?}"));
            (
                x.parse().unwrap_or_else(|_| panic!("x {x:?}")),
                y.parse().unwrap_or_else(|_| panic!("y {y:?}")),
            )
        })
        .collect()
}

/// The window a chart says it draws (its `-N s` axis label), seconds.
fn drawn_window(section: &str) -> u64 {
    section
        .split(">-")
        .skip(1)
        .find_map(|rest| rest.split_once(" s<")?.0.parse().ok())
        .unwrap_or_else(|| panic!("no window label in {section}"))
}

/// A series read back from its path: (seconds before the last drawn
/// second, value), with the scale the page drew it with (`top`, the
/// window).
fn decode(d: &str, window: u64, top: f64) -> Vec<(i64, f64)> {
    path_points(d)
        .into_iter()
        .map(|(x, y)| {
            let before = (W - PAD_R - x) / (W - PAD_L - PAD_R) * window as f64;
            let rounded = before.round();
            assert!(
                (before - rounded).abs() < 0.1,
                "x {x} is no whole second of a {window} s window"
            );
            let v = (1.0 - (y - PAD_T) / (H - PAD_T - PAD_B)) * top;
            (-(rounded as i64), v)
        })
        .collect()
}

/// Largest error of a value read back: `y` is drawn to 0.1 of a unit.
fn tolerance(top: f64) -> f64 {
    top * 0.06 / (H - PAD_T - PAD_B)
}

/// A series the page drew: its name and each second's expected value.
type Expected<'a> = (&'a str, fn(&Sample) -> f64);

/// Finds the last second the page drew (it fetched the ring some time
/// before `samples` was read): the one for which every series of a chart
/// reads back, point for point, as `samples` say, one point per second of
/// the window. Returns it, with the decoded series.
fn match_drawn(
    dom: &str,
    chart: &str,
    series: &[Expected<'_>],
    samples: &[Sample],
) -> (u64, Vec<Vec<(i64, f64)>>) {
    let section = chart_section(dom, chart).unwrap_or_else(|| panic!("no {chart} chart"));
    let paths = series_paths(section);
    let label = drawn_window(section);
    let mut tried = Vec::new();
    for end in samples.iter().rev() {
        let shown: Vec<&Sample> = samples.iter().filter(|x| x.t <= end.t).collect();
        let span = end.t - shown[0].t;
        let window = span.clamp(MIN_WINDOW, MAX_WINDOW);
        let drawn: Vec<&Sample> = shown
            .into_iter()
            .filter(|x| x.t + window >= end.t)
            .collect();
        let top = nice_max(
            series
                .iter()
                .flat_map(|(_, value)| drawn.iter().map(|x| value(x)))
                .fold(0.0, f64::max),
        );
        let decoded: Vec<Vec<(i64, f64)>> = series
            .iter()
            .map(|(name, _)| {
                let d = paths
                    .get(*name)
                    .unwrap_or_else(|| panic!("no {name:?} path in {chart}: {paths:?}"));
                decode(d, window, top)
            })
            .collect();
        let fits = window == label
            && series.iter().zip(&decoded).all(|((_, value), points)| {
                points.len() == drawn.len()
                    && points.iter().zip(&drawn).all(|((before, v), x)| {
                        *before == x.t as i64 - end.t as i64
                            && (v - value(x)).abs() <= tolerance(top)
                    })
            });
        if fits {
            return (end.t, decoded);
        }
        tried.push(format!("ending {}: {decoded:?}", end.t));
    }
    panic!(
        "the {chart} chart does not draw the ring's seconds: window {label} s, \
         read back {:?}\nring: {samples:?}",
        tried.first()
    );
}

/// The requests/s chart's series, and the ttfb chart's (ms, as drawn).
const REQUESTS: &[Expected<'_>] = &[("requests/s", |x| x.requests as f64)];
const TTFB: &[Expected<'_>] = &[
    ("p50", |x| x.p50_us as f64 / 1000.0),
    ("p99", |x| x.p99_us as f64 / 1000.0),
];

/// Requests of the load step.
const LOAD: u64 = 120;
/// Pause between two of them: the step lasts over a second.
const LOAD_PAUSE: Duration = Duration::from_millis(10);
/// Silence before the step: two whole seconds without a request.
const QUIET_BEFORE: Duration = Duration::from_millis(3500);
/// Silence after it, so that a second ends after the step before the
/// ring is read.
const QUIET_AFTER: Duration = Duration::from_millis(2200);

#[test]
fn the_live_page_draws_the_load_it_is_given_in_chromium() {
    let bin = chromium();
    let required = std::env::var_os("NOWAIT_REQUIRE_CHROMIUM").is_some_and(|v| v == "1");
    assert!(
        bin.is_some() || !required,
        "chromium is missing: scripts/install-test-deps.sh installs it"
    );
    common::require_or_skip!(
        bin.is_some(),
        "chromium is not installed (scripts/install-test-deps.sh installs it; scripts/test.sh \
         requires it)"
    );
    let Some(bin) = bin else { return };
    let root = fixture();
    let s = Server::nowait(&conf(root.path(), 0));
    let port = s.port();
    // Each of the test's requests counts, its polls of the ring too: after
    // the last poll, nothing for a while, then LOAD requests, then nothing.
    assert!(until(WAIT, || ring_seconds(port) >= 2), "the ring fills");
    let polled = unix_now();
    std::thread::sleep(QUIET_BEFORE);
    let start = unix_now();
    for i in 0..LOAD {
        assert_eq!(get(port, &format!("/f{}.txt", i % 8)).status, 200);
        std::thread::sleep(LOAD_PAUSE);
    }
    let end = unix_now();
    std::thread::sleep(QUIET_AFTER);
    let read = unix_now();
    let before = ring(port);

    // The ring: a second taken after the last poll and ending before the
    // step began counts nothing; the seconds from the one the step began
    // in to the first that ended after it count the step's requests, all
    // of them; the seconds after, until the ring was read, nothing again.
    let quiet = |x: &&Sample| x.t as f64 + 1.0 <= start;
    let idle: Vec<&Sample> = before
        .windows(2)
        .filter(|w| w[0].t as f64 >= polled.ceil())
        .map(|w| &w[1])
        .filter(quiet)
        .collect();
    assert!(
        !idle.is_empty(),
        "no whole quiet second before the step: {before:?}"
    );
    for x in &idle {
        assert_eq!(
            (x.requests, x.p50_us, x.p99_us),
            (0, 0, 0),
            "a quiet second: {x:?}"
        );
    }
    let last = before
        .iter()
        .find(|x| x.t as f64 >= end.ceil())
        .filter(|x| x.t as f64 + 1.0 <= read)
        .unwrap_or_else(|| panic!("no second ended between the step and the read: {before:?}"));
    let step: Vec<&Sample> = before
        .iter()
        .filter(|x| x.t >= start as u64 && x.t <= last.t)
        .collect();
    assert_eq!(
        step.iter().map(|x| x.requests).sum::<u64>(),
        LOAD,
        "the step's seconds count its requests: {step:?}"
    );
    for x in step.iter().filter(|x| x.requests > 0) {
        assert!(x.p50_us > 0 && x.p99_us >= x.p50_us, "ttfb of {x:?}");
    }
    for x in before
        .iter()
        .filter(|x| x.t > last.t && x.t as f64 + 1.0 <= read)
    {
        assert_eq!(x.requests, 0, "a quiet second after the step: {x:?}");
    }

    // The page: each chart's path, read back with the chart's scale, is
    // the ring, one point per second.
    let profile = TempDir::new("chromium-profile");
    let url = format!("http://127.0.0.1:{port}/status");
    let dom = run_chromium(&bin, profile.path(), &url, &["--dump-dom"]);
    let after = ring(port);
    let (drawn_end, requests) = match_drawn(&dom, "requests", REQUESTS, &after);
    let (ttfb_end, ttfb) = match_drawn(&dom, "ttfb", TTFB, &after);
    assert_eq!(drawn_end, ttfb_end, "both charts draw the same fetch");
    assert!(drawn_end >= last.t, "the page drew the step's seconds");
    let at = |series: &[(i64, f64)], t: u64| -> f64 {
        series
            .iter()
            .find(|(before, _)| *before == t as i64 - drawn_end as i64)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("second {t} is not drawn: {series:?}"))
    };
    let requests = &requests[0];
    for x in &idle {
        assert!(at(requests, x.t).abs() < 0.5, "drawn quiet second {}", x.t);
    }
    let drawn_step: f64 = step.iter().map(|x| at(requests, x.t)).sum();
    assert!(
        (drawn_step - LOAD as f64).abs() < 0.5 * step.len() as f64,
        "the drawn step is {drawn_step} requests, want {LOAD}"
    );
    let (p50, p99) = (&ttfb[0], &ttfb[1]);
    for x in step.iter().filter(|x| x.requests > 0) {
        assert!(at(p50, x.t) > 0.0, "p50 drawn for second {}", x.t);
        assert!(at(p99, x.t) >= at(p50, x.t), "p99 drawn for second {}", x.t);
    }

    // The other charts and a screenshot.
    let paths = series_paths(&dom);
    for series in ["worker 1 p99", "worker 2 max", "disk"] {
        let d = paths
            .get(series)
            .unwrap_or_else(|| panic!("no {series:?} path in the page: {paths:?}"));
        assert!(path_points(d).len() >= 2, "{series}: {d}");
    }
    for chart in [
        "requests",
        "ttfb",
        "turn",
        "pool_depth",
        "pool_wait",
        "fast",
        "cache",
    ] {
        assert!(dom_has_chart(&dom, chart), "the page has the {chart} chart");
    }
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("status-page");
    std::fs::create_dir_all(&artifacts).expect("artifact directory");
    let shot = artifacts.join("status-page.png");
    let _ = std::fs::remove_file(&shot);
    run_chromium(
        &bin,
        profile.path(),
        &url,
        &[&format!("--screenshot={}", shot.display())],
    );
    let png = std::fs::read(&shot).expect("the screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a PNG at {}", shot.display());
    eprintln!("status page screenshot: {}", shot.display());
}
