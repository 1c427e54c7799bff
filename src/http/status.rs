//! Status codes, nginx's reason phrases and nginx's built-in error pages.
//!
//! Owns: the text of status lines (`HTTP/1.1 404 Not Found`), the bodies nginx
//! sends when no `error_page` applies, and which errors end the connection.
//! Must not: decide which status a request gets; that is the handler's job.
//!
//! Reason phrases come from nginx 1.22's `ngx_http_header_filter_module.c`;
//! they differ from RFC 9110 in places (`302 Moved Temporarily`,
//! `408 Request Time-out`, `413 Request Entity Too Large`,
//! `503 Service Temporarily Unavailable`). Page bodies come from
//! `ngx_http_special_response.c` and were checked byte for byte against a
//! running nginx 1.22.1.

use std::fmt;

use super::decimal::{U64_DIGITS, decimal};

/// An HTTP status code, including nginx's private 49x codes (494) that are
/// answered on the wire as 400 with a special page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Status(pub u16);

impl Status {
    /// 100 Continue, sent before reading a body when the client expects it.
    pub const CONTINUE: Status = Status(100);
    /// 200 OK.
    pub const OK: Status = Status(200);
    /// 204 No Content.
    pub const NO_CONTENT: Status = Status(204);
    /// 206 Partial Content: a satisfiable `Range` request.
    pub const PARTIAL_CONTENT: Status = Status(206);
    /// 301 Moved Permanently: e.g. a directory requested without its slash.
    pub const MOVED_PERMANENTLY: Status = Status(301);
    /// 302, which nginx calls "Moved Temporarily".
    pub const MOVED_TEMPORARILY: Status = Status(302);
    /// 304 Not Modified.
    pub const NOT_MODIFIED: Status = Status(304);
    /// 400 Bad Request.
    pub const BAD_REQUEST: Status = Status(400);
    /// 401 Unauthorized: `auth_basic` wants credentials.
    pub const UNAUTHORIZED: Status = Status(401);
    /// 403 Forbidden.
    pub const FORBIDDEN: Status = Status(403);
    /// 404 Not Found.
    pub const NOT_FOUND: Status = Status(404);
    /// 405, which nginx calls "Not Allowed".
    pub const NOT_ALLOWED: Status = Status(405);
    /// 408 Request Time-out.
    pub const REQUEST_TIME_OUT: Status = Status(408);
    /// 412 Precondition Failed.
    pub const PRECONDITION_FAILED: Status = Status(412);
    /// 413 Request Entity Too Large: body over `client_max_body_size`.
    pub const REQUEST_ENTITY_TOO_LARGE: Status = Status(413);
    /// 414 Request-URI Too Large: request line over the header buffers.
    pub const REQUEST_URI_TOO_LARGE: Status = Status(414);
    /// 416 Requested Range Not Satisfiable.
    pub const RANGE_NOT_SATISFIABLE: Status = Status(416);
    /// nginx's private 494: a header line over the header buffers. Sent on the
    /// wire as 400 with the page "400 Request Header Or Cookie Too Large".
    pub const REQUEST_HEADER_TOO_LARGE: Status = Status(494);
    /// 500 Internal Server Error.
    pub const INTERNAL_SERVER_ERROR: Status = Status(500);
    /// 501 Not Implemented: e.g. an unknown `Transfer-Encoding`.
    pub const NOT_IMPLEMENTED: Status = Status(501);
    /// 502 Bad Gateway: an upstream failed or answered something invalid.
    pub const BAD_GATEWAY: Status = Status(502);
    /// 503 Service Temporarily Unavailable.
    pub const SERVICE_UNAVAILABLE: Status = Status(503);
    /// 504 Gateway Time-out: an upstream did not answer in time.
    pub const GATEWAY_TIME_OUT: Status = Status(504);
    /// 505 HTTP Version Not Supported: `HTTP/2.0` and above in a request line.
    pub const HTTP_VERSION_NOT_SUPPORTED: Status = Status(505);

    /// The numeric code.
    pub fn code(self) -> u16 {
        self.0
    }

    /// The code written on the wire: nginx's private 494–497 become 400.
    pub fn wire(self) -> Status {
        match self.0 {
            494..=497 => Status::BAD_REQUEST,
            _ => self,
        }
    }

