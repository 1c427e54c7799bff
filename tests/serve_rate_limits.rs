//! Black-box tests of `limit_req` (burst, `nodelay`, `delay=`, the
//! status, the dry run, `$limit_req_status`, the delay as a timer that
//! leaves the worker free, zones kept across a reload) and of
//! `limit_conn` (counts held while a request is served, given back after,
//! `$limit_conn_status`, the dry run).
//!
//! They use [`Server::tested`]: `NOWAIT_TEST_NGINX=1` runs them against
//! nginx, which must pass them all (the log lines checked are nginx's).

mod common;

use std::time::{Duration, Instant};

use common::client::{Conn, get};
use common::{Conf, Fixture, Server, Upstream, body, wait};

/// How long a test waits for a line the server logs after answering.
const LOG_WAIT: Duration = Duration::from_secs(5);

/// The server under test with `http` (zones) and `server` (its block,
/// whose `{root}` is the fixture's), logging at `info`. (A `return`
/// answers in the rewrite phase, before any limit: the locations serve
/// files, and headers show the variables.)
fn serve(f: &Fixture, http: &str, server: &str) -> Server {
    let conf = Conf::http(&format!(
        "{http}\nserver {{ listen 127.0.0.1:{{port}}; server_name localhost;\n{server}\n}}"
    ))
    .root(f.root())
    .render()
    .replace("error_log stderr;", "error_log stderr info;");
    Server::tested(&conf)
}

/// `X-Status` of `GET path`.
fn x_status(s: &Server, path: &str) -> Option<String> {
    get(s.port(), path).header("X-Status")
}

fn status(s: &Server, path: &str) -> u16 {
    get(s.port(), path).status
}

/// Waits (bounded) for a logged line holding every one of `parts`.
fn logged(s: &Server, parts: &[&str]) -> bool {
    wait::until(LOG_WAIT, || {
        s.stderr()
            .lines()
            .any(|l| parts.iter().all(|p| l.contains(p)))
    })
}

/// Sends `GET path` on a connection of its own and leaves it waiting.
fn start(s: &Server, path: &str) -> Conn {
    let mut c = Conn::open(s.port());
    c.send(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes());
    c
}

#[test]
fn burst_nodelay_then_refusal() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "limit_req_zone $binary_remote_addr zone=one:1m rate=1r/m;",
        "root {root}; add_header X-Status $limit_req_status always;
         location / { limit_req zone=one burst=1 nodelay; }
         location /status { limit_req zone=one; limit_req_status 429; }",
    );
    let first = get(s.port(), "/");
    assert_eq!(first.status, 200);
    assert_eq!(first.header("X-Status").as_deref(), Some("PASSED"));
    assert_eq!(status(&s, "/"), 200, "the burst");
    let refused = get(s.port(), "/");
    assert_eq!(refused.status, 503);
    assert_eq!(refused.header("X-Status").as_deref(), Some("REJECTED"));
    assert!(body(&refused).contains("503 Service Temporarily Unavailable"));
    assert_eq!(status(&s, "/status"), 429);
    assert!(logged(
        &s,
        &[
            "[error]",
            "limiting requests, excess: 2.000 by zone \"one\""
        ]
    ));
}

#[test]
fn a_delayed_request_waits_on_a_timer_not_the_worker() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "limit_req_zone $binary_remote_addr zone=one:1m rate=2r/s;",
        "root {root}; add_header X-Status $limit_req_status always;
         location /dir/ { limit_req zone=one burst=5; }",
    );
    assert_eq!(x_status(&s, "/dir/file.txt").as_deref(), Some("PASSED"));
    let t = Instant::now();
    let mut delayed = start(&s, "/dir/file.txt");
    // One worker: a free request is answered while the other one waits.
    assert_eq!(body(&get(s.port(), "/noext")), "no extension\n");
    let r = delayed.response().expect("the delayed request is answered");
    assert_eq!(body(&r), "dir file\n");
    assert_eq!(r.header("X-Status").as_deref(), Some("DELAYED"));
    assert!(
        t.elapsed() >= Duration::from_millis(400),
        "it waited about 1/rate"
    );
    assert!(logged(
        &s,
        &["[warn]", "delaying request, excess: ", ", by zone \"one\""]
    ));
}

