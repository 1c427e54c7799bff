//! One test per bug the serving tests found, named after the bug, so that
//! it cannot come back unnoticed. Each says what was wrong and where.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::client::get;
use common::server::{Kind, NGINX_BIN};
use common::wait::read_text;
use common::{Conf, Conn, Fixture, Server, TempDir, Upstream};

/// `error_page 404 @named` with `return 200 "text"` in the named location
/// answered 200; nginx keeps the error's status for a page served without
/// `=` (`r->err_status` overrides it in `ngx_http_send_header`). Fixed in
/// `src/server/handler.rs` (`error_page`).
#[test]
fn error_page_to_named_location_with_return_text_keeps_the_error_status() {
    let f = Fixture::build();
    let conf = Conf::server(
        "root {root};\n\
         error_page 404 @fallback;\n\
         location @fallback { return 200 \"fallback\"; }\n\
         location /eq/ { error_page 404 = @fallback; }",
    )
    .root(f.root())
    .render();
    let s = Server::tested(&conf);
    let r = get(s.port(), "/missing");
    assert_eq!((r.status, common::body(&r).as_str()), (404, "fallback"));
    // With `=`, the target's status.
    let r = get(s.port(), "/eq/missing");
    assert_eq!((r.status, common::body(&r).as_str()), (200, "fallback"));
}

/// A reload that turned `reuseport` on (or off) for an address already
/// listening failed with `bind() … (98: Address already in use)` and kept
/// the old configuration: `Listeners::update` dropped the old sockets when
/// the flag changed and bound fresh ones, which the running generation's
/// sockets still blocked. Fixed in `src/server/engine/listen.rs`: the old sockets
/// are kept, gaining SO_REUSEPORT when needed (nginx's `add_reuseport`).
#[test]
fn reload_that_toggles_reuseport_on_a_listening_address() {
    let conf = |listen: &str, text: &str| {
        Conf::http(&format!(
            "server {{ listen 127.0.0.1:{{port}}{listen}; return 200 \"{text}\"; }}"
        ))
        .main("worker_processes 2;")
        .render()
    };
    let s = Server::nowait(&conf("", "shared"));
    for (listen, text, sockets) in [(" reuseport", "own", 2), ("", "shared again", 1)] {
        s.write_conf(&conf(listen, text));
        let (status, stderr) = s.control("reload");
        assert!(status.success(), "-s reload: {stderr}");
        // A connection queued on a reuseport socket that the reload closes
        // is reset (as with nginx): poll without panicking on that.
        assert!(
            common::wait::until(std::time::Duration::from_secs(10), || {
                try_get_body(s.port()).as_deref() == Some(text)
            }),
            "not reloaded to {text:?}:\n{}",
            s.stderr()
        );
        assert!(
            !s.stderr().contains("Address already in use"),
            "{}",
            s.stderr()
        );
        assert!(common::wait::until(
            std::time::Duration::from_secs(10),
            || { common::server::listening_sockets(s.port()) == sockets }
        ));
    }
}

