//! nowait's cache file format against the real nginx 1.22 (Debian's, at
//! `/usr/sbin/nginx`; the tests fail if it is missing): nginx fills a cache
//! directory as a caching proxy and every file it writes must decode with
//! `cache::format::decode` to what the origin sent and the policy says;
//! and files nowait encodes must be served by nginx as hits, with the
//! origin down.
//!
//! nginx's cache loader starts a minute after nginx, so these tests rely
//! on what nginx does before it: a key missing from the zone is looked up
//! on disk by its file name while the zone is "cold"
//! (`ngx_http_file_cache_open`).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::server::{NGINX_BIN, free_port};
use common::{Conf, Response, Server, TempDir, Upstream, parse_responses, raw_exchange};
use nowait::cache::format::{
    self, Entry, EntryHeader, HEADER_SIZE, Refreshed, VERSION, decode, encode, update_header,
};
use nowait::cache::key::{self, CacheKey, Md5};
use nowait::cache::policy::{Revalidate, upstream_header_defaults};
use nowait::http::date::format_unix;

/// `levels=1:2`.
const LEVELS: [u8; 2] = [1, 2];
/// nginx's default `proxy_buffer_size` on x86-64 (one page): the most
/// `body_start` it reads.
const BUFFER_SIZE: usize = 4096;
/// How long a test waits for nginx to write a file (a bound, not a speed).
const WAIT: Duration = Duration::from_secs(5);

/// The wall clock in Unix seconds.
fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn require_nginx() {
    assert!(
        Path::new(NGINX_BIN).exists(),
        "{NGINX_BIN} is missing: these tests compare with nginx 1.22 (apt-get install nginx)"
    );
}

/// The configuration of a caching nginx in front of `origin_port`, its
/// cache in `cache_dir`. `/` uses `proxy_cache_key $request_uri` (one
/// part); `/d/` the proxy module's default key (two parts).
fn conf(cache_dir: &Path, origin_port: u16, extra: &str) -> String {
    let location = |path: &str, key: &str| {
        format!(
            "location {path} {{\n proxy_pass http://127.0.0.1:{origin_port};\n proxy_cache z;\n \
             {key}\n proxy_cache_valid 200 10m;\n proxy_cache_valid 404 1m;\n {extra}\n \
             add_header X-Cache $upstream_cache_status always;\n}}\n"
        )
    };
    let server = format!(
        "{}{}",
        location("/", "proxy_cache_key $request_uri;"),
        location("/d/", "")
    );
    Conf::http(&format!(
        "proxy_cache_path {} levels=1:2 keys_zone=z:1m;\n\
         server {{\n listen 127.0.0.1:{{port}};\n{server}}}\n",
        cache_dir.display()
    ))
    .main("user root;")
    .render()
}

/// One request with `headers` (each "Name: value"); its response.
fn request(port: u16, method: &str, path: &str, headers: &[&str]) -> Response {
    let mut text = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    for h in headers {
        text.push_str(h);
        text.push_str("\r\n");
    }
    text.push_str("\r\n");
    let bytes = raw_exchange(port, text.as_bytes());
    let mut parsed = parse_responses(&bytes, &[method.to_string()], true);
    assert_eq!(parsed.responses.len(), 1, "{method} {path}: {parsed:?}");
    parsed.responses.remove(0)
}

/// `GET path` with `headers`, checking `$upstream_cache_status`.
fn get(port: u16, path: &str, headers: &[&str], cache: &str) -> Response {
    let r = request(port, "GET", path, headers);
    assert_eq!(
        r.header("X-Cache").as_deref(),
        Some(cache),
        "GET {path} {headers:?}: {r:?}"
    );
    r
}

/// Every regular file under `dir`.
fn files_under(dir: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("readdir {}: {e}", d.display())) {
            let p = e.expect("dir entry").path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(p);
            }
        }
    }
    out
}

