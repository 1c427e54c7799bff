//! The everyday core, headers and log directives checked against nginx
//! itself: each configuration here is tested with `nowait -t` and with
//! nginx 1.22's `nginx -t` (Debian's `/usr/sbin/nginx`, which must be
//! installed), and the first `[emerg]` message of each must be the same
//! text, file and line included; good ones must be accepted by both with
//! the same warnings.

mod common;

use common::nginx_t::{check_bad, check_good, s};

#[test]
#[rustfmt::skip]
fn bad_core_directives() {
    check_bad(vec![
        ("expires-bad", s("expires 1x;"), "\"expires\" directive invalid value", Some(3)),
        ("expires-modified-epoch", s("expires modified epoch;"), "\"expires\" directive invalid value", Some(3)),
        ("expires-daily-long", s("expires @25h;"), "\"expires\" directive daily time value must be less than 24 hours", Some(3)),
        ("expires-modified-daily", s("expires modified @1h;"), "\"expires\" directive daily time cannot be used with \"modified\" parameter", Some(3)),
        ("expires-not-modified", s("expires access 1h;"), "\"expires\" directive invalid value", Some(3)),
        ("expires-twice", s("expires 1h; expires 2h;"), "\"expires\" directive is duplicate", Some(3)),
        ("add-trailer-param", s("add_trailer X a never;"), "invalid parameter \"never\"", Some(3)),
        ("server-tokens", s("server_tokens maybe;"), "invalid value \"maybe\"", Some(3)),
        ("ims", s("if_modified_since sometimes;"), "invalid value \"sometimes\"", Some(3)),
        ("lingering", s("lingering_close sometimes;"), "invalid value \"sometimes\"", Some(3)),
        ("keepalive-disable", s("keepalive_disable opera;"), "invalid value \"opera\"", Some(3)),
        ("max-ranges", s("max_ranges x;"), "\"max_ranges\" directive invalid number", Some(3)),
        ("limit-rate", s("limit_rate 1x;"), "\"limit_rate\" directive invalid value", Some(3)),
        ("keepalive-time", s("keepalive_time 1x;"), "\"keepalive_time\" directive invalid value", Some(3)),
        ("try-files-code", s("location / { try_files $uri =abc; }"), "invalid code \"=abc\"", Some(3)),
        ("try-files-one", s("location / { try_files $uri; }"), "invalid number of arguments in \"try_files\" directive", Some(3)),
        ("internal-server", s("internal;"), "\"internal\" directive is not allowed here", Some(3)),
        ("symlinks-param", s("disable_symlinks on sometimes;"), "invalid parameter \"sometimes\"", Some(3)),
        ("symlinks-from-off", s("disable_symlinks off from=/x;"), "\"from=\" cannot be used with \"off\" parameter", Some(3)),
        ("symlinks-none", s("disable_symlinks from=/x;"), "\"disable_symlinks\" must have \"off\", \"on\" or \"if_not_owner\" parameter", Some(3)),
        ("symlinks-twice", s("disable_symlinks on off;"), "duplicate parameters \"on off\"", Some(3)),
        ("ofc-param", s("open_file_cache max=10 big;"), "invalid \"open_file_cache\" parameter \"big\"", Some(3)),
        ("ofc-no-max", s("open_file_cache inactive=10s;"), "\"open_file_cache\" must have the \"max\" parameter", Some(3)),
        ("olfc-no-max", s("open_log_file_cache min_uses=2;"), "\"open_log_file_cache\" must have \"max\" parameter", Some(3)),
        ("olfc-param", s("open_log_file_cache max=1 x=y;"), "invalid \"open_log_file_cache\" parameter \"x=y\"", Some(3)),
        ("log-escape", "log_format f escape=html $uri;".into(), "unknown log format escaping \"html\"", Some(3)),
        ("access-buffer", s("access_log logs/a.log combined buffer=0;"), "invalid buffer size \"0\"", Some(3)),
        ("access-flush", s("access_log logs/a.log combined flush=1s;"), "no buffer is defined for access_log \"logs/a.log\"", Some(3)),
        ("access-gzip", s("access_log logs/a.log combined gzip=10;"), "invalid compression level \"10\"", Some(3)),
        ("access-param", s("access_log logs/a.log combined big;"), "invalid parameter \"big\"", Some(3)),
        ("access-var-buffer", s("access_log logs/$host.log combined buffer=1k;"), "buffered logs cannot have variables in name", Some(3)),
        ("resolver-ipv6", s("resolver 127.0.0.1 ipv6=no;"), "invalid parameter: ipv6=no", Some(3)),
        ("resolver-valid", s("resolver 127.0.0.1 valid=1x;"), "invalid parameter: valid=1x", Some(3)),
        ("shutdown-http", s("worker_shutdown_timeout 1s;"), "\"worker_shutdown_timeout\" directive is not allowed here", Some(3)),
    ]);
}

#[test]
#[rustfmt::skip]
fn good_core_directives() {
    check_good(vec![
        ("headers", s("expires modified 1h; add_header X a always; add_trailer T $uri always; etag off;")),
        ("redirects", s("absolute_redirect off; port_in_redirect off; server_name_in_redirect on; msie_refresh on; msie_padding off;")),
        ("files", s("location / { try_files $uri $uri/ /index.html; internal; disable_symlinks if_not_owner from=$document_root; }")),
        ("caches", s("open_file_cache max=100 inactive=20s; open_file_cache_valid 30s; open_file_cache_min_uses 2; open_file_cache_errors on; open_log_file_cache max=10 inactive=1m valid=2m min_uses=3;")),
        ("connections", s("keepalive_timeout 10 5; keepalive_time 1h; keepalive_disable msie6 safari; lingering_close always; lingering_time 10s; lingering_timeout 2s; reset_timedout_connection on; limit_rate $arg_r; limit_rate_after 1m;")),
        ("sizes", "connection_pool_size 1k; request_pool_size 8k; variables_hash_max_size 2048; variables_hash_bucket_size 128; types_hash_max_size 2048; ignore_invalid_headers off; underscores_in_headers on;".into()),
        ("logs", s("error_log logs/e.log warn; log_not_found off; log_subrequest on; access_log logs/a.log combined buffer=32k flush=5s if=$arg_x; access_log logs/g.log combined gzip=5;")),
        ("send-lowat", s("send_lowat 100;")),
        ("resolver", s("resolver 127.0.0.1:5353 [::1] valid=30s ipv6=off; resolver_timeout 5s;")),
    ]);
}
