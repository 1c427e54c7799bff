//! Black-box tests of the two other body filters: `sub_filter` (strings
//! replaced as the body streams: case, `sub_filter_once`, several strings,
//! variables, strings cut between upstream reads, the head changes) and
//! the addition module (`add_before_body`, `add_after_body`,
//! `addition_types`), and of filters stacked with SSI.
//!
//! They use [`Server::tested`]: `NOWAIT_TEST_NGINX=1` runs them against
//! nginx, which must pass them all.

mod common;

use std::time::Duration;

use common::client::{get, request};
use common::{Conf, Server, TempDir, Upstream, body};

/// The server under test with `server` in its server block, serving a
/// root holding `files`; `UP` in `server` is `up`'s address.
fn start(files: &[(&str, &str)], server: &str, up: Option<&Upstream>) -> (Server, TempDir) {
    let root = TempDir::new("filters");
    for (name, text) in files {
        std::fs::write(root.path().join(name), text).unwrap();
    }
    let mut text = format!("root {{root}};\n{server}");
    if let Some(up) = up {
        text = text.replace("UP", &up.addr().to_string());
    }
    let conf = Conf::server(&text).root(root.path()).render();
    (Server::tested(&conf), root)
}

fn text(s: &Server, path: &str) -> String {
    let r = get(s.port(), path);
    assert_eq!(r.status, 200, "{path}: {}", body(&r));
    body(&r)
}

#[test]
fn sub_filter_replaces_case_insensitively_once_or_always() {
    let (s, _root) = start(
        &[],
        "sub_filter_types *;\n\
         location /once { sub_filter foo bar; return 200 $arg_b; }\n\
         location /many { sub_filter foo bar; sub_filter_once off; return 200 $arg_b; }\n\
         location /two { sub_filter aab +; sub_filter yyz -; sub_filter_once off; return 200 $arg_b; }\n\
         location /var { sub_filter X$arg_a [$arg_r]; return 200 $arg_b; }\n\
         location /first { sub_filter ab 1; sub_filter abcd 2; return 200 $arg_b; }",
        None,
    );
    assert_eq!(text(&s, "/once?b=FoOfoo"), "barfoo");
    assert_eq!(text(&s, "/many?b=foofoOfo"), "barbarfo");
    assert_eq!(text(&s, "/two?b=aabyyzaaab"), "+-a+");
    assert_eq!(text(&s, "/var?a=Foo&r=R&b=xFOOx"), "[R]x");
    // Strings are tried in the order written at each position.
    assert_eq!(text(&s, "/first?b=abcd"), "1cd");
}

#[test]
fn sub_filter_holds_only_what_may_match_across_reads() {
    // The upstream sends "xyz" and keeps the connection: unbuffered, what
    // cannot start a match goes out at once.
    let up = Upstream::start(|c| {
        if c.read_request().is_none() {
            return;
        }
        c.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\nxyz");
        c.wait_closed(Duration::from_secs(5));
    });
    let (s, _root) = start(
        &[],
        "proxy_buffering off; proxy_http_version 1.1; proxy_read_timeout 1s;\n\
         location /partial { proxy_pass http://UP; sub_filter za ZA; }\n\
         location /negative { proxy_pass http://UP; sub_filter ab AB; }",
        Some(&up),
    );
    // What arrives before the upstream's read timeout: the head, then the
    // body's pieces as they are decided.
    let arrived = |path: &str, want: &str| {
        let mut c = common::Conn::open(s.port());
        c.send(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes());
        common::wait::until(Duration::from_secs(5), || {
            c.quiet_for(Duration::from_millis(50));
            String::from_utf8_lossy(c.pending()).contains(want)
        });
        String::from_utf8_lossy(c.pending()).into_owned()
    };
    // `z` may begin `za`: it waits (until the upstream times out).
    let got = arrived("/partial", "\r\n\r\n2\r\nxy\r\n");
    assert!(got.ends_with("\r\n\r\n2\r\nxy\r\n"), "{got:?}");
    let got = arrived("/negative", "xyz");
    assert!(got.ends_with("\r\n\r\n3\r\nxyz\r\n"), "{got:?}");
}

#[test]
fn sub_filter_drops_length_and_validators() {
    let (s, _root) = start(
        &[("f.html", "one foo two")],
        "location / { sub_filter foo bar; }\n\
         location /lm/ { sub_filter foo bar; sub_filter_last_modified on; alias {root}/; }",
        None,
    );
    let r = get(s.port(), "/f.html");
    assert_eq!(body(&r), "one bar two");
    for h in ["Content-Length", "Last-Modified", "ETag", "Accept-Ranges"] {
        assert_eq!(r.header(h), None, "{h}");
    }
    let r = get(s.port(), "/lm/f.html");
    assert!(r.header("Last-Modified").is_some());
    assert!(r.header("ETag").is_some_and(|e| e.starts_with("W/\"")));
    // A range is not applied to what a filter changes.
    let r = request(s.port(), "GET /f.html HTTP/1.0\r\nRange: bytes=0-2\r\n\r\n");
    assert_eq!(body(&r), "one bar two");
}

#[test]
fn additions_wrap_a_200_of_their_types() {
    let (s, _root) = start(
        &[],
        "location /ba.html { add_before_body /before; add_after_body /after; return 200 body; }\n\
         location /notype { add_after_body /after; return 200 body; }\n\
         location /plain.txt { addition_types text/plain; add_after_body /after; return 200 body; }\n\
         location /e.html { add_after_body /after; return 202 body; }\n\
         location /self.html { add_after_body /self.html; return 200 self; }\n\
         location /before { return 200 before; }\n\
         location /after { return 200 after; }",
        None,
    );
    let r = get(s.port(), "/ba.html");
    assert_eq!(body(&r), "beforebodyafter");
    assert_eq!(r.header("Content-Length"), None);
    assert_eq!(text(&s, "/notype"), "body");
    assert_eq!(text(&s, "/plain.txt"), "bodyafter");
    let r = get(s.port(), "/e.html");
    assert_eq!((r.status, body(&r)), (202, "body".to_string()));
    // A subrequest gets no additions of its own.
    assert_eq!(text(&s, "/self.html"), "selfself");
}

#[test]
fn filters_stack_in_nginx_s_order() {
    // sub_filter sees the page before SSI does: it may write SSI commands
    // (and cannot see what SSI writes); additions stay outside both.
    let (s, _root) = start(
        &[
            ("p.html", "[X][<!--#echo var=\"arg_v\" -->]"),
            ("pre.html", "pre:X;"),
        ],
        "location / { ssi on; sub_filter X '<!--#echo var=\"arg_w\" -->'; \
         sub_filter_once off; add_before_body /pre.html; }\n\
         location = /pre.html { }",
        None,
    );
    assert_eq!(text(&s, "/p.html?v=X&w=W"), "pre:X;[W][X]");
}
