//! The reverse proxy's directives checked against nginx itself: each
//! configuration here is tested with `nowait -t` and with nginx 1.22's
//! `nginx -t` (Debian's `/usr/sbin/nginx`, which must be installed: the
//! tests fail without it), and the first `[emerg]` message of each must be
//! the same text, file and line included. nowait reports every error and
//! nginx only the first; these configurations have one error each, and
//! nowait must report only that one (no follow-on errors).
//!

mod common;

use common::nginx_t::{Conf, SERVER, check_bad, check_good, http, messages, s};

#[test]
#[rustfmt::skip]
fn bad_upstream_blocks() {
    check_bad(vec![
        ("unknown-param", format!("upstream u {{ server 127.0.0.1:1 bogus=1; }} {}", s("")), "invalid parameter \"bogus=1\"", Some(3)),
        ("weight-zero", format!("upstream u {{ server 127.0.0.1:1 weight=0; }} {}", s("")), "invalid parameter \"weight=0\"", Some(3)),
        ("max-fails-empty", format!("upstream u {{ server 127.0.0.1:1 max_fails=; }} {}", s("")), "invalid parameter \"max_fails=\"", Some(3)),
        ("fail-timeout-ms", format!("upstream u {{ server 127.0.0.1:1 fail_timeout=1ms; }} {}", s("")), "invalid parameter \"fail_timeout=1ms\"", Some(3)),
        ("backup-with-hash", format!("upstream u {{ hash $uri; server 127.0.0.1:1 backup; }} {}", s("")), "balancing method does not support parameter \"backup\"", Some(3)),
        ("backup-with-ip-hash", format!("upstream u {{ ip_hash; server 127.0.0.1:1 backup; }} {}", s("")), "balancing method does not support parameter \"backup\"", Some(3)),
        ("backup-with-random", format!("upstream u {{ random; server 127.0.0.1:1 backup; }} {}", s("")), "balancing method does not support parameter \"backup\"", Some(3)),
        ("random-three", format!("upstream u {{ random three; server 127.0.0.1:1; }} {}", s("")), "invalid parameter \"three\"", Some(3)),
        ("random-two-foo", format!("upstream u {{ random two foo; server 127.0.0.1:1; }} {}", s("")), "invalid parameter \"foo\"", Some(3)),
        ("hash-foo", format!("upstream u {{ hash $uri foo; server 127.0.0.1:1; }} {}", s("")), "invalid parameter \"foo\"", Some(3)),
        ("hash-three-args", format!("upstream u {{ hash a b c; server 127.0.0.1:1; }} {}", s("")), "invalid number of arguments in \"hash\" directive", Some(3)),
        ("ip-hash-arg", format!("upstream u {{ ip_hash x; server 127.0.0.1:1; }} {}", s("")), "invalid number of arguments in \"ip_hash\" directive", Some(3)),
        ("host-not-found", format!("upstream u {{ server nonexistent.invalid:80; }} {}", s("")), "host not found in upstream \"nonexistent.invalid:80\"", Some(3)),
        ("invalid-port", format!("upstream u {{ server localhost:0; }} {}", s("")), "invalid port in upstream \"localhost:0\"", Some(3)),
        ("invalid-host", format!("upstream u {{ server a/b; }} {}", s("")), "invalid host in upstream \"a/b\"", Some(3)),
        ("invalid-ipv6", format!("upstream u {{ server [zz]:80; }} {}", s("")), "invalid IPv6 address in upstream \"[zz]:80\"", Some(3)),
        ("unix-no-path", format!("upstream u {{ server unix:; }} {}", s("")), "no path in the unix domain socket in upstream \"unix:\"", Some(3)),
        ("unix-too-long", format!("upstream u {{ server unix:/{}; }} {}", "a".repeat(120), s("")), "too long path in the unix domain socket in upstream \"unix:/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"", Some(3)),
        ("no-servers", format!("upstream u {{\n}}\n{}", s("")), "no servers are inside upstream", Some(4)),
        ("only-backups", format!("upstream u {{\nserver 127.0.0.1:1 backup;\n}}\n{}", s("")), "no servers in upstream \"u\"", Some(3)),
        ("duplicate-upstream", format!("upstream u {{ server 127.0.0.1:1; }}\nupstream U {{ server 127.0.0.1:2; }} {}", s("")), "duplicate upstream \"U\"", Some(4)),
        ("keepalive-zero", format!("upstream u {{ keepalive 0; server 127.0.0.1:1; }} {}", s("")), "invalid value \"0\" in \"keepalive\" directive", Some(3)),
        ("keepalive-twice", format!("upstream u {{ keepalive 2; keepalive 3; server 127.0.0.1:1; }} {}", s("")), "\"keepalive\" directive is duplicate", Some(3)),
        ("keepalive-timeout", format!("upstream u {{ keepalive_timeout 1y; server 127.0.0.1:1; }} {}", s("")), "\"keepalive_timeout\" directive invalid value", Some(3)),
        ("keepalive-requests", format!("upstream u {{ keepalive_requests x; server 127.0.0.1:1; }} {}", s("")), "\"keepalive_requests\" directive invalid number", Some(3)),
        ("keepalive-time-twice", format!("upstream u {{ keepalive_time 1h; keepalive_time 2h; server 127.0.0.1:1; }} {}", s("")), "\"keepalive_time\" directive is duplicate", Some(3)),
        ("zone-too-small", format!("upstream u {{ zone z 1k; server 127.0.0.1:1; }} {}", s("")), "zone \"z\" is too small", Some(3)),
        ("zone-no-size", format!("upstream u {{ zone z; server 127.0.0.1:1; }} {}", s("")), "zero size shared memory zone \"z\"", None),
        ("zone-sizes", format!("upstream u {{ zone z 64k; server 127.0.0.1:1; }}\nupstream v {{ zone z 128k; server 127.0.0.1:1; }} {}", s("")), "the size 131072 of shared memory zone \"z\" conflicts with already declared size 65536", Some(4)),
        ("zone-cache", format!("proxy_cache_path cache keys_zone=z:10m;\nupstream u {{ zone z 64k; server 127.0.0.1:1; }} {}", s("")), "the shared memory zone \"z\" is already declared for a different use", Some(4)),
        ("upstream-in-server", s("upstream u { server 127.0.0.1:1; }"), "\"upstream\" directive is not allowed here", Some(3)),
    ]);
}

#[test]
#[rustfmt::skip]
fn bad_proxy_pass() {
    check_bad(vec![
        ("bad-prefix", s("location / { proxy_pass ftp://x; }"), "invalid URL prefix", Some(3)),
        ("no-host", s("location / { proxy_pass http://; }"), "no host in upstream \"\"", Some(3)),
        ("bad-port", s("location / { proxy_pass http://localhost:65536/; }"), "invalid port in upstream \"localhost:65536/\"", Some(3)),
        ("bad-v6", s("location / { proxy_pass http://[::1; }"), "invalid host in upstream \"[::1\"", Some(3)),
        ("unix-no-path", s("location / { proxy_pass http://unix:; }"), "no path in the unix domain socket in upstream \"unix:\"", Some(3)),
        // Resolved once the http block is read, reported where it was named.
        ("host-not-found", format!("{SERVER}\nlocation / {{\nproxy_pass http://nonexistent.invalid;\n}}\n}}"), "host not found in upstream \"nonexistent.invalid\"", Some(5)),
        ("uri-in-regex-location", s("location ~ /x { proxy_pass http://127.0.0.1:1/x; }"), "\"proxy_pass\" cannot have URI part in location given by regular expression, or inside named location, or inside \"if\" statement, or inside \"limit_except\" block", Some(3)),
        ("args-in-named-location", s("location @n { proxy_pass http://127.0.0.1:1?a; }"), "\"proxy_pass\" cannot have URI part in location given by regular expression, or inside named location, or inside \"if\" statement, or inside \"limit_except\" block", Some(3)),
        ("twice", s("location / { proxy_pass http://127.0.0.1:1; proxy_pass http://127.0.0.1:2; }"), "\"proxy_pass\" directive is duplicate", Some(3)),
        ("in-server", s("proxy_pass http://127.0.0.1:1;"), "\"proxy_pass\" directive is not allowed here", Some(3)),
        ("block-with-port", format!("upstream b {{ server 127.0.0.1:1; }}\n{}", s("location / { proxy_pass http://b:8080; }")), "upstream \"b\" may not have port 8080", Some(4)),
        // The block comes later: nginx names the proxy_pass's line.
        ("block-after-port", format!("{SERVER}\nlocation / {{\nproxy_pass http://b:8080;\n}}\n}}\nupstream b {{ server 127.0.0.1:1; }}"), "upstream \"b\" may not have port 8080", Some(5)),
    ]);
}

#[test]
#[rustfmt::skip]
fn bad_proxy_settings() {
    check_bad(vec![
        ("buffers-zero", s("location / { proxy_buffers 0 4k; }"), "\"proxy_buffers\" directive invalid value", Some(3)),
        ("buffers-size", s("location / { proxy_buffers 8 4x; }"), "\"proxy_buffers\" directive invalid value", Some(3)),
        ("buffer-size", s("location / { proxy_buffer_size 1x; }"), "\"proxy_buffer_size\" directive invalid value", Some(3)),
        ("http-version", s("location / { proxy_http_version 2.0; }"), "invalid value \"2.0\"", Some(3)),
        ("next-upstream", s("location / { proxy_next_upstream error bogus; }"), "invalid value \"bogus\"", Some(3)),
        ("next-upstream-tries", s("location / { proxy_next_upstream_tries x; }"), "\"proxy_next_upstream_tries\" directive invalid number", Some(3)),
        ("ignore-headers", s("location / { proxy_ignore_headers Vary X-Foo; }"), "invalid value \"X-Foo\"", Some(3)),
        ("timeout-years", s("location / { proxy_read_timeout 1y; }"), "\"proxy_read_timeout\" directive invalid value", Some(3)),
        ("timeout-twice", s("location / { proxy_connect_timeout 1s; proxy_connect_timeout 2s; }"), "\"proxy_connect_timeout\" directive is duplicate", Some(3)),
        ("flag", s("location / { proxy_buffering maybe; }"), "invalid value \"maybe\" in \"proxy_buffering\" directive, it must be \"on\" or \"off\"", Some(3)),
        ("set-header-args", s("location / { proxy_set_header A; }"), "invalid number of arguments in \"proxy_set_header\" directive", Some(3)),
        ("set-body-twice", s("location / { proxy_set_body a; proxy_set_body b; }"), "\"proxy_set_body\" directive is duplicate", Some(3)),
        ("method-twice", s("location / { proxy_method GET; proxy_method POST; }"), "\"proxy_method\" directive is duplicate", Some(3)),
        ("temp-path-levels", s("location / { proxy_temp_path /tmp/x 3 4 5; }"), "\"proxy_temp_path\" directive invalid value", Some(3)),
        ("temp-path-zero", s("location / { proxy_temp_path /tmp/x 0; }"), "\"proxy_temp_path\" directive invalid value", Some(3)),
        ("redirect-before-pass", s("location / { proxy_redirect default; proxy_pass http://127.0.0.1:1; }"), "\"proxy_redirect default\" should be placed after the \"proxy_pass\" directive", Some(3)),
        ("redirect-in-server", s("proxy_redirect default;"), "\"proxy_redirect default\" should be placed after the \"proxy_pass\" directive", Some(3)),
        ("redirect-variables", s("location / { proxy_pass http://$host; proxy_redirect default; }"), "\"proxy_redirect default\" cannot be used with \"proxy_pass\" directive with variables", Some(3)),
        ("redirect-off-twice", s("location / { proxy_redirect off; proxy_redirect off; }"), "\"proxy_redirect\" directive is duplicate", Some(3)),
        ("redirect-rule-off", s("location / { proxy_redirect /a /b; proxy_redirect off; }"), "\"proxy_redirect\" directive is duplicate", Some(3)),
        ("redirect-word", s("location / { proxy_redirect foo; }"), "invalid parameter \"foo\"", Some(3)),
        ("client-body-in-file", s("location / { client_body_in_file_only maybe; }"), "invalid value \"maybe\"", Some(3)),
        ("client-body-buffer", s("location / { client_body_buffer_size 1x; }"), "\"client_body_buffer_size\" directive invalid value", Some(3)),
        ("client-body-timeout", s("location / { client_body_timeout 1M; }"), "\"client_body_timeout\" directive invalid value", Some(3)),
        ("temp-path-levels-differ", format!("client_body_temp_path tmp 1;\n{}", s("location / { proxy_temp_path tmp 2; }")), "the same path name \"PREFIX/tmp\" in FILE:3 has the different levels than", Some(4)),
        ("temp-path-is-a-cache", format!("proxy_temp_path tmp;\nproxy_cache_path tmp keys_zone=a:1m; {}", s("")), "the same path name \"PREFIX/tmp\" used in FILE:3 and", Some(4)),
    ]);
}

/// nginx checks buffer sizes when it merges levels, and names the line
/// where the http block closes.
#[test]
#[rustfmt::skip]
fn bad_buffer_sizes_when_merging() {
    let nested = |body: &str| format!("{SERVER}\nlocation / {{\n{body}\n}}\n}}\n");
    check_bad(vec![
        ("one-buffer", format!("proxy_buffers 1 4k;\n{}", s("")), "there must be at least 2 \"proxy_buffers\"", Some(5)),
        ("busy-too-large", nested("proxy_buffer_size 16k;"), "\"proxy_busy_buffers_size\" must be less than the size of all \"proxy_buffers\" minus one buffer", Some(9)),
        ("busy-too-small", nested("proxy_buffers 8 8k; proxy_busy_buffers_size 4k;"), "\"proxy_busy_buffers_size\" must be equal to or greater than the maximum of the value of \"proxy_buffer_size\" and one of the \"proxy_buffers\"", Some(9)),
        ("write-size", nested("proxy_temp_file_write_size 1k;"), "\"proxy_temp_file_write_size\" must be equal to or greater than the maximum of the value of \"proxy_buffer_size\" and one of the \"proxy_buffers\"", Some(9)),
        ("max-temp", nested("proxy_max_temp_file_size 1k;"), "\"proxy_max_temp_file_size\" must be equal to zero to disable temporary files usage or must be equal to or greater than the maximum of the value of \"proxy_buffer_size\" and one of the \"proxy_buffers\"", Some(9)),
    ]);
}

#[test]
#[rustfmt::skip]
fn bad_split_clients() {
    check_bad(vec![
        ("variable-name", format!("split_clients $uri x {{ * a; }} {}", s("")), "invalid variable name \"x\"", Some(3)),
        ("empty-variable", format!("split_clients $uri $ {{ * a; }} {}", s("")), "invalid variable name \"$\"", Some(3)),
        ("builtin-variable", format!("split_clients $uri $URI {{ * a; }} {}", s("")), "the duplicate \"URI\" variable", Some(3)),
        ("over-100", format!("split_clients $uri $x {{ 50% a; 60% b; }} {}", s("")), "percent total is greater than 100%", Some(3)),
        ("zero-percent", format!("split_clients $uri $x {{ 0% a; }} {}", s("")), "invalid percent value \"0%\"", Some(3)),
        ("three-decimals", format!("split_clients $uri $x {{ 33.333% a; }} {}", s("")), "invalid percent value \"33.333%\"", Some(3)),
        ("entry-block", format!("split_clients $uri $x {{ 50% a {{ }} }} {}", s("")), "unexpected \"{\"", Some(3)),
    ]);
}

/// nginx ignores an entry's extra words and reads past the arguments of an
/// entry without a value; nowait refuses both.
#[test]
fn split_clients_entries_need_one_value() {
    for entry in ["50% a b;", "50%;"] {
        let conf = Conf::new(
            "split-entry",
            &http(&format!("split_clients $uri $x {{ {entry} }} {}", s(""))),
        );
        let (code, err) = conf.nowait();
        assert_eq!(code, Some(1), "{entry}");
        assert_eq!(
            messages(&err, "emerg"),
            [format!(
                "invalid number of arguments in \"split_clients\" entry in {}:3",
                conf.file()
            )]
        );
    }
}

#[test]
fn good_configurations() {
    check_good(vec![
        (
            "every-upstream-parameter",
            format!(
                "upstream backend {{\n zone backend 64k;\n least_conn;\n\
                 server 127.0.0.1:8081 weight=3 max_fails=0 fail_timeout=5s max_conns=10;\n\
                 server localhost:8082 backup;\n server unix:/tmp/x.sock down;\n\
                 keepalive 16;\n keepalive_requests 100;\n keepalive_timeout 30s;\n keepalive_time 2h;\n}}\n\
                 upstream h {{ hash $request_uri consistent; server 127.0.0.1:1; }}\n\
                 upstream r {{ random two least_conn; server 127.0.0.1:1; }}\n\
                 upstream i {{ ip_hash; server [::1]:80; server 127.0.0.1; }}\n{}",
                s("location / { proxy_pass http://backend; }")
            ),
        ),
        (
            "every-proxy-directive",
            format!(
                "proxy_set_header Host $host;\n\
                 proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n\
                 proxy_http_version 1.1; proxy_buffers 16 8k; proxy_buffer_size 8k;\n\
                 proxy_busy_buffers_size 16k; proxy_max_temp_file_size 0;\n\
                 proxy_temp_file_write_size 16k; proxy_temp_path proxy_tmp 1 2;\n\
                 proxy_next_upstream error timeout http_502 non_idempotent;\n\
                 proxy_next_upstream_tries 3; proxy_next_upstream_timeout 10s;\n\
                 proxy_ignore_headers Vary Set-Cookie; proxy_hide_header X-Powered-By;\n\
                 proxy_pass_header Server; proxy_limit_rate 100k;\n\
                 client_body_buffer_size 16k; client_body_timeout 30s;\n\
                 client_body_in_file_only clean; client_body_in_single_buffer on;\n{}",
                s(
                    "location / { proxy_pass http://127.0.0.1:8080/x/; proxy_redirect default;\n\
                   proxy_redirect ~*^http://x(?<rest>.*)$ http://y$rest; }\n\
                   location /a/ { proxy_pass http://localhost:8080; proxy_redirect off;\n\
                   proxy_connect_timeout 500ms; proxy_read_timeout 1m; proxy_send_timeout 5s; }\n\
                   location /c { proxy_pass http://unix:/tmp/s.sock:/u/; proxy_method POST;\n\
                   proxy_set_body \"x=$arg_x\"; proxy_pass_request_body off;\n\
                   proxy_pass_request_headers off; }\n\
                   location /d { proxy_pass http://$host$request_uri; proxy_intercept_errors on;\n\
                   proxy_buffering off; proxy_request_buffering off; proxy_force_ranges on;\n\
                   proxy_socket_keepalive on; proxy_ignore_client_abort on;\n\
                   proxy_headers_hash_max_size 1024; proxy_headers_hash_bucket_size 128; }\n\
                   location ~ \\.php$ { proxy_pass http://127.0.0.1:9000; }\n\
                   location @named { proxy_pass http://127.0.0.1:9001; }"
                )
            ),
        ),
        (
            "block-after-proxy-pass",
            format!(
                "{}\nupstream backend {{ server 127.0.0.1:1; }}",
                s("location / { proxy_pass http://backend; }")
            ),
        ),
        (
            "backup-then-hash",
            format!(
                "upstream u {{ server 127.0.0.1:1; server 127.0.0.1:2 backup; hash $uri; }} {}",
                s("")
            ),
        ),
        (
            "warnings",
            format!(
                "upstream u {{ keepalive 4; least_conn; server 127.0.0.1:1; }}\n\
                 upstream v {{ server 127.0.0.1:1; ip_hash; hash $uri; }}\n{}",
                s(
                    "location / { proxy_next_upstream error error; proxy_ignore_headers vary Vary; }"
                )
            ),
        ),
        (
            "split-clients-changeable",
            format!(
                "split_clients $uri $args {{ 50% a; * b; }}\nsplit_clients $uri $http_x {{ * a; }} {}",
                s("")
            ),
        ),
        (
            "dynamic-any-scheme",
            s("location / { proxy_pass ftp://$host; }"),
        ),
    ]);
}

/// The header tables nginx builds while merging (`proxy_headers_hash`):
/// a size nothing fits is an `[emerg]` without a place, at the first level
/// that builds a table with it.
#[test]
#[rustfmt::skip]
fn bad_header_hash_sizes() {
    check_bad(vec![
        ("max-size-zero", format!("proxy_headers_hash_max_size 0; {}", s("")), "could not build proxy_headers_hash, you should increase proxy_headers_hash_max_size: 0", None),
        ("bucket-too-large", format!("proxy_headers_hash_bucket_size 100000; {}", s("")), "could not build proxy_headers_hash, too large proxy_headers_hash_bucket_size: 100032", None),
        ("location-hides", s("location / { proxy_headers_hash_max_size 0; proxy_hide_header X-A; }"), "could not build proxy_headers_hash, you should increase proxy_headers_hash_max_size: 0", None),
        ("location-sets", s("location / { proxy_headers_hash_max_size 0; proxy_set_header X-A a; }"), "could not build proxy_headers_hash, you should increase proxy_headers_hash_max_size: 0", None),
        ("long-name", s(&format!("location / {{ proxy_hide_header X-{}; }}", "a".repeat(45))), "could not build proxy_headers_hash, you should increase proxy_headers_hash_bucket_size: 64", None),
    ]);
}

/// Where nginx builds the header tables, and so prints its `could not
/// build optimal proxy_headers_hash` warning: each server that writes no
/// `proxy_set_header` under an http level that wrote none builds its own
/// set table; a level builds its hidden table only with lists of its own
/// (or under an http level none built yet), its set table only with
/// entries of its own, a caching one its cache table once.
#[test]
#[rustfmt::skip]
fn header_hash_warnings_where_nginx_builds_tables() {
    check_good(vec![
        ("location-inherits", s("location / { proxy_headers_hash_max_size 0; }")),
        ("two-servers", format!("proxy_headers_hash_max_size 2; {} {}", s(""), s("").replace("18080", "18081"))),
        ("two-servers-entries", format!("proxy_headers_hash_max_size 2; proxy_set_header X-A a; {} {}", s(""), s("").replace("18080", "18081"))),
        ("nested", format!("proxy_headers_hash_max_size 2; {}", s("location / { proxy_set_header A b; location /x { proxy_pass_header Date; } location /y { } }"))),
        ("hidden-at-http", format!("proxy_headers_hash_max_size 5; proxy_hide_header X-Aaaa; proxy_hide_header X-Bbbbbbbb; proxy_pass_header Date; {} {}", s(""), s("proxy_hide_header Y;").replace("18080", "18081"))),
        ("cached", format!("proxy_cache_path cache keys_zone=z:1m; proxy_headers_hash_max_size 3; {}", s("location / { proxy_cache z; location /a { } } location /b { proxy_cache z; proxy_set_header X y; } location /c { proxy_store on; }"))),
        ("a-default-table-at-eight", s("location / { proxy_headers_hash_max_size 8; proxy_pass_header X-Foo; }")),
        ("passed-names-leave", s(&format!("location / {{ proxy_hide_header X-{0}; proxy_pass_header X-{0}; }}", "a".repeat(45)))),
    ]);
}

/// A fixture of `tests/tls/`, as a configuration names it.
macro_rules! tls_fixture {
    ($name:literal) => {
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/tls/", $name)
    };
}

/// `proxy_pass https://…` and the `proxy_ssl_*` directives: accepted where
/// nginx accepts them (a plain `proxy_pass` does not read its TLS
/// settings), refused where nginx refuses them, in its words (the files
/// and checks of `ngx_http_proxy_set_ssl` at merge time, without a place).
#[test]
#[rustfmt::skip]
fn https_upstreams_and_proxy_ssl() {
    let all = format!(
        "location / {{ proxy_pass https://127.0.0.1:8443/x/; proxy_ssl_server_name on; proxy_ssl_name $host;
             proxy_ssl_verify on; proxy_ssl_verify_depth 2; proxy_ssl_trusted_certificate {};
             proxy_ssl_crl {}; proxy_ssl_certificate {}; proxy_ssl_certificate_key {};
             proxy_ssl_password_file {}; proxy_ssl_session_reuse off; proxy_ssl_protocols TLSv1.2 TLSv1.3;
             proxy_ssl_ciphers HIGH:!aNULL; proxy_ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256; }}",
        tls_fixture!("ca.crt"),
        tls_fixture!("ca.crl"),
        tls_fixture!("client.crt"),
        tls_fixture!("client.key"),
        tls_fixture!("password.txt"),
    );
    check_good(vec![
        ("https", s("location / { proxy_pass https://127.0.0.1; }")),
        ("https-group", format!("upstream u {{ server 127.0.0.1:1; }} {}", s("location / { proxy_pass https://u; }"))),
        ("https-vars", s("location / { proxy_pass https://$host; }")),
        ("every-directive", s(&all)),
        ("verify-unused-by-plain-http", s("location / { proxy_pass http://127.0.0.1; proxy_ssl_verify on; }")),
        ("protocols-add-up", s("location / { proxy_pass https://127.0.0.1; proxy_ssl_protocols TLSv1.2; proxy_ssl_protocols TLSv1.3; }")),
    ]);
    check_bad(vec![
        ("verify-without-ca", s("location / { proxy_pass https://127.0.0.1; proxy_ssl_verify on; }"), "no proxy_ssl_trusted_certificate for proxy_ssl_verify", None),
        ("verify-without-ca-vars", s("location / { proxy_pass http://$host; proxy_ssl_verify on; }"), "no proxy_ssl_trusted_certificate for proxy_ssl_verify", None),
        ("certificate-without-key", s(&format!("location / {{ proxy_pass https://127.0.0.1; proxy_ssl_certificate {}; }}", tls_fixture!("client.crt"))), concat!("no \"proxy_ssl_certificate_key\" is defined for certificate \"", env!("CARGO_MANIFEST_DIR"), "/tests/tls/client.crt\""), None),
        ("ciphers-no-match", s("location / { proxy_pass https://127.0.0.1; proxy_ssl_ciphers FOO; }"), "SSL_CTX_set_cipher_list(\"FOO\") failed (SSL: error:0A0000B9:SSL routines::no cipher match)", None),
        ("verify-duplicate", s("location / { proxy_pass https://127.0.0.1; proxy_ssl_verify off; proxy_ssl_verify off; }"), "\"proxy_ssl_verify\" directive is duplicate", Some(3)),
        ("name-duplicate", s("location / { proxy_pass https://127.0.0.1; proxy_ssl_name a; proxy_ssl_name b; }"), "\"proxy_ssl_name\" directive is duplicate", Some(3)),
        ("trusted-duplicate", s("location / { proxy_ssl_trusted_certificate a; proxy_ssl_trusted_certificate b; }"), "\"proxy_ssl_trusted_certificate\" directive is duplicate", Some(3)),
        ("depth-invalid", s("location / { proxy_ssl_verify_depth x; }"), "\"proxy_ssl_verify_depth\" directive invalid number", Some(3)),
        ("flag-invalid", s("location / { proxy_ssl_server_name yes; }"), "invalid value \"yes\" in \"proxy_ssl_server_name\" directive, it must be \"on\" or \"off\"", Some(3)),
        ("protocols-invalid", s("location / { proxy_ssl_protocols TLSv2; }"), "invalid value \"TLSv2\"", Some(3)),
        ("password-file-missing", s("location / { proxy_ssl_password_file /nonexistent.pass; }"), "open() \"/nonexistent.pass\" failed (2: No such file or directory)", Some(3)),
        ("https-no-host", s("location / { proxy_pass https://; }"), "no host in upstream \"\"", Some(3)),
    ]);
}
