//! Black-box tests of the redirects nowait makes: `absolute_redirect`,
//! `port_in_redirect`, `server_name_in_redirect`, the `auto_redirect` of a
//! proxied location named with a trailing `/`, `error_page` with a target
//! that is neither a URI nor a named location, and `msie_refresh`. nginx
//! 1.22's behaviour: run with `NOWAIT_TEST_NGINX=1` to check it.

mod common;

use common::client::request;
use common::{Conf, Fixture, Server};

fn get_host(port: u16, host: &str, path: &str) -> common::Response {
    request(
        port,
        &format!("GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n"),
    )
}

fn serve(f: &Fixture) -> Server {
    let conf = Conf::http(
        "absolute_redirect off;
         server {
             listen 127.0.0.1:{port};
             server_name on;
             root {root};
             absolute_redirect on;
             location /auto/ { proxy_pass http://127.0.0.1:{port}; }
             location /return301 { return 301 /redirect; }
             location /return301/name { return 301 /redirect; server_name_in_redirect on; }
             location /return301/port { return 301 /redirect; port_in_redirect off; }
             location /errpage { return 404; error_page 404 text; }
             location /errpage301 { return 404; error_page 404 =301 text; }
             location /refresh { return 301 \"space \"; msie_refresh on; }
         }
         server {
             listen 127.0.0.1:{port};
             server_name off;
             root {root};
             location /auto/ { proxy_pass http://127.0.0.1:{port}; }
             location /return301 { return 301 /redirect; }
         }",
    )
    .root(f.root())
    .render();
    Server::tested(&conf)
}

#[test]
fn absolute_redirects_name_host_and_port() {
    let f = Fixture::build();
    std::fs::create_dir(f.root().join("dir sp")).unwrap();
    let s = serve(&f);
    let p = s.port();
    let loc = |host: &str, path: &str| get_host(p, host, path).header("Location");
    assert_eq!(loc("on", "/dir"), Some(format!("http://on:{p}/dir/")));
    assert_eq!(
        loc("on", "/dir%20sp?a=b"),
        Some(format!("http://on:{p}/dir%20sp/?a=b"))
    );
    assert_eq!(
        loc("on", "/return301"),
        Some(format!("http://on:{p}/redirect"))
    );
    assert_eq!(
        loc("host", "/return301"),
        Some(format!("http://host:{p}/redirect"))
    );
    assert_eq!(
        loc("host", "/return301/name"),
        Some(format!("http://on:{p}/redirect"))
    );
    assert_eq!(
        loc("host", "/return301/port"),
        Some("http://host/redirect".to_string())
    );
    // `absolute_redirect off`: as written.
    assert_eq!(loc("off", "/dir"), Some("/dir/".to_string()));
    assert_eq!(loc("off", "/dir%20sp"), Some("/dir%20sp/".to_string()));
    assert_eq!(loc("off", "/return301"), Some("/redirect".to_string()));
}

#[test]
fn proxied_locations_redirect_their_name_without_slash() {
    let f = Fixture::build();
    let s = serve(&f);
    let p = s.port();
    let r = get_host(p, "on", "/auto?a=b");
    assert_eq!(r.status, 301);
    assert_eq!(
        r.header("Location"),
        Some(format!("http://on:{p}/auto/?a=b"))
    );
    let r = get_host(p, "off", "/auto");
    assert_eq!(r.header("Location").as_deref(), Some("/auto/"));
}

#[test]
fn error_page_to_a_text_redirects() {
    let f = Fixture::build();
    let s = serve(&f);
    let r = get_host(s.port(), "on", "/errpage");
    assert_eq!(r.status, 302);
    assert_eq!(r.header("Location").as_deref(), Some("text"));
    let r = get_host(s.port(), "on", "/errpage301");
    assert_eq!(r.status, 301);
}

#[test]
fn msie_gets_a_refresh_page() {
    let f = Fixture::build();
    let s = serve(&f);
    let r = request(
        s.port(),
        "GET /refresh HTTP/1.0\r\nHost: on\r\nUser-Agent: MSIE foo\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Location"), None);
    assert!(
        common::body(&r).contains("URL=space%20\""),
        "{}",
        common::body(&r)
    );
    let r = get_host(s.port(), "on", "/refresh");
    assert_eq!(r.status, 301);
}

fn error_pages(f: &Fixture, recursive: &str) -> Server {
    let conf = Conf::http(&format!(
        "server {{
             listen 127.0.0.1:{{port}};
             root {{root}};
             recursive_error_pages {recursive};
             location /missing {{ error_page 404 /page-missing; }}
             location /page-missing {{ error_page 404 =200 /fallback.txt; }}
         }}"
    ))
    .root(f.root())
    .render();
    Server::tested(&conf)
}

#[test]
fn an_error_pages_own_error_is_looked_up_again_only_under_recursive_error_pages() {
    let f = Fixture::build();
    std::fs::write(f.root().join("fallback.txt"), "fallback\n").unwrap();
    let off = error_pages(&f, "off");
    let got = request(off.port(), "GET /missing HTTP/1.0\r\n\r\n");
    assert_eq!(got.status, 404, "{got:?}");
    let on = error_pages(&f, "on");
    let got = request(on.port(), "GET /missing HTTP/1.0\r\n\r\n");
    assert_eq!(got.status, 200, "{got:?}");
    assert_eq!(got.body, b"fallback\n");
}
