//! The socket parameters of `listen`: `deferred`, `fastopen=`, `ipv6only=`,
//! `so_keepalive=`, read with nginx's words for a bad value (compared with
//! nginx itself under `NOWAIT_TEST_NGINX=1`), and a server that has them
//! set answers as one without.

mod common;

use common::client::get;
use common::nginx_t::{check_bad, check_good, s};
use common::{Conf, Server};

#[test]
#[rustfmt::skip]
fn bad_parameters() {
    check_bad(vec![
        ("fastopen-negative", s("listen 127.0.0.1:8182 fastopen=-1;"), "invalid fastopen \"fastopen=-1\"", Some(3)),
        ("fastopen-bare", s("listen 127.0.0.1:8182 fastopen;"), "invalid parameter \"fastopen\"", Some(3)),
        ("deferred-value", s("listen 127.0.0.1:8182 deferred=1;"), "invalid parameter \"deferred=1\"", Some(3)),
        ("ipv6only-flags", s("listen [::1]:8182 ipv6only=oz;"), "invalid ipv6only flags \"oz\"", Some(3)),
        ("ipv6only-word", s("listen [::1]:8182 ipv6only=yes;"), "invalid parameter \"ipv6only=yes\"", Some(3)),
        ("keepalive-four", s("listen 127.0.0.1:8182 so_keepalive=1:2:3:4;"), "invalid so_keepalive value: \"1:2:3:4\"", Some(3)),
        ("keepalive-zero", s("listen 127.0.0.1:8182 so_keepalive=0:0:0;"), "invalid so_keepalive value: \"0:0:0\"", Some(3)),
        ("keepalive-word", s("listen 127.0.0.1:8182 so_keepalive=:x:;"), "invalid so_keepalive value: \":x:\"", Some(3)),
        ("backlog", s("listen 127.0.0.1:8182 backlog=abc;"), "invalid backlog \"backlog=abc\"", Some(3)),
        ("sndbuf", s("listen 127.0.0.1:8182 sndbuf=abc;"), "invalid sndbuf \"sndbuf=abc\"", Some(3)),
        ("setfib", s("listen 127.0.0.1:8182 setfib=1;"), "invalid parameter \"setfib=1\"", Some(3)),
    ]);
}

#[test]
#[rustfmt::skip]
fn good_parameters() {
    check_good(vec![
        ("deferred", s("listen 127.0.0.1:8182 deferred;")),
        ("fastopen", s("listen 127.0.0.1:8182 fastopen=0;")),
        ("ipv6only-off", s("listen [::1]:8182 ipv6only=off;")),
        ("keepalive-on", s("listen 127.0.0.1:8182 so_keepalive=on;")),
        ("keepalive-off", s("listen 127.0.0.1:8182 so_keepalive=off;")),
        ("keepalive-parts", s("listen 127.0.0.1:8182 so_keepalive=30m::10;")),
        ("all", s("listen 127.0.0.1:8182 deferred fastopen=16 so_keepalive=1m:10s:3 backlog=64;")),
    ]);
}

/// With every socket parameter set, requests are answered, a connection
/// whose request comes later too (`deferred` holds it in the kernel until
/// data arrives), and a reload that drops `deferred` keeps serving.
#[test]
fn a_server_with_socket_parameters_serves() {
    let conf = |params: &str, text: &str| {
        Conf::http(&format!(
            "server {{
               listen 127.0.0.1:{{port}} {params};
               location / {{ return 200 \"{text}\"; }}
             }}"
        ))
        .render()
    };
    let server = Server::tested(&conf("deferred fastopen=16 so_keepalive=1m:10s:3", "ok"));
    let port = server.port();
    let r = get(port, "/");
    assert_eq!(r.status, 200);
    assert_eq!(common::body(&r), "ok");
    // Connected first, the request written 300 ms later.
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    std::thread::sleep(std::time::Duration::from_millis(300));
    c.write_all(b"GET / HTTP/1.0\r\n\r\n").expect("write");
    c.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("timeout");
    let mut out = String::new();
    c.read_to_string(&mut out).expect("read");
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.ends_with("\r\n\r\nok"), "{out}");
    server.write_conf(&conf("so_keepalive=on", "v2"));
    server.signal("HUP");
    assert!(
        common::wait::until(std::time::Duration::from_secs(10), || {
            common::body(&get(port, "/")) == "v2"
        }),
        "the reload did not take effect: {}",
        server.stderr()
    );
    assert!(!server.stderr().contains("[alert]"), "{}", server.stderr());
}
