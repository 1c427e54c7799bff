//! The access and rate modules' directives checked against nginx itself:
//! each bad configuration is tested with `nowait -t` and `nginx -t`, and
//! the first `[emerg]` must be the same text, file and line included; each
//! good one must pass both with the same warnings.

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

const REQ_ZONE: &str = "limit_req_zone $binary_remote_addr zone=one:1m rate=1r/s;";
const CONN_ZONE: &str = "limit_conn_zone $binary_remote_addr zone=c:1m;";

#[test]
#[rustfmt::skip]
fn bad_access_directives() {
    check_bad(vec![
        ("allow-bad", l("allow 10.0.0.1/33;"), "invalid parameter \"10.0.0.1/33\"", Some(3)),
        ("referers-wildcard", l("valid_referers a*b.com;"), "invalid hostname or wildcard \"a*b.com\"", Some(3)),
        ("referers-conflict", l("valid_referers a.com A.com;"), "conflicting parameter \"a.com\"", Some(3)),
        ("referers-empty-regex", l("valid_referers ~;"), "empty regex in \"~\"", Some(3)),
        ("referers-args", l("valid_referers;"), "invalid number of arguments in \"valid_referers\" directive", Some(3)),
        ("referers-hash", l("referer_hash_max_size big;"), "\"referer_hash_max_size\" directive invalid number", Some(3)),
        ("deny-host", l("deny localhost;"), "invalid parameter \"localhost\"", Some(3)),
        ("allow-args", l("allow;"), "invalid number of arguments in \"allow\" directive", Some(3)),
        ("satisfy-value", l("satisfy some;"), "invalid value \"some\"", Some(3)),
        ("satisfy-twice", l("satisfy any; satisfy all;"), "\"satisfy\" directive is duplicate", Some(3)),
        ("auth-basic-twice", l("auth_basic a; auth_basic b;"), "\"auth_basic\" directive is duplicate", Some(3)),
        ("auth-file-twice", l("auth_basic_user_file a; auth_basic_user_file b;"), "\"auth_basic_user_file\" directive is duplicate", Some(3)),
        ("auth-delay-value", l("auth_delay x;"), "\"auth_delay\" directive invalid value", Some(3)),
        ("limit-except-method", l("limit_except FOO { }"), "invalid method \"FOO\"", Some(3)),
        ("limit-except-twice", l("limit_except GET { } limit_except POST { }"), "\"limit_except\" directive is duplicate", Some(3)),
        ("limit-except-root", l("limit_except GET { root /x; }"), "\"root\" directive is not allowed here", Some(3)),
        ("limit-except-in-server", s("limit_except GET { }"), "\"limit_except\" directive is not allowed here", Some(3)),
        ("realip-host", l("set_real_ip_from no.such.host.invalid;"), "host not found in set_real_ip_from \"no.such.host.invalid\"", Some(3)),
        ("realip-header-twice", l("real_ip_header X-Real-IP; real_ip_header X-Forwarded-For;"), "\"real_ip_header\" directive is duplicate", Some(3)),
        ("realip-recursive", l("real_ip_recursive maybe;"), "invalid value \"maybe\" in \"real_ip_recursive\" directive, it must be \"on\" or \"off\"", Some(3)),
        ("empty-gif-args", l("empty_gif on;"), "invalid number of arguments in \"empty_gif\" directive", Some(3)),
        ("empty-gif-server", s("empty_gif;"), "\"empty_gif\" directive is not allowed here", Some(3)),
        ("stub-status-http", "stub_status;".into(), "\"stub_status\" directive is not allowed here", Some(3)),
    ]);
}

