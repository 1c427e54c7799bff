//! Black-box tests of the rewrite module (`rewrite` and its flags,
//! arguments, `return`, `set`, `if` with every operator and file test, `if`
//! blocks with content directives, `break`, `rewrite_log`,
//! `uninitialized_variable_warn`, the redirect cycle), of `map` and of
//! `split_clients`, plus `server_name` regex captures and `merge_slashes`.
//!
//! They use [`Server::tested`]: `NOWAIT_TEST_NGINX=1` runs them against
//! nginx, which must pass them all (the log lines checked are nginx's).

mod common;

use std::time::Duration;

use common::client::{get, request};
use common::{Conf, Fixture, Server, body, serve, wait};

/// How long a test waits for a line the server logs after answering.
const LOG_WAIT: Duration = Duration::from_secs(5);

/// The body of `GET path`, with its status.
fn text(s: &Server, path: &str) -> (u16, String) {
    let r = get(s.port(), path);
    (r.status, body(&r))
}

/// The server under test serving the fixture with `extra` in its server
/// block, logging from `level` up.
fn serve_logging(f: &Fixture, extra: &str, level: &str) -> Server {
    let conf = Conf::server(&format!("root {{root}};\n{extra}"))
        .root(f.root())
        .render()
        .replace("error_log stderr;", &format!("error_log stderr {level};"));
    Server::tested(&conf)
}

/// Waits (bounded) until the server's stderr has a line containing every
/// one of `parts`; returns that line.
fn log_line(s: &Server, parts: &[&str]) -> Option<String> {
    let mut found = None;
    wait::until(LOG_WAIT, || {
        found = s
            .stderr()
            .lines()
            .find(|l| parts.iter().all(|p| l.contains(p)))
            .map(str::to_string);
        found.is_some()
    });
    found
}

#[test]
fn rewrite_flags() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "location /show { return 200 \"uri=$uri args=$args\\n\"; }
         location /f/ {
             rewrite ^/f/last/(.*)$ /show/last-$1 last;
             rewrite ^/f/break$ /index.html break;
             rewrite ^/f/redirect/(.*)$ /show/$1 redirect;
             rewrite ^/f/permanent/(.*)$ /show/$1 permanent;
             rewrite ^/f/abs/(.*)$ http://example.com/$1;
             rewrite ^/f/none/(.*)$ /show/none-$1;
             return 200 \"went on uri=$uri\\n\";
         }",
    );
    assert_eq!(
        text(&s, "/f/last/x?q=1"),
        (200, "uri=/show/last-x args=q=1\n".into())
    );
    // `break` stays in the location: the static handler serves the new URI.
    let (status, b) = text(&s, "/f/break");
    assert_eq!(status, 200);
    assert_eq!(b, common::fixture::INDEX_HTML);
    let r = get(s.port(), "/f/redirect/x?q=1");
    assert_eq!(r.status, 302);
    assert_eq!(
        r.header("Location"),
        Some(format!("http://localhost:{}/show/x?q=1", s.port()))
    );
    let r = get(s.port(), "/f/permanent/x");
    assert_eq!(r.status, 301);
    assert_eq!(
        r.header("Location"),
        Some(format!("http://localhost:{}/show/x", s.port()))
    );
    let r = get(s.port(), "/f/abs/x");
    assert_eq!(r.status, 302);
    assert_eq!(
        r.header("Location").as_deref(),
        Some("http://example.com/x")
    );
    // No flag: the script goes on with the next instruction.
    assert_eq!(
        text(&s, "/f/none/x"),
        (200, "went on uri=/show/none-x\n".into())
    );
}

