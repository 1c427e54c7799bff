//! `proxy_store` from outside: a `200` is kept under `root` (or under the
//! name the `proxy_store` string gives) with `proxy_store_access`'s mode
//! and the upstream's `Last-Modified` as its time, through a temp file in
//! `proxy_temp_path` that is gone afterwards; a body cut short and a
//! `HEAD` keep nothing.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use common::cached::{Cached, files_under, wait_until};
use common::{TempDir, Upstream};

fn origin() -> Upstream {
    Upstream::start(|c| {
        while let Some(req) = c.read_request() {
            if req.target().contains("cut") {
                c.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part");
                c.close();
                return;
            }
            let body = format!("stored {}", req.target());
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\
                 Last-Modified: Mon, 02 Mar 2015 17:20:58 GMT\r\n\r\n{body}",
                body.len()
            );
            c.write(resp.as_bytes());
        }
    })
}

fn start(dir: &std::path::Path, up: &Upstream) -> Cached {
    let http = format!(
        "proxy_temp_path {{dir}}/tmp 1 2;\n\
         server {{\n listen 127.0.0.1:{{port}};\n root {{dir}}/html;\n \
         location /s/ {{ proxy_pass http://{up}; proxy_store on;\n  \
         proxy_store_access user:rw group:rw all:r; }}\n \
         location /named/ {{ proxy_pass http://{up}; proxy_store {{dir}}/named$uri; }}\n}}\n",
        up = up.addr()
    );
    Cached::start(dir, &http, &[])
}

#[test]
fn a_200_is_kept_under_root_with_its_mode_and_time() {
    let up = origin();
    let tmp = TempDir::new("store");
    let s = start(tmp.path(), &up);
    let mut r = common::cached::Reader::get(s.port, "/s/a/b.txt", "1.1", "");
    r.read_to_end();
    assert_eq!(r.body(), Some(&b"stored /s/a/b.txt"[..]));
    // The file is in place once the connection has ended, as with nginx.
    let file = tmp.path().join("html/s/a/b.txt");
    assert!(file.exists());
    assert_eq!(std::fs::read(&file).expect("stored"), b"stored /s/a/b.txt");
    let meta = std::fs::metadata(&file).expect("stored");
    assert_eq!(meta.permissions().mode() & 0o777, 0o664);
    assert_eq!(
        meta.mtime(),
        1_425_316_858,
        "Last-Modified is the file's time"
    );
    let r = common::client::get(s.port, "/named/x");
    assert_eq!(r.body, b"stored /named/x");
    let named = tmp.path().join("named/named/x");
    wait_until("the named file", || named.exists());
    assert_eq!(std::fs::read(&named).expect("stored"), b"stored /named/x");
    assert!(
        files_under(&tmp.path().join("tmp")).is_empty(),
        "no temp file is left"
    );
}

#[test]
fn a_cut_body_and_a_head_keep_nothing() {
    let up = origin();
    let tmp = TempDir::new("store-cut");
    let s = start(tmp.path(), &up);
    let mut r = common::cached::Reader::get(s.port, "/s/cut.txt", "1.1", "");
    let got = String::from_utf8_lossy(r.read_to_end()).into_owned();
    assert!(
        r.body().is_some_and(|b| b.len() < 100),
        "the cut shows: {got:?}"
    );
    let r = common::client::request(
        s.port,
        "HEAD /s/head.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    // A later stored file shows the earlier ones were done with.
    common::client::get(s.port, "/s/later.txt");
    let later = tmp.path().join("html/s/later.txt");
    wait_until("the later file", || later.exists());
    wait_until("no temp file", || {
        files_under(&tmp.path().join("tmp")).is_empty()
    });
    assert!(!tmp.path().join("html/s/cut.txt").exists());
    assert!(!tmp.path().join("html/s/head.txt").exists());
}
