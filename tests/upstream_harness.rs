//! Tests of the scripted upstream in `common/upstream.rs` itself, with
//! plain std sockets as its client: it must record exactly what it was
//! sent, keep or close connections as it says, and really reset, close or
//! half-close, or the proxy tests built on it prove nothing.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::client::RESPONSE_TIMEOUT;
use common::wait::until;
use common::{Conn, State, Upstream};

/// How long a test waits for an effect that must happen (a bound, not a
/// speed requirement).
const WAIT: Duration = Duration::from_secs(5);

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: up\r\n\r\n")
}

/// Connects a plain std socket with a read timeout.
fn connect(up: &Upstream) -> TcpStream {
    let s = TcpStream::connect(up.addr()).expect("connect to the upstream");
    s.set_read_timeout(Some(RESPONSE_TIMEOUT))
        .expect("SO_RCVTIMEO");
    s
}

/// Reads until the peer closes; the bytes, and the error that ended the
/// reading if it was not a clean end.
fn read_to_end(s: &mut TcpStream) -> (Vec<u8>, Option<ErrorKind>) {
    let mut all = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => return (all, None),
            Ok(n) => all.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return (all, Some(e.kind())),
        }
    }
}

#[test]
fn fixed_records_requests_and_keeps_the_connection() {
    let up = Upstream::fixed(OK);
    let mut c = Conn::open(up.port());
    c.send(get("/one").as_bytes());
    assert_eq!(c.response().expect("first response").body, b"ok");
    c.send(get("/two").as_bytes());
    assert_eq!(c.response().expect("second response").body, b"ok");
    assert_eq!(c.wait_closed(Duration::from_millis(200)), State::Open);

    let requests = up.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].head, get("/one").as_bytes());
    assert_eq!(requests[1].head, get("/two").as_bytes());
    assert_eq!(requests[1].target(), "/two");
    assert_eq!(requests[1].header("host").as_deref(), Some("up"));
    assert!(
        requests
            .iter()
            .all(|r| r.connection == 0 && r.body.is_empty())
    );
    assert_eq!(up.connections(), 1);

    // A second connection is counted and numbered apart.
    let mut c2 = Conn::open(up.port());
    c2.send(get("/three").as_bytes());
    assert!(c2.response().is_some());
    assert_eq!(up.connections(), 2);
    assert_eq!(up.requests()[2].connection, 1);
}

#[test]
fn fixed_closes_when_the_request_or_the_response_says_so() {
    let up = Upstream::fixed(OK);
    let mut c = Conn::open(up.port());
    c.send(b"GET / HTTP/1.1\r\nHost: up\r\nConnection: close\r\n\r\n");
    assert!(c.response().is_some());
    assert_eq!(c.wait_closed(WAIT), State::Closed);

    let mut c = Conn::open(up.port());
    c.send(b"GET / HTTP/1.0\r\n\r\n");
    assert!(c.response().is_some());
    assert_eq!(c.wait_closed(WAIT), State::Closed);

    // A body without a length ends with the close.
    let up = Upstream::fixed(b"HTTP/1.1 200 OK\r\n\r\nuntil the end");
    let mut s = connect(&up);
    s.write_all(get("/").as_bytes()).unwrap();
    let (bytes, error) = read_to_end(&mut s);
    assert_eq!(error, None);
    assert_eq!(bytes, b"HTTP/1.1 200 OK\r\n\r\nuntil the end");

    let up = Upstream::fixed(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    let mut c = Conn::open(up.port());
    c.send(get("/").as_bytes());
    assert!(c.response().is_some());
    assert_eq!(c.wait_closed(WAIT), State::Closed);
}

#[test]
fn bodies_are_read_and_recorded_by_length_and_chunks() {
    let up = Upstream::echo();
    let mut c = Conn::open(up.port());
    let post = "POST /p HTTP/1.1\r\nHost: up\r\nContent-Length: 5\r\n\r\nhello";
    let chunked = "PUT /c HTTP/1.1\r\nHost: up\r\nTransfer-Encoding: chunked\r\n\r\n";
    let chunks = "3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: t\r\n\r\n";
    // Both in one write: the second is read after the first.
    c.send(format!("{post}{chunked}{chunks}").as_bytes());
    let first = c.response().expect("answer to POST");
    let second = c.response().expect("answer to PUT");

    let requests = up.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].method(), "POST");
    assert_eq!(requests[0].body, b"hello");
    assert_eq!(requests[0].raw_body, b"hello");
    assert_eq!(requests[1].body, b"abcde");
    assert_eq!(requests[1].raw_body, chunks.as_bytes());
    assert_eq!(requests[1].head, chunked.as_bytes());

    // The echo: head, then payload.
    assert_eq!(first.body, post.as_bytes());
    assert_eq!(second.body, format!("{chunked}abcde").as_bytes());
    assert_eq!(first.header("X-Upstream-Connection").as_deref(), Some("0"));

    // HEAD gets the head only.
    c.send(b"HEAD /h HTTP/1.1\r\nHost: up\r\n\r\n");
    let head = c.response_to("HEAD").expect("answer to HEAD");
    assert!(head.body.is_empty());
    assert_eq!(c.wait_closed(Duration::from_millis(200)), State::Open);
}

