//! Black-box tests of `log_subrequest`: with it on in a subrequest's
//! location, the subrequest (SSI's `include`, the addition module's
//! `add_before_body` / `add_after_body`) is written to that location's
//! access logs, before its parent and in output order, with its own `$uri`,
//! `$args` and `$status`, the main request's `$request` and
//! `$request_uri`, no `$request_length`, and the connection's bytes sent
//! so far; with it off (the default) only the main request is logged.
//!
//! They use [`Server::tested`]: `NOWAIT_TEST_NGINX=1` runs them against
//! nginx, which must pass them all.

mod common;

use common::client::get;
use common::wait::read_text;
use common::{Conf, Server, TempDir, body};

/// The fields each test line shows, `|` between them.
const FORMAT: &str = "log_format t \"$uri|$args|$request_uri|$request|$status|\
                      $request_length|$request_completion|$pipe|$sent_http_content_length\";";

/// A document root with `files`, served with `http` in the http block
/// and `server` in the server block; returns the server, the root and
/// the directory the logs go to (`LOGS` in `http` and `server`).
fn start(files: &[(&str, &str)], http: &str, server: &str) -> (Server, TempDir, TempDir) {
    let root = TempDir::new("log-subrequest");
    for (name, text) in files {
        let path = root.path().join(name);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
            common::tmp::set_mode(dir, 0o755);
        }
        std::fs::write(&path, text).unwrap();
    }
    let logs = TempDir::new("log-subrequest-logs");
    // The workers may run as another user than the test.
    common::tmp::set_mode(logs.path(), 0o777);
    let dir = logs.path().display().to_string();
    let conf = Conf::http(&format!(
        "{}\nserver {{\n listen 127.0.0.1:{{port}};\n server_name localhost;\n root {{root}};\n{}\n}}\n",
        http.replace("LOGS", &dir),
        server.replace("LOGS", &dir)
    ))
    .root(root.path())
    .render();
    (Server::tested(&conf), root, logs)
}

/// The lines of `name` in `logs`, once the server has stopped.
fn lines(logs: &TempDir, name: &str) -> Vec<String> {
    read_text(&logs.path().join(name))
        .lines()
        .map(str::to_string)
        .collect()
}

const PAGE: &str = "A<!--#include virtual=\"/off\" -->B<!--#include virtual=\"/n2.html\" -->\
                    C<!--#include virtual=\"/sub/x.html\" -->D<!--#include virtual=\"/ret?k=v\" set=\"v\" -->\
                    E<!--#include virtual=\"/nf\" -->F<!--#include virtual=\"/ret?w\" wait=\"yes\" -->G";

const LOCATIONS: &str = "access_log LOGS/t.log t;\n\
                         location / { ssi on; }\n\
                         location /ret { return 200 \"ret\"; }\n\
                         location /off { log_subrequest off; return 200 \"off\"; }\n\
                         location /sub/ { access_log LOGS/sub.log s; }";

#[test]
fn subrequests_are_logged_before_their_parent_in_output_order() {
    let (s, _root, logs) = start(
        &[
            ("p.html", PAGE),
            ("n2.html", "n2<!--#include virtual=\"/ret?in=n2\" -->"),
            ("sub/x.html", "SL"),
        ],
        &format!(
            "{FORMAT}\nlog_format s \"$uri|$status|$sent_http_content_length\";\nlog_subrequest on;"
        ),
        LOCATIONS,
    );
    let r = get(s.port(), "/p.html");
    assert_eq!(r.status, 200);
    let text = body(&r);
    assert!(
        text.starts_with("AoffBn2retCSLDE<html>") && text.ends_with("</html>\r\nFretG"),
        "{text}"
    );
    drop(s);
    let main = lines(&logs, "t.log");
    // The included page's own include first, then the page; `/off` says
    // `log_subrequest off`; `/sub/` logs to its own file; the output kept
    // in memory (`set=`) in its place. A subrequest read no request
    // (`$request_length` 0), is never complete, is never pipelined.
    // `$sent_http_content_length` is cached for the whole tree where the
    // first line read it (nginx's `sr->variables = r->variables`): even
    // the main request's chunked response shows the first one's 3.
    let sub = |uri: &str, args: &str, status: u16| {
        format!("{uri}|{args}|/p.html|GET /p.html HTTP/1.1|{status}|0||.|3")
    };
    assert_eq!(main.len(), 6, "{main:#?}");
    assert_eq!(main[0], sub("/ret", "in=n2", 200));
    assert_eq!(main[1], sub("/n2.html", "-", 200));
    assert_eq!(main[2], sub("/ret", "k=v", 200));
    assert_eq!(main[3], sub("/nf", "-", 404));
    assert_eq!(main[4], sub("/ret", "w", 200));
    let head = main[5].split('|').collect::<Vec<_>>();
    assert_eq!(
        head[..5],
        ["/p.html", "-", "/p.html", "GET /p.html HTTP/1.1", "200"],
        "{}",
        main[5]
    );
    assert_ne!(head[5], "0", "the main request's length: {}", main[5]);
    assert_eq!(head[6..], ["", ".", "3"], "{}", main[5]);
    assert_eq!(lines(&logs, "sub.log"), ["/sub/x.html|200|3"]);
}

