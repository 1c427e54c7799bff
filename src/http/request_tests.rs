//! Unit tests for `request`: well-formed heads, nginx's refusals, and
//! hostile inputs (smuggling, overflow, folding, bad bytes).

use super::*;
use crate::http::status::Status;
use crate::http::uri::UriError;

fn parse(text: &str) -> Result<Option<(RequestHead, usize)>, HeadError> {
    parse_head(text.as_bytes())
}

fn ok(text: &str) -> RequestHead {
    match parse(text) {
        Ok(Some((head, len))) => {
            assert_eq!(len, text.len(), "whole input is the head");
            head
        }
        other => panic!("{text:?} gave {other:?}"),
    }
}

fn err(text: &str) -> HeadError {
    match parse(text) {
        Err(e) => e,
        other => panic!("{text:?} gave {other:?}"),
    }
}

#[test]
fn simple_get() {
    let h = ok("GET /a%20b/?x=1 HTTP/1.1\r\nHost: Example.COM:8080\r\nUser-Agent: t\r\n\r\n");
    assert_eq!(h.method, Method::Get);
    assert_eq!(h.uri.request_uri, b"/a%20b/?x=1");
    assert_eq!(h.uri.path, b"/a b/");
    assert_eq!(h.version, Version::Http11);
    assert_eq!(h.host.as_deref(), Some("example.com"));
    assert_eq!(h.user_agent.as_deref(), Some("t"));
    assert!(h.keep_alive);
    assert!(!h.has_body());
    assert_eq!(h.header("host"), Some(&b"Example.COM:8080"[..]));
}

#[test]
fn incomplete_heads_ask_for_more() {
    for partial in [
        "",
        "GET",
        "GET / HTTP/1.1",
        "GET / HTTP/1.1\r\nHost: a",
        "GET / HTTP/1.1\r\nHost: a\r\n",
    ] {
        assert_eq!(parse(partial), Ok(None), "{partial:?}");
    }
}

#[test]
fn head_length_excludes_body_and_leading_blank_lines_are_skipped() {
    let text = "\r\n\r\nPOST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello";
    let (head, len) = parse(text).unwrap().unwrap();
    assert_eq!(&text[len..], "hello");
    assert_eq!(head.content_length, Some(5));
    assert!(head.has_body());
}

#[test]
fn bare_lf_and_extra_spaces_are_accepted_like_nginx() {
    let h = ok("GET  /a.txt  HTTP/1.1\nHost: a\n\n");
    assert_eq!(h.uri.path, b"/a.txt");
}

#[test]
fn request_line_errors_come_before_headers_are_complete() {
    assert_eq!(
        err("GET /%zz HTTP/1.1\r\nHost:"),
        HeadError::InvalidUri(UriError::BadEscape)
    );
    assert_eq!(err("get / HTTP/1.1\r\n"), HeadError::InvalidMethod);
    assert_eq!(err("GET / HTTP/1.1 extra\r\n"), HeadError::InvalidRequest);
    assert_eq!(err("GET /\x01 HTTP/1.1\r\n"), HeadError::InvalidRequest);
}

#[test]
fn versions_like_nginx() {
    assert_eq!(ok("GET / HTTP/1.0\r\n\r\n").version, Version::Http10);
    assert_eq!(
        ok("GET / HTTP/1.2\r\nHost: a\r\n\r\n").version,
        Version::Http11
    );
    assert_eq!(
        err("GET / HTTP/2.0\r\nHost: a\r\n\r\n"),
        HeadError::UnsupportedVersion
    );
    assert_eq!(
        err("GET / HTTP/3.1\r\n\r\n").status(),
        Status::HTTP_VERSION_NOT_SUPPORTED
    );
    assert_eq!(err("GET / HTTP/0.9\r\n\r\n"), HeadError::InvalidRequest);
    assert_eq!(err("GET / HTTP/1\r\n\r\n"), HeadError::InvalidRequest);
    assert_eq!(err("GET / HTTP/1.99999\r\n\r\n"), HeadError::InvalidRequest);
    assert_eq!(err("GET / FTP/1.0\r\n\r\n"), HeadError::InvalidRequest);
}