#[test]
fn read_request_returns_none_at_the_end() {
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let up = Upstream::start(move |c| {
        let mut n = 0;
        while c.read_request().is_some() {
            n += 1;
        }
        let _ = tx.lock().unwrap().send((n, c.pending().to_vec()));
    });
    // A whole request, then the end of the stream.
    let mut s = connect(&up);
    s.write_all(get("/").as_bytes()).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    assert_eq!(rx.recv_timeout(WAIT), Ok((1, Vec::new())));
    // Half a head: no request, the bytes kept.
    let mut s = connect(&up);
    s.write_all(b"GET / HTTP/1.1\r\nHo").unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    assert_eq!(
        rx.recv_timeout(WAIT),
        Ok((0, b"GET / HTTP/1.1\r\nHo".to_vec()))
    );
    // Half a body: no request.
    let mut s = connect(&up);
    s.write_all(b"POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\nabc")
        .unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    assert_eq!(rx.recv_timeout(WAIT).map(|(n, _)| n), Ok(0));
    assert_eq!(up.requests().len(), 1, "only whole requests are recorded");
}

#[test]
fn reset_sends_rst_and_close_sends_fin() {
    let up = Upstream::start(|c| {
        if let Some(r) = c.read_request() {
            c.write(b"partial");
            if r.target() == "/reset" {
                c.reset();
            } else {
                c.close();
            }
        }
    });
    let mut s = connect(&up);
    s.write_all(get("/reset").as_bytes()).unwrap();
    let (_, error) = read_to_end(&mut s);
    assert_eq!(error, Some(ErrorKind::ConnectionReset));

    let mut s = connect(&up);
    s.write_all(get("/close").as_bytes()).unwrap();
    let (bytes, error) = read_to_end(&mut s);
    assert_eq!((&bytes[..], error), (&b"partial"[..], None));
}

#[test]
fn half_close_ends_the_response_and_keeps_reading() {
    let up = Upstream::start(|c| {
        if c.read_request().is_some() {
            c.write(OK);
            c.half_close();
            // The peer can still send.
            let _ = c.read_request();
        }
    });
    let mut s = connect(&up);
    s.write_all(get("/first").as_bytes()).unwrap();
    let (bytes, error) = read_to_end(&mut s);
    assert_eq!((&bytes[..], error), (OK, None));
    s.write_all(get("/after-fin").as_bytes()).unwrap();
    assert!(until(WAIT, || up.requests().len() == 2));
    assert_eq!(up.requests()[1].target(), "/after-fin");
}

#[test]
fn write_slowly_sends_everything_in_delayed_pieces() {
    const DELAY: Duration = Duration::from_millis(40);
    let response = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789";
    let pieces = response.len().div_ceil(10);
    let up = Upstream::start(move |c| {
        if c.read_request().is_some() {
            c.write_slowly(response, 10, DELAY);
        }
    });
    let mut c = Conn::open(up.port());
    let sent = Instant::now();
    c.send(get("/").as_bytes());
    let r = c.response().expect("the slow response");
    // It cannot have come sooner than the pauses between the pieces.
    assert!(sent.elapsed() >= DELAY * (pieces as u32 - 1));
    assert_eq!(r.body, b"0123456789");
}

#[test]
fn wait_closed_sees_the_peer_close() {
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let up = Upstream::start(move |c| {
        let _ = c.read_request();
        let early = c.wait_closed(Duration::from_millis(100));
        let closed = c.wait_closed(WAIT);
        let _ = tx
            .lock()
            .unwrap()
            .send((early, closed, c.pending().to_vec()));
    });
    let mut s = connect(&up);
    s.write_all(get("/").as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    s.write_all(b"extra").unwrap();
    drop(s);
    assert_eq!(rx.recv_timeout(WAIT), Ok((false, true, b"extra".to_vec())));
}

#[test]
fn drop_closes_the_port_and_open_connections() {
    let up = Upstream::fixed(OK);
    let addr = up.addr();
    let mut s = connect(&up);
    s.write_all(get("/").as_bytes()).unwrap();
    let mut first = vec![0u8; OK.len()];
    s.read_exact(&mut first).unwrap();
    drop(up);
    // The kept-alive connection is shut down, the port closed.
    let (rest, _) = read_to_end(&mut s);
    assert!(rest.is_empty());
    let refused = TcpStream::connect(addr).map(|_| ()).map_err(|e| e.kind());
    assert_eq!(refused, Err(ErrorKind::ConnectionRefused));
}

#[test]
#[should_panic(expected = "an upstream handler panicked: connection #0: boom")]
fn a_handler_panic_fails_the_test() {
    let up = Upstream::start(|_| panic!("boom"));
    let mut s = connect(&up);
    // The connection ends when the handler has run.
    let _ = read_to_end(&mut s);
    drop(up);
}