/// The body of `GET /`, or `None` when the connection fails.
fn try_get_body(port: u16) -> Option<String> {
    let mut c = common::Conn::try_open(port).ok()?;
    c.try_send(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .ok()?;
    c.response().map(|r| common::body(&r))
}

/// The request lines an echoing upstream received for each path in
/// `paths`, proxied by a server with `server_block` (`UP` is the
/// upstream's address).
fn upstream_request_lines(server_block: &str, paths: &[&str]) -> Vec<String> {
    let up = Upstream::echo();
    let s = common::proxy::start(&up, "", server_block);
    for path in paths {
        let r = get(s.port(), path);
        assert_eq!(r.status, 200, "{path}: {}", s.stderr());
    }
    up.requests().iter().map(|r| r.request_line()).collect()
}

/// `set $suffix "?x=1"; proxy_pass http://127.0.0.1:8000$suffix;` (Laravel
/// Octane's documented configuration) sent `GET ?x=1 HTTP/1.0` upstream:
/// nginx's `ngx_http_proxy_eval` puts a `/` before an evaluated URI that
/// is only a query. Fixed in `src/config/proxy_url.rs` (`evaluate`).
#[test]
fn proxy_pass_with_a_variable_holding_only_a_query_sends_a_path() {
    let lines = upstream_request_lines(
        "location / { set $suffix \"?x=1\"; proxy_pass http://UP$suffix; }\n\
         location /args/ { proxy_pass http://UP$is_args$args; }\n\
         location /empty/ { set $suffix \"\"; proxy_pass http://UP$suffix; }",
        &["/index.php?a=1", "/args/x?b=2", "/args/y", "/empty/z?c=3"],
    );
    assert_eq!(
        lines,
        [
            "GET /?x=1 HTTP/1.0",
            "GET /?b=2 HTTP/1.0",
            // An empty URI part: the client's URI, as with no variables.
            "GET /args/y HTTP/1.0",
            "GET /empty/z?c=3 HTTP/1.0",
        ]
    );
}

/// `rewrite … break` (or `last`) before a `proxy_pass` without a URI part
/// sent the client's original request target upstream, and `rewrite …
/// last` could not reach an `internal` location: a rewrite did not make
/// the request internal (nginx's `ngx_http_script_regex_start_code` sets
/// `r->internal` and clears `r->valid_unparsed_uri`); `set $args` did not
/// clear `valid_unparsed_uri` either. Fixed in `src/server/modules/rewrite.rs` and
/// `src/server/core/request.rs` (`valid_unparsed_uri`).
#[test]
fn rewrite_before_proxy_pass_sends_the_rewritten_uri() {
    let lines = upstream_request_lines(
        "location /api/ { rewrite ^/api/(.*)$ /$1 break; proxy_pass http://UP; }\n\
         location /old/ { rewrite ^/old/(.*)$ /new/$1 last; }\n\
         location /new/ { internal; proxy_pass http://UP; }\n\
         location /args/ { set $args b=2; proxy_pass http://UP; }",
        &["/api/users?id=1", "/old/a%20b?c=3", "/args/x?a=1"],
    );
    assert_eq!(
        lines,
        [
            "GET /users?id=1 HTTP/1.0",
            "GET /new/a%20b?c=3 HTTP/1.0",
            "GET /args/x?b=2 HTTP/1.0",
        ]
    );
}

/// `proxy_pass_header X-Foo` did not pass a field that `proxy_hide_header
/// X-Foo` hid, at the same level or inherited (a location hiding `Server`
/// under one passing it hid it too): nginx's
/// `ngx_http_upstream_hide_headers_hash` takes the pass list's names off
/// the whole hide list, its defaults and `proxy_hide_header`'s names
/// alike. Fixed in `src/server/proxy/response.rs` (`withheld`).
#[test]
fn proxy_pass_header_passes_a_field_proxy_hide_header_named() {
    let up = Upstream::fixed(
        b"HTTP/1.1 200 OK\r\nServer: up\r\nX-Foo: foo\r\nX-Bar: bar\r\n\
          Content-Length: 2\r\nConnection: close\r\n\r\nok",
    );
    let s = common::proxy::start(
        &up,
        "",
        "location /same/ { proxy_pass http://UP; proxy_hide_header X-Foo; proxy_pass_header X-Foo; }\n\
         location /outer/ { proxy_pass_header Server; proxy_pass_header X-Foo;\n\
           location /outer/in/ { proxy_pass http://UP; proxy_hide_header Server;\n\
             proxy_hide_header X-Foo; proxy_hide_header X-Bar; } }",
    );
    let r = get(s.port(), "/same/x");
    assert_eq!(r.header("X-Foo").as_deref(), Some("foo"));
    let r = get(s.port(), "/outer/in/x");
    assert_eq!(r.header("X-Foo").as_deref(), Some("foo"));
    assert_eq!(r.header("Server").as_deref(), Some("up"));
    assert_eq!(r.header("X-Bar"), None);
}

/// Runs `case` against nowait, then against nginx 1.22 (the reference the
/// expectations were read from): a test that expects nginx's behaviour
/// checks it against nginx too. Without nginx the second run is skipped
/// and said so (a failure under `NOWAIT_REQUIRE_ALL=1`).
fn against_both(test: &str, case: impl Fn(Kind)) {
    case(Kind::Nowait);
    if common::require(
        Path::new(NGINX_BIN).exists(),
        test,
        &format!("{NGINX_BIN} is missing: the nginx half (apt-get install nginx-light)"),
    ) {
        case(Kind::Nginx);
    }
}

/// A directory the servers' workers can write logs to.
fn log_dir() -> TempDir {
    let logs = TempDir::new("regression-logs");
    common::tmp::set_mode(logs.path(), 0o777);
    logs
}

/// The lines of the log `name` in `logs`.
fn log_lines(logs: &TempDir, name: &str) -> Vec<String> {
    read_text(&logs.path().join(name))
        .lines()
        .map(str::to_string)
        .collect()
}

/// `access_log … if=$status` logged nothing, nor did `if=$loggable` with
/// the nginx documentation's `map $status $loggable { ~^[23] 0; default
/// 1; }`: the condition, and the maps it reads, were evaluated without the
/// response, so `$status`, `$sent_http_*` and `$body_bytes_sent` were not
/// found. nginx evaluates `if=` once the request is over, with every
/// variable of the finished request (`ngx_http_log_handler`). Fixed in
/// `src/server/modules/access_log.rs` (`request`) and `src/server/core/named.rs` (a
/// map or split reads the response when it is given one).
#[test]
fn access_log_if_condition_sees_the_response_variables() {
    against_both(common::test_name!(), |kind| {
        let root = TempDir::new("log-if-root");
        std::fs::write(root.path().join("a.txt"), "text").unwrap();
        std::fs::write(root.path().join("index.html"), "<p>page</p>").unwrap();
        let logs = log_dir();
        let conf = Conf::http(
            &"log_format t \"$request_method $uri $status\";\n\
              map $status $loggable {\n ~^[23] 0;\n default 1;\n}\n\
              map $sent_http_content_type $html {\n ~^text/html 1;\n default 0;\n}\n\
              server {\n listen 127.0.0.1:{port};\n server_name localhost;\n root {root};\n \
              access_log LOGS/loggable.log t if=$loggable;\n \
              access_log LOGS/status.log t if=$status;\n \
              access_log LOGS/html.log t if=$html;\n \
              access_log LOGS/body.log t if=$body_bytes_sent;\n}\n"
                .replace("LOGS", &logs.path().display().to_string()),
        )
        .root(root.path())
        .render();
        let s = Server::start(kind, &conf);
        assert_eq!(get(s.port(), "/a.txt").status, 200);
        assert_eq!(get(s.port(), "/missing").status, 404);
        let head = common::client::request(
            s.port(),
            "HEAD /index.html HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        );
        assert_eq!(head.status, 200);
        drop(s);
        let who = kind.name();
        // The docs' example: errors only.
        assert_eq!(
            log_lines(&logs, "loggable.log"),
            ["GET /missing 404"],
            "{who}"
        );
        assert_eq!(
            log_lines(&logs, "status.log"),
            ["GET /a.txt 200", "GET /missing 404", "HEAD /index.html 200"],
            "{who}"
        );
        // The error page is HTML too.
        assert_eq!(
            log_lines(&logs, "html.log"),
            ["GET /missing 404", "HEAD /index.html 200"],
            "{who}"
        );
        // A HEAD sent no body: `$body_bytes_sent` is 0, which is false.
        assert_eq!(
            log_lines(&logs, "body.log"),
            ["GET /a.txt 200", "GET /missing 404"],
            "{who}"
        );
    });
}

/// The current Unix time in seconds, with its fraction.
fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Sleeps until the Unix time `t` (seconds).
fn sleep_until(t: f64) {
    let left = t - unix_now();
    if left > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(left));
    }
}

