//! Unit tests for `head`: what nginx 1.22.1 accepts from an upstream, what
//! it refuses and in which words, heads split at every byte, interim 1xx,
//! HTTP/0.9 answers and the framing a head announces. The expected values
//! were checked against nginx 1.22.1 proxying a scripted upstream.

use super::fields::{parse_section, parse_section_nginx};
use super::*;

fn complete(text: &[u8]) -> (ResponseHead, usize) {
    match parse_head(text) {
        Ok(HeadParse::Complete { head, len }) => (head, len),
        other => panic!("{:?} gave {other:?}", String::from_utf8_lossy(text)),
    }
}

/// The head of `text`, which must be all head.
fn head(text: &[u8]) -> ResponseHead {
    let (head, len) = complete(text);
    assert_eq!(len, text.len(), "the whole input is the head");
    head
}

fn fields(h: &ResponseHead) -> Vec<(String, String)> {
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    h.headers.iter().map(|(n, v)| (s(n), s(v))).collect()
}

fn invalid(text: &[u8]) -> String {
    match parse_head(text) {
        Err(e) => e.to_string(),
        other => panic!("{:?} gave {other:?}", String::from_utf8_lossy(text)),
    }
}

#[test]
fn a_plain_head() {
    let text = b"HTTP/1.1 200 OK\r\nServer: up\r\nContent-Type: text/plain\r\n\
                 Content-Length: 5\r\nX-Mixed-Case: Keep\r\n\r\nhello";
    let (h, len) = complete(text);
    assert_eq!(&text[len..], b"hello");
    assert_eq!(h.version, (1, 1));
    assert_eq!(h.status, 200);
    assert_eq!(h.status_line, b"200 OK");
    assert_eq!(h.content_length, Some(5));
    assert!(!h.chunked && !h.connection_close && !h.upgrade);
    assert_eq!(h.headers.len(), 4);
    assert_eq!(fields(&h)[3], ("X-Mixed-Case".into(), "Keep".into()));
    assert_eq!(h.header("x-mixed-case"), Some(&b"Keep"[..]));
    assert_eq!(h.header("missing"), None);
    assert_eq!(framing(&h, false), Framing::Length(5));
}

/// Heads that must parse the same whatever the split: every proper prefix
/// is `Partial`, the whole is `Complete` with the same head.
const SPLIT_HEADS: &[&[u8]] = &[
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX: y\r\n\r\n",
    b"HTTP/1.0 404 Not Found\nX-A: a\tb\t \nNoColon\nX_U: 1\n\n",
    b"HTTP/1.1 204\r\nHTTP/1.1 204 again\r\nX: a \r\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\n",
    b"HTTP/2.5   302 Found\r\nLocation: /x\r\nY@(x): \x01\x7f\xff\r\n\r\n",
];

#[test]
fn a_head_split_at_every_byte_parses_the_same() {
    for text in SPLIT_HEADS {
        let whole = parse_head(text).unwrap();
        assert!(!matches!(whole, HeadParse::Partial | HeadParse::Http09));
        for cut in 0..text.len() {
            assert_eq!(
                parse_head(&text[..cut]),
                Ok(HeadParse::Partial),
                "{:?} cut at {cut}",
                String::from_utf8_lossy(text)
            );
        }
        // Fed a byte at a time, with the body's first bytes behind it.
        let mut buf = Vec::new();
        let mut with_body = text.to_vec();
        with_body.extend_from_slice(b"BODY");
        let mut result = HeadParse::Partial;
        for &b in &with_body {
            buf.push(b);
            result = parse_head(&buf).unwrap();
            if result != HeadParse::Partial {
                break;
            }
        }
        assert_eq!(result, whole);
        assert_eq!(buf.len(), text.len(), "complete at the blank line's LF");
    }
}

#[test]
fn nginx_leniencies_are_kept() {
    // Tabs are not trimmed, trailing spaces are; `_`, no colon, an IIS
    // repeated status line; bare LF line ends.
    let h = head(b"HTTP/1.1 200 OK\nX-A: a\tb\t \nX_U: 1\nNoColon\nHTTP/1.1 200 OK\nZ:\t v\n\n");
    assert_eq!(
        fields(&h),
        [
            ("X-A", "a\tb\t"),
            ("X_U", "1"),
            ("NoColon", ""),
            ("Z", "\t v"),
        ]
        .map(|(n, v)| (n.to_string(), v.to_string()))
    );
    // Any byte above space but DEL and ':' in names; controls but NUL in
    // values; CR CR LF; spaces inside a value kept, around it not.
    let h = head(
        b"HTTP/1.1 200 OK\r\nY@(x)/\xc3\xa9: 1\r\nX:\x01\x7f\xff\r\nW: a  b  \r\r\nV:\r\n\r\n",
    );
    let f: Vec<(&[u8], &[u8])> = h.headers.iter().collect();
    assert_eq!(
        f,
        [
            (&b"Y@(x)/\xc3\xa9"[..], &b"1"[..]),
            (b"X", b"\x01\x7f\xff"),
            (b"W", b"a  b"),
            (b"V", b""),
        ]
    );
    // Only "HTTP/" (that case) starts a skipped line.
    let h = head(b"HTTP/1.1 200 OK\r\nHTTPX: 1\r\nHTTP/junk\0\r\r\n\r\n");
    assert_eq!(h.headers.len(), 1);
    assert_eq!(h.header("HTTPX"), Some(&b"1"[..]));
}

