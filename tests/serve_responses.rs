//! Black-box tests of response heads and bodies: `Content-Type` from
//! `types`/`default_type`, `server_tokens`, `add_header` (and `always`),
//! conditional requests, byte ranges (single, multipart, unsatisfiable,
//! `If-Range`) and `HEAD`.

mod common;

use std::time::Duration;

use common::client::{get, request};
use common::fixture::{BIG_LEN, big_content};
use common::{Conf, Conn, Fixture, Server};

fn get_with(port: u16, path: &str, header: &str) -> common::Response {
    request(
        port,
        &format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{header}\r\nConnection: close\r\n\r\n"),
    )
}

#[test]
fn content_type_from_types_and_default_type() {
    let f = Fixture::build();
    std::fs::write(f.root().join("dir/page.foo"), "foo\n").unwrap();
    let s = common::serve(
        &f,
        "location /dir/ { types { text/x-foo foo; } default_type text/x-default; }",
    );
    let ct = |path: &str| get(s.port(), path).header("Content-Type");
    assert_eq!(ct("/style.css").as_deref(), Some("text/css"));
    assert_eq!(ct("/image.png").as_deref(), Some("image/png"));
    // Extensions match case-insensitively.
    assert_eq!(ct("/photo.JPG").as_deref(), Some("image/jpeg"));
    assert_eq!(ct("/noext").as_deref(), Some("application/octet-stream"));
    // The location's own `types` replaces the inherited ones.
    assert_eq!(ct("/dir/page.foo").as_deref(), Some("text/x-foo"));
    assert_eq!(ct("/dir/file.txt").as_deref(), Some("text/x-default"));
}

#[test]
fn server_tokens_off_hides_the_version() {
    let f = Fixture::build();
    let on = Server::nowait(&Conf::server("root {root};").root(f.root()).render());
    let off = Server::nowait(
        &Conf::server("root {root};\nserver_tokens off;")
            .root(f.root())
            .render(),
    );
    let version = concat!("nowait/", env!("CARGO_PKG_VERSION"));
    let r = get(on.port(), "/missing");
    assert_eq!(r.header("Server").as_deref(), Some(version));
    assert!(
        common::body(&r).contains(&format!("<center>{version}</center>")),
        "{}",
        common::body(&r)
    );

    let r = get(off.port(), "/missing");
    assert_eq!(r.status, 404);
    assert_eq!(r.header("Server").as_deref(), Some("nowait"));
    assert!(
        common::body(&r).contains("<center>nowait</center>"),
        "{}",
        common::body(&r)
    );
    assert!(!common::body(&r).contains(version));
    let r = get(off.port(), "/x");
    assert_eq!(r.header("Server").as_deref(), Some("nowait"));
}

#[test]
fn add_header_skips_errors_unless_always() {
    let f = Fixture::build();
    let s = common::serve(
        &f,
        "add_header X-Plain plain;\nadd_header X-Always \"yes $uri\" always;",
    );
    let r = get(s.port(), "/x");
    assert_eq!(r.header("X-Plain").as_deref(), Some("plain"));
    assert_eq!(r.header("X-Always").as_deref(), Some("yes /x"));
    let r = get(s.port(), "/missing");
    assert_eq!(r.status, 404);
    assert_eq!(r.header("X-Plain"), None);
    assert_eq!(r.header("X-Always").as_deref(), Some("yes /missing"));
    // Redirects get them (301 is in nginx's list).
    let r = get(s.port(), "/dir");
    assert_eq!(r.status, 301);
    assert_eq!(r.header("X-Plain").as_deref(), Some("plain"));
}

#[test]
fn conditional_requests() {
    let f = Fixture::build();
    let s = common::serve(&f, "");
    let full = get(s.port(), "/x");
    let etag = full.header("ETag").expect("an ETag");
    let lm = full.header("Last-Modified").expect("a Last-Modified");

    let r = get_with(s.port(), "/x", &format!("If-None-Match: {etag}"));
    assert_eq!(r.status, 304);
    assert!(r.body.is_empty());
    assert_eq!(r.header("ETag").as_deref(), Some(etag.as_str()));
    let r = get_with(s.port(), "/x", "If-None-Match: \"other\"");
    assert_eq!(r.status, 200);
    let r = get_with(s.port(), "/x", &format!("If-Modified-Since: {lm}"));
    assert_eq!(r.status, 304);
    let r = get_with(
        s.port(),
        "/x",
        "If-Modified-Since: Mon, 01 Jan 2001 00:00:00 GMT",
    );
    assert_eq!(r.status, 200);

    let r = get_with(s.port(), "/x", "If-Match: \"other\"");
    assert_eq!(r.status, 412);
    let r = get_with(s.port(), "/x", &format!("If-Match: {etag}"));
    assert_eq!(r.status, 200);
    let r = get_with(
        s.port(),
        "/x",
        "If-Unmodified-Since: Mon, 01 Jan 2001 00:00:00 GMT",
    );
    assert_eq!(r.status, 412);
    let r = get_with(s.port(), "/x", &format!("If-Unmodified-Since: {lm}"));
    assert_eq!(r.status, 200);
}