#[test]
fn http09_request_has_no_headers() {
    let (h, len) = parse("GET /a.txt\r\nHost: ignored\r\n").unwrap().unwrap();
    assert_eq!(h.version, Version::Http09);
    assert_eq!(len, "GET /a.txt\r\n".len());
    assert!(!h.keep_alive);
    assert_eq!(err("POST /a.txt\r\n"), HeadError::Invalid09Method);
}

#[test]
fn methods() {
    assert_eq!(ok("HEAD / HTTP/1.0\r\n\r\n").method, Method::Head);
    let h = ok("FOO_BAR / HTTP/1.0\r\n\r\n");
    assert_eq!(h.method, Method::Other("FOO_BAR".to_string()));
    assert_eq!(h.method.as_str(), "FOO_BAR");
    assert_eq!(
        err("TRACE / HTTP/1.1\r\nHost: a\r\n\r\n").status(),
        Status::NOT_ALLOWED
    );
    assert_eq!(
        err("CONNECT / HTTP/1.1\r\nHost: a\r\n\r\n").to_string(),
        "client sent CONNECT method"
    );
}

#[test]
fn every_known_method_and_near_misses() {
    for (token, method) in [
        ("GET", Method::Get),
        ("HEAD", Method::Head),
        ("POST", Method::Post),
        ("PUT", Method::Put),
        ("DELETE", Method::Delete),
        ("OPTIONS", Method::Options),
        ("PATCH", Method::Patch),
    ] {
        let h = ok(&format!("{token} / HTTP/1.0\r\n\r\n"));
        assert_eq!(h.method, method);
        assert_eq!(h.method.as_str(), token);
    }
    // A known method's prefix or extension is another method.
    for token in ["GE", "GETS", "POST_", "HEAD-"] {
        let h = ok(&format!("{token} / HTTP/1.0\r\n\r\n"));
        assert_eq!(h.method, Method::Other(token.to_string()));
    }
}

