//! The cache's behaviour from outside, against a scripted origin: a lock
//! waiter streams the fill as it is written (read-while-write) and a fill
//! cut mid-body cuts its waiters and stores nothing; a `304` refreshes the
//! stored header on disk (checked in the file's bytes); `proxy_cache_lock`
//! timeouts; `proxy_cache_min_uses`, `proxy_cache_bypass`,
//! `proxy_no_cache`; stale-while-updating (`proxy_cache_use_stale
//! updating`, `stale-while-revalidate`) and background updates; `Vary`
//! variants. Orders are forced by the origin, which holds an answer until
//! the test lets it go: nothing here depends on how fast anything runs.

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use common::cached::{Cached, IO_TIMEOUT, Reader, files_under, wait_until};
use common::{TempDir, Upstream};
use nowait::cache::format::EntryHeader;

/// Half of the held responses' bodies.
const HALF: usize = 100_000;

/// A gate the origin waits at until the test opens it.
#[derive(Clone)]
struct Gate(Arc<Mutex<Receiver<()>>>);

fn gate() -> (Sender<()>, Gate) {
    let (tx, rx) = channel();
    (tx, Gate(Arc::new(Mutex::new(rx))))
}

impl Gate {
    fn wait(&self) {
        let rx = self.0.lock().unwrap_or_else(|p| p.into_inner());
        rx.recv_timeout(IO_TIMEOUT)
            .expect("the test opens the gate");
    }
}

/// nowait caching everything under `/` from `up`, with `extra` in the
/// location; `/status` is the status page.
fn start(dir: &Path, up: &Upstream, extra: &str) -> Cached {
    let http = format!(
        "proxy_cache_path {{dir}}/c levels=1:2 keys_zone=z:1m;\n\
         server {{\n listen 127.0.0.1:{{port}};\n location = /status {{ nowait_status; }}\n \
         location / {{\n  proxy_pass http://{up};\n  proxy_cache z;\n  \
         add_header X-Cache $upstream_cache_status always;\n  {extra}\n }}\n}}\n",
        up = up.addr()
    );
    Cached::start(dir, &http, &[])
}

/// The cache's files (entries and temp files).
fn cache_files(c: &Cached) -> Vec<PathBuf> {
    files_under(&c.dir.join("c"))
}

fn x_cache(head: &str) -> String {
    head.lines()
        .find_map(|l| l.strip_prefix("X-Cache: "))
        .unwrap_or("")
        .to_string()
}

#[test]
fn a_lock_waiter_streams_the_fill_as_it_is_written() {
    let (open, held) = gate();
    let asked = Arc::new(AtomicUsize::new(0));
    let n = asked.clone();
    let up = Upstream::start(move |c| {
        while c.read_request().is_some() {
            n.fetch_add(1, Ordering::SeqCst);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nCache-Control: max-age=600\r\n\r\n",
                2 * HALF
            );
            c.write(head.as_bytes());
            c.write(&vec![b'a'; HALF]);
            held.wait();
            c.write(&vec![b'b'; HALF]);
        }
    });
    let tmp = TempDir::new("cache-coalesce");
    let s = start(
        tmp.path(),
        &up,
        "proxy_cache_lock on; proxy_cache_lock_timeout 60s;",
    );
    let mut first = Reader::get(s.port, "/x", "1.1", "");
    assert_eq!(first.body_at_least(HALF).len(), HALF);
    // The origin holds the second half: a waiter that needed the whole
    // entry would get nothing now (and the read would time out).
    let mut waiter = Reader::get(s.port, "/x", "1.1", "");
    assert_eq!(waiter.body_at_least(HALF), &vec![b'a'; HALF][..]);
    open.send(()).expect("origin waits");
    let whole = [vec![b'a'; HALF], vec![b'b'; HALF]].concat();
    first.read_to_end();
    waiter.read_to_end();
    assert_eq!(first.body(), Some(&whole[..]));
    assert_eq!(waiter.body(), Some(&whole[..]));
    assert_eq!(x_cache(&first.head().unwrap_or_default()), "MISS");
    assert_eq!(x_cache(&waiter.head().unwrap_or_default()), "HIT");
    assert_eq!(asked.load(Ordering::SeqCst), 1, "one request upstream");
    assert_eq!(s.metric("nowait_cache_coalesced_total{zone=\"z\""), 1);
    wait_until("the entry", || {
        s.metric("nowait_cache_fills_total{zone=\"z\"") == 1
    });
    let r = common::client::get(s.port, "/x");
    assert_eq!(r.body, whole);
    assert_eq!(r.header("X-Cache").as_deref(), Some("HIT"));
}