/// How many times a test that must place requests inside given seconds
/// starts again when the machine was too slow to.
const SECOND_ATTEMPTS: usize = 5;

/// A cache entry expired during the last second of its validity: an
/// entry with `valid_sec == now` was `EXPIRED` (`STALE` with a background
/// update), where nginx's `ngx_http_file_cache_read` expires an entry
/// only when `c->valid_sec < now` — with `proxy_cache_valid 1s`, an
/// answer stored in second T is a `HIT` through second T+1. Likewise
/// `stale-while-revalidate=N` still lets the stale entry be sent (and
/// updated in the background) in second `valid_sec + N`
/// (`c->valid_sec + c->updating_sec >= now`). Fixed in
/// `src/server/upstream/cache/mod.rs` (`expired`, `prepare`).
///
/// Each request is sent at least 0.1 s after the start of its second and
/// its answer must come before 0.9 s; on a machine too slow for that, the
/// attempt starts again with new keys.
#[test]
fn cache_entry_is_fresh_through_the_last_second_of_its_validity() {
    against_both(common::test_name!(), |kind| {
        let up = Upstream::start(|c| {
            while let Some(req) = c.read_request() {
                let target = req.target();
                let extra = if target.starts_with("/swr") {
                    "Cache-Control: max-age=1, stale-while-revalidate=1\r\n"
                } else {
                    ""
                };
                let resp = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n{extra}\r\n{target}",
                    target.len()
                );
                if !c.write(resp.as_bytes()) || !req.keep_alive() {
                    return;
                }
            }
        });
        let conf = common::proxy::conf(
            Some(&up),
            "proxy_cache_path {prefix}/c keys_zone=z:1m;",
            "location / {\n proxy_pass http://UP;\n proxy_cache z;\n \
             proxy_cache_valid 200 1s;\n proxy_cache_background_update on;\n \
             add_header X-Cache $upstream_cache_status always;\n}",
        );
        let conf = format!("user root;\n{conf}");
        let s = Server::start(kind, &conf);
        let cache = |path: &str| {
            let r = get(s.port(), path);
            assert_eq!((r.status, common::body(&r)), (200, path.to_string()));
            r.header("X-Cache").unwrap_or_default()
        };
        let who = kind.name();
        for attempt in 0..SECOND_ATTEMPTS {
            let (valid, swr) = (format!("/valid{attempt}"), format!("/swr{attempt}"));
            let t = unix_now().floor() + 1.0;
            sleep_until(t + 0.1);
            assert_eq!(cache(&valid), "MISS", "{who}");
            assert_eq!(cache(&swr), "MISS", "{who}");
            if unix_now() >= t + 0.9 {
                continue;
            }
            // Stored in second t, valid until t + 1.
            sleep_until(t + 1.1);
            let at_last_second = cache(&valid);
            if unix_now() >= t + 1.9 {
                continue;
            }
            assert_eq!(at_last_second, "HIT", "{who}: second valid_sec");
            // Expired in t + 2, within stale-while-revalidate.
            sleep_until(t + 2.1);
            let stale = cache(&swr);
            if unix_now() >= t + 2.9 {
                continue;
            }
            assert_eq!(stale, "STALE", "{who}: second valid_sec + updating_sec");
            return;
        }
        panic!("{who}: no attempt placed its requests inside their seconds");
    });
}

