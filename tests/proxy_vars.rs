//! The `$upstream_*` variables in an access log line, as nginx's
//! `ngx_http_upstream_*_variable` print them: one value per try, tries
//! joined by `, `, `-` where a try has no figure.
//!
//! Checked against nginx 1.22 with `NOWAIT_TEST_NGINX=1`.

mod common;

use std::time::Duration;

use common::proxy::{get, start};
use common::server::free_port;
use common::wait::{read_text, until};
use common::{Server, Upstream};

/// How long a test waits for the log line (a bound, not a speed).
const WAIT: Duration = Duration::from_secs(5);

const FORMAT: &str = "log_format up '$upstream_addr|$upstream_status|$upstream_response_time|\
$upstream_connect_time|$upstream_header_time|$upstream_response_length|\
$upstream_bytes_received|$upstream_bytes_sent';";

const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";

/// The access log's fields of the one line logged, waiting for it.
fn logged(server: &Server) -> Vec<String> {
    let path = server.prefix().join("up.log");
    assert!(
        until(WAIT, || read_text(&path).ends_with('\n')),
        "no log line; stderr: {}",
        server.stderr()
    );
    let text = read_text(&path);
    let line = text.lines().last().unwrap_or_default();
    line.split('|').map(str::to_string).collect()
}

/// Whether `v` is a time as nginx prints it: seconds with 3 decimals.
fn is_time(v: &str) -> bool {
    let (s, ms) = v.split_once('.').unwrap_or(("", ""));
    !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_digit())
        && ms.len() == 3
        && ms.bytes().all(|b| b.is_ascii_digit())
}

#[test]
fn one_try_gives_one_value_each() {
    let up = Upstream::fixed(ANSWER);
    let server = start(
        &up,
        FORMAT,
        "access_log {prefix}/up.log up;\nlocation / { proxy_pass http://UP; }",
    );
    assert_eq!(common::body(&get(&server, "/v")), "hello");
    let f = logged(&server);
    assert_eq!(f.len(), 8, "{f:?}");
    assert_eq!(f[0], up.addr().to_string());
    assert_eq!(f[1], "200");
    for t in &f[2..5] {
        assert!(is_time(t), "{f:?}");
    }
    assert_eq!(f[5], "5");
    assert_eq!(f[6], ANSWER.len().to_string());
    let sent = up.requests()[0].head.len();
    assert_eq!(f[7], sent.to_string());
}

#[test]
fn several_tries_are_joined_and_a_failed_connect_has_no_times() {
    let up = Upstream::fixed(ANSWER);
    let dead = format!("127.0.0.1:{}", free_port());
    let server = start(
        &up,
        &format!("{FORMAT}\nupstream u {{ server {dead}; server UP; }}"),
        "access_log {prefix}/up.log up;\nlocation / { proxy_pass http://u; }",
    );
    assert_eq!(common::body(&get(&server, "/v")), "hello");
    let f = logged(&server);
    let split = |i: usize| -> Vec<String> { f[i].split(", ").map(str::to_string).collect() };
    assert_eq!(split(0), [dead.clone(), up.addr().to_string()], "{f:?}");
    assert_eq!(split(1), ["502", "200"], "{f:?}");
    let response_time = split(2);
    assert!(
        is_time(&response_time[0]) && is_time(&response_time[1]),
        "{f:?}"
    );
    assert_eq!(split(3)[0], "-", "{f:?}");
    assert!(is_time(&split(3)[1]), "{f:?}");
    assert_eq!(split(4)[0], "-", "{f:?}");
    assert!(is_time(&split(4)[1]), "{f:?}");
    assert_eq!(split(5), ["0", "5"], "{f:?}");
    assert_eq!(
        split(6),
        ["0".to_string(), ANSWER.len().to_string()],
        "{f:?}"
    );
    let sent = up.requests()[0].head.len();
    assert_eq!(split(7), ["0".to_string(), sent.to_string()], "{f:?}");
}

/// An internal redirect to another proxied location starts a new group:
/// nginx joins the groups with ` : ` and the tries within one with `, `.
#[test]
fn an_internal_redirect_starts_a_group_after_a_colon() {
    let up = Upstream::fixed(ANSWER);
    let dead = format!("127.0.0.1:{}", free_port());
    let server = start(
        &up,
        FORMAT,
        &format!(
            "access_log {{prefix}}/up.log up;\n\
             location / {{ proxy_pass http://{dead}; error_page 502 = @next; }}\n\
             location @next {{ proxy_pass http://UP; }}"
        ),
    );
    assert_eq!(common::body(&get(&server, "/v")), "hello");
    let f = logged(&server);
    assert_eq!(f[0], format!("{dead} : {}", up.addr()), "{f:?}");
    assert_eq!(f[1], "502 : 200", "{f:?}");
}
