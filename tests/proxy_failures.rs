//! When the upstream fails: the status the client gets (502, 504), the
//! error-log line nginx writes, a body cut short (the client connection is
//! closed, the body never looks complete), and `proxy_next_upstream` with
//! its conditions, tries and time, backup servers and failure windows.
//!
//! Checked against nginx 1.22 with `NOWAIT_TEST_NGINX=1`.

mod common;

use std::net::{Ipv4Addr, TcpListener};
use std::time::Duration;

use common::proxy::{get, request, start};
use common::server::free_port;
use common::wait::until;
use common::{Conn, State, Upstream, body};

/// How long a test waits for an effect that must come (a bound, not a
/// speed requirement).
const WAIT: Duration = Duration::from_secs(5);

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";

/// A loopback address where nothing listens.
fn refused() -> String {
    format!("127.0.0.1:{}", free_port())
}

/// The suffix nginx gives a line about `GET path` to `upstream`.
fn context(path: &str, upstream: &str) -> String {
    format!(
        ", client: 127.0.0.1, server: localhost, request: \"GET {path} HTTP/1.1\", \
         upstream: \"http://{upstream}{path}\", host: \"localhost\""
    )
}

#[test]
fn a_refused_connection_is_a_502_with_nginxs_line() {
    let dead = refused();
    let up = Upstream::fixed(OK);
    let server = start(
        &up,
        "",
        &format!("location / {{ proxy_pass http://{dead}; }}"),
    );
    assert_eq!(get(&server, "/r").status, 502);
    let want = format!(
        "connect() failed (111: Connection refused) while connecting to upstream{}",
        context("/r", &dead)
    );
    assert!(
        until(WAIT, || server.stderr().contains(&want)),
        "{}",
        server.stderr()
    );
}

#[test]
fn a_connect_timeout_is_a_504() {
    // A listener whose accept queue is full drops new SYNs: connect()
    // waits until proxy_connect_timeout.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket
        .bind(&std::net::SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into())
        .unwrap();
    socket.listen(0).unwrap();
    let listener: TcpListener = socket.into();
    let addr = listener.local_addr().unwrap();
    let mut fillers = Vec::new();
    for _ in 0..4 {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        s.set_nonblocking(true).unwrap();
        let _ = s.connect(&addr.into());
        fillers.push(s);
    }
    std::thread::sleep(Duration::from_millis(100));
    let up = Upstream::fixed(OK);
    let server = start(
        &up,
        "",
        &format!("location / {{ proxy_pass http://{addr}; proxy_connect_timeout 300ms; }}"),
    );
    assert_eq!(get(&server, "/t").status, 504);
    let want = format!(
        "upstream timed out (110: Connection timed out) while connecting to upstream{}",
        context("/t", &addr.to_string())
    );
    assert!(
        until(WAIT, || server.stderr().contains(&want)),
        "{}",
        server.stderr()
    );
    drop(listener);
}

#[test]
fn a_read_timeout_is_a_504() {
    let up = Upstream::start(|c| {
        if c.read_request().is_some() {
            c.sleep(1500);
            c.write(OK);
        }
    });
    let server = start(
        &up,
        "",
        "location / { proxy_pass http://UP; proxy_read_timeout 300ms; }",
    );
    assert_eq!(get(&server, "/s").status, 504);
    let want = format!(
        "upstream timed out (110: Connection timed out) while reading response header from \
         upstream{}",
        context("/s", &up.addr().to_string())
    );
    assert!(
        until(WAIT, || server.stderr().contains(&want)),
        "{}",
        server.stderr()
    );
}

