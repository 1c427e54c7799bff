//! Black-box tests of the autoindex module: the listing of a directory
//! without an index file in HTML, JSON, JSONP and XML; which entries are
//! listed (no dot files; links followed; a FIFO is "other"); escaping;
//! `autoindex_exact_size`; the answers nginx gives around it (404, 403,
//! 400 for a bad JSONP callback, 403 for a POST); and a listing's framing
//! (no `Content-Length`, as nginx sends it).
//!
//! Run against nginx with `NOWAIT_TEST_NGINX=1`: every assertion here is
//! nginx's behaviour.

mod common;

use common::client::{get, request};
use common::{Conf, Fixture, Server};

/// A server over the fixture with `autoindex on` in `/`, and `extra` in
/// the server block.
fn serve(f: &Fixture, extra: &str) -> Server {
    Server::tested(
        &Conf::server(&format!(
            "root {{root}};\nlocation / {{ autoindex on; }}\n{extra}"
        ))
        .root(f.root())
        .render(),
    )
}

fn text(r: &common::Response) -> String {
    common::body(r)
}

#[test]
fn html_listing_of_a_directory_without_index() {
    let f = Fixture::build();
    let s = serve(&f, "");
    let r = get(s.port(), "/noindex/");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Type").as_deref(), Some("text/html"));
    // No length: the listing is sent chunked, as nginx sends it.
    assert_eq!(r.header("Content-Length"), None);
    assert_eq!(r.header("Transfer-Encoding").as_deref(), Some("chunked"));
    assert_eq!(
        text(&r),
        "<html>\r\n<head><title>Index of /noindex/</title></head>\r\n<body>\r\n\
         <h1>Index of /noindex/</h1><hr><pre><a href=\"../\">../</a>\r\n\
         <a href=\"file.txt\">file.txt</a>                                           \
         14-Nov-2023 22:13                  13\r\n\
         </pre><hr></body>\r\n</html>\r\n"
    );
    // A directory with an index file is still served its index.
    let r = get(s.port(), "/dir/");
    assert_eq!(text(&r), "<p>dir index</p>\n");
}

#[test]
fn the_root_lists_what_nginx_lists_in_its_order() {
    let f = Fixture::build();
    std::fs::remove_file(f.root().join("index.html")).unwrap();
    let s = serve(&f, "");
    let page = text(&get(s.port(), "/"));
    let hrefs: Vec<&str> = page
        .split("<a href=\"")
        .skip(2)
        .map(|p| &p[..p.find('"').unwrap()])
        .collect();
    // Directories first (links to directories too), then files by bytes;
    // the dot file is not listed; names are escaped as URI components.
    assert_eq!(
        hrefs,
        [
            "dir/",
            "ep/",
            "linkdir/",
            "noindex/",
            "private/",
            "static/",
            "100%25.txt",
            "404.html",
            "a%2520b.txt",
            "app.js",
            "big.bin",
            "empty",
            "fifo",
            "image.png",
            "link.txt",
            "noext",
            "photo.JPG",
            "secret.txt",
            "style.css",
            "test.php",
            "with%20space.txt",
            "x",
            "%C3%BCn%C3%AFc%C3%B6d%C3%A9.txt",
        ]
    );
    assert!(!page.contains(".hidden"));
    // Sizes in bytes by default; `-` for directories.
    assert!(page.contains("big.bin</a>"), "{page}");
    assert!(
        page.contains("14-Nov-2023 22:13             1048576\r\n"),
        "{page}"
    );
}

#[test]
fn sizes_rounded_without_exact_size() {
    let f = Fixture::build();
    std::fs::remove_file(f.root().join("index.html")).unwrap();
    let s = serve(
        &f,
        "location /r/ { alias {root}/; autoindex on; autoindex_exact_size off; }",
    );
    let page = text(&get(s.port(), "/r/"));
    assert!(page.contains("<a href=\"big.bin\">big.bin</a>"), "{page}");
    assert!(page.contains("22:13      1M\r\n"), "{page}");
    assert!(page.contains("<a href=\"dir/\">dir/</a>"), "{page}");
    assert!(page.contains("22:13       -\r\n"), "{page}");
}

#[test]
fn json_jsonp_and_xml() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "location /j/ { alias {root}/noindex/; autoindex on; autoindex_format json; }\n\
         location /p/ { alias {root}/noindex/; autoindex on; autoindex_format jsonp; }\n\
         location /x/ { alias {root}/noindex/; autoindex on; autoindex_format xml; }",
    );
    let r = get(s.port(), "/j/");
    assert_eq!(
        r.header("Content-Type").as_deref(),
        Some("application/json")
    );
    assert_eq!(
        text(&r),
        "[\r\n{ \"name\":\"file.txt\", \"type\":\"file\", \
         \"mtime\":\"Tue, 14 Nov 2023 22:13:20 GMT\", \"size\":13 }\r\n]"
    );
    let r = get(s.port(), "/p/?callback=cb.x_1");
    assert_eq!(
        r.header("Content-Type").as_deref(),
        Some("application/javascript")
    );
    assert!(text(&r).starts_with("/* callback */\r\ncb.x_1([\r\n{ \"name\""));
    assert!(text(&r).ends_with("}\r\n]);"));
    // Without a callback, JSONP is JSON.
    let r = get(s.port(), "/p/");
    assert_eq!(
        r.header("Content-Type").as_deref(),
        Some("application/json")
    );
    // A callback that is not a plain name is refused.
    assert_eq!(get(s.port(), "/p/?callback=alert(1)").status, 400);
    let long = "a".repeat(129);
    assert_eq!(get(s.port(), &format!("/p/?callback={long}")).status, 400);
    let r = get(s.port(), "/x/");
    assert_eq!(
        r.header("Content-Type").as_deref(),
        Some("text/xml; charset=utf-8")
    );
    assert_eq!(
        text(&r),
        "<?xml version=\"1.0\"?>\r\n<list>\r\n\
         <file mtime=\"2023-11-14T22:13:20Z\" size=\"13\">file.txt</file>\r\n</list>\r\n"
    );
}

