//! What the client gets from an upstream's response, as nginx's upstream
//! and proxy modules make it: the status line, which fields pass,
//! `proxy_redirect`, `X-Accel-*`, `proxy_intercept_errors`, HTTP/0.9 and
//! 1xx answers, every body framing, and a head too big for
//! `proxy_buffer_size`.
//!
//! Checked against nginx 1.22 with `NOWAIT_TEST_NGINX=1`, except the tests
//! of nowait's own log wording, which run nowait only.

mod common;

use std::time::Duration;

use common::proxy::{get, start};
use common::wait::until;
use common::{Conn, State, Upstream, body};

/// How long a test waits for an effect that must come (a bound, not a
/// speed requirement).
const WAIT: Duration = Duration::from_secs(5);

fn header<'a>(r: &'a common::Response, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[test]
fn the_status_line_passes_and_connection_fields_and_hidden_ones_do_not() {
    let up = Upstream::fixed(
        b"HTTP/1.1 299 Fine Thing\r\nServer: up/1\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\n\
          X-Pad: avoid browser bug\r\nX-Accel-Expires: 10\r\nX-Accel-Charset: utf-8\r\n\
          X-Keep: 1\r\nKeep-Alive: timeout=5\r\nX-Hide: h\r\nContent-Type: text/x\r\n\
          Content-Length: 2\r\n\r\nok",
    );
    let server = start(
        &up,
        "",
        "location / { proxy_pass http://UP; proxy_hide_header X-Hide; }\n\
         location /pass { proxy_pass http://UP; proxy_pass_header Server;\n \
         proxy_pass_header X-Accel-Expires; }",
    );
    let r = get(&server, "/");
    assert_eq!(r.status_line, "HTTP/1.1 299 Fine Thing");
    assert_eq!(body(&r), "ok");
    for hidden in [
        "X-Pad",
        "X-Accel-Expires",
        "X-Accel-Charset",
        "Keep-Alive",
        "X-Hide",
    ] {
        assert_eq!(header(&r, hidden), None, "{hidden} must not pass");
    }
    assert_eq!(header(&r, "X-Keep"), Some("1"));
    assert_eq!(header(&r, "Content-Type"), Some("text/x"));
    assert_eq!(header(&r, "Content-Length"), Some("2"));
    assert_ne!(header(&r, "Server"), Some("up/1"));
    assert_ne!(header(&r, "Date"), Some("Thu, 01 Jan 1970 00:00:00 GMT"));

    let r = get(&server, "/pass");
    assert_eq!(header(&r, "Server"), Some("up/1"));
    assert_eq!(header(&r, "X-Accel-Expires"), Some("10"));
}

/// An upstream that answers `template` with `UPADDR` replaced by the
/// request's `Host` (nginx's default `Host` is the upstream's address).
fn answering_with_host(template: &str) -> Upstream {
    let template = template.to_string();
    Upstream::start(move |c| {
        if let Some(req) = c.read_request() {
            let host = req.header("Host").unwrap_or_default();
            c.write(template.replace("UPADDR", &host).as_bytes());
        }
    })
}

/// The `Location` the client gets when the upstream answers `/from/x`
/// with `location` under `directive`; the upstream's address shows as
/// `UPADDR`, the server's port as `PORT`.
fn redirected(directive: &str, location: &str) -> Option<String> {
    let up = answering_with_host(&format!(
        "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\
         Connection: close\r\n\r\n"
    ));
    let server = start(
        &up,
        "",
        &format!("location /from/ {{ proxy_pass http://UP/to/; {directive} }}"),
    );
    let r = get(&server, "/from/x");
    assert_eq!(r.status, 302);
    header(&r, "Location").map(|l| {
        l.replace(&up.addr().to_string(), "UPADDR")
            .replace(&format!(":{}", server.port()), ":PORT")
    })
}

