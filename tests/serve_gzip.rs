//! Black-box tests of the gzip family: the gzip filter on files, error
//! pages and proxied responses, and what decides it (`gzip_types`,
//! `gzip_min_length`, `gzip_http_version`, `gzip_disable`, `gzip_proxied`,
//! `Accept-Encoding` qualities); what it changes in the head (no length,
//! no ranges, a weak `ETag`, `Vary` under `gzip_vary`); `gzip_static` and
//! `gunzip`.
//!
//! Run against nginx with `NOWAIT_TEST_NGINX=1`: every assertion here is
//! nginx's behaviour.

mod common;

use std::io::Read;

use common::client::request;
use common::fixture::big_content;
use common::{Conf, Fixture, Server};

fn serve(f: &Fixture, server: &str) -> Server {
    Server::tested(
        &Conf::server(&format!("root {{root}};\n{server}"))
            .root(f.root())
            .render(),
    )
}

/// GET `path` over HTTP/1.1 with `headers` (each ending in CRLF).
fn get(port: u16, path: &str, headers: &str) -> common::Response {
    request(
        port,
        &format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{headers}Connection: close\r\n\r\n"),
    )
}

const GZIP: &str = "Accept-Encoding: gzip\r\n";

fn gunzip(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(data)
        .read_to_end(&mut out)
        .expect("a gzip body");
    out
}

fn gzipped(r: &common::Response) -> bool {
    r.header("Content-Encoding").as_deref() == Some("gzip")
}

#[test]
fn gzip_compresses_html_for_clients_that_accept_it() {
    let f = Fixture::build();
    let s = serve(&f, "gzip on;");
    let r = get(s.port(), "/index.html", GZIP);
    assert_eq!(r.status, 200);
    assert!(gzipped(&r), "{:?}", r.headers);
    assert_eq!(r.header("Content-Length"), None);
    assert_eq!(r.header("Accept-Ranges"), None);
    assert_eq!(r.header("Vary"), None, "gzip_vary is off");
    let etag = r.header("ETag").unwrap();
    assert!(etag.starts_with("W/\""), "{etag}");
    assert_eq!(gunzip(&r.body), common::fixture::INDEX_HTML.as_bytes());
    // Without gzip in Accept-Encoding, or with a zero quality: as it is.
    for ae in [
        "",
        "Accept-Encoding: deflate\r\n",
        "Accept-Encoding: gzip;q=0\r\n",
    ] {
        let r = get(s.port(), "/index.html", ae);
        assert!(!gzipped(&r), "{ae:?}");
        assert_eq!(r.header("Accept-Ranges").as_deref(), Some("bytes"));
        assert!(r.header("Content-Length").is_some());
    }
    // `gzip_types` is `text/html` by default.
    assert!(!gzipped(&get(s.port(), "/style.css", GZIP)));
    // HEAD says what GET would send.
    let r = request(
        s.port(),
        "HEAD /index.html HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n",
    );
    assert!(gzipped(&r));
    assert!(r.body.is_empty());
    assert_eq!(r.header("Content-Length"), None);
    // A range is not cut from a compressed reply.
    let r = get(
        s.port(),
        "/index.html",
        "Accept-Encoding: gzip\r\nRange: bytes=0-3\r\n",
    );
    assert_eq!(r.status, 200);
    assert_eq!(gunzip(&r.body), common::fixture::INDEX_HTML.as_bytes());
}

