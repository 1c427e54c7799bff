//! Splits the bytes a server sent on one connection into HTTP/1.x responses.
//!
//! The message length follows RFC 9112 §6.3, in its order: responses to
//! `HEAD`, 1xx, 204 and 304 have no body; then `Transfer-Encoding: chunked`
//! (§7.1); then `Content-Length`; otherwise the body runs to the end of the
//! stream. A stream that does not start with `HTTP/` is an HTTP/0.9 reply
//! (nginx answers `GET /\r\n` with the bare file), returned as a response
//! with status 0 and the whole rest as body.
//!
//! Deliberately strict: anything malformed ends parsing with an error and
//! leaves the unparsed bytes in [`Parsed::rest`], so that two servers that
//! send different garbage still compare different.

/// One response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The status line as sent, without CRLF (empty for HTTP/0.9).
    pub status_line: String,
    /// The status code; 0 for an HTTP/0.9 reply.
    pub status: u16,
    /// Header fields in the order sent, names as sent.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
    /// Whether the body ended by the stream's end (no length given).
    pub close_delimited: bool,
}

impl Response {
    /// All values of header `name` (case-insensitive) joined by `", "`, as
    /// RFC 9110 §5.3 allows; `None` when absent.
    pub fn header(&self, name: &str) -> Option<String> {
        let values: Vec<&str> = self
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect();
        (!values.is_empty()).then(|| values.join(", "))
    }

    /// Whether this is an interim (1xx) response.
    pub fn is_interim(&self) -> bool {
        (100..200).contains(&self.status)
    }
}

/// The result of splitting one stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    /// The complete responses, in order, interim ones included.
    pub responses: Vec<Response>,
    /// Bytes after the last complete response.
    pub rest: Vec<u8>,
    /// Why parsing stopped before the end, if it did: `"incomplete"` when
    /// the stream ends inside a response, otherwise what was malformed.
    pub error: Option<String>,
}

impl Parsed {
    /// The number of final (non-1xx) responses.
    pub fn finals(&self) -> usize {
        self.responses.iter().filter(|r| !r.is_interim()).count()
    }
}

/// Splits `bytes` into responses. `methods` are the request methods in
/// order (only `HEAD` matters); missing entries count as `GET`. `at_eof`
/// says the stream is complete, which lets a close-delimited body end.
pub fn parse_responses(bytes: &[u8], methods: &[String], at_eof: bool) -> Parsed {
    let mut parsed = Parsed::default();
    let mut pos = 0;
    let mut request = 0;
    if !bytes.is_empty() && !b"HTTP/".starts_with(&bytes[..bytes.len().min(5)]) {
        parsed.responses.push(http09(bytes));
        return parsed;
    }
    while pos < bytes.len() {
        let head_method = methods.get(request).map(String::as_str).unwrap_or("GET");
        match parse_one(&bytes[pos..], head_method == "HEAD", at_eof) {
            Ok((response, used)) => {
                if !response.is_interim() {
                    request += 1;
                }
                parsed.responses.push(response);
                pos += used;
            }
            Err(e) => {
                parsed.error = Some(e);
                break;
            }
        }
    }
    parsed.rest = bytes[pos..].to_vec();
    parsed
}

fn http09(bytes: &[u8]) -> Response {
    Response {
        status_line: String::new(),
        status: 0,
        headers: Vec::new(),
        body: bytes.to_vec(),
        close_delimited: true,
    }
}

const INCOMPLETE: &str = "incomplete";

/// Parses the one response at the start of `bytes` (an interim one too);
/// returns it and the number of bytes it took. `head` says it answers a
/// `HEAD` request; `at_eof` lets a close-delimited body end. `Err` holds
/// `"incomplete"` or what is malformed.
pub fn parse_first(bytes: &[u8], head: bool, at_eof: bool) -> Result<(Response, usize), String> {
    parse_one(bytes, head, at_eof)
}

