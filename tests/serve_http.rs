//! Black-box tests of HTTP/1.x connection handling and virtual servers:
//! keep-alive, pipelining, HTTP/1.0, `Connection: close`, absolute-form
//! targets, `server_name` selection, request bodies (read and dropped),
//! `client_max_body_size`, request smuggling guards and `Expect`.
//!
//! Each test starts the real binary and speaks raw bytes over loopback.

mod common;

use std::time::Duration;

use common::client::{get, request};
use common::fixture::INDEX_HTML;
use common::{Conf, Conn, Fixture, Server, State};

/// How long a test waits for the server to close a connection it should
/// close (a bound, not a speed requirement).
const CLOSE_WAIT: Duration = Duration::from_secs(5);

fn serve_fixture(extra: &str) -> (Fixture, Server) {
    let fixture = Fixture::build();
    let conf = Conf::server(&format!("root {{root}};\n{extra}"))
        .root(fixture.root())
        .render();
    let server = Server::tested(&conf);
    (fixture, server)
}

fn get_keepalive(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n")
}

#[test]
fn keepalive_serves_several_requests_on_one_connection() {
    let (_f, s) = serve_fixture("");
    let mut c = Conn::open(s.port());
    for path in ["/index.html", "/x", "/dir/file.txt", "/index.html"] {
        c.send(get_keepalive(path).as_bytes());
        let r = c
            .response()
            .unwrap_or_else(|| panic!("no response to {path}"));
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("Connection").as_deref(), Some("keep-alive"));
    }
    assert_eq!(c.wait_closed(Duration::from_millis(300)), State::Open);
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let (_f, s) = serve_fixture("");
    let mut c = Conn::open(s.port());
    let mut burst = String::new();
    for path in ["/x", "/dir/file.txt", "/static/a.txt"] {
        burst.push_str(&get_keepalive(path));
    }
    c.send(burst.as_bytes());
    let bodies: Vec<String> = (0..3)
        .map(|i| common::body(&c.response().unwrap_or_else(|| panic!("response {i}"))))
        .collect();
    assert_eq!(bodies, ["the x target\n", "dir file\n", "static a\n"]);
}

#[test]
fn http10_without_keepalive_closes() {
    let (_f, s) = serve_fixture("");
    let mut c = Conn::open(s.port());
    c.send(b"GET /x HTTP/1.0\r\n\r\n");
    let r = c.response().expect("a response");
    assert_eq!(r.status, 200);
    assert!(
        r.status_line.starts_with("HTTP/1.1 200"),
        "{}",
        r.status_line
    );
    assert_eq!(r.header("Connection").as_deref(), Some("close"));
    assert_eq!(c.wait_closed(CLOSE_WAIT), State::Closed);
}