#[test]
fn delay_lets_the_first_requests_through_at_once() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "limit_req_zone $binary_remote_addr zone=one:1m rate=30r/m;",
        "root {root}; add_header X-Status $limit_req_status always;
         location / { limit_req zone=one burst=2 delay=1; }",
    );
    assert_eq!(x_status(&s, "/").as_deref(), Some("PASSED"));
    assert_eq!(
        x_status(&s, "/").as_deref(),
        Some("PASSED"),
        "within delay=1"
    );
    let mut third = start(&s, "/");
    assert_eq!(status(&s, "/"), 503, "over the burst while the third waits");
    let r = third.response().expect("the third request is answered");
    assert_eq!(r.header("X-Status").as_deref(), Some("DELAYED"));
}

#[test]
fn dry_run_counts_but_never_refuses() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "limit_req_zone $binary_remote_addr zone=one:1m rate=1r/m;",
        "root {root}; limit_req_dry_run on; add_header X-Status $limit_req_status always;
         location / { limit_req zone=one; }
         location /dir/ { }",
    );
    assert_eq!(x_status(&s, "/").as_deref(), Some("PASSED"));
    let r = get(s.port(), "/");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("X-Status").as_deref(), Some("REJECTED_DRY_RUN"));
    assert_eq!(x_status(&s, "/dir/"), None, "not found without limit_req");
    assert!(logged(&s, &["limiting requests, dry run, excess:"]));
}

#[test]
fn an_empty_key_is_not_limited() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "limit_req_zone $arg_key zone=one:1m rate=1r/m;",
        "root {root}; add_header X-Status $limit_req_status always;
         location / { limit_req zone=one; }",
    );
    assert_eq!(x_status(&s, "/?key=a").as_deref(), Some("PASSED"));
    assert_eq!(status(&s, "/?key=a"), 503);
    assert_eq!(status(&s, "/?key=b"), 200, "another key has its own bucket");
    assert_eq!(x_status(&s, "/"), None);
    assert_eq!(x_status(&s, "/"), None);
}

#[test]
fn a_reload_keeps_the_buckets() {
    let f = Fixture::build();
    let http = "limit_req_zone $binary_remote_addr zone=one:1m rate=1r/m;";
    let server = "root {root}; location / { limit_req zone=one; add_header X-Gen first; }";
    let s = serve(&f, http, server);
    assert_eq!(status(&s, "/"), 200);
    // The same zone under a configuration that changed elsewhere: the
    // bucket the first request filled still refuses the next one.
    let conf = std::fs::read_to_string(s.conf_path()).expect("read the configuration");
    s.write_conf(&conf.replace("X-Gen first", "X-Gen second"));
    s.signal("HUP");
    assert!(wait::until(LOG_WAIT, || {
        let r = get(s.port(), "/");
        r.status == 503 && r.header("X-Gen").is_none()
            || r.header("X-Gen").as_deref() == Some("second")
    }));
    assert_eq!(status(&s, "/"), 503);
}

