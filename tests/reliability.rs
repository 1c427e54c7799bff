//! Black-box tests of what nowait survives and what it reports about it:
//!
//! - fault injection exists in test builds only (`-V` says so here; the
//!   release binary's refusal is checked by `scripts/test.sh`);
//! - a panic in a pool task: that request gets 500, the pool keeps its
//!   threads and the server goes on serving;
//! - log lines a writer dropped are on the status page;
//! - `$request_time` counts from the request's first byte, as nginx's
//!   `ngx_http_create_request` starts it, on a new and on a kept-alive
//!   connection;
//! - a client that stops reading in the middle of a body is closed after
//!   `send_timeout`, whichever way the body is sent.

mod common;

use std::io::Read;
use std::time::{Duration, Instant};

use common::cached::Cached;
use common::client::{Conn, State, get};
use common::{Conf, Server, TempDir, wait};

/// How long a test waits for an effect that follows a request.
const SETTLE: Duration = Duration::from_secs(10);

#[test]
fn test_builds_have_fault_injection() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nowait"))
        .arg("-V")
        .output()
        .expect("run nowait -V");
    let text = String::from_utf8_lossy(&out.stderr);
    let features = text
        .lines()
        .find(|l| l.starts_with("features:"))
        .unwrap_or_else(|| panic!("no features line in:\n{text}"));
    assert!(
        features.ends_with(", test fault injection"),
        "the binary the tests run was built without the test-faults feature: {features}"
    );
}

/// A nowait with one pool thread serving `dir/root` under `aio threads`,
/// with `env`.
fn one_pool_thread(dir: &std::path::Path, env: &[(&str, String)]) -> Cached {
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    for name in ["boom.txt", "ok.txt"] {
        std::fs::write(root.join(name), format!("{name}\n")).unwrap();
    }
    Cached::start_main(
        dir,
        "thread_pool disk threads=1;",
        &format!(
            "server {{ listen 127.0.0.1:{{port}}; root {root}; aio threads=disk;\n\
             location = /status {{ nowait_status; }} }}",
            root = root.display()
        ),
        env,
    )
}

#[test]
fn a_panic_in_a_pool_task_fails_that_request_alone() {
    let dir = TempDir::new("panic-task");
    let s = one_pool_thread(dir.path(), &[("NOWAIT_TEST_PANIC", "boom".into())]);
    assert_eq!(get(s.port, "/boom.txt").status, 500);
    assert!(
        wait::until(SETTLE, || s
            .error_log()
            .contains("task in thread pool \"disk\" panicked during open")),
        "the panic is not logged:\n{}",
        s.error_log()
    );
    // The pool's only thread survived: it serves the next requests.
    for _ in 0..3 {
        let r = get(s.port, "/ok.txt");
        assert_eq!((r.status, r.body.as_slice()), (200, &b"ok.txt\n"[..]));
    }
    assert_eq!(
        get(s.port, "/boom.txt").status,
        500,
        "and fails again alone"
    );
    assert_eq!(s.metric("nowait_pool_threads{pool=\"disk\"}"), 1);
    assert!(s.metric("nowait_pool_tasks_total{pool=\"disk\"}") >= 2);
}

#[test]
fn dropped_log_lines_are_on_the_status_page() {
    let dir = TempDir::new("log-metrics");
    let log = dir.path().join("access.log");
    let s = Cached::start(
        dir.path(),
        &format!(
            "server {{ listen 127.0.0.1:{{port}}; access_log {log};\n\
             location = /status {{ nowait_status; access_log off; }}\n\
             location / {{ return 204; }} }}",
            log = log.display()
        ),
        &[],
    );
    for _ in 0..3 {
        assert_eq!(get(s.port, "/x").status, 204);
    }
    let written = format!(
        "nowait_log_lines_written_total{{log=\"{}\"}}",
        log.display()
    );
    assert!(
        wait::until(SETTLE, || s.metric(&written) == 3),
        "{}",
        String::from_utf8_lossy(&get(s.port, "/status").body)
    );
    let page = String::from_utf8_lossy(&get(s.port, "/status").body).into_owned();
    for series in [
        format!(
            "nowait_log_lines_dropped_total{{log=\"{}\"}} 0",
            log.display()
        ),
        format!(
            "nowait_log_write_errors_total{{log=\"{}\"}} 0",
            log.display()
        ),
        format!(
            "nowait_log_lines_dropped_total{{log=\"{}\"}} 0",
            dir.path().join("error.log").display()
        ),
        "# TYPE nowait_log_lines_dropped_total counter".to_string(),
    ] {
        assert!(
            page.lines().any(|l| l == series),
            "no {series:?} in:\n{page}"
        );
    }
}

