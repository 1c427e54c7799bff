//! Connections waiting for a request are parked: hot (in the reactor) at
//! first, cold (in the worker's epoll instance) after a second. Either way
//! they are served when bytes come and closed when their timeout passes.

mod common;

use std::time::{Duration, Instant};

use common::client::{Conn, State};
use common::{Conf, Server};

/// Longer than the time after which a parked connection goes cold.
const COLD: Duration = Duration::from_millis(1600);

#[test]
fn cold_connections_are_served_and_time_out() {
    let conf = Conf::http(
        "keepalive_timeout 3s; client_header_timeout 3s;\n\
         server { listen 127.0.0.1:{port}; location / { return 200 \"ok\"; } }",
    )
    .main("worker_processes 2;")
    .render();
    let s = Server::tested(&conf);
    let mut kept = Conn::open(s.port());
    kept.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(kept.response().expect("a response").status, 200);
    let mut silent = Conn::open(s.port());
    std::thread::sleep(COLD);
    for c in [&mut kept, &mut silent] {
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        let r = c.response().expect("a cold connection is served");
        assert_eq!((r.status, common::body(&r).as_str()), (200, "ok"));
    }
    // Cold again, then closed at `keepalive_timeout`, not before.
    let parked = Instant::now();
    assert!(kept.quiet_for(COLD), "closed before its timeout");
    assert_eq!(kept.wait_closed(Duration::from_secs(10)), State::Closed);
    assert!(parked.elapsed() >= Duration::from_millis(2500));
    // A client that closes a cold connection frees it.
    drop(silent);
    // Many parked connections, half served, half silent: all served later.
    let mut many: Vec<Conn> = (0..64).map(|_| Conn::open(s.port())).collect();
    for c in many.iter_mut().step_by(2) {
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(c.response().expect("a response").status, 200);
    }
    std::thread::sleep(COLD);
    for c in &mut many {
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(c.response().expect("a response").status, 200);
    }
}
