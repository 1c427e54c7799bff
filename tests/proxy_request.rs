//! The request nowait sends upstream, as nginx's
//! `ngx_http_proxy_create_request` builds it: the request line (URI with
//! and without a `proxy_pass` URI part, escaping, arguments, method), the
//! header block (`proxy_set_header` first in order, then nginx's defaults,
//! then the client's fields), the body, and the connection's reuse.
//!
//! Every expected head was checked against nginx 1.22: run this file with
//! `NOWAIT_TEST_NGINX=1` to check it again.

mod common;

use common::proxy::{get, request, start};
use common::{Server, Upstream};

/// Sends `raw` through a server proxying `location` to a recording
/// upstream; returns the upstream's view of the one request.
fn sent(server_block: &str, raw: &str) -> common::Recorded {
    let up = Upstream::echo();
    let server = start(&up, "", server_block);
    let r = request(&server, raw);
    assert_eq!(r.status, 200, "{}", server.stderr());
    let got = up.requests();
    assert_eq!(got.len(), 1, "{got:?}");
    got[0].clone()
}

fn port_of(head: &str) -> String {
    head.lines()
        .find_map(|l| l.strip_prefix("Host: 127.0.0.1:"))
        .unwrap_or("?")
        .to_string()
}

#[test]
fn without_uri_part_the_request_goes_as_received() {
    let got = sent(
        "location / { proxy_pass http://UP; }",
        "GET /a/%7e/b?x=1&y=%20 HTTP/1.1\r\nHost: localhost\r\nUser-Agent: t\r\n\
         Accept: */*\r\nConnection: close\r\n\r\n",
    );
    let port = port_of(&got.head_text());
    assert_eq!(
        got.head_text(),
        format!(
            "GET /a/%7e/b?x=1&y=%20 HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\
             Connection: close\r\nUser-Agent: t\r\nAccept: */*\r\n\r\n"
        )
    );
}

#[test]
fn a_uri_part_replaces_the_location_prefix() {
    let block = "location /a/ { proxy_pass http://UP/b/; }\n\
                 location = /exact { proxy_pass http://UP/other; }\n\
                 location /short { proxy_pass http://UP/; }";
    let up = Upstream::echo();
    let server = start(&up, "", block);
    for (path, want) in [
        ("/a/x?y=1", "/b/x?y=1"),
        ("/a/", "/b/"),
        ("/exact?q", "/other?q"),
        ("/shorter/z", "/er/z"),
    ] {
        assert_eq!(get(&server, path).status, 200);
        let last = up.requests().pop().expect("a request upstream");
        assert_eq!(last.target(), want, "for {path}");
    }
}

#[test]
fn a_decoded_uri_is_escaped_again_when_it_is_rebuilt() {
    let up = Upstream::echo();
    let server = start(&up, "", "location /a/ { proxy_pass http://UP/b/; }");
    // The client's escapes are decoded (%41 → A) and what needs it is
    // escaped again (a space → %20), as ngx_escape_uri(NGX_ESCAPE_URI).
    assert_eq!(get(&server, "/a/%41%20c%3F?k=%20").status, 200);
    assert_eq!(up.requests()[0].target(), "/b/A%20c%3F?k=%20");
    // A URI without escapes is copied as is.
    assert_eq!(get(&server, "/a/plain~x").status, 200);
    assert_eq!(up.requests()[1].target(), "/b/plain~x");
}

#[test]
fn set_headers_come_first_in_order_then_defaults_then_the_clients() {
    let got = sent(
        "location / {\n proxy_pass http://UP;\n proxy_set_header X-B b;\n \
         proxy_set_header Host custom;\n proxy_set_header X-Empty \"\";\n \
         proxy_set_header User-Agent \"\";\n proxy_set_header X-Req $request_method-$arg_a;\n}",
        "GET /p?a=7 HTTP/1.1\r\nHost: localhost\r\nUser-Agent: t\r\nX-Empty: z\r\n\
         X-Client: c\r\nx-b: lower\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(
        got.head_text(),
        "GET /p?a=7 HTTP/1.0\r\nX-B: b\r\nHost: custom\r\nX-Req: GET-7\r\n\
         Connection: close\r\nX-Client: c\r\n\r\n"
    );
}

#[test]
fn proxy_pass_request_headers_off_sends_only_the_set_ones() {
    let got = sent(
        "location / { proxy_pass http://UP; proxy_pass_request_headers off; \
         proxy_set_header X-A a; }",
        "GET / HTTP/1.1\r\nHost: localhost\r\nUser-Agent: t\r\nConnection: close\r\n\r\n",
    );
    let port = port_of(&got.head_text());
    assert_eq!(
        got.head_text(),
        format!("GET / HTTP/1.0\r\nX-A: a\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n")
    );
}

