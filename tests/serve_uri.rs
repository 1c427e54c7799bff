//! Black-box tests of URI handling and routing: normalization (`..`, NUL,
//! merged slashes, query strings), `location` precedence, `alias`, `index`,
//! the directory redirect, `return`, `error_page`, and files that must
//! never be opened for reading (a FIFO).

mod common;

use std::time::Duration;

use common::client::{get, request};
use common::{Conn, Fixture, State};

#[test]
fn climbing_above_the_root_is_400() {
    let f = Fixture::build();
    let s = common::serve(&f, "");
    for path in [
        "/../etc/passwd",
        "/dir/../../etc/passwd",
        "/%2e%2e/etc/passwd",
        "/dir/%2E%2E/%2e%2e/x",
    ] {
        assert_eq!(get(s.port(), path).status, 400, "{path}");
    }
    // Climbing that stays inside is fine.
    let r = get(s.port(), "/dir/sub/../file.txt");
    assert_eq!((r.status, common::body(&r).as_str()), (200, "dir file\n"));
}

#[test]
fn nul_in_the_path_is_400() {
    let f = Fixture::build();
    let s = common::serve(&f, "");
    assert_eq!(get(s.port(), "/x%00.html").status, 400);
}

#[test]
fn repeated_slashes_are_merged() {
    let f = Fixture::build();
    let s = common::serve(
        &f,
        "location = /dir/file.txt { return 200 \"merged $uri\"; }",
    );
    let r = get(s.port(), "//dir///file.txt");
    assert_eq!(common::body(&r), "merged /dir/file.txt");
}

#[test]
fn query_string_is_ignored_for_files() {
    let f = Fixture::build();
    let s = common::serve(&f, "");
    let r = get(s.port(), "/x?a=1&b=/../..");
    assert_eq!(
        (r.status, common::body(&r).as_str()),
        (200, "the x target\n")
    );
    let r = get(s.port(), "/dir/file.txt?");
    assert_eq!((r.status, common::body(&r).as_str()), (200, "dir file\n"));
}

#[test]
fn location_precedence() {
    let f = Fixture::build();
    let s = common::serve(
        &f,
        r#"
        location = /p { return 200 "exact"; }
        location /p { return 200 "prefix"; }
        location ^~ /pre/ { return 200 "caret"; }
        location /long/ { return 200 "long"; }
        location /long/prefix/ { return 200 "longer"; }
        location ~ \.txt$ { return 200 "regex-txt"; }
        location ~ ^/r/ { return 200 "regex-r"; }
        location ~* \.CSS$ { return 200 "regex-css"; }
        location /nest/ {
            location ~ \.js$ { return 200 "nested-regex"; }
            location /nest/inner/ { return 200 "nested-prefix"; }
            return 200 "nest";
        }
        "#,
    );
    let cases = [
        ("/p", "exact"),
        ("/p/", "prefix"),
        ("/px", "prefix"),
        ("/pre/a.txt", "caret"),
        ("/long/a", "long"),
        ("/long/prefix/a", "longer"),
        // A regex beats the longest (non-^~) prefix...
        ("/long/prefix/a.txt", "regex-txt"),
        // ... and regexes are tried in order, the first match wins.
        ("/r/a.txt", "regex-txt"),
        ("/r/a", "regex-r"),
        ("/x.css", "regex-css"),
        ("/nest/a", "nest"),
        ("/nest/a.js", "nested-regex"),
        ("/nest/inner/a", "nested-prefix"),
    ];
    for (path, want) in cases {
        let r = get(s.port(), path);
        assert_eq!((r.status, common::body(&r).as_str()), (200, want), "{path}");
    }
}

#[test]
fn alias_replaces_the_location_prefix() {
    let f = Fixture::build();
    let s = common::serve(
        &f,
        "location /al/ { alias {root}/dir/; }\nlocation = /one { alias {root}/x; }",
    );
    let r = get(s.port(), "/al/file.txt");
    assert_eq!((r.status, common::body(&r).as_str()), (200, "dir file\n"));
    let r = get(s.port(), "/al/sub/file.txt");
    assert_eq!((r.status, common::body(&r).as_str()), (200, "sub file\n"));
    let r = get(s.port(), "/al/");
    assert_eq!(
        (r.status, common::body(&r).as_str()),
        (200, "<p>dir index</p>\n")
    );
    let r = get(s.port(), "/one");
    assert_eq!(
        (r.status, common::body(&r).as_str()),
        (200, "the x target\n")
    );
}

