//! The proxy cache's directives (and `proxy_store`) checked against nginx
//! itself with the differential `-t` harness ([`common::nginx_t`]): the
//! first `[emerg]` line of `nowait -t` and `nginx -t` must be the same,
//! file and line included, and nowait must report nothing else.
//!
//! Where nowait checks more than nginx on purpose (a `proxy_cache` name
//! with variables whose values are all known), the test says so and checks
//! that nginx accepts what nowait refuses.

mod common;

use common::nginx_t::{Conf, SERVER, check_bad, check_good, http, messages, s};

/// A cache declared on the line before the server.
fn with_zone(server_body: &str) -> String {
    format!("proxy_cache_path cache keys_zone=z:1m;\n{}", s(server_body))
}

#[test]
#[rustfmt::skip]
fn bad_cache_paths() {
    let path = |params: &str| format!("proxy_cache_path cache {params}; {}", s(""));
    check_bad(vec![
        ("unknown-param", path("keys_zone=a:1m bogus=1"), "invalid parameter \"bogus=1\"", Some(3)),
        // nginx Plus only: nginx 1.22 knows no purger.
        ("purger", path("keys_zone=a:1m purger=on"), "invalid parameter \"purger=on\"", Some(3)),
        ("purger-files", path("keys_zone=a:1m purger_files=10"), "invalid parameter \"purger_files=10\"", Some(3)),
        ("levels-3", path("levels=3 keys_zone=a:1m"), "invalid \"levels\" \"levels=3\"", Some(3)),
        ("levels-four", path("levels=1:2:2:1 keys_zone=a:1m"), "invalid \"levels\" \"levels=1:2:2:1\"", Some(3)),
        ("levels-colon", path("levels=1: keys_zone=a:1m"), "invalid \"levels\" \"levels=1:\"", Some(3)),
        ("levels-12", path("levels=12 keys_zone=a:1m"), "invalid \"levels\" \"levels=12\"", Some(3)),
        ("levels-twice-too-long", path("levels=2:2:2 levels=2:2:2 keys_zone=a:1m"), "invalid \"levels\" \"levels=2:2:2\"", Some(3)),
        ("zone-no-colon", path("keys_zone=a"), "invalid keys zone size \"keys_zone=a\"", Some(3)),
        ("zone-bad-size", path("keys_zone=a:1x"), "invalid keys zone size \"keys_zone=a:1x\"", Some(3)),
        ("zone-too-small", path("keys_zone=a:4k"), "keys zone \"keys_zone=a:4k\" is too small", Some(3)),
        ("zone-word", path("keys_zone"), "invalid parameter \"keys_zone\"", Some(3)),
        ("no-zone", path("levels=1:2"), "\"proxy_cache_path\" must have \"keys_zone\" parameter", Some(3)),
        ("zone-no-name", path("keys_zone=:1m"), "\"proxy_cache_path\" must have \"keys_zone\" parameter", Some(3)),
        ("use-temp-path", path("keys_zone=a:1m use_temp_path=yes"), "invalid use_temp_path value \"use_temp_path=yes\", it must be \"on\" or \"off\"", Some(3)),
        ("use-temp-path-case", path("keys_zone=a:1m use_temp_path=ON"), "invalid use_temp_path value \"use_temp_path=ON\", it must be \"on\" or \"off\"", Some(3)),
        ("inactive-ms", path("keys_zone=a:1m inactive=10ms"), "invalid inactive value \"inactive=10ms\"", Some(3)),
        ("max-size", path("keys_zone=a:1m max_size=1x"), "invalid max_size value \"max_size=1x\"", Some(3)),
        ("min-free", path("keys_zone=a:1m min_free=-1"), "invalid min_free value \"min_free=-1\"", Some(3)),
        ("loader-files", path("keys_zone=a:1m loader_files=-1"), "invalid loader_files value \"loader_files=-1\"", Some(3)),
        ("loader-sleep-years", path("keys_zone=a:1m loader_sleep=1y"), "invalid loader_sleep value \"loader_sleep=1y\"", Some(3)),
        ("loader-threshold", path("keys_zone=a:1m loader_threshold=x"), "invalid loader_threshold value \"loader_threshold=x\"", Some(3)),
        ("manager-files-empty", path("keys_zone=a:1m manager_files="), "invalid manager_files value \"manager_files=\"", Some(3)),
        ("manager-sleep-months", path("keys_zone=a:1m manager_sleep=1M"), "invalid manager_sleep value \"manager_sleep=1M\"", Some(3)),
        ("manager-threshold", path("keys_zone=a:1m manager_threshold=1x"), "invalid manager_threshold value \"manager_threshold=1x\"", Some(3)),
        ("duplicate-zone", format!("proxy_cache_path c1 keys_zone=a:1m;\nproxy_cache_path c2 keys_zone=a:1m; {}", s("")), "duplicate zone \"a\"", Some(4)),
        ("zone-sizes", format!("proxy_cache_path c1 keys_zone=a:1m;\nproxy_cache_path c2 keys_zone=a:2m; {}", s("")), "the size 2097152 of shared memory zone \"a\" conflicts with already declared size 1048576", Some(4)),
        ("same-directory", format!("proxy_cache_path c keys_zone=a:1m;\nproxy_cache_path c/ keys_zone=b:1m; {}", s("")), "the same path name \"PREFIX/c\" used in FILE:3 and", Some(4)),
        ("in-server", s("proxy_cache_path c keys_zone=a:1m;"), "\"proxy_cache_path\" directive is not allowed here", Some(3)),
        ("one-argument", path(""), "invalid number of arguments in \"proxy_cache_path\" directive", Some(3)),
    ]);
}