#[test]
fn additions_are_logged_and_nothing_is_by_default() {
    let files = [("b.html", "body"), ("before.txt", "before")];
    let server = "access_log LOGS/t.log t;\n\
                  location /ret { return 200 \"ret\"; }\n\
                  location / { add_before_body /before.txt; add_after_body /ret; }";
    let (s, _root, logs) = start(&files, &format!("{FORMAT}\nlog_subrequest on;"), server);
    assert_eq!(body(&get(s.port(), "/b.html")), "beforebodyret");
    drop(s);
    let main = lines(&logs, "t.log");
    assert_eq!(main.len(), 3, "{main:#?}");
    assert_eq!(
        main[0],
        "/before.txt|-|/b.html|GET /b.html HTTP/1.1|200|0||.|6"
    );
    assert_eq!(main[1], "/ret|-|/b.html|GET /b.html HTTP/1.1|200|0||.|6");
    assert!(main[2].starts_with("/b.html|-|/b.html|"), "{}", main[2]);

    // Off (the default): only the main request.
    let (s, _root, logs) = start(&files, FORMAT, server);
    assert_eq!(body(&get(s.port(), "/b.html")), "beforebodyret");
    drop(s);
    let main = lines(&logs, "t.log");
    assert_eq!(main.len(), 1, "{main:#?}");
    assert!(main[0].starts_with("/b.html|-|/b.html|"), "{}", main[0]);
    assert!(main[0].ends_with("|OK|.|-"), "{}", main[0]);
}

/// `$bytes_sent` and `$body_bytes_sent` of a subrequest are what the
/// connection has written for the main request when it is logged (nginx's
/// `c->sent`; a subrequest sends no head): nothing before any output went,
/// most of a large included page once it has.
#[test]
fn a_subrequests_bytes_are_the_connections_so_far() {
    const BIG: usize = 200_000;
    let big = "z".repeat(BIG);
    let (s, _root, logs) = start(
        &[
            (
                "p.html",
                "<!--#include virtual=\"/ret\" --><!--#include virtual=\"/big.txt\" -->\
                 <!--#include virtual=\"/ret\" -->",
            ),
            ("big.txt", &big),
        ],
        "log_format b \"$uri $bytes_sent $body_bytes_sent\";\nlog_subrequest on;",
        "access_log LOGS/b.log b;\nlocation / { ssi on; }\nlocation /ret { return 200 \"ret\"; }",
    );
    let r = get(s.port(), "/p.html");
    assert_eq!(r.body.len(), BIG + 6);
    drop(s);
    let main = lines(&logs, "b.log");
    let fields: Vec<(String, u64, u64)> = main
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (
                f[0].to_string(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
            )
        })
        .collect();
    let uris: Vec<&str> = fields.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(uris, ["/ret", "/big.txt", "/ret", "/p.html"], "{main:#?}");
    assert_eq!((fields[0].1, fields[0].2), (0, 0), "{main:#?}");
    let (_, sent, body_sent) = fields[2];
    assert_eq!(sent, body_sent, "a subrequest has no head: {main:#?}");
    // The big page is written (socket buffers take it on loopback) before
    // the include after it is over; at most what the main request sent.
    assert!(sent > (BIG / 2) as u64, "{main:#?}");
    assert!(sent <= fields[3].1, "{main:#?}");
}
