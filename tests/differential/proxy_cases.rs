//! The cases of `differential_proxy.rs`: for each, the inside of its
//! location, what the scripted upstream answers under it (`UPADDR` in an
//! answer becomes the `Host` the proxy sent), and the client's request.

/// One case: a location, what the upstream answers under it, and the
/// client's request bytes (`{name}` in them is the case's path).
pub struct Case {
    /// Its location's path, and its entry in `known-differences.txt`
    /// as `proxy-NAME`.
    pub name: &'static str,
    /// The inside of `location /{name}`.
    pub location: &'static str,
    /// The upstream's answer to requests whose target holds `/{name}`;
    /// `None`: the default answer. It closes after writing it.
    pub answer: Option<&'static [u8]>,
    /// The request(s), with `{name}` for the case's path.
    pub request: &'static str,
}

/// The answer to a target no case scripts.
pub const DEFAULT_ANSWER: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Up: u\r\nContent-Length: 2\r\n\r\nok";

const GET: &str = "GET /{name}/x?a=1 HTTP/1.1\r\nHost: localhost\r\nUser-Agent: t\r\n\
                   Accept: */*\r\nConnection: close\r\n\r\n";

/// An answer whose head is larger than the case's 1k `proxy_buffer_size`.
fn big_header() -> &'static [u8] {
    let head = format!(
        "HTTP/1.1 200 OK\r\nX-Big: {}\r\nContent-Length: 0\r\n\r\n",
        "b".repeat(2000)
    );
    Box::leak(head.into_bytes().into_boxed_slice())
}

