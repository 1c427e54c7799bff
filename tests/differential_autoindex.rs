//! Differential test of the autoindex module: nowait and the real nginx
//! 1.22 list the same directories (the fixture document root, plus names
//! that need escaping, cutting and UTF-8 counting) in every
//! `autoindex_format`, with `autoindex_exact_size off`,
//! `autoindex_localtime on`, `charset utf-8` and `gzip on`, and must answer
//! byte for byte alike: status line, the framing and entity headers, and
//! the body (decompressed when gzipped, since two deflaters need not agree
//! on bytes). Error pages are compared with the servers' names normalized,
//! and redirects with their own ports.
//!
//! Needs `/usr/sbin/nginx`. Run: `cargo test --test differential_autoindex`.

mod common;

use std::io::Read;

use common::client::request;
use common::{Conf, Fixture, Server};

/// One `location` per way of listing, all of the fixture's root.
const LOCATIONS: &str = "\
    location /html/ { alias {root}/; autoindex on; }\n\
    location /size/ { alias {root}/; autoindex on; autoindex_exact_size off; }\n\
    location /local/ { alias {root}/; autoindex on; autoindex_localtime on; }\n\
    location /utf8/ { alias {root}/; autoindex on; charset utf-8; }\n\
    location /json/ { alias {root}/; autoindex on; autoindex_format json; }\n\
    location /jsonp/ { alias {root}/; autoindex on; autoindex_format jsonp; }\n\
    location /xml/ { alias {root}/; autoindex on; autoindex_format xml; }\n\
    location /gz/ { alias {root}/; autoindex on; gzip on; gzip_vary on; }\n\
    location /off/ { alias {root}/; }";

/// The headers compared when either server sends them.
const COMPARED: [&str; 10] = [
    "Content-Type",
    "Content-Length",
    "Transfer-Encoding",
    "Content-Encoding",
    "Vary",
    "Connection",
    "Location",
    "Last-Modified",
    "ETag",
    "Accept-Ranges",
];

/// Adds names that exercise escaping and cutting to the fixture, and
/// removes its root index so that the root is listed.
fn fixture() -> Fixture {
    let f = Fixture::build();
    let root = f.root();
    std::fs::remove_file(root.join("index.html")).unwrap();
    let names = [
        "colon:blah".to_string(),
        "q?x".into(),
        "a<b>&\"c".into(),
        "apos'".into(),
        format!("long-{}", "0".repeat(50)),
        format!("long-{}", ">".repeat(50)),
        format!("exact-{}", "9".repeat(44)),
        format!("utf8-{}", "ф".repeat(3)),
        format!("utf8-{}", "ф".repeat(45)),
        format!("utf8-<>&-{}", "ф".repeat(45)),
        "tab\tname".into(),
    ];
    for n in &names {
        std::fs::write(root.join(n), n.as_bytes()).unwrap();
        common::tmp::set_mode(&root.join(n), 0o644);
    }
    std::fs::write(root.join("rounded"), vec![b'r'; 10_752]).unwrap();
    common::tmp::set_mode(&root.join("rounded"), 0o644);
    std::fs::create_dir(root.join("dir-<>&")).unwrap();
    common::tmp::set_mode(&root.join("dir-<>&"), 0o755);
    f
}

/// The requests: each location's listings of a few directories, the
/// errors around them, HEAD and HTTP/1.0.
fn cases() -> Vec<String> {
    let mut out = Vec::new();
    for loc in [
        "html", "size", "local", "utf8", "json", "jsonp", "xml", "gz", "off",
    ] {
        for path in [
            "",
            "noindex/",
            "ep/",
            "linkdir/",
            "dir/",
            "missing/",
            "private/",
            "dir-%3C%3E&/",
        ] {
            out.push(format!(
                "GET /{loc}/{path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
            ));
        }
        out.push(format!(
            "GET /{loc}/ HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n"
        ));
        out.push(format!(
            "HEAD /{loc}/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        ));
        out.push(format!("GET /{loc}/noindex/ HTTP/1.0\r\n\r\n"));
        out.push(format!(
            "GET /{loc}/noindex HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        ));
    }
    for q in [
        "callback=cb_1.x",
        "callback=",
        "callback=a(b)",
        "x=1&callback=f",
    ] {
        out.push(format!(
            "GET /jsonp/noindex/?{q} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        ));
    }
    out
}

/// What is compared of one response.
fn view(r: &common::Response, port: u16) -> String {
    let mut out = format!("{}\n", r.status_line);
    for name in COMPARED {
        if let Some(v) = r.header(name) {
            out.push_str(&format!(
                "{name}: {}\n",
                v.replace(&port.to_string(), "PORT")
            ));
        }
    }
    let body = if r.header("Content-Encoding").as_deref() == Some("gzip") {
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&r.body[..])
            .read_to_end(&mut plain)
            .expect("a gzip body");
        plain
    } else {
        r.body.clone()
    };
    let body = String::from_utf8_lossy(&body)
        .replace(concat!("nowait/", env!("CARGO_PKG_VERSION")), "SERVER")
        .replace("nginx/1.22.1", "SERVER");
    out.push_str(&body);
    out
}

#[test]
fn listings_match_nginx_byte_for_byte() {
    let f = fixture();
    let conf = Conf::server(&format!("root {{root}};\n{LOCATIONS}"))
        .root(f.root())
        .render();
    let nginx = Server::nginx(&conf);
    let nowait = Server::nowait(&conf);
    let mut mismatches = Vec::new();
    let mut listings = 0;
    let cases = cases();
    for raw in &cases {
        let want = view(&request(nginx.port(), raw), nginx.port());
        if ["Index of", "\"name\":", "<list>"]
            .iter()
            .any(|m| want.contains(m))
            && want.contains("noext")
        {
            listings += 1;
        }
        let got = view(&request(nowait.port(), raw), nowait.port());
        if want != got {
            mismatches.push(format!("{raw:?}\n--- nginx\n{want}\n--- nowait\n{got}"));
        }
    }
    // Every listing location listed the root, plain and gzipped.
    assert_eq!(listings, 16, "listings of the root");
    assert!(
        mismatches.is_empty(),
        "{} of {} cases differ:\n{}",
        mismatches.len(),
        cases.len(),
        mismatches.join("\n")
    );
}
