//! Black-box tests of the worker model: `worker_processes` with shared and
//! `reuseport` sockets, `worker_connections` as a hard limit on accepted
//! connections, and `accept_mutex`.

mod common;

use std::time::Duration;

use common::client::get;
use common::server::listening_sockets;
use common::{Conf, Conn, Server};

/// The names of the server's threads (`/proc/<pid>/task/*/comm`).
fn thread_names(s: &Server) -> Vec<String> {
    let pid = s.pid().expect("running");
    let mut names: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("read the task list")
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
        .map(|n| n.trim().to_string())
        .collect();
    names.sort();
    names
}

fn conf(listen_extra: &str, main: &str, events: &str) -> String {
    Conf::http(&format!(
        "server {{ listen 127.0.0.1:{{port}}{listen_extra}; return 200 \"ok $connection\"; }}"
    ))
    .main(main)
    .events(events)
    .render()
}

fn serves_many(s: &Server) {
    for i in 0..20 {
        let r = get(s.port(), "/");
        assert_eq!(r.status, 200, "request {i}");
        assert!(r.body.starts_with(b"ok "), "request {i}");
    }
}

#[test]
fn two_workers_share_one_socket() {
    let s = Server::nowait(&conf("", "worker_processes 2;", "worker_connections 64;"));
    assert_eq!(listening_sockets(s.port()), 1);
    // The port accepts (into its backlog) before every worker thread runs.
    let workers = || {
        thread_names(&s)
            .into_iter()
            .filter(|n| n.starts_with("worker#"))
            .count()
    };
    common::wait::until(Duration::from_secs(5), || workers() == 2);
    assert_eq!(workers(), 2, "{:?}", thread_names(&s));
    serves_many(&s);
}

#[test]
fn two_workers_with_reuseport_have_a_socket_each() {
    let s = Server::tested(&conf(
        " reuseport",
        "worker_processes 2;",
        "worker_connections 64;",
    ));
    // /proc/net/tcp is read in pieces: a table changing under the read (the
    // other tests' sockets) can hide a line.
    common::wait::until(Duration::from_secs(5), || listening_sockets(s.port()) == 2);
    assert_eq!(listening_sockets(s.port()), 2);
    serves_many(&s);
    // Both sockets take connections: the kernel spreads them by the
    // client's port, so enough connections at once reach each worker.
    let conns: Vec<Conn> = (0..16).map(|_| Conn::open(s.port())).collect();
    for mut c in conns {
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(c.response().expect("a response").status, 200);
    }
}

#[test]
fn worker_connections_limits_accepted_connections() {
    // nowait counts client connections only (nginx also counts its
    // listening sockets against the limit).
    let s = Server::nowait(&conf("", "worker_processes 1;", "worker_connections 2;"));
    let req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut first = Conn::open(s.port());
    first.send(req);
    assert_eq!(first.response().expect("first").status, 200);
    let mut second = Conn::open(s.port());
    second.send(req);
    assert_eq!(second.response().expect("second").status, 200);

    // The kernel completes the third handshake (backlog), but the worker
    // does not accept it while two connections are open.
    let mut third = Conn::open(s.port());
    third.send(req);
    assert!(
        third.quiet_for(Duration::from_secs(1)),
        "the third connection was served while two were open: {:?}",
        String::from_utf8_lossy(third.pending())
    );
    drop(first);
    let r = third.response().expect("served once a slot is free");
    assert_eq!(r.status, 200);
    // The second is still served.
    second.send(req);
    assert_eq!(second.response().expect("second again").status, 200);
}

#[test]
fn accept_mutex_on_still_serves() {
    let s = Server::tested(&conf(
        "",
        "worker_processes 2;",
        "worker_connections 64;\naccept_mutex on;",
    ));
    serves_many(&s);
    let conns: Vec<Conn> = (0..8).map(|_| Conn::open(s.port())).collect();
    for mut c in conns {
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(c.response().expect("a response").status, 200);
    }
}

/// Regression: with one accept mutex for every shared socket, the worker
/// holding it waited on one address while connections to the other waited
/// for nobody (each address is accepted on by a task of its own).
#[test]
fn accept_mutex_on_serves_every_address() {
    let other = common::server::free_port();
    let conf = Conf::http(&format!(
        "server {{ listen 127.0.0.1:{{port}}; listen 127.0.0.1:{other}; return 200 \"ok\"; }}"
    ))
    .main("worker_processes 2;")
    .events("worker_connections 64;\naccept_mutex on;")
    .render();
    let s = Server::tested(&conf);
    for _ in 0..4 {
        for port in [s.port(), other] {
            let mut c = Conn::open(port);
            c.send(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let r = c.response_within("GET", Duration::from_secs(2));
            assert_eq!(r.map(|r| r.status), Some(200), "port {port}");
        }
    }
}

#[test]
fn worker_rlimit_nofile_sets_the_descriptor_limit() {
    let conf = Conf::server("location / { return 204; }")
        .main("worker_rlimit_nofile 4000;")
        .render();
    let s = Server::nowait(&conf);
    let pid = s.pid().expect("nowait reports its pid");
    // As in nginx, the limit is set as the workers start, which may be
    // after the port already accepts.
    let line = || {
        let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
        limits
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .unwrap()
            .to_string()
    };
    let soft = |l: &str| l.split_whitespace().nth(3).map(str::to_string);
    assert!(
        common::wait::until(Duration::from_secs(5), || soft(&line()).as_deref()
            == Some("4000")),
        "{}",
        line()
    );
}

/// With `accept_mutex on`, the worker that lost the mutex tries again on
/// each turn of its loop (nginx's `ngx_trylock_accept_mutex` in
/// `ngx_process_events_and_timers`), so that under load both workers take
/// connections. The bound is generous: fairness, not balance.
#[test]
fn accept_mutex_on_shares_connections_between_workers() {
    let s = Server::tested(
        &Conf::http(
            "server { listen 127.0.0.1:{port}; location / { return 200 \"ok\"; }\n\
             location = /status { nowait_status; } }",
        )
        .main("worker_processes 2;")
        .events("worker_connections 256;\naccept_mutex on;")
        .render(),
    );
    let port = s.port();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clients: Vec<_> = (0..6)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    // A few keep-alive requests per connection.
                    let Ok(mut c) = Conn::try_open(port) else {
                        continue;
                    };
                    for _ in 0..4 {
                        c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
                        if c.response().is_none() {
                            break;
                        }
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for c in clients {
        c.join().expect("a client thread");
    }
    let counts = common::per_worker(port, "nowait_requests_total");
    let all: u64 = counts.iter().sum();
    assert_eq!(counts.len(), 2, "{counts:?}");
    assert!(all > 100, "{counts:?}");
    assert!(
        counts.iter().all(|&n| n * 20 >= all),
        "one worker served under 5% of the requests: {counts:?}"
    );
}
