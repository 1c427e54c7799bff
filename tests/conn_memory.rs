//! A connection waiting for a request holds no read buffer: silent
//! connections and keep-alive connections between requests hold none
//! (`nowait_connection_buffers_bytes`), a connection with part of a head
//! holds one, and every connection is counted (`nowait_connections`).

mod common;

use common::client::{Conn, get};
use common::{Conf, Server};

/// The sum over workers of a series of the status page.
fn total(page: &str, series: &str) -> u64 {
    page.lines()
        .filter(|l| l.starts_with(&format!("{series}{{worker=")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// The status page once `nowait_connections` counts `open` connections
/// (the one asking included).
fn page_with(port: u16, open: u64) -> String {
    let mut page = String::new();
    for _ in 0..100 {
        page = common::body(&get(port, "/status"));
        if total(&page, "nowait_connections") == open {
            return page;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("nowait_connections never reached {open}:\n{page}");
}

#[test]
fn waiting_connections_hold_no_read_buffer() {
    let conf = Conf::http(
        "server {\n listen 127.0.0.1:{port};\n\
          location = /ok { return 200 \"ok\"; }\n\
          location = /status { nowait_status; }\n}\n",
    )
    .main("worker_processes 2;")
    .render();
    let s = Server::nowait(&conf);
    let idle: Vec<Conn> = (0..4).map(|_| Conn::open(s.port())).collect();
    let mut kept: Vec<Conn> = (0..4).map(|_| Conn::open(s.port())).collect();
    for c in &mut kept {
        c.send(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n");
        let r = c.response().expect("a response");
        assert_eq!(r.status, 200);
    }
    // Eight waiting connections and the one asking: only the one asking
    // (its head is being served) holds a buffer.
    let page = page_with(s.port(), 9);
    let waiting = total(&page, "nowait_connection_buffers_bytes");
    assert!(waiting > 0, "the request being served holds none:\n{page}");
    assert!(
        waiting <= 2 * 4096,
        "waiting connections hold buffers ({waiting} bytes):\n{page}"
    );
    // Part of a head: that connection keeps its buffer until the rest.
    let mut partial = Conn::open(s.port());
    partial.send(b"GET /ok HT");
    let mut page = page_with(s.port(), 10);
    for _ in 0..100 {
        if total(&page, "nowait_connection_buffers_bytes") > waiting {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        page = page_with(s.port(), 10);
    }
    assert!(
        total(&page, "nowait_connection_buffers_bytes") > waiting,
        "a connection with part of a head holds no buffer:\n{page}"
    );
    partial.send(b"TP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(partial.response().expect("a response").status, 200);
    // Served and waiting again (the buffer goes back just after the
    // reply is sent): back to the one asking.
    let mut page = page_with(s.port(), 10);
    for _ in 0..100 {
        if total(&page, "nowait_connection_buffers_bytes") <= 2 * 4096 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        page = page_with(s.port(), 10);
    }
    assert!(
        total(&page, "nowait_connection_buffers_bytes") <= 2 * 4096,
        "a keep-alive connection kept its buffer:\n{page}"
    );
    drop(idle);
}
