//! The rewrite and map modules' directives checked against nginx itself:
//! each bad configuration is tested with `nowait -t` and `nginx -t`, and the
//! first `[emerg]` must be the same text, file and line included (see
//! `common/conf_check.rs`); each good one must pass both with the same
//! warnings.

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
fn bad_rewrite_directives() {
    check_bad(vec![
        ("rewrite-empty", l("rewrite ^ \"\";"), "empty replacement", Some(3)),
        ("rewrite-flag", l("rewrite ^ /x foo;"), "invalid parameter \"foo\"", Some(3)),
        ("rewrite-args", l("rewrite ^;"), "invalid number of arguments in \"rewrite\" directive", Some(3)),
        ("rewrite-in-http", "rewrite ^ /x;".into(), "\"rewrite\" directive is not allowed here", Some(3)),
        ("return-code", l("return abc;"), "invalid return code \"abc\"", Some(3)),
        ("return-big", l("return 1000;"), "invalid return code \"1000\"", Some(3)),
        ("break-arg", l("break x;"), "invalid number of arguments in \"break\" directive", Some(3)),
        ("set-name", l("set x 1;"), "invalid variable name \"x\"", Some(3)),
        ("set-dollar", l("set $ 1;"), "invalid variable name \"$\"", Some(3)),
        ("set-builtin", l("set $uri 1;"), "the duplicate \"uri\" variable", Some(3)),
        ("set-builtin-case", l("set $Host 1;"), "the duplicate \"Host\" variable", Some(3)),
        ("set-one-arg", l("set $x;"), "invalid number of arguments in \"set\" directive", Some(3)),
        ("if-no-paren", l("if $a { }"), "invalid condition \"$a\"", Some(3)),
        ("if-no-close", l("if ($a { }"), "invalid condition \"$a\"", Some(3)),
        ("if-empty", l("if () { }"), "invalid condition \")\"", Some(3)),
        ("if-operator", l("if ($a == b) { }"), "unexpected \"==\" in condition", Some(3)),
        ("if-too-many", l("if ($a = b c) { }"), "invalid condition \"$a\"", Some(3)),
        ("if-file-op", l("if (-z /x) { }"), "invalid condition \"-z\"", Some(3)),
        ("if-file-args", l("if (-f /x /y) { }"), "invalid condition \"-f\"", Some(3)),
        ("if-nested", l("set $a 1; if ($a) { if ($a) { } }"), "\"if\" directive is not allowed here", Some(3)),
        ("if-in-http", "if ($a) { }".into(), "\"if\" directive is not allowed here", Some(3)),
        ("if-no-block", l("if ($a);"), "directive \"if\" has no opening \"{\"", Some(3)),
        ("if-content-in-server-if", s("set $a 1; if ($a) { root /x; }"), "\"root\" directive is not allowed here", Some(3)),
        ("if-aio", l("set $a 1; if ($a) { aio off; }"), "\"aio\" directive is not allowed here", Some(3)),
        ("rewrite-log-value", l("rewrite_log maybe;"), "invalid value \"maybe\" in \"rewrite_log\" directive, it must be \"on\" or \"off\"", Some(3)),
        ("rewrite-log-twice", l("rewrite_log on; rewrite_log off;"), "\"rewrite_log\" directive is duplicate", Some(3)),
        ("uninit-warn-value", s("uninitialized_variable_warn x;"), "invalid value \"x\" in \"uninitialized_variable_warn\" directive, it must be \"on\" or \"off\"", Some(3)),
        ("proxy-pass-uri-in-if", l("if ($arg_a) { proxy_pass http://127.0.0.1/x; }"), "\"proxy_pass\" cannot have URI part in location given by regular expression, or inside named location, or inside \"if\" statement, or inside \"limit_except\" block", Some(3)),
    ]);
}

#[test]
#[rustfmt::skip]
fn bad_map_directives() {
    check_bad(vec![
        ("map-name", format!("map $uri x {{ }} {}", s("")), "invalid variable name \"x\"", Some(3)),
        ("map-builtin", format!("map $uri $uri {{ }} {}", s("")), "the duplicate \"uri\" variable", Some(3)),
        ("map-params", format!("map $uri $x {{ a; }} {}", s("")), "invalid number of the map parameters", Some(3)),
        ("map-three", format!("map $uri $x {{ a b c; }} {}", s("")), "invalid number of the map parameters", Some(3)),
        ("map-default-twice", format!("map $uri $x {{ default 1; default 2; }} {}", s("")), "duplicate default map parameter", Some(3)),
        ("map-conflict", format!("map $uri $x {{ a 1; A 2; }} {}", s("")), "conflicting parameter \"a\"", Some(3)),
        ("map-wildcard", format!("map $uri $x {{ hostnames; a*b 1; }} {}", s("")), "invalid hostname or wildcard \"a*b\"", Some(3)),
        ("map-wildcard-conflict", format!("map $uri $x {{ hostnames; .a.com 1; *.a.com 2; }} {}", s("")), "conflicting parameter \"*.a.com\"", Some(3)),
        ("map-dot-conflict", format!("map $uri $x {{ hostnames; a.com 1; .a.com 2; }} {}", s("")), "conflicting parameter \".a.com\"", Some(3)),
        ("map-block", format!("map $uri $x {{ a {{ }} }} {}", s("")), "unexpected \"{\"", Some(3)),
        ("map-bucket", format!("map $uri $x {{ {} 1; }} {}", "a".repeat(60), s("")), "could not build map_hash, you should increase map_hash_bucket_size: 64", None),
        ("map-max-size-zero", format!("map_hash_max_size 0; map $uri $x {{ a 1; }} {}", s("")), "could not build map_hash, you should increase map_hash_max_size: 0", None),
        ("map-size-after-map", format!("map $uri $x {{ }} map_hash_max_size 10; {}", s("")), "\"map_hash_max_size\" directive is duplicate", Some(3)),
        ("map-size-number", format!("map_hash_bucket_size x; {}", s("")), "\"map_hash_bucket_size\" directive invalid number", Some(3)),
        ("map-in-server", s("map $uri $x { }"), "\"map\" directive is not allowed here", Some(3)),
    ]);
}