#[test]
#[rustfmt::skip]
fn bad_cache_zones() {
    check_bad(vec![
        // nginx checks the zone when merging and names the line where the
        // http block closes; a zone inherited by two servers is one error.
        ("unknown-zone", format!("{}\n{}", s("location / { proxy_cache nope; }"), s("")), "\"proxy_cache\" zone \"nope\" is unknown", Some(5)),
        ("unknown-zone-inherited", format!("proxy_cache nope;\n{}\n{}", s(""), s("")), "\"proxy_cache\" zone \"nope\" is unknown", Some(6)),
        // Without a server nothing is merged: the zone has no size.
        ("unknown-zone-unmerged", "proxy_cache nope;".to_string(), "zero size shared memory zone \"nope\"", None),
        ("upstream-zone", format!("upstream u {{ zone z 64k; server 127.0.0.1:1; }}\n{}", s("location / { proxy_cache z; }")), "the shared memory zone \"z\" is already declared for a different use", Some(4)),
        ("cache-twice", with_zone("proxy_cache z; proxy_cache z;"), "\"proxy_cache\" directive is duplicate", Some(4)),
        ("cache-off-twice", s("proxy_cache off; proxy_cache off;"), "\"proxy_cache\" directive is duplicate", Some(3)),
        ("store-then-cache", with_zone("proxy_store on; proxy_cache z;"), "\"proxy_cache\" directive is incompatible with \"proxy_store\"", Some(4)),
        ("cache-then-store", with_zone("proxy_cache z; proxy_store /tmp/$uri;"), "\"proxy_store\" directive is incompatible with \"proxy_cache\"", Some(4)),
        ("store-twice", s("proxy_store off; proxy_store on;"), "\"proxy_store\" directive is duplicate", Some(3)),
        ("store-access", s("proxy_store_access user:rwx;"), "invalid value \"user:rwx\"", Some(3)),
        ("store-access-who", s("proxy_store_access user:rw other:r;"), "invalid value \"other:r\"", Some(3)),
        ("store-access-four", s("proxy_store_access user:rw group:rw all:r all:r;"), "invalid number of arguments in \"proxy_store_access\" directive", Some(3)),
        ("store-access-twice", s("proxy_store_access user:rw; proxy_store_access all:r;"), "\"proxy_store_access\" directive is duplicate", Some(3)),
    ]);
}

