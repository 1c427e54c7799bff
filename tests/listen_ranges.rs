//! `listen addr:first-last`: a port range (nginx 1.27.3, backported by
//! Debian to its nginx 1.22.1) is one listening address per port. Checked
//! against nginx: `-t` gives the same messages, and a server answers on
//! every port of its range (run with `NOWAIT_TEST_NGINX=1`).

mod common;

use std::net::{Ipv4Addr, TcpListener};

use common::client::get;
use common::nginx_t::{check_bad, check_good, s};
use common::{Conf, Server};

#[test]
#[rustfmt::skip]
fn bad_ranges() {
    check_bad(vec![
        ("reversed", s("listen 127.0.0.1:8183-8182;"), "invalid port range in \"127.0.0.1:8183-8182\" of the \"listen\" directive", Some(3)),
        ("reversed-v6", s("listen [::1]:8183-8182;"), "invalid port range in \"[::1]:8183-8182\" of the \"listen\" directive", Some(3)),
        ("reversed-port", s("listen 8183-8182;"), "invalid port range in \"8183-8182\" of the \"listen\" directive", Some(3)),
        ("zero", s("listen 127.0.0.1:0-8183;"), "invalid port in \"127.0.0.1:0-8183\" of the \"listen\" directive", Some(3)),
        ("open", s("listen 127.0.0.1:8182-;"), "invalid port in \"127.0.0.1:8182-\" of the \"listen\" directive", Some(3)),
        ("too-high", s("listen 127.0.0.1:8182-65536;"), "invalid port in \"127.0.0.1:8182-65536\" of the \"listen\" directive", Some(3)),
        ("duplicate", s("listen 127.0.0.1:8182-8183; listen 127.0.0.1:8183;"), "a duplicate listen 127.0.0.1:8183", Some(3)),
    ]);
}

#[test]
#[rustfmt::skip]
fn good_ranges() {
    check_good(vec![
        ("v4", s("listen 127.0.0.1:8182-8183;")),
        ("v6", s("listen [::1]:8182-8183;")),
        ("one", s("listen 127.0.0.1:8182-8182;")),
        ("port", s("listen 8182-8183 reuseport;")),
    ]);
}

/// Two consecutive loopback ports that were free a moment ago.
fn free_pair() -> u16 {
    for _ in 0..100 {
        let a = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
        let port = a.local_addr().expect("getsockname").port();
        if port < u16::MAX && TcpListener::bind((Ipv4Addr::LOCALHOST, port + 1)).is_ok() {
            return port;
        }
    }
    panic!("no two consecutive free ports");
}

#[test]
fn every_port_of_a_range_is_served() {
    let p = free_pair();
    let conf = Conf::http(&format!(
        "server {{
           listen 127.0.0.1:{{port}};
           listen 127.0.0.1:{p}-{q};
           location / {{ return 200 \"$server_port\"; }}
         }}",
        q = p + 1
    ))
    .render();
    let s = Server::tested(&conf);
    for port in [s.port(), p, p + 1] {
        let r = get(port, "/");
        assert_eq!(r.status, 200);
        assert_eq!(r.body, port.to_string().as_bytes());
    }
}
