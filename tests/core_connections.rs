//! Black-box tests of what a location says about the connection:
//! `keepalive_timeout`'s header parameter, `keepalive_requests`,
//! `keepalive_time`, `keepalive_disable`, `limit_rate` and
//! `limit_rate_after` (with variables and `$limit_rate`), and
//! `worker_shutdown_timeout`. nginx 1.22's behaviour: run with
//! `NOWAIT_TEST_NGINX=1` to check it.

mod common;

use std::time::{Duration, Instant};

use common::client::get;
use common::{Conf, Conn, Fixture, Server};

fn serve_http(f: &Fixture, server: &str) -> Server {
    Server::tested(
        &Conf::server(&format!("root {{root}};\n{server}"))
            .root(f.root())
            .render(),
    )
}

fn keepalive_get(c: &mut Conn, path: &str, ua: &str, method: &str) -> common::Response {
    c.send(
        format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: {ua}\r\n\r\n")
            .as_bytes(),
    );
    c.response_to(method).expect("a response")
}

#[test]
fn keepalive_header_and_request_limit() {
    let f = Fixture::build();
    let s = serve_http(
        &f,
        "keepalive_requests 2;
         keepalive_timeout 10 9;
         location /r { alias {root}/x; keepalive_requests 4; keepalive_timeout 30s; }
         location /zero { alias {root}/x; keepalive_timeout 0; }",
    );
    let mut c = Conn::open(s.port());
    let r = keepalive_get(&mut c, "/x", "", "GET");
    assert_eq!(r.header("Connection").as_deref(), Some("keep-alive"));
    assert_eq!(r.header("Keep-Alive").as_deref(), Some("timeout=9"));
    let r = keepalive_get(&mut c, "/x", "", "GET");
    assert_eq!(r.header("Connection").as_deref(), Some("close"));
    // A location that sets only the timeout keeps the inherited header.
    let mut c = Conn::open(s.port());
    let r = keepalive_get(&mut c, "/r", "", "GET");
    assert_eq!(r.header("Keep-Alive").as_deref(), Some("timeout=9"));
    let r = get(s.port(), "/zero");
    assert_eq!(r.header("Connection").as_deref(), Some("close"));
}

#[test]
fn keepalive_time_bounds_a_connection() {
    let f = Fixture::build();
    let s = serve_http(&f, "keepalive_time 1s;");
    let mut c = Conn::open(s.port());
    let r = keepalive_get(&mut c, "/x", "", "GET");
    assert_eq!(r.header("Connection").as_deref(), Some("keep-alive"));
    std::thread::sleep(Duration::from_millis(1200));
    let r = keepalive_get(&mut c, "/x", "", "GET");
    assert_eq!(r.header("Connection").as_deref(), Some("close"));
}

#[test]
fn keepalive_disable_by_browser() {
    let f = Fixture::build();
    let s = serve_http(
        &f,
        "location / { return 200 OK; }
         location /safari { keepalive_disable safari; return 200 OK; }
         location /none { keepalive_disable none; return 200 OK; }",
    );
    let conn = |path: &str, ua: &str, method: &str| {
        let mut c = Conn::open(s.port());
        keepalive_get(&mut c, path, ua, method).header("Connection")
    };
    let close = Some("close".to_string());
    let keep = Some("keep-alive".to_string());
    assert_eq!(conn("/", "MSIE 5.0", "POST"), close);
    assert_eq!(conn("/", "MSIE 5.0", "GET"), keep);
    assert_eq!(conn("/", "MSIE 7.0", "POST"), keep);
    assert_eq!(conn("/", "Mac OS X Safari/7534.48.3", "GET"), keep);
    assert_eq!(conn("/safari", "Mac OS X Safari/7534.48.3", "GET"), close);
    assert_eq!(conn("/none", "MSIE 5.0", "POST"), keep);
}

#[test]
fn limit_rate_paces_after_the_free_bytes() {
    let f = Fixture::build();
    std::fs::write(f.root().join("data"), vec![b'X'; 30_000]).unwrap();
    let s = serve_http(
        &f,
        "location /slow { alias {root}/data; limit_rate 12k; limit_rate_after 256; }
         location /free { alias {root}/data; limit_rate 12k; limit_rate_after 40k; }
         location /var { alias {root}/data; limit_rate $arg_l; }
         location /set { set $limit_rate $arg_l; return 200 \"rate $limit_rate\"; }",
    );
    let p = s.port();
    let timed = |path: &str| {
        let t = Instant::now();
        let r = get(p, path);
        (r, t.elapsed())
    };
    // 30000 bytes at 12k/s, the first second's worth at once: over 1 s.
    let (r, took) = timed("/slow");
    assert_eq!(r.body.len(), 30_000);
    assert!(took >= Duration::from_millis(900), "{took:?}");
    let (r, took) = timed("/var?l=12k");
    assert_eq!(r.body.len(), 30_000);
    assert!(took >= Duration::from_millis(900), "{took:?}");
    // Within `limit_rate_after`, or no rate: nothing to wait for, so the
    // whole body is there (the speed is not asserted).
    assert_eq!(timed("/free").0.body.len(), 30_000);
    assert_eq!(timed("/var").0.body.len(), 30_000);
    // `$limit_rate` takes a size; a bad one leaves 0.
    assert_eq!(common::body(&get(p, "/set?l=40k")), "rate 40960");
    assert_eq!(common::body(&get(p, "/set")), "rate 0");
}

#[test]
fn worker_shutdown_timeout_closes_idle_connections() {
    let f = Fixture::build();
    let conf = Conf::server("root {root};")
        .main("worker_shutdown_timeout 100ms;")
        .root(f.root())
        .render();
    // nowait only: nginx 1.22's shutdown timer runs the read handler of a
    // connection in the middle of a head, which waits for more bytes
    // instead of closing it (it goes at `client_header_timeout`); nowait
    // closes it at the timeout, as the directive says.
    let s = Server::nowait(&conf);
    // A connection in the middle of a head is busy: it stays with the old
    // generation through a graceful reload, until the timeout.
    let mut c = Conn::open(s.port());
    c.send(b"GET / HTTP/1.1\r\nHo");
    // One that has sent nothing stays with the old generation too, which
    // closes it at the timeout (nginx's worker_shutdown_timeout.t; without
    // the directive nowait's next generation adopts it instead).
    let mut silent = Conn::open(s.port());
    std::thread::sleep(Duration::from_millis(200));
    s.signal("HUP");
    assert_eq!(c.wait_closed(Duration::from_secs(5)), common::State::Closed);
    assert_eq!(
        silent.wait_closed(Duration::from_secs(5)),
        common::State::Closed
    );
}