#[test]
fn single_range() {
    let f = Fixture::build();
    let s = common::serve(&f, "");
    let big = big_content();
    let r = get_with(s.port(), "/big.bin", "Range: bytes=1000-1999");
    assert_eq!(r.status, 206);
    assert_eq!(
        r.header("Content-Range"),
        Some(format!("bytes 1000-1999/{BIG_LEN}"))
    );
    assert_eq!(r.header("Content-Length").as_deref(), Some("1000"));
    assert!(
        r.body == big[1000..2000],
        "range body differs from the file"
    );

    let r = get_with(s.port(), "/big.bin", "Range: bytes=-10");
    assert_eq!(r.status, 206);
    assert!(r.body == big[BIG_LEN - 10..]);
    let r = get_with(
        s.port(),
        "/big.bin",
        &format!("Range: bytes={}-", BIG_LEN - 3),
    );
    assert!(r.body == big[BIG_LEN - 3..]);
}

#[test]
fn multipart_ranges_match_the_file() {
    let f = Fixture::build();
    let s = common::serve(&f, "");
    let big = big_content();
    let r = get_with(s.port(), "/big.bin", "Range: bytes=0-9,5000-5999,-16");
    assert_eq!(r.status, 206);
    let ct = r.header("Content-Type").expect("a Content-Type");
    let boundary = ct
        .strip_prefix("multipart/byteranges; boundary=")
        .unwrap_or_else(|| panic!("not multipart: {ct}"));
    let parts = split_multipart(&r.body, boundary);
    let want = [(0, 9), (5000, 5999), (BIG_LEN - 16, BIG_LEN - 1)];
    assert_eq!(parts.len(), want.len(), "parts");
    for ((headers, data), (first, last)) in parts.iter().zip(want) {
        assert!(
            headers.contains(&format!("Content-Range: bytes {first}-{last}/{BIG_LEN}")),
            "{headers}"
        );
        assert!(
            headers.contains("Content-Type: application/octet-stream"),
            "{headers}"
        );
        assert!(*data == big[first..=last], "part {first}-{last} differs");
    }
    assert_eq!(
        r.header("Content-Length"),
        Some(r.body.len().to_string()),
        "Content-Length counts the whole multipart body"
    );
}

/// Splits a `multipart/byteranges` body (RFC 9110 §14.6) into each part's
/// header text and data; panics on malformed framing.
fn split_multipart(body: &[u8], boundary: &str) -> Vec<(String, Vec<u8>)> {
    let delim = format!("\r\n--{boundary}");
    let mut text = Vec::with_capacity(body.len() + 2);
    text.extend_from_slice(b"\r\n");
    text.extend_from_slice(body);
    let mut starts = Vec::new();
    let mut i = 0;
    while let Some(p) = find(&text[i..], delim.as_bytes()) {
        starts.push(i + p);
        i += p + delim.len();
    }
    assert!(starts.len() >= 2, "no boundaries in the body");
    let last = *starts.last().unwrap();
    assert!(
        text[last + delim.len()..].starts_with(b"--\r\n"),
        "the closing boundary is missing"
    );
    starts
        .windows(2)
        .map(|w| {
            let part = &text[w[0] + delim.len()..w[1]];
            let part = part.strip_prefix(b"\r\n").expect("CRLF after the boundary");
            let split = find(part, b"\r\n\r\n").expect("a blank line after part headers");
            (
                String::from_utf8_lossy(&part[..split]).into_owned(),
                part[split + 4..].to_vec(),
            )
        })
        .collect()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn unsatisfiable_range_is_416() {
    let f = Fixture::build();
    let s = common::serve(&f, "");
    let r = get_with(s.port(), "/big.bin", &format!("Range: bytes={BIG_LEN}-"));
    assert_eq!(r.status, 416);
    assert_eq!(
        r.header("Content-Range"),
        Some(format!("bytes */{BIG_LEN}"))
    );
}

#[test]
fn if_range_gives_the_range_only_when_it_matches() {
    let f = Fixture::build();
    let s = common::serve(&f, "");
    let etag = get(s.port(), "/x").header("ETag").unwrap();
    let r = request(
        s.port(),
        &format!(
            "GET /x HTTP/1.1\r\nHost: localhost\r\nRange: bytes=4-4\r\nIf-Range: {etag}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!((r.status, common::body(&r).as_str()), (206, "x"));
    let r = request(
        s.port(),
        "GET /x HTTP/1.1\r\nHost: localhost\r\nRange: bytes=4-4\r\nIf-Range: \"stale\"\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(
        (r.status, common::body(&r).as_str()),
        (200, "the x target\n")
    );
}

#[test]
fn head_has_headers_but_no_body() {
    let f = Fixture::build();
    let s = common::serve(&f, "");
    let mut c = Conn::open(s.port());
    c.send(b"HEAD /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let r = c.response_to("HEAD").expect("a response");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Length"), Some(BIG_LEN.to_string()));
    // No body bytes follow: the next response starts right after the head.
    assert!(
        c.quiet_for(Duration::from_millis(300)),
        "bytes after a HEAD response"
    );
    c.send(b"GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let r = c.response().expect("a response");
    assert_eq!(common::body(&r), "the x target\n");
}