/// Parses one response at the start of `b`; returns it and the bytes used.
fn parse_one(b: &[u8], head: bool, at_eof: bool) -> Result<(Response, usize), String> {
    let (status_line, mut pos) = line(b, 0)?;
    let status = parse_status_line(&status_line)?;
    let mut headers = Vec::new();
    loop {
        let (l, next) = line(b, pos)?;
        pos = next;
        if l.is_empty() {
            break;
        }
        let (name, value) = l
            .split_once(':')
            .ok_or_else(|| format!("header line without colon: {l:?}"))?;
        headers.push((name.to_string(), value.trim().to_string()));
    }
    let mut response = Response {
        status_line,
        status,
        headers,
        body: Vec::new(),
        close_delimited: false,
    };
    if head || response.is_interim() || status == 204 || status == 304 {
        return Ok((response, pos));
    }
    let chunked = response
        .header("Transfer-Encoding")
        .is_some_and(|te| te.to_ascii_lowercase().ends_with("chunked"));
    if chunked {
        let (body, used) = dechunk(&b[pos..])?;
        response.body = body;
        return Ok((response, pos + used));
    }
    if let Some(cl) = response.header("Content-Length") {
        let len: usize = cl
            .parse()
            .map_err(|_| format!("bad Content-Length {cl:?}"))?;
        let end = pos.checked_add(len).ok_or("Content-Length overflows")?;
        if b.len() < end {
            return Err(INCOMPLETE.into());
        }
        response.body = b[pos..end].to_vec();
        return Ok((response, end));
    }
    if !at_eof {
        return Err(INCOMPLETE.into());
    }
    response.body = b[pos..].to_vec();
    response.close_delimited = true;
    Ok((response, b.len()))
}

/// `HTTP/1.x NNN reason` → NNN.
fn parse_status_line(l: &str) -> Result<u16, String> {
    let rest = l
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| l.strip_prefix("HTTP/1.0 "))
        .ok_or_else(|| format!("bad status line {l:?}"))?;
    rest.get(..3)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("bad status code in {l:?}"))
}

/// The CRLF-terminated line at `pos` (a bare LF is malformed here: servers
/// must send CRLF) and the position after it.
fn line(b: &[u8], pos: usize) -> Result<(String, usize), String> {
    let Some(nl) = b[pos..].iter().position(|&c| c == b'\n') else {
        return Err(INCOMPLETE.into());
    };
    let raw = &b[pos..pos + nl];
    let Some(raw) = raw.strip_suffix(b"\r") else {
        return Err(format!(
            "line without CR: {:?}",
            String::from_utf8_lossy(raw)
        ));
    };
    Ok((String::from_utf8_lossy(raw).into_owned(), pos + nl + 1))
}

/// Decodes a chunked body (RFC 9112 §7.1); returns it and the bytes used,
/// trailer section included.
fn dechunk(b: &[u8]) -> Result<(Vec<u8>, usize), String> {
    let mut body = Vec::new();
    let mut pos = 0;
    loop {
        let (size_line, next) = line(b, pos)?;
        let hex = size_line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(hex, 16)
            .map_err(|_| format!("bad chunk size line {size_line:?}"))?;
        pos = next;
        if size == 0 {
            break;
        }
        let end = pos.checked_add(size).ok_or("chunk size overflows")?;
        if b.len() < end + 2 {
            return Err(INCOMPLETE.into());
        }
        if &b[end..end + 2] != b"\r\n" {
            return Err("chunk data not followed by CRLF".into());
        }
        body.extend_from_slice(&b[pos..end]);
        pos = end + 2;
    }
    loop {
        let (trailer, next) = line(b, pos)?;
        pos = next;
        if trailer.is_empty() {
            return Ok((body, pos));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn methods(m: &[&str]) -> Vec<String> {
        m.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn splits_pipelined_head_and_get() {
        let s = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n\
HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
        let p = parse_responses(s, &methods(&["HEAD", "GET"]), false);
        assert_eq!(p.error, None);
        assert_eq!(p.responses.len(), 2);
        assert_eq!(p.responses[1].body, b"abc");
    }

    #[test]
    fn dechunks_and_skips_interim() {
        let s = b"HTTP/1.1 100 Continue\r\n\r\n\
HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n1;x=y\r\nc\r\n0\r\n\r\n";
        let p = parse_responses(s, &[], false);
        assert_eq!(p.error, None);
        assert_eq!(p.finals(), 1);
        assert_eq!(p.responses[1].body, b"abc");
    }

    #[test]
    fn close_delimited_needs_eof() {
        let s = b"HTTP/1.0 200 OK\r\n\r\nabc";
        assert_eq!(
            parse_responses(s, &[], false).error.as_deref(),
            Some(INCOMPLETE)
        );
        let p = parse_responses(s, &[], true);
        assert!(p.responses[0].close_delimited);
        assert_eq!(p.responses[0].body, b"abc");
    }

    #[test]
    fn http09_reply_is_the_whole_stream() {
        let p = parse_responses(b"<html>", &[], true);
        assert_eq!(p.responses[0].status, 0);
    }
}