#[test]
#[rustfmt::skip]
fn bad_limit_directives() {
    check_bad(vec![
        ("req-zone-small", format!("limit_req_zone $uri zone=one:1k rate=1r/s; {}", s("")), "zone \"zone=one:1k\" is too small", Some(3)),
        ("req-zone-size", format!("limit_req_zone $uri zone=one rate=1r/s; {}", s("")), "invalid zone size \"zone=one\"", Some(3)),
        ("req-zone-rate", format!("limit_req_zone $uri zone=one:1m rate=0r/s; {}", s("")), "invalid rate \"rate=0r/s\"", Some(3)),
        ("req-zone-param", format!("limit_req_zone $uri zone=one:1m x; {}", s("")), "invalid parameter \"x\"", Some(3)),
        ("req-zone-none", format!("limit_req_zone $uri rate=1r/s x=1; {}", s("")), "invalid parameter \"x=1\"", Some(3)),
        ("req-zone-no-zone", format!("limit_req_zone $uri rate=1r/s rate=2r/s; {}", s("")), "\"limit_req_zone\" must have \"zone\" parameter", Some(3)),
        ("req-zone-bound", format!("{REQ_ZONE} limit_req_zone $uri zone=one:1m rate=1r/s; {}", s("")), "limit_req_zone \"one\" is already bound to key \"$binary_remote_addr\"", Some(3)),
        ("req-zone-in-server", s(REQ_ZONE), "\"limit_req_zone\" directive is not allowed here", Some(3)),
        ("req-burst", format!("{REQ_ZONE} {}", l("limit_req zone=one burst=0;")), "invalid burst value \"burst=0\"", Some(3)),
        ("req-delay", format!("{REQ_ZONE} {}", l("limit_req zone=one delay=x;")), "invalid delay value \"delay=x\"", Some(3)),
        ("req-param", format!("{REQ_ZONE} {}", l("limit_req zone=one fast;")), "invalid parameter \"fast\"", Some(3)),
        ("req-no-zone", l("limit_req burst=1;"), "\"limit_req\" must have \"zone\" parameter", Some(3)),
        ("req-twice", format!("{REQ_ZONE} {}", l("limit_req zone=one; limit_req zone=one;")), "\"limit_req\" directive is duplicate", Some(3)),
        ("req-unknown-zone", l("limit_req zone=nx;"), "zero size shared memory zone \"nx\"", None),
        ("req-status", l("limit_req_status 600;"), "value must be between 400 and 599", Some(3)),
        ("req-status-word", l("limit_req_status x;"), "\"limit_req_status\" directive invalid number", Some(3)),
        ("req-level", l("limit_req_log_level debug;"), "invalid value \"debug\"", Some(3)),
        ("req-dry", l("limit_req_dry_run x;"), "invalid value \"x\" in \"limit_req_dry_run\" directive, it must be \"on\" or \"off\"", Some(3)),
        ("conn-zone-small", format!("limit_conn_zone $uri zone=c:8k; {}", s("")), "zone \"zone=c:8k\" is too small", Some(3)),
        ("conn-zone-rate", format!("limit_conn_zone $uri rate=1r/s; {}", s("")), "invalid parameter \"rate=1r/s\"", Some(3)),
        ("conn-zone-use", format!("{REQ_ZONE} limit_conn_zone $uri zone=one:1m; {}", s("")), "the shared memory zone \"one\" is already declared for a different use", Some(3)),
        ("conn-number", format!("{CONN_ZONE} {}", l("limit_conn c 0;")), "invalid number of connections \"0\"", Some(3)),
        ("conn-max", format!("{CONN_ZONE} {}", l("limit_conn c 65536;")), "connection limit must be less 65536", Some(3)),
        ("conn-twice", format!("{CONN_ZONE} {}", l("limit_conn c 1; limit_conn c 2;")), "\"limit_conn\" directive is duplicate", Some(3)),
        ("conn-unknown-zone", l("limit_conn nx 1;"), "zero size shared memory zone \"nx\"", None),
    ]);
}

#[test]
#[rustfmt::skip]
fn good_configurations() {
    check_good(vec![
        ("access", l("allow 127.0.0.1; allow 10.0.0.0/8; allow ::1; allow unix:; deny all; satisfy any;")),
        ("low-bits", l("deny 10.1.2.3/8;")),
        ("referers", l("valid_referers none blocked server_names *.a.com b.* .c.com d.com/pics/ ~\\.e\\.; valid_referers f.com; referer_hash_max_size 4096; referer_hash_bucket_size 128;")),
        ("auth", l("auth_basic \"realm $host\"; auth_basic_user_file conf/htpasswd; auth_delay 1s;")),
        ("limit-except", l("limit_except GET POST { allow 127.0.0.1; deny all; auth_basic x; auth_basic_user_file f; }")),
        ("limits", format!("{REQ_ZONE} {CONN_ZONE} {}", l("limit_req zone=one burst=5 nodelay; limit_conn c 10; limit_req_status 429; limit_conn_status 429; limit_req_log_level warn; limit_conn_log_level info; limit_req_dry_run on; limit_conn_dry_run off;"))),
        ("zone-later", format!("{} {REQ_ZONE}", l("limit_req zone=one delay=3;"))),
        ("realip", l("set_real_ip_from 127.0.0.1; set_real_ip_from 10.0.0.0/8; set_real_ip_from unix:; real_ip_header X-Forwarded-For; real_ip_recursive on;")),
        ("realip-low-bits", l("set_real_ip_from 10.1.0.0/8;")),
        ("status-gif", s("stub_status; location /g { empty_gif; } location /s { stub_status on; }")),
    ]);
}