#[test]
fn a_fill_cut_mid_body_cuts_its_waiters_and_stores_nothing() {
    let (open, held) = gate();
    let asked = Arc::new(AtomicUsize::new(0));
    let n = asked.clone();
    let up = Upstream::start(move |c| {
        while c.read_request().is_some() {
            if n.fetch_add(1, Ordering::SeqCst) > 0 {
                c.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nwhole");
                continue;
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nCache-Control: max-age=600\r\n\r\n",
                2 * HALF
            );
            c.write(head.as_bytes());
            c.write(&vec![b'a'; HALF]);
            held.wait();
            // The origin dies mid-body.
            c.close();
            return;
        }
    });
    let tmp = TempDir::new("cache-cut");
    let s = start(
        tmp.path(),
        &up,
        "proxy_cache_lock on; proxy_cache_lock_timeout 60s;",
    );
    let mut first = Reader::get(s.port, "/x", "1.1", "");
    first.body_at_least(HALF);
    let mut waiter = Reader::get(s.port, "/x", "1.1", "");
    waiter.body_at_least(HALF);
    open.send(()).expect("origin waits");
    first.read_to_end();
    waiter.read_to_end();
    for (who, r) in [("filler", &first), ("waiter", &waiter)] {
        let head = r.head().unwrap_or_default();
        assert!(
            head.contains(&format!("Content-Length: {}", 2 * HALF)),
            "{who}: {head}"
        );
        assert!(
            r.body().map_or(0, <[u8]>::len) < 2 * HALF,
            "{who}: the cut shows, the connection closed short"
        );
    }
    wait_until("the fill is given up", || {
        s.metric("nowait_cache_fills_abandoned_total{zone=\"z\"") == 1
    });
    assert_eq!(
        cache_files(&s),
        Vec::<PathBuf>::new(),
        "no entry, no temp file"
    );
    let r = common::client::get(s.port, "/x");
    assert_eq!(r.body, b"whole");
    assert_eq!(r.header("X-Cache").as_deref(), Some("MISS"));
}

#[test]
fn a_304_refreshes_the_stored_header_on_disk() {
    let up = Upstream::start(|c| {
        while let Some(req) = c.read_request() {
            if req.header("If-Modified-Since").is_some() {
                c.write(b"HTTP/1.1 304 Not Modified\r\nCache-Control: max-age=1000\r\n\r\n");
            } else {
                // Stored already expired (an absolute time in the past).
                c.write(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nX-Accel-Expires: @1\r\n\
                      Last-Modified: Mon, 02 Mar 2015 17:20:58 GMT\r\n\r\nbody",
                );
            }
        }
    });
    let tmp = TempDir::new("cache-revalidate");
    let s = start(tmp.path(), &up, "proxy_cache_revalidate on;");
    let r = common::client::get(s.port, "/r");
    assert_eq!(r.header("X-Cache").as_deref(), Some("MISS"));
    wait_until("the entry", || cache_files(&s).len() == 1);
    let file = cache_files(&s).remove(0);
    let before = std::fs::read(&file).expect("entry");
    let h = EntryHeader::from_bytes(&before).expect("nginx's header");
    assert_eq!(h.valid_sec, 1);
    let r = common::client::get(s.port, "/r");
    assert_eq!(r.header("X-Cache").as_deref(), Some("REVALIDATED"));
    assert_eq!(r.body, b"body");
    let after = std::fs::read(&file).expect("entry");
    let h2 = EntryHeader::from_bytes(&after).expect("nginx's header");
    let now = nowait::http::date::unix_secs(std::time::SystemTime::now());
    assert!(
        (now + 900..=now + 1000).contains(&h2.valid_sec),
        "the 304's max-age is on disk: {}",
        h2.valid_sec
    );
    let start = usize::from(h2.body_start);
    assert_eq!(&after[start..], b"body", "the body is untouched");
    assert_eq!(before.len(), after.len());
    assert_eq!(s.metric("nowait_cache_requests_total{zone=\"z\",path="), 2);
    let r = common::client::get(s.port, "/r");
    assert_eq!(r.header("X-Cache").as_deref(), Some("HIT"));
}

