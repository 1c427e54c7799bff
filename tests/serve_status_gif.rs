//! Black-box tests of `stub_status` (nginx's page, word for word, and its
//! counters: accepted, handled, requests, reading, writing, waiting), the
//! `$connections_*` variables, and `empty_gif`.
//!
//! They use [`Server::tested`]: `NOWAIT_TEST_NGINX=1` runs them against
//! nginx, which must pass them all.

mod common;

use std::time::Duration;

use common::client::{Conn, get, request};
use common::{Conf, Server, body, wait};

/// How long a test waits for the counters to settle.
const SETTLE: Duration = Duration::from_secs(5);

fn serve(server: &str) -> Server {
    let conf = Conf::server(server).render();
    Server::tested(&conf)
}

/// The page's seven numbers: active, accepts, handled, requests,
/// reading, writing, waiting.
fn counters(s: &Server) -> [u64; 7] {
    let text = body(&get(s.port(), "/status"));
    let numbers: Vec<u64> = text
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .map(|w| w.parse().expect("a number"))
        .collect();
    numbers
        .try_into()
        .unwrap_or_else(|n| panic!("seven numbers in {text:?}: {n:?}"))
}

#[test]
fn the_page_is_nginx_s() {
    let s = serve("location /status { stub_status; }");
    let r = get(s.port(), "/status");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Type").as_deref(), Some("text/plain"));
    // The readiness probe of the test harness is a connection too: the
    // page's shape, then the numbers it must show.
    let text = body(&r);
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    assert_eq!(lines.len(), 4, "{text:?}");
    assert_eq!(lines[0], "Active connections: 1 \n");
    assert_eq!(lines[1], "server accepts handled requests\n");
    let n: Vec<&str> = lines[2].trim_end_matches(" \n").split(' ').collect();
    assert_eq!(n[0], "", "a leading space: {text:?}");
    assert_eq!(n[1], n[2], "every accepted connection is handled");
    assert_eq!(n[3], "1", "this is the first request");
    assert_eq!(lines[3], "Reading: 0 Writing: 1 Waiting: 0 \n");
    let head = request(s.port(), "HEAD /status HTTP/1.0\r\nHost: x\r\n\r\n");
    assert_eq!(head.status, 200);
    let post = request(
        s.port(),
        "POST /status HTTP/1.0\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
    );
    assert_eq!(post.status, 405);
}

#[test]
fn connections_are_counted_by_state() {
    let s = serve(
        "location /status { stub_status; }
         location /vars { return 200 \"$connections_active $connections_reading $connections_writing $connections_waiting\"; }",
    );
    let [_, accepts, handled, requests, ..] = counters(&s);
    assert_eq!(accepts, handled);
    // An idle connection is waiting; one that sent part of a head is
    // reading.
    let idle = Conn::open(s.port());
    let mut partial = Conn::open(s.port());
    assert!(wait::until(SETTLE, || counters(&s)[6] == 2));
    partial.send(b"GET /vars HTTP/1.0\r\n");
    assert!(wait::until(SETTLE, || counters(&s)[4] == 1));
    let [active, a2, _, r2, reading, writing, waiting] = counters(&s);
    assert_eq!((active, reading, writing, waiting), (3, 1, 1, 1));
    assert!(a2 >= accepts + 2);
    assert!(r2 > requests);
    partial.send(b"Host: x\r\n\r\n");
    let r = partial.response().expect("answered");
    // The idle connection waits, this one is being answered.
    assert_eq!(body(&r), "2 0 1 1");
    drop(idle);
    assert!(wait::until(SETTLE, || counters(&s)[0] == 1));
}

#[test]
fn empty_gif_is_nginx_s_gif() {
    let s = serve("location / { empty_gif; }");
    let r = get(s.port(), "/any");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Type").as_deref(), Some("image/gif"));
    assert_eq!(
        r.header("Last-Modified").as_deref(),
        Some("Mon, 28 Sep 1970 06:00:00 GMT")
    );
    assert_eq!(r.body.len(), 43);
    assert!(r.body.starts_with(b"GIF89a\x01\x00\x01\x00"));
    assert!(r.body.ends_with(b"\x02\x02\x4c\x01\x00\x3b"));
    let put = request(
        s.port(),
        "PUT / HTTP/1.0\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
    );
    assert_eq!(put.status, 405);
}
