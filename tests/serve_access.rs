//! Black-box tests of the access phase: `allow`/`deny`, `auth_basic` with
//! every password scheme nginx reads, `satisfy all | any`, `auth_delay`,
//! `limit_except`, and `realip` (`set_real_ip_from`, `real_ip_header`,
//! `real_ip_recursive`, `$realip_remote_addr`).
//!
//! They use [`Server::tested`]: `NOWAIT_TEST_NGINX=1` runs them against
//! nginx, which must pass them all (the log lines checked are nginx's).

mod common;

use std::time::Duration;

use common::client::{get, request};
use common::tmp::set_mode;
use common::{Conf, Fixture, Server, body, wait};

/// How long a test waits for a line the server logs after answering.
const LOG_WAIT: Duration = Duration::from_secs(5);

/// The password file of these tests: one user per scheme, each with the
/// password "password" (the hashes are nginx's own tests').
const HTPASSWD: &str = "# comment line\n\
    crypt:sa3tHJ3/KuYvI\n\
    md5:$1$salt$qJH7.N4xYta3aEG/dfqo/0\n\
    apr1:$apr1$salt$Xxd1irWT9ycqoYxGFn4cb.\n\
    plain:{PLAIN}password\n\
    ssha:{SSHA}yI6cZwQadOA1e+/f+T+H3eCQQhRzYWx0\n\
    sha:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n\
    broken:$apr1$\n\
    last:{PLAIN}password";

/// The fixture with the password file beside the documents.
fn fixture() -> Fixture {
    let f = Fixture::build();
    let path = f.root().join("htpasswd");
    std::fs::write(&path, HTPASSWD).expect("write htpasswd");
    set_mode(&path, 0o644);
    f
}

/// The server under test serving `f` with `extra` in its server block,
/// logging at `info`.
fn serve(f: &Fixture, extra: &str) -> Server {
    let conf = Conf::server(&format!("root {{root}};\n{extra}"))
        .root(f.root())
        .render()
        .replace("error_log stderr;", "error_log stderr info;");
    Server::tested(&conf)
}