#[test]
fn min_uses_bypass_and_no_cache() {
    let asked = Arc::new(AtomicUsize::new(0));
    let n = asked.clone();
    let up = Upstream::start(move |c| {
        while c.read_request().is_some() {
            let k = n.fetch_add(1, Ordering::SeqCst);
            let body = format!("v{k}");
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nCache-Control: max-age=600\r\n\r\n{body}",
                body.len()
            );
            c.write(resp.as_bytes());
        }
    });
    let tmp = TempDir::new("cache-uses");
    let s = start(
        tmp.path(),
        &up,
        "proxy_cache_key $uri; proxy_cache_bypass $arg_b; proxy_no_cache $arg_n;\n \
         location /m { proxy_pass http://UP; proxy_cache z; proxy_cache_min_uses 2;\n \
         add_header X-Cache $upstream_cache_status always; }"
            .replace("UP", &up.addr().to_string())
            .as_str(),
    );
    let get = |p: &str| {
        let r = common::client::get(s.port, p);
        (
            String::from_utf8_lossy(&r.body).into_owned(),
            r.header("X-Cache").unwrap_or_default(),
        )
    };
    // min_uses 2: the first answer is not kept, the second is.
    assert_eq!(get("/m"), ("v0".into(), "MISS".into()));
    assert_eq!(get("/m"), ("v1".into(), "MISS".into()));
    wait_until("the /m entry", || get("/m").1 == "HIT");
    assert_eq!(get("/m"), ("v1".into(), "HIT".into()));
    // proxy_no_cache: answered, not stored.
    assert_eq!(get("/b?n=1"), ("v2".into(), "MISS".into()));
    assert_eq!(get("/b"), ("v3".into(), "MISS".into()));
    wait_until("the /b entry", || get("/b").1 == "HIT");
    assert_eq!(get("/b"), ("v3".into(), "HIT".into()));
    // proxy_cache_bypass: goes upstream, and the answer replaces the entry.
    assert_eq!(get("/b?b=1"), ("v4".into(), "BYPASS".into()));
    wait_until("the new /b entry", || get("/b").0 == "v4");
    assert_eq!(get("/b"), ("v4".into(), "HIT".into()));
    assert_eq!(asked.load(Ordering::SeqCst), 5);
    assert_eq!(
        s.metric_where(
            "nowait_cache_requests_total{zone=\"z\"",
            "status=\"BYPASS\""
        ),
        1
    );
}

