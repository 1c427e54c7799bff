//! Black-box tests of subrequests, seen through SSI's `include`: what a
//! subrequest shares with its parent (variables, `$request_id`, the request
//! line) and what is its own (`$uri`, `$args`), its output in order while
//! several run at once, streamed from an upstream or kept in memory
//! (`set=`, `subrequest_output_buffer_size`), the nesting limit, how its
//! failures reach the client and the error log, and how includes of one
//! cache key wait on `proxy_cache_lock` (one upstream request for all).
//!
//! They use [`Server::tested`]: `NOWAIT_TEST_NGINX=1` runs them against
//! nginx, which must pass them all.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::client::{get, request};
use common::{Conf, Conn, Server, State, TempDir, Upstream, body, wait};

/// How long a test waits for an effect that must come (a bound, never a
/// speed requirement).
const WAIT: Duration = Duration::from_secs(5);

/// A document root with `files`, served with `location / { ssi on; }`
/// and `extra` in the server block; `UP` in `extra` is `up`'s address.
struct Site {
    server: Server,
    _root: TempDir,
}

impl Site {
    fn start(files: &[(&str, &str)], extra: &str, up: Option<&Upstream>) -> Site {
        let root = TempDir::new("subrequest");
        for (name, text) in files {
            std::fs::write(root.path().join(name), text).unwrap();
        }
        let mut server = format!("root {{root}};\nlocation / {{ ssi on; }}\n{extra}");
        if let Some(up) = up {
            server = server.replace("UP", &up.addr().to_string());
        }
        let conf = Conf::server(&server).root(root.path()).render();
        Site {
            server: Server::tested(&conf),
            _root: root,
        }
    }

    fn body(&self, path: &str) -> String {
        let r = get(self.server.port(), path);
        assert_eq!(r.status, 200, "{path}: {}", body(&r));
        body(&r)
    }

    fn logged(&self, part: &str) -> Option<String> {
        let mut found = None;
        wait::until(WAIT, || {
            found = self
                .server
                .stderr()
                .lines()
                .find(|l| l.contains(part))
                .map(str::to_string);
            found.is_some()
        });
        found
    }
}

#[test]
fn variables_set_in_a_subrequest_are_the_parents() {
    let s = Site::start(
        &[(
            "p.html",
            "<!--#include virtual=\"/setx\" wait=\"yes\" -->[<!--#echo var=\"x\" -->]",
        )],
        "location /setx { set $x \"from-sub\"; return 200 \"sub\"; }",
        None,
    );
    assert_eq!(s.body("/p.html"), "sub[from-sub]");
}

#[test]
fn a_subrequest_has_its_own_uri_and_the_main_request_line() {
    let s = Site::start(
        &[("m.html", "<!--#include virtual=\"/vars?s=2\" -->")],
        "location /vars { return 200 \"$request_uri|$uri|$args|$request_method|$request\"; }",
        None,
    );
    let r = request(
        s.server.port(),
        "GET /m.html?m=1 HTTP/1.0\r\nHost: localhost\r\n\r\n",
    );
    assert_eq!(
        body(&r),
        "/m.html?m=1|/vars|s=2|GET|GET /m.html?m=1 HTTP/1.0"
    );
}

#[test]
fn request_id_is_the_main_requests() {
    let s = Site::start(
        &[("id.html", "<!--#include virtual=\"/id\" -->")],
        "add_header X-Id $request_id;\nlocation /id { return 200 $request_id; }",
        None,
    );
    let r = get(s.server.port(), "/id.html");
    let id = r.header("X-Id").expect("an X-Id header");
    assert_eq!(id.len(), 32);
    assert_eq!(body(&r), id);
}

#[test]
fn nesting_stops_after_fifty_one_levels() {
    let s = Site::start(
        &[("loop.html", "x<!--#include virtual=\"/loop.html\" -->y")],
        "",
        None,
    );
    let b = s.body("/loop.html");
    let err = "[an error occurred while processing the directive]";
    // The page and 51 levels of itself: the 51st may start no more.
    assert_eq!(b, format!("{}{err}{}", "x".repeat(52), "y".repeat(52)));
    assert!(
        s.logged("subrequests cycle while processing \"/loop.html\"")
            .is_some()
    );
}

#[test]
fn includes_run_at_once_and_their_output_keeps_its_order() {
    // Each upstream request waits (boundedly) until both have arrived: one
    // include after the other would wait out the bound.
    let arrived = Arc::new(AtomicUsize::new(0));
    let seen = arrived.clone();
    let up = Upstream::start(move |c| {
        let Some(req) = c.read_request() else { return };
        seen.fetch_add(1, Ordering::SeqCst);
        let deadline = Instant::now() + WAIT;
        while seen.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let together = seen.load(Ordering::SeqCst) >= 2;
        if req.target() == "/slow" {
            // The first include answers last.
            std::thread::sleep(Duration::from_millis(200));
        }
        let text = format!(
            "{}:{}",
            req.target(),
            if together { "together" } else { "alone" }
        );
        c.write(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            )
            .as_bytes(),
        );
    });
    let s = Site::start(
        &[(
            "two.html",
            "[<!--#include virtual=\"/up/slow\" -->][<!--#include virtual=\"/up/fast\" -->]",
        )],
        "location /up/ { proxy_pass http://UP/; }",
        Some(&up),
    );
    assert_eq!(s.body("/two.html"), "[/slow:together][/fast:together]");
}

