//! Black-box test of how connections on a socket shared by the workers are
//! spread over them (`server::balance`). A file of its own: the other
//! worker tests load the machine, and a worker kept from running longer
//! than the deferral bound rightly loses its share.

mod common;

use std::time::Duration;

use common::{Conf, Conn, Server};

/// Opens 40 connections at once on `burst_port`, a request answered on
/// each, and checks that each of the two workers holds a fair part: the
/// bound is generous (a machine loaded enough to keep a worker from running
/// for the 20 ms a busier one waits rightly gives the burst to the busier
/// one); the spread seen is within a few connections.
fn a_burst_is_spread(status_port: u16, burst_port: u16) {
    // The port takes connections (into its backlog) before both workers
    // run; a worker that does not accept yet is not left any.
    common::wait::until(Duration::from_secs(5), || {
        common::per_worker(status_port, "nowait_connections").len() == 2
    });
    std::thread::sleep(Duration::from_millis(200));
    // Opened at once, then each answered once: all accepted and held.
    let mut conns: Vec<_> = (0..40).map(|_| Conn::open(burst_port)).collect();
    for c in &mut conns {
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(c.response().expect("a response").status, 200);
    }
    let counts = common::per_worker(status_port, "nowait_connections");
    assert_eq!(counts.len(), 2, "{counts:?}");
    // The status request's own connection is one of them (and the start-up
    // check's may not have closed yet).
    let all = counts.iter().sum::<u64>();
    assert!((41..=43).contains(&all), "{counts:?}");
    assert!(
        counts.iter().all(|&n| n >= 10),
        "one worker holds under a quarter of the connections: {counts:?}"
    );
    drop(conns);
}

fn two_workers(listens: &str) -> Server {
    Server::tested(
        &Conf::http(&format!(
            "server {{ {listens} location / {{ return 200 \"ok\"; }}\n\
             location = /status {{ nowait_status; }} }}"
        ))
        .main("worker_processes 2;")
        .events("worker_connections 256;")
        .render(),
    )
}

/// With `accept_mutex off` (the default) the kernel hands a burst of
/// connections on a shared socket mostly to one worker (before: 64 and 1,
/// 7 and 58 of 65); a worker past its share leaves the next connection to
/// the least loaded one (`server::balance`).
#[test]
fn accept_mutex_off_spreads_a_burst_over_the_workers() {
    let s = two_workers("listen 127.0.0.1:{port};");
    a_burst_is_spread(s.port(), s.port());
}

/// A worker accepts on each socket in a task of its own: the nudge reaches
/// the task of the socket where the connections wait (one nudge per worker
/// woke whichever socket's task came first).
#[test]
fn a_burst_on_a_second_socket_is_spread_too() {
    let second = common::server::free_port();
    let s = two_workers(&format!(
        "listen 127.0.0.1:{{port}}; listen 127.0.0.1:{second};"
    ));
    a_burst_is_spread(s.port(), second);
}
