//! Black-box tests of limits and timeouts: `client_header_timeout`,
//! `keepalive_timeout`, `keepalive_requests`, `large_client_header_buffers`
//! and `send_timeout`.
//!
//! Timeouts are set to 1s; a test checks *that* the connection is closed
//! within a generous bound, never how fast.

mod common;

use std::io::Read;
use std::time::{Duration, Instant};

use common::client::get;
use common::{Conf, Conn, Fixture, Server, State, TempDir};

/// Upper bound on waiting for a 1s timeout to close a connection.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

#[test]
fn client_header_timeout_closes_a_half_sent_head() {
    let f = Fixture::build();
    let s = common::serve(&f, "client_header_timeout 1s;");
    let mut c = Conn::open(s.port());
    c.send(b"GET /x HTTP/1.1\r\nHost: loc");
    assert_eq!(c.wait_closed(CLOSE_WAIT), State::Closed);
    // nginx closes without a response (it would be 408, never sent).
    assert!(
        c.pending().is_empty(),
        "{:?}",
        String::from_utf8_lossy(c.pending())
    );
    assert_eq!(get(s.port(), "/x").status, 200);
}

#[test]
fn client_header_timeout_closes_a_connection_that_sends_nothing() {
    let f = Fixture::build();
    let s = common::serve(&f, "client_header_timeout 1s;");
    let mut c = Conn::open(s.port());
    assert_eq!(c.wait_closed(CLOSE_WAIT), State::Closed);
}

#[test]
fn keepalive_timeout_closes_an_idle_connection() {
    let f = Fixture::build();
    let s = common::serve(&f, "keepalive_timeout 1s;");
    let mut c = Conn::open(s.port());
    c.send(b"GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let r = c.response().expect("a response");
    assert_eq!(r.header("Connection").as_deref(), Some("keep-alive"));
    assert_eq!(c.wait_closed(CLOSE_WAIT), State::Closed);
    assert!(c.pending().is_empty());
}

#[test]
fn keepalive_timeout_zero_disables_keepalive() {
    let f = Fixture::build();
    let s = common::serve(&f, "keepalive_timeout 0;");
    let mut c = Conn::open(s.port());
    c.send(b"GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let r = c.response().expect("a response");
    assert_eq!(r.header("Connection").as_deref(), Some("close"));
    assert_eq!(c.wait_closed(CLOSE_WAIT), State::Closed);
}

#[test]
fn keepalive_requests_closes_after_the_last_allowed_request() {
    let f = Fixture::build();
    let s = common::serve(&f, "keepalive_requests 2;");
    let mut c = Conn::open(s.port());
    let req = b"GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n";
    c.send(&[&req[..], &req[..], &req[..]].concat());
    let first = c.response().expect("first response");
    assert_eq!(first.header("Connection").as_deref(), Some("keep-alive"));
    let second = c.response().expect("second response");
    assert_eq!(second.header("Connection").as_deref(), Some("close"));
    assert_eq!(c.wait_closed(CLOSE_WAIT), State::Closed);
    assert!(c.pending().is_empty(), "no third response");
}

#[test]
fn large_client_header_buffers_limit_the_request_line_and_header_lines() {
    let f = Fixture::build();
    let s = common::serve(&f, "large_client_header_buffers 2 1k;");
    let long = "a".repeat(2048);
    let mut c = Conn::open(s.port());
    c.send(format!("GET /{long} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes());
    let r = c.response().expect("a response");
    assert_eq!(r.status, 414);
    assert_eq!(c.wait_closed(CLOSE_WAIT), State::Closed);

    let mut c = Conn::open(s.port());
    c.send(format!("GET /x HTTP/1.1\r\nHost: localhost\r\nX-Long: {long}\r\n\r\n").as_bytes());
    let r = c.response().expect("a response");
    assert_eq!(r.status, 400);
    assert!(
        String::from_utf8_lossy(&r.body).contains("Request Header Or Cookie Too Large"),
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(c.wait_closed(CLOSE_WAIT), State::Closed);

    // Lines within one buffer each, the head within both, are fine.
    let fits = "b".repeat(900);
    let mut c = Conn::open(s.port());
    c.send(format!("GET /x?{fits} HTTP/1.1\r\nHost: localhost\r\nX-A: {fits}\r\n\r\n").as_bytes());
    assert_eq!(c.response().expect("a response").status, 200);
}

#[test]
fn send_timeout_closes_a_connection_that_never_reads() {
    let dir = TempDir::new("sendtimeout-root");
    // Larger than what loopback socket buffers can hold in flight.
    let huge = vec![0x5a_u8; 64 * 1024 * 1024];
    std::fs::write(dir.path().join("huge.bin"), &huge).unwrap();
    std::fs::write(dir.path().join("x.txt"), "x\n").unwrap();
    for f in ["huge.bin", "x.txt"] {
        common::tmp::set_mode(&dir.path().join(f), 0o644);
    }
    let conf = Conf::server("root {root};\nsend_timeout 1s;")
        .main("error_log err.log info;")
        .root(dir.path())
        .render();
    let s = Server::tested(&conf);
    let mut c = Conn::open(s.port());
    c.send(b"GET /huge.bin HTTP/1.1\r\nHost: localhost\r\n\r\n");
    // Never read while the server would be sending; meanwhile it serves
    // others.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(get(s.port(), "/x.txt").body, b"x\n");
    // The server says so in its error log; then the client reads what
    // was sent before the close.
    let log = s.prefix().join("err.log");
    assert!(
        common::wait::until(Duration::from_secs(15), || {
            let text = common::wait::read_text(&log);
            text.contains("timed out") && text.contains("while sending response to client")
        }),
        "no send timeout logged:\n{}",
        common::wait::read_text(&log)
    );
    let mut total = 0usize;
    let mut buf = vec![0; 1 << 20];
    let mut eof = false;
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        c.stream
            .set_read_timeout(Some(Duration::from_secs(3)))
            .unwrap();
        match c.stream.read(&mut buf) {
            Ok(0) | Err(_) => {
                eof = true;
                break;
            }
            Ok(n) => total += n,
        }
    }
    assert!(eof, "the connection was not closed");
    assert!(
        total < huge.len(),
        "{total} bytes arrived: the whole file was sent"
    );
    assert_eq!(get(s.port(), "/x.txt").body, b"x\n");
}