#[test]
fn invalid_bytes_are_refused_in_nginx_words() {
    for (text, message) in [
        (
            &b"X-A: a\rb"[..],
            r#"upstream sent invalid header: "X-A: a\x0d...""#,
        ),
        (
            b"X-A: a\0b\r\n",
            r#"upstream sent invalid header: "X-A: a\x00...""#,
        ),
        (
            b"X-A: a \rb",
            r#"upstream sent invalid header: "X-A: a\x20...""#,
        ),
        (b"X-A:\0", r#"upstream sent invalid header: "X-A:\x00...""#),
        (
            b"X-A: a \0",
            r#"upstream sent invalid header: "X-A: a \x00...""#,
        ),
        (
            b" X: folded\r\n",
            r#"upstream sent invalid header: "\x20...""#,
        ),
        (b"\tX: 1\r\n", r#"upstream sent invalid header: "\x09...""#),
        (b"X : y\r\n", r#"upstream sent invalid header: "X\x20...""#),
        (
            b"X\tY: y\r\n",
            r#"upstream sent invalid header: "X\x09...""#,
        ),
        (
            b"X\x7f: y\r\n",
            r#"upstream sent invalid header: "X\x7f...""#,
        ),
        (b": y\r\n", r#"upstream sent invalid header: "\x3a...""#),
        (b"\0", r#"upstream sent invalid header: "\x00...""#),
        (b"\rx", r#"upstream sent invalid header: "\x0d...""#),
        (
            b"NoColon\rx",
            r#"upstream sent invalid header: "NoColon\x0d...""#,
        ),
        (
            b"http/1.1 200 OK\r\n",
            r#"upstream sent invalid header: "http/1.1\x20...""#,
        ),
    ] {
        let mut full = b"HTTP/1.1 200 OK\r\nA: b\r\n".to_vec();
        full.extend_from_slice(text);
        assert_eq!(
            invalid(&full),
            message,
            "{:?}",
            String::from_utf8_lossy(text)
        );
    }
}

#[test]
fn an_error_is_reported_before_the_head_is_complete_and_from_then_on() {
    let text = b"HTTP/1.1 200 OK\r\nX: a\0b\r\nY: 1\r\n\r\n";
    let bad = text.iter().position(|&b| b == 0).unwrap();
    for cut in 0..=text.len() {
        let r = parse_head(&text[..cut]);
        if cut <= bad {
            assert_eq!(r, Ok(HeadParse::Partial), "cut {cut}");
        } else {
            assert!(r.is_err(), "cut {cut}");
        }
    }
}

#[test]
fn error_messages_keep_raw_bytes() {
    let e = parse_head(b"HTTP/1.1 200 OK\r\nX\xff: \xfe\0").unwrap_err();
    assert_eq!(
        e,
        HeadError::InvalidHeader {
            text: b"X\xff: \xfe".to_vec(),
            byte: 0
        }
    );
    assert_eq!(
        e.message(),
        b"upstream sent invalid header: \"X\xff: \xfe\\x00...\""
    );
    assert_eq!(
        e.to_string(),
        "upstream sent invalid header: \"X\u{fffd}: \u{fffd}\\x00...\""
    );
}

#[test]
fn status_lines_as_nginx_reads_them() {
    for (text, version, status, line) in [
        (&b"HTTP/1.1 204\r\n\r\n"[..], (1, 1), 204, &b"204"[..]),
        (b"HTTP/1.1 204\n\n", (1, 1), 204, b"204"),
        (b"HTTP/1.1    200 OK\r\n\r\n", (1, 1), 200, b"200 OK"),
        (
            b"HTTP/1.1 403.1 Forbidden\r\n\r\n",
            (1, 1),
            403,
            b"403.1 Forbidden",
        ),
        (
            b"HTTP/1.1 200 \x00\xff\t!\r\n\r\n",
            (1, 1),
            200,
            b"200 \x00\xff\t!",
        ),
        (b"HTTP/1.0 200 OK\r\n\r\n", (1, 0), 200, b"200 OK"),
        (b"HTTP/2.5 200 OK\r\n\r\n", (2, 5), 200, b"200 OK"),
        (b"HTTP/999.999 200 OK\r\n\r\n", (999, 999), 200, b"200 OK"),
        (b"HTTP/1.01 200 OK\r\n\r\n", (1, 1), 200, b"200 OK"),
        (b"HTTP/1.1 000 Zero\r\n\r\n", (1, 1), 0, b"000 Zero"),
        (b"HTTP/1.1 999\r\n\r\n", (1, 1), 999, b"999"),
    ] {
        let h = head(text);
        assert_eq!(
            (h.version, h.status, &h.status_line[..]),
            (version, status, line),
            "{:?}",
            String::from_utf8_lossy(text)
        );
    }
}

#[test]
fn not_a_status_line_is_http09() {
    for text in [
        &b"hello world\n"[..],
        b"h",
        b"HTTP/1.1 200 O\rK\r\n\r\n",
        b"HTTP/1.1 20\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/0.9 200 OK\r\n\r\n",
        b"http/1.1 200 OK\r\n\r\n",
        b"HTTP/1.1\t200 OK\r\n\r\n",
        b"HTTP/1.1200 OK\r\n\r\n",
        b"HTTP/1000.1 200 OK\r\n\r\n",
        b"HTTP/1.1000 200 OK\r\n\r\n",
        b"HTTP/1 200 OK\r\n\r\n",
        b"HTTP/1. 200 OK\r\n\r\n",
        b"HTTP/1.1 20a\r\n\r\n",
        b"HTTP/1.1 200x\r\n\r\n",
        b"HTTP/1.1 200\r\r\n\r\n",
        b"\r\nHTTP/1.1 200 OK\r\n\r\n",
        b" HTTP/1.1 200 OK\r\n\r\n",
    ] {
        assert_eq!(
            parse_head(text),
            Ok(HeadParse::Http09),
            "{:?}",
            String::from_utf8_lossy(text)
        );
    }
    // Decided at the first wrong byte, before the line ends.
    assert_eq!(parse_head(b"HTTX"), Ok(HeadParse::Http09));
    for partial in [
        &b""[..],
        b"H",
        b"HTTP/",
        b"HTTP/1.1",
        b"HTTP/1.1 20",
        b"HTTP/1.1 200 OK\r",
    ] {
        assert_eq!(parse_head(partial), Ok(HeadParse::Partial), "{partial:?}");
    }
}

#[test]
fn interim_heads_are_skipped_but_101_is_final() {
    let text = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n\
                 HTTP/1.1 102 Processing\n\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    let mut rest = &text[..];
    let mut interim = Vec::new();
    loop {
        match parse_head(rest).unwrap() {
            HeadParse::Interim { status, len } => {
                interim.push(status);
                rest = &rest[len..];
            }
            HeadParse::Complete { head, len } => {
                assert_eq!(head.status, 200);
                assert_eq!(len, rest.len());
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(interim, [100, 103, 102]);
    // Any 1xx but 101; its header section must be valid too.
    assert_eq!(
        parse_head(b"HTTP/1.1 199 X\r\n\r\n"),
        Ok(HeadParse::Interim {
            status: 199,
            len: 18
        })
    );
    assert!(parse_head(b"HTTP/1.1 100 Continue\r\nX\0\r\n\r\n").is_err());
    assert_eq!(
        parse_head(b"HTTP/1.1 100 Continue\r\n"),
        Ok(HeadParse::Partial)
    );

    let h = head(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    );
    assert!(h.upgrade);
    assert!(!h.connection_close);
    // Without a tunnel, a 101 is an ordinary response.
    assert_eq!(framing(&h, false), Framing::UntilClose);
}

#[test]
fn content_length_as_nginx_1_22_reads_it() {
    let cl =
        |fields: &str| head(format!("HTTP/1.1 200 OK\r\n{fields}\r\n").as_bytes()).content_length;
    assert_eq!(cl("Content-Length: 0\r\n"), Some(0));
    assert_eq!(cl("content-length:   42  \r\n"), Some(42));
    assert_eq!(cl("Content-Length: 007\r\n"), Some(7));
    assert_eq!(
        cl("Content-Length: 9223372036854775807\r\n"),
        Some(i64::MAX as u64)
    );
    // No refusal in 1.22.1: the last one wins; an invalid one counts as
    // none, and the body runs until the upstream closes.
    assert_eq!(cl("Content-Length: 2\r\nContent-Length: 5\r\n"), Some(5));
    assert_eq!(cl("Content-Length: 5\r\nContent-Length: x\r\n"), None);
    for bad in [
        "abc",
        "",
        "-1",
        "+5",
        "5, 5",
        "5 5",
        "0x5",
        "9223372036854775808",
        "99999999999999999999",
    ] {
        assert_eq!(cl(&format!("Content-Length: {bad}\r\n")), None, "{bad:?}");
    }
    let h = head(b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n");
    assert_eq!(framing(&h, false), Framing::UntilClose);
}

#[test]
fn transfer_encoding_and_connection_as_nginx_1_22_reads_them() {
    let h = |fields: &str| head(format!("HTTP/1.1 200 OK\r\n{fields}\r\n").as_bytes());
    // "chunked" anywhere in any Transfer-Encoding; it wins over a length.
    for te in [
        "chunked",
        "CHUNKED",
        "gzip, chunked",
        "chunked, gzip",
        "xchunkedx",
    ] {
        let r = h(&format!("Content-Length: 2\r\nTransfer-Encoding: {te}\r\n"));
        assert!(r.chunked, "{te}");
        assert_eq!(r.content_length, None);
        assert_eq!(framing(&r, false), Framing::Chunked);
    }
    let r = h("Transfer-Encoding: gzip\r\nContent-Length: 2\r\n");
    assert!(!r.chunked);
    assert_eq!(framing(&r, false), Framing::Length(2));
    let r = h("Transfer-Encoding: identity\r\n");
    assert_eq!(framing(&r, false), Framing::UntilClose);
    // "close" anywhere in any Connection header.
    assert!(h("Connection: Keep-Alive, CLOSE\r\n").connection_close);
    assert!(h("Connection: keep-alive\r\nConnection: close\r\n").connection_close);
    assert!(!h("Connection: keep-alive\r\n").connection_close);
    assert!(!h("Keep-Alive: close\r\n").connection_close);
    // HTTP/1.0 always closes, even with keep-alive.
    let r = head(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n");
    assert!(r.connection_close);
    assert!(!head(b"HTTP/2.0 200 OK\r\n\r\n").connection_close);
}

#[test]
fn framing_per_input_filter_init() {
    let h = |text: &str| head(text.as_bytes());
    let chunked = h("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(framing(&chunked, false), Framing::Chunked);
    assert_eq!(framing(&chunked, true), Framing::Empty);
    for status in ["204 No Content", "304 Not Modified"] {
        let r = h(&format!("HTTP/1.1 {status}\r\nContent-Length: 10\r\n\r\n"));
        assert_eq!(framing(&r, false), Framing::Empty, "{status}");
    }
    let sized = h("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n");
    assert_eq!(framing(&sized, false), Framing::Length(10));
    assert_eq!(framing(&sized, true), Framing::Empty);
    let zero = h("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(framing(&zero, false), Framing::Empty);
    let open = h("HTTP/1.1 200 OK\r\n\r\n");
    assert_eq!(framing(&open, false), Framing::UntilClose);
}

#[test]
fn first_header_wins_and_all_are_kept() {
    let h = head(b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nServer: one\r\nset-cookie: b=2\r\nServer: two\r\n\r\n");
    assert_eq!(h.header("server"), Some(&b"one"[..]));
    let cookies: Vec<&[u8]> = h.headers_named("Set-Cookie").collect();
    assert_eq!(cookies, [&b"a=1"[..], b"b=2"]);
    assert_eq!(h.headers.len(), 4);
    assert!(!h.headers.is_empty());
    assert!(head(b"HTTP/1.1 200 OK\r\n\r\n").headers.is_empty());
}

#[test]
fn many_fields_have_no_count_limit() {
    let mut text = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..500 {
        text.extend_from_slice(format!("X-{i}: {i}\r\n").as_bytes());
    }
    text.extend_from_slice(b"\r\n");
    let h = head(&text);
    assert_eq!(h.headers.len(), 500);
    assert_eq!(h.header("x-499"), Some(&b"499"[..]));
}

#[test]
fn too_big_is_the_callers_buffer_full() {
    assert_eq!(check_head_size(4095, 4096), Ok(()));
    assert_eq!(check_head_size(4096, 4096), Err(HeadError::TooBig));
    assert_eq!(
        HeadError::TooBig.to_string(),
        "upstream sent too big header"
    );
}

/// Lines made of the bytes where the two parsers could part: every byte
/// value in a name, after the colon, inside and at the end of a value.
fn probe_sections() -> Vec<Vec<u8>> {
    let mut sections = Vec::new();
    for b in 0..=255u8 {
        let lines: [Vec<u8>; 6] = [
            [b"N", &[b][..], b"me: v\r\n"].concat(),
            [b"Name:", &[b][..], b"v\r\n"].concat(),
            [b"Name: v", &[b][..], b"w\r\n"].concat(),
            [b"Name: v", &[b][..], b"\r\n"].concat(),
            [b"Name: v ", &[b][..], b" \n"].concat(),
            [&[b][..], b"Name: v\r\n"].concat(),
        ];
        for line in lines {
            sections.push([&b"A: 1\r\n"[..], &line, b"B: 2\r\n\r\n"].concat());
        }
    }
    sections
}

#[test]
fn httparse_and_nginx_state_machine_agree_where_httparse_is_used() {
    for section in probe_sections() {
        let mut nginx = Headers::default();
        let expected = parse_section_nginx(&section, &mut nginx);
        let mut fast = Headers::default();
        let got = parse_section(&section, &mut fast);
        assert_eq!(got, expected, "{:?}", String::from_utf8_lossy(&section));
        if expected.is_ok() {
            assert_eq!(fast, nginx, "{:?}", String::from_utf8_lossy(&section));
        }
        // Every prefix: httparse's "partial" must be nginx's too.
        for cut in 0..section.len() {
            let mut h = Headers::default();
            let prefix = &section[..cut];
            let mut slots = [httparse::EMPTY_HEADER; 8];
            if let Ok(httparse::Status::Partial) = httparse::parse_headers(prefix, &mut slots) {
                assert_eq!(
                    parse_section_nginx(prefix, &mut h),
                    Ok(None),
                    "{:?}",
                    String::from_utf8_lossy(prefix)
                );
            }
        }
    }
}

#[test]
fn fields_as_text_checked_once_for_the_list() {
    let text = |h: &Headers| -> Vec<Option<(String, String)>> {
        h.iter_text()
            .map(|(_, t)| t.map(|(n, v)| (n.to_owned(), v.to_owned())))
            .collect()
    };
    let both = |n: &str, v: &str| Some((n.to_owned(), v.to_owned()));
    assert!(Headers::default().iter_text().next().is_none());
    let mut h = Headers::default();
    h.push(b"X-A", b"1");
    h.push("X-\u{e9}".as_bytes(), "caf\u{e9}".as_bytes());
    // Not text until sealed (the list was being appended to).
    assert_eq!(text(&h), [None, None]);
    h.seal();
    assert_eq!(text(&h), [both("X-A", "1"), both("X-\u{e9}", "caf\u{e9}")]);
    // One value that is not UTF-8: the list is not text, every field is
    // left to be converted on its own.
    h.push(b"X-B", b"\xff");
    h.seal();
    assert_eq!(text(&h), [None, None, None]);
    // A list that is valid UTF-8 only because a name ends inside a
    // character its value completes: that field is not text.
    let mut h = Headers::default();
    h.push(b"X-C", b"2");
    h.push(b"X-\xc3", b"\xa9");
    h.seal();
    assert!(h.fields.as_ref().unwrap().bytes.text().is_some());
    assert_eq!(text(&h), [both("X-C", "2"), None]);
    // The fields themselves are the same either way.
    assert_eq!(
        h.iter_text().map(|(f, _)| f).collect::<Vec<_>>(),
        h.iter().collect::<Vec<_>>()
    );
}

#[test]
fn a_section_split_by_httparse_is_copied_once_and_read_back_field_by_field() {
    let section = b"Content-Type: text/html\r\nX-Empty:\r\nX-Spaces:   \r\nETag: \"a\"\r\n\r\n";
    let mut fast = Headers::default();
    assert_eq!(parse_section(section, &mut fast), Ok(Some(section.len())));
    let mut nginx = Headers::default();
    parse_section_nginx(section, &mut nginx).unwrap();
    assert_eq!(fast, nginx);
    // One buffer: the section itself.
    assert_eq!(fast.fields.as_ref().unwrap().bytes.as_slice(), &section[..]);
    fast.seal();
    let text: Vec<(String, String)> = (0..fast.len())
        .map(|i| {
            let (n, v) = fast.shared_text(i).unwrap();
            (n.to_string(), v.to_string())
        })
        .collect();
    let want = [
        ("Content-Type", "text/html"),
        ("X-Empty", ""),
        ("X-Spaces", ""),
        ("ETag", "\"a\""),
    ];
    assert_eq!(
        text,
        want.map(|(n, v)| (n.to_owned(), v.to_owned())).to_vec()
    );
}
