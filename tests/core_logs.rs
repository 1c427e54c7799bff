//! Black-box tests of the log module's parameters: `access_log … if=`,
//! `buffer=`/`flush=`, `gzip`, names with variables (and
//! `open_log_file_cache`), `log_format … escape=`, and the line being in the
//! file once the client sees the connection close. nginx 1.22's behaviour:
//! run with `NOWAIT_TEST_NGINX=1` to check it.

mod common;

use std::time::Duration;

use common::client::{get, request};
use common::wait::{read_text, until};
use common::{Conf, Fixture, Server, TempDir};

/// A directory the server's workers may write to.
fn log_dir() -> TempDir {
    let d = TempDir::new("logs");
    common::tmp::set_mode(d.path(), 0o777);
    d
}

fn serve_logs(f: &Fixture, http: &str, server: &str) -> Server {
    let conf = Conf::http(&format!(
        "{http}\nserver {{\n listen 127.0.0.1:{{port}};\n server_name localhost;\n root {{root}};\n{server}\n}}\n"
    ))
    .root(f.root())
    .render();
    Server::tested(&conf)
}

#[test]
fn the_line_is_written_before_the_connection_closes() {
    let f = Fixture::build();
    let d = log_dir();
    let log = d.path().join("t.log");
    let s = serve_logs(
        &f,
        "log_format t \"$uri:$status\";",
        &format!("access_log {} t;", log.display()),
    );
    for i in 0..5 {
        let path = format!("/n{i}");
        let mut c = common::Conn::open(s.port());
        c.send(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes());
        assert_eq!(c.response().expect("a response").status, 404);
        assert_eq!(c.wait_closed(Duration::from_secs(5)), common::State::Closed);
        // Read at once after the close, as nginx's own tests do.
        assert!(read_text(&log).contains(&format!("{path}:404")), "{i}");
    }
}

#[test]
fn if_condition_and_escapes() {
    let f = Fixture::build();
    let d = log_dir();
    let p = |n: &str| d.path().join(n).display().to_string();
    let s = serve_logs(
        &f,
        "log_format test \"$uri:$status\";
         log_format default escape=default $uri$arg_b$arg_c;
         log_format none escape=none $uri$arg_b$arg_c;
         log_format json escape=json $uri$arg_b$arg_c;
         log_format cc \"$uri: $sent_http_cache_control\";",
        &format!(
            "location /filtered {{ access_log {} test if=$arg_logme; return 200 OK; }}
             location /escape {{ access_log {} default; access_log {} none; access_log {} json; }}
             location /cc {{ access_log {} cc;
                 add_header Cache-Control max-age=3600; add_header Cache-Control private;
                 return 200 OK; }}",
            p("filtered.log"),
            p("default.log"),
            p("none.log"),
            p("json.log"),
            p("cc.log")
        ),
    );
    for q in ["", "?logme=", "?logme=0", "?logme=1", "?logme=yes"] {
        get(s.port(), &format!("/filtered{q}"));
    }
    get(s.port(), "/escape/%221%20%1B%1C%20%22?c=2");
    get(s.port(), "/cc");
    drop(s);
    assert_eq!(
        read_text(&d.path().join("filtered.log")),
        "/filtered:200\n/filtered:200\n"
    );
    assert_eq!(
        read_text(&d.path().join("default.log")),
        "/escape/\\x221 \\x1B\\x1C \\x22-2\n"
    );
    assert_eq!(
        read_text(&d.path().join("none.log")),
        "/escape/\"1 \x1B\x1C \"2\n"
    );
    assert_eq!(
        read_text(&d.path().join("json.log")),
        "/escape/\\\"1 \\u001B\\u001C \\\"2\n"
    );
    assert_eq!(
        read_text(&d.path().join("cc.log")),
        "/cc: max-age=3600, private\n"
    );
}

#[test]
fn buffered_and_compressed_logs() {
    let f = Fixture::build();
    let d = log_dir();
    let s = serve_logs(
        &f,
        "log_format t \"$uri:$status\";",
        &format!(
            "location /flushed {{ access_log {}/flushed.log t buffer=1m flush=100ms; return 200 OK; }}
             location /gz {{ access_log {}/gz.log t gzip flush=100ms; return 200 OK; }}",
            d.path().display(),
            d.path().display()
        ),
    );
    get(s.port(), "/flushed");
    get(s.port(), "/gz");
    let flushed = d.path().join("flushed.log");
    assert!(
        until(Duration::from_secs(5), || read_text(&flushed)
            == "/flushed:200\n"),
        "{}",
        read_text(&flushed)
    );
    let gz = d.path().join("gz.log");
    assert!(until(Duration::from_secs(5), || std::fs::metadata(&gz)
        .is_ok_and(|m| m.len() > 0)));
    let bytes = std::fs::read(&gz).unwrap();
    // A gzip member (RFC 1952 magic), not the plain line.
    assert_eq!(&bytes[..2], &[0x1f, 0x8b]);
}