/// A gate an upstream's answer waits at until the test opens it.
#[derive(Clone)]
struct Gate(Arc<Mutex<Receiver<()>>>);

impl Gate {
    fn wait(&self) {
        let rx = self.0.lock().unwrap_or_else(|p| p.into_inner());
        rx.recv_timeout(Duration::from_secs(20))
            .expect("the test opens the gate");
    }
}

/// With `proxy_cache_background_update on` and `log_subrequest on`,
/// nowait wrote no line for the background update and logged the main
/// request before the update; nginx logs the update as a subrequest (its
/// own `$status`, `EXPIRED`, `$request_length` 0) and then the main
/// request, which it logs — `log_subrequest` on or off — only when the
/// update is over (`ngx_http_free_request` once `r->main->count` is 0):
/// a request of another connection answered during the update is logged
/// before it. Fixed in `src/server/engine/h1/conn.rs` (`HeldLine`) and
/// `src/server/upstream/finish.rs` (`background_update`, on a clone of the
/// request: `Req::background_clone`).
#[test]
fn background_update_is_logged_before_the_request_it_follows() {
    against_both(common::test_name!(), |kind| {
        for log_subrequest in ["on", "off"] {
            background_update_log(kind, log_subrequest);
        }
    });
}

fn background_update_log(kind: Kind, log_subrequest: &str) {
    let (open, held) = channel();
    let held = Gate(Arc::new(Mutex::new(held)));
    let asked = Arc::new(AtomicUsize::new(0));
    let n = asked.clone();
    let up = Upstream::start(move |c| {
        while c.read_request().is_some() {
            if n.fetch_add(1, Ordering::SeqCst) == 0 {
                // Stored already expired.
                c.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-Accel-Expires: @1\r\n\r\nold");
            } else {
                held.wait();
                c.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nCache-Control: max-age=600\r\n\r\nnew");
            }
        }
    });
    let logs = log_dir();
    let conf = common::proxy::conf(
        Some(&up),
        &format!(
            "log_format t \"$uri|$status|$upstream_cache_status|$request_length\";\n\
             log_subrequest {log_subrequest};\n\
             proxy_cache_path {{prefix}}/c keys_zone=z:1m;"
        ),
        &format!(
            "access_log {}/t.log t;\n\
             location /done {{ return 200 \"done\"; }}\n\
             location / {{\n proxy_pass http://UP;\n proxy_cache z;\n \
             proxy_cache_use_stale updating;\n proxy_cache_background_update on;\n \
             add_header X-Cache $upstream_cache_status always;\n}}",
            logs.path().display()
        ),
    );
    let s = Server::start(kind, &format!("user root;\n{conf}"));
    let who = format!("{}, log_subrequest {log_subrequest}", kind.name());
    let r = get(s.port(), "/p");
    assert_eq!(r.header("X-Cache").as_deref(), Some("MISS"), "{who}");
    // Answered stale; its update waits at the origin.
    let mut a = Conn::open(s.port());
    a.send(b"GET /p HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let r = a.response().expect("the stale answer");
    assert_eq!(
        (r.header("X-Cache").as_deref(), common::body(&r).as_str()),
        (Some("STALE"), "old"),
        "{who}"
    );
    assert!(
        common::wait::until(Duration::from_secs(10), || asked.load(Ordering::SeqCst)
            == 2),
        "{who}: the update reached the origin"
    );
    // Another connection meanwhile: served stale, logged at once.
    let r = get(s.port(), "/p");
    assert_eq!(r.header("X-Cache").as_deref(), Some("UPDATING"), "{who}");
    open.send(()).expect("the origin waits");
    // The connection goes on once the update is over.
    a.send(b"GET /done HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let r = a.response().expect("the next request's answer");
    assert_eq!(common::body(&r), "done", "{who}");
    drop(s);
    let lines = log_lines(&logs, "t.log");
    // `$request_length` is the main requests' own, 0 for the update.
    let shown: Vec<String> = lines
        .iter()
        .map(|l| match l.rsplit_once('|') {
            Some((rest, "0")) => format!("{rest}|0"),
            Some((rest, _)) => format!("{rest}|n"),
            None => l.clone(),
        })
        .collect();
    let mut want = vec!["/p|200|MISS|n", "/p|200|UPDATING|n"];
    if log_subrequest == "on" {
        want.push("/p|200|EXPIRED|0");
    }
    want.extend(["/p|200|STALE|n", "/done|200|-|n"]);
    assert_eq!(shown, want, "{who}: {lines:#?}");
}
