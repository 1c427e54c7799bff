//! Black-box tests of the `nowait_status` location: each client gets its
//! format (Prometheus text, the live page, the JSON ring), the counters
//! belong to the process (several reloads under requests and they only
//! grow), and the live page draws charts that move, in a real headless
//! Chromium.
//!
//! The Chromium test needs Debian's `chromium` (scripts/install-test-deps.sh
//! installs it). Where it is missing it says so and passes, unless
//! `NOWAIT_REQUIRE_CHROMIUM=1` (scripts/test.sh sets it) makes that a
//! failure.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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
    dom.split(&format!("id=\"chart-{id}\""))
        .nth(1)
        .is_some_and(|rest| {
            let rest = rest.split("class=\"chart\"").next().unwrap_or(rest);
            rest.contains("<svg") && rest.contains("<line")
        })
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

#[test]
fn the_live_page_draws_charts_that_move_in_chromium() {
    let Some(bin) = chromium() else {
        let required = std::env::var_os("NOWAIT_REQUIRE_CHROMIUM").is_some_and(|v| v == "1");
        assert!(
            !required,
            "chromium is missing: scripts/install-test-deps.sh installs it"
        );
        eprintln!(
            "SKIPPED the_live_page_draws_charts_that_move_in_chromium: chromium is not installed \
             (scripts/install-test-deps.sh installs it; scripts/test.sh requires it)"
        );
        return;
    };
    let root = fixture();
    let s = Server::nowait(&conf(root.path(), 0));
    let port = s.port();
    // A little load for the charts, paced so as not to take the machine.
    let stop = Arc::new(AtomicBool::new(false));
    let load = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let _ = get(port, &format!("/f{}.txt", i % 8));
                i += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    assert!(until(WAIT, || ring_seconds(port) >= 3), "the ring fills");
    let profile = TempDir::new("chromium-profile");
    let url = format!("http://127.0.0.1:{port}/status");
    let first = series_paths(&run_chromium(&bin, profile.path(), &url, &["--dump-dom"]));
    std::thread::sleep(Duration::from_millis(2500));
    let second_dom = run_chromium(&bin, profile.path(), &url, &["--dump-dom"]);
    let second = series_paths(&second_dom);
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
    stop.store(true, Ordering::Relaxed);
    let _ = load.join();
    for series in [
        "requests/s",
        "p50",
        "p99",
        "worker 1 p99",
        "worker 2 max",
        "disk",
    ] {
        let d = first
            .get(series)
            .unwrap_or_else(|| panic!("no {series:?} path in the page: {first:?}"));
        assert!(d.starts_with('M') && d.contains('L'), "{series}: {d}");
    }
    assert_ne!(
        first["requests/s"], second["requests/s"],
        "the requests chart moves between two loads 2.5 s apart"
    );
    assert_ne!(first["worker 1 p99"], second["worker 1 p99"]);
    for chart in [
        "requests",
        "ttfb",
        "turn",
        "pool_depth",
        "pool_wait",
        "fast",
        "cache",
    ] {
        assert!(
            dom_has_chart(&second_dom, chart),
            "the page has the {chart} chart"
        );
    }
    let png = std::fs::read(&shot).expect("the screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a PNG at {}", shot.display());
    eprintln!("status page screenshot: {}", shot.display());
}
