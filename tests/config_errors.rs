//! Every configuration error nowait reports, with its exact message, file and
//! line, checked through the real binary (`nowait -t`). The messages and lines
//! are nginx's (compared with nginx 1.22 `nginx -t`); where nowait words a
//! message differently on purpose, the test says so.
//!
//! nginx reports the line on which the statement's `;` or `{` was read, not
//! the line of its name; the multi-line cases check that.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// A fresh directory with configuration files, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    /// A directory named after the test holding `files` (path, text); the
    /// main file is `nowait.conf`.
    fn with(name: &str, files: &[(&str, &str)]) -> Dir {
        let p = std::env::temp_dir().join(format!("nowait-conferr-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        for (file, text) in files {
            let f = p.join(file);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, text).unwrap();
        }
        Dir(p)
    }

    /// The absolute path of a file in the directory, as messages print it.
    fn file(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }

    /// Runs `nowait -t -p DIR -c DIR/nowait.conf` plus `extra`.
    fn test(&self, extra: &[&str]) -> (Option<i32>, String) {
        let conf = self.file("nowait.conf");
        let out = Command::new(env!("CARGO_BIN_EXE_nowait"))
            .args(["-t", "-p", self.0.to_str().unwrap(), "-c", &conf])
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .expect("the nowait binary runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The stderr of a failed `-t` whose messages are `lines` (already prefixed
/// with their level), in order and nothing else.
fn failed(d: &Dir, lines: &[String]) -> String {
    let mut s = String::new();
    for l in lines {
        s.push_str(&format!("nowait: {l}\n"));
    }
    s.push_str(&format!(
        "nowait: configuration file {} test failed\n",
        d.file("nowait.conf")
    ));
    s
}

/// Asserts that `text` as `nowait.conf` fails `-t` with exactly one message,
/// `[emerg] MESSAGE in DIR/nowait.conf:LINE`.
fn emerg(name: &str, text: &str, message: &str, line: u32) {
    let d = Dir::with(name, &[("nowait.conf", text)]);
    let (code, stderr) = d.test(&[]);
    assert_eq!(code, Some(1), "{name}: {stderr}");
    let want = format!("[emerg] {message} in {}:{line}", d.file("nowait.conf"));
    assert_eq!(stderr, failed(&d, &[want]), "{name}");
}

/// Asserts that `text` passes `-t` and says `line_text in FILE:line` first.
fn passes_saying(name: &str, text: &str, line_text: &str, line: u32) {
    let d = Dir::with(name, &[("nowait.conf", text)]);
    let (code, stderr) = d.test(&[]);
    assert_eq!(code, Some(0), "{name}: {stderr}");
    let want = format!("nowait: {line_text} in {}:{line}\n", d.file("nowait.conf"));
    assert!(stderr.starts_with(&want), "{name}: {stderr}");
}

/// Asserts that `text` passes `-t`, with no message but the two of success.
fn ok(name: &str, text: &str) {
    let d = Dir::with(name, &[("nowait.conf", text)]);
    let (code, stderr) = d.test(&[]);
    assert_eq!(code, Some(0), "{name}: {stderr}");
    let conf = d.file("nowait.conf");
    assert_eq!(
        stderr,
        format!(
            "nowait: the configuration file {conf} syntax is ok\n\
             nowait: configuration file {conf} test is successful\n"
        ),
        "{name}"
    );
}

const EV: &str = "events {}\n";

/// `events {}` then an http block with one server listening on
/// 127.0.0.1:18080 whose body is `body`; the body starts on line 5.
fn server(body: &str) -> String {
    format!("{EV}http {{\n    server {{\n        listen 127.0.0.1:18080;\n{body}    }}\n}}\n")
}

#[test]
fn unknown_directive() {
    emerg(
        "unknown",
        &format!("{EV}foo bar;\n"),
        "unknown directive \"foo\"",
        2,
    );
    emerg(
        "unknown-block",
        &format!("{EV}foo {{\n    bar;\n}}\n"),
        "unknown directive \"foo\"",
        2,
    );
    emerg(
        "unknown-in-server",
        &server("        lisen 80;\n"),
        "unknown directive \"lisen\"",
        5,
    );
}

#[test]
fn directive_not_allowed_here() {
    for (name, text, directive, line) in [
        (
            "listen-in-http",
            format!("{EV}http {{\n    listen 80;\n}}\n"),
            "listen",
            3,
        ),
        (
            "wc-in-http",
            format!("{EV}http {{\n    worker_connections 10;\n}}\n"),
            "worker_connections",
            3,
        ),
        (
            "tp-in-http",
            format!("{EV}http {{\n    thread_pool x threads=1;\n}}\n"),
            "thread_pool",
            3,
        ),
        (
            "wc-in-main",
            "worker_connections 10;\nevents {}\n".to_string(),
            "worker_connections",
            1,
        ),
        (
            "root-in-events",
            "events {\n    root /x;\n}\n".to_string(),
            "root",
            2,
        ),
        (
            "server-in-server",
            server("        server {\n        }\n"),
            "server",
            5,
        ),
        (
            "alias-in-server",
            server("        alias /x/;\n"),
            "alias",
            5,
        ),
        (
            "proxy-pass-in-server",
            server("        proxy_pass http://b;\n"),
            "proxy_pass",
            5,
        ),
    ] {
        emerg(
            name,
            &text,
            &format!("\"{directive}\" directive is not allowed here"),
            line,
        );
    }
}

#[test]
fn invalid_number_of_arguments() {
    for (name, text, directive, line) in [
        (
            "wp-none",
            format!("{EV}worker_processes;\n"),
            "worker_processes",
            2,
        ),
        (
            "wp-two",
            format!("{EV}worker_processes 1 2;\n"),
            "worker_processes",
            2,
        ),
        ("events-arg", "events x {\n}\n".to_string(), "events", 1),
        (
            "location-none",
            server("        location {\n        }\n"),
            "location",
            5,
        ),
        ("root-two", server("        root /a /b;\n"), "root", 5),
        ("include-two", format!("{EV}include a b;\n"), "include", 2),
    ] {
        emerg(
            name,
            &text,
            &format!("invalid number of arguments in \"{directive}\" directive"),
            line,
        );
    }
}

/// Values are refused in nginx's words: its size, time and number slots say
/// `"x" directive invalid value` (or `invalid number`), flags name the value.
#[test]
fn invalid_values() {
    for (name, text, message, line) in [
        (
            "size",
            format!("{EV}http {{\n    sendfile_max_chunk 5x;\n}}\n"),
            "\"sendfile_max_chunk\" directive invalid value",
            3,
        ),
        (
            "time",
            format!("{EV}http {{\n    keepalive_timeout 5x;\n}}\n"),
            "\"keepalive_timeout\" directive invalid value",
            3,
        ),
        (
            "time-header",
            format!("{EV}http {{\n    keepalive_timeout 5s x;\n}}\n"),
            "\"keepalive_timeout\" directive invalid value",
            3,
        ),
        // A millisecond slot takes no years or months, as nginx's.
        (
            "msec-year",
            format!("{EV}http {{\n    send_timeout 1y;\n}}\n"),
            "\"send_timeout\" directive invalid value",
            3,
        ),
        (
            "number",
            format!("{EV}http {{\n    keepalive_requests many;\n}}\n"),
            "\"keepalive_requests\" directive invalid number",
            3,
        ),
        (
            "bufs",
            format!("{EV}http {{\n    large_client_header_buffers 0 8k;\n}}\n"),
            "\"large_client_header_buffers\" directive invalid value",
            3,
        ),
        (
            "time-order",
            format!("{EV}http {{\n    send_timeout 30m 1h;\n}}\n"),
            "invalid number of arguments in \"send_timeout\" directive",
            3,
        ),
        (
            "time-units-order",
            format!("{EV}http {{\n    send_timeout \"30m 1h\";\n}}\n"),
            "\"send_timeout\" directive invalid value",
            3,
        ),
        (
            "wp-word",
            format!("{EV}worker_processes abc;\n"),
            "\"worker_processes\" directive invalid value",
            2,
        ),
        // nginx accepts 0 workers (and then serves nothing); nowait refuses.
        (
            "wp-zero",
            format!("{EV}worker_processes 0;\n"),
            "\"worker_processes\" directive invalid value",
            2,
        ),
        (
            "wc-word",
            "events {\n    worker_connections abc;\n}\n".to_string(),
            "invalid number \"abc\"",
            2,
        ),
        (
            "flag",
            format!("{EV}http {{\n    sendfile yes;\n}}\n"),
            "invalid value \"yes\" in \"sendfile\" directive, it must be \"on\" or \"off\"",
            3,
        ),
        (
            "flag-events",
            "events {\n    accept_mutex 1;\n}\n".to_string(),
            "invalid value \"1\" in \"accept_mutex\" directive, it must be \"on\" or \"off\"",
            2,
        ),
        (
            "daemon",
            format!("daemon no;\n{EV}"),
            "invalid value \"no\" in \"daemon\" directive, it must be \"on\" or \"off\"",
            1,
        ),
    ] {
        emerg(name, &text, message, line);
    }
}

#[test]
fn flags_are_case_insensitive_as_in_nginx() {
    ok(
        "flag-case",
        &format!("daemon OFF;\n{EV}http {{\n    sendfile On;\n}}\n"),
    );
}

#[test]
fn times_in_milliseconds_where_nginx_takes_them() {
    ok(
        "ms",
        &format!("{EV}http {{\n    send_timeout 500ms;\n    keepalive_timeout \"1m 30s\";\n}}\n"),
    );
}

#[test]
fn unbalanced_braces_and_terminators() {
    for (name, text, message, line) in [
        ("rbrace", format!("{EV}}}\n"), "unexpected \"}\"", 2),
        (
            "rbrace-after-words",
            format!("{EV}worker_processes 1 }}\n"),
            "unexpected \"}\"",
            2,
        ),
        (
            "eof-in-block",
            "events {\n".to_string(),
            "unexpected end of file, expecting \"}\"",
            2,
        ),
        (
            "eof-in-nested-block",
            format!("{EV}http {{\n    server {{\n\n# the end\n"),
            "unexpected end of file, expecting \"}\"",
            6,
        ),
        (
            "eof-in-statement",
            format!("{EV}worker_processes 1"),
            "unexpected end of file, expecting \";\" or \"}\"",
            2,
        ),
        (
            "eof-in-quotes",
            format!("{EV}worker_processes \"1\n\n"),
            "unexpected end of file, expecting \";\" or \"}\"",
            4,
        ),
        (
            "eof-after-backslash",
            format!("{EV}worker_processes 1\\"),
            "unexpected end of file, expecting \";\" or \"}\"",
            2,
        ),
        ("lbrace", format!("{EV}{{\n}}\n"), "unexpected \"{\"", 2),
        ("semicolon", format!("{EV};\n"), "unexpected \";\"", 2),
        (
            "semicolon-in-location",
            server("        location / { ; }\n"),
            "unexpected \";\"",
            5,
        ),
        (
            "after-quote",
            format!("{EV}worker_processes \"1\"b;\n"),
            "unexpected \"b\"",
            2,
        ),
        (
            "comment-after-quote",
            format!("{EV}worker_processes \"1\"#x\n;\n"),
            "unexpected \"#\"",
            2,
        ),
        (
            "not-terminated",
            format!("{EV}worker_processes 1 {{\n}}\n"),
            "directive \"worker_processes\" is not terminated by \";\"",
            2,
        ),
        // An unquoted `{` in a regular expression opens a block for nginx's
        // reader: the directive is refused there, before the rest of the
        // file is read as that block.
        (
            "regex-brace",
            server("        rewrite ^/(\\d{3})$ /x;\n"),
            "directive \"rewrite\" is not terminated by \";\"",
            5,
        ),
        (
            "no-opening",
            "events;\n".to_string(),
            "directive \"events\" has no opening \"{\"",
            1,
        ),
        (
            "no-opening-location",
            server("        location /x;\n"),
            "directive \"location\" has no opening \"{\"",
            5,
        ),
    ] {
        emerg(name, &text, message, line);
    }
}

/// nginx reports the line where the `;` or `{` was read.
#[test]
fn multi_line_statements_report_the_terminator_line() {
    emerg(
        "multi-line-semicolon",
        &format!("{EV}worker_processes\n    abc\n    ;\n"),
        "\"worker_processes\" directive invalid value",
        4,
    );
    emerg(
        "multi-line-block",
        &format!("{EV}http\n\n{{\n    listen 80;\n}}\n"),
        "\"listen\" directive is not allowed here",
        5,
    );
    emerg(
        "multi-line-duplicate-block",
        &format!("{EV}events\n{{\n}}\n"),
        "\"events\" directive is duplicate",
        3,
    );
    // CR LF line ends count as one line each.
    emerg(
        "crlf",
        "events {}\r\nhttp {\r\n    bogus;\r\n}\r\n",
        "unknown directive \"bogus\"",
        3,
    );
}

#[test]
fn unknown_thread_pool() {
    emerg(
        "pool-x",
        &server("        location / {\n            aio threads=x;\n        }\n"),
        "unknown thread pool \"x\"",
        6,
    );
    // `aio threads;` uses the implicit pool "default", declared or not.
    ok(
        "pool-default",
        &server("        location / {\n            aio threads;\n        }\n"),
    );
    ok(
        "pool-default-named",
        &server("        location / {\n            aio threads=default;\n        }\n"),
    );
    ok(
        "pool-declared",
        &format!(
            "thread_pool one threads=128 max_queue=0;\n{}",
            server("        aio threads=one;\n")
        ),
    );
}

/// A pool chosen by a `split_clients` variable is checked for each value the
/// variable can take. nginx checks it per request (a 500 then); nowait at
/// load time, a deliberate difference.
#[test]
fn unknown_thread_pool_from_split_clients() {
    let text = format!(
        "thread_pool pool_1 threads=1;\n\
         thread_pool pool_2 threads=1;\n\
         thread_pool pool_3 threads=1;\n\
         {EV}\
         http {{\n\
         \x20   split_clients $request_uri $disk {{\n\
         \x20       25% 1;\n\
         \x20       25% 2;\n\
         \x20       25% 3;\n\
         \x20       * 4;\n\
         \x20   }}\n\
         \x20   server {{\n\
         \x20       listen 127.0.0.1:18080;\n\
         \x20       aio threads=pool_$disk;\n\
         \x20   }}\n\
         }}\n"
    );
    emerg("pool-4", &text, "unknown thread pool \"pool_4\"", 14);
    ok(
        "pool-1-to-4",
        &format!("thread_pool pool_4 threads=1;\n{text}"),
    );
}

#[test]
fn duplicates() {
    emerg(
        "dup-location",
        &server("        location /x {\n        }\n        location /x {\n        }\n"),
        "duplicate location \"/x\"",
        7,
    );
    emerg(
        "dup-exact-location",
        &server("        location = /x {\n        }\n        location =/x {\n        }\n"),
        "duplicate location \"/x\"",
        7,
    );
    emerg(
        "dup-root",
        &server("        root /a;\n        root /b;\n"),
        "\"root\" directive is duplicate",
        6,
    );
    emerg(
        "dup-alias-root",
        &server("        location / {\n            root /a;\n            alias /b/;\n        }\n"),
        "\"alias\" directive is duplicate, \"root\" directive was specified earlier",
        7,
    );
    emerg(
        "dup-events",
        &format!("{EV}{EV}"),
        "\"events\" directive is duplicate",
        2,
    );
    emerg(
        "dup-pool",
        &format!("thread_pool x threads=1;\nthread_pool x threads=2;\n{EV}"),
        "duplicate thread pool \"x\"",
        2,
    );
    emerg(
        "dup-log-format",
        &format!("{EV}http {{\n    log_format a x;\n    log_format a y;\n}}\n"),
        "duplicate \"log_format\" name \"a\"",
        4,
    );
}

/// `deferred`, `fastopen=`, `ipv6only=` and `so_keepalive=` are read as
/// nginx reads them, with its words for a bad value; `accept_filter=`
/// (BSD's) is said at `[emerg]` and ignored, as nginx on Linux does.
#[test]
fn listen_socket_parameters() {
    let listen = |p: &str| {
        format!("{EV}http {{\n    server {{\n        listen 127.0.0.1:18080 {p};\n    }}\n}}\n")
    };
    for p in [
        "deferred",
        "fastopen=0",
        "fastopen=256",
        "ipv6only=off",
        "so_keepalive=on",
        "so_keepalive=off",
        "so_keepalive=30m::10",
        "so_keepalive=:5s:",
        "deferred fastopen=16 so_keepalive=1m:10s:3 backlog=100",
    ] {
        ok(&format!("listen-ok-{p}"), &listen(p));
    }
    for (p, message) in [
        ("fastopen=-1", "invalid fastopen \"fastopen=-1\""),
        ("fastopen", "invalid parameter \"fastopen\""),
        ("deferred=1", "invalid parameter \"deferred=1\""),
        ("ipv6only=oz", "invalid ipv6only flags \"oz\""),
        ("ipv6only=x", "invalid parameter \"ipv6only=x\""),
        ("so_keepalive", "invalid parameter \"so_keepalive\""),
        (
            "so_keepalive=1:2:3:4",
            "invalid so_keepalive value: \"1:2:3:4\"",
        ),
        (
            "so_keepalive=0:0:0",
            "invalid so_keepalive value: \"0:0:0\"",
        ),
        ("so_keepalive=x::", "invalid so_keepalive value: \"x::\""),
        ("backlog=0", "invalid backlog \"backlog=0\""),
        ("rcvbuf=abc", "invalid rcvbuf \"rcvbuf=abc\""),
        ("setfib=1", "invalid parameter \"setfib=1\""),
    ] {
        emerg(&format!("listen-bad-{p}"), &listen(p), message, 4);
    }
    passes_saying(
        "accept-filter",
        &listen("accept_filter=dataready"),
        "[emerg] accept filters \"accept_filter=dataready\" are not supported on this platform, ignored",
        4,
    );
    // Each of them is an option of the socket: written twice for one
    // address, nginx's duplicate check.
    let two = format!(
        "{EV}http {{\n    server {{\n        listen 127.0.0.1:18080 deferred;\n    }}\n    server {{\n        listen 127.0.0.1:18080 fastopen=3;\n    }}\n}}\n"
    );
    emerg(
        "listen-dup-deferred",
        &two,
        "duplicate listen options for 127.0.0.1:18080",
        7,
    );
}

/// `0 worker_connections are not enough for 1 listening sockets`, as nginx
/// (one connection per listening socket and one more), and a named
/// location written twice is taken, as nginx takes it.
#[test]
fn worker_connections_and_named_locations_as_nginx() {
    let d = Dir::with(
        "few-connections",
        &[(
            "nowait.conf",
            "events {\n    worker_connections 1;\n}\nhttp {\n    server {\n        listen 127.0.0.1:18080;\n    }\n}\n",
        )],
    );
    let (code, stderr) = d.test(&[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("[emerg] 1 worker_connections are not enough for 1 listening sockets\n"),
        "{stderr}"
    );
    ok(
        "enough-connections",
        "events {\n    worker_connections 2;\n}\nhttp {\n    server {\n        listen 127.0.0.1:18080;\n    }\n}\n",
    );
    emerg(
        "connections-negative",
        "events {\n    worker_connections -1;\n}\n",
        "invalid number \"-1\"",
        2,
    );
    ok(
        "mutex-delay",
        "events {\n    accept_mutex on;\n    accept_mutex_delay 100ms;\n}\n",
    );
    emerg(
        "mutex-delay-year",
        "events {\n    accept_mutex_delay 1y;\n}\n",
        "\"accept_mutex_delay\" directive invalid value",
        2,
    );
    emerg(
        "mutex-delay-twice",
        "events {\n    accept_mutex_delay 1s;\n    accept_mutex_delay 2s;\n}\n",
        "\"accept_mutex_delay\" directive is duplicate",
        3,
    );
    emerg(
        "error-page-no-code",
        &server("        error_page =200 /x;\n"),
        "invalid value \"=200\"",
        5,
    );
    // `off` at a level wins over the logs it also names, said in any order.
    ok(
        "access-log-off-and-file",
        &server(
            "        access_log off;\n        access_log logs/a.log;\n        access_log off;\n",
        ),
    );
    passes_saying(
        "index-absolute-middle",
        &server("        index a /b c;\n"),
        "[warn] only the last index in \"index\" directive should be absolute",
        5,
    );
    ok(
        "named-twice",
        &server("        location @a { return 200 a; }\n        location @a { return 200 b; }\n"),
    );
}

#[test]
fn duplicate_listens() {
    let two_servers = |a: &str, b: &str| {
        format!(
            "{EV}http {{\n    server {{\n        listen {a}; server_name a;\n    }}\n    server {{\n        listen {b}; server_name b;\n    }}\n}}\n"
        )
    };
    emerg(
        "dup-listen-options",
        &two_servers("127.0.0.1:18080 backlog=10", "127.0.0.1:18080 backlog=20"),
        "duplicate listen options for 127.0.0.1:18080",
        7,
    );
    emerg(
        "dup-default-server",
        &two_servers(
            "127.0.0.1:18080 default_server",
            "127.0.0.1:18080 default_server",
        ),
        "a duplicate default server for 127.0.0.1:18080",
        7,
    );
    // Two servers of one address without names both claim "", and nginx
    // warns that the second one's is ignored.
    let d = Dir::with(
        "conflicting-empty-name",
        &[(
            "nowait.conf",
            &format!(
                "{EV}http {{\n    server {{\n        listen 127.0.0.1:18080;\n    }}\n    server {{\n        listen 127.0.0.1:18080;\n        server_name A b;\n    }}\n    server {{\n        listen 127.0.0.1:18080;\n        server_name a ~^b;\n    }}\n}}\n"
            ),
        )],
    );
    let (code, stderr) = d.test(&[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.starts_with(
            "nowait: [warn] conflicting server name \"a\" on 127.0.0.1:18080, ignored\n"
        ),
        "{stderr}"
    );
    // Options once, on either server, are fine; so is one default.
    ok(
        "listen-options-once",
        &two_servers(
            "127.0.0.1:18080 default_server reuseport",
            "127.0.0.1:18080",
        ),
    );
}

/// Regression: nowait said `duplicate listen …`; nginx `a duplicate listen …`.
#[test]
fn regression_a_duplicate_listen_in_one_server() {
    emerg(
        "dup-listen",
        &server("        listen 127.0.0.1:18080;\n"),
        "a duplicate listen 127.0.0.1:18080",
        5,
    );
    emerg(
        "dup-listen-port",
        &format!(
            "{EV}http {{\n    server {{\n        listen 18080;\n        listen *:18080;\n    }}\n}}\n"
        ),
        "a duplicate listen 0.0.0.0:18080",
        5,
    );
    emerg(
        "dup-listen-v6",
        &format!(
            "{EV}http {{\n    server {{\n        listen [::1]:18080;\n        listen [::1]:18080;\n    }}\n}}\n"
        ),
        "a duplicate listen [::1]:18080",
        5,
    );
}

/// nginx reports an unknown variable without a location (it finds it after
/// reading the whole file); nowait names the line that uses it.
#[test]
fn unknown_variable() {
    emerg(
        "unknown-var",
        &server("        root /x/$foo;\n"),
        "unknown \"foo\" variable",
        5,
    );
    emerg(
        "unclosed-var",
        &server("        root /a/${foo;\n"),
        "the closing bracket in \"foo\" variable is missing",
        5,
    );
    // A variable defined by split_clients after its first use is known.
    ok(
        "var-defined-later",
        &format!(
            "{EV}http {{\n    server {{\n        listen 127.0.0.1:18080;\n        root /x/$v;\n    }}\n    split_clients $uri $v {{\n        * a;\n    }}\n}}\n"
        ),
    );
}

#[test]
fn unknown_log_format() {
    emerg(
        "unknown-log-format",
        &server("        access_log logs/a.log x;\n"),
        "unknown log format \"x\"",
        5,
    );
    ok(
        "combined-log-format",
        &server("        access_log logs/a.log combined;\n"),
    );
}

#[test]
fn thread_pool_parameters() {
    for (name, line1, message) in [
        (
            "threads-zero",
            "thread_pool x threads=0;",
            "invalid threads value \"threads=0\"",
        ),
        (
            "threads-word",
            "thread_pool x threads=a;",
            "invalid threads value \"threads=a\"",
        ),
        (
            "max-queue-word",
            "thread_pool x threads=1 max_queue=a;",
            "invalid max_queue value \"max_queue=a\"",
        ),
        (
            "no-threads",
            "thread_pool x max_queue=1;",
            "\"thread_pool\" must have \"threads\" parameter",
        ),
        // nginx ignores an unknown parameter; nowait refuses it.
        (
            "unknown-param",
            "thread_pool x threads=1 foo=2;",
            "invalid parameter \"foo=2\"",
        ),
    ] {
        emerg(name, &format!("{line1}\n{EV}"), message, 1);
    }
    ok(
        "max-queue-zero",
        &format!("thread_pool x threads=1 max_queue=0;\n{EV}"),
    );
}

/// Regression: a configuration with no `events` block passed `-t`; nginx
/// requires the block, and says so without a location.
#[test]
fn regression_no_events_section() {
    for (name, text) in [
        ("no-events", "worker_processes 1;\n"),
        ("empty", ""),
        ("comments-only", "# nothing\n"),
    ] {
        let d = Dir::with(name, &[("nowait.conf", text)]);
        let (code, stderr) = d.test(&[]);
        assert_eq!(code, Some(1), "{name}");
        assert_eq!(
            stderr,
            failed(
                &d,
                &["[emerg] no \"events\" section in configuration".into()]
            ),
            "{name}"
        );
    }
}

/// Regression: a block inside `types` said `unexpected "{" after "text/html"`;
/// nginx says `unexpected "{"`.
#[test]
fn regression_block_inside_types() {
    emerg(
        "types-block",
        &format!("{EV}http {{\n    types {{\n        text/html {{ }}\n    }}\n}}\n"),
        "unexpected \"{\"",
        4,
    );
}

#[test]
fn error_inside_an_included_file_names_that_file() {
    let d = Dir::with(
        "include-error",
        &[
            (
                "nowait.conf",
                "events {}\nhttp {\n    include inc/a.conf;\n}\n",
            ),
            ("inc/a.conf", "# a\n\nsendfile maybe;\n"),
        ],
    );
    let (code, stderr) = d.test(&[]);
    assert_eq!(code, Some(1));
    let want = format!(
        "[emerg] invalid value \"maybe\" in \"sendfile\" directive, it must be \"on\" or \"off\" in {}:3",
        d.file("inc/a.conf")
    );
    assert_eq!(stderr, failed(&d, &[want]));
}

#[test]
fn missing_include_names_the_includer() {
    let d = Dir::with(
        "include-missing",
        &[(
            "nowait.conf",
            "events {}\nhttp {\n    include nope.conf;\n}\n",
        )],
    );
    let (code, stderr) = d.test(&[]);
    assert_eq!(code, Some(1));
    let want = format!(
        "[emerg] open() \"{}\" failed (2: No such file or directory) in {}:3",
        d.file("nope.conf"),
        d.file("nowait.conf")
    );
    assert_eq!(stderr, failed(&d, &[want]));
}

#[test]
fn missing_nested_include_names_the_nested_includer() {
    let d = Dir::with(
        "include-nested-missing",
        &[
            ("nowait.conf", "events {}\ninclude a.conf;\n"),
            ("a.conf", "\n\ninclude b.conf;\n"),
        ],
    );
    let (_, stderr) = d.test(&[]);
    let want = format!(
        "[emerg] open() \"{}\" failed (2: No such file or directory) in {}:3",
        d.file("b.conf"),
        d.file("a.conf")
    );
    assert_eq!(stderr, failed(&d, &[want]));
}

#[test]
fn glob_include_reads_files_in_sorted_order() {
    let d = Dir::with(
        "include-glob",
        &[
            (
                "nowait.conf",
                "events {}\nhttp {\n    include conf.d/*.conf;\n}\n",
            ),
            ("conf.d/b.conf", "bogus_b;\n"),
            ("conf.d/a.conf", "\nbogus_a;\n"),
            ("conf.d/c.txt", "bogus_c;\n"),
        ],
    );
    let (code, stderr) = d.test(&[]);
    assert_eq!(code, Some(1));
    // nginx stops at the first; nowait reports both, in file order.
    let want = [
        format!(
            "[emerg] unknown directive \"bogus_a\" in {}:2",
            d.file("conf.d/a.conf")
        ),
        format!(
            "[emerg] unknown directive \"bogus_b\" in {}:1",
            d.file("conf.d/b.conf")
        ),
    ];
    assert_eq!(stderr, failed(&d, &want));

    // A glob matching nothing is not an error, as in nginx.
    ok("include-glob-empty", &format!("{EV}include none/*.conf;\n"));
}

#[test]
fn dump_lists_included_files_in_order() {
    let d = Dir::with(
        "include-dump",
        &[
            (
                "nowait.conf",
                "events {}\nhttp {\n    include conf.d/*.conf;\n}\n",
            ),
            ("conf.d/b.conf", "sendfile on;\n"),
            ("conf.d/a.conf", "default_type text/html;\n"),
        ],
    );
    let out = Command::new(env!("CARGO_BIN_EXE_nowait"))
        .args([
            "-T",
            "-p",
            d.0.to_str().unwrap(),
            "-c",
            &d.file("nowait.conf"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout,
        format!(
            "# configuration file {}:\nevents {{}}\nhttp {{\n    include conf.d/*.conf;\n}}\n\n\
             # configuration file {}:\ndefault_type text/html;\n\n\
             # configuration file {}:\nsendfile on;\n\n",
            d.file("nowait.conf"),
            d.file("conf.d/a.conf"),
            d.file("conf.d/b.conf"),
        )
    );
}

/// Semantic errors do not stop the load: every one is reported, in order,
/// each at its own line (nginx stops at the first).
#[test]
fn every_error_is_reported() {
    let text = format!(
        "{EV}http {{\n\
         \x20   sendfile yes;\n\
         \x20   keepalive_timeout 5x;\n\
         \x20   server {{\n\
         \x20       listen 127.0.0.1:18080;\n\
         \x20       root /x/$foo;\n\
         \x20       lisen 80;\n\
         \x20       location / {{ aio threads=nope; }}\n\
         \x20       location / {{ }}\n\
         \x20   }}\n\
         }}\n"
    );
    let d = Dir::with("many", &[("nowait.conf", &text)]);
    let (code, stderr) = d.test(&[]);
    assert_eq!(code, Some(1));
    let f = d.file("nowait.conf");
    let want: Vec<String> = [
        (
            "invalid value \"yes\" in \"sendfile\" directive, it must be \"on\" or \"off\"",
            3,
        ),
        ("\"keepalive_timeout\" directive invalid value", 4),
        ("unknown directive \"lisen\"", 8),
        ("duplicate location \"/\"", 10),
        ("unknown \"foo\" variable", 7),
        ("unknown thread pool \"nope\"", 9),
    ]
    .iter()
    .map(|(m, l)| format!("[emerg] {m} in {f}:{l}"))
    .collect();
    assert_eq!(stderr, failed(&d, &want));
}

#[test]
fn warnings_do_not_fail_the_test() {
    let text = format!(
        "{EV}http {{\n    types {{\n        text/html html;\n        text/plain html;\n    }}\n}}\n"
    );
    let d = Dir::with("warn", &[("nowait.conf", &text)]);
    let (code, stderr) = d.test(&[]);
    assert_eq!(code, Some(0), "{stderr}");
    let f = d.file("nowait.conf");
    assert_eq!(
        stderr,
        format!(
            "nowait: [warn] duplicate extension \"html\", content type: \"text/plain\", \
             previous content type: \"text/html\" in {f}:5\n\
             nowait: the configuration file {f} syntax is ok\n\
             nowait: configuration file {f} test is successful\n"
        )
    );
}

#[test]
fn warnings_are_printed_with_errors() {
    let text = format!(
        "{EV}http {{\n    types {{\n        a/b x;\n        c/d x;\n    }}\n    bogus;\n}}\n"
    );
    let d = Dir::with("warn-and-error", &[("nowait.conf", &text)]);
    let (code, stderr) = d.test(&[]);
    assert_eq!(code, Some(1));
    let f = d.file("nowait.conf");
    let want = [
        format!(
            "[warn] duplicate extension \"x\", content type: \"c/d\", previous content type: \"a/b\" in {f}:5"
        ),
        format!("[emerg] unknown directive \"bogus\" in {f}:7"),
    ];
    assert_eq!(stderr, failed(&d, &want));
}

/// Regression: `-g` text without its `;` said "unexpected end of file, …";
/// blocks in `-g` were accepted. nginx's words for both.
#[test]
fn regression_command_line_parameter_errors() {
    let d = Dir::with("globals", &[("nowait.conf", EV)]);
    for (g, message) in [
        (
            "worker_processes 2",
            "unexpected end of parameter, expecting \";\"",
        ),
        (
            "http { }",
            "block directives are not supported in -g option",
        ),
        ("bogus;", "unknown directive \"bogus\""),
        ("listen 80;", "\"listen\" directive is not allowed here"),
        (
            "worker_processes 2 3;",
            "invalid number of arguments in \"worker_processes\" directive",
        ),
    ] {
        let (code, stderr) = d.test(&["-g", g]);
        assert_eq!(code, Some(1), "{g}");
        assert_eq!(
            stderr,
            failed(&d, &[format!("[emerg] {message} in command line")]),
            "{g}"
        );
    }
}

#[test]
fn relative_paths_resolve_against_the_prefix() {
    // `include` is relative to the configuration file's directory; a missing
    // file is reported there even when the prefix differs.
    let d = Dir::with(
        "relative",
        &[
            ("conf/nowait.conf", "events {}\ninclude extra.conf;\n"),
            ("conf/extra.conf", "bogus;\n"),
        ],
    );
    let conf = d.file("conf/nowait.conf");
    let out = Command::new(env!("CARGO_BIN_EXE_nowait"))
        .args(["-t", "-p", d.0.to_str().unwrap(), "-c", "conf/nowait.conf"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr,
        format!(
            "nowait: [emerg] unknown directive \"bogus\" in {}:1\n\
             nowait: configuration file {conf} test failed\n",
            d.file("conf/extra.conf")
        )
    );
}

/// Regression: 100 000 nested blocks overflowed the stack and aborted the
/// process; now an error at the first block too deep.
#[test]
fn regression_deep_nesting_is_an_error() {
    let text = format!("{EV}{}", "a {\n".repeat(100_000));
    emerg(
        "deep-nesting",
        &text,
        "too deep nesting of blocks (more than 64 levels)",
        66,
    );
}

/// Regression: a pool name made of several `split_clients` variables was
/// checked by spelling out every combination, 60^6 names here: the load
/// never finished. Past 4096 combinations the name is left to the request.
#[test]
fn regression_pool_name_combinations_are_bounded() {
    let values: String = (0..60).map(|i| format!("        1% v{i};\n")).collect();
    let text = format!(
        "{EV}http {{\n    split_clients $uri $a {{\n{values}    }}\n    server {{\n        listen 127.0.0.1:18080;\n        aio threads=$a$a$a$a$a$a;\n    }}\n}}\n"
    );
    ok("pool-combinations", &text);
    // Few enough combinations are still checked at load time, every one.
    let text = format!(
        "thread_pool xy threads=1;\nthread_pool yx threads=1;\nthread_pool yy threads=1;\n\
         {EV}http {{\n    split_clients $uri $a {{\n        50% x;\n        * y;\n    }}\n    \
         server {{\n        listen 127.0.0.1:18080;\n        aio threads=$a$a;\n    }}\n}}\n"
    );
    emerg(
        "pool-combinations-small",
        &text,
        "unknown thread pool \"xx\"",
        12,
    );
}

#[test]
fn loop_turn_budget_takes_microseconds_milliseconds_or_off() {
    for (i, v) in ["250us", "1ms", "off", "1s"].iter().enumerate() {
        ok(
            &format!("turn-budget-{i}"),
            &format!("events {{\n    loop_turn_budget {v};\n}}\n"),
        );
    }
    for (i, v) in ["0", "0us", "2s", "fast", "-5us"].iter().enumerate() {
        emerg(
            &format!("turn-budget-bad-{i}"),
            &format!("events {{\n    loop_turn_budget {v};\n}}\n"),
            "\"loop_turn_budget\" directive invalid value",
            2,
        );
    }
}

#[test]
fn env_in_main_only_and_with_a_name() {
    ok(
        "env-ok",
        &format!("env TZ;\nenv PATH;\nenv APP=1;\nenv EMPTY=;\n{EV}"),
    );
    emerg(
        "env-in-http",
        &format!("{EV}http {{\n    env TZ;\n}}\n"),
        "\"env\" directive is not allowed here",
        3,
    );
    emerg(
        "env-no-name",
        &format!("env =x;\n{EV}"),
        "invalid environment variable \"=x\"",
        1,
    );
    emerg(
        "env-args",
        &format!("env A B;\n{EV}"),
        "invalid number of arguments in \"env\" directive",
        1,
    );
}

#[test]
fn directio_values() {
    ok(
        "directio-ok",
        &server(
            "        directio 4m;\n        directio_alignment 4k;\n        location /a { directio off; }\n",
        ),
    );
    emerg(
        "directio-bad",
        &server("        directio big;\n"),
        "\"directio\" directive invalid value",
        5,
    );
    emerg(
        "directio-dup",
        &server("        directio 1m;\n        directio off;\n"),
        "\"directio\" directive is duplicate",
        6,
    );
    // O_DIRECT aligns to a block size, a power of two (nginx takes any
    // offset and fails each read of such a file).
    emerg(
        "directio-alignment",
        &server("        directio_alignment 500;\n"),
        "\"directio_alignment\" directive invalid value",
        5,
    );
}

#[test]
fn secure_link_secret_is_not_mixed_with_the_new_form() {
    // Reported where the http block ends, as nginx's merge does.
    emerg(
        "secure-link-mixed",
        &server("        location / { secure_link_secret s; secure_link $arg_h; }\n"),
        "\"secure_link_secret\" cannot be mixed with \"secure_link\" and \"secure_link_md5\"",
        7,
    );
    ok(
        "secure-link-levels",
        &server(
            "        secure_link_secret s;\n        location / { secure_link $arg_h; secure_link_md5 x; }\n",
        ),
    );
}
