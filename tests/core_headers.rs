//! Black-box tests of nginx's headers filter and what follows it:
//! `expires` (every form, variables), `add_header`'s special fields
//! (`Last-Modified`, `ETag`, `Cache-Control`, empty values), `etag off`,
//! `if_modified_since`, `max_ranges`, and `If-Range` against the
//! validators `add_header` left. Each asserts nginx 1.22's behaviour: run
//! with `NOWAIT_TEST_NGINX=1` to check it against nginx.

mod common;

use common::client::{get, request};
use common::{Fixture, Server};

fn serve(f: &Fixture, extra: &str) -> Server {
    common::serve(f, extra)
}

fn get_with(port: u16, path: &str, header: &str) -> common::Response {
    request(
        port,
        &format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{header}\r\nConnection: close\r\n\r\n"),
    )
}

/// Seconds of an HTTP-date (`Thu, 01 Jan 1970 00:00:01 GMT`), by the
/// test's own small parser (IMF-fixdate only).
fn http_date(s: &str) -> i64 {
    let parts: Vec<&str> = s.split([' ', ':']).collect();
    let day: i64 = parts[1].parse().unwrap();
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| *m == parts[2])
    .unwrap() as i64
        + 1;
    let year: i64 = parts[3].parse().unwrap();
    let (h, m, sec): (i64, i64, i64) = (
        parts[4].parse().unwrap(),
        parts[5].parse().unwrap(),
        parts[6].parse().unwrap(),
    );
    // Days from civil (H. Hinnant).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe - 719_468) * 86_400 + h * 3600 + m * 60 + sec
}

#[test]
fn expires_every_form() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "location /epoch { alias {root}/x; expires epoch; }
         location /max { alias {root}/x; expires max; }
         location /access { alias {root}/x; expires 2048; }
         location /negative { alias {root}/x; expires -2048; }
         location /zero { alias {root}/x; expires 0; }
         location /modified { alias {root}/x; expires modified 2048; }
         location /daily { alias {root}/x; expires @15h30m33s; }
         location /off { alias {root}/x; expires off; }
         location /var { alias {root}/x; expires $arg_e; }
         location /varmod { alias {root}/x; expires modified $arg_e; }",
    );
    let p = s.port();
    let r = get(p, "/epoch");
    assert_eq!(
        r.header("Expires").as_deref(),
        Some("Thu, 01 Jan 1970 00:00:01 GMT")
    );
    assert_eq!(r.header("Cache-Control").as_deref(), Some("no-cache"));
    let r = get(p, "/max");
    assert_eq!(
        r.header("Expires").as_deref(),
        Some("Thu, 31 Dec 2037 23:55:55 GMT")
    );
    assert_eq!(
        r.header("Cache-Control").as_deref(),
        Some("max-age=315360000")
    );
    let r = get(p, "/access");
    assert_eq!(r.header("Cache-Control").as_deref(), Some("max-age=2048"));
    let date = http_date(&r.header("Date").unwrap());
    let expires = http_date(&r.header("Expires").unwrap());
    assert!((expires - date - 2048).abs() <= 1, "{expires} {date}");
    assert_eq!(
        get(p, "/negative").header("Cache-Control").as_deref(),
        Some("no-cache")
    );
    let r = get(p, "/zero");
    assert_eq!(r.header("Cache-Control").as_deref(), Some("max-age=0"));
    assert_eq!(r.header("Expires"), r.header("Date"));
    // `modified`: from the file's mtime, whatever the time now.
    let r = get(p, "/modified");
    let lm = http_date(&r.header("Last-Modified").unwrap());
    assert_eq!(http_date(&r.header("Expires").unwrap()), lm + 2048);
    let r = get(p, "/daily");
    assert!(r.header("Expires").unwrap().contains(":30:33 GMT"));
    assert_eq!(get(p, "/off").header("Expires"), None);
    // With variables: parsed per request; a bad or empty value sets nothing.
    assert!(
        get(p, "/var?e=epoch")
            .header("Expires")
            .unwrap()
            .contains("1970")
    );
    assert_eq!(
        get(p, "/var?e=2048").header("Cache-Control").as_deref(),
        Some("max-age=2048")
    );
    assert_eq!(get(p, "/var?e=off").header("Expires"), None);
    assert_eq!(get(p, "/var?e=bad").header("Expires"), None);
    assert_eq!(get(p, "/var").header("Expires"), None);
    // `modified` takes times only.
    assert_eq!(get(p, "/varmod?e=epoch").header("Expires"), None);
    // Not on errors.
    let r = get(p, "/access/missing");
    assert_eq!(r.status, 404);
    assert_eq!(r.header("Expires"), None);
}