#[test]
#[rustfmt::skip]
fn good_configurations() {
    check_good(vec![
        ("flags", l("rewrite ^/a /b last; rewrite ^/c /d break; rewrite ^/e /f redirect; rewrite ^/g /h permanent; rewrite ^ http://x/;")),
        ("args", l("rewrite ^ /x?a=b? last; rewrite ^ /y?;")),
        ("set-changeable", l("set $args a; set $limit_rate 1k; set $http_x 1; set $arg_y 2; set $x $uri;")),
        ("if-all", l("if ($a) { } if ($a = b) { } if ($a != \"b\") { } if ($a ~ ^x) { } if ($a ~* x) { } if ($a !~ x) { } if ($a !~* x) { } if (-f /x) { } if (!-f /x) { } if (-d /x) { } if (!-d /x) { } if (-e /x) { } if (!-e /x) { } if (-x /x) { } if (!-x /x) { } set $a 1;")),
        ("if-spaces", l("if ( $a ) { } if ( $a = 1 ) { } set $a 1;")),
        ("if-content", l("if ($arg_x) { root /tmp; sendfile on; add_header X y; error_page 404 /x; access_log off; return 403; set $y 1; rewrite ^ /z; break; rewrite_log on; uninitialized_variable_warn off; proxy_pass http://127.0.0.1; }")),
        ("server-if", s("if ($arg_x) { set $y 1; rewrite ^ /z last; return 403; break; rewrite_log on; }")),
        ("named-captures", l("rewrite ^/(?<first>\\w+) /$first; if ($uri ~ (?P<second>x)) { return 200 $second; }")),
        ("map-all", format!("map_hash_max_size 4096; map_hash_bucket_size 65; map $http_host $x {{ hostnames; volatile; default $uri; example.com 1; *.example.com 2; www.example.* 3; .dot.com 4; ~^re(?<n>\\d+) $n; ~*CI 5; \\~tilde 6; }} {}", s("return 200 $x;"))),
        ("map-chain", format!("map $uri $a {{ default $b; }} map $uri $b {{ default 1; }} {}", s("return 200 $a;"))),
        ("split-clients", format!("split_clients $remote_addr $v {{ 50% a; * b; }} {}", s("return 200 $v;"))),
        ("merge-slashes", s("merge_slashes off;")),
        ("server-names-hash", format!("server_names_hash_max_size 1024; server_names_hash_bucket_size 128; {}", s(""))),
        // Keys hashed in a machine word, as nginx's ngx_hash_key_lc: in 32
        // bits the first set fit in three buckets and the second did not.
        ("map-hash-word", format!("map_hash_max_size 3; map $uri $x {{ alpha-beta 1; epsilon-zeta 2; theta-iota 3; kappa-lambda 4; }} {}", s("return 200 $x;"))),
        ("map-hash-word-fits", format!("map_hash_max_size 3; map $uri $x {{ epsilon-zeta 1; theta-iota 2; kappa-lambda 3; omicron-pi 4; }} {}", s("return 200 $x;"))),
    ]);
}

/// nginx reports an unknown variable without a place (it finds out after
/// reading everything); nowait names the line of the use, after the same
/// words.
#[test]
fn unknown_variables_as_nginx_says_with_the_line() {
    use common::nginx_t::{Conf, http, messages};
    for (name, body, word) in [
        ("if-unknown-var", l("if ($nope) { }"), "nope"),
        ("if-capture-var", l("if ($1) { }"), "1"),
        ("set-from-unknown", l("set $x $nope;"), "nope"),
        (
            "map-value",
            format!("map $uri $x {{ a $nope; }} {}", s("return 200 $x;")),
            "nope",
        ),
    ] {
        let conf = Conf::new(name, &http(&body));
        let want = format!("unknown \"{word}\" variable");
        let (ncode, nerr) = conf.nginx();
        assert_eq!(
            (ncode, messages(&nerr, "emerg")),
            (Some(1), vec![want.clone()]),
            "{name}"
        );
        let (wcode, werr) = conf.nowait();
        assert_eq!(
            (wcode, messages(&werr, "emerg")),
            (Some(1), vec![format!("{want} in {}:3", conf.file())]),
            "{name}"
        );
    }
}