#[test]
fn what_decides_compression() {
    let f = Fixture::build();
    std::fs::write(f.root().join("tiny.html"), "<p>tiny</p>").unwrap();
    let s = serve(
        &f,
        "gzip on;\n\
         location /types/ { alias {root}/; gzip_types text/css application/octet-stream; }\n\
         location /any/ { alias {root}/; gzip_types *; }\n\
         location /min/ { alias {root}/; gzip_min_length 1000; }\n\
         location /v10/ { alias {root}/; gzip_http_version 1.0; }\n\
         location /dis/ { alias {root}/; gzip_disable \"^curl\" msie6; }\n\
         location /via/ { alias {root}/; gzip_proxied any; }\n\
         location /vary/ { alias {root}/; gzip_vary on; }",
    );
    let p = s.port();
    assert!(
        !gzipped(&get(p, "/tiny.html", GZIP)),
        "shorter than 20 bytes"
    );
    assert!(gzipped(&get(p, "/types/style.css", GZIP)));
    assert!(
        gzipped(&get(p, "/types/index.html", GZIP)),
        "text/html is always in"
    );
    assert!(gzipped(&get(p, "/any/image.png", GZIP)));
    assert!(!gzipped(&get(p, "/min/index.html", GZIP)));
    // HTTP/1.0 only with `gzip_http_version 1.0`: then the end of the
    // connection ends the body.
    let r10 = |path: &str| {
        request(
            p,
            &format!("GET {path} HTTP/1.0\r\nAccept-Encoding: gzip\r\n\r\n"),
        )
    };
    assert!(!gzipped(&r10("/index.html")));
    let r = r10("/v10/index.html");
    assert!(gzipped(&r));
    assert!(r.close_delimited);
    assert_eq!(gunzip(&r.body), common::fixture::INDEX_HTML.as_bytes());
    // gzip_disable: expressions (any case) and MSIE 4–6.
    assert!(!gzipped(&get(
        p,
        "/dis/index.html",
        "User-Agent: CURL/8\r\nAccept-Encoding: gzip\r\n"
    )));
    assert!(!gzipped(&get(
        p,
        "/dis/index.html",
        "User-Agent: Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)\r\nAccept-Encoding: gzip\r\n"
    )));
    assert!(gzipped(&get(
        p,
        "/dis/index.html",
        "User-Agent: wget\r\nAccept-Encoding: gzip\r\n"
    )));
    // Through a proxy (`Via`) only as `gzip_proxied` allows.
    let via = "Via: 1.1 proxy\r\nAccept-Encoding: gzip\r\n";
    assert!(!gzipped(&get(p, "/index.html", via)));
    assert!(gzipped(&get(p, "/via/index.html", via)));
    // gzip_vary: `Vary` whether or not this client gets gzip.
    let r = get(p, "/vary/index.html", GZIP);
    assert_eq!(r.header("Vary").as_deref(), Some("Accept-Encoding"));
    let r = get(p, "/vary/index.html", "");
    assert_eq!(r.header("Vary").as_deref(), Some("Accept-Encoding"));
    assert_eq!(get(p, "/vary/style.css", GZIP).header("Vary"), None);
}

#[test]
fn error_pages_and_large_files_are_compressed() {
    let f = Fixture::build();
    for aio in ["aio off;", "aio threads;"] {
        let s = serve(
            &f,
            &format!(
                "gzip on; {aio} location /b/ {{ alias {{root}}/; gzip_types application/octet-stream; }}"
            ),
        );
        let r = get(s.port(), "/missing", GZIP);
        assert_eq!(r.status, 404);
        assert!(gzipped(&r));
        assert!(String::from_utf8_lossy(&gunzip(&r.body)).contains("404 Not Found"));
        let r = get(s.port(), "/b/big.bin", GZIP);
        assert!(gzipped(&r));
        assert_eq!(gunzip(&r.body), big_content(), "{aio}");
    }
}

#[test]
fn proxied_responses_are_compressed_and_lose_their_length() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "location /p/ { gzip on; proxy_pass http://127.0.0.1:{port}/; }",
    );
    let r = get(s.port(), "/p/index.html", GZIP);
    assert!(gzipped(&r), "{:?}", r.headers);
    assert_eq!(r.header("Accept-Ranges"), None);
    assert_eq!(r.header("Content-Length"), None);
    assert_eq!(gunzip(&r.body), common::fixture::INDEX_HTML.as_bytes());
}