/// Where the entry named `md5` lives.
fn path_of(cache: &Path, md5: &Md5) -> PathBuf {
    cache.join(key::relative_path(&LEVELS, md5).expect("levels 1:2"))
}

/// Reads and decodes the file named `md5` for `key`.
fn read_entry(cache: &Path, key: &CacheKey, md5: &Md5) -> (Vec<u8>, EntryHeader, Vec<u8>, usize) {
    let path = path_of(cache, md5);
    // nginx renames the temp file into place after the response is sent.
    common::wait::until(WAIT, || path.exists());
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let Entry { header, head } =
        decode(&bytes, key, BUFFER_SIZE).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let head = head.to_vec();
    let body_start = usize::from(header.body_start);
    (bytes, header, head, body_start)
}

/// What the origin of the first test answers for each path.
fn origin_answer(target: &str, request: &common::Recorded, xae: i64, expires: &str) -> Vec<u8> {
    let (fields, body): (String, Vec<u8>) = match target {
        "/plain" | "/d/plain" => (
            "ETag: \"p1\"\r\nLast-Modified: Tue, 14 Nov 2023 22:13:20 GMT\r\n\
             Cache-Control: max-age=100\r\n"
                .into(),
            b"hello plain".to_vec(),
        ),
        "/swr" => (
            "Cache-Control: max-age=50, stale-while-revalidate=7, stale-if-error=9\r\n".into(),
            b"swr".to_vec(),
        ),
        "/xae" => (format!("X-Accel-Expires: @{xae}\r\n"), b"xae".to_vec()),
        "/expires" => (format!("Expires: {expires}\r\n"), b"expires".to_vec()),
        "/valid" => (String::new(), b"valid list".to_vec()),
        "/vary" => {
            let enc = request.header("Accept-Encoding").unwrap_or_default();
            (
                "Vary: Accept-Encoding\r\nCache-Control: max-age=60\r\n".into(),
                format!("enc={enc}").into_bytes(),
            )
        }
        "/nostore" => ("Cache-Control: no-store\r\n".into(), b"no".to_vec()),
        "/cookie" => (
            "Set-Cookie: a=b\r\nCache-Control: max-age=60\r\n".into(),
            b"no".to_vec(),
        ),
        "/head" => (
            "Cache-Control: max-age=60\r\n".into(),
            b"head body".to_vec(),
        ),
        "/cond" | "/cond412" => (
            "Cache-Control: max-age=60\r\n".into(),
            b"conditional".to_vec(),
        ),
        "/chunked" => {
            return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nCache-Control: max-age=60\r\n\r\n\
                     5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
                .to_vec();
        }
        _ => {
            return b"HTTP/1.1 404 Not Found\r\nETag: \"nf\"\r\nContent-Length: 4\r\n\r\nnope"
                .to_vec();
        }
    };
    let mut out = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n{fields}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    out
}

/// The head part of what the origin sent (status line to blank line).
fn head_of(answer: &[u8]) -> Vec<u8> {
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head")
        + 4;
    answer[..end].to_vec()
}

