//! The autoindex, gzip, gzip_static, gunzip and charset directives (and
//! `max_ranges`) checked against nginx itself: each bad configuration is
//! tested with `nowait -t` and `nginx -t`, and the first `[emerg]` must be
//! the same text, file and line included; each good one must pass both
//! with the same warnings.

mod common;

use common::nginx_t::{check_bad, check_good};

/// A server for the bodies below (nginx -t binds nothing).
fn s(body: &str) -> String {
    format!("server {{ listen 127.0.0.1:18080; {body} }}")
}

/// A location `/` inside a server.
fn l(body: &str) -> String {
    s(&format!("location / {{ {body} }}"))
}

#[test]
#[rustfmt::skip]
fn bad_values() {
    check_bad(vec![
        ("autoindex-value", l("autoindex maybe;"), "invalid value \"maybe\" in \"autoindex\" directive, it must be \"on\" or \"off\"", Some(3)),
        ("autoindex-format", l("autoindex_format yaml;"), "invalid value \"yaml\"", Some(3)),
        ("autoindex-format-twice", l("autoindex_format json; autoindex_format xml;"), "\"autoindex_format\" directive is duplicate", Some(3)),
        ("gzip-twice", l("gzip on; gzip off;"), "\"gzip\" directive is duplicate", Some(3)),
        ("gzip-level", l("gzip_comp_level 10;"), "value must be between 1 and 9", Some(3)),
        ("gzip-level-zero", l("gzip_comp_level 0;"), "value must be between 1 and 9", Some(3)),
        ("gzip-level-word", l("gzip_comp_level fast;"), "\"gzip_comp_level\" directive invalid number", Some(3)),
        ("gzip-window", l("gzip_window 3k;"), "\"gzip_window\" directive must be 512, 1k, 2k, 4k, 8k, 16k, or 32k", Some(3)),
        ("gzip-hash", l("gzip_hash 256k;"), "\"gzip_hash\" directive must be 512, 1k, 2k, 4k, 8k, 16k, 32k, 64k, or 128k", Some(3)),
        ("gzip-buffers", l("gzip_buffers 0 4k;"), "\"gzip_buffers\" directive invalid value", Some(3)),
        ("gzip-min-length", l("gzip_min_length x;"), "\"gzip_min_length\" directive invalid value", Some(3)),
        ("gzip-http-version", l("gzip_http_version 2.0;"), "invalid value \"2.0\"", Some(3)),
        ("gzip-proxied", l("gzip_proxied sometimes;"), "invalid value \"sometimes\"", Some(3)),
        ("gzip-in-server-if", s("if ($arg_a) { gzip on; }"), "\"gzip\" directive is not allowed here", Some(3)),
        ("gzip-static", l("gzip_static yes;"), "invalid value \"yes\"", Some(3)),
        ("gunzip-buffers", l("gunzip_buffers 4;"), "invalid number of arguments in \"gunzip_buffers\" directive", Some(3)),
        ("charset-twice", l("charset utf-8; charset koi8-r;"), "\"charset\" directive is duplicate", Some(3)),
        ("charset-map-in-server", s("charset_map a b { }"), "\"charset_map\" directive is not allowed here", Some(3)),
        ("charset-map-same", "charset_map a A { }".into(), "\"charset_map\" between the same charsets \"a\" and \"A\"", Some(3)),
        ("charset-map-twice", "charset_map a b { } charset_map b a { }".into(), "duplicate \"charset_map\" between \"b\" and \"a\"", Some(3)),
        ("charset-map-byte", "charset_map a b { 100 41; }".into(), "invalid value \"100\"", Some(3)),
        ("charset-map-dst", "charset_map a b { 41 zz; }".into(), "invalid value \"zz\"", Some(3)),
        ("charset-map-params", "charset_map a b { 41; }".into(), "invalid parameters number", Some(3)),
        ("charset-map-utf8", "charset_map a utf-8 { C1 41; }".into(), "invalid value \"41\"", Some(3)),
        ("charset-no-map", l("charset a; source_charset b;"), "no \"charset_map\" between the charsets \"b\" and \"a\"", None),
        ("override-charset", l("override_charset yes;"), "invalid value \"yes\" in \"override_charset\" directive, it must be \"on\" or \"off\"", Some(3)),
        ("max-ranges", l("max_ranges -1;"), "\"max_ranges\" directive invalid number", Some(3)),
    ]);
}

#[test]
#[rustfmt::skip]
fn good_configurations() {
    check_good(vec![
        ("autoindex-all", l("autoindex on; autoindex_format jsonp; autoindex_localtime on; autoindex_exact_size off;")),
        ("gzip-all", l("gzip on; gzip_buffers 16 8k; gzip_types text/css application/json; gzip_comp_level 9; gzip_window 512; gzip_hash 1k; postpone_gzipping 1k; gzip_no_buffer on; gzip_min_length 0; gzip_vary on; gzip_http_version 1.0; gzip_proxied expired no-cache no-store private no_last_modified no_etag auth; gzip_disable msie6 \"^curl\";")),
        ("gzip-types-duplicate", l("gzip_types text/html;")),
        ("gzip-types-star", l("gzip_types *; gzip_types text/css;")),
        ("gzip-proxied-duplicate", l("gzip_proxied any any;")),
        ("gzip-in-location-if", l("if ($arg_a) { gzip on; charset utf-8; source_charset utf-8; override_charset on; }")),
        ("gzip-static", l("gzip_static always; gunzip on; gunzip_buffers 4 16k;")),
        ("charset-maps", format!("charset_map koi8-r utf-8 {{ C1 D0B0; C2 D0B1; }} charset_map a b {{ 41 42; }} {}", l("charset utf-8; source_charset koi8-r; charset_types text/css *;"))),
        ("charset-var", l("charset $arg_c; source_charset $arg_s;")),
        ("charset-same-names", l("charset A; source_charset a;")),
        ("max-ranges", l("max_ranges 0;")),
    ]);
}
