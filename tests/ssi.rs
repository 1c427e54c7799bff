//! Black-box tests of the SSI module: each command (`echo`, `set`, `if`/
//! `elif`/`else`/`endif`, `config`, `block`/`endblock`, `include` with
//! `virtual`, `file`, `wait`, `set`, `stub`), its errors, the head changes
//! (`Content-Length`, `Last-Modified`, `ETag`, `Accept-Ranges`,
//! `ssi_last_modified`), `ssi_types`, `ssi_silent_errors`,
//! `ssi_value_length`, and commands cut across reads.
//!
//! They use [`Server::tested`]: `NOWAIT_TEST_NGINX=1` runs them against
//! nginx, which must pass them all.

mod common;

use std::time::Duration;

use common::client::{get, request};
use common::{Conf, Server, TempDir, body, wait};

/// How long a test waits for a line the server logs after answering.
const LOG_WAIT: Duration = Duration::from_secs(5);

/// A document root with `files` and the server under test serving it with
/// `extra` in its server block (`root` set; `location / { ssi on; }`
/// unless `extra` defines its own `location /`).
struct Ssi {
    server: Server,
    /// Kept for the server's lifetime.
    _root: TempDir,
}

impl Ssi {
    fn start(files: &[(&str, &str)], extra: &str) -> Ssi {
        let root = TempDir::new("ssi");
        for (name, text) in files {
            let path = root.path().join(name);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).unwrap();
                common::tmp::set_mode(dir, 0o755);
            }
            std::fs::write(&path, text).unwrap();
        }
        let locations = if extra.contains("location / ") {
            extra.to_string()
        } else {
            format!("location / {{ ssi on; }}\n{extra}")
        };
        let conf = Conf::server(&format!("root {{root}};\n{locations}"))
            .root(root.path())
            .render();
        Ssi {
            server: Server::tested(&conf),
            _root: root,
        }
    }

    /// The body of `GET path`, with its status.
    fn text(&self, path: &str) -> (u16, String) {
        let r = get(self.server.port(), path);
        (r.status, body(&r))
    }

    /// The body of `GET path` (which must answer 200).
    fn body(&self, path: &str) -> String {
        let (status, b) = self.text(path);
        assert_eq!(status, 200, "{path}: {b}");
        b
    }

    /// Waits (bounded) for a line of the server's stderr holding `part`.
    fn logged(&self, part: &str) -> Option<String> {
        let mut found = None;
        wait::until(LOG_WAIT, || {
            found = self
                .server
                .stderr()
                .lines()
                .find(|l| l.contains(part))
                .map(str::to_string);
            found.is_some()
        });
        found
    }
}

/// nginx's default error message.
const ERR: &str = "[an error occurred while processing the directive]";

#[test]
fn echo_values_defaults_and_encodings() {
    let s = Ssi::start(
        &[
            ("e.html", "X<!--#echo var=\"arg_test\" -->X"),
            (
                "d.html",
                "X<!--#echo var=\"arg_no\" default=\"<dflt>\" -->X",
            ),
            (
                "enc.html",
                "<!--#set var=\"v\" value=\"<a b>&\" -->\
                 [<!--#echo var=\"v\" -->]\
                 [<!--#echo var=\"v\" encoding=\"url\" -->]\
                 [<!--#echo var=\"v\" -->]\
                 [<!--#echo var=\"v\" encoding=\"none\" -->]\
                 [<!--#echo var=\"v\" encoding=\"bogus\" -->]\
                 [<!--#echo var=\"v\" encoding=\"entity\" -->]",
            ),
            ("case.html", "<!--#echo var=\"ARG_A\" -->"),
        ],
        "",
    );
    assert_eq!(s.body("/e.html"), "X(none)X");
    // An empty value prints nothing.
    assert_eq!(s.body("/e.html?test="), "XX");
    assert_eq!(s.body("/e.html?a=1&test=t&test=u"), "XtX");
    assert_eq!(s.body("/d.html"), "X&lt;dflt&gt;X");
    // An encoding sticks for later `echo`s; an unknown one changes nothing.
    assert_eq!(
        s.body("/enc.html"),
        "[&lt;a b&gt;&amp;][%3Ca%20b%3E&][%3Ca%20b%3E&][<a b>&][<a b>&][&lt;a b&gt;&amp;]"
    );
    assert!(
        s.logged("unknown encoding \"bogus\" in the \"echo\" command")
            .is_some()
    );
    // Variable names are case-insensitive.
    assert_eq!(s.body("/case.html?a=yes"), "yes");
}