#[test]
#[rustfmt::skip]
fn bad_cache_settings() {
    let loc = |body: &str| s(&format!("location / {{ {body} }}"));
    check_bad(vec![
        ("key-twice", loc("proxy_cache_key $uri; proxy_cache_key $uri;"), "\"proxy_cache_key\" directive is duplicate", Some(3)),
        ("key-args", loc("proxy_cache_key a b;"), "invalid number of arguments in \"proxy_cache_key\" directive", Some(3)),
        ("valid-time", loc("proxy_cache_valid 200 1x;"), "invalid time value \"1x\"", Some(3)),
        ("valid-ms", loc("proxy_cache_valid 10ms;"), "invalid time value \"10ms\"", Some(3)),
        ("valid-status", loc("proxy_cache_valid 200 600 1m;"), "invalid status \"600\"", Some(3)),
        ("valid-status-word", loc("proxy_cache_valid 2xx 1m;"), "invalid status \"2xx\"", Some(3)),
        ("valid-status-low", loc("proxy_cache_valid 99 1m;"), "invalid status \"99\"", Some(3)),
        ("methods", loc("proxy_cache_methods GET PUT;"), "invalid value \"PUT\"", Some(3)),
        ("use-stale", loc("proxy_cache_use_stale error bogus;"), "invalid value \"bogus\"", Some(3)),
        ("min-uses", loc("proxy_cache_min_uses x;"), "\"proxy_cache_min_uses\" directive invalid number", Some(3)),
        ("min-uses-twice", loc("proxy_cache_min_uses 1; proxy_cache_min_uses 2;"), "\"proxy_cache_min_uses\" directive is duplicate", Some(3)),
        ("lock-flag", loc("proxy_cache_lock maybe;"), "invalid value \"maybe\" in \"proxy_cache_lock\" directive, it must be \"on\" or \"off\"", Some(3)),
        ("revalidate-twice", loc("proxy_cache_revalidate on; proxy_cache_revalidate on;"), "\"proxy_cache_revalidate\" directive is duplicate", Some(3)),
        ("convert-head", loc("proxy_cache_convert_head yes;"), "invalid value \"yes\" in \"proxy_cache_convert_head\" directive, it must be \"on\" or \"off\"", Some(3)),
        ("background-update", loc("proxy_cache_background_update on off;"), "invalid number of arguments in \"proxy_cache_background_update\" directive", Some(3)),
        ("lock-timeout", loc("proxy_cache_lock_timeout 1y;"), "\"proxy_cache_lock_timeout\" directive invalid value", Some(3)),
        ("lock-age-twice", loc("proxy_cache_lock_age 1s; proxy_cache_lock_age 2s;"), "\"proxy_cache_lock_age\" directive is duplicate", Some(3)),
        ("max-range-offset", loc("proxy_cache_max_range_offset 1x;"), "\"proxy_cache_max_range_offset\" directive invalid value", Some(3)),
        ("max-range-offset-twice", loc("proxy_cache_max_range_offset 1k; proxy_cache_max_range_offset 2k;"), "\"proxy_cache_max_range_offset\" directive is duplicate", Some(3)),
        ("bypass-bracket", loc("proxy_cache_bypass $arg_a ${b;"), "the closing bracket in \"b\" variable is missing", Some(3)),
        ("bypass-in-upstream", format!("upstream u {{ server 127.0.0.1:1; proxy_cache_bypass 1; }} {}", s("")), "\"proxy_cache_bypass\" directive is not allowed here", Some(3)),
    ]);
}