#[test]
fn every_file_nginx_writes_decodes() {
    require_nginx();
    let start = now();
    let xae = start + 5000;
    let expires = format_unix(start + 3000);
    let origin = {
        let expires = expires.clone();
        Upstream::start(move |c| {
            while let Some(r) = c.read_request() {
                if !c.write(&origin_answer(&r.target(), &r, xae, &expires)) || !r.keep_alive() {
                    return;
                }
            }
        })
    };
    let dir = TempDir::new("cache-format");
    let cache = dir.path().join("cache");
    let nginx = Server::nginx(&conf(&cache, origin.port(), ""));
    let port = nginx.port();

    for path in [
        "/plain", "/swr", "/xae", "/expires", "/valid", "/missing", "/d/plain", "/chunked",
    ] {
        get(port, path, &[], "MISS");
        get(port, path, &[], "HIT");
    }
    // Not stored: each asks the origin again.
    for path in ["/nostore", "/cookie"] {
        get(port, path, &[], "MISS");
        get(port, path, &[], "MISS");
    }
    // Vary: the first variant goes under the key's MD5, the next under
    // its own variant hash; `Accept-Encoding` is normalized.
    assert_eq!(
        get(port, "/vary", &["Accept-Encoding: gzip"], "MISS").body,
        b"enc=gzip"
    );
    assert_eq!(
        get(port, "/vary", &["Accept-Encoding: br"], "MISS").body,
        b"enc=br"
    );
    assert_eq!(
        get(port, "/vary", &["Accept-Encoding: , br "], "HIT").body,
        b"enc=br"
    );
    assert_eq!(
        get(port, "/vary", &["Accept-Encoding: gzip"], "HIT").body,
        b"enc=gzip"
    );
    // HEAD is fetched as GET and stored with its body.
    let r = request(port, "HEAD", "/head", &[]);
    assert_eq!(r.header("X-Cache").as_deref(), Some("MISS"));
    assert_eq!(get(port, "/head", &[], "HIT").body, b"head body");
    // A cached location sends no conditionals nor ranges upstream; the
    // client's are applied to the response on its way out.
    let r = get(
        port,
        "/cond",
        &[
            "Range: bytes=0-1",
            "If-Range: \"x\"",
            "If-None-Match: \"x\"",
            "If-Modified-Since: Tue, 14 Nov 2023 22:13:20 GMT",
        ],
        "MISS",
    );
    assert_eq!((r.status, r.body.as_slice()), (200, &b"conditional"[..]));
    // ... before it is stored: a 412 ends the fill, nothing is stored.
    let r = get(
        port,
        "/cond412",
        &[
            "If-Match: \"x\"",
            "If-Unmodified-Since: Tue, 14 Nov 2023 22:13:20 GMT",
        ],
        "MISS",
    );
    assert_eq!(r.status, 412);
    let end = now();

    let requests = origin.requests();
    let head_req = requests
        .iter()
        .find(|r| r.target() == "/head")
        .expect("/head went upstream");
    assert_eq!(head_req.method(), "GET");
    for target in ["/cond", "/cond412"] {
        let cond = requests
            .iter()
            .find(|r| r.target() == target)
            .expect("went upstream");
        for (name, value) in upstream_header_defaults(None) {
            assert!(value.is_empty());
            assert_eq!(
                cond.header(name),
                None,
                "{name} reached the origin: {}",
                cond.head_text()
            );
        }
    }

    // What the origin sent for `target` (the first time).
    let answer = |target: &str| {
        let r = requests
            .iter()
            .find(|r| r.target() == target)
            .unwrap_or_else(|| panic!("{target} never went upstream"));
        origin_answer(target, r, xae, &expires)
    };
    let mut expected = BTreeSet::new();
    // (key, target, valid_sec range, updating, error, etag, last_modified)
    let plain_lm = 1_700_000_000;
    type Case<'a> = (CacheKey, &'a str, (i64, i64), i64, i64, &'a [u8], i64);
    let cases: Vec<Case<'_>> = vec![
        (
            CacheKey::new(b"/plain"),
            "/plain",
            (start + 100, end + 100),
            0,
            0,
            b"\"p1\"",
            plain_lm,
        ),
        (
            CacheKey::new(b"/swr"),
            "/swr",
            (start + 50, end + 50),
            7,
            9,
            b"",
            -1,
        ),
        (CacheKey::new(b"/xae"), "/xae", (xae, xae), 0, 0, b"", -1),
        (
            CacheKey::new(b"/expires"),
            "/expires",
            (start + 3000, start + 3000),
            0,
            0,
            b"",
            -1,
        ),
        (
            CacheKey::new(b"/valid"),
            "/valid",
            (start + 600, end + 600),
            0,
            0,
            b"",
            -1,
        ),
        // A 404 keeps no validators.
        (
            CacheKey::new(b"/missing"),
            "/missing",
            (start + 60, end + 60),
            0,
            0,
            b"",
            -1,
        ),
        (
            CacheKey::new(b"/head"),
            "/head",
            (start + 60, end + 60),
            0,
            0,
            b"",
            -1,
        ),
        (
            CacheKey::new(b"/cond"),
            "/cond",
            (start + 60, end + 60),
            0,
            0,
            b"",
            -1,
        ),
        // The default key: the proxy_pass URL's scheme and host, then the
        // URI sent upstream.
        (
            CacheKey::from_parts([
                format!("http://127.0.0.1:{}", origin.port()).as_bytes(),
                b"/d/plain",
            ]),
            "/d/plain",
            (start + 100, end + 100),
            0,
            0,
            b"\"p1\"",
            plain_lm,
        ),
    ];
    for (k, target, (lo, hi), updating, error, etag, lm) in &cases {
        let (bytes, h, head, body_start) = read_entry(&cache, k, k.md5());
        expected.insert(path_of(&cache, k.md5()));
        let sent = answer(target);
        let sent_head = head_of(&sent);
        assert_eq!(h.version, VERSION);
        assert_eq!(h.crc32, k.crc32(), "{target}");
        assert_eq!(
            usize::from(h.header_start),
            format::header_start(k.text().len())
        );
        assert_eq!(head, sent_head, "{target}: the head as the origin sent it");
        assert_eq!(
            &bytes[body_start..],
            &sent[sent_head.len()..],
            "{target}: the body"
        );
        assert!(
            (*lo..=*hi).contains(&h.valid_sec),
            "{target}: valid_sec {} not in {lo}..={hi}",
            h.valid_sec
        );
        assert!((start..=end).contains(&h.date), "{target}: date {}", h.date);
        assert_eq!(
            (h.updating_sec, h.error_sec),
            (*updating, *error),
            "{target}"
        );
        assert_eq!(h.etag, *etag, "{target}");
        assert_eq!(h.last_modified, *lm, "{target}");
        assert_eq!(h.valid_msec, 0);
        assert!(h.vary.is_empty());
        assert_eq!(h.variant, [0; 16]);
        // nginx clears the struct: the padding and unused room are zero.
        assert_eq!(
            &bytes[..HEADER_SIZE],
            &h.to_bytes()[..],
            "{target}: raw struct bytes"
        );
    }

    // A chunked body is stored decoded, under the head as received
    // (`Transfer-Encoding: chunked` included).
    let chunked = CacheKey::new(b"/chunked");
    let (bytes, _, head, body_start) = read_entry(&cache, &chunked, chunked.md5());
    expected.insert(path_of(&cache, chunked.md5()));
    assert_eq!(head, head_of(&answer("/chunked")));
    assert_eq!(&bytes[body_start..], b"hello world");

    let vary_key = CacheKey::new(b"/vary");
    let gzip = key::variant(
        vary_key.md5(),
        b"Accept-Encoding",
        [("Accept-Encoding", "gzip")],
    );
    let br = key::variant(
        vary_key.md5(),
        b"Accept-Encoding",
        [("accept-encoding", " br ,")],
    );
    for (file, variant, body) in [
        (*vary_key.md5(), gzip, &b"enc=gzip"[..]),
        (br, br, b"enc=br"),
    ] {
        let (bytes, h, _, body_start) = read_entry(&cache, &vary_key, &file);
        expected.insert(path_of(&cache, &file));
        assert_eq!(h.vary, b"Accept-Encoding");
        assert_eq!(h.variant, variant);
        assert_eq!(&bytes[body_start..], body);
        assert_eq!(&bytes[..HEADER_SIZE], &h.to_bytes()[..]);
        assert_eq!(
            key::check_variant(
                vary_key.md5(),
                &h.vary,
                &h.variant,
                [(
                    "Accept-Encoding",
                    std::str::from_utf8(&body[4..]).expect("ascii")
                )]
            ),
            key::VariantCheck::Matches
        );
    }

    assert!(
        common::wait::until(WAIT, || files_under(&cache) == expected),
        "nginx's files differ from the expected ones:\n found {:?}\n want {:?}",
        files_under(&cache),
        expected
    );
}

