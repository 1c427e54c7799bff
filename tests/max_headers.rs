//! `max_headers` (nginx 1.29.8, backported by Debian to its nginx 1.22.1):
//! a request with more header lines than its server allows is answered 400
//! "Request Header Or Cookie Too Large" and logged at `info`; lines before
//! `Host` count against the address's default server, the rest against the
//! server `Host` chose. Checked against nginx: `-t` gives the same messages,
//! and the answers are nginx's (run with `NOWAIT_TEST_NGINX=1`).

mod common;

use std::time::Duration;

use common::client::request;
use common::nginx_t::{check_bad_against, check_good_against, nginx_knows, s};
use common::wait::{read_text, until};
use common::{Conf, Server, TempDir};

#[test]
#[rustfmt::skip]
fn bad_max_headers() {
    check_bad_against(vec![
        ("number", s("max_headers x;"), "\"max_headers\" directive invalid number", Some(3)),
        ("twice", s("max_headers 3; max_headers 4;"), "\"max_headers\" directive is duplicate", Some(3)),
        ("args", s("max_headers 1 2;"), "invalid number of arguments in \"max_headers\" directive", Some(3)),
        ("location", s("location / { max_headers 3; }"), "\"max_headers\" directive is not allowed here", Some(3)),
    ], nginx_knows("max_headers", &s("max_headers 3;")));
}

#[test]
#[rustfmt::skip]
fn good_max_headers() {
    check_good_against(vec![
        ("server", s("max_headers 0;")),
        ("http", "max_headers 10;".into()),
    ], nginx_knows("max_headers", &s("max_headers 3;")));
}

/// A request for `/` with `lines` (each `Name: value`, without CRLF).
fn get_with(port: u16, lines: &[String]) -> common::Response {
    let mut raw = String::from("GET / HTTP/1.0\r\n");
    for l in lines {
        raw.push_str(l);
        raw.push_str("\r\n");
    }
    raw.push_str("\r\n");
    request(port, &raw)
}

/// `n` lines `X-i: i`.
fn extra(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("X-{i}: {i}")).collect()
}

#[test]
fn the_limit_and_its_answer() {
    let d = TempDir::new("maxh");
    common::tmp::set_mode(d.path(), 0o777);
    let log = d.path().join("e.log");
    let conf = Conf::http(&format!(
        "server {{
           listen 127.0.0.1:{{port}};
           error_log {} info;
           max_headers 5;
           location / {{ return 200 ok; }}
         }}
         server {{
           listen 127.0.0.1:{{port}};
           server_name many;
           location / {{ return 200 many; }}
         }}",
        log.display()
    ))
    .render();
    let s = Server::tested(&conf);
    let host = |h: &str, mut rest: Vec<String>| {
        rest.insert(0, format!("Host: {h}"));
        rest
    };
    assert_eq!(get_with(s.port(), &host("x", extra(4))).status, 200);
    let refused = get_with(s.port(), &host("x", extra(5)));
    assert_eq!(refused.status, 400);
    let page = String::from_utf8_lossy(&refused.body);
    assert!(
        page.contains("<title>400 Request Header Or Cookie Too Large</title>"),
        "{page}"
    );
    // The named server keeps nginx's default of 1000 for the lines after
    // its Host line; the default server counted only that one.
    assert_eq!(get_with(s.port(), &host("many", extra(999))).body, b"many");
    assert_eq!(get_with(s.port(), &host("many", extra(1000))).status, 400);
    // Lines before Host count against the default server's 5.
    let mut early = extra(5);
    early.push("Host: many".into());
    assert_eq!(get_with(s.port(), &early).status, 400);
    let mut late = extra(4);
    late.push("Host: many".into());
    assert_eq!(get_with(s.port(), &late).body, b"many");
    let line = "client sent too many header lines while reading client request headers, client: 127.0.0.1, server: , request: \"GET / HTTP/1.0\", host: \"x\"";
    assert!(
        until(Duration::from_secs(5), || read_text(&log).contains(line)),
        "{}",
        read_text(&log)
    );
}