#[test]
fn proxy_redirect_default_off_text_and_regex() {
    // default: the proxy_pass URL becomes the location, then absolute.
    assert_eq!(
        redirected("", "http://UPADDR/to/a?q").as_deref(),
        Some("http://localhost:PORT/from/a?q")
    );
    assert_eq!(
        redirected("", "http://elsewhere/to/a").as_deref(),
        Some("http://elsewhere/to/a")
    );
    assert_eq!(
        redirected("proxy_redirect off;", "http://UPADDR/to/a").as_deref(),
        Some("http://UPADDR/to/a")
    );
    assert_eq!(
        redirected("proxy_redirect http://x/ http://y/z/;", "http://x/a").as_deref(),
        Some("http://y/z/a")
    );
    assert_eq!(
        redirected(
            "proxy_redirect ~^http://([^/]+)/to/(.*)$ http://$1.example/new/$2;",
            "http://h/to/b"
        )
        .as_deref(),
        Some("http://h.example/new/b")
    );
    // A path-only Location is made absolute (absolute_redirect on) only
    // when a rule rewrote it: nginx's header filter sees the upstream's
    // field as the response's Location only then.
    assert_eq!(
        redirected("proxy_redirect off;", "/p").as_deref(),
        Some("/p")
    );
    assert_eq!(redirected("", "/p").as_deref(), Some("/p"));
    assert_eq!(
        redirected("proxy_redirect /p /q;", "/p/r").as_deref(),
        Some("http://localhost:PORT/q/r")
    );
}

#[test]
fn refresh_is_rewritten_after_url() {
    let up = answering_with_host(
        "HTTP/1.1 200 OK\r\nRefresh: 5; url=http://UPADDR/to/r\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n",
    );
    let server = start(&up, "", "location /from/ { proxy_pass http://UP/to/; }");
    let r = get(&server, "/from/");
    assert_eq!(header(&r, "Refresh"), Some("5; url=/from/r"));
}

#[test]
fn x_accel_redirect_serves_the_named_uri_and_hides_the_upstreams_body() {
    let up = Upstream::fixed(
        b"HTTP/1.1 200 OK\r\nX-Accel-Redirect: /internal/one?a=1\r\nX-Up: u\r\n\
          Content-Length: 4\r\n\r\nbody",
    );
    let server = start(
        &up,
        "",
        "location / { proxy_pass http://UP; }\n\
         location /internal/ { return 200 \"internal $uri $args\"; }",
    );
    let r = get(&server, "/start");
    assert_eq!(r.status, 200);
    assert_eq!(body(&r), "internal /internal/one a=1");
    assert_eq!(header(&r, "X-Accel-Redirect"), None);
    assert_eq!(header(&r, "X-Up"), None);
    // A named location.
    let up = Upstream::fixed(
        b"HTTP/1.1 200 OK\r\nX-Accel-Redirect: @named\r\nContent-Length: 4\r\n\r\nbody",
    );
    let server = start(
        &up,
        "",
        "location / { proxy_pass http://UP; }\n\
         location @named { return 200 \"named $uri\"; }",
    );
    assert_eq!(body(&get(&server, "/start")), "named /start");
    // proxy_ignore_headers turns it off; the field is still hidden.
    let server = start(
        &up,
        "",
        "location / { proxy_pass http://UP; proxy_ignore_headers X-Accel-Redirect; }",
    );
    let r = get(&server, "/start");
    assert_eq!(body(&r), "body");
    assert_eq!(header(&r, "X-Accel-Redirect"), None);
}

#[test]
fn intercept_errors_hands_codes_with_an_error_page_to_it() {
    let up =
        Upstream::fixed(b"HTTP/1.1 404 Not Found\r\nX-Up: u\r\nContent-Length: 9\r\n\r\nupstream!");
    let server = start(
        &up,
        "",
        "location /i { proxy_pass http://UP; proxy_intercept_errors on; error_page 404 /e; }\n\
         location /n { proxy_pass http://UP; error_page 404 /e; }\n\
         location /o { proxy_pass http://UP; proxy_intercept_errors on; error_page 500 /e; }\n\
         location = /e { return 200 \"error page\"; }",
    );
    let r = get(&server, "/i");
    assert_eq!((r.status, body(&r).as_str()), (404, "error page"));
    assert_eq!(header(&r, "X-Up"), None);
    let r = get(&server, "/n");
    assert_eq!((r.status, body(&r).as_str()), (404, "upstream!"));
    let r = get(&server, "/o");
    assert_eq!((r.status, body(&r).as_str()), (404, "upstream!"));
}