#[test]
fn http10_with_keepalive_stays_open() {
    let (_f, s) = serve_fixture("");
    let mut c = Conn::open(s.port());
    for _ in 0..2 {
        c.send(b"GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        let r = c.response().expect("a response");
        assert_eq!(r.status, 200);
        assert_eq!(r.header("Connection").as_deref(), Some("keep-alive"));
        assert_eq!(common::body(&r), "the x target\n");
    }
}

#[test]
fn connection_close_is_honoured() {
    let (_f, s) = serve_fixture("");
    let mut c = Conn::open(s.port());
    c.send(b"GET /x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\nGET /x HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let r = c.response().expect("a response");
    assert_eq!(r.header("Connection").as_deref(), Some("close"));
    assert_eq!(c.wait_closed(CLOSE_WAIT), State::Closed);
    assert!(
        c.pending().is_empty(),
        "nothing after the closing response: {:?}",
        String::from_utf8_lossy(c.pending())
    );
}

#[test]
fn absolute_form_target_is_served_and_selects_the_server() {
    let conf = Conf::http(
        "server { listen 127.0.0.1:{port}; server_name a.test; return 200 \"a\"; }\n\
         server { listen 127.0.0.1:{port}; server_name b.test; return 200 \"b$uri\"; }",
    )
    .render();
    let s = Server::tested(&conf);
    let r = request(
        s.port(),
        "GET http://b.test/some/path?q=1 HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert_eq!(common::body(&r), "b/some/path");
}

#[test]
fn server_name_selection_follows_nginx_order() {
    let conf = Conf::http(
        "server { listen 127.0.0.1:{port}; server_name first.test; return 200 \"first\"; }\n\
         server { listen 127.0.0.1:{port}; server_name example.com www.exact.com; return 200 \"exact\"; }\n\
         server { listen 127.0.0.1:{port}; server_name *.example.com *.exact.com; return 200 \"front\"; }\n\
         server { listen 127.0.0.1:{port}; server_name www.example.*; return 200 \"back\"; }\n\
         server { listen 127.0.0.1:{port}; server_name ~^foo\\d+\\.test$; return 200 \"regex\"; }\n\
         server { listen 127.0.0.1:{port} default_server; server_name default.test; return 200 \"default\"; }",
    )
    .render();
    let s = Server::tested(&conf);
    let cases = [
        ("example.com", "exact"),
        ("EXAMPLE.com", "exact"),
        ("www.exact.com", "exact"),
        ("a.example.com", "front"),
        ("a.b.example.com", "front"),
        // A leading wildcard wins over a trailing one.
        ("www.example.com", "front"),
        ("www.example.org", "back"),
        ("foo42.test", "regex"),
        ("foo.test", "default"),
        ("unknown.test", "default"),
        ("first.test", "first"),
        ("example.com:8080", "exact"),
    ];
    for (host, want) in cases {
        let r = request(
            s.port(),
            &format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
        );
        assert_eq!(common::body(&r), want, "Host: {host}");
    }
    // Without Host (HTTP/1.0) the default server answers.
    let r = request(s.port(), "GET / HTTP/1.0\r\n\r\n");
    assert_eq!(common::body(&r), "default");
}

#[test]
fn first_server_is_the_default_without_default_server() {
    let conf = Conf::http(
        "server { listen 127.0.0.1:{port}; server_name one.test; return 200 \"one\"; }\n\
         server { listen 127.0.0.1:{port}; server_name two.test; return 200 \"two\"; }",
    )
    .render();
    let s = Server::tested(&conf);
    let r = request(
        s.port(),
        "GET / HTTP/1.1\r\nHost: none.test\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(common::body(&r), "one");
}

#[test]
fn content_length_body_is_discarded_before_the_next_request() {
    let (_f, s) = serve_fixture("location = /post { return 200 \"posted\"; }");
    let mut c = Conn::open(s.port());
    c.send(
        b"POST /post HTTP/1.1\r\nHost: localhost\r\nContent-Length: 11\r\n\r\nGET /x HTTP\
GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n",
    );
    let r = c.response().expect("the POST's response");
    assert_eq!((r.status, common::body(&r).as_str()), (200, "posted"));
    let r = c.response().expect("the pipelined GET's response");
    assert_eq!(
        (r.status, common::body(&r).as_str()),
        (200, "the x target\n")
    );
}

#[test]
fn chunked_body_is_discarded_before_the_next_request() {
    let (_f, s) = serve_fixture("location = /post { return 200 \"posted\"; }");
    let mut c = Conn::open(s.port());
    c.send(
        b"POST /post HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n\
5\r\nGET /\r\n10;ext=1\r\n0123456789abcdef\r\n0\r\nTrailer: x\r\n\r\n\
GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n",
    );
    let r = c.response().expect("the POST's response");
    assert_eq!((r.status, common::body(&r).as_str()), (200, "posted"));
    let r = c.response().expect("the pipelined GET's response");
    assert_eq!(
        (r.status, common::body(&r).as_str()),
        (200, "the x target\n")
    );
}

#[test]
fn body_sent_after_the_head_in_a_later_write_is_discarded() {
    let (_f, s) = serve_fixture("location = /post { return 200 \"posted\"; }");
    let mut c = Conn::open(s.port());
    c.send(b"POST /post HTTP/1.1\r\nHost: localhost\r\nContent-Length: 6\r\n\r\n");
    let r = c.response().expect("the POST's response");
    assert_eq!(r.status, 200);
    c.send(b"abcdefGET /x HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let r = c.response().expect("the next response");
    assert_eq!(common::body(&r), "the x target\n");
}

#[test]
fn client_max_body_size_rejects_a_larger_content_length() {
    let (_f, s) =
        serve_fixture("client_max_body_size 10;\nlocation = /post { return 200 \"posted\"; }");
    let r = request(
        s.port(),
        "POST /post HTTP/1.1\r\nHost: localhost\r\nContent-Length: 11\r\n\r\n01234567890",
    );
    assert_eq!(r.status, 413);
    assert_eq!(r.header("Connection").as_deref(), Some("close"));
    let r = request(
        s.port(),
        "POST /post HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\nConnection: close\r\n\r\n0123456789",
    );
    assert_eq!(r.status, 200);
}

#[test]
fn transfer_encoding_with_content_length_is_400() {
    let (_f, s) = serve_fixture("location = /post { return 200 \"posted\"; }");
    let mut c = Conn::open(s.port());
    c.send(
        b"POST /post HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4\r\n\
Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /x HTTP/1.1\r\nHost: localhost\r\n\r\n",
    );
    let r = c.response().expect("a response");
    assert_eq!(r.status, 400);
    assert_eq!(c.wait_closed(CLOSE_WAIT), State::Closed);
    assert!(c.pending().is_empty(), "no second response after a 400");
}

#[test]
fn expect_100_continue_gets_an_interim_response() {
    let (_f, s) = serve_fixture("location = /post { return 200 \"posted\"; }");
    let mut c = Conn::open(s.port());
    c.send(
        b"POST /post HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",
    );
    let interim = c.next_response("POST").expect("an interim response");
    assert_eq!(interim.status_line, "HTTP/1.1 100 Continue");
    c.send(b"hello");
    let r = c.response_to("POST").expect("the final response");
    assert_eq!((r.status, common::body(&r).as_str()), (200, "posted"));
    c.send(get_keepalive("/x").as_bytes());
    let r = c.response().expect("the next response");
    assert_eq!(common::body(&r), "the x target\n");
}

#[test]
fn index_html_of_the_root() {
    let (_f, s) = serve_fixture("");
    let r = get(s.port(), "/");
    assert_eq!(r.status, 200);
    assert_eq!(common::body(&r), INDEX_HTML);
}

#[test]
fn pipelined_responses_without_bodies_keep_the_stream_in_step() {
    let (_f, s) = serve_fixture("location = /post { return 200 \"posted\"; }");
    let etag = get(s.port(), "/x").header("ETag").unwrap();
    let reqs = [
        (
            "HEAD",
            "HEAD /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n".to_string(),
        ),
        (
            "GET",
            format!("GET /x HTTP/1.1\r\nHost: localhost\r\nIf-None-Match: {etag}\r\n\r\n"),
        ),
        (
            "GET",
            "GET /x HTTP/1.1\r\nHost: localhost\r\nRange: bytes=100-\r\n\r\n".into(),
        ),
        (
            "GET",
            "GET /missing HTTP/1.1\r\nHost: localhost\r\n\r\n".into(),
        ),
        (
            "GET",
            "GET /x HTTP/1.1\r\nHost: localhost\r\nRange: bytes=0-0,2-2\r\n\r\n".into(),
        ),
        ("GET", "GET /dir HTTP/1.1\r\nHost: localhost\r\n\r\n".into()),
        (
            "POST",
            "POST /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\nabc".into(),
        ),
        (
            "HEAD",
            "HEAD /missing HTTP/1.1\r\nHost: localhost\r\n\r\n".into(),
        ),
        ("GET", "GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n".into()),
    ];
    let mut c = Conn::open(s.port());
    let burst: String = reqs.iter().map(|(_, r)| r.as_str()).collect();
    c.send(burst.as_bytes());
    let statuses: Vec<u16> = reqs
        .iter()
        .map(|(m, raw)| {
            c.response_to(m)
                .unwrap_or_else(|| panic!("no response to {raw:?}"))
                .status
        })
        .collect();
    assert_eq!(statuses, [200, 304, 416, 404, 206, 301, 405, 404, 200]);
    assert!(c.quiet_for(Duration::from_millis(300)), "stray bytes");
}

#[test]
fn a_hundred_pipelined_requests_in_one_write() {
    let (_f, s) = serve_fixture("");
    let mut c = Conn::open(s.port());
    let burst: String = (0..100)
        .map(|i| {
            format!(
                "GET /x?{i} HTTP/1.1\r\nHost: localhost\r\nX-Pad: {}\r\n\r\n",
                "p".repeat(i * 7)
            )
        })
        .collect();
    c.send(burst.as_bytes());
    for i in 0..100 {
        let r = c.response().unwrap_or_else(|| panic!("no response {i}"));
        assert_eq!(
            (r.status, common::body(&r).as_str()),
            (200, "the x target\n"),
            "{i}"
        );
    }
}

#[test]
fn a_head_split_across_many_writes() {
    let (_f, s) = serve_fixture("");
    let mut c = Conn::open(s.port());
    for piece in [
        "G",
        "ET /d",
        "ir/file.txt HT",
        "TP/1.1\r",
        "\nHost: loc",
        "alhost\r\n",
        "\r",
        "\n",
    ] {
        c.send(piece.as_bytes());
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = c.response().expect("a response");
    assert_eq!((r.status, common::body(&r).as_str()), (200, "dir file\n"));
}