#[test]
fn a_proxied_include_streams_a_large_body() {
    let big: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let payload = big.clone();
    let up = Upstream::start(move |c| {
        if c.read_request().is_none() {
            return;
        }
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            payload.len()
        );
        c.write(head.as_bytes());
        c.write(&payload);
    });
    let s = Site::start(
        &[("big.html", "<<!--#include virtual=\"/up/big\" -->>")],
        "location /up/ { proxy_pass http://UP/; }",
        Some(&up),
    );
    let b = s.body("/big.html");
    assert_eq!(b.len(), big.len() + 2);
    assert!(b.starts_with('<') && b.ends_with('>'));
    assert_eq!(&b.as_bytes()[1..b.len() - 1], &big[..]);
}

#[test]
fn output_in_memory_fits_its_buffer_or_ends_the_response() {
    let s = Site::start(
        &[
            (
                "m.html",
                "<!--#include virtual=\"/$arg_f\" set=\"x\" -->set: <!--#echo var=\"x\" -->",
            ),
            ("small", "small body"),
            ("large", &"x".repeat(100)),
            ("empty", ""),
        ],
        "location = /large { subrequest_output_buffer_size 42; }\n\
         location = /small { subrequest_output_buffer_size 42; }\n\
         location = /missing { }",
        None,
    );
    assert_eq!(s.body("/m.html?f=small"), "set: small body");
    assert_eq!(s.body("/m.html?f=empty"), "set: ");
    // An error the server made sets nothing (the variable exists, empty).
    assert_eq!(s.body("/m.html?f=missing"), "set: ");
    // Too big: nothing of the response is sent, the connection closes.
    let mut c = Conn::open(s.server.port());
    c.send(b"GET /m.html?f=large HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(c.wait_closed(WAIT), State::Closed);
    assert!(
        c.pending().is_empty(),
        "{:?}",
        String::from_utf8_lossy(c.pending())
    );
    assert!(s.logged("too big subrequest response: 100").is_some());
}

#[test]
fn a_failed_include_gives_its_error_page_and_logs_the_subrequest() {
    let s = Site::start(
        &[("f.html", "a<!--#include virtual=\"/nope.html\" -->b")],
        "",
        None,
    );
    let b = s.body("/f.html");
    assert!(
        b.starts_with("a<html>") && b.contains("404 Not Found"),
        "{b}"
    );
    assert!(b.ends_with("</html>\r\nb"), "{b:?}");
    let line = s
        .logged("nope.html\" failed (2: No such file or directory)")
        .expect("the open() line");
    assert!(
        line.contains(", request: \"GET /f.html HTTP/1.1\", subrequest: \"/nope.html\", host: "),
        "{line}"
    );
}

#[test]
fn an_upgrade_in_a_subrequest_ends_the_response() {
    let up = Upstream::start(|c| {
        if c.read_request().is_none() {
            return;
        }
        c.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: foo\r\nConnection: Upgrade\r\n\r\n");
        c.wait_closed(WAIT);
    });
    let s = Site::start(
        &[("u.html", "<!--#include virtual=\"/up/\" --> after")],
        "location /up/ { proxy_pass http://UP/; proxy_http_version 1.1;\n \
         proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection upgrade; }",
        Some(&up),
    );
    let mut c = Conn::open(s.server.port());
    c.send(
        b"GET /u.html HTTP/1.1\r\nHost: localhost\r\nUpgrade: foo\r\nConnection: upgrade\r\n\r\n",
    );
    assert_eq!(c.wait_closed(WAIT), State::Closed);
    assert!(!String::from_utf8_lossy(c.pending()).contains("after"));
    assert!(s.logged("connection upgrade in subrequest").is_some());
}

/// How long the first client's `/locked` is held at most, should the test
/// fail before releasing it (a bound, never waited for when it passes).
const HELD: Duration = Duration::from_secs(10);

#[test]
fn a_locked_cache_entry_wakes_an_include_that_is_not_being_sent() {
    // nginx's proxy_cache_lock_ssi.t without limit_req: `/locked` is being
    // fetched by another client (the upstream holds it until the test lets
    // it go), so the page's second include waits on the cache lock while
    // the first is the one being sent; the lock's timeout must still wake
    // it. Each `/locked` answer is numbered: the include must not wait for
    // the first client's (which the cache would then give it), but go to
    // the upstream itself once the lock times out. A request that went on
    // after the lock's timeout does not store its answer (nginx's
    // proxy_cache_lock_timeout), so while the first client's fill holds the
    // lock, a later request goes to the upstream too (#3): without the
    // lock, the include's #2 would be in the cache.
    let lockeds = Arc::new(AtomicUsize::new(0));
    let release = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let up = {
        let (lockeds, release) = (lockeds.clone(), release.clone());
        Upstream::start(move |c| {
            let Some(req) = c.read_request() else { return };
            let t = req.target();
            let mut text = format!("{t};");
            if t == "/locked" {
                let n = lockeds.fetch_add(1, Ordering::SeqCst) + 1;
                text = format!("{t}#{n};");
                if req.header("X-First").is_some() {
                    wait::until(HELD, || release.load(Ordering::SeqCst));
                }
            }
            if t == "/active" {
                std::thread::sleep(Duration::from_millis(300));
            }
            c.write(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                    text.len()
                )
                .as_bytes(),
            );
        })
    };
    let cache = TempDir::new("lockcache");
    let conf = Conf::http(&format!(
        "proxy_cache_path {} levels=1:2 keys_zone=NAME:1m;\n\
         server {{\n listen 127.0.0.1:{{port}};\n server_name localhost;\n\
         location / {{ proxy_pass http://{}; proxy_cache NAME; proxy_cache_valid 1m;\n\
         proxy_cache_lock on; proxy_cache_lock_timeout 100ms; }}\n\
         location = /ssi.html {{ ssi on; root {}; }}\n}}\n",
        cache.path().display(),
        up.addr(),
        cache.path().display(),
    ))
    .render();
    std::fs::write(
        cache.path().join("ssi.html"),
        "<!--#include virtual=\"/active\" --><!--#include virtual=\"/locked\" -->end",
    )
    .unwrap();
    let server = Server::tested(&conf);
    let mut first = Conn::open(server.port());
    first.send(
        b"GET /locked HTTP/1.1\r\nHost: localhost\r\nX-First: 1\r\nConnection: close\r\n\r\n",
    );
    assert!(
        wait::until(WAIT, || lockeds.load(Ordering::SeqCst) == 1),
        "the first client's /locked reaches the upstream"
    );
    let r = get(server.port(), "/ssi.html");
    assert_eq!(body(&r), "/active;/locked#2;end");
    // The first client's fill still holds the lock, and the include's
    // answer was not stored.
    assert_eq!(
        body(&get(server.port(), "/locked")),
        "/locked#3;",
        "an answer fetched after the lock's timeout is not cached"
    );
    release.store(true, Ordering::SeqCst);
    let r = first.response().expect("the first client's answer");
    assert_eq!(body(&r), "/locked#1;");
    // The fill that held the lock is the one stored.
    assert_eq!(body(&get(server.port(), "/locked")), "/locked#1;");
    assert_eq!(lockeds.load(Ordering::SeqCst), 3, "upstream requests");
}