#[test]
fn the_body_goes_with_its_length_and_proxy_pass_request_body_off_still_announces_it() {
    let post = "POST /f HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\
                Content-Type: text/x\r\nConnection: close\r\n\r\nhello";
    let got = sent("location / { proxy_pass http://UP; }", post);
    assert_eq!(got.header("Content-Length").as_deref(), Some("5"));
    assert_eq!(got.body, b"hello");
    assert_eq!(got.header("Content-Type").as_deref(), Some("text/x"));

    // nginx still reads the body and still announces its length
    // ($proxy_internal_body_length is the client's Content-Length), but
    // sends no body: the auth_request idiom clears Content-Length itself.
    // The scripted upstream would wait for those 5 bytes: this one takes
    // what comes within a moment, whole, and answers.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Vec<u8>>::new()));
    let up = {
        let seen = seen.clone();
        Upstream::start(move |c| {
            c.wait_closed(std::time::Duration::from_millis(300));
            seen.lock().unwrap().push(c.pending().to_vec());
            c.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        })
    };
    let server = start(
        &up,
        "",
        "location / { proxy_pass http://UP; proxy_pass_request_body off; }\n\
         location /cleared { proxy_pass http://UP; proxy_pass_request_body off;\n \
         proxy_set_header Content-Length \"\"; }",
    );
    assert_eq!(request(&server, post).status, 200);
    let cleared = post.replace("/f", "/cleared");
    assert_eq!(request(&server, &cleared).status, 200);
    // A chunked body is announced by its decoded length.
    let chunked = "POST /c HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\
                   Connection: close\r\n\r\n2\r\nab\r\n1\r\nc\r\n0\r\n\r\n";
    assert_eq!(request(&server, chunked).status, 200);
    let seen = seen.lock().unwrap().clone();
    let text: Vec<String> = seen
        .iter()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect();
    assert!(text[0].starts_with("POST /f HTTP/1.0\r\n"), "{text:?}");
    assert!(text[0].contains("\r\nContent-Length: 5\r\n"), "{text:?}");
    assert!(
        text[0].ends_with("\r\n\r\n"),
        "no body after the head: {text:?}"
    );
    assert!(
        text[1].starts_with("POST /cleared HTTP/1.0\r\n"),
        "{text:?}"
    );
    assert!(!text[1].contains("Content-Length"), "{text:?}");
    assert!(text[1].ends_with("\r\n\r\n"), "{text:?}");
    assert!(text[2].contains("\r\nContent-Length: 3\r\n"), "{text:?}");
    assert!(!text[2].contains("Transfer-Encoding"), "{text:?}");
    assert!(text[2].ends_with("\r\n\r\n"), "{text:?}");
}

#[test]
fn proxy_set_body_and_proxy_method_replace_the_clients() {
    let got = sent(
        "location / { proxy_pass http://UP; proxy_method PUT; proxy_set_body \"v=$arg_v\"; }",
        "POST /s?v=42 HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\
         Connection: close\r\n\r\nabc",
    );
    assert_eq!(got.method(), "PUT");
    assert_eq!(got.header("Content-Length").as_deref(), Some("4"));
    assert_eq!(got.body, b"v=42");
}

#[test]
fn host_is_the_proxy_host_of_the_url_or_the_group_name() {
    let up = Upstream::echo();
    let server = start(
        &up,
        "upstream backend { server UP; }",
        "location /g { proxy_pass http://backend;\n \
         proxy_set_header X-PH $proxy_host; proxy_set_header X-PP $proxy_port; }\n\
         location /h { proxy_pass http://UP; proxy_set_header Host $host:$server_port; }",
    );
    assert_eq!(get(&server, "/g").status, 200);
    let got = &up.requests()[0];
    assert_eq!(got.header("Host").as_deref(), Some("backend"));
    assert_eq!(got.header("X-PH").as_deref(), Some("backend"));
    assert_eq!(got.header("X-PP").as_deref(), Some("80"));
    assert_eq!(get(&server, "/h").status, 200);
    assert_eq!(
        up.requests()[1].header("Host"),
        Some(format!("localhost:{}", server.port()))
    );
}

/// Three requests, each on a fresh client connection; how many upstream
/// connections they took.
fn connections_for_three(http: &str, location: &str) -> usize {
    let up = Upstream::echo();
    let server = start(&up, http, location);
    for _ in 0..3 {
        let r = get(&server, "/k");
        assert_eq!(r.status, 200, "{}", server.stderr());
    }
    let requests = up.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.request_line() == "GET /k HTTP/1.1")
    );
    up.connections()
}

#[test]
fn http_1_1_with_keepalive_reuses_one_upstream_connection() {
    let kept = connections_for_three(
        "upstream u { server UP; keepalive 4; }",
        "location / { proxy_pass http://u; proxy_http_version 1.1;\n \
         proxy_set_header Connection \"\"; }",
    );
    assert_eq!(kept, 1);
    // Without `keepalive`, or while `Connection: close` is sent, each
    // request gets its own connection.
    let no_cache = connections_for_three(
        "upstream u { server UP; }",
        "location / { proxy_pass http://u; proxy_http_version 1.1;\n \
         proxy_set_header Connection \"\"; }",
    );
    assert_eq!(no_cache, 3);
    let close = connections_for_three(
        "upstream u { server UP; keepalive 4; }",
        "location / { proxy_pass http://u; proxy_http_version 1.1; }",
    );
    assert_eq!(close, 3);
}

#[test]
fn a_connection_is_not_reused_after_a_response_that_closes_it() {
    // HTTP/1.0 answers and `Connection: close` end the connection.
    let up = Upstream::fixed(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok");
    let server: Server = start(
        &up,
        "upstream u { server UP; keepalive 4; }",
        "location / { proxy_pass http://u; proxy_http_version 1.1;\n \
         proxy_set_header Connection \"\"; }",
    );
    for _ in 0..2 {
        assert_eq!(common::body(&get(&server, "/")), "ok");
    }
    assert_eq!(up.connections(), 2);
}