#[test]
fn set_evaluates_variables_and_escapes() {
    let s = Ssi::start(
        &[(
            "s.html",
            "<!--#set var=\"a\" value=\"[$arg_x]${arg_y}z\" -->\
             <!--#set var=\"b\" value=\"\\$a \\\\ \\q $a\" -->\
             <!--#echo var=\"a\" -->|<!--#echo var=\"b\" encoding=\"none\" -->\
             <!--#set var=\"c\" value=\"x$\" -->",
        )],
        "",
    );
    assert_eq!(
        s.body("/s.html?x=1&y=2"),
        format!("[1]2z|$a \\ \\q [1]2z{ERR}")
    );
    assert!(s.logged("invalid variable name in \"x$\"").is_some());
}

#[test]
fn if_elif_else_with_strings_and_regexes() {
    let branch = "<!--#if expr=\"$arg_a\" -->A\
                  <!--#elif expr=\"$arg_b = yes\" -->B\
                  <!--#elif expr=\"$arg_c != /^n(o)+/\" -->C\
                  <!--#else -->E<!--#endif -->";
    let s = Ssi::start(
        &[
            ("if.html", &format!("x{branch}x")),
            (
                "cap.html",
                "<!--#if expr=\"$arg_v = /(?P<word>[a-z]+)-(\\d+)/\" -->\
                 <!--#echo var=\"1\" -->,<!--#echo var=\"2\" -->,<!--#echo var=\"word\" -->\
                 <!--#else -->none<!--#endif -->",
            ),
            ("bad.html", "<!--#if expr=\"$a < 1\" -->in<!--#endif -->"),
            (
                "nested.html",
                "<!--#if expr=\"1\" --><!--#if expr=\"1\" -->x<!--#endif -->",
            ),
        ],
        "",
    );
    assert_eq!(s.body("/if.html?a=1&b=yes"), "xAx");
    assert_eq!(s.body("/if.html?b=yes"), "xBx");
    assert_eq!(s.body("/if.html?b=no&c=yes"), "xCx");
    assert_eq!(s.body("/if.html?c=nooo"), "xEx");
    assert_eq!(s.body("/cap.html?v=AAabc-42ZZ"), "abc,42,abc");
    assert_eq!(s.body("/cap.html?v=42"), "none");
    // An invalid expression is an error; the `if` it opened never was.
    assert_eq!(s.body("/bad.html"), format!("{ERR}in{ERR}"));
    assert!(s.logged("invalid expression in \"$a < 1\"").is_some());
    assert!(
        s.logged("invalid context of SSI command: \"endif\"")
            .is_some()
    );
    assert_eq!(s.body("/nested.html"), format!("{ERR}x"));
    assert!(
        s.logged("the \"if\" command inside the \"if\" command")
            .is_some()
    );
}

#[test]
fn config_errmsg_and_timefmt() {
    let s = Ssi::start(
        &[
            (
                "c.html",
                "<!--#config errmsg=\"[oops]\" --><!--#nosuch -->\
                 <!--#config timefmt=\"%Y|%%\" --><!--#echo var=\"date_gmt\" -->\
                 <!--#config timefmt=\"%s\" --><!--#echo var=\"date_local\" -->",
            ),
            ("plain.html", "<!--#echo var=\"date_gmt\" -->"),
        ],
        "",
    );
    let b = s.body("/c.html");
    let (oops, rest) = b.split_at(6);
    assert_eq!(oops, "[oops]");
    let (year, secs) = rest.split_once("|%").expect("the timefmt's bar");
    assert_eq!(year.len(), 4, "{b}");
    assert!(year.bytes().all(|c| c.is_ascii_digit()), "{b}");
    assert!(
        secs.len() >= 10 && secs.bytes().all(|c| c.is_ascii_digit()),
        "{b}"
    );
    // The default format: "Thursday, 23-Nov-2026 10:00:00 GMT".
    let d = s.body("/plain.html");
    assert!(d.ends_with(" GMT") && d.contains(", "), "{d}");
    assert_eq!(d.matches('-').count(), 2, "{d}");
}

#[test]
fn blocks_are_stubs_for_includes_that_fail_or_say_nothing() {
    let s = Ssi::start(
        &[
            (
                "stub.html",
                "<!--#block name=\"one\" -->[stub <!--#echo var=\"arg_v\" -->]<!--#endblock -->\
                 a<!--#include virtual=\"/missing?v=sub\" stub=\"one\" -->\
                 b<!--#include virtual=\"/empty.html\" stub=\"one\" -->\
                 c<!--#include virtual=\"/full.html\" stub=\"one\" -->\
                 d<!--#include virtual=\"/missing\" stub=\"two\" -->e",
            ),
            ("empty.html", ""),
            ("full.html", "FULL"),
        ],
        "",
    );
    // The stub is parsed again in the subrequest (`$arg_v` is its own),
    // unless the subrequest made its head already: an empty file is not
    // filtered, and neither is the stub that replaces it.
    assert_eq!(
        s.body("/stub.html?v=main"),
        format!("a[stub sub]b[stub <!--#echo var=\"arg_v\" -->]cFULLd{ERR}e")
    );
    assert!(
        s.logged("\"stub\"=\"two\" for \"include\" not found")
            .is_some()
    );
}