#[test]
fn expires_replaces_the_cache_control_add_header_made_earlier() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "location /set {
             add_header Cache-Control max-age=3600;
             add_header Cache-Control private;
             return 200 OK;
         }
         location /redefine { expires epoch; proxy_pass http://127.0.0.1:{port}/set; }",
    );
    let r = get(s.port(), "/set");
    let cc: Vec<&str> = r
        .headers
        .iter()
        .filter(|(n, _)| n == "Cache-Control")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(cc, ["max-age=3600", "private"]);
    let r = get(s.port(), "/redefine");
    let cc: Vec<&str> = r
        .headers
        .iter()
        .filter(|(n, _)| n == "Cache-Control")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(cc, ["no-cache"]);
}

#[test]
fn add_header_replaces_or_removes_validators() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "location /nolm { alias {root}/x; add_header Last-Modified \"\"; }
         location /lm { alias {root}/x; add_header Last-Modified \"Mon, 28 Sep 1970 06:00:00 GMT\"; }
         location /noetag { alias {root}/x; add_header ETag \"\"; }
         location /etag { alias {root}/x; add_header ETag '\"mine\"'; }
         location /empty { alias {root}/x; add_header X-Empty \"\"; add_header X-Full full; }
         location /off { alias {root}/x; etag off; }",
    );
    let p = s.port();
    let r = get(p, "/nolm");
    assert_eq!(r.header("Last-Modified"), None);
    assert!(r.header("ETag").is_some());
    let r = get(p, "/lm");
    assert_eq!(
        r.header("Last-Modified").as_deref(),
        Some("Mon, 28 Sep 1970 06:00:00 GMT")
    );
    let r = get(p, "/noetag");
    assert_eq!(r.header("ETag"), None);
    assert!(r.header("Last-Modified").is_some());
    assert_eq!(get(p, "/etag").header("ETag").as_deref(), Some("\"mine\""));
    let r = get(p, "/empty");
    assert_eq!(r.header("X-Empty"), None);
    assert_eq!(r.header("X-Full").as_deref(), Some("full"));
    let r = get(p, "/off");
    assert_eq!(r.header("ETag"), None);
    assert!(r.header("Last-Modified").is_some());
}

#[test]
fn if_range_sees_the_validators_add_header_left() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "location /nolm { alias {root}/x; add_header Last-Modified \"\"; }
         location /lm { alias {root}/x; add_header Last-Modified \"Mon, 28 Sep 1970 06:00:00 GMT\"; }",
    );
    let p = s.port();
    let r = get_with(p, "/x", "Range: bytes=0-1");
    assert_eq!(r.status, 206);
    let lm = get(p, "/x").header("Last-Modified").unwrap();
    let r = get_with(p, "/x", &format!("Range: bytes=0-1\r\nIf-Range: {lm}"));
    assert_eq!(r.status, 206);
    // No date to match once removed.
    let r = get_with(p, "/nolm", &format!("Range: bytes=0-1\r\nIf-Range: {lm}"));
    assert_eq!(r.status, 200);
    // The date set is the one matched.
    let r = get_with(
        p,
        "/lm",
        "Range: bytes=0-1\r\nIf-Range: Mon, 28 Sep 1970 06:00:00 GMT",
    );
    assert_eq!(r.status, 206);
    let r = get_with(p, "/lm", &format!("Range: bytes=0-1\r\nIf-Range: {lm}"));
    assert_eq!(r.status, 200);
}

#[test]
fn if_modified_since_modes() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "location /before { alias {root}/x; if_modified_since before; }
         location /off { alias {root}/x; if_modified_since off; }",
    );
    let p = s.port();
    let later = "If-Modified-Since: Wed, 08 Jul 2037 22:53:52 GMT";
    // exact (the default): only the same date.
    assert_eq!(get_with(p, "/x", later).status, 200);
    assert_eq!(get_with(p, "/before", later).status, 304);
    assert_eq!(get_with(p, "/off", later).status, 200);
    let lm = get(p, "/off").header("Last-Modified").unwrap();
    assert_eq!(
        get_with(p, "/off", &format!("If-Modified-Since: {lm}")).status,
        200
    );
}

#[test]
fn max_ranges_limits_and_turns_off_ranges() {
    let f = Fixture::build();
    let s = serve(
        &f,
        "location /one { alias {root}/big.bin; max_ranges 1; }
         location /none { alias {root}/big.bin; max_ranges 0; }",
    );
    let p = s.port();
    assert_eq!(get_with(p, "/one", "Range: bytes=0-1").status, 206);
    // More ranges than allowed: the whole file.
    assert_eq!(get_with(p, "/one", "Range: bytes=0-1,5-6").status, 200);
    let r = get_with(p, "/none", "Range: bytes=0-1");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Accept-Ranges"), None);
}