#[test]
fn a_lock_timeout_goes_upstream_and_does_not_store() {
    let (open, held) = gate();
    let asked = Arc::new(AtomicUsize::new(0));
    let n = asked.clone();
    let up = Upstream::start(move |c| {
        while c.read_request().is_some() {
            if n.fetch_add(1, Ordering::SeqCst) == 0 {
                held.wait();
                c.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nCache-Control: max-age=600\r\n\r\nfirst");
            } else {
                c.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nCache-Control: max-age=600\r\n\r\nsecond");
            }
        }
    });
    let tmp = TempDir::new("cache-lock-timeout");
    let s = start(
        tmp.path(),
        &up,
        "proxy_cache_lock on; proxy_cache_lock_timeout 200ms;",
    );
    let mut first = Reader::get(s.port, "/l", "1.1", "");
    wait_until("the first request upstream", || {
        asked.load(Ordering::SeqCst) == 1
    });
    // The lock is held (nothing was answered yet): the waiter times out
    // and goes upstream itself.
    let second = common::client::get(s.port, "/l");
    assert_eq!(second.body, b"second");
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    open.send(()).expect("origin waits");
    first.read_to_end();
    assert_eq!(first.body(), Some(&b"first"[..]));
    wait_until("the entry", || {
        s.metric("nowait_cache_fills_total{zone=\"z\"") == 1
    });
    let third = common::client::get(s.port, "/l");
    assert_eq!(third.body, b"first", "only the lock holder stored");
    assert_eq!(third.header("X-Cache").as_deref(), Some("HIT"));
}

/// An origin whose first answer is stored already expired (with `extra`
/// fields) and whose next answer waits at the gate.
fn stale_origin(extra: &'static str, held: Gate) -> (Upstream, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let n = asked.clone();
    let up = Upstream::start(move |c| {
        while c.read_request().is_some() {
            if n.fetch_add(1, Ordering::SeqCst) == 0 {
                let resp = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n{extra}X-Accel-Expires: @1\r\n\r\nold"
                );
                c.write(resp.as_bytes());
            } else {
                held.wait();
                c.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nCache-Control: max-age=600\r\n\r\nnew");
            }
        }
    });
    (up, asked)
}

#[test]
fn use_stale_updating_serves_the_old_entry_while_one_request_updates_it() {
    let (open, held) = gate();
    let (up, asked) = stale_origin("", held);
    let tmp = TempDir::new("cache-updating");
    let s = start(tmp.path(), &up, "proxy_cache_use_stale updating;");
    assert_eq!(common::client::get(s.port, "/u").body, b"old");
    wait_until("the entry", || cache_files(&s).len() == 1);
    let mut updater = Reader::get(s.port, "/u", "1.1", "");
    wait_until("the update upstream", || asked.load(Ordering::SeqCst) == 2);
    // The update is held at the origin: another request gets the old
    // entry at once.
    let r = common::client::get(s.port, "/u");
    assert_eq!(r.body, b"old");
    assert_eq!(r.header("X-Cache").as_deref(), Some("UPDATING"));
    open.send(()).expect("origin waits");
    updater.read_to_end();
    assert_eq!(x_cache(&updater.head().unwrap_or_default()), "EXPIRED");
    assert_eq!(updater.body(), Some(&b"new"[..]));
    wait_until("the new entry", || {
        common::client::get(s.port, "/u").body == b"new"
    });
    assert_eq!(asked.load(Ordering::SeqCst), 2);
}

#[test]
fn stale_while_revalidate_with_a_background_update() {
    let (open, held) = gate();
    // `Cache-Control` before `X-Accel-Expires`: its extension is kept.
    let (up, asked) = stale_origin("Cache-Control: stale-while-revalidate=2145902155\r\n", held);
    let tmp = TempDir::new("cache-swr");
    let s = start(tmp.path(), &up, "proxy_cache_background_update on;");
    assert_eq!(common::client::get(s.port, "/w").body, b"old");
    wait_until("the entry", || cache_files(&s).len() == 1);
    // The stale entry is answered at once, while its update is held.
    let mut stale = Reader::get(s.port, "/w", "1.1", "");
    assert_eq!(stale.body_at_least(3), b"old");
    assert_eq!(x_cache(&stale.head().unwrap_or_default()), "STALE");
    wait_until("the background update upstream", || {
        asked.load(Ordering::SeqCst) == 2
    });
    let r = common::client::get(s.port, "/w");
    assert_eq!(r.body, b"old");
    assert_eq!(r.header("X-Cache").as_deref(), Some("UPDATING"));
    open.send(()).expect("origin waits");
    // The connection ends once its background update has stored the entry.
    stale.read_to_end();
    let r = common::client::get(s.port, "/w");
    assert_eq!(r.body, b"new");
    assert_eq!(r.header("X-Cache").as_deref(), Some("HIT"));
}

