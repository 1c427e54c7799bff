//! Reloads under keep-alive load fail no request: connections waiting for
//! their next request are adopted by the new generation, requests in flight
//! finish on the old one (answered with `Connection: close`), and nothing is
//! closed while a client may be sending — also when a reload changes the
//! worker count, and when it drops the address a connection arrived on.
//!
//! A failed request is one whose connection could not be opened, whose
//! request could not be written, or that got no complete response. A
//! response with `Connection: close` is no failure: the client opens a new
//! connection for the next request, as every HTTP client does.

mod common;

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use common::client::{Conn, State};
use common::{Conf, Server};

/// Clients sending keep-alive requests back to back.
const CLIENTS: usize = 8;
/// SIGHUPs sent while they do.
const RELOADS: usize = 20;
/// Time between two SIGHUPs.
const RELOAD_GAP: Duration = Duration::from_millis(150);
/// Upper bound on a connection being closed.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

fn conf(version: usize) -> String {
    // The worker count changes with every other reload.
    Conf::http(&format!(
        "server {{ listen 127.0.0.1:{{port}}; location / {{ return 200 \"v{version}\"; }} }}"
    ))
    .main(&format!("worker_processes {};", 1 + version % 2))
    .render()
}

fn closes(r: &common::response::Response) -> bool {
    r.headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("connection") && v.eq_ignore_ascii_case("close"))
}

#[test]
fn twenty_reloads_under_keepalive_load_fail_no_request() {
    let s = Server::tested(&conf(1));
    let port = s.port();
    let done = Arc::new(AtomicBool::new(false));
    let served = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (done, served) = (done.clone(), served.clone());
            std::thread::spawn(move || {
                let mut failures = Vec::new();
                let mut conn: Option<Conn> = None;
                let mut n = 0u64;
                while !done.load(Ordering::Relaxed) {
                    n += 1;
                    let c = match conn.as_mut() {
                        Some(c) => c,
                        None => match Conn::try_open(port) {
                            Ok(c) => conn.insert(c),
                            Err(e) => {
                                failures.push(format!("request {n}: connect: {e}"));
                                continue;
                            }
                        },
                    };
                    if let Err(e) = c.try_send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") {
                        failures.push(format!("request {n}: write: {e}"));
                        conn = None;
                        continue;
                    }
                    match c.response() {
                        Some(r) if r.status == 200 => {
                            served.fetch_add(1, Ordering::Relaxed);
                            if closes(&r) {
                                conn = None;
                            }
                        }
                        other => {
                            failures.push(format!("request {n}: {other:?}"));
                            conn = None;
                        }
                    }
                }
                failures
            })
        })
        .collect();
    for i in 0..RELOADS {
        std::thread::sleep(RELOAD_GAP);
        s.write_conf(&conf(i + 2));
        s.signal("HUP");
    }
    std::thread::sleep(RELOAD_GAP);
    done.store(true, Ordering::Relaxed);
    let failures: Vec<String> = clients
        .into_iter()
        .flat_map(|c| c.join().expect("a client thread"))
        .collect();
    assert!(
        failures.is_empty(),
        "{} failed requests of {}: {failures:#?}\n{}",
        failures.len(),
        served.load(Ordering::Relaxed) + failures.len() as u64,
        s.stderr()
    );
    assert!(served.load(Ordering::Relaxed) > CLIENTS as u64);
    // The last configuration serves.
    let r = common::client::get(port, "/");
    assert_eq!(common::body(&r), format!("v{}", RELOADS + 1));
}

/// A keep-alive connection whose listening address a reload removes is
/// still served its next request (by the configuration that accepted it),
/// answered with `Connection: close`, and then closed.
#[test]
fn a_connection_whose_address_a_reload_drops_finishes_gracefully() {
    let both = |text: &str| {
        Conf::http(&format!(
            "server {{ listen 127.0.0.1:{{port}}; listen 127.0.0.2:{{port}}; \
             location / {{ return 200 \"{text}\"; }} }}"
        ))
        .render()
    };
    let one = Conf::http("server { listen 127.0.0.1:{port}; location / { return 200 \"new\"; } }")
        .render();
    let s = Server::tested(&both("old"));
    let mut kept = std::net::TcpStream::connect(("127.0.0.2", s.port())).expect("connect");
    kept.set_read_timeout(Some(CLOSE_WAIT)).expect("timeout");
    kept.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("write");
    let first = read_response(&mut kept);
    assert!(first.ends_with("old"), "{first}");
    s.write_conf(&one);
    s.signal("HUP");
    assert!(
        common::wait::until(CLOSE_WAIT, || common::body(&common::client::get(
            s.port(),
            "/"
        )) == "new"),
        "not reloaded"
    );
    kept.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("write");
    let second = read_response(&mut kept);
    assert!(second.starts_with("HTTP/1.1 200"), "{second}");
    assert!(second.contains("Connection: close"), "{second}");
    assert!(second.ends_with("old"), "{second}");
    let mut rest = Vec::new();
    assert_eq!(
        kept.read_to_end(&mut rest).map(|_| rest.len()).ok(),
        Some(0)
    );
}

/// Reads one small response (head and a short body) from `s`.
fn read_response(s: &mut std::net::TcpStream) -> String {
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let len: usize = text[..end]
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if got.len() >= end + 4 + len {
                return text;
            }
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return text,
            Ok(n) => got.extend_from_slice(&chunk[..n]),
        }
    }
}

/// `-s quit` drains as nginx: a keep-alive connection waiting for its next
/// request is closed, a connection with a request in progress is served.
#[test]
fn quit_closes_waiting_keepalive_connections_and_serves_the_busy_one() {
    let mut s = Server::tested(&conf(1));
    let mut waiting = Conn::open(s.port());
    waiting.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(waiting.response().expect("a response").status, 200);
    let mut busy = Conn::open(s.port());
    busy.send(b"GET / HTTP/1.1\r\nHo");
    std::thread::sleep(Duration::from_millis(200));
    s.signal("QUIT");
    assert_eq!(waiting.wait_closed(CLOSE_WAIT), State::Closed);
    busy.send(b"st: x\r\n\r\n");
    let r = busy.response().expect("the request in progress is served");
    assert_eq!(r.status, 200);
    assert!(closes(&r));
    assert!(s.wait_exit(CLOSE_WAIT).is_some(), "did not exit");
}