#[test]
fn host_rules() {
    assert_eq!(err("GET / HTTP/1.1\r\n\r\n"), HeadError::MissingHost);
    assert_eq!(
        err("GET / HTTP/1.1\r\n\r\n").to_string(),
        "client sent HTTP/1.1 request without \"Host\" header"
    );
    assert!(ok("GET / HTTP/1.0\r\n\r\n").host.is_none());
    assert_eq!(
        err("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
        HeadError::DuplicateHost
    );
    assert_eq!(
        err("GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n"),
        HeadError::DuplicateHost
    );
    for bad in ["", "..", "a/b", ":80", "a..b"] {
        let e = err(&format!("GET / HTTP/1.1\r\nHost: {bad}\r\n\r\n"));
        assert_eq!(e, HeadError::InvalidHost, "{bad:?}");
        assert_eq!(e.to_string(), "client sent invalid host header");
    }
    // A space inside the value is invalid; around it, it is trimmed.
    assert_eq!(
        err("GET / HTTP/1.1\r\nHost: a b\r\n\r\n"),
        HeadError::InvalidHost
    );
    assert_eq!(
        ok("GET / HTTP/1.1\r\nHost:   a.  \r\n\r\n").host.as_deref(),
        Some("a")
    );
}

#[test]
fn absolute_form_host_overrides_host_header() {
    let h = ok("GET http://Other.org:99/x?y HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(h.host.as_deref(), Some("other.org"));
    assert_eq!(h.uri.path, b"/x");
    // nginx still wants the Host header on HTTP/1.1.
    assert_eq!(
        err("GET http://o/ HTTP/1.1\r\n\r\n"),
        HeadError::MissingHost
    );
    // nginx's request line takes no `*` (asterisk form).
    assert_eq!(
        err("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"),
        HeadError::InvalidRequest
    );
}

#[test]
fn uri_errors_are_400() {
    for (target, e) in [
        ("/../a", UriError::AboveRoot),
        ("/%2e%2e/a", UriError::AboveRoot),
        ("/%00", UriError::NulByte),
        ("/%", UriError::BadEscape),
    ] {
        let got = err(&format!("GET {target} HTTP/1.1\r\nHost: a\r\n\r\n"));
        assert_eq!(got, HeadError::InvalidUri(e));
        assert_eq!(got.status(), Status::BAD_REQUEST);
        assert_eq!(got.while_reading(), "while reading client request line");
    }
}

#[test]
fn content_length_values() {
    let cl = |v: &str| {
        parse(&format!(
            "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: {v}\r\n\r\n"
        ))
    };
    assert_eq!(cl("00").unwrap().unwrap().0.content_length, Some(0));
    assert_eq!(cl("1 ").unwrap().unwrap().0.content_length, Some(1));
    assert_eq!(
        cl("9223372036854775807").unwrap().unwrap().0.content_length,
        Some(i64::MAX as u64)
    );
    for bad in [
        "",
        "+1",
        "-1",
        "abc",
        "1 2",
        "0x10",
        "1,1",
        "9223372036854775808",
        "99999999999999999999999",
    ] {
        assert_eq!(cl(bad), Err(HeadError::InvalidContentLength), "{bad:?}");
    }
}

#[test]
fn smuggling_defences() {
    let req = |hdrs: &str| parse(&format!("POST / HTTP/1.1\r\nHost: a\r\n{hdrs}\r\n"));
    assert_eq!(
        req("Content-Length: 1\r\nContent-Length: 1\r\n"),
        Err(HeadError::DuplicateHeader {
            name: "Content-Length".into(),
            previous: "1".into(),
            value: "1".into()
        })
    );
    assert_eq!(
        req("Content-Length: 1\r\nContent-Length: 1\r\n")
            .unwrap_err()
            .to_string(),
        "client sent duplicate header line: \"Content-Length: 1\", previous value: \"Content-Length: 1\""
    );
    assert_eq!(
        req("Transfer-Encoding: chunked\r\nContent-Length: 3\r\n"),
        Err(HeadError::ContentLengthAndTransferEncoding)
    );
    assert_eq!(
        req("Content-Length: 3\r\nTransfer-Encoding: chunked\r\n"),
        Err(HeadError::ContentLengthAndTransferEncoding)
    );
    assert_eq!(
        req("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n")
            .unwrap_err()
            .status(),
        Status::BAD_REQUEST
    );
    let e = req("Transfer-Encoding: gzip\r\n").unwrap_err();
    assert_eq!(e, HeadError::UnknownTransferEncoding("gzip".into()));
    assert_eq!(e.status(), Status::NOT_IMPLEMENTED);
    assert_eq!(
        req("Transfer-Encoding: gzip, chunked\r\n")
            .unwrap_err()
            .status(),
        Status::NOT_IMPLEMENTED
    );
    assert_eq!(
        req("Transfer-Encoding: chunked, chunked\r\n")
            .unwrap_err()
            .status(),
        Status::NOT_IMPLEMENTED
    );
    assert!(
        req("Transfer-Encoding: Chunked\r\n")
            .unwrap()
            .unwrap()
            .0
            .chunked
    );
    assert_eq!(
        parse("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
        Err(HeadError::TransferEncodingInHttp10)
    );
    // Obsolete line folding, a space before the colon, an empty name.
    assert_eq!(req("X-Foo: a\r\n b\r\n"), Err(HeadError::InvalidHeaderLine));
    assert_eq!(
        req("Content-Length : 1\r\n"),
        Err(HeadError::InvalidHeaderLine)
    );
    assert_eq!(req(": z\r\n"), Err(HeadError::InvalidHeaderLine));
    assert_eq!(req("X Y: z\r\n"), Err(HeadError::InvalidHeaderLine));
    assert_eq!(req("X: a\0b\r\n"), Err(HeadError::InvalidHeaderLine));
    assert_eq!(req("X: a\rb\r\n"), Err(HeadError::InvalidHeaderLine));
}

#[test]
fn unique_conditional_headers() {
    for name in [
        "If-Modified-Since",
        "If-Unmodified-Since",
        "If-Match",
        "If-None-Match",
        "If-Range",
        "Expect",
        "Authorization",
    ] {
        let e = err(&format!(
            "GET / HTTP/1.1\r\nHost: a\r\n{name}: x\r\n{name}: y\r\n\r\n"
        ));
        assert!(matches!(e, HeadError::DuplicateHeader { .. }), "{name}");
    }
    // Range, User-Agent and Referer may repeat; the first one counts.
    let h = ok(
        "GET / HTTP/1.1\r\nHost: a\r\nRange: bytes=0-1\r\nRange: bytes=2-3\r\nReferer: r1\r\nReferer: r2\r\n\r\n",
    );
    assert_eq!(h.range.as_deref(), Some("bytes=0-1"));
    assert_eq!(h.referer.as_deref(), Some("r1"));
}

#[test]
fn conditional_values_are_kept() {
    let h = ok(
        "GET / HTTP/1.1\r\nHost: a\r\nIf-None-Match: \"x\"\r\nIf-Match: *\r\nIf-Modified-Since: d1\r\n\
                If-Unmodified-Since: d2\r\nIf-Range: \"y\"\r\n\r\n",
    );
    assert_eq!(h.if_none_match.as_deref(), Some("\"x\""));
    assert_eq!(h.if_match.as_deref(), Some("*"));
    assert_eq!(h.if_modified_since.as_deref(), Some("d1"));
    assert_eq!(h.if_unmodified_since.as_deref(), Some("d2"));
    assert_eq!(h.if_range.as_deref(), Some("\"y\""));
}

#[test]
fn keep_alive_rules() {
    assert!(ok("GET / HTTP/1.1\r\nHost: a\r\n\r\n").keep_alive);
    assert!(!ok("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").keep_alive);
    assert!(!ok("GET / HTTP/1.1\r\nHost: a\r\nConnection: Keep-Alive, CLOSE\r\n\r\n").keep_alive);
    assert!(!ok("GET / HTTP/1.0\r\n\r\n").keep_alive);
    assert!(ok("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").keep_alive);
    // nginx matches substrings, and the last Connection header wins.
    assert!(ok("GET / HTTP/1.0\r\nConnection: xkeep-alivex\r\n\r\n").keep_alive);
    assert!(
        !ok("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n")
            .keep_alive
    );
    assert!(
        ok("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n")
            .keep_alive
    );
}

#[test]
fn expect_continue_only_on_http11() {
    assert!(
        ok("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\n")
            .expect_continue
    );
    assert!(!ok("POST / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n").expect_continue);
    assert!(!ok("POST / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n").expect_continue);
}

#[test]
fn many_headers_are_all_kept() {
    // The count is the server's `max_headers` (1000 by default) to judge:
    // the parser keeps every line, however many.
    let mut text = String::from("GET / HTTP/1.1\r\nHost: a\r\n");
    for i in 0..1500 {
        text.push_str(&format!("X-{i}: v\r\n"));
    }
    text.push_str("X_Ignored: v\r\n\r\n");
    let head = ok(&text);
    assert_eq!(head.headers.len(), 1501);
    assert_eq!(head.header("x-1499"), Some(&b"v"[..]));
}

#[test]
fn obs_text_values_survive() {
    let h = parse_head(b"GET / HTTP/1.1\r\nHost: a\r\nX: caf\xe9\r\n\r\n")
        .unwrap()
        .unwrap()
        .0;
    assert_eq!(h.header("x"), Some(&b"caf\xe9"[..]));
}

#[test]
fn oversized_heads() {
    assert_eq!(
        oversized_head_error(b"GET /aaaaaaaa"),
        HeadError::UriTooLarge
    );
    assert_eq!(
        oversized_head_error(b"\r\nGET /aaaaaaaa"),
        HeadError::UriTooLarge
    );
    assert_eq!(
        oversized_head_error(b"GET / HTTP/1.1\r\nCookie: aaaa"),
        HeadError::HeaderTooLarge
    );
    assert_eq!(
        HeadError::UriTooLarge.status(),
        Status::REQUEST_URI_TOO_LARGE
    );
    assert_eq!(
        HeadError::HeaderTooLarge.status().wire(),
        Status::BAD_REQUEST
    );
}

/// nginx's `ignore_invalid_headers` and `underscores_in_headers`.
#[test]
fn header_name_rules() {
    let text = "GET / HTTP/1.0\r\nx_foo: a\r\nx.bar: b\r\n</kie>: c\r\nok: d\r\n\r\n";
    let names = |rules| {
        let (h, _) = parse_head_with(text.as_bytes(), rules).unwrap().unwrap();
        h.headers
            .iter()
            .map(|(n, _)| n.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(HeaderRules::default()), ["ok"]);
    let underscores = HeaderRules {
        ignore_invalid: true,
        underscores: true,
    };
    assert_eq!(names(underscores), ["x_foo", "ok"]);
    let off = HeaderRules {
        ignore_invalid: false,
        underscores: false,
    };
    let all = names(off);
    assert!(
        ["x_foo", "x.bar", "</kie>", "ok"]
            .iter()
            .all(|n| all.contains(&n.to_string()))
    );
    // A control character or a leading colon is refused whatever the rules.
    for bad in [
        "GET / HTTP/1.0\r\nfoo\x02: x\r\n\r\n",
        "GET / HTTP/1.0\r\n:foo: x\r\n\r\n",
    ] {
        assert!(parse_head_with(bad.as_bytes(), off).is_err(), "{bad:?}");
        assert!(parse_head(bad.as_bytes()).is_err(), "{bad:?}");
    }
}

#[test]
fn refusals_framed_as_nginx_frames_them() {
    // (head_only, http09)
    assert_eq!(error_framing(b"HEAD / HTTP/1.1\r\n\r\n"), (true, false));
    assert_eq!(error_framing(b"\r\nHEAD /a\x01"), (true, false));
    assert_eq!(error_framing(b"HEA"), (false, false));
    assert_eq!(error_framing(b"GET /%2\r\n"), (false, true));
    assert_eq!(error_framing(b"HEAD /\r\n"), (false, true));
    assert_eq!(
        error_framing(b"GET / HTTP/1.1\r\nHost: a b\r\n"),
        (false, false)
    );
}

#[test]
fn header_lines_checked_before_the_head_ends() {
    assert_eq!(
        err("GET / HTTP/1.1\r\nHost: a b\r\n"),
        HeadError::InvalidHost
    );
    assert_eq!(
        err("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n"),
        HeadError::DuplicateHost
    );
    assert_eq!(
        err("GET / HTTP/1.1\r\nHost: a\r\n\t"),
        HeadError::InvalidHeaderLine
    );
}

#[test]
fn values_keep_tabs_as_nginx() {
    assert_eq!(
        err("GET / HTTP/1.1\r\nHost:\ta\r\n\r\n"),
        HeadError::InvalidHost
    );
    let h = ok("GET / HTTP/1.1\r\nHost: a\r\nX: \x01b\t \r\n\r\n");
    assert_eq!(h.header("X"), Some(&b"\x01b\t"[..]));
}

#[test]
fn absolute_form_request_uri_is_from_the_path_on() {
    let h = ok("GET http://a.b:8/x?y HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(h.uri.request_uri, b"/x?y");
    let h = ok("GET http://a.b HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(h.uri.request_uri, b"/");
}

#[test]
fn a_date_with_a_byte_above_0x7f_keeps_its_length() {
    // nginx skips the byte after an asctime month unchecked: the fuzzer's
    // `Tue Nov\x9914 22:13:20 2023` is the 14th for it, and for nowait.
    let raw =
        b"GET / HTTP/1.1\r\nHost: a\r\nIf-Modified-Since: Tue Nov\x9914 22:13:20 2023\r\n\r\n";
    let (h, _) = parse_head(raw).unwrap().unwrap();
    let v = h.if_modified_since.as_deref().unwrap();
    assert_eq!(v.len(), "Tue Nov?14 22:13:20 2023".len());
    assert_eq!(
        crate::http::date::parse_http_date(v),
        crate::http::date::parse_http_date("Tue, 14 Nov 2023 22:13:20 GMT")
    );
}
