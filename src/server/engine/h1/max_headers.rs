//! `max_headers`: refusing a request with more header lines than its
//! server allows (494, sent as 400 "Request Header Or Cookie Too Large";
//! nginx 1.29.8's check, backported by Debian to its nginx 1.22.1).
//!
//! Owns: which server's limit each line counts against. Must not: parse
//! or answer; the connection does both.

use crate::config::inherit::SrvConf;
use crate::http::request::RequestHead;

/// Whether `head` has more header lines than nginx lets through. nginx
/// counts each line as it reads it against the server in force at that
/// moment (`ngx_http_process_request_headers`: `r->headers_in.count++ >=
/// cscf->max_headers`): the server an absolute-form target named, else the
/// default server of the address until the `Host` line chooses one
/// (`ngx_http_process_host`), then that one. `default` and `chosen` are
/// those two servers' settings (the same when `Host` chose the default).
/// Lines nginx ignores (`ignore_invalid_headers`) are not counted, as they
/// are not in `head`.
pub fn exceeded(head: &RequestHead, default: &SrvConf, chosen: &SrvConf) -> bool {
    let lines = head.headers.len() as u64;
    let under_default = if head.uri.host.is_some() {
        0
    } else {
        head.headers
            .iter()
            .position(|(name, _)| name.eq_ignore_ascii_case("host"))
            .map_or(lines, |i| i as u64 + 1)
    };
    // Line `i` (from 0) is refused when `i >= max`: some line is refused
    // when a server counts more lines than its `max`.
    under_default > default.max_headers || (lines > under_default && lines > chosen.max_headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::request::parse_head;

    fn srv(max: u64) -> SrvConf {
        SrvConf {
            max_headers: max,
            ..SrvConf::default()
        }
    }

    fn head(text: &str) -> RequestHead {
        *Box::new(parse_head(text.as_bytes()).unwrap().unwrap().0)
    }

    #[test]
    fn lines_before_host_count_against_the_default_server() {
        let h = head("GET / HTTP/1.0\r\nA: 1\r\nB: 2\r\nHost: x\r\nC: 3\r\n\r\n");
        // Four lines: at most four allowed passes, three does not.
        assert!(!exceeded(&h, &srv(4), &srv(4)));
        assert!(exceeded(&h, &srv(3), &srv(3)));
        // The default server sees three lines (up to Host's), the chosen
        // one the fourth.
        assert!(!exceeded(&h, &srv(3), &srv(4)));
        assert!(exceeded(&h, &srv(2), &srv(100)));
        assert!(exceeded(&h, &srv(100), &srv(3)));
    }

    #[test]
    fn without_host_only_the_default_server_counts() {
        let h = head("GET / HTTP/1.0\r\nA: 1\r\nB: 2\r\n\r\n");
        assert!(!exceeded(&h, &srv(2), &srv(0)));
        assert!(exceeded(&h, &srv(1), &srv(100)));
        let none = head("GET / HTTP/1.0\r\n\r\n");
        assert!(!exceeded(&none, &srv(0), &srv(0)));
    }

    #[test]
    fn an_absolute_target_chooses_the_server_first() {
        let h = head("GET http://x/ HTTP/1.1\r\nHost: y\r\nA: 1\r\n\r\n");
        assert!(!exceeded(&h, &srv(0), &srv(2)));
        assert!(exceeded(&h, &srv(100), &srv(1)));
    }
}
