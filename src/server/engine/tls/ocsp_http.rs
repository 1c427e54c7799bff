//! The HTTP/1.0 exchange with an OCSP responder, as nginx's stapling
//! speaks it (`ngx_ssl_ocsp_create_request`, `…_parse_status_line`,
//! `…_parse_header_line`): a `GET` whose path ends in the request's
//! base64, escaped as a URI component; an answer whose status line and
//! headers are read as nginx reads them (a `Content-Type` other than
//! `application/ocsp-response` is refused), and whose body is everything
//! until the responder closes (nginx does not read `Content-Length`).

use base64::Engine;

/// The `Content-Type` an answer must have, if it says one.
const OCSP_RESPONSE_TYPE: &[u8] = b"application/ocsp-response";

/// The request for `der` (an `OCSPRequest`) to the responder at `host`
/// whose URL's path is `uri`.
pub fn request(uri: &str, host: &str, der: &[u8]) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = Vec::with_capacity(uri.len() + b64.len() * 3 + host.len() + 32);
    out.extend_from_slice(b"GET ");
    out.extend_from_slice(uri.as_bytes());
    if !uri.ends_with('/') {
        out.push(b'/');
    }
    crate::http::escape::escape_uri_component(b64.as_bytes(), &mut out);
    out.extend_from_slice(b" HTTP/1.0\r\nHost: ");
    out.extend_from_slice(host.as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out
}

/// How far an answer's head has been read.
#[derive(Debug, PartialEq, Eq)]
pub enum Head {
    /// More bytes are needed.
    Incomplete,
    /// The head is bad: what nginx logs.
    Invalid(String),
    /// The status code, and where the body starts.
    Done {
        /// The status code.
        code: u16,
        /// The body's offset in the buffer.
        body: usize,
    },
}

/// Reads the head at the start of `buf`.
pub fn head(buf: &[u8]) -> Head {
    let invalid = || Head::Invalid("OCSP responder sent invalid response".to_string());
    let (code, mut at) = match status_line(buf) {
        Step::Again => return Head::Incomplete,
        Step::Error => return invalid(),
        Step::Line(code, next) => (code, next),
    };
    loop {
        match header_line(&buf[at..]) {
            Line::Again => return Head::Incomplete,
            Line::Error => return invalid(),
            Line::End(n) => return Head::Done { code, body: at + n },
            Line::Header { name, value, len } => {
                if name.eq_ignore_ascii_case(b"Content-Type")
                    && !value.eq_ignore_ascii_case(OCSP_RESPONSE_TYPE)
                {
                    return Head::Invalid(format!(
                        "OCSP responder sent invalid \"Content-Type\" header: \"{}\"",
                        String::from_utf8_lossy(value)
                    ));
                }
                at += len;
            }
        }
    }
}

/// A status line's outcome.
enum Step {
    Again,
    Error,
    /// The code and the offset after the line.
    Line(u16, usize),
}

/// `ngx_ssl_ocsp_parse_status_line`: `HTTP/major.minor code [text]`.
fn status_line(buf: &[u8]) -> Step {
    #[derive(Clone, Copy, PartialEq)]
    enum S {
        Prefix(usize),
        FirstMajor,
        Major,
        FirstMinor,
        Minor,
        Status,
        AfterStatus,
        Text,
        AlmostDone,
    }
    let mut state = S::Prefix(0);
    let mut code: u16 = 0;
    let mut digits = 0;
    for (i, &ch) in buf.iter().enumerate() {
        state = match state {
            S::Prefix(n) if ch == b"HTTP/"[n] => {
                if n == 4 {
                    S::FirstMajor
                } else {
                    S::Prefix(n + 1)
                }
            }
            S::Prefix(_) => return Step::Error,
            S::FirstMajor if (b'1'..=b'9').contains(&ch) => S::Major,
            S::Major if ch == b'.' => S::FirstMinor,
            S::Major if ch.is_ascii_digit() => S::Major,
            S::FirstMinor | S::Minor if ch.is_ascii_digit() => S::Minor,
            S::Minor if ch == b' ' => S::Status,
            S::Status if ch == b' ' => S::Status,
            S::Status if ch.is_ascii_digit() => {
                code = code * 10 + u16::from(ch - b'0');
                digits += 1;
                if digits == 3 {
                    S::AfterStatus
                } else {
                    S::Status
                }
            }
            // IIS may send 403.1, 403.2, etc (nginx's comment).
            S::AfterStatus if ch == b' ' || ch == b'.' => S::Text,
            S::AfterStatus | S::Text | S::AlmostDone if ch == b'\n' => {
                return Step::Line(code, i + 1);
            }
            S::AfterStatus | S::Text if ch == b'\r' => S::AlmostDone,
            S::Text => S::Text,
            _ => return Step::Error,
        };
    }
    Step::Again
}