    /// nginx's reason phrase for the wire code, or `None` when nginx has
    /// none (it then writes the bare code followed by a space).
    pub fn reason(self) -> Option<&'static str> {
        let reason = match self.wire().0 {
            100 => "Continue",
            200 => "OK",
            201 => "Created",
            202 => "Accepted",
            204 => "No Content",
            206 => "Partial Content",
            301 => "Moved Permanently",
            302 => "Moved Temporarily",
            303 => "See Other",
            304 => "Not Modified",
            307 => "Temporary Redirect",
            308 => "Permanent Redirect",
            400 => "Bad Request",
            401 => "Unauthorized",
            402 => "Payment Required",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Not Allowed",
            406 => "Not Acceptable",
            408 => "Request Time-out",
            409 => "Conflict",
            410 => "Gone",
            411 => "Length Required",
            412 => "Precondition Failed",
            413 => "Request Entity Too Large",
            414 => "Request-URI Too Large",
            415 => "Unsupported Media Type",
            416 => "Requested Range Not Satisfiable",
            421 => "Misdirected Request",
            429 => "Too Many Requests",
            500 => "Internal Server Error",
            501 => "Not Implemented",
            502 => "Bad Gateway",
            503 => "Service Temporarily Unavailable",
            504 => "Gateway Time-out",
            505 => "HTTP Version Not Supported",
            507 => "Insufficient Storage",
            _ => return None,
        };
        Some(reason)
    }

    /// Appends the status line with its CRLF, always as `HTTP/1.1` (nginx
    /// answers HTTP/1.0 clients with an `HTTP/1.1` status line too).
    pub fn write_status_line(self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"HTTP/1.1 ");
        // nginx: ngx_sprintf("%03ui ", status), the reason after the space
        // when it has one.
        push_code(out, self.wire().0);
        out.push(b' ');
        if let Some(reason) = self.reason() {
            out.extend_from_slice(reason.as_bytes());
        }
        out.extend_from_slice(b"\r\n");
    }

    /// Whether `line` (an upstream's status line from the code on, as
    /// `200 OK`) is exactly the one [`Status::write_status_line`] writes
    /// for this code: then it need not be kept.
    pub fn is_standard_line(self, line: &[u8]) -> bool {
        let Some(reason) = self.reason() else {
            return false;
        };
        let (digits, at) = code_digits(self.wire().0);
        let code = &digits[at..];
        line.len() == code.len() + 1 + reason.len()
            && line.starts_with(code)
            && line[code.len()] == b' '
            && line.ends_with(reason.as_bytes())
            && self.wire() == self
    }

    /// Whether nginx turns keep-alive off when it answers with this error.
    ///
    /// From `ngx_http_special_response_handler` (400, 413, 414, 494–497,
    /// 500, 501), plus 408 (a timed-out client is closed) and 505 (sent while
    /// the request line is read, before keep-alive is decided). Any error
    /// found while reading the request head closes too, whatever its code:
    /// the caller should close for every [`crate::http::request::HeadError`].
    pub fn closes_connection(self) -> bool {
        matches!(self.0, 400 | 408 | 413 | 414 | 494..=497 | 500 | 501 | 505)
    }

    /// The body of nginx's built-in page for this status, or `None` when
    /// nginx sends none (1xx, 2xx, 304, unknown codes). `signature` is what
    /// follows `<hr><center>`: `nowait/VERSION`, or `nowait` under
    /// `server_tokens off`. The page is sent as `text/html`.
    pub fn error_page(self, signature: &str) -> Option<String> {
        let head = match self.0 {
            494 => {
                return Some(special_page(
                    "Request Header Or Cookie Too Large",
                    signature,
                ));
            }
            495 => return Some(special_page("The SSL certificate error", signature)),
            496 => {
                return Some(special_page(
                    "No required SSL certificate was sent",
                    signature,
                ));
            }
            497 => {
                return Some(special_page(
                    "The plain HTTP request was sent to HTTPS port",
                    signature,
                ));
            }
            // nginx's 301/302/303/307/308 pages name 302 "Found", unlike its
            // status line, which says "Moved Temporarily".
            302 => "302 Found".to_string(),
            // 401's page says "Authorization Required".
            401 => "401 Authorization Required".to_string(),
            301 | 303 | 307 | 308 | 400..=406 | 408..=416 | 421 | 429 | 500..=505 | 507 => {
                format!("{} {}", self.0, self.reason()?)
            }
            _ => return None,
        };
        Some(format!(
            "<html>\r\n<head><title>{head}</title></head>\r\n<body>\r\n\
             <center><h1>{head}</h1></center>\r\n{}",
            page_tail(signature)
        ))
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A 400 page with an explanation line, as nginx writes for 494–497.
fn special_page(what: &str, signature: &str) -> String {
    format!(
        "<html>\r\n<head><title>400 {what}</title></head>\r\n<body>\r\n\
         <center><h1>400 Bad Request</h1></center>\r\n<center>{what}</center>\r\n{}",
        page_tail(signature)
    )
}

/// The common end of every error page.
fn page_tail(signature: &str) -> String {
    format!("<hr><center>{signature}</center>\r\n</body>\r\n</html>\r\n")
}

/// A status code as nginx prints it: at least three digits.
fn push_code(out: &mut Vec<u8>, code: u16) {
    let (digits, at) = code_digits(code);
    out.extend_from_slice(&digits[at..]);
}

/// `code`'s digits, at least three, at `digits[start..]`.
fn code_digits(code: u16) -> ([u8; U64_DIGITS], usize) {
    let mut digits = [b'0'; U64_DIGITS];
    let written = decimal(u64::from(code), &mut digits).len();
    (digits, U64_DIGITS - written.max(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_lines_are_recognised() {
        assert!(Status(200).is_standard_line(b"200 OK"));
        assert!(Status(404).is_standard_line(b"404 Not Found"));
        assert!(!Status(200).is_standard_line(b"200 Fine"));
        assert!(!Status(200).is_standard_line(b"200 ok"));
        assert!(!Status(200).is_standard_line(b"200  OK"));
        assert!(!Status(299).is_standard_line(b"299 "), "no phrase: kept");
        assert_eq!(line(Status(299)), "HTTP/1.1 299 \r\n");
        assert_eq!(line(Status(7)), "HTTP/1.1 007 \r\n");
    }

    fn line(status: Status) -> String {
        let mut out = Vec::new();
        status.write_status_line(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn status_lines_use_nginx_phrases() {
        assert_eq!(line(Status::OK), "HTTP/1.1 200 OK\r\n");
        assert_eq!(line(Status(302)), "HTTP/1.1 302 Moved Temporarily\r\n");
        assert_eq!(line(Status(408)), "HTTP/1.1 408 Request Time-out\r\n");
        assert_eq!(
            line(Status(416)),
            "HTTP/1.1 416 Requested Range Not Satisfiable\r\n"
        );
        assert_eq!(line(Status(501)), "HTTP/1.1 501 Not Implemented\r\n");
        assert_eq!(line(Status(494)), "HTTP/1.1 400 Bad Request\r\n");
        assert_eq!(line(Status(299)), "HTTP/1.1 299 \r\n");
    }

    #[test]
    fn page_404_matches_nginx_bytes() {
        // Length 153 with "nginx/1.22.1", as measured on nginx 1.22.1.
        let page = Status::NOT_FOUND.error_page("nginx/1.22.1").unwrap();
        assert_eq!(
            page,
            "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n\
             <center><h1>404 Not Found</h1></center>\r\n\
             <hr><center>nginx/1.22.1</center>\r\n</body>\r\n</html>\r\n"
        );
        assert_eq!(page.len(), 153);
    }

    #[test]
    fn page_lengths_match_nginx() {
        // Content-Length values observed from nginx 1.22.1 (server_tokens on).
        for (code, len) in [
            (400, 157),
            (301, 169),
            (416, 197),
            (414, 177),
            (501, 165),
            (505, 187),
            (494, 233),
            (412, 173),
            (413, 183),
        ] {
            let page = Status(code).error_page("nginx/1.22.1").unwrap();
            assert_eq!(page.len(), len, "status {code}");
        }
    }

    #[test]
    fn no_pages_for_success_and_304() {
        assert!(Status::OK.error_page("nowait").is_none());
        assert!(Status::NOT_MODIFIED.error_page("nowait").is_none());
        assert!(Status(407).error_page("nowait").is_none());
    }

    #[test]
    fn closing_statuses() {
        assert!(Status::BAD_REQUEST.closes_connection());
        assert!(Status::REQUEST_HEADER_TOO_LARGE.closes_connection());
        assert!(!Status::NOT_FOUND.closes_connection());
        assert!(!Status::RANGE_NOT_SATISFIABLE.closes_connection());
    }
}