#[test]
fn rewrite_arguments() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "location /show { return 200 \"uri=$uri args=$args is_args=$is_args\\n\"; }
         location /a/ {
             rewrite ^/a/new/(.*)$ /show/$1?x=1 last;
             rewrite ^/a/drop/(.*)$ /show/$1? last;
             rewrite ^/a/replace/(.*)$ /show/$1?y=$1? last;
             rewrite ^/a/redir/(.*)$ /show/$1?z=2 redirect;
             rewrite ^/a/esc/(.*)$ /show/e?v=$1 last;
         }",
    );
    assert_eq!(
        text(&s, "/a/new/p?old=1"),
        (200, "uri=/show/p args=x=1&old=1 is_args=?\n".into())
    );
    assert_eq!(
        text(&s, "/a/drop/p?old=1"),
        (200, "uri=/show/p args= is_args=\n".into())
    );
    assert_eq!(
        text(&s, "/a/replace/p?old=1"),
        (200, "uri=/show/p args=y=p is_args=?\n".into())
    );
    // A redirect with a `?` in its text joins the old arguments with `&`.
    let r = get(s.port(), "/a/redir/p?old=1");
    assert_eq!(
        r.header("Location"),
        Some(format!("http://localhost:{}/show/p?z=2&old=1", s.port()))
    );
    // Captures copied into arguments are escaped again when the request's
    // URI was escaped.
    assert_eq!(
        text(&s, "/a/esc/a%20b%26c"),
        (200, "uri=/show/e args=v=a%20b%26c is_args=?\n".into())
    );
}

#[test]
fn redirect_cycle_is_a_500_with_nginx_message() {
    let f = Fixture::build();
    let s = serve(&f, "location /cycle { rewrite ^ /cycle last; }");
    assert_eq!(get(s.port(), "/cycle").status, 500);
    assert!(
        log_line(
            &s,
            &[
                "[error]",
                "rewrite or internal redirection cycle while processing \"/cycle\"",
                "request: \"GET /cycle HTTP/1.1\""
            ]
        )
        .is_some(),
        "{}",
        s.stderr()
    );
}

#[test]
fn if_with_content_directives() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "location / {
             if ($arg_x) { return 403; }
         }
         location /f/ {
             if (-f $request_filename) { return 200 \"file\\n\"; }
             return 200 \"no file $request_filename\\n\";
         }
         location /in/ {
             if ($arg_dir) {
                 rewrite ^ /file.txt break;
                 root {root}/dir;
             }
             rewrite ^ /index.html break;
         }"
        .replace("{root}", &f.root().to_string_lossy())
        .as_str(),
    );
    assert_eq!(get(s.port(), "/index.html?x=1").status, 403);
    assert_eq!(get(s.port(), "/index.html?x=0").status, 200);
    assert_eq!(get(s.port(), "/index.html").status, 200);
    std::fs::create_dir(f.root().join("f")).unwrap();
    std::fs::write(f.root().join("f/there"), "x").unwrap();
    assert_eq!(text(&s, "/f/there"), (200, "file\n".into()));
    let (status, b) = text(&s, "/f/absent");
    assert_eq!(status, 200);
    assert!(
        b.starts_with("no file /") && b.ends_with("/f/absent\n"),
        "{b}"
    );
    // The `if`'s own root serves once the condition is true.
    assert_eq!(text(&s, "/in/?dir=1"), (200, "dir file\n".into()));
    assert_eq!(
        text(&s, "/in/"),
        (200, common::fixture::INDEX_HTML.to_string())
    );
}