/// An upstream that answers `ok`, after `hold` for targets holding `slow`.
fn upstream(hold: Duration) -> Upstream {
    Upstream::start(move |c| {
        let Some(req) = c.read_request() else {
            return;
        };
        if req.target().contains("slow") {
            c.sleep(hold.as_millis() as u64);
        }
        c.write(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok");
    })
}

#[test]
fn limit_conn_counts_requests_being_served() {
    let f = Fixture::build();
    let up = upstream(Duration::from_millis(1500));
    let s = serve(
        &f,
        "limit_conn_zone $binary_remote_addr zone=conn:1m;",
        &format!(
            "root {{root}}; limit_conn conn 1; limit_conn_log_level warn;
             add_header X-Conn $limit_conn_status always;
             location / {{ proxy_pass http://127.0.0.1:{port}; limit_conn_status 501; }}
             location /dir/ {{ limit_conn_dry_run on; }}",
            port = up.port()
        ),
    );
    assert_eq!(
        get(s.port(), "/fast").header("X-Conn").as_deref(),
        Some("PASSED")
    );
    let mut slow = start(&s, "/slow");
    assert!(wait::until(LOG_WAIT, || up.requests().len() == 2));
    let r = get(s.port(), "/fast");
    assert_eq!(r.status, 501);
    assert_eq!(r.header("X-Conn").as_deref(), Some("REJECTED"));
    let dry = get(s.port(), "/dir/file.txt");
    assert_eq!(dry.status, 200);
    assert_eq!(dry.header("X-Conn").as_deref(), Some("REJECTED_DRY_RUN"));
    assert!(logged(
        &s,
        &["[warn]", "limiting connections by zone \"conn\""]
    ));
    assert!(logged(
        &s,
        &["[warn]", "limiting connections, dry run, by zone \"conn\""]
    ));
    assert_eq!(
        body(&slow.response().expect("the slow request is answered")),
        "ok"
    );
    // Its count went back with it.
    assert_eq!(get(s.port(), "/fast").status, 200);
}

#[test]
fn a_delayed_request_holds_no_connection_count_yet() {
    // limit_req runs before limit_conn: a request waiting in limit_req's
    // delay has not been counted.
    let f = Fixture::build();
    let s = serve(
        &f,
        "limit_conn_zone $binary_remote_addr zone=conn:1m;
         limit_req_zone $binary_remote_addr zone=hold:1m rate=1r/s;",
        "root {root}; limit_conn conn 1; add_header X-Conn $limit_conn_status always;
         location /dir/ { limit_req zone=hold burst=5; }",
    );
    assert_eq!(status(&s, "/dir/file.txt"), 200);
    let mut held = start(&s, "/dir/file.txt");
    let r = get(s.port(), "/noext");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("X-Conn").as_deref(), Some("PASSED"));
    assert_eq!(body(&held.response().expect("answered")), "dir file\n");
}

#[test]
fn a_client_that_leaves_during_the_delay_is_logged_499() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "limit_req_zone $binary_remote_addr zone=one:1m rate=1r/s;
         log_format st \"$request_uri $status $limit_req_status\";",
        "root {root}; access_log {prefix}/status.log st;
         location / { limit_req zone=one burst=5; }",
    );
    assert_eq!(status(&s, "/noext?first"), 200);
    let delayed = start(&s, "/noext?second");
    std::thread::sleep(Duration::from_millis(200));
    drop(delayed);
    let log = s.prefix().join("status.log");
    assert!(wait::until(LOG_WAIT, || {
        wait::read_text(&log).contains("/noext?second 499 DELAYED")
    }));
    assert!(logged(
        &s,
        &["[info]", "client prematurely closed connection"]
    ));
}

/// A request's `limit_conn` count goes back once it is answered and
/// logged, not when its connection has finished waiting for the log writer
/// (up to 200 ms before a close, longer than a client takes to send its
/// next request on another connection): that request was refused, as
/// limit_conn.t's "passed" was on a loaded machine. The log file's writes
/// are stalled here (fault injection) as a busy disk would.
#[test]
fn a_count_goes_back_before_the_wait_for_the_log_writer() {
    let tmp = common::TempDir::new("limit-conn-log");
    let root = tmp.path().join("www");
    std::fs::create_dir_all(&root).expect("root");
    std::fs::write(root.join("a.txt"), "a\n").expect("a.txt");
    let http = format!(
        "limit_conn_zone $binary_remote_addr zone=conn:1m;
         server {{ listen 127.0.0.1:{{port}}; root {root};
                   access_log {{dir}}/slow-access.log;
                   location = /a.txt {{ limit_conn conn 1; }} }}",
        root = root.display(),
    );
    let s = common::cached::Cached::start(
        tmp.path(),
        &http,
        &[("NOWAIT_TEST_STALL", "slow-access=150".to_string())],
    );
    for round in 0..3 {
        let mut first = Conn::open(s.port);
        first.send(b"GET /a.txt HTTP/1.0\r\nHost: localhost\r\n\r\n");
        assert_eq!(first.response().expect("answered").status, 200);
        // The first connection may still wait for its line to be written.
        let mut next = Conn::open(s.port);
        next.send(b"GET /a.txt HTTP/1.0\r\nHost: localhost\r\n\r\n");
        let r = next.response().expect("answered");
        assert_eq!(r.status, 200, "round {round}: {}", s.error_log());
    }
}
