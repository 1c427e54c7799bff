//! Black-box tests of `add_trailer` and `chunked_transfer_encoding`: a
//! response whose location adds trailers goes chunked to an HTTP/1.1
//! client, the trailers after the last chunk, computed at the end of the
//! body (`$sent_http_*` and earlier trailers visible); not to HTTP/1.0, not
//! without chunked encoding, not for HEAD, and without `always` not on
//! errors. nginx 1.22's behaviour: run with `NOWAIT_TEST_NGINX=1` to check.

mod common;

use common::{Fixture, raw_exchange};

const CRLF: &str = "\r\n";

fn get(port: u16, path: &str, version: &str) -> String {
    let req = format!("GET {path} {version}\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    String::from_utf8_lossy(&raw_exchange(port, req.as_bytes())).into_owned()
}

fn serve(f: &Fixture) -> common::Server {
    std::fs::write(f.root().join("t1"), "SEE-THIS").unwrap();
    common::serve(
        f,
        "add_trailer X-Var $host;
         add_trailer X-Always $host always;
         add_trailer X-Empty '';
         add_trailer X-Sent-HTTP $sent_http_accept_ranges;
         add_trailer X-Sent-Trailer $sent_trailer_x_var;
         location /t1 { }
         location /nx { }
         location /header { alias {root}/t1; add_header X-Var foo; }
         location /not_chunked { alias {root}/t1; chunked_transfer_encoding off; }
         location /nothere { add_trailer X-Var $host; }",
    )
}

#[test]
fn trailers_follow_the_last_chunk() {
    let f = Fixture::build();
    let s = serve(&f);
    let r = get(s.port(), "/t1", "HTTP/1.1");
    assert!(r.contains("Transfer-Encoding: chunked"), "{r}");
    assert!(!r.contains("Content-Length"), "{r}");
    let tail = format!(
        "8{CRLF}SEE-THIS{CRLF}0{CRLF}X-Var: localhost{CRLF}X-Always: localhost{CRLF}\
         X-Sent-HTTP: bytes{CRLF}X-Sent-Trailer: localhost{CRLF}{CRLF}"
    );
    assert!(r.ends_with(&tail), "{r}");
    // Headers and trailers are apart: the header's own `X-Var` comes first.
    let r = get(s.port(), "/header", "HTTP/1.1");
    let head_end = r.find("\r\n\r\n").unwrap();
    assert!(r[..head_end].contains("X-Var: foo"), "{r}");
    assert!(r[head_end..].contains("X-Var: localhost"), "{r}");
}

#[test]
fn always_trailers_on_errors_only() {
    let f = Fixture::build();
    let s = serve(&f);
    let r = get(s.port(), "/nx", "HTTP/1.1");
    assert!(r.starts_with("HTTP/1.1 404"), "{r}");
    assert!(r.contains("X-Always: localhost"), "{r}");
    assert!(!r.contains("X-Var"), "{r}");
    // The location's own list replaces the server's, and none applies to
    // its 404: no chunked body either.
    let r = get(s.port(), "/nothere", "HTTP/1.1");
    assert!(!r.contains("X-Var"), "{r}");
    assert!(r.contains("Content-Length"), "{r}");
}

#[test]
fn no_trailers_without_chunked_encoding() {
    let f = Fixture::build();
    let s = serve(&f);
    let r = get(s.port(), "/t1", "HTTP/1.0");
    assert!(r.ends_with("\r\n\r\nSEE-THIS"), "{r}");
    let r = get(s.port(), "/not_chunked", "HTTP/1.1");
    assert!(!r.contains("X-Always"), "{r}");
    assert!(r.ends_with("SEE-THIS"), "{r}");
    let req = "HEAD /t1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    let r = String::from_utf8_lossy(&raw_exchange(s.port(), req.as_bytes())).into_owned();
    assert!(!r.contains("X-Always"), "{r}");
}