#[test]
fn vary_keeps_one_variant_per_request_header_value() {
    let asked = Arc::new(AtomicUsize::new(0));
    let n = asked.clone();
    let up = Upstream::start(move |c| {
        while let Some(req) = c.read_request() {
            n.fetch_add(1, Ordering::SeqCst);
            let lang = req.header("Accept-Language").unwrap_or_default();
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nVary: Accept-Language\r\n\
                 Cache-Control: max-age=600\r\n\r\n{lang}",
                lang.len()
            );
            c.write(resp.as_bytes());
        }
    });
    let tmp = TempDir::new("cache-vary");
    let s = start(tmp.path(), &up, "");
    let get = |lang: &str| {
        let mut r = Reader::get(s.port, "/v", "1.0", &format!("Accept-Language: {lang}\r\n"));
        r.read_to_end();
        (
            String::from_utf8_lossy(r.body().unwrap_or(&[])).into_owned(),
            x_cache(&r.head().unwrap_or_default()),
        )
    };
    assert_eq!(get("en"), ("en".into(), "MISS".into()));
    wait_until("the en entry", || cache_files(&s).len() == 1);
    assert_eq!(get("de"), ("de".into(), "MISS".into()));
    wait_until("the de entry", || cache_files(&s).len() == 2);
    assert_eq!(get("en"), ("en".into(), "HIT".into()));
    assert_eq!(get("de"), ("de".into(), "HIT".into()));
    assert_eq!(asked.load(Ordering::SeqCst), 2);
}

#[test]
fn a_fill_outlives_its_first_client_for_the_waiters() {
    let (open, held) = gate();
    let asked = Arc::new(AtomicUsize::new(0));
    let n = asked.clone();
    let up = Upstream::start(move |c| {
        while c.read_request().is_some() {
            n.fetch_add(1, Ordering::SeqCst);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nCache-Control: max-age=600\r\n\r\n",
                2 * HALF
            );
            c.write(head.as_bytes());
            c.write(&vec![b'a'; HALF]);
            held.wait();
            c.write(&vec![b'b'; HALF]);
        }
    });
    let tmp = TempDir::new("cache-outlive");
    // Unbuffered: the first client's connection paces the upstream read,
    // so its going away leaves most of the body unread.
    let s = start(
        tmp.path(),
        &up,
        "proxy_cache_lock on; proxy_cache_lock_timeout 60s; proxy_buffering off;",
    );
    let mut first = Reader::get(s.port, "/o", "1.1", "");
    first.body_at_least(HALF);
    let mut waiter = Reader::get(s.port, "/o", "1.1", "");
    waiter.body_at_least(HALF);
    // The first client goes away; nginx reads the rest for the cache.
    drop(first);
    open.send(()).expect("origin waits");
    waiter.read_to_end();
    let whole = [vec![b'a'; HALF], vec![b'b'; HALF]].concat();
    assert_eq!(waiter.body(), Some(&whole[..]));
    wait_until("the entry", || {
        s.metric("nowait_cache_fills_total{zone=\"z\"") == 1
    });
    let r = common::client::get(s.port, "/o");
    assert_eq!(r.body, whole);
    assert_eq!(r.header("X-Cache").as_deref(), Some("HIT"));
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}

