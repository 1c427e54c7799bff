//! Black-box tests of the logs: the access log in the default `combined`
//! format and in a custom `log_format`, `access_log off`, the error log's
//! context for a missing file, and reopening (`-s reopen`, SIGUSR1).
//!
//! Log lines are written by a writer thread shortly after the request;
//! every check polls the file for a bounded time.

mod common;

use std::path::Path;
use std::time::Duration;

use common::client::{get, request};
use common::wait::{read_text, until};
use common::{Conf, Fixture, Server};

/// How long a log line may take to reach its file.
const LOG_WAIT: Duration = Duration::from_secs(5);

/// Waits until `path` has at least `n` lines; returns them.
fn lines(path: &Path, n: usize) -> Vec<String> {
    let ok = until(LOG_WAIT, || read_text(path).lines().count() >= n);
    let text = read_text(path);
    assert!(ok, "{} has fewer than {n} lines:\n{text}", path.display());
    text.lines().map(str::to_string).collect()
}

#[test]
fn access_log_in_the_combined_format() {
    let f = Fixture::build();
    let conf = Conf::server("root {root};\naccess_log {prefix}/access.log;")
        .root(f.root())
        .render();
    let s = Server::tested(&conf);
    let r = request(
        s.port(),
        "GET /x?a=1 HTTP/1.1\r\nHost: localhost\r\nReferer: http://ref.test/p\r\n\
         User-Agent: test-agent/1.0 (\"quoted\")\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    let line = lines(&s.prefix().join("access.log"), 1).remove(0);
    // 127.0.0.1 - - [22/Nov/2026:02:14:31 +0000] "GET /x?a=1 HTTP/1.1" 200 13 "http://ref.test/p" "test-agent/1.0 (\x22quoted\x22)"
    let (client, rest) = line.split_once(" - - [").expect("client and user");
    assert_eq!(client, "127.0.0.1");
    let (time, rest) = rest.split_once("] ").expect("time");
    assert_eq!(time.len(), "22/Nov/2026:02:14:31 +0000".len(), "{time}");
    assert_eq!(
        rest,
        "\"GET /x?a=1 HTTP/1.1\" 200 13 \"http://ref.test/p\" \
         \"test-agent/1.0 (\\x22quoted\\x22)\""
    );

    // A request without Referer/User-Agent logs "-".
    get(s.port(), "/missing");
    let line = lines(&s.prefix().join("access.log"), 2).remove(1);
    assert!(
        line.contains("\"GET /missing HTTP/1.1\" 404 ") && line.ends_with(" \"-\" \"-\""),
        "{line}"
    );
}

#[test]
fn access_log_with_a_custom_format() {
    let f = Fixture::build();
    let conf = Conf::http(
        "log_format custom '$request_time|$status|$body_bytes_sent|$uri|$args|$http_x_custom';\n\
         server {\n listen 127.0.0.1:{port};\n root {root};\n\
         access_log {prefix}/custom.log custom;\n}",
    )
    .root(f.root())
    .render();
    let s = Server::tested(&conf);
    request(
        s.port(),
        "GET /dir/file.txt?k=v&z HTTP/1.1\r\nHost: localhost\r\nX-Custom: hello there\r\nConnection: close\r\n\r\n",
    );
    get(s.port(), "/dir/");
    let lines = lines(&s.prefix().join("custom.log"), 2);
    let fields: Vec<&str> = lines[0].split('|').collect();
    assert_eq!(fields.len(), 6, "{}", lines[0]);
    let (secs, millis) = fields[0].split_once('.').expect("seconds.millis");
    assert!(
        secs.parse::<u64>().is_ok() && millis.len() == 3,
        "{}",
        fields[0]
    );
    assert_eq!(
        &fields[1..],
        ["200", "9", "/dir/file.txt", "k=v&z", "hello there"]
    );
    // `$uri` after the index redirect; empty variables log as "-".
    assert_eq!(
        lines[1].split('|').skip(1).collect::<Vec<_>>(),
        ["200", "17", "/dir/index.html", "-", "-"]
    );
}

#[test]
fn access_log_off_in_a_location() {
    let f = Fixture::build();
    let conf = Conf::server(
        "root {root};\naccess_log {prefix}/access.log;\nlocation /dir/ { access_log off; }",
    )
    .root(f.root())
    .render();
    let s = Server::tested(&conf);
    get(s.port(), "/dir/file.txt");
    get(s.port(), "/x");
    let lines = lines(&s.prefix().join("access.log"), 1);
    // Give a late line for /dir/ the time to show up, then check order.
    std::thread::sleep(Duration::from_millis(300));
    let text = read_text(&s.prefix().join("access.log"));
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        lines[0].contains("\"GET /x HTTP/1.1\" 200 "),
        "{}",
        lines[0]
    );
}