#[test]
fn if_operators_and_file_tests() {
    let f = Fixture::build();
    let root = f.root().to_string_lossy().into_owned();
    let s = serve(
        &f,
        &"location /op {
             if ($arg_e = yes) { return 200 \"equal\\n\"; }
             if ($arg_n != no) { return 200 \"not equal\\n\"; }
             if ($arg_r ~ ^(a+)(b*)$) { return 200 \"match $1 $2\\n\"; }
             if ($arg_r ~* ^X(.)) { return 200 \"caseless $1\\n\"; }
             if ($arg_r !~ ^z) { return 200 \"no z\\n\"; }
             if ($arg_r !~* ^q) { return 200 \"no q\\n\"; }
             return 200 \"none\\n\";
         }
         location /ft {
             if (-f ROOT/$arg_p) { return 200 \"f\\n\"; }
             if (-d ROOT/$arg_p) { return 200 \"d\\n\"; }
             if (-e ROOT/$arg_p) { return 200 \"e\\n\"; }
             if (!-e ROOT/$arg_p) { return 200 \"!e\\n\"; }
             return 200 \"other\\n\";
         }
         location /fx {
             set $r \"\";
             if (!-f ROOT/$arg_p) { set $r \"$r !f\"; }
             if (!-d ROOT/$arg_p) { set $r \"$r !d\"; }
             if (-x ROOT/$arg_p) { set $r \"$r x\"; }
             if (!-x ROOT/$arg_p) { set $r \"$r !x\"; }
             return 200 \"$r\\n\";
         }"
        .replace("ROOT", &root),
    );
    let t = |p: &str| text(&s, p).1;
    assert_eq!(t("/op?e=yes&n=no"), "equal\n");
    assert_eq!(t("/op?n=x"), "not equal\n");
    assert_eq!(t("/op?n=no&r=aab"), "match aa b\n");
    assert_eq!(t("/op?n=no&r=xYz"), "caseless Y\n");
    assert_eq!(t("/op?n=no&r=q"), "no z\n");
    assert_eq!(t("/op?n=no&r=z"), "no q\n");
    assert_eq!(t("/op?n=no&r=Q"), "no z\n");
    assert_eq!(t("/ft?p=index.html"), "f\n");
    assert_eq!(t("/ft?p=dir"), "d\n");
    // A FIFO is neither a file nor a directory: nginx's `-e` says no, so
    // `!-e` says yes.
    assert_eq!(t("/ft?p=fifo"), "!e\n");
    assert_eq!(t("/ft?p=nope"), "!e\n");
    assert_eq!(t("/fx?p=index.html"), " !d !x\n");
    assert_eq!(t("/fx?p=dir"), " !f x\n");
    assert_eq!(t("/fx?p=nope"), " !f !d !x\n");
}

#[test]
fn file_test_that_cannot_stat_logs_crit_and_counts_as_missing() {
    let f = Fixture::build();
    let s = serve(
        &f,
        &format!(
            "location /t {{ if (-f {}/private/index.html) {{ return 200 \"f\\n\"; }} return 200 \"not f\\n\"; }}",
            f.root().display()
        ),
    );
    // The tests run as root and the workers as `nobody`, who cannot enter
    // the 0700 directory (as tests/process_user.rs relies on too).
    assert_eq!(text(&s, "/t"), (200, "not f\n".into()));
    let line = log_line(
        &s,
        &[
            "[crit]",
            "stat() \"",
            "private/index.html\" failed (13: Permission denied)",
        ],
    );
    assert!(line.is_some(), "{}", s.stderr());
}

#[test]
fn set_break_and_uninitialized_variables() {
    let f = Fixture::build();
    let s = serve_logging(
        &f,
        "location /set {
             set $a A;
             set $b \"$a-$uri\";
             set $args replaced;
             return 200 \"a=$a b=$b args=$args\\n\";
         }
         location /never { set $later x; }
         location /warn { return 200 \"[$later]\\n\"; }
         location /quiet { uninitialized_variable_warn off; return 200 \"[$later]\\n\"; }
         location /brk {
             rewrite ^ /dir/file.txt;
             break;
             return 500;
         }",
        "warn",
    );
    assert_eq!(
        text(&s, "/set?x=1"),
        (200, "a=A b=A-/set args=replaced\n".into())
    );
    assert_eq!(text(&s, "/brk"), (200, "dir file\n".into()));
    assert_eq!(text(&s, "/quiet"), (200, "[]\n".into()));
    assert_eq!(text(&s, "/warn"), (200, "[]\n".into()));
    let warn = log_line(&s, &["[warn]", "using uninitialized \"later\" variable"]);
    let warn = warn.unwrap_or_else(|| panic!("{}", s.stderr()));
    assert!(warn.contains("request: \"GET /warn HTTP/1.1\""), "{warn}");
    assert!(
        !s.stderr().contains("request: \"GET /quiet"),
        "{}",
        s.stderr()
    );
}

#[test]
fn rewrite_log_writes_nginx_notice_lines() {
    let f = Fixture::build();
    let s = serve_logging(
        &f,
        "rewrite_log on;
         location /a { rewrite ^/a(.*)$ /b$1?x=1 last; }
         location /b { rewrite ^/nomatch /c; return 200 \"$uri $args\\n\"; }",
        "notice",
    );
    assert_eq!(text(&s, "/abc"), (200, "/bbc x=1\n".into()));
    for parts in [
        &["[notice]", "\"^/a(.*)$\" matches \"/abc\""][..],
        &["[notice]", "rewritten data: \"/bbc\", args: \"x=1\""],
        &["[notice]", "\"^/nomatch\" does not match \"/bbc\""],
    ] {
        assert!(log_line(&s, parts).is_some(), "{parts:?}:\n{}", s.stderr());
    }
}

#[test]
fn map_keys_wildcards_and_captures() {
    let conf = Conf::http(
        "map $arg_m $m {
             default \"def\";
             foo \"FOO\";
             ~^re(?<num>[0-9]+)$ \"re $1 $num\";
             ~*^ci \"caseless\";
             \"\" \"empty\";
         }
         map $arg_h $h {
             hostnames;
             default none;
             example.com exact;
             *.example.com head;
             www.example.* tail;
             .dot.org dot;
         }
         map $uri $v { volatile; default \"$uri\"; }
         server {
             listen 127.0.0.1:{port};
             location / { return 200 \"m=$m h=$h\\n\"; }
             location /vol { set $before $v; rewrite ^ /vol2 last; }
             location /vol2 { return 200 \"$before $v\\n\"; }
         }",
    )
    .render();
    let s = Server::tested(&conf);
    let t = |p: &str| text(&s, p).1;
    assert_eq!(t("/?m=foo"), "m=FOO h=none\n");
    assert_eq!(t("/?m=FOO"), "m=FOO h=none\n");
    assert_eq!(t("/?m=other"), "m=def h=none\n");
    assert_eq!(t("/?m="), "m=empty h=none\n");
    assert_eq!(t("/?m=re42"), "m=re 42 42 h=none\n");
    assert_eq!(t("/?m=CIX"), "m=caseless h=none\n");
    assert_eq!(t("/?h=Example.COM."), "m=empty h=exact\n");
    assert_eq!(t("/?h=a.b.example.com"), "m=empty h=head\n");
    assert_eq!(t("/?h=www.example.net"), "m=empty h=tail\n");
    assert_eq!(t("/?h=dot.org"), "m=empty h=dot\n");
    assert_eq!(t("/?h=x.dot.org"), "m=empty h=dot\n");
    // A volatile map is computed again at each read.
    assert_eq!(t("/vol"), "/vol /vol2\n");
}

#[test]
fn split_clients_splits_as_nginx() {
    let conf = Conf::http(
        "split_clients \"${arg_k}\" $part { 10% a; 20.5% b; * c; }
         split_clients \"${arg_k}x\" $half { 50% one; 25% two; }
         server {
             listen 127.0.0.1:{port};
             location / { return 200 \"$part $half\\n\"; }
         }",
    )
    .render();
    let s = Server::tested(&conf);
    // What nginx 1.22 answers for these keys (MurmurHash2 of the key).
    for (key, want) in [
        ("1", "b one"),
        ("2", "b "),
        ("3", "c one"),
        ("5", "c two"),
        ("8", "a "),
        ("10", "a two"),
        ("alpha", "b one"),
        ("beta", "a one"),
        ("", "a one"),
    ] {
        assert_eq!(
            text(&s, &format!("/?k={key}")).1,
            format!("{want}\n"),
            "key {key:?}"
        );
    }
}

#[test]
fn server_name_regex_captures_are_variables() {
    let conf = Conf::http(
        "server {
             listen 127.0.0.1:{port};
             server_name ~^(?<sub>[a-z]+)\\.example\\.com$;
             return 200 \"sub=$sub 1=$1\\n\";
         }",
    )
    .render();
    let s = Server::tested(&conf);
    let r = request(
        s.port(),
        "GET / HTTP/1.1\r\nHost: www.example.com\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(body(&r), "sub=www 1=www\n");
}

#[test]
fn merge_slashes_off_keeps_empty_segments() {
    let s = Server::tested(
        &Conf::server("merge_slashes off;\nlocation / { return 200 \"$uri\\n\"; }").render(),
    );
    assert_eq!(text(&s, "/foo//../bar").1, "/foo/bar\n");
    assert_eq!(text(&s, "/foo///../bar").1, "/foo//bar\n");
    assert_eq!(text(&s, "//a//b").1, "//a//b\n");
}

/// Look-around and back-references, which PCRE has, match in locations,
/// `rewrite`, `if` and `map` as in nginx, captures and named groups
/// included; an unquoted `{` that is not a count is a literal.
#[test]
fn look_around_back_references_and_literal_braces() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "location ~ ^/(?!api/|static/)(?<page>\\w+)$ { return 200 \"page $page $1\"; }
         location ~ ^/api/(\\w)\\1$ { return 200 \"double $1\"; }
         location /api/ { return 200 \"api\"; }
         location /re/ {
             if ($uri ~ ^/re/(?=7)(\\d)) { return 200 \"seven $1\"; }
             rewrite \"^/re/(?<=/re/)(\\d+)$\" /num/$1;
         }
         location /num/ { return 200 \"num $uri\"; }
         location ~ \"^/lit/a{,2}$\" { return 200 \"literal\"; }",
    );
    assert_eq!(text(&s, "/about"), (200, "page about about".into()));
    assert_eq!(text(&s, "/api/xx"), (200, "double x".into()));
    assert_eq!(text(&s, "/api/xy"), (200, "api".into()));
    assert_eq!(text(&s, "/re/71"), (200, "seven 7".into()));
    assert_eq!(text(&s, "/re/81"), (200, "num /num/81".into()));
    assert_eq!(text(&s, "/lit/a%7B,2%7D"), (200, "literal".into()));
}

/// `valid_referers` and `$invalid_referer`, the usual hot-link guard: no
/// `Referer`, a blanked one, the server's own names, a wildcard, a URI
/// prefix and a regular expression, inherited by a location that writes
/// none.
#[test]
fn valid_referers_set_invalid_referer() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "server_name site.test *.site.test;
         valid_referers none blocked server_names *.example.com
                        gallery.test/pictures/ ~\\.search\\.;
         location / { return 200 \"[$invalid_referer]\"; }
         location /strict/ {
             valid_referers example.org;
             return 200 \"[$invalid_referer]\";
         }",
    );
    let with = |path: &str, referer: Option<&str>| {
        let extra = referer.map_or(String::new(), |r| format!("Referer: {r}\r\n"));
        let raw =
            format!("GET {path} HTTP/1.1\r\nHost: site.test\r\n{extra}Connection: close\r\n\r\n");
        body(&request(s.port(), &raw))
    };
    assert_eq!(with("/", None), "[]");
    assert_eq!(with("/", Some("blanked-by-a-proxy")), "[]");
    assert_eq!(with("/", Some("http://site.test/page")), "[]");
    assert_eq!(with("/", Some("http://a.site.test/")), "[]");
    assert_eq!(with("/", Some("https://www.EXAMPLE.com:8443/x")), "[]");
    assert_eq!(with("/", Some("http://gallery.test/pictures/1")), "[]");
    assert_eq!(with("/", Some("http://gallery.test/other/1")), "[1]");
    assert_eq!(with("/", Some("http://www.search.de/?q=1")), "[]");
    assert_eq!(with("/", Some("http://example.com/")), "[1]");
    assert_eq!(with("/", Some("http://evil.test/")), "[1]");
    // A level that writes its own list replaces the server's.
    assert_eq!(with("/strict/", None), "[1]");
    assert_eq!(with("/strict/", Some("http://example.org/")), "[]");
    assert_eq!(with("/strict/", Some("http://site.test/")), "[1]");
}