#[test]
fn good_configurations() {
    check_good(vec![
        (
            "every-cache-directive",
            format!(
                "proxy_cache_path cache/ levels=1:2 use_temp_path=off keys_zone=one:10m \
                 inactive=1h max_size=1g min_free=100m manager_files=50 manager_sleep=100ms \
                 manager_threshold=1s loader_files=200 loader_sleep=10ms loader_threshold=300ms;\n\
                 proxy_cache_path flat levels= keys_zone=two:1m min_free=0;\n\
                 proxy_cache one; proxy_cache_key $host$request_uri;\n\
                 proxy_cache_valid 200 302 10m; proxy_cache_valid 404 1m;\n\
                 proxy_cache_valid any 5s; proxy_cache_valid 1h;\n\
                 proxy_cache_methods GET HEAD POST; proxy_cache_convert_head off;\n\
                 proxy_cache_min_uses 3; proxy_cache_bypass $cookie_nocache $arg_nocache;\n\
                 proxy_cache_bypass $http_pragma; proxy_no_cache $http_authorization;\n\
                 proxy_cache_use_stale error timeout updating http_500 http_502;\n\
                 proxy_cache_use_stale http_503 http_504 http_403 http_404 http_429;\n\
                 proxy_cache_background_update on; proxy_cache_revalidate on;\n\
                 proxy_cache_lock on; proxy_cache_lock_timeout 2s; proxy_cache_lock_age 10s;\n\
                 proxy_cache_max_range_offset 1m;\n{}",
                s("location / { proxy_pass http://127.0.0.1:8080; }\n\
                   location /two { proxy_cache two; proxy_cache_use_stale off; }\n\
                   location /store { proxy_store on; proxy_store_access user:rw group:rw all:r; }\n\
                   location /store2 { proxy_store /tmp/store$uri; proxy_cache off; }\n\
                   location /none { proxy_cache off; proxy_store off; }")
            ),
        ),
        // nginx declares the zone when `proxy_cache` names it and fills it
        // in when `proxy_cache_path` comes.
        (
            "zone-named-before-its-path",
            format!(
                "{}\nproxy_cache_path later keys_zone=late:1m;",
                s("location / { proxy_cache late; }")
            ),
        ),
        // A name with variables that depend on the request: left to run time.
        (
            "zone-from-request",
            s("location / { proxy_cache cache_$host; }"),
        ),
        // A level that turns proxy_store on drops the inherited cache.
        (
            "store-over-inherited-cache",
            format!(
                "proxy_cache_path c keys_zone=z:1m;\nproxy_cache z;\n{}",
                s("location / { proxy_store on; location /in { } }\n\
                   location /c { proxy_store off; proxy_cache z; }")
            ),
        ),
        (
            "warnings",
            s(
                "location / { proxy_cache_methods GET GET; proxy_cache_use_stale error error; }\n\
               location /b { proxy_cache_methods POST; proxy_cache_methods GET; }",
            ),
        ),
        (
            "split-zones",
            format!(
                "proxy_cache_path c1 keys_zone=cache_1:1m;\nproxy_cache_path c2 keys_zone=cache_2:1m;\n\
                 split_clients $request_uri $disk {{ 50% 1; * 2; }}\n{}",
                s("location / { proxy_cache cache_$disk; }")
            ),
        ),
    ]);
}

/// nginx accepts a `proxy_cache` name with variables whatever its values
/// and answers 500 (`cache "x" not found`) when a request makes one that
/// names no zone; nowait refuses it at load time when every value is known
/// (`split_clients` with fixed values), at the directive's line.
#[test]
fn zones_from_split_clients_must_exist() {
    let conf = Conf::new(
        "split-unknown",
        &http(&format!(
            "proxy_cache_path c1 keys_zone=cache_1:1m;\n\
             split_clients $request_uri $disk {{ 50% 1; * 2; }}\n\
             {SERVER}\nlocation / {{ proxy_cache cache_$disk; }}\n}}"
        )),
    );
    assert_eq!(conf.nginx().0, Some(0), "nginx accepts it");
    let (code, err) = conf.nowait();
    assert_eq!(code, Some(1));
    assert_eq!(
        messages(&err, "emerg"),
        [format!(
            "\"proxy_cache\" zone \"cache_2\" is unknown in {}:6",
            conf.file()
        )]
    );
}

/// `-t` accepts the cache's directives, but they cannot run yet: starting
/// names each one (see `tests/cli.rs` for the message).
#[test]
fn parsed_but_not_implemented() {
    let conf = Conf::new(
        "not-yet",
        &http(&s("location / { proxy_store on; proxy_cache_lock on; }")),
    );
    let (code, err) = conf.nowait();
    assert_eq!(code, Some(0), "{err}");
    assert!(messages(&err, "emerg").is_empty(), "{err}");
}