/// Writes an entry for `key` under the file name `md5` with `h`'s fields
/// (offsets computed here), the head and the body.
fn write_entry(
    cache: &Path,
    key: &CacheKey,
    md5: &Md5,
    mut h: EntryHeader,
    head: &[u8],
    body: &[u8],
) -> PathBuf {
    let start = format::header_start(key.text().len());
    h.header_start = start as u16;
    h.body_start = (start + head.len()) as u16;
    let mut bytes = encode(&h, key.text());
    bytes.extend_from_slice(head);
    bytes.extend_from_slice(body);
    let path = path_of(cache, md5);
    let parent = path.parent().expect("a parent");
    std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir {}: {e}", parent.display()));
    std::fs::write(&path, &bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    path
}

/// A fresh header for `key`: valid for an hour from `now`.
fn fresh(key: &CacheKey, now: i64) -> EntryHeader {
    let mut h = EntryHeader::for_entry(key, 0).expect("short key");
    h.valid_sec = now + 3600;
    h.date = now;
    h
}

/// A 200 head with `fields` and a body of `len` bytes.
fn ok_head(fields: &str, len: usize) -> Vec<u8> {
    format!("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n{fields}Content-Length: {len}\r\n\r\n")
        .into_bytes()
}

#[test]
fn nginx_serves_files_nowait_wrote() {
    require_nginx();
    let t = now();
    let dir = TempDir::new("cache-format");
    let cache = dir.path().join("cache");
    // Nothing listens there: only the cache can answer.
    let dead = free_port();

    let a = CacheKey::new(b"/a");
    let mut h = fresh(&a, t);
    h.etag = b"\"w\"".to_vec();
    write_entry(
        &cache,
        &a,
        a.md5(),
        h,
        &ok_head("ETag: \"w\"\r\n", 5),
        b"ours!",
    );

    let d = CacheKey::from_parts([format!("http://127.0.0.1:{dead}").as_bytes(), b"/d/x"]);
    write_entry(
        &cache,
        &d,
        d.md5(),
        fresh(&d, t),
        &ok_head("", 7),
        b"default",
    );

    // Two variants: the key's own file, and one under the variant hash.
    let v = CacheKey::new(b"/v");
    let gzip = key::variant(v.md5(), b"Accept-Encoding", [("Accept-Encoding", "gzip")]);
    let br = key::variant(v.md5(), b"Accept-Encoding", [("Accept-Encoding", "br")]);
    for (file, variant, body) in [(*v.md5(), gzip, &b"gzip!"[..]), (br, br, b"brotli")] {
        let mut h = fresh(&v, t);
        h.vary = b"Accept-Encoding".to_vec();
        h.variant = variant;
        write_entry(
            &cache,
            &v,
            &file,
            h,
            &ok_head("Vary: Accept-Encoding\r\n", body.len()),
            body,
        );
    }

    let old = CacheKey::new(b"/old");
    let mut h = fresh(&old, t);
    h.valid_sec = t - 100;
    write_entry(&cache, &old, old.md5(), h, &ok_head("", 3), b"old");

    let v4 = CacheKey::new(b"/v4");
    let mut h = fresh(&v4, t);
    h.version = 4;
    write_entry(&cache, &v4, v4.md5(), h, &ok_head("", 2), b"v4");

    // A file under "/collide"'s name that holds another key.
    let collide = CacheKey::new(b"/collide");
    let other = CacheKey::new(b"/collidE");
    let collided = write_entry(
        &cache,
        &other,
        collide.md5(),
        fresh(&other, t),
        &ok_head("", 2),
        b"no",
    );

    let nginx = Server::nginx(&conf(&cache, dead, ""));
    let port = nginx.port();

    let r = get(port, "/a", &[], "HIT");
    assert_eq!(r.body, b"ours!");
    assert_eq!(r.header("ETag").as_deref(), Some("\"w\""));
    assert_eq!(get(port, "/d/x", &[], "HIT").body, b"default");
    assert_eq!(
        get(port, "/v", &["Accept-Encoding: gzip"], "HIT").body,
        b"gzip!"
    );
    assert_eq!(
        get(port, "/v", &["Accept-Encoding: br"], "HIT").body,
        b"brotli"
    );
    // Past valid_sec: expired, and the origin is down.
    assert_eq!(get(port, "/old", &[], "EXPIRED").status, 502);
    assert_eq!(get(port, "/v4", &[], "MISS").status, 502);
    assert_eq!(get(port, "/collide", &[], "MISS").status, 502);
    let want = format::FormatError::Md5Collision(format::Collision::Key)
        .message(&collided.to_string_lossy());
    assert!(
        common::wait::until(WAIT, || nginx.stderr().contains(&want)),
        "nginx did not log {want:?}:\n{}",
        nginx.stderr()
    );
}

#[test]
fn a_304_rewrites_the_header_as_update_header_says() {
    require_nginx();
    let t = now();
    let dir = TempDir::new("cache-format");
    let cache = dir.path().join("cache");
    let origin = Upstream::start(|c| {
        while let Some(r) = c.read_request() {
            let answer: &[u8] = if r.header("If-None-Match").as_deref() == Some("\"r1\"") {
                b"HTTP/1.1 304 Not Modified\r\nCache-Control: max-age=77\r\n\r\n"
            } else {
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nnew"
            };
            if !c.write(answer) || !r.keep_alive() {
                return;
            }
        }
    });

    let k = CacheKey::new(b"/r");
    let lm = 1_690_000_000;
    let mut h = fresh(&k, t - 50);
    h.valid_sec = t - 10;
    h.last_modified = lm;
    h.etag = b"\"r1\"".to_vec();
    let head = ok_head(
        &format!("ETag: \"r1\"\r\nLast-Modified: {}\r\n", format_unix(lm)),
        6,
    );
    let path = write_entry(&cache, &k, k.md5(), h, &head, b"stored");
    let before = std::fs::read(&path).expect("read the entry");
    let at_hit = decode(&before, &k, BUFFER_SIZE).expect("decodes").header;

    let nginx = Server::nginx(&conf(&cache, origin.port(), "proxy_cache_revalidate on;"));
    let t0 = now();
    let r = get(nginx.port(), "/r", &[], "REVALIDATED");
    let t1 = now();
    assert_eq!(r.body, b"stored");

    let sent = origin.requests();
    assert_eq!(sent.len(), 1);
    let defaults = upstream_header_defaults(Some(Revalidate {
        last_modified: at_hit.last_modified,
        etag: &at_hit.etag,
    }));
    for (name, value) in defaults {
        let want = (!value.is_empty()).then(|| String::from_utf8(value).expect("ascii"));
        assert_eq!(sent[0].header(name), want, "{name}");
    }

    let mut after = Vec::new();
    assert!(
        common::wait::until(WAIT, || {
            after = std::fs::read(&path).expect("read the entry");
            after[..HEADER_SIZE] != before[..HEADER_SIZE]
        }),
        "nginx did not rewrite the header"
    );
    let new = EntryHeader::from_bytes(&after).expect("a header");
    assert!((t0..=t1).contains(&new.date), "date {}", new.date);
    let want = update_header(
        &before,
        &at_hit,
        &Refreshed {
            valid_sec: new.date + 77,
            updating_sec: 0,
            error_sec: 0,
            date: new.date,
        },
    )
    .expect("same entry");
    assert_eq!(&after[..HEADER_SIZE], &want[..]);
    assert_eq!(
        &after[HEADER_SIZE..],
        &before[HEADER_SIZE..],
        "only the struct changes"
    );
}