#[test]
fn include_resolves_relative_uris_and_arguments() {
    let s = Ssi::start(
        &[
            (
                "dir/page.html",
                "<!--#include virtual=\"part.html?p=$arg_p\" -->|\
                 <!--#include virtual=\"/dir/part.html\" -->|\
                 <!--#include file=\"part.html\" -->",
            ),
            (
                "dir/part.html",
                "[<!--#echo var=\"arg_p\" -->|<!--#echo var=\"uri\" -->]",
            ),
            (
                "esc.html",
                "<!--#include virtual=\"/dir/p%61rt.html?p=%41\" -->",
            ),
            (
                "unsafe.html",
                "<!--#include virtual=\"/dir/../esc.html\" -->",
            ),
        ],
        "",
    );
    assert_eq!(
        s.body("/dir/page.html?p=7"),
        "[7|/dir/part.html]|[(none)|/dir/part.html]|[(none)|/dir/part.html]"
    );
    assert_eq!(s.body("/esc.html"), "[%41|/dir/part.html]");
    assert_eq!(s.body("/unsafe.html"), ERR);
    assert!(
        s.logged("unsafe URI \"/dir/../esc.html\" was detected")
            .is_some()
    );
}

#[test]
fn include_parameter_errors() {
    let s = Ssi::start(
        &[(
            "p.html",
            "1<!--#include -->\
             2<!--#include virtual=\"/a\" file=\"/b\" -->\
             3<!--#include virtual=\"/a\" set=\"x\" stub=\"y\" -->\
             4<!--#include file=\"/a\" wait=\"yes\" -->\
             5<!--#include virtual=\"/a\" wait=\"maybe\" -->\
             6<!--#include virtual=\"/a\" virtual=\"/b\" -->\
             7<!--#include virtual=\"/a\" what=\"/b\" -->\
             8<!--#echo -->9",
        )],
        "",
    );
    assert_eq!(
        s.body("/p.html"),
        format!("1{ERR}2{ERR}3{ERR}4{ERR}5{ERR}6{ERR}7{ERR}8{ERR}9")
    );
    for line in [
        "no parameter in \"include\" SSI command",
        "inclusion may be either virtual=\"/a\" or file=\"/b\"",
        "\"set\" and \"stub\" cannot be used together in \"include\" SSI command",
        "\"wait\" cannot be used with file=\"/a\"",
        "invalid value \"maybe\" in the \"wait\" parameter",
        "duplicate \"virtual\" parameter in \"include\" SSI command",
        "invalid parameter name: \"what\" in \"include\" SSI command",
        "mandatory \"var\" parameter is absent in \"echo\" SSI command",
    ] {
        assert!(s.logged(line).is_some(), "{line}");
    }
}

#[test]
fn parse_errors_swallow_the_command() {
    let s = Ssi::start(
        &[
            (
                "e.html",
                "a<!--#echo var=x -->b<!--#ECHO var=\"x\" -->c<!--#echo var=\"x\"y -->d\
                 <!-- a comment -->e<!--",
            ),
            ("silent.html", "a<!--#nosuch -->b"),
        ],
        "location /quiet/ { ssi on; ssi_silent_errors on; alias {root}/; }",
    );
    assert_eq!(
        s.body("/e.html"),
        format!("a{ERR}b{ERR}c{ERR}d<!-- a comment -->e")
    );
    assert!(s.logged("invalid SSI command: \"ECHO\"").is_some());
    assert_eq!(s.body("/quiet/silent.html"), "ab");
}

#[test]
fn value_length_limits_parameters() {
    let s = Ssi::start(
        &[(
            "v.html",
            "<!--#set var=\"a\" value=\"12345\" --><!--#echo var=\"a\" -->",
        )],
        "location / { ssi on; ssi_value_length 4; }",
    );
    assert_eq!(s.body("/v.html"), format!("{ERR}(none)"));
    assert!(
        s.logged("too long \"12345...\" value of \"value\" parameter in \"set\" SSI command")
            .is_some()
    );
}

#[test]
fn a_command_cut_across_reads_is_the_same_command() {
    // One-byte reads: every command is cut everywhere. (Not `<<` cut
    // between the two: nginx then loses the first `<`; nowait keeps it.)
    let page = "<!-x<!--#set var=\"v\" value=\"<$arg_a>\" --><!--#if expr=\"$v\" -->\
                [<!--#echo var=\"v\" -->]<!--#endif -->-->";
    let s = Ssi::start(
        &[("cut.html", page)],
        "location / { ssi on; output_buffers 1 1; }",
    );
    assert_eq!(s.body("/cut.html?a=b"), "<!-x[&lt;b&gt;]-->");
}