#[test]
fn gzip_static_sends_the_gz_file_beside_the_original() {
    let f = Fixture::build();
    let plain = b"<p>the plain page, long enough</p>\n";
    let packed = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut e, b"<p>from the gz file</p>\n").unwrap();
        e.finish().unwrap()
    };
    std::fs::write(f.root().join("page.html"), plain).unwrap();
    std::fs::write(f.root().join("page.html.gz"), &packed).unwrap();
    let s = serve(
        &f,
        "location /on/ { alias {root}/; gzip_static on; gzip_vary on; }\n\
         location /always/ { alias {root}/; gzip_static always; }\n\
         location /gunzip/ { alias {root}/; gzip_static always; gunzip on; }",
    );
    let p = s.port();
    let r = get(p, "/on/page.html", GZIP);
    assert!(gzipped(&r));
    assert_eq!(r.body, packed, "the file as it is");
    assert_eq!(r.header("Content-Type").as_deref(), Some("text/html"));
    assert_eq!(r.header("Content-Length"), Some(packed.len().to_string()));
    assert_eq!(r.header("Vary").as_deref(), Some("Accept-Encoding"));
    assert_eq!(r.header("Accept-Ranges"), None);
    // Conditionals are the .gz file's; a 304 drops the encoding.
    let etag = r.header("ETag").unwrap();
    let r = get(
        p,
        "/on/page.html",
        &format!("Accept-Encoding: gzip\r\nIf-None-Match: {etag}\r\n"),
    );
    assert_eq!(r.status, 304);
    assert_eq!(r.header("Content-Encoding"), None);
    assert_eq!(r.header("Vary").as_deref(), Some("Accept-Encoding"));
    let r = get(p, "/on/page.html", "");
    assert!(!gzipped(&r));
    assert_eq!(r.body, plain);
    assert_eq!(r.header("Vary").as_deref(), Some("Accept-Encoding"));
    // No .gz beside it: the file itself, without Vary.
    let r = get(p, "/on/index.html", GZIP);
    assert!(!gzipped(&r));
    assert_eq!(r.header("Vary"), None);
    // always: the .gz to every client; with gunzip, decompressed for
    // those that do not accept gzip.
    assert_eq!(get(p, "/always/page.html", "").body, packed);
    let r = get(p, "/gunzip/page.html", "");
    assert!(!gzipped(&r));
    assert_eq!(r.body, b"<p>from the gz file</p>\n");
    assert_eq!(r.header("Content-Length"), None);
    let r = get(p, "/gunzip/page.html", GZIP);
    assert_eq!(r.body, packed);
}

/// A proxied stream that pauses is compressed as it comes: what arrived is
/// flushed to the client before the upstream sends the rest (nginx does it
/// for unbuffered proxying; nowait for any stream that pauses).
#[test]
fn a_pausing_proxied_stream_reaches_the_client_compressed() {
    use std::io::Write;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    let (go_tx, go_rx) = mpsc::channel::<()>();
    let go_rx = std::sync::Mutex::new(go_rx);
    let up = common::Upstream::start(move |c| {
        if c.read_request().is_none() {
            return;
        }
        c.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n\
              b\r\nfirst part.\r\n",
        );
        let _ = go_rx.lock().unwrap().recv_timeout(Duration::from_secs(10));
        c.write(b"c\r\n second part\r\n0\r\n\r\n");
    });
    let s = common::proxy::start(
        &up,
        "",
        "location / { gzip on; gzip_min_length 0; proxy_buffering off; proxy_pass http://UP; }",
    );
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", s.port())).unwrap();
    conn.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    conn.write_all(
        b"GET / HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    // Read until the first part decompresses from what came, before the
    // upstream is let go on.
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let plain = loop {
        let mut buf = [0u8; 4096];
        if let Ok(n) = conn.read(&mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        let plain = partial_gunzip(&dechunk(&got));
        if plain.starts_with(b"first part.") || Instant::now() > deadline {
            break plain;
        }
    };
    assert_eq!(plain, b"first part.", "{:?}", String::from_utf8_lossy(&got));
    go_tx.send(()).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.read_to_end(&mut got).unwrap();
    assert_eq!(gunzip(&dechunk(&got)), b"first part. second part");
}

/// The payload of a chunked body as far as it came (the head skipped).
fn dechunk(raw: &[u8]) -> Vec<u8> {
    let Some(start) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Vec::new();
    };
    let mut rest = &raw[start + 4..];
    let mut out = Vec::new();
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let Ok(size) = usize::from_str_radix(std::str::from_utf8(&rest[..eol]).unwrap_or("x"), 16)
        else {
            break;
        };
        let data = &rest[eol + 2..];
        if size == 0 || data.len() < size {
            out.extend_from_slice(&data[..size.min(data.len())]);
            break;
        }
        out.extend_from_slice(&data[..size]);
        rest = data.get(size + 2..).unwrap_or(&[]);
    }
    out
}

/// What a gzip stream cut anywhere decompresses to so far.
fn partial_gunzip(data: &[u8]) -> Vec<u8> {
    if data.len() <= 10 {
        return Vec::new();
    }
    let mut d = flate2::Decompress::new(false);
    let mut out = Vec::with_capacity(4096);
    let _ = d.decompress_vec(&data[10..], &mut out, flate2::FlushDecompress::Sync);
    out
}