/// `Authorization: Basic` for `user:password`.
fn basic(user: &str, password: &str) -> String {
    use std::fmt::Write;
    // A tiny base64 encoder: the tests must not share the server's.
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let input = format!("{user}:{password}").into_bytes();
    let mut out = String::new();
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                let _ = write!(
                    out,
                    "{}",
                    ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char
                );
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `GET path` with basic credentials; the status and the response.
fn get_auth(s: &Server, path: &str, user: &str, password: &str) -> common::Response {
    request(
        s.port(),
        &format!(
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic {}\r\nConnection: close\r\n\r\n",
            basic(user, password)
        ),
    )
}

/// Waits (bounded) for a logged line holding every one of `parts`.
fn logged(s: &Server, parts: &[&str]) -> bool {
    wait::until(LOG_WAIT, || {
        s.stderr()
            .lines()
            .any(|l| parts.iter().all(|p| l.contains(p)))
    })
}

#[test]
fn allow_and_deny_in_order() {
    let f = fixture();
    let s = serve(
        &f,
        "location /first-allow { allow 127.0.0.1; deny all; alias {root}/dir/; }
         location /first-deny { deny 127.0.0.0/8; allow all; alias {root}/dir/; }
         location /v6-only { deny ::1; alias {root}/dir/; }
         location /inherit { deny all;
             location /inherit/override { allow all; alias {root}/dir/; }
             location /inherit/kept { alias {root}/dir/; } }",
    );
    assert_eq!(get(s.port(), "/first-allow/file.txt").status, 200);
    let denied = get(s.port(), "/first-deny/file.txt");
    assert_eq!(denied.status, 403);
    assert!(body(&denied).contains("403 Forbidden"));
    // Rules of another address family decide nothing.
    assert_eq!(get(s.port(), "/v6-only/file.txt").status, 200);
    // A level with rules of its own replaces its parent's.
    assert_eq!(get(s.port(), "/inherit/override/file.txt").status, 200);
    assert_eq!(get(s.port(), "/inherit/kept/file.txt").status, 403);
    assert!(logged(
        &s,
        &[
            "[error]",
            "access forbidden by rule",
            "/first-deny/file.txt"
        ]
    ));
}

#[test]
fn a_denied_request_gets_its_error_page() {
    let f = fixture();
    let s = serve(
        &f,
        "error_page 403 /404.html;
         location /closed { deny all; }",
    );
    let r = get(s.port(), "/closed");
    assert_eq!(r.status, 403);
    assert_eq!(body(&r), "<p>custom not found</p>\n");
}

#[test]
fn the_challenge_stays_on_an_error_page() {
    let f = fixture();
    let s = serve(
        &f,
        "error_page 401 /404.html;
         location / { auth_basic closed; auth_basic_user_file {root}/htpasswd; }
         location = /404.html { }",
    );
    let r = get(s.port(), "/dir/file.txt");
    assert_eq!(r.status, 401);
    assert_eq!(body(&r), "<p>custom not found</p>\n");
    assert_eq!(
        r.header("WWW-Authenticate").as_deref(),
        Some("Basic realm=\"closed\"")
    );
}

#[test]
fn every_password_scheme() {
    let f = fixture();
    let s = serve(
        &f,
        "auth_basic \"closed site\"; auth_basic_user_file {root}/htpasswd;",
    );
    for user in ["crypt", "md5", "apr1", "plain", "ssha", "sha", "last"] {
        let ok = get_auth(&s, "/dir/file.txt", user, "password");
        assert_eq!(ok.status, 200, "{user}");
        assert_eq!(body(&ok), "dir file\n");
        assert_eq!(
            get_auth(&s, "/dir/file.txt", user, "wrong").status,
            401,
            "{user}"
        );
    }
    // A stored value that is no hash matches nothing.
    assert_eq!(get_auth(&s, "/dir/file.txt", "broken", "").status, 401);
    // Comment lines are not users.
    assert_eq!(
        get_auth(&s, "/dir/file.txt", "# comment line", "x").status,
        401
    );
    assert!(logged(&s, &["[error]", "user \"apr1\": password mismatch"]));
}

#[test]
fn the_challenge_names_the_realm() {
    let f = fixture();
    let s = serve(
        &f,
        "auth_basic_user_file {root}/htpasswd;
         location / { auth_basic \"site of $host\"; }
         location /open { auth_basic off; alias {root}/dir/; }
         location /var-off { set $realm off; auth_basic $realm; alias {root}/dir/; }",
    );
    let r = get(s.port(), "/dir/file.txt");
    assert_eq!(r.status, 401);
    assert_eq!(
        r.header("WWW-Authenticate").as_deref(),
        Some("Basic realm=\"site of localhost\"")
    );
    assert!(body(&r).contains("401 Authorization Required"));
    assert!(logged(
        &s,
        &[
            "[info]",
            "no user/password was provided for basic authentication"
        ]
    ));
    let unknown = get_auth(&s, "/dir/file.txt", "nobody-here", "x");
    assert_eq!(unknown.status, 401);
    assert!(logged(&s, &["user \"nobody-here\" was not found in"]));
    // `off`, written or computed, turns the check off.
    assert_eq!(get(s.port(), "/open/file.txt").status, 200);
    assert_eq!(get(s.port(), "/var-off/file.txt").status, 200);
}

#[test]
fn a_missing_password_file_is_403_and_the_path_may_be_computed() {
    let f = fixture();
    let s = serve(
        &f,
        "auth_basic closed;
         location /nx { auth_basic_user_file {root}/no-such-file; alias {root}/dir/; }
         location /var { auth_basic_user_file {root}/$arg_f; alias {root}/dir/; }",
    );
    assert_eq!(
        get_auth(&s, "/nx/file.txt", "plain", "password").status,
        403
    );
    assert!(logged(
        &s,
        &[
            "[error]",
            "open()",
            "no-such-file",
            "(2: No such file or directory)"
        ]
    ));
    let ok = get_auth(&s, "/var/file.txt?f=htpasswd", "plain", "password");
    assert_eq!(ok.status, 200);
    assert_eq!(
        get_auth(&s, "/var/file.txt?f=nx", "plain", "password").status,
        403
    );
}

#[test]
fn satisfy_all_and_any() {
    let f = fixture();
    let s = serve(
        &f,
        "auth_basic closed; auth_basic_user_file {root}/htpasswd;
         location /all-deny { deny all; alias {root}/dir/; }
         location /any-deny { satisfy any; deny all; alias {root}/dir/; }
         location /any-allow { satisfy any; allow all; alias {root}/dir/; }",
    );
    // all: the rules refuse first, the password is not asked for.
    let r = get_auth(&s, "/all-deny/file.txt", "plain", "password");
    assert_eq!(r.status, 403);
    // any: a good password is enough …
    assert_eq!(
        get_auth(&s, "/any-deny/file.txt", "plain", "password").status,
        200
    );
    // … and without one, the 401 wins over the 403.
    let r = get(s.port(), "/any-deny/file.txt");
    assert_eq!(r.status, 401);
    assert!(r.header("WWW-Authenticate").is_some());
    // any: the rules allowing is enough.
    assert_eq!(get(s.port(), "/any-allow/file.txt").status, 200);
}

#[test]
fn auth_delay_holds_only_refusals() {
    let f = fixture();
    let s = serve(
        &f,
        "auth_delay 1s; auth_basic closed; auth_basic_user_file {root}/htpasswd;",
    );
    let t = std::time::Instant::now();
    assert_eq!(get_auth(&s, "/dir/file.txt", "plain", "bad").status, 401);
    assert!(t.elapsed() >= Duration::from_millis(900), "the 401 waited");
    assert!(logged(&s, &["[info]", "delaying unauthorized request"]));
    assert_eq!(
        get_auth(&s, "/dir/file.txt", "plain", "password").status,
        200
    );
}

#[test]
fn limit_except_restricts_the_other_methods() {
    let f = fixture();
    let s = serve(
        &f,
        "location /dir/ { limit_except GET { deny all; } }
         location /posted { limit_except POST { deny all; } return 200 posted; }",
    );
    assert_eq!(get(s.port(), "/dir/file.txt").status, 200);
    let head = request(
        s.port(),
        "HEAD /dir/file.txt HTTP/1.0\r\nHost: localhost\r\n\r\n",
    );
    assert_eq!(head.status, 200, "GET lets HEAD through");
    let post = request(
        s.port(),
        "POST /dir/file.txt HTTP/1.0\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n",
    );
    assert_eq!(post.status, 403);
    let posted = request(
        s.port(),
        "POST /posted HTTP/1.0\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n",
    );
    assert_eq!(posted.status, 200);
    assert_eq!(get(s.port(), "/posted").status, 403);
}

#[test]
fn realip_replaces_the_client_address() {
    let f = fixture();
    let s = serve(
        &f,
        "set_real_ip_from 127.0.0.1;
         location / { return 200 \"$remote_addr:$remote_port $realip_remote_addr\\n\"; }
         location /xff { real_ip_header X-Forwarded-For;
             add_header X-Addr $remote_addr; alias {root}/dir/; }
         location /rec { real_ip_header X-Forwarded-For; real_ip_recursive on;
             set_real_ip_from 10.0.0.0/8;
             add_header X-Addr $remote_addr; alias {root}/dir/; }
         location /deny { deny 192.0.2.1; }",
    );
    let r = request(
        s.port(),
        "GET / HTTP/1.0\r\nHost: localhost\r\nX-Real-IP: 192.0.2.1:8080\r\n\r\n",
    );
    assert_eq!(body(&r), "192.0.2.1:8080 127.0.0.1\n");
    let r = request(
        s.port(),
        "GET / HTTP/1.0\r\nHost: localhost\r\nX-Real-IP: 192.0.2.1\r\n\r\n",
    );
    assert_eq!(
        body(&r),
        "192.0.2.1: 127.0.0.1\n",
        "no port: an empty $remote_port"
    );
    let r = request(s.port(), "GET / HTTP/1.0\r\nHost: localhost\r\n\r\n");
    assert!(body(&r).starts_with("127.0.0.1:"));
    // A location's settings apply from the pre-access phase on: after its
    // own `return`s, before its access checks and its content.
    let xff = "X-Forwarded-For: 192.0.2.7, 10.1.1.1\r\n";
    let get_xff = |path: &str| {
        let raw = format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n{xff}\r\n");
        request(s.port(), &raw).header("X-Addr")
    };
    assert_eq!(
        get_xff("/xff/file.txt").as_deref(),
        Some("10.1.1.1"),
        "the last hop only"
    );
    assert_eq!(
        get_xff("/rec/file.txt").as_deref(),
        Some("127.0.0.1"),
        "the location's own trusted list replaces the server's"
    );
    // The access rules see the new address.
    let r = request(
        s.port(),
        "GET /deny HTTP/1.0\r\nHost: localhost\r\nX-Real-IP: 192.0.2.1\r\n\r\n",
    );
    assert_eq!(r.status, 403);
}

#[test]
fn realip_recursive_walks_back_through_trusted_hops() {
    let f = fixture();
    let s = serve(
        &f,
        "set_real_ip_from 127.0.0.1; set_real_ip_from 10.0.0.0/8;
         real_ip_header X-Forwarded-For; real_ip_recursive on;
         location / { return 200 \"$remote_addr\\n\"; }",
    );
    let r = request(
        s.port(),
        "GET / HTTP/1.0\r\nHost: localhost\r\nX-Forwarded-For: 192.0.2.7, 10.1.1.1, 10.2.2.2\r\n\r\n",
    );
    assert_eq!(body(&r), "192.0.2.7\n");
}