/// The worker reuses its timers from one wait to the next
/// (`io/deadline.rs`): a timer left due in 300 ms by a quick answer, lent
/// again for a 60 s wait, must not fire at 300 ms; lent again for 300 ms
/// after that, it must fire then, not at 60 s.
#[test]
fn a_reused_timer_keeps_each_waits_own_read_timeout() {
    let up = Upstream::start(|c| {
        if let Some(req) = c.read_request() {
            match req.target().as_str() {
                "/late" => c.sleep(600),
                "/slow" => c.sleep(1500),
                _ => {}
            }
            c.write(OK);
        }
    });
    let server = start(
        &up,
        "",
        "location = /short-quick { proxy_pass http://UP/quick; proxy_read_timeout 300ms; }
         location = /long-late { proxy_pass http://UP/late; proxy_read_timeout 60s; }
         location = /short-slow { proxy_pass http://UP/slow; proxy_read_timeout 300ms; }",
    );
    for _ in 0..3 {
        assert_eq!(get(&server, "/short-quick").status, 200);
    }
    assert_eq!(
        get(&server, "/long-late").status,
        200,
        "{}",
        server.stderr()
    );
    let started = std::time::Instant::now();
    assert_eq!(get(&server, "/short-slow").status, 504);
    assert!(started.elapsed() < Duration::from_millis(1400));
    assert_eq!(
        get(&server, "/long-late").status,
        200,
        "{}",
        server.stderr()
    );
}

#[test]
fn a_reset_or_a_close_inside_the_head_is_a_502() {
    let up = Upstream::start(|c| {
        if let Some(req) = c.read_request() {
            c.write(b"HTTP/1.1 200 OK\r\nX-Half: ");
            c.sleep(100);
            if req.target() == "/reset" {
                c.reset();
            }
        }
    });
    let server = start(&up, "", "location / { proxy_pass http://UP; }");
    assert_eq!(get(&server, "/reset").status, 502);
    assert_eq!(get(&server, "/close").status, 502);
    let reset = format!(
        "recv() failed (104: Connection reset by peer) while reading response header from \
         upstream{}",
        context("/reset", &up.addr().to_string())
    );
    let closed = format!(
        "upstream prematurely closed connection while reading response header from upstream{}",
        context("/close", &up.addr().to_string())
    );
    assert!(
        until(WAIT, || server.stderr().contains(&reset)),
        "{}",
        server.stderr()
    );
    assert!(
        until(WAIT, || server.stderr().contains(&closed)),
        "{}",
        server.stderr()
    );
}

/// Sends `GET path` on a keep-alive connection to an upstream that starts
/// a body and then resets or closes; returns what the client read and
/// whether the connection was closed.
fn cut_body(path: &str) -> (String, State) {
    let up = Upstream::start(|c| {
        if let Some(req) = c.read_request() {
            let chunked = req.target().contains("chunked");
            let head: &[u8] = if chunked {
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n"
            } else {
                b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcd"
            };
            c.write(head);
            c.sleep(200);
            if req.target().contains("reset") {
                c.reset();
            }
        }
    });
    let server = start(&up, "", "location / { proxy_pass http://UP; }");
    let mut c = Conn::open(server.port());
    c.send(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes());
    assert!(c.response().is_none(), "the body must not look complete");
    let state = c.wait_closed(WAIT);
    (String::from_utf8_lossy(c.pending()).into_owned(), state)
}

#[test]
fn a_body_cut_short_closes_the_client_connection_without_completing_it() {
    // What was read before the failure may be sent or not (nginx drops
    // it after a reset); the client must see the connection closed and a
    // body that cannot be taken for complete.
    for path in ["/length-close", "/length-reset"] {
        let (got, state) = cut_body(path);
        assert_eq!(state, State::Closed, "{path}: {got:?}");
        assert!(got.starts_with("HTTP/1.1 200 OK\r\n"), "{path}: {got:?}");
        assert!(got.contains("Content-Length: 10\r\n"), "{path}: {got:?}");
        assert!(
            got.ends_with("\r\n\r\nabcd") || got.ends_with("\r\n\r\n"),
            "{path}: {got:?}"
        );
    }
    for path in ["/chunked-close", "/chunked-reset"] {
        let (got, state) = cut_body(path);
        assert_eq!(state, State::Closed, "{path}: {got:?}");
        assert!(
            got.contains("Transfer-Encoding: chunked\r\n"),
            "{path}: {got:?}"
        );
        assert!(
            got.ends_with("\r\n\r\n4\r\nabcd\r\n") || got.ends_with("chunked\r\n\r\n"),
            "{path}: {got:?}"
        );
    }
}

/// A server proxying to group `u` of `servers` with `extra` directives in
/// the location.
fn group(up: &Upstream, servers: &str, extra: &str) -> common::Server {
    start(
        up,
        &format!("upstream u {{ {servers} }}"),
        &format!("location / {{ proxy_pass http://u; {extra} }}"),
    )
}

#[test]
fn next_upstream_on_error_tries_the_next_server() {
    let up = Upstream::fixed(OK);
    let dead = refused();
    let servers = format!("server {dead}; server UP;");
    let server = group(&up, &servers, "");
    assert_eq!(body(&get(&server, "/")), "ok");
    let server = group(&up, &servers, "proxy_next_upstream off;");
    assert_eq!(get(&server, "/").status, 502);
    let server = group(&up, &servers, "proxy_next_upstream_tries 1;");
    assert_eq!(get(&server, "/").status, 502);
}

/// Regression: a POST whose connect failed was answered 502; nginx sends
/// it to the next server, since it never left (`u->request_sent`).
#[test]
fn a_post_whose_connect_failed_goes_to_the_next_server() {
    let up = Upstream::fixed(OK);
    let servers = format!("server {}; server UP;", refused());
    let server = group(&up, &servers, "");
    let post = "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\n\
                Connection: close\r\n\r\nx";
    assert_eq!(request(&server, post).status, 200, "{}", server.stderr());
}

/// An upstream that answers every request `status`, counting them.
fn answering(status: &str) -> Upstream {
    let answer = format!(
        "HTTP/1.1 {status}\r\nContent-Length: 6\r\nConnection: close\r\n\r\n{}",
        &status[..3].repeat(2)
    );
    Upstream::fixed(answer.as_bytes())
}

#[test]
fn next_upstream_on_a_status_and_on_a_timeout() {
    let failing = answering("500 Internal Server Error");
    let good = answering("200 OK");
    let servers = format!("server {}; server UP;", failing.addr());
    let server = group(&good, &servers, "");
    let r = get(&server, "/");
    assert_eq!((r.status, body(&r).as_str()), (500, "500500"));
    let server = group(&good, &servers, "proxy_next_upstream http_500;");
    assert_eq!(get(&server, "/").status, 200);
    // The last server's status is the answer when none is left.
    let servers = format!("server {}; server {};", failing.addr(), failing.addr());
    let server = group(&good, &servers, "proxy_next_upstream http_500;");
    assert_eq!(body(&get(&server, "/")), "500500");

    // A POST that was sent goes on only with non_idempotent.
    let post = "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\n\
                Connection: close\r\n\r\nx";
    let servers = format!("server {}; server UP;", failing.addr());
    let server = group(&good, &servers, "proxy_next_upstream http_500;");
    assert_eq!(request(&server, post).status, 500);
    let server = group(
        &good,
        &servers,
        "proxy_next_upstream http_500 non_idempotent;",
    );
    assert_eq!(request(&server, post).status, 200);

    let slow = Upstream::start(|c| {
        if c.read_request().is_some() {
            c.sleep(1000);
            c.write(OK);
        }
    });
    let servers = format!("server {}; server UP;", slow.addr());
    let server = group(&good, &servers, "proxy_read_timeout 300ms;");
    assert_eq!(get(&server, "/").status, 200);
    let server = group(
        &good,
        &servers,
        "proxy_read_timeout 300ms; proxy_next_upstream_timeout 200ms;",
    );
    assert_eq!(get(&server, "/").status, 504);
}

#[test]
fn a_failed_server_rests_for_fail_timeout_and_backups_stand_in() {
    let failing = answering("502 Bad Gateway");
    let good = answering("200 OK");
    let count = |up: &Upstream| up.requests().len();
    let servers = format!(
        "server {} max_fails=1 fail_timeout=30s; server UP;",
        failing.addr()
    );
    let server = group(&good, &servers, "proxy_next_upstream http_502;");
    for _ in 0..4 {
        assert_eq!(get(&server, "/").status, 200);
    }
    assert_eq!(count(&failing), 1, "disabled after its first failure");
    drop(server);
    let servers = format!("server {} max_fails=0; server UP;", failing.addr());
    let server = group(&good, &servers, "proxy_next_upstream http_502;");
    for _ in 0..4 {
        assert_eq!(get(&server, "/").status, 200);
    }
    assert!(
        count(&failing) >= 3,
        "max_fails=0 never disables: {}",
        count(&failing)
    );

    let backup = answering("200 OK");
    let servers = format!("server UP; server {} backup;", backup.addr());
    let server = group(&good, &servers, "");
    for _ in 0..3 {
        assert_eq!(get(&server, "/").status, 200);
    }
    assert_eq!(count(&backup), 0, "a backup waits while the primary is up");
    let servers = format!("server {}; server UP backup;", failing.addr());
    let server = group(&backup, &servers, "proxy_next_upstream http_502;");
    assert_eq!(get(&server, "/").status, 200);
    assert_eq!(count(&backup), 1);
}

#[test]
fn no_live_upstreams_when_every_server_is_resting() {
    let up = Upstream::fixed(OK);
    let servers = format!("server {}; server {};", refused(), refused());
    let server = group(&up, &servers, "");
    assert_eq!(get(&server, "/").status, 502);
    assert_eq!(get(&server, "/n").status, 502);
    let want = format!(
        "no live upstreams while connecting to upstream{}",
        context("/n", "u")
    );
    assert!(
        until(WAIT, || server.stderr().contains(&want)),
        "{}",
        server.stderr()
    );
}