#[test]
fn index_tries_several_names_in_order() {
    let f = Fixture::build();
    let multi = f.root().join("multi");
    std::fs::create_dir(&multi).unwrap();
    std::fs::write(multi.join("second.htm"), "second\n").unwrap();
    std::fs::write(multi.join("third.txt"), "third\n").unwrap();
    common::tmp::set_mode(&multi, 0o755);
    let s = common::serve(
        &f,
        "location /multi/ { index first.html second.htm third.txt; }",
    );
    let r = get(s.port(), "/multi/");
    assert_eq!((r.status, common::body(&r).as_str()), (200, "second\n"));
    // The index is an internal redirect: its type is the index file's.
    assert!(
        r.header("Content-Type")
            .is_some_and(|t| t.starts_with("text/html")),
        "{:?}",
        r.header("Content-Type")
    );
    // A directory without any of the index files is 403 (no autoindex).
    let r = get(s.port(), "/noindex/");
    assert_eq!(r.status, 403);
}

#[test]
fn directory_without_slash_redirects() {
    let f = Fixture::build();
    let s = common::serve(&f, "");
    let r = get(s.port(), "/dir");
    assert_eq!(r.status, 301);
    assert_eq!(
        r.header("Location"),
        Some(format!("http://localhost:{}/dir/", s.port()))
    );
    let r = get(s.port(), "/dir?q=1");
    assert_eq!(r.status, 301);
    assert_eq!(
        r.header("Location"),
        Some(format!("http://localhost:{}/dir/?q=1", s.port()))
    );
}

#[test]
fn return_text_redirect_and_444() {
    let f = Fixture::build();
    let s = common::serve(
        &f,
        r#"
        location = /text { return 201 "made $uri"; }
        location = /go { return 302 http://example.org/there; }
        location = /rel { return 301 /x; }
        location = /drop { return 444; }
        "#,
    );
    let r = get(s.port(), "/text");
    assert_eq!((r.status, common::body(&r).as_str()), (201, "made /text"));
    let r = get(s.port(), "/go");
    assert_eq!(r.status, 302);
    assert_eq!(
        r.header("Location").as_deref(),
        Some("http://example.org/there")
    );
    let r = get(s.port(), "/rel");
    assert_eq!(r.status, 301);
    assert_eq!(
        r.header("Location"),
        Some(format!("http://localhost:{}/x", s.port()))
    );

    let mut c = Conn::open(s.port());
    c.send(b"GET /drop HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(c.wait_closed(Duration::from_secs(5)), State::Closed);
    assert!(
        c.pending().is_empty(),
        "444 sends nothing: {:?}",
        String::from_utf8_lossy(c.pending())
    );
}

#[test]
fn error_page_to_a_file_with_a_status_and_to_a_named_location() {
    let f = Fixture::build();
    let s = common::serve(
        &f,
        r#"
        location /ep1/ { error_page 404 /404.html; }
        location /ep2/ { error_page 404 =200 /x; }
        location /ep3/ { error_page 404 @fallback; }
        location /ep4/ { error_page 403 404 = /dir/file.txt; }
        location @fallback { return 200 "named fallback"; }
        "#,
    );
    let r = get(s.port(), "/ep1/missing");
    assert_eq!(
        (r.status, common::body(&r).as_str()),
        (404, "<p>custom not found</p>\n")
    );
    let r = get(s.port(), "/ep2/missing");
    assert_eq!(
        (r.status, common::body(&r).as_str()),
        (200, "the x target\n")
    );
    let r = get(s.port(), "/ep3/missing");
    // Without `=`, the error status stays (nginx: `r->err_status`).
    assert_eq!(
        (r.status, common::body(&r).as_str()),
        (404, "named fallback")
    );
    let r = get(s.port(), "/ep4/missing");
    assert_eq!((r.status, common::body(&r).as_str()), (200, "dir file\n"));
}

#[test]
fn a_fifo_is_never_opened_and_answers_404() {
    let f = Fixture::build();
    let s = common::serve(&f, "");
    // A server that opened the FIFO for reading would block (no writer)
    // and never answer; `request` waits a bounded time.
    let r = request(
        s.port(),
        "GET /fifo HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 404);
    // And the worker is not stuck.
    assert_eq!(get(s.port(), "/x").status, 200);
}