#[test]
fn includes_of_one_key_wait_on_the_cache_lock_for_one_upstream_request() {
    // Three includes of the same key start at once: the first fills the
    // cache, the other two wait on its lock and are given its answer, so
    // the upstream sees one request (three without proxy_cache_lock).
    let sames = Arc::new(AtomicUsize::new(0));
    let up = {
        let sames = sames.clone();
        Upstream::start(move |c| {
            let Some(req) = c.read_request() else { return };
            let n = sames.fetch_add(1, Ordering::SeqCst) + 1;
            // Long enough for the other includes to find the entry locked.
            std::thread::sleep(Duration::from_millis(300));
            let text = format!("{}#{n};", req.target());
            c.write(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                    text.len()
                )
                .as_bytes(),
            );
        })
    };
    let cache = TempDir::new("lockcache");
    let conf = Conf::http(&format!(
        "proxy_cache_path {} levels=1:2 keys_zone=NAME:1m;\n\
         server {{\n listen 127.0.0.1:{{port}};\n server_name localhost;\n\
         location / {{ proxy_pass http://{}; proxy_cache NAME; proxy_cache_valid 1m;\n\
         proxy_cache_lock on; proxy_cache_lock_timeout {}s; }}\n\
         location = /three.html {{ ssi on; root {}; }}\n}}\n",
        cache.path().display(),
        up.addr(),
        WAIT.as_secs(),
        cache.path().display(),
    ))
    .render();
    std::fs::write(
        cache.path().join("three.html"),
        "<!--#include virtual=\"/same\" --><!--#include virtual=\"/same\" -->\
         <!--#include virtual=\"/same\" -->end",
    )
    .unwrap();
    let server = Server::tested(&conf);
    let r = get(server.port(), "/three.html");
    assert_eq!(body(&r), "/same#1;/same#1;/same#1;end");
    assert_eq!(sames.load(Ordering::SeqCst), 1, "upstream requests");
}