#[test]
fn the_head_loses_length_validators_and_ranges() {
    let s = Ssi::start(
        &[
            ("h.html", "<!--#echo var=\"arg_a\" -->0123456789"),
            ("empty.html", ""),
        ],
        "location /lm/ { ssi on; ssi_last_modified on; alias {root}/; }",
    );
    let r = get(s.server.port(), "/h.html?a=x");
    assert_eq!(body(&r), "x0123456789");
    for h in ["Content-Length", "Last-Modified", "ETag", "Accept-Ranges"] {
        assert_eq!(r.header(h), None, "{h}");
    }
    // A range is not applied to a filtered body.
    let r = request(
        s.server.port(),
        "GET /h.html?a=y HTTP/1.1\r\nHost: localhost\r\nRange: bytes=0-1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!((r.status, body(&r)), (200, "y0123456789".to_string()));
    // `ssi_last_modified on` keeps Last-Modified and makes the ETag weak.
    let r = get(s.server.port(), "/lm/h.html");
    assert!(r.header("Last-Modified").is_some());
    let etag = r.header("ETag").expect("an ETag");
    assert!(etag.starts_with("W/\""), "{etag}");
    // An empty file is not filtered.
    let r = get(s.server.port(), "/empty.html");
    assert_eq!(r.header("Content-Length").as_deref(), Some("0"));
    // HEAD: no body, and no length either.
    let r = request(
        s.server.port(),
        "HEAD /h.html HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Length"), None);
    assert!(r.body.is_empty());
}

#[test]
fn types_choose_what_is_filtered() {
    let s = Ssi::start(
        &[
            ("t.txt", "<!--#echo var=\"arg_a\" -->"),
            ("t.html", "<!--#echo var=\"arg_a\" -->"),
        ],
        "location / { ssi on; types { text/plain txt; text/html html; } }\n\
         location /plain/ { ssi on; ssi_types text/plain; alias {root}/; }\n\
         location /any/ { ssi on; ssi_types *; alias {root}/; }",
    );
    assert_eq!(s.body("/t.txt?a=1"), "<!--#echo var=\"arg_a\" -->");
    assert_eq!(s.body("/t.html?a=1"), "1");
    // The list always holds text/html.
    assert_eq!(s.body("/plain/t.txt?a=2"), "2");
    assert_eq!(s.body("/plain/t.html?a=2"), "2");
    assert_eq!(s.body("/any/t.txt?a=3"), "3");
}

#[test]
fn error_pages_and_return_texts_are_filtered() {
    let s = Ssi::start(
        &[],
        "location / { ssi on; }\n\
         location /r.html { ssi on; return 200 'a<!--#echo var=\"arg_x\" -->b'; }",
    );
    let r = get(s.server.port(), "/missing.html");
    assert_eq!(r.status, 404);
    assert_eq!(r.header("Content-Length"), None);
    assert!(body(&r).contains("404 Not Found"));
    assert_eq!(s.body("/r.html?x=1"), "a1b");
}

#[test]
fn small_output_buffers_and_an_empty_proxied_include() {
    // nginx's ssi_include_big.t without gzip: files read 512 bytes at a
    // time, after an include whose answer is an empty 204.
    let x = "X".repeat(1025);
    let s = Ssi::start(
        &[
            ("c.html", &x),
            (
                "t1.html",
                "<!--#include virtual=\"/proxy/blah\" --><!--#include virtual=\"/c.html\" -->",
            ),
            (
                "t2.html",
                &format!("<!--#include virtual=\"/proxy/blah\" -->{x}"),
            ),
        ],
        "output_buffers 2 512;\n\
         location / { ssi on; }\n\
         location /proxy/ { proxy_pass http://127.0.0.1:{port}/local/; }\n\
         location = /local/blah { return 204; }",
    );
    assert_eq!(s.body("/t1.html"), x);
    assert_eq!(s.body("/t2.html"), x);
}

/// nginx's access phase passes a subrequest by: an included location that
/// denies every client is still included (the main request was allowed).
#[test]
fn an_include_is_not_refused_by_the_access_phase() {
    let s = Ssi::start(
        &[
            (
                "page.html",
                "[<!--# include virtual=\"/private/part.html\" -->]",
            ),
            ("private/part.html", "secret"),
        ],
        "location /private/ { deny all; }",
    );
    assert_eq!(s.text("/page.html"), (200, "[secret]".to_string()));
    assert_eq!(s.text("/private/part.html").0, 403);
}
