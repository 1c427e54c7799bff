//! Connections that outlive one exchange: a WebSocket upgrade relays
//! bytes both ways after `101`, and kept-alive upstream connections
//! survive a reload.
//!
//! The WebSocket test is checked against nginx 1.22 with
//! `NOWAIT_TEST_NGINX=1`; the reload test is nowait's own (nginx's new
//! worker processes cannot take the old ones' connections).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::proxy::{conf, get, start};
use common::wait::until;
use common::{Conn, Server, Upstream, body};

/// How long a test waits for an effect that must come (a bound, not a
/// speed requirement).
const WAIT: Duration = Duration::from_secs(5);

/// Answers an upgrade with 101 and `hi`, then echoes what comes in
/// upper case until the peer closes, which sets `closed`.
fn websocket_upstream(ended: Arc<AtomicBool>) -> Upstream {
    Upstream::start(move |c| {
        let Some(req) = c.read_request() else { return };
        assert_eq!(req.header("Upgrade").as_deref(), Some("websocket"));
        assert_eq!(req.header("Connection").as_deref(), Some("upgrade"));
        c.write(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
              Connection: Upgrade\r\n\r\nhi",
        );
        loop {
            let closed = c.wait_closed(Duration::from_millis(50));
            let got = c.take_pending();
            if !got.is_empty() && !c.write(&got.to_ascii_uppercase()) {
                return;
            }
            if closed {
                ended.store(true, Ordering::SeqCst);
                return;
            }
        }
    })
}

#[test]
fn an_upgrade_relays_bytes_both_ways() {
    let ended = Arc::new(AtomicBool::new(false));
    let up = websocket_upstream(ended.clone());
    let server = start(
        &up,
        "",
        "location / { proxy_pass http://UP; proxy_http_version 1.1;\n \
         proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection upgrade; }",
    );
    let mut c = Conn::open(server.port());
    c.send(
        b"GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n\
          Connection: Upgrade\r\n\r\n",
    );
    let r = c.next_response("GET").expect("the 101");
    assert_eq!(r.status, 101);
    assert_eq!(r.header("Upgrade").as_deref(), Some("websocket"));
    assert_eq!(r.header("Connection").as_deref(), Some("upgrade"));
    let wait_for = |c: &mut Conn, want: &[u8]| {
        until(WAIT, || {
            c.quiet_for(Duration::from_millis(20));
            c.pending().ends_with(want)
        })
    };
    assert!(wait_for(&mut c, b"hi"), "{:?}", c.pending());
    c.send(b"ping");
    assert!(wait_for(&mut c, b"hiPING"), "{:?}", c.pending());
    c.send(b" again");
    assert!(wait_for(&mut c, b"hiPING AGAIN"), "{:?}", c.pending());
    // The client's close ends the tunnel: the upstream sees its end.
    assert!(!ended.load(Ordering::SeqCst));
    drop(c);
    assert!(until(WAIT, || ended.load(Ordering::SeqCst)));
}

/// nowait only: the process keeps one keep-alive cache across
/// generations, so a connection opened before a reload serves requests
/// after it.
#[test]
fn kept_alive_connections_survive_a_reload() {
    let up = Upstream::echo();
    let location = |generation: u32| {
        format!(
            "location / {{ proxy_pass http://u; proxy_http_version 1.1;\n \
             proxy_set_header Connection \"\"; add_header X-Gen {generation}; }}"
        )
    };
    let http = "upstream u { server UP; keepalive 8; }";
    let server = Server::nowait(&conf(Some(&up), http, &location(1)));
    assert_eq!(get(&server, "/").header("X-Gen").as_deref(), Some("1"));
    assert_eq!(up.connections(), 1);

    server.write_conf(&conf(Some(&up), http, &location(2)));
    server.signal("HUP");
    assert!(
        until(WAIT, || get(&server, "/").header("X-Gen").as_deref()
            == Some("2")),
        "the reload did not take: {}",
        server.stderr()
    );
    for _ in 0..3 {
        let r = get(&server, "/");
        assert!(body(&r).starts_with("GET / HTTP/1.1\r\n"));
    }
    assert_eq!(up.connections(), 1, "the connection was not reused");
    assert!(up.requests().iter().all(|r| r.connection == 0));
}

/// A cached connection the upstream closes as the next request arrives
/// fails on reuse: nginx tries again on a fresh connection without
/// counting the try (`u->peer.cached` in `ngx_http_upstream_next`), even
/// with one server.
#[test]
fn a_kept_alive_connection_that_fails_on_reuse_is_replaced() {
    let up = Upstream::start(|c| {
        if c.read_request().is_some() {
            c.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
            if c.id() == 0 {
                // The second request on the first connection gets no answer.
                let _ = c.read_request();
            }
        }
    });
    let server = start(
        &up,
        "upstream u { server UP; keepalive 8; }",
        "location / { proxy_pass http://u; proxy_http_version 1.1;\n \
         proxy_set_header Connection \"\"; }",
    );
    assert_eq!(body(&get(&server, "/")), "ok");
    let r = get(&server, "/");
    assert_eq!(
        (r.status, body(&r).as_str()),
        (200, "ok"),
        "{}",
        server.stderr()
    );
    assert_eq!(up.connections(), 2);
    let firsts: Vec<usize> = up.requests().iter().map(|r| r.connection).collect();
    assert_eq!(firsts, [0, 0, 1]);
}
