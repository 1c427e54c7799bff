//! nginx's request-line and header-line verdicts, each case checked
//! against nginx 1.22.1 by hand (or by the differential fuzzer).

use super::*;

/// Method, target and version of a scanned line.
type Parts = (Vec<u8>, Vec<u8>, Option<(u16, u16)>);

fn line(b: &[u8]) -> Result<Option<Parts>, HeadError> {
    request_line(b).map(|o| o.map(|l| (l.method.to_vec(), l.target.to_vec(), l.version)))
}

#[test]
fn accepts_what_nginx_accepts() {
    let ok = |b: &[u8], m: &[u8], t: &[u8], v: Option<(u16, u16)>| {
        assert_eq!(line(b), Ok(Some((m.to_vec(), t.to_vec(), v))), "{b:?}");
    };
    ok(b"GET / HTTP/1.1\r\n", b"GET", b"/", Some((1, 1)));
    ok(
        b"\r\n\nGET  /a?b  HTTP/1.0  \n",
        b"GET",
        b"/a?b",
        Some((1, 0)),
    );
    ok(b"GET /x HTTP/1.999\r\n", b"GET", b"/x", Some((1, 999)));
    ok(b"GET /%2\r\n", b"GET", b"/%2", None);
    ok(
        b"GET http://h:80 HTTP/1.1\n",
        b"GET",
        b"http://h:80",
        Some((1, 1)),
    );
    ok(
        b"GET http://[::1]/p HTTP/1.1\n",
        b"GET",
        b"http://[::1]/p",
        Some((1, 1)),
    );
    ok(
        b"GET /\x80\xff HTTP/1.1\n",
        b"GET",
        b"/\x80\xff",
        Some((1, 1)),
    );
}

#[test]
fn refuses_where_nginx_refuses() {
    let bad = |b: &[u8], e: HeadError| assert_eq!(line(b), Err(e), "{b:?}");
    // At once, without waiting for the line's end.
    bad(b"\"", HeadError::InvalidMethod);
    bad(b"get", HeadError::InvalidMethod);
    bad(b"GET\t/", HeadError::InvalidMethod);
    bad(b"GET /a\tb", HeadError::InvalidRequest);
    bad(b"GET /a\x7f", HeadError::InvalidRequest);
    bad(b"GET * HTTP/1.1", HeadError::InvalidRequest);
    bad(b"GET / HTTP/3", HeadError::UnsupportedVersion);
    bad(b"GET / HTTP/11", HeadError::UnsupportedVersion);
    bad(b"GET / HTTP/0.9", HeadError::InvalidRequest);
    bad(b"GET / HTTP/1.1000", HeadError::InvalidRequest);
    bad(b"GET / HTTP/1.1 x", HeadError::InvalidRequest);
    bad(b"GET / HTTP/1.\r", HeadError::InvalidRequest);
    bad(b"GET / HTTP/1.1\rx", HeadError::InvalidRequest);
    bad(b"GET / http/1.1", HeadError::InvalidRequest);
    bad(b"GET http://a_b/ HTTP/1.1", HeadError::InvalidRequest);
    bad(b"GET http://h\r\n", HeadError::InvalidRequest);
    bad(b"POST /\r\n", HeadError::Invalid09Method);
    bad(b"HEAD / \n", HeadError::Invalid09Method);
    // Still waiting.
    assert_eq!(line(b"GET / HTTP/1"), Ok(None));
    assert_eq!(line(b"\r\n"), Ok(None));
}

fn field(b: &[u8], underscores: bool) -> HeaderLine {
    header_line(b, 0, underscores)
}

#[test]
fn header_lines_as_nginx() {
    let f = |b: &[u8]| match field(b, false) {
        HeaderLine::Field {
            name,
            value,
            invalid,
            ..
        } => Some((
            b[name.0..name.1].to_vec(),
            b[value.0..value.1].to_vec(),
            invalid,
        )),
        _ => None,
    };
    assert_eq!(
        f(b"Host:  a b  \r\n"),
        Some((b"Host".to_vec(), b"a b".to_vec(), false))
    );
    // Tabs are part of the value; controls but NUL are allowed.
    assert_eq!(
        f(b"X:\ta\t\r\n"),
        Some((b"X".to_vec(), b"\ta\t".to_vec(), false))
    );
    assert_eq!(
        f(b"X: \x01\x7f\n"),
        Some((b"X".to_vec(), b"\x01\x7f".to_vec(), false))
    );
    // No colon: a field with an empty value.
    assert_eq!(f(b"foo\r\n"), Some((b"foo".to_vec(), b"".to_vec(), false)));
    // CR CR LF ends a line.
    assert_eq!(
        f(b"X: a\r\r\n"),
        Some((b"X".to_vec(), b"a".to_vec(), false))
    );
    assert_eq!(f(b"a_b: c\n"), Some((b"a_b".to_vec(), b"c".to_vec(), true)));
    assert_eq!(f(b"a.b: c\n"), Some((b"a.b".to_vec(), b"c".to_vec(), true)));
    assert!(matches!(
        field(b"a_b: c\n", true),
        HeaderLine::Field { invalid: false, .. }
    ));
    for bad in [
        &b"foo bar\r\n"[..],
        b"\t\r\n",
        b" folded\r\n",
        b": x\r\n",
        b"X: a\0\r\n",
        b"X: a\rb\r\n",
        b"\rx",
        b"a\x01b: c\r\n",
    ] {
        assert!(
            matches!(field(bad, false), HeaderLine::Invalid { .. }),
            "{bad:?}"
        );
    }
    assert_eq!(field(b"\r\n", false), HeaderLine::End { next: 2 });
    assert_eq!(field(b"\n", false), HeaderLine::End { next: 1 });
    assert_eq!(field(b"Host: a", false), HeaderLine::Partial);
}

#[test]
fn a_repeated_status_line_is_skipped_in_an_upstream_head_only() {
    let line = b"HTTP/1.1 200 OK\r\nX: y\r\n";
    assert_eq!(
        upstream_header_line(line, 0),
        HeaderLine::Ignored { next: 17 }
    );
    assert!(matches!(
        header_line(line, 0, false),
        HeaderLine::Invalid { .. }
    ));
    // An upstream's refusal says where nginx's header_end points: the CR.
    assert_eq!(
        upstream_header_line(b"X: a\rb\r\n", 0),
        HeaderLine::Invalid { end: 4 }
    );
}
