//! A connection just answered waits for its next request in its own task
//! for a moment before it is parked (`server::hot_wait`). These tests
//! stretch that window (`NOWAIT_TEST_HOT_WAIT`, read by test builds only)
//! far beyond what they wait for, so that each shows what ends such a wait
//! without racing it: a reload hands the connection to the new
//! configuration, a graceful stop closes it, and the keep-alive timeout
//! still counts from the response. Where a connection waits shows on the
//! status page: `nowait_connections_hot_waiting` (in its task) and
//! `nowait_connections_parked` (parked, outside any task), read through
//! other connections, which are being served when the page is written and
//! so count in neither.

mod common;

use std::time::{Duration, Instant};

use common::client::{Conn, State};
use common::{Conf, Server};

/// Far longer than any test below waits for anything.
const LONG_WINDOW_MS: &str = "60000";
/// Upper bound on a connection being closed or a reload taking effect.
const WAIT: Duration = Duration::from_secs(10);

fn version_conf(text: &str, keepalive: &str) -> String {
    Conf::http(&format!(
        "keepalive_timeout {keepalive};\n\
         server {{ listen 127.0.0.1:{{port}}; location / {{ return 200 \"{text}\"; }}\n\
         location = /status {{ nowait_status; }} }}"
    ))
    .render()
}

/// Where the server's idle connections wait, from its status page.
#[derive(Debug, PartialEq)]
struct Waits {
    /// In their own tasks (the hot wait).
    in_task: u64,
    /// Parked.
    parked: u64,
}

fn waits(port: u16) -> Waits {
    let sum = |name| common::per_worker(port, name).iter().sum();
    Waits {
        in_task: sum("nowait_connections_hot_waiting"),
        parked: sum("nowait_connections_parked"),
    }
}

/// Waits until the status page shows `want` (the server enters a wait
/// just after writing the response the client has read); fails if it
/// does not within [`WAIT`].
fn expect_waits(port: u16, want: Waits, what: &str) {
    let mut seen = waits(port);
    let deadline = Instant::now() + WAIT;
    while seen != want {
        assert!(Instant::now() < deadline, "{what}: {seen:?}, want {want:?}");
        std::thread::sleep(Duration::from_millis(20));
        seen = waits(port);
    }
}

/// One connection waiting in its task, none parked.
const IN_TASK: Waits = Waits {
    in_task: 1,
    parked: 0,
};
/// One connection parked, none in its task.
const PARKED: Waits = Waits {
    in_task: 0,
    parked: 1,
};

fn body_on(c: &mut Conn) -> String {
    let r = c.response().expect("a response");
    assert_eq!(r.status, 200);
    common::body(&r)
}

#[test]
fn a_reload_hands_a_connection_waiting_in_its_task_to_the_new_configuration() {
    let s = Server::nowait_with_env(
        &version_conf("v1", "75s"),
        &[("NOWAIT_TEST_HOT_WAIT", LONG_WINDOW_MS)],
    );
    let mut kept = Conn::open(s.port());
    kept.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(body_on(&mut kept), "v1");
    // The connection now waits in its task, for a minute unless something
    // ends the wait.
    expect_waits(s.port(), IN_TASK, "after the response");
    s.write_conf(&version_conf("v2", "75s"));
    s.signal("HUP");
    let deadline = Instant::now() + WAIT;
    while common::body(&common::client::get(s.port(), "/")) != "v2" {
        assert!(Instant::now() < deadline, "the reload did not take effect");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The reload ended the wait: the connection was parked and handed to
    // the new generation, where it waits parked.
    expect_waits(s.port(), PARKED, "after the reload");
    // Served by the new generation, not by the old one's task.
    kept.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(body_on(&mut kept), "v2");
}

#[test]
fn a_graceful_stop_closes_a_connection_waiting_in_its_task() {
    let mut s = Server::nowait_with_env(
        &version_conf("v1", "75s"),
        &[("NOWAIT_TEST_HOT_WAIT", LONG_WINDOW_MS)],
    );
    let mut kept = Conn::open(s.port());
    kept.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(body_on(&mut kept), "v1");
    expect_waits(s.port(), IN_TASK, "after the response");
    s.signal("QUIT");
    assert_eq!(kept.wait_closed(WAIT), State::Closed);
    assert!(s.wait_exit(WAIT).is_some(), "did not exit");
}

#[test]
fn the_keepalive_timeout_counts_from_the_response_not_from_the_end_of_the_wait() {
    // The window ends just before the timeout: counted from the response
    // the connection closes after 2 s; counted again from the window's end
    // it would stay open until nearly 4 s.
    let s = Server::nowait_with_env(
        &version_conf("v1", "2s"),
        &[("NOWAIT_TEST_HOT_WAIT", "1900")],
    );
    let mut kept = Conn::open(s.port());
    kept.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(body_on(&mut kept), "v1");
    let answered = Instant::now();
    assert_eq!(kept.wait_closed(WAIT), State::Closed);
    let open_for = answered.elapsed();
    assert!(
        open_for < Duration::from_millis(3200),
        "closed {open_for:?} after the response"
    );
}

#[test]
fn a_connection_silent_past_the_window_is_parked_and_served_when_it_sends() {
    let s = Server::nowait_with_env(
        &version_conf("v1", "75s"),
        &[("NOWAIT_TEST_HOT_WAIT", "50")],
    );
    let mut kept = Conn::open(s.port());
    for i in 0..3 {
        kept.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(body_on(&mut kept), "v1");
        // Silent past the 50 ms window: parked, out of its task.
        expect_waits(s.port(), PARKED, &format!("after response {}", i + 1));
    }
}