/// A header line's outcome.
enum Line<'a> {
    Again,
    Error,
    /// The empty line ending the head, and its length.
    End(usize),
    /// A header, and the line's length.
    Header {
        name: &'a [u8],
        value: &'a [u8],
        len: usize,
    },
}

/// `ngx_ssl_ocsp_parse_header_line`: a name of letters, digits and `-`
/// (the first a letter or digit), then `:` and a value (spaces around it
/// dropped); a line without `:` is a name alone. A CR only before the LF.
fn header_line(buf: &[u8]) -> Line<'_> {
    let (line, nl) = match buf.iter().position(|&b| b == b'\n') {
        Some(nl) => (&buf[..nl], Some(nl)),
        None => (buf, None),
    };
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.contains(&b'\r') || !name_ok(line) {
        return Line::Error;
    }
    let Some(nl) = nl else {
        return Line::Again;
    };
    if line.is_empty() {
        return Line::End(nl + 1);
    }
    let (name, value) = match line.iter().position(|&b| b == b':') {
        Some(c) => (&line[..c], &line[c + 1..]),
        None => (line, &line[line.len()..]),
    };
    let start = value.iter().position(|&b| b != b' ').unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|&b| b != b' ')
        .map_or(start, |e| e + 1);
    Line::Header {
        name,
        value: &value[start..end],
        len: nl + 1,
    }
}

/// Whether a header line (or the part of it read) has a name nginx reads.
fn name_ok(line: &[u8]) -> bool {
    let name = &line[..line.iter().position(|&b| b == b':').unwrap_or(line.len())];
    match name.split_first() {
        None => line.is_empty(),
        Some((first, rest)) => {
            first.is_ascii_alphanumeric()
                && rest.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-')
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_is_nginx_s() {
        let r = request("/", "ocsp.example", &[0xfb, 0xff, 0xfe]);
        assert_eq!(
            r,
            b"GET /%2B%2F%2F%2B HTTP/1.0\r\nHost: ocsp.example\r\n\r\n"
        );
        let r = request("/ocsp", "h", &[0]);
        assert_eq!(r, b"GET /ocsp/AA%3D%3D HTTP/1.0\r\nHost: h\r\n\r\n");
    }

    #[test]
    fn openssl_s_answer_head_is_read() {
        let a = b"HTTP/1.0 200 OK\r\nContent-type: application/ocsp-response\r\nContent-Length: 3\r\n\r\nabc";
        assert_eq!(
            head(a),
            Head::Done {
                code: 200,
                body: a.len() - 3
            }
        );
        for cut in 0..a.len() - 3 {
            assert_eq!(head(&a[..cut]), Head::Incomplete, "{cut}");
        }
        assert_eq!(
            head(b"HTTP/1.1 404\nServer: x\n\n"),
            Head::Done {
                code: 404,
                body: 24
            }
        );
        assert_eq!(
            head(b"HTTP/1.1 403.1 No\r\nX:y\r\n\r\n"),
            Head::Done {
                code: 403,
                body: 26
            }
        );
    }

    #[test]
    fn a_bad_head_is_said_as_nginx() {
        let bad = Head::Invalid("OCSP responder sent invalid response".to_string());
        assert_eq!(head(b"<html>"), bad);
        assert_eq!(head(b"HTTP/1.1 20x"), bad);
        assert_eq!(head(b"HTTP/1.0 200 OK\r\nBad_Name: x\r\n"), bad);
        assert_eq!(head(b"HTTP/1.0 200 OK\r\nBad_"), bad);
        assert_eq!(head(b"HTTP/1.0 200 OK\r\nX: a\rb\r\n"), bad);
        assert_eq!(
            head(b"HTTP/1.0 200 OK\r\nContent-Type: text/html \r\n\r\n"),
            Head::Invalid(
                "OCSP responder sent invalid \"Content-Type\" header: \"text/html\"".to_string()
            )
        );
    }
}
