//! Black-box tests of the charset module: `; charset=` in `Content-Type`
//! (`charset`, `charset_types`, variables, `override_charset`, none on a
//! redirect), and bodies recoded with `charset_map` tables: 8-bit to 8-bit
//! (the length and ranges kept), 8-bit to UTF-8 and back (the length
//! unknown; characters without a byte become entities).
//!
//! Run against nginx with `NOWAIT_TEST_NGINX=1`: every assertion here is
//! nginx's behaviour.

mod common;

use common::client::{get, request};
use common::{Conf, Fixture, Server};

/// KOI8-R's "а" (U+0430) and "б" (U+0431), enough to recode a word.
const KOI_MAP: &str = "charset_map koi8-r utf-8 { C1 D0B0; C2 D0B1; }";

fn serve(f: &Fixture, http: &str, server: &str) -> Server {
    Server::tested(
        &Conf::http(&format!(
            "{http}\nserver {{\n listen 127.0.0.1:{{port}};\n server_name localhost;\n root {{root}};\n{server}\n}}\n"
        ))
        .root(f.root())
        .render(),
    )
}

fn ct(r: &common::Response) -> String {
    r.header("Content-Type").unwrap_or_default()
}

#[test]
fn charset_is_added_to_the_types_it_applies_to() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "",
        "charset utf-8;\n\
         location /css/ { alias {root}/; charset_types text/css; }\n\
         location /all/ { alias {root}/; charset_types *; }\n\
         location /var/ { alias {root}/; charset $arg_c; }\n\
         location /off/ { alias {root}/; charset off; }",
    );
    let p = s.port();
    assert_eq!(ct(&get(p, "/index.html")), "text/html; charset=utf-8");
    assert_eq!(ct(&get(p, "/style.css")), "text/css");
    assert_eq!(ct(&get(p, "/image.png")), "image/png");
    assert_eq!(ct(&get(p, "/css/style.css")), "text/css; charset=utf-8");
    // A written list always holds text/html; `*` holds everything.
    assert_eq!(ct(&get(p, "/css/index.html")), "text/html; charset=utf-8");
    assert_eq!(ct(&get(p, "/all/image.png")), "image/png; charset=utf-8");
    assert_eq!(
        ct(&get(p, "/var/index.html?c=koi8-r")),
        "text/html; charset=koi8-r"
    );
    assert_eq!(ct(&get(p, "/off/index.html")), "text/html");
    // A variable without a value fails the request: nginx sends nothing
    // and closes the connection.
    let mut c = common::Conn::open(p);
    c.send(b"GET /var/index.html HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(
        c.wait_closed(std::time::Duration::from_secs(5)),
        common::State::Closed
    );
    assert!(c.pending().is_empty());
    // Error pages get it too; redirects do not.
    let r = get(p, "/missing");
    assert_eq!(r.status, 404);
    assert_eq!(ct(&r), "text/html; charset=utf-8");
    let r = get(p, "/dir");
    assert_eq!(r.status, 301);
    assert_eq!(ct(&r), "text/html");
}

#[test]
fn eight_bit_recoding_keeps_the_length_and_the_ranges() {
    let f = Fixture::build();
    std::fs::write(f.root().join("x.html"), "X".repeat(99)).unwrap();
    let s = serve(
        &f,
        "charset_map B A { 58 59; }",
        "location / { charset A; source_charset B; }",
    );
    let r = get(s.port(), "/x.html");
    assert_eq!(ct(&r), "text/html; charset=A");
    assert_eq!(r.header("Content-Length").as_deref(), Some("99"));
    assert_eq!(common::body(&r), "Y".repeat(99));
    let r = request(
        s.port(),
        "GET /x.html HTTP/1.1\r\nHost: localhost\r\nRange: bytes=0-1,5-6\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 206);
    let body = common::body(&r);
    assert!(
        body.contains("Content-Type: text/html; charset=A\r\n"),
        "{body}"
    );
    assert!(body.contains("\r\n\r\nYY\r\n"), "{body}");
    assert!(!body.contains('X'), "{body}");
}

#[test]
fn recoding_to_and_from_utf8() {
    let f = Fixture::build();
    std::fs::write(f.root().join("koi.html"), b"\xc1\xc2 \xc3!").unwrap();
    std::fs::write(f.root().join("utf.html"), "аб ф 😀".as_bytes()).unwrap();
    let s = serve(
        &f,
        KOI_MAP,
        "location = /koi.html { charset utf-8; source_charset koi8-r; }\n\
         location = /utf.html { charset koi8-r; source_charset utf-8; }",
    );
    let r = get(s.port(), "/koi.html");
    assert_eq!(ct(&r), "text/html; charset=utf-8");
    // The length changes: none is announced.
    assert_eq!(r.header("Content-Length"), None);
    assert_eq!(r.header("Accept-Ranges"), None);
    // A byte the map lacks becomes `?`.
    assert_eq!(common::body(&r), "аб ?!");
    let r = get(s.port(), "/utf.html");
    assert_eq!(ct(&r), "text/html; charset=koi8-r");
    assert_eq!(r.body, b"\xc1\xc2 &#1092; &#128512;");
}

#[test]
fn a_proxied_type_keeps_its_own_charset_unless_overridden() {
    let f = Fixture::build();
    std::fs::write(f.root().join("x.html"), "XX").unwrap();
    let s = serve(
        &f,
        "charset_map B A { 58 59; }",
        "location /up/ { alias {root}/; charset B; }\n\
         location /keep/ { charset utf-8; proxy_pass http://127.0.0.1:{port}/up/; }\n\
         location /over/ { charset A; override_charset on; proxy_pass http://127.0.0.1:{port}/up/; }",
    );
    let r = get(s.port(), "/keep/x.html");
    assert_eq!(ct(&r), "text/html; charset=B");
    assert_eq!(common::body(&r), "XX");
    let r = get(s.port(), "/over/x.html");
    assert_eq!(ct(&r), "text/html; charset=A");
    assert_eq!(common::body(&r), "YY");
}
