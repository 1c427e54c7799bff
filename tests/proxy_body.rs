//! Request bodies through the proxy: read whole first (in memory, or in a
//! temp file past `client_body_buffer_size`, or always in a file with
//! `client_body_in_file_only`), or streamed to an HTTP/1.1 upstream as
//! they arrive (`proxy_request_buffering off`); and the client's limits
//! (`client_max_body_size`, `client_body_timeout`, `Expect:
//! 100-continue`).
//!
//! Checked against nginx 1.22 with `NOWAIT_TEST_NGINX=1`.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::proxy::{request, start};
use common::wait::until;
use common::{Conn, Upstream, body};

/// How long a test waits for an effect that must come (a bound, not a
/// speed requirement).
const WAIT: Duration = Duration::from_secs(5);

/// A body of `n` bytes that shows where each byte is.
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| b'a' + (i % 26) as u8).collect()
}

fn post_head(path: &str, len: usize) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len}\r\n\
         Connection: close\r\n\r\n"
    )
}

#[test]
fn bodies_in_memory_and_in_a_temp_file_arrive_whole() {
    let up = Upstream::echo();
    let server = start(
        &up,
        "",
        "client_body_buffer_size 1k; client_max_body_size 10m;\n\
         location / { proxy_pass http://UP; }",
    );
    for n in [10, 1024, 1025, 300_000] {
        let data = pattern(n);
        let mut c = Conn::open(server.port());
        c.send(post_head("/m", n).as_bytes());
        c.send(&data);
        let r = c.response().expect("a response");
        assert_eq!(r.status, 200);
        let got = up.requests().pop().expect("a request upstream");
        assert_eq!(got.header("Content-Length"), Some(n.to_string()));
        assert!(got.body == data, "{n} bytes arrived changed");
    }
    // A chunked body is read whole and sent with its length.
    let mut c = Conn::open(server.port());
    c.send(
        b"PUT /c HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\
          Connection: close\r\n\r\n5\r\nhello\r\n6;x=1\r\n world\r\n0\r\n\r\n",
    );
    assert_eq!(c.response().expect("a response").status, 200);
    let got = up.requests().pop().expect("a request upstream");
    assert_eq!(got.header("Content-Length").as_deref(), Some("11"));
    assert_eq!(got.header("Transfer-Encoding"), None);
    assert_eq!(got.body, b"hello world");
}

#[test]
fn client_body_in_file_only_names_the_file() {
    let up = Upstream::echo();
    let server = start(
        &up,
        "",
        "location / { proxy_pass http://UP; client_body_in_file_only on;\n \
         proxy_set_header X-File $request_body_file; }",
    );
    let r = request(&server, &format!("{}abc", post_head("/f", 3)));
    assert_eq!(r.status, 200);
    let got = &up.requests()[0];
    assert_eq!(got.body, b"abc");
    let file = got.header("X-File").expect("X-File");
    let dir = server.prefix().join("client_body_temp");
    assert!(
        file.starts_with(&*dir.to_string_lossy()),
        "{file} not in {dir:?}"
    );
    // `on` keeps the file after the request.
    assert_eq!(std::fs::read(&file).expect("the body file"), b"abc");
}

#[test]
fn unbuffered_chunked_bodies_stream_to_an_http_1_1_upstream() {
    // The upstream looks at what came within a moment, before the client
    // has sent the rest, then reads the whole request.
    let early = Arc::new(Mutex::new(Vec::new()));
    let up = {
        let early = early.clone();
        Upstream::start(move |c| {
            c.wait_closed(Duration::from_millis(500));
            *early.lock().unwrap() = c.pending().to_vec();
            if c.read_request().is_some() {
                c.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
            }
        })
    };
    let server = start(
        &up,
        "",
        "location / { proxy_pass http://UP; proxy_request_buffering off;\n \
         proxy_http_version 1.1; }",
    );
    let mut c = Conn::open(server.port());
    c.send(
        b"POST /s HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\
          Connection: close\r\n\r\n5\r\nfirst\r\n",
    );
    std::thread::sleep(Duration::from_millis(800));
    c.send(b"6\r\nsecond\r\n0\r\n\r\n");
    let r = c.response().expect("a response");
    assert_eq!(body(&r), "ok");
    let early = String::from_utf8_lossy(&early.lock().unwrap()).into_owned();
    assert!(
        early.contains("\r\nTransfer-Encoding: chunked\r\n"),
        "{early:?}"
    );
    assert!(early.ends_with("\r\n\r\n5\r\nfirst\r\n"), "{early:?}");
    let got = &up.requests()[0];
    assert_eq!(got.body, b"firstsecond");
    assert_eq!(got.header("Content-Length"), None);
}

#[test]
fn a_body_over_client_max_body_size_is_a_413_and_never_goes_upstream() {
    let up = Upstream::echo();
    let server = start(
        &up,
        "",
        "location / { proxy_pass http://UP; client_max_body_size 1k; }",
    );
    let r = request(&server, &post_head("/big", 2000));
    assert_eq!(r.status, 413);
    let chunked = "POST / HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\
                   Connection: close\r\n\r\n800\r\nx";
    assert_eq!(request(&server, chunked).status, 413);
    assert_eq!(up.connections(), 0);
    assert!(until(WAIT, || server
        .stderr()
        .contains("client intended to send too large body: 2000 bytes")));
}

/// Regression: nowait answered a request body that stopped coming with a
/// 408 page; nginx closes the connection without a word
/// (`ngx_http_finalize_request` terminates on NGX_HTTP_REQUEST_TIME_OUT).
#[test]
fn a_body_that_stops_coming_closes_the_connection() {
    let up = Upstream::echo();
    let server = start(
        &up,
        "",
        "location / { proxy_pass http://UP; client_body_timeout 300ms; }",
    );
    let mut c = Conn::open(server.port());
    c.send(format!("{}abc", post_head("/t", 10)).as_bytes());
    assert_eq!(c.wait_closed(WAIT), common::State::Closed);
    assert_eq!(c.pending(), b"", "nothing is sent");
    assert_eq!(up.connections(), 0);
}

#[test]
fn expect_100_continue_is_answered_and_not_forwarded() {
    let up = Upstream::echo();
    let server = start(&up, "", "location / { proxy_pass http://UP; }");
    let mut c = Conn::open(server.port());
    c.send(
        b"POST /e HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\n\
          Content-Length: 4\r\nConnection: close\r\n\r\n",
    );
    let interim = c.next_response("POST").expect("100 Continue");
    assert_eq!(interim.status_line, "HTTP/1.1 100 Continue");
    c.send(b"data");
    let r = c.response_to("POST").expect("the final response");
    assert_eq!(r.status, 200);
    let got = &up.requests()[0];
    assert_eq!(got.header("Expect"), None);
    assert_eq!(got.body, b"data");
}

/// Regression: nowait skipped `100 Continue` when the body came with the
/// head; nginx's `ngx_http_test_expect` sends it whenever it is asked.
#[test]
fn expect_100_continue_is_answered_even_when_the_body_came_with_the_head() {
    let up = Upstream::echo();
    let server = start(&up, "", "location / { proxy_pass http://UP; }");
    let mut c = Conn::open(server.port());
    c.send(
        b"POST /e HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\n\
          Content-Length: 4\r\nConnection: close\r\n\r\ndata",
    );
    let interim = c.next_response("POST").expect("100 Continue");
    assert_eq!(interim.status_line, "HTTP/1.1 100 Continue");
    let r = c.response_to("POST").expect("the final response");
    assert_eq!(r.status, 200);
    assert_eq!(up.requests()[0].body, b"data");
}
