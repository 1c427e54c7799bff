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

/// The `http` directives of the run of [`cases`]: the group
/// `var-group*` names in a variable.
pub const HTTP: &str = "upstream varconf { server UP; }";

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
    let mut all = vec![
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
    ];
    all.extend(variable_url_cases());
    all
}

/// `proxy_pass` with variables, every form `ngx_http_proxy_eval` reads:
/// the evaluated URL's URI part goes alone (no location prefix replaced,
/// no client arguments added), a URI that is only a query gets a `/`
/// before it, and a URL without one sends the client's URI as the static
/// `proxy_pass http://h;` does. `$proxy_host` and `$proxy_port` are sent
/// as `X-PH` to compare them too.
fn variable_url_cases() -> Vec<Case> {
    let c = |name, location, request| Case {
        name,
        location,
        answer: None,
        request,
    };
    vec![
        // Laravel Octane's configuration.
        c(
            "var-query",
            "set $suffix \"?x=1\"; proxy_pass http://UP$suffix;",
            GET,
        ),
        c(
            "var-query-from-args",
            "proxy_pass http://UP$is_args$args;",
            GET,
        ),
        c(
            "var-query-empty",
            "proxy_pass http://UP$is_args$args;",
            "GET /var-query-empty/x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        ),
        c(
            "var-empty",
            "set $suffix \"\"; proxy_pass http://UP$suffix;",
            GET,
        ),
        c(
            "var-empty-rewritten",
            "set $suffix \"\"; rewrite ^ /var-empty-rewritten/a%20b break;\n \
             proxy_pass http://UP$suffix;",
            GET,
        ),
        c(
            "var-host",
            "set $h UP; proxy_pass http://$h; proxy_set_header X-PH \"$proxy_host|$proxy_port\";",
            GET,
        ),
        c(
            "var-port",
            "set $p {upport}; proxy_pass http://127.0.0.1:$p/var-port-to/;\n \
             proxy_set_header X-PH \"$proxy_host|$proxy_port\";",
            GET,
        ),
        c(
            "var-port-zero",
            "set $p 0{upport}; proxy_pass http://127.0.0.1:$p;\n \
             proxy_set_header X-PH \"$proxy_host|$proxy_port\";",
            GET,
        ),
        c("var-uri", "proxy_pass http://UP$uri;", GET),
        c(
            "var-uri-rewritten",
            "rewrite ^ /var-uri-rewritten/new break; proxy_pass http://UP$uri;",
            GET,
        ),
        c(
            "var-capture",
            "location ~ ^/var-capture/(.*)$ { proxy_pass http://UP/to/$1; }",
            "GET /var-capture/a%20b?a=1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        ),
        c("var-request-uri", "proxy_pass http://UP$request_uri;", GET),
        c(
            "var-args",
            "set $a \"k=v\"; proxy_pass http://UP/var-args-to?$a;",
            GET,
        ),
        c(
            "var-whole",
            "set $target http://UP/var-whole-to; proxy_pass $target;\n \
             proxy_set_header X-PH \"$proxy_host|$proxy_port\";",
            GET,
        ),
        c(
            "var-whole-bare",
            "set $target http://UP; proxy_pass $target;",
            GET,
        ),
        c(
            "var-whole-query",
            "set $target http://UP?x=1; proxy_pass $target;",
            GET,
        ),
        c(
            "var-group",
            "set $g varconf; proxy_pass http://$g;\n \
             proxy_set_header X-PH \"$proxy_host|$proxy_port\";",
            GET,
        ),
        c(
            "var-group-uri",
            "set $g varconf; proxy_pass http://$g/var-group-to?q;",
            GET,
        ),
        c(
            "var-group-query",
            "set $g varconf; proxy_pass http://$g?q;",
            GET,
        ),
        c(
            "var-group-port",
            "set $g varconf; proxy_pass http://$g:{upport};",
            GET,
        ),
        c("var-name", "proxy_pass http://$host:{upport};", GET),
        c("var-nothing", "set $t \"\"; proxy_pass $t;", GET),
        c("var-scheme-only", "set $t \"http://\"; proxy_pass $t;", GET),
        c("var-bad-scheme", "set $t \"ftp://UP\"; proxy_pass $t;", GET),
        c("var-no-host", "set $t \"http:///x\"; proxy_pass $t;", GET),
        c(
            "var-bad-port",
            "set $t \"http://UP0000\"; proxy_pass $t;",
            GET,
        ),
        // The static forms beside them.
        c("static-query", "proxy_pass http://UP?x=1;", GET),
        c(
            "static-rewritten",
            "rewrite ^ /static-rewritten/a%20b break; proxy_pass http://UP;",
            GET,
        ),
        c(
            "quoted-args",
            "proxy_pass http://UP/quoted-args-to/;",
            "GET /quoted-args/\u{e9}?k=%20 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        ),
        c(
            "rewrite-last",
            "rewrite ^/rewrite-last/x$ /rewrite-last/to/a%20b last;\n \
             location /rewrite-last/to { proxy_pass http://UP; }",
            GET,
        ),
        c(
            "rewrite-last-internal",
            "rewrite ^/rewrite-last-internal/x$ /rewrite-last-internal/to/y last;\n \
             location /rewrite-last-internal/to { internal; proxy_pass http://UP; }",
            GET,
        ),
        c(
            "rewrite-same",
            "rewrite ^(.*)$ $1 break; proxy_pass http://UP;",
            "GET /rewrite-same/%7e//x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        ),
        c(
            "rewrite-uri-part",
            "rewrite ^/rewrite-uri-part/(.*)$ /rewrite-uri-part/new/$1 break;\n \
             proxy_pass http://UP/to/;",
            GET,
        ),
        c("set-args", "set $args b=2; proxy_pass http://UP;", GET),
        c(
            "static-rewritten-plain",
            "rewrite ^ /static-rewritten-plain/ab break; proxy_pass http://UP;",
            GET,
        ),
        c(
            "static-port-zero",
            "proxy_pass http://127.0.0.1:0{upport};\n \
             proxy_set_header X-PH \"$proxy_host|$proxy_port\";",
            GET,
        ),
    ]
}

/// An answer with every field nginx hides by default but
/// `X-Accel-Redirect` (the others steer the response in ways the client
/// does not see, or only in its `Content-Type`), and two others that the
/// header cases hide or pass.
const FIELDS_ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nDate: Mon, 01 Jan 2001 00:00:00 GMT\r\n\
    Server: upstream-server\r\nX-Pad: pad\r\nX-Accel-Expires: 100\r\nX-Foo: foo\r\n\
    X-Bar: bar\r\nX-Accel-Buffering: yes\r\nX-Accel-Limit-Rate: 0\r\n\
    Content-Type: text/plain\r\nX-Accel-Charset: koi8-r\r\nContent-Length: 2\r\n\r\nok";

/// [`FIELDS_ANSWER`] with an `X-Accel-Redirect` (to `/target/`), for
/// `proxy_ignore_headers`.
const ACCEL_ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nX-Accel-Redirect: /target/t\r\n\
    X-Foo: foo\r\nContent-Length: 2\r\n\r\nok";

/// The request of a header case: the nested location `in` under it.
const GET_IN: &str = "GET /{name}/in/x HTTP/1.1\r\nHost: localhost\r\nUser-Agent: t\r\n\
                      Connection: close\r\n\r\n";

/// The request of a header case that proxies from its own location.
const GET_OWN: &str = "GET /{name}/x HTTP/1.1\r\nHost: localhost\r\nUser-Agent: t\r\n\
                       Connection: close\r\n\r\n";

/// One run of the header cases: nginx and nowait with these `http` and
/// `server` directives beside the cases' locations.
pub struct Suite {
    /// What it tests, for the report.
    pub name: &'static str,
    /// Directives in `http`, before the server.
    pub http: &'static str,
    /// Directives in the server, before the cases' locations.
    pub server: &'static str,
    /// The cases.
    pub cases: Vec<Case>,
}

/// The `proxy_*` header family inherited through levels, as nginx's
/// `ngx_http_proxy_merge_loc_conf` and `ngx_http_upstream_hide_headers_hash`
/// merge it: `proxy_hide_header` and `proxy_pass_header` are inherited
/// together when a level sets neither, each on its own otherwise, and the
/// pass list takes names off the whole hide list (nginx's defaults and
/// the level's `proxy_hide_header` alike); `proxy_set_header` entries are
/// inherited only by a level that sets none; `proxy_ignore_headers` is
/// replaced by a level's own. Each case's nested locations proxy on their
/// own (`proxy_pass` is never inherited by a nested location).
pub fn header_suites() -> Vec<Suite> {
    let c = |name, location, answer, request| Case {
        name,
        location,
        answer: Some(answer),
        request,
    };
    let f = FIELDS_ANSWER;
    let location = vec![
        c(
            "hdr-own",
            "proxy_pass http://UP;",
            f,
            GET_OWN,
        ),
        c(
            "hdr-pass-inherited",
            "proxy_pass_header Date; proxy_pass_header Server;\n \
             location /hdr-pass-inherited/in { proxy_pass http://UP; }",
            f,
            GET_IN,
        ),
        c(
            "hdr-pass-inherited-proxied",
            "proxy_pass http://UP; proxy_pass_header Date; proxy_pass_header Server;\n \
             location /hdr-pass-inherited-proxied/in { proxy_pass http://UP; }",
            f,
            GET_IN,
        ),
        c(
            "hdr-pass-parent-itself",
            "proxy_pass http://UP; proxy_pass_header Date; proxy_pass_header Server;\n \
             location /hdr-pass-parent-itself/in { proxy_pass http://UP; }",
            f,
            GET_OWN,
        ),
        c(
            "hdr-hide-inherited",
            "proxy_hide_header X-Foo;\n \
             location /hdr-hide-inherited/in { proxy_pass http://UP; }",
            f,
            GET_IN,
        ),
        c(
            "hdr-hide-then-pass",
            "proxy_hide_header X-Foo;\n \
             location /hdr-hide-then-pass/in { proxy_pass http://UP; proxy_pass_header X-Foo; }",
            f,
            GET_IN,
        ),
        c(
            "hdr-pass-then-hide",
            "proxy_pass_header Server; proxy_pass_header X-Pad;\n \
             location /hdr-pass-then-hide/in { proxy_pass http://UP; proxy_hide_header Server;\n \
             proxy_hide_header X-Bar; }",
            f,
            GET_IN,
        ),
        c(
            "hdr-own-lists-replace",
            "proxy_hide_header X-Foo; proxy_pass_header Date;\n \
             location /hdr-own-lists-replace/in { proxy_pass http://UP; proxy_hide_header X-Bar;\n \
             proxy_pass_header X-Pad; }",
            f,
            GET_IN,
        ),
        c(
            "hdr-hide-and-pass",
            "proxy_pass http://UP; proxy_hide_header X-Foo; proxy_pass_header X-Foo;\n \
             proxy_hide_header Date; proxy_pass_header Date;",
            f,
            GET_OWN,
        ),
        c(
            "hdr-pass-accel",
            "proxy_pass http://UP; proxy_pass_header X-Accel-Buffering;\n \
             proxy_pass_header X-Accel-Limit-Rate; proxy_pass_header X-Accel-Charset;\n \
             proxy_pass_header X-Accel-Expires; proxy_pass_header X-Pad;",
            f,
            GET_OWN,
        ),
        c(
            "hdr-pass-not-hidden",
            "proxy_pass http://UP; proxy_pass_header X-Foo; proxy_pass_header x-accel-expires;",
            f,
            GET_OWN,
        ),
        c(
            "hdr-two-deep",
            "proxy_pass_header Date; proxy_hide_header X-Foo;\n \
             location /hdr-two-deep/in { proxy_hide_header X-Bar;\n \
             location /hdr-two-deep/in/x { proxy_pass http://UP; } }",
            f,
            GET_IN,
        ),
        c(
            "hdr-set-inherited",
            "proxy_set_header X-A a; proxy_set_header Host h;\n \
             location /hdr-set-inherited/in { proxy_pass http://UP; }",
            f,
            GET_IN,
        ),
        c(
            "hdr-set-own",
            "proxy_set_header X-A a; proxy_set_header Host h;\n \
             location /hdr-set-own/in { proxy_pass http://UP; proxy_set_header X-B b; }",
            f,
            GET_IN,
        ),
        c(
            "hdr-ignore-inherited",
            "proxy_ignore_headers X-Accel-Redirect;\n \
             location /hdr-ignore-inherited/in { proxy_pass http://UP; }",
            ACCEL_ANSWER,
            GET_IN,
        ),
        c(
            "hdr-ignore-own",
            "proxy_ignore_headers X-Accel-Redirect;\n \
             location /hdr-ignore-own/in { proxy_pass http://UP; proxy_ignore_headers X-Accel-Expires; }",
            ACCEL_ANSWER,
            GET_IN,
        ),
        c(
            "hdr-hide-framing",
            "proxy_pass http://UP; proxy_hide_header Content-Length; proxy_hide_header Content-Type;",
            b"HTTP/1.1 200 OK\r\nContent-Type: text/x\r\nContent-Length: 2\r\n\r\nok",
            GET_OWN,
        ),
        c(
            "hdr-hide-location",
            "proxy_pass http://UP; proxy_hide_header Location; proxy_hide_header Refresh;",
            b"HTTP/1.1 302 Found\r\nLocation: /x\r\nRefresh: 0; url=/y\r\nContent-Length: 0\r\n\r\n",
            GET_OWN,
        ),
        c(
            "hdr-hide-entity",
            "proxy_pass http://UP; proxy_hide_header ETag; proxy_hide_header Last-Modified;\n \
             proxy_hide_header Accept-Ranges;",
            b"HTTP/1.1 200 OK\r\nETag: \"e\"\r\nLast-Modified: Mon, 01 Jan 2001 00:00:00 GMT\r\n\
              Accept-Ranges: bytes\r\nContent-Length: 2\r\n\r\nok",
            GET_OWN,
        ),
        c(
            "hdr-pass-hop",
            "proxy_pass http://UP; proxy_pass_header Connection; proxy_pass_header Keep-Alive;\n \
             proxy_pass_header Transfer-Encoding;",
            b"HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\nConnection: x-foo\r\nContent-Length: 2\r\n\r\nok",
            GET_OWN,
        ),
        c(
            "hdr-pass-regex-nested",
            "proxy_pass_header Date; proxy_pass_header Server;\n \
             location ~ \\.php$ { proxy_pass http://UP; }",
            f,
            "GET /hdr-pass-regex-nested/in/x.php HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        ),
        c(
            "hdr-pass-if",
            "proxy_pass http://UP; proxy_pass_header Date; proxy_pass_header Server;\n \
             if ($http_user_agent = t) { set $b 1; }",
            f,
            GET_OWN,
        ),
        c(
            "hdr-pass-limit-except",
            "proxy_pass http://UP; proxy_pass_header Date; proxy_pass_header Server;\n \
             limit_except POST { allow all; }",
            f,
            GET_OWN,
        ),
        c(
            "hdr-pass-head",
            "proxy_pass_header Date; proxy_pass_header Server;\n \
             location /hdr-pass-head/in { proxy_pass http://UP; }",
            f,
            "HEAD /hdr-pass-head/in/x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        ),
        c(
            "hdr-hash-sizes",
            "proxy_headers_hash_max_size 1024; proxy_headers_hash_bucket_size 128;\n \
             proxy_pass_header Server;\n \
             location /hdr-hash-sizes/in { proxy_pass http://UP; proxy_headers_hash_max_size 256; }",
            f,
            GET_IN,
        ),
    ];
    // The settings of a level above every location: the locations set
    // nothing, their own, or nest.
    let outer = |prefix: &'static str| -> Vec<Case> {
        let names: [&'static str; 6] = match prefix {
            "srv" => [
                "srv-nothing",
                "srv-own-hide",
                "srv-own-pass",
                "srv-own-set",
                "srv-nested",
                "srv-nested-own",
            ],
            _ => [
                "http-nothing",
                "http-own-hide",
                "http-own-pass",
                "http-own-set",
                "http-nested",
                "http-nested-own",
            ],
        };
        let locations: [&'static str; 6] = match prefix {
            "srv" => [
                "proxy_pass http://UP;",
                "proxy_pass http://UP; proxy_hide_header X-Bar;",
                "proxy_pass http://UP; proxy_pass_header X-Foo;",
                "proxy_pass http://UP; proxy_set_header X-L l;",
                "location /srv-nested/in { proxy_pass http://UP; }",
                "proxy_pass_header X-Pad; location /srv-nested-own/in { proxy_pass http://UP; }",
            ],
            _ => [
                "proxy_pass http://UP;",
                "proxy_pass http://UP; proxy_hide_header X-Bar;",
                "proxy_pass http://UP; proxy_pass_header X-Foo;",
                "proxy_pass http://UP; proxy_set_header X-L l;",
                "location /http-nested/in { proxy_pass http://UP; }",
                "proxy_pass_header X-Pad; location /http-nested-own/in { proxy_pass http://UP; }",
            ],
        };
        names
            .into_iter()
            .zip(locations)
            .enumerate()
            .map(|(i, (name, location))| c(name, location, f, if i < 4 { GET_OWN } else { GET_IN }))
            .collect()
    };
    let levels = "proxy_pass_header Date; proxy_pass_header Server; proxy_hide_header X-Foo;\n\
                  proxy_set_header X-Level level;";
    vec![
        Suite {
            name: "locations",
            http: "",
            server: "",
            cases: location,
        },
        Suite {
            name: "server level",
            http: "",
            server: levels,
            cases: outer("srv"),
        },
        Suite {
            name: "http level",
            http: levels,
            server: "",
            cases: outer("http"),
        },
    ]
}