/// The `$request_time` values of the access log, as logged.
fn request_times(s: &Server) -> Vec<f64> {
    wait::read_text(&s.prefix().join("times.log"))
        .lines()
        .map(|l| l.parse().unwrap_or_else(|_| panic!("not a time: {l:?}")))
        .collect()
}

#[test]
fn request_time_starts_at_the_first_byte_of_the_request() {
    let conf = Conf::http(
        "log_format t $request_time;
         server {
             listen 127.0.0.1:{port};
             access_log {prefix}/times.log t;
             location / { return 204; }
         }",
    )
    .render();
    let s = Server::tested(&conf);
    let mut c = Conn::open(s.port());
    // A head sent in two parts: the time between them is the request's.
    c.send(b"GET /a HTTP/1.1\r\nHost: localhost\r\n");
    std::thread::sleep(Duration::from_millis(1500));
    c.send(b"\r\n");
    assert_eq!(c.response().expect("a response").status, 204);
    // Kept alive: the idle time before the next request is not its time,
    // the time from its first byte is.
    std::thread::sleep(Duration::from_millis(2500));
    c.send(b"GET /b HTTP/1.1\r\n");
    std::thread::sleep(Duration::from_millis(1200));
    c.send(b"Host: localhost\r\n\r\n");
    assert_eq!(c.response().expect("a response").status, 204);
    assert!(wait::until(SETTLE, || request_times(&s).len() == 2));
    let t = request_times(&s);
    assert!(t[0] >= 1.0, "the first request's time starts late: {t:?}");
    assert!(
        (0.9..2.5).contains(&t[1]),
        "the kept-alive request's time is not from its first byte: {t:?}"
    );
}

/// A document root with `huge.bin` (larger than what loopback socket
/// buffers hold in flight) and `x.txt`.
fn huge_root() -> (TempDir, usize) {
    const HUGE: usize = 64 * 1024 * 1024;
    let dir = TempDir::new("midbody-root");
    std::fs::write(dir.path().join("huge.bin"), vec![0x5a_u8; HUGE]).unwrap();
    std::fs::write(dir.path().join("x.txt"), "x\n").unwrap();
    for f in ["huge.bin", "x.txt"] {
        common::tmp::set_mode(&dir.path().join(f), 0o644);
    }
    (dir, HUGE)
}

#[test]
fn a_client_that_stops_reading_mid_body_is_closed_after_send_timeout() {
    let (dir, huge) = huge_root();
    for extra in [
        "sendfile on;",
        "sendfile off;",
        "sendfile on; aio threads;",
        "sendfile off; aio threads;",
    ] {
        let conf = Conf::server(&format!("root {{root}};\nsend_timeout 1s;\n{extra}"))
            .main("error_log err.log info;")
            .root(dir.path())
            .render();
        let s = Server::tested(&conf);
        let mut c = Conn::open(s.port());
        c.send(b"GET /huge.bin HTTP/1.1\r\nHost: localhost\r\n\r\n");
        // Read a few megabytes of the body, then stop reading.
        let mut buf = vec![0; 1 << 20];
        let mut total = 0usize;
        c.stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        while total < 4 << 20 {
            match c.stream.read(&mut buf) {
                Ok(0) | Err(_) => panic!("{extra}: the body stopped after {total} bytes"),
                Ok(n) => total += n,
            }
        }
        let log = s.prefix().join("err.log");
        assert!(
            wait::until(Duration::from_secs(15), || {
                let text = wait::read_text(&log);
                text.contains("[info]")
                    && text.contains("client timed out")
                    && text.contains("while sending response to client")
            }),
            "{extra}: no send timeout logged:\n{}",
            wait::read_text(&log)
        );
        let start = Instant::now();
        assert_eq!(
            c.wait_closed(Duration::from_secs(20)),
            State::Closed,
            "{extra}: the connection stays open after {:?}",
            start.elapsed()
        );
        assert!(
            total + c.pending().len() < huge,
            "{extra}: the whole file arrived"
        );
        assert_eq!(get(s.port(), "/x.txt").body, b"x\n", "{extra}");
    }
}