#[test]
fn error_log_says_which_file_is_missing_and_for_which_request() {
    let f = Fixture::build();
    let conf = Conf::server("root {root};")
        .main("error_log {prefix}/error.log info;")
        .root(f.root())
        .render();
    let s = Server::tested(&conf);
    assert_eq!(get(s.port(), "/nope.html").status, 404);
    let log = s.prefix().join("error.log");
    let want = format!(
        "open() \"{}/nope.html\" failed (2: No such file or directory), client: 127.0.0.1, \
         server: localhost, request: \"GET /nope.html HTTP/1.1\", host: \"localhost\"",
        f.root().display()
    );
    assert!(
        until(LOG_WAIT, || read_text(&log).contains(&want)),
        "no line with\n{want}\nin:\n{}",
        read_text(&log)
    );
    let text = read_text(&log);
    let line = text.lines().find(|l| l.contains(&want)).unwrap();
    assert!(line.contains(" [error] "), "{line}");
}

#[test]
fn reopen_moves_the_access_log_to_a_new_file() {
    let f = Fixture::build();
    let conf = Conf::server("root {root};\naccess_log {prefix}/access.log;")
        .root(f.root())
        .render();
    let s = Server::tested(&conf);
    let log = s.prefix().join("access.log");
    let old = s.prefix().join("access.log.1");
    get(s.port(), "/x?before");
    lines(&log, 1);
    std::fs::rename(&log, &old).unwrap();
    // Until the reopen, lines still go to the renamed file.
    get(s.port(), "/x?renamed");
    lines(&old, 2);

    let (status, stderr) = s.control("reopen");
    assert!(status.success(), "-s reopen: {status}: {stderr}");
    // The reopen is asynchronous: keep logging until a line lands in a new
    // file at the original path.
    let mut n = 0;
    let ok = until(LOG_WAIT, || {
        n += 1;
        get(s.port(), &format!("/x?after{n}"));
        read_text(&log).contains("?after")
    });
    assert!(ok, "nothing in a new {}", log.display());
    let moved = read_text(&old);
    assert!(
        moved.contains("?before") && moved.contains("?renamed"),
        "{moved}"
    );
    assert!(!read_text(&log).contains("?before"));
}

/// Regression: a request rejected while its head was read (400, 414) gets
/// an access log line, as from nginx (nowait used to write none).
/// `NOWAIT_TEST_NGINX=1` runs it against nginx as the reference.
#[test]
fn access_log_has_lines_for_rejected_heads() {
    let f = Fixture::build();
    let conf = Conf::server(
        "root {root};\naccess_log {prefix}/access.log;\nlarge_client_header_buffers 2 1k;",
    )
    .root(f.root())
    .render();
    let s = Server::tested(&conf);
    request(
        s.port(),
        &format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(2048)),
    );
    request(
        s.port(),
        "GET /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
    );
    let lines = lines(&s.prefix().join("access.log"), 2);
    assert!(lines[0].contains("\" 414 "), "{}", lines[0]);
    assert!(
        lines[1].contains("\"GET /x HTTP/1.1\" 400 "),
        "{}",
        lines[1]
    );
}

/// Regression: a client that closed with part of a head sent was not
/// logged; nginx made a request of its first byte and logs a 400 with
/// what came of the request line (and a header too large its 494 as the
/// 400 it sent).
#[test]
fn a_client_that_closes_mid_head_is_logged_as_a_400() {
    let f = Fixture::build();
    let conf = Conf::server(
        "root {root};\naccess_log {prefix}/access.log;\nlarge_client_header_buffers 2 1k;",
    )
    .root(f.root())
    .render();
    let s = Server::tested(&conf);
    for bytes in [&b"\r\n"[..], b"GET /", b"GET /a HTTP/1.1\r\nHost: x\r\n"] {
        let mut c = std::net::TcpStream::connect(("127.0.0.1", s.port())).unwrap();
        std::io::Write::write_all(&mut c, bytes).unwrap();
        c.shutdown(std::net::Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        let _ = std::io::Read::read_to_end(&mut c, &mut rest);
        assert!(rest.is_empty(), "nothing is answered: {rest:?}");
    }
    request(
        s.port(),
        &format!(
            "GET / HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
            "a".repeat(2048)
        ),
    );
    let lines = lines(&s.prefix().join("access.log"), 4);
    assert!(lines[0].contains("\"\" 400 0 "), "{}", lines[0]);
    assert!(lines[1].contains("\"GET /\" 400 0 "), "{}", lines[1]);
    assert!(
        lines[2].contains("\"GET /a HTTP/1.1\" 400 0 "),
        "{}",
        lines[2]
    );
    assert!(lines[3].contains("\" 400 "), "{}", lines[3]);
}