#[test]
fn errors_around_listings() {
    let f = Fixture::build();
    let s = serve(&f, "location /off/ { alias {root}/noindex/; }");
    assert_eq!(get(s.port(), "/missing/").status, 404);
    // autoindex is off by default: a directory without index is refused.
    assert_eq!(get(s.port(), "/off/").status, 403);
    // A POST is not listed.
    let r = request(
        s.port(),
        "POST /noindex/ HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 403);
    let r = request(
        s.port(),
        "HEAD /noindex/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty());
    assert_eq!(r.header("Content-Length"), None);
    // HTTP/1.0: no chunks, the end of the connection ends the listing.
    let r = request(s.port(), "GET /noindex/ HTTP/1.0\r\n\r\n");
    assert_eq!(r.status, 200);
    assert!(r.close_delimited);
    assert!(text(&r).ends_with("</html>\r\n"));
}

#[test]
fn an_unreadable_directory_is_forbidden() {
    common::require_or_skip!(
        common::is_root(),
        "the workers run as nobody, who cannot read the directory, only when started as root"
    );
    let f = Fixture::build();
    std::fs::remove_file(f.root().join("private/index.html")).ok();
    let s = serve(&f, "");
    assert_eq!(get(s.port(), "/private/").status, 403);
}

#[test]
fn names_are_escaped_and_cut_as_nginx_does() {
    let f = Fixture::build();
    let d = f.root().join("names");
    std::fs::create_dir(&d).unwrap();
    for n in [
        "q?.txt",
        "a<b>&c.txt",
        &format!("long-{}", "0".repeat(50)),
        &format!("utf-{}", "ф".repeat(48)),
    ] {
        std::fs::write(d.join(n), "").unwrap();
    }
    std::fs::create_dir(d.join("esc-<>&")).unwrap();
    common::tmp::set_mode(&d, 0o755);
    let s = serve(
        &f,
        "location /u/ { alias {root}/names/; autoindex on; charset utf-8; }",
    );
    let page = text(&get(s.port(), "/names/"));
    assert!(page.contains("<a href=\"q%3F.txt\">q?.txt</a>"), "{page}");
    assert!(
        page.contains("<a href=\"a%3Cb%3E%26c.txt\">a&lt;b&gt;&amp;c.txt</a>"),
        "{page}"
    );
    assert!(
        page.contains(&format!("long-{}..&gt;</a>", "0".repeat(42))),
        "{page}"
    );
    // Without `charset utf-8` a name is cut by bytes; with it, by characters.
    assert!(page.contains("<a href=\"esc-%3C%3E%26/\">esc-&lt;&gt;&amp;/</a>"));
    let page = text(&get(s.port(), "/u/"));
    assert!(
        page.contains(&format!("utf-{}..&gt;</a>", "ф".repeat(43))),
        "{page}"
    );
    assert_eq!(
        get(s.port(), "/u/").header("Content-Type").as_deref(),
        Some("text/html; charset=utf-8")
    );
    let r = get(s.port(), "/names/esc-%3C%3E&/");
    assert!(text(&r).contains("<title>Index of /names/esc-&lt;&gt;&amp;/</title>"));
}

#[test]
fn random_index_serves_a_random_regular_file_of_the_directory() {
    let d = common::TempDir::new("random-index");
    let root = d.path();
    let dir = root.join("x");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::create_dir_all(root.join("only-dirs/sub")).unwrap();
    for (name, text) in [("a", "A"), ("b", "B"), (".hidden", "H"), ("../target", "T")] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    std::os::unix::fs::symlink(root.join("target"), dir.join("link")).unwrap();
    std::os::unix::fs::symlink(root.join("missing"), dir.join("dangling")).unwrap();
    std::os::unix::fs::symlink(dir.join("sub"), dir.join("dir-link")).unwrap();
    common::tmp::set_mode(root, 0o755);
    let s = Server::tested(
        &Conf::server(
            "root {root};
             location /x/ { random_index on; }
             location /only-dirs/ { random_index on; index none.html; }",
        )
        .root(root)
        .render(),
    );
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..60 {
        let r = get(s.port(), "/x/");
        assert_eq!(r.status, 200);
        seen.insert(text(&r));
    }
    // Regular files and a link to one; never a dot file, a directory, a
    // link to one or a dangling link.
    assert!(seen.len() >= 2, "{seen:?}");
    assert!(
        seen.iter().all(|t| ["A", "B", "T"].contains(&t.as_str())),
        "{seen:?}"
    );
    // No regular file: the index directives run (here: none, so 403).
    assert_eq!(get(s.port(), "/only-dirs/").status, 403);
    assert_eq!(get(s.port(), "/missing/").status, 404);
}