#[test]
fn the_entry_is_in_place_when_the_filling_connection_ends() {
    let up = Upstream::start(|c| {
        while c.read_request().is_some() {
            c.write(
                b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nCache-Control: max-age=600\r\n\r\nbody",
            );
        }
    });
    let tmp = TempDir::new("cache-settle");
    let s = start(tmp.path(), &up, "");
    for i in 0..5 {
        let path = format!("/k{i}");
        let mut r = Reader::get(s.port, &path, "1.0", "");
        r.read_to_end();
        assert_eq!(x_cache(&r.head().unwrap_or_default()), "MISS");
        // No wait: the rename precedes the connection's end.
        let r = common::client::get(s.port, &path);
        assert_eq!(r.header("X-Cache").as_deref(), Some("HIT"), "{path}");
    }
}

#[test]
fn an_aged_lock_is_taken_over_and_the_new_holder_stores() {
    let (open, held) = gate();
    let asked = Arc::new(AtomicUsize::new(0));
    let n = asked.clone();
    let up = Upstream::start(move |c| {
        while c.read_request().is_some() {
            if n.fetch_add(1, Ordering::SeqCst) == 0 {
                held.wait();
                c.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nCache-Control: max-age=600\r\n\r\nfirst");
            } else {
                c.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nCache-Control: max-age=600\r\n\r\nsecond");
            }
        }
    });
    let tmp = TempDir::new("cache-lock-age");
    let s = start(
        tmp.path(),
        &up,
        "proxy_cache_lock on; proxy_cache_lock_timeout 60s; proxy_cache_lock_age 200ms;",
    );
    let mut first = Reader::get(s.port, "/a", "1.1", "");
    wait_until("the first request upstream", || {
        asked.load(Ordering::SeqCst) == 1
    });
    // The holder answers nothing; once its lock is older than
    // proxy_cache_lock_age the waiter takes it (long before the 60 s
    // timeout) and its answer is stored.
    let second = common::client::get(s.port, "/a");
    assert_eq!(second.body, b"second");
    assert_eq!(second.header("X-Cache").as_deref(), Some("MISS"));
    let third = common::client::get(s.port, "/a");
    assert_eq!(third.body, b"second");
    assert_eq!(third.header("X-Cache").as_deref(), Some("HIT"));
    open.send(()).expect("origin waits");
    first.read_to_end();
    assert_eq!(first.body(), Some(&b"first"[..]));
}

#[test]
fn bodiless_answers_and_bypassed_new_keys_are_stored() {
    let asked = Arc::new(AtomicUsize::new(0));
    let n = asked.clone();
    let up = Upstream::start(move |c| {
        while let Some(req) = c.read_request() {
            n.fetch_add(1, Ordering::SeqCst);
            if req.target().starts_with("/empty") {
                c.write(
                    b"HTTP/1.1 204 No Content\r\nExpires: Thu, 31 Dec 2037 23:55:55 GMT\r\n\r\n",
                );
            } else {
                c.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nCache-Control: max-age=600\r\n\r\nbody");
            }
        }
    });
    let tmp = TempDir::new("cache-bodiless");
    let s = start(
        tmp.path(),
        &up,
        "proxy_cache_key $uri; proxy_cache_bypass $arg_b;",
    );
    // A 204 whose Expires makes it cacheable is stored, without a body.
    assert_eq!(common::client::get(s.port, "/empty").status, 204);
    let r = common::client::get(s.port, "/empty");
    assert_eq!(
        (r.status, r.header("X-Cache").as_deref()),
        (204, Some("HIT"))
    );
    // A bypassed request for a key no lookup made known still stores.
    let r = common::client::get(s.port, "/new?b=1");
    assert_eq!(r.header("X-Cache").as_deref(), Some("BYPASS"));
    let r = common::client::get(s.port, "/new");
    assert_eq!(r.body, b"body");
    assert_eq!(r.header("X-Cache").as_deref(), Some("HIT"));
    assert_eq!(asked.load(Ordering::SeqCst), 2);
}