/// nowait only: nginx 1.22 takes an upstream's `100 Continue` for the
/// final response, sends it to the client with `Connection: close` and
/// relays the rest as its body; nowait skips interim answers (RFC 9110
/// §15.2) and relays the final one.
#[test]
fn interim_answers_are_skipped() {
    let up = Upstream::fixed(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s>\r\n\r\n\
          HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
    );
    let conf = common::proxy::conf(Some(&up), "", "location / { proxy_pass http://UP; }");
    let server = common::Server::nowait(&conf);
    let mut c = Conn::open(server.port());
    c.send(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let first = c.next_response("GET").expect("a response");
    assert_eq!(first.status, 200);
    assert_eq!(body(&first), "ok");
}

#[test]
fn chunked_with_extensions_and_trailers_is_decoded_and_chunked_again() {
    let up = Upstream::fixed(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
          3;name=value;x\r\nabc\r\n2 ; ext=\"q\"\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n",
    );
    let server = start(&up, "", "location / { proxy_pass http://UP; }");
    let mut c = Conn::open(server.port());
    for _ in 0..2 {
        c.send(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
        let r = c.response().expect("a response");
        assert_eq!(body(&r), "abcde");
        assert_eq!(header(&r, "Transfer-Encoding"), Some("chunked"));
        assert_eq!(header(&r, "X-Trailer"), None);
    }
    assert_eq!(c.wait_closed(Duration::from_millis(200)), State::Open);
}

#[test]
fn a_close_delimited_body_is_chunked_for_1_1_and_closed_for_1_0() {
    let up = Upstream::fixed(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end");
    let server = start(&up, "", "location / { proxy_pass http://UP; }");
    let mut c = Conn::open(server.port());
    c.send(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let r = c.response().expect("a response");
    assert_eq!(body(&r), "until the end");
    assert_eq!(header(&r, "Transfer-Encoding"), Some("chunked"));
    assert!(!r.close_delimited);
    assert_eq!(c.wait_closed(Duration::from_millis(200)), State::Open);

    let mut c = Conn::open(server.port());
    c.send(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let r = c.response().expect("a response");
    assert!(r.close_delimited);
    assert_eq!(body(&r), "until the end");
    assert_eq!(header(&r, "Transfer-Encoding"), None);
    assert_eq!(c.wait_closed(WAIT), State::Closed);
}

#[test]
fn an_http_0_9_answer_passes_raw() {
    let up = Upstream::start(|c| {
        if c.read_request().is_some() {
            c.write(b"just bytes\n");
        }
    });
    let server = start(&up, "", "location / { proxy_pass http://UP; }");
    let out = common::raw_exchange(
        server.port(),
        b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(out, b"just bytes\n");
    assert!(until(WAIT, || server.stderr().contains(
        "upstream sent no valid HTTP/1.0 header while reading response header from upstream"
    )));
}

#[test]
fn bytes_after_the_body_are_dropped_with_a_warning() {
    let up = Upstream::fixed(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nokGARBAGE",
    );
    // nginx warns at `warn`, below the tests' default `error`.
    let conf = common::proxy::conf(Some(&up), "", "location / { proxy_pass http://UP; }")
        .replace("error_log stderr;", "error_log stderr warn;");
    let server = common::Server::tested(&conf);
    let mut c = Conn::open(server.port());
    c.send(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let r = c.response().expect("a response");
    assert_eq!(body(&r), "ok");
    // The client connection goes on.
    c.send(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(body(&c.response().expect("a second response")), "ok");
    assert!(c.quiet_for(Duration::from_millis(200)), "{:?}", c.pending());
    // With the context nginx appends (a body read past its head has one).
    assert_logged(
        &server,
        &up,
        "upstream sent more data than specified in \"Content-Length\" header while reading upstream",
    );
}

/// Waits for `message` in the error log, with the context nginx appends to
/// a line about a `GET /` proxied to `up`.
fn assert_logged(server: &common::Server, up: &Upstream, message: &str) {
    let want = format!(
        "{message}, client: 127.0.0.1, server: localhost, request: \"GET / HTTP/1.1\", \
         upstream: \"http://{}/\", host: \"localhost\"",
        up.addr()
    );
    assert!(
        until(WAIT, || server.stderr().contains(&want)),
        "{}",
        server.stderr()
    );
}

#[test]
fn a_head_bigger_than_proxy_buffer_size_is_a_502() {
    let big = format!(
        "HTTP/1.1 200 OK\r\nX-Big: {}\r\nContent-Length: 2\r\n\r\nok",
        "b".repeat(2000)
    );
    let up = Upstream::fixed(big.as_bytes());
    let server = start(
        &up,
        "",
        "location / { proxy_pass http://UP; proxy_buffer_size 1k; }\n\
         location /big { proxy_pass http://UP; proxy_buffer_size 4k; }",
    );
    assert_eq!(get(&server, "/").status, 502);
    assert_logged(
        &server,
        &up,
        "upstream sent too big header while reading response header from upstream",
    );
    assert_eq!(body(&get(&server, "/big")), "ok");
}