#[test]
fn names_with_variables_and_the_log_file_cache() {
    let f = Fixture::build();
    let d = log_dir();
    std::fs::create_dir(d.path().join("dir")).unwrap();
    common::tmp::set_mode(&d.path().join("dir"), 0o777);
    let s = serve_logs(
        &f,
        "log_format t \"$uri\";",
        &format!(
            "location /varlog {{ access_log {0}/varlog_${{arg_name}} t; return 200 OK; }}
             location /cache {{
                 open_log_file_cache max=3 inactive=20s valid=1m min_uses=2;
                 access_log {0}/dir/cache_${{arg_name}} t;
                 return 200 OK;
             }}",
            d.path().display()
        ),
    );
    let p = s.port();
    get(p, "/varlog?name=0");
    get(p, "/varlog?name=file");
    // Each line is in its file before the next request: the log thread
    // sees the names in this order (a request's line is queued after its
    // response, so the next connection could otherwise overtake it), and
    // everything is written before the directory moves.
    let mut written = std::collections::HashMap::new();
    for name in ["lru", "lru", "once", "first", "first", "second", "second"] {
        get(p, &format!("/cache?name={name}"));
        let n = written.entry(name).or_insert(0);
        *n += 1;
        let file = d.path().join("dir").join(format!("cache_{name}"));
        let want = *n;
        assert!(until(Duration::from_secs(5), || read_text(&file)
            .lines()
            .count()
            == want));
    }
    std::fs::rename(d.path().join("dir"), d.path().join("moved")).unwrap();
    // Again one line at a time, each seen where it went (the kept files in
    // the moved folder, the others as a failed open in the error log)
    // before the folder moves back.
    for (name, kept) in [
        ("lru", false),
        ("once", false),
        ("first", true),
        ("second", true),
    ] {
        get(p, &format!("/cache?name={name}"));
        let file = d.path().join("moved").join(format!("cache_{name}"));
        let failed = format!("cache_{name}\" failed");
        assert!(until(Duration::from_secs(5), || if kept {
            read_text(&file).lines().count() == 3
        } else {
            s.stderr().contains(&failed)
        }));
    }
    std::fs::rename(d.path().join("moved"), d.path().join("dir")).unwrap();
    drop(s);
    assert_eq!(read_text(&d.path().join("varlog_0")), "/varlog\n");
    assert_eq!(read_text(&d.path().join("varlog_file")), "/varlog\n");
    let lines = |n: &str| read_text(&d.path().join("dir").join(n)).lines().count();
    assert_eq!(lines("cache_lru"), 2, "closed when the table was full");
    assert_eq!(lines("cache_once"), 1, "never kept open");
    assert_eq!(lines("cache_first"), 3, "kept open");
    assert_eq!(lines("cache_second"), 3, "kept open");
}

#[test]
fn rejected_requests_log_an_empty_uri() {
    let f = Fixture::build();
    let d = log_dir();
    let log = d.path().join("r.log");
    let s = serve_logs(
        &f,
        "log_format r \"$uri: $sent_http_cache_control\";",
        &format!("access_log {} r;", log.display()),
    );
    let r = request(s.port(), "GET /../bad_uri HTTP/1.0\r\n\r\n");
    assert_eq!(r.status, 400);
    drop(s);
    assert_eq!(read_text(&log), ": -\n");
}

/// The `$time_local` of one request to a server started with `main` in its
/// main context and `env` in its environment.
fn time_local(main: &str, env: &[(&str, &str)]) -> String {
    let f = Fixture::build();
    let d = log_dir();
    let log = d.path().join("t.log");
    let conf = Conf::http(&format!(
        "log_format t \"[$time_local]\";
         server {{ listen 127.0.0.1:{{port}}; server_name localhost; root {{root}};
                   access_log {} t; location / {{ return 204; }} }}",
        log.display()
    ))
    .main(main)
    .root(f.root())
    .render();
    let kind = if std::env::var_os("NOWAIT_TEST_NGINX").is_some_and(|v| v == "1") {
        common::server::Kind::Nginx
    } else {
        common::server::Kind::Nowait
    };
    let s = Server::start_with_env(kind, &conf, &[], env);
    let mut c = common::Conn::open(s.port());
    c.send(b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n");
    assert_eq!(c.response().expect("a response").status, 204);
    assert_eq!(c.wait_closed(Duration::from_secs(5)), common::State::Closed);
    let line = read_text(&log);
    line.trim().to_owned()
}

#[test]
fn the_logs_keep_the_time_zone_the_server_started_with() {
    // POSIX `TZ` texts: a zone called NWT, 3 hours east of UTC.
    let inherited = time_local("", &[("TZ", "NWT-3")]);
    assert!(inherited.ends_with("+0300]"), "{inherited}");
    let named = time_local("env TZ;", &[("TZ", "NWT-3")]);
    assert!(named.ends_with("+0300]"), "{named}");
    // `env TZ=…` makes the environment say another zone; the logs stay in
    // the one the process started with, as nginx's on Linux.
    let set = time_local("env TZ=NWT-5; env APP=1;", &[("TZ", "NWT-3")]);
    assert!(set.ends_with("+0300]"), "{set}");
}
