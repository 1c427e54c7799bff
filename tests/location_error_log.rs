//! Black-box tests: a message about a request goes to the `error_log` of
//! the location serving it (nginx sets the connection's log to the
//! location's once the location is found), with each `error_log` line's own
//! level, and a file named twice gets the message twice. Run with
//! `NOWAIT_TEST_NGINX=1` to check them against nginx.

mod common;

use std::path::Path;

use common::client::get;
use common::wait::{read_text, until};
use common::{Conf, Fixture, Server, TempDir};

/// A directory the server's workers may write to.
fn log_dir() -> TempDir {
    let d = TempDir::new("errlogs");
    common::tmp::set_mode(d.path(), 0o777);
    d
}

/// Lines of `path` holding `needle`.
fn count(path: &Path, needle: &str) -> usize {
    read_text(path)
        .lines()
        .filter(|l| l.contains(needle))
        .count()
}

/// `limit_req` refusals and `deny` refusals, messages of the access phase,
/// land in the location's logs at the levels they name; the server's log
/// gets none of them.
#[test]
fn access_phase_messages_go_to_the_location_log() {
    let f = Fixture::build();
    let d = log_dir();
    let p = |n: &str| d.path().join(n);
    let conf = Conf::http(&format!(
        "limit_req_zone $binary_remote_addr zone=one:1m rate=1r/m;
         server {{
           listen 127.0.0.1:{{port}};
           server_name localhost;
           root {{root}};
           error_log {server} info;
           location /limited {{
             limit_req zone=one;
             limit_req_log_level info;
             error_log {info} info;
             error_log {notice} notice;
           }}
           location /denied {{
             deny all;
             error_log {low} warn;
             error_log {low};
             error_log {high} emerg;
             error_log {high};
           }}
         }}",
        server = p("server.log").display(),
        info = p("info.log").display(),
        notice = p("notice.log").display(),
        low = p("low.log").display(),
        high = p("high.log").display(),
    ))
    .root(f.root())
    .render();
    let s = Server::tested(&conf);
    // The first request passes, the second is refused.
    get(s.port(), "/limited");
    assert_eq!(get(s.port(), "/limited").status, 503);
    assert_eq!(get(s.port(), "/denied").status, 403);
    let limited = "limiting requests, excess:";
    let denied = "access forbidden by rule";
    assert!(
        until(std::time::Duration::from_secs(5), || {
            count(&p("info.log"), limited) == 1
                && count(&p("low.log"), denied) == 2
                && count(&p("high.log"), denied) == 1
        }),
        "info.log: {:?}\nlow.log: {:?}\nhigh.log: {:?}",
        read_text(&p("info.log")),
        read_text(&p("low.log")),
        read_text(&p("high.log"))
    );
    assert_eq!(count(&p("notice.log"), limited), 0);
    let server_log = read_text(&p("server.log"));
    assert!(
        !server_log.contains(limited) && !server_log.contains(denied),
        "{server_log}"
    );
}

/// Requests made by [`the_error_line_is_written_before_the_connection_closes`]:
/// the writer thread usually wins the race; enough rounds make a lost one show.
const ROUNDS: usize = 100;

/// A request's error line is in the file once its client sees the
/// connection close, as nginx writes it before answering: read at once,
/// as nginx's own tests read it, [`ROUNDS`] times over.
#[test]
fn the_error_line_is_written_before_the_connection_closes() {
    let f = Fixture::build();
    let d = log_dir();
    let log = d.path().join("e.log");
    let conf = Conf::http(&format!(
        "server {{
           listen 127.0.0.1:{{port}};
           root {{root}};
           location /denied {{ deny all; error_log {}; }}
         }}",
        log.display()
    ))
    .root(f.root())
    .render();
    let s = Server::tested(&conf);
    for i in 1..=ROUNDS {
        let mut c = common::Conn::open(s.port());
        c.send(b"GET /denied HTTP/1.0\r\nHost: localhost\r\n\r\n");
        assert_eq!(c.response().expect("a response").status, 403);
        assert_eq!(
            c.wait_closed(std::time::Duration::from_secs(5)),
            common::State::Closed
        );
        assert_eq!(count(&log, "access forbidden by rule"), i);
    }
}