/// Every case, in the order they run.
pub fn cases() -> Vec<Case> {
    let c = |name, location, answer, request| Case {
        name,
        location,
        answer,
        request,
    };
    vec![
        c("plain", "proxy_pass http://UP;", None, GET),
        c("uri-part", "proxy_pass http://UP/uri-part-to/;", None, GET),
        c(
            "escaped",
            "proxy_pass http://UP/escaped-to/;",
            None,
            "GET /escaped/%41%20b%3F?k=%20 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        ),
        c(
            "unparsed",
            "proxy_pass http://UP;",
            None,
            "GET /unparsed/%7e//x/../y HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        ),
        c(
            "set-header",
            "proxy_pass http://UP; proxy_set_header X-B b; proxy_set_header Host h;\n \
             proxy_set_header X-Empty \"\"; proxy_set_header User-Agent \"\";",
            None,
            "GET /set-header HTTP/1.1\r\nHost: localhost\r\nUser-Agent: t\r\nX-Empty: e\r\n\
             X-C: c\r\nConnection: close\r\n\r\n",
        ),
        c(
            "no-request-headers",
            "proxy_pass http://UP; proxy_pass_request_headers off;",
            None,
            GET,
        ),
        c(
            "post",
            "proxy_pass http://UP;",
            None,
            "POST /post HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\
             Content-Type: text/x\r\nConnection: close\r\n\r\nhello",
        ),
        c(
            "chunked-post",
            "proxy_pass http://UP;",
            None,
            "POST /chunked-post HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\
             Connection: close\r\n\r\n3\r\nabc\r\n2;e=1\r\nde\r\n0\r\n\r\n",
        ),
        c(
            "method-body",
            "proxy_pass http://UP; proxy_method PUT; proxy_set_body \"v=$arg_v\";",
            None,
            "GET /method-body?v=9 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        ),
        c(
            "http11",
            "proxy_pass http://UP; proxy_http_version 1.1; proxy_set_header Connection \"\";",
            None,
            GET,
        ),
        c(
            "head",
            "proxy_pass http://UP;",
            None,
            "HEAD /head HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        ),
        c(
            "status-line",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 299 Fine Thing\r\nContent-Length: 2\r\n\r\nok"),
            GET,
        ),
        c(
            "hidden",
            "proxy_pass http://UP; proxy_hide_header X-Up;",
            Some(
                b"HTTP/1.1 200 OK\r\nX-Pad: p\r\nX-Accel-Expires: 1\r\nX-Up: u\r\n\
                  Keep-Alive: timeout=5\r\nContent-Length: 2\r\n\r\nok",
            ),
            GET,
        ),
        c(
            "redirect-default",
            "proxy_pass http://UP/redirect-default-to/;",
            Some(b"HTTP/1.1 302 Found\r\nLocation: http://UPADDR/redirect-default-to/y\r\nContent-Length: 0\r\n\r\n"),
            GET,
        ),
        c(
            "redirect-path",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n"),
            GET,
        ),
        c(
            "redirect-regex",
            "proxy_pass http://UP; proxy_redirect ~^http://([^/]+)/(.*)$ /$2?h=$1;",
            Some(b"HTTP/1.1 301 Moved\r\nLocation: http://h/z\r\nRefresh: 0; url=http://h/r\r\nContent-Length: 0\r\n\r\n"),
            GET,
        ),
        c(
            "accel-redirect",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 200 OK\r\nX-Accel-Redirect: /target/t\r\nContent-Length: 4\r\n\r\nbody"),
            GET,
        ),
        c(
            "intercept",
            "proxy_pass http://UP; proxy_intercept_errors on; error_page 404 /target/e;",
            Some(b"HTTP/1.1 404 Not Found\r\nX-Up: u\r\nContent-Length: 3\r\n\r\nnot"),
            GET,
        ),
        c(
            "upstream-500",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 500 Oops\r\nContent-Length: 4\r\n\r\noops"),
            GET,
        ),
        c("http09", "proxy_pass http://UP;", Some(b"raw bytes\n"), GET),
        c(
            "interim",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
            GET,
        ),
        c(
            "chunked-answer",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: t\r\n\r\n"),
            "GET /chunked-answer HTTP/1.1\r\nHost: localhost\r\n\r\n",
        ),
        c(
            "until-close-11",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 200 OK\r\n\r\nto the end"),
            "GET /until-close-11 HTTP/1.1\r\nHost: localhost\r\n\r\n",
        ),
        c(
            "until-close-10",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 200 OK\r\n\r\nto the end"),
            "GET /until-close-10 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        ),
        c(
            "extra-bytes",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA"),
            "GET /extra-bytes HTTP/1.1\r\nHost: localhost\r\n\r\n",
        ),
        c(
            "big-header",
            "proxy_pass http://UP; proxy_buffer_size 1k;",
            Some(big_header()),
            GET,
        ),
        c(
            "cut-body",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcd"),
            "GET /cut-body HTTP/1.1\r\nHost: localhost\r\n\r\n",
        ),
        c("refused", "proxy_pass http://DEAD;", None, GET),
        c(
            "length-and-chunked",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"),
            "GET /length-and-chunked HTTP/1.1\r\nHost: localhost\r\n\r\n",
        ),
        c(
            "bad-length",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\nok"),
            GET,
        ),
        c(
            "two-lengths",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!"),
            GET,
        ),
        c(
            "no-content",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 204 No Content\r\nX-Up: u\r\n\r\n"),
            "GET /no-content HTTP/1.1\r\nHost: localhost\r\n\r\n",
        ),
        c(
            "not-modified",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 304 Not Modified\r\nETag: \"e\"\r\nContent-Length: 5\r\n\r\n"),
            "GET /not-modified HTTP/1.1\r\nHost: localhost\r\nIf-None-Match: \"e\"\r\n\r\n",
        ),
        c(
            "empty-value",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 200 OK\r\nX-Up:\r\nContent-Length: 2\r\n\r\nok"),
            GET,
        ),
        c(
            "bad-header",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 200 OK\r\nX Bad: v\r\nContent-Length: 2\r\n\r\nok"),
            GET,
        ),
        c(
            "folded-header",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 200 OK\r\nX-Up: a\r\n b\r\nContent-Length: 2\r\n\r\nok"),
            GET,
        ),
        c(
            "http10-upstream",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.0 200 OK\r\nX-Up: u\r\n\r\nold style"),
            "GET /http10-upstream HTTP/1.1\r\nHost: localhost\r\n\r\n",
        ),
        c(
            "lf-only",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 200 OK\nX-Up: u\nContent-Length: 2\n\nok"),
            GET,
        ),
        c(
            "bad-chunk",
            "proxy_pass http://UP;",
            Some(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\nzz\r\n"),
            "GET /bad-chunk HTTP/1.1\r\nHost: localhost\r\n\r\n",
        ),
        c(
            "keepalive-client",
            "proxy_pass http://UP;",
            None,
            "GET /keepalive-client/1 HTTP/1.1\r\nHost: localhost\r\n\r\n\
             GET /keepalive-client/2 HTTP/1.1\r\nHost: localhost\r\n\r\n",
        ),
        c(
            "expect",
            "proxy_pass http://UP;",
            None,
            "POST /expect HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\n\
             Content-Length: 2\r\nConnection: close\r\n\r\nhi",
        ),
        c(
            "too-large",
            "proxy_pass http://UP; client_max_body_size 10;",
            None,
            "POST /too-large HTTP/1.1\r\nHost: localhost\r\nContent-Length: 11\r\n\
             Connection: close\r\n\r\n01234567890",
        ),
        // Found by the request fuzzer: an absolute-form target goes on
        // from its path; a client's field without a colon (an empty
        // value) is forwarded; `Content-Length: 0` is announced.
        c(
            "fuzz-absolute",
            "proxy_pass http://UP;",
            None,
            "GET http://localhost/fuzz-absolute/x?a HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        ),
        c(
            "fuzz-empty-field",
            "proxy_pass http://UP;",
            None,
            "GET /fuzz-empty-field/x HTTP/1.1\r\nHost: localhost\r\nX-Empty:\r\nlone\r\nConnection: close\r\n\r\n",
        ),
        c(
            "fuzz-post-empty",
            "proxy_pass http://UP;",
            None,
            "POST /fuzz-post-empty/x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        ),
    ]
}
