//! What fills cost in memory and in write operations, from outside:
//! - the zone's fill backlog (bytes teed to fills, not yet on the disk) is
//!   exported and back to 0 once the fills are published;
//! - while a stalled disk holds the zone's backlog near its limit, a new
//!   response too large for the room left is served whole but not cached
//!   (counted as skipped), while one that fits is still admitted;
//! - a fill writes its body in few large writes, not one per piece read
//!   from the upstream (counted by the stall marks each write leaves).
//!
//! Orders are forced (a disk stalled far longer than the test, a fill
//! awaited through the status page): nothing here depends on how fast
//! anything runs.

mod common;

use std::path::Path;
use std::time::Duration;

use common::cached::{Cached, files_under, wait_until};
use common::{TempDir, Upstream};
use nowait::cache::backlog::{FILL_COST, MAX_BACKLOG, ZONE_BACKLOG};

/// The status page's text.
fn status(s: &Cached) -> String {
    String::from_utf8_lossy(&common::client::get(s.port, "/status").body).into_owned()
}

/// An origin answering `/N` (a number) with `N` bytes, cacheable, at
/// once; `/slow/N` in pieces of [`PIECE`] bytes a little apart, as a
/// network slower than the disk delivers them.
fn sized_origin() -> Upstream {
    Upstream::start(|c| {
        while let Some(req) = c.read_request() {
            let target = req.target().to_string();
            let slow = target.starts_with("/slow/");
            let n: usize = target
                .rsplit('/')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(5);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {n}\r\nCache-Control: max-age=600\r\n\r\n"
            );
            let body = body_of(n);
            let sent = if slow {
                c.write(head.as_bytes()) && c.write_slowly(&body, PIECE, Duration::from_millis(2))
            } else {
                c.write(head.as_bytes()) && c.write(&body)
            };
            if !sent {
                return;
            }
        }
    })
}

/// The pieces a slow origin sends.
const PIECE: usize = 8 * 1024;

fn body_of(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

fn one_cache(up: &Upstream, extra: &str) -> String {
    format!(
        "proxy_cache_path {{dir}}/c levels=1:2 keys_zone=z:1m use_temp_path=off;\n\
         server {{\n listen 127.0.0.1:{{port}};\n location = /status {{ nowait_status; }}\n \
         location / {{\n  proxy_pass http://{up};\n  proxy_cache z;\n  \
         add_header X-Cache $upstream_cache_status always;\n  {extra}\n }}\n}}\n",
        up = up.addr()
    )
}

#[test]
fn the_fill_backlog_is_exported_and_back_to_zero_after_fills() {
    let up = sized_origin();
    let tmp = TempDir::new("cache-backlog-zero");
    let s = Cached::start(tmp.path(), &one_cache(&up, ""), &[]);
    let page = status(&s);
    assert!(
        page.contains("# TYPE nowait_cache_fill_backlog_bytes gauge"),
        "{page}"
    );
    assert!(
        page.contains("# TYPE nowait_cache_fills_skipped_total counter"),
        "{page}"
    );
    for n in [1000usize, 300_000, 1 << 20] {
        let r = common::client::get(s.port, &format!("/{n}"));
        assert_eq!(r.body, body_of(n));
    }
    wait_until("three entries", || {
        s.metric("nowait_cache_fills_total{zone=\"z\"") == 3
    });
    assert_eq!(s.metric("nowait_cache_fill_backlog_bytes{zone=\"z\""), 0);
    assert_eq!(s.metric("nowait_cache_fills_skipped_total{zone=\"z\""), 0);
    let r = common::client::get(s.port, &format!("/{}", 1 << 20));
    assert_eq!(r.header("X-Cache").as_deref(), Some("HIT"));
}

#[test]
fn a_full_backlog_serves_new_responses_uncached() {
    let up = sized_origin();
    let tmp = TempDir::new("cache-backlog-full");
    let cache = tmp.path().join("c");
    // Every operation on the cache path stalls for longer than the test:
    // nothing a fill queues reaches the disk while it runs. So does the
    // pool's one thread, and with it any write of a response that spills
    // to a temp file: a client slow to read (a loaded machine) then waited
    // for that write, and the test with it. Nothing spills here: the
    // upstream is read as fast as the client takes the body.
    let http = one_cache(&up, "aio threads=disk; proxy_max_temp_file_size 0;");
    let s = Cached::start_main(
        tmp.path(),
        "thread_pool disk threads=1;",
        &http,
        &[("NOWAIT_TEST_STALL", format!("{}/=120000", cache.display()))],
    );
    // Misses must be known without the (stalled) disk.
    wait_until("the loader", || {
        s.metric("nowait_cache_loader_done{zone=\"z\"") == 1
    });
    // Four fills of nearly the most one fill may hold: together they take
    // all but a little of the zone's backlog.
    let big = MAX_BACKLOG - 100 * 1024;
    let room = ZONE_BACKLOG - 4 * (big as u64 + FILL_COST);
    assert!(
        room < FILL_COST + (1 << 20),
        "the test's sizes leave too much room"
    );
    for i in 0..4 {
        let r = common::client::get(s.port, &format!("/{}", big + i));
        assert_eq!(r.status, 200);
        assert_eq!(r.body.len(), big + i);
    }
    let held = s.metric("nowait_cache_fill_backlog_bytes{zone=\"z\"");
    assert_eq!(held, ZONE_BACKLOG - room + 6, "{}", status(&s));
    // 1 MiB does not fit in the room left: served whole, not cached.
    let r = common::client::get(s.port, "/1048576");
    assert_eq!(r.status, 200);
    assert!(r.body == body_of(1 << 20), "the whole body, intact");
    assert_eq!(r.header("X-Cache").as_deref(), Some("MISS"));
    assert_eq!(s.metric("nowait_cache_fills_skipped_total{zone=\"z\""), 1);
    assert_eq!(
        s.metric("nowait_cache_fill_backlog_bytes{zone=\"z\""),
        held,
        "a skipped fill holds nothing"
    );
    // A small one still fits: admitted, its bytes counted.
    let r = common::client::get(s.port, "/1000");
    assert_eq!(r.body, body_of(1000));
    assert_eq!(s.metric("nowait_cache_fills_skipped_total{zone=\"z\""), 1);
    assert_eq!(
        s.metric("nowait_cache_fill_backlog_bytes{zone=\"z\""),
        held + FILL_COST + 1000
    );
}

/// Every stall mark's path (one per file operation on the stalled path).
fn marked_paths(dir: &Path) -> Vec<String> {
    files_under(dir)
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter_map(|t| Some(t.split_once(' ')?.1.to_string()))
        .collect()
}

#[test]
fn a_fill_writes_its_body_in_few_large_writes() {
    let up = sized_origin();
    let tmp = TempDir::new("cache-backlog-writes");
    let cache = tmp.path().join("c");
    let marks = tmp.path().join("marks");
    std::fs::create_dir_all(&marks).expect("marks dir");
    let s = Cached::start_main(
        tmp.path(),
        "thread_pool disk threads=1;",
        &one_cache(&up, "aio threads=disk;"),
        &[
            // A stall of 0 ms: no wait, but a mark per operation.
            ("NOWAIT_TEST_STALL", format!("{}/=0", cache.display())),
            ("NOWAIT_TEST_STALL_MARKS", marks.display().to_string()),
        ],
    );
    wait_until("the loader", || {
        s.metric("nowait_cache_loader_done{zone=\"z\"") == 1
    });
    // 1 MiB in 128 pieces: one write per piece read would be 128 writes.
    let n = 1 << 20;
    let r = common::client::get(s.port, &format!("/slow/{n}"));
    assert!(r.body == body_of(n));
    wait_until("the entry", || {
        s.metric("nowait_cache_fills_total{zone=\"z\"") == 1
    });
    // The temp file's operations: its create (twice when the first finds
    // no level directories), its writes, its rename.
    let ops = marked_paths(&marks)
        .into_iter()
        .filter(|p| {
            Path::new(p)
                .file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| f.contains('.'))
        })
        .count();
    // 64 KiB or more per write, the last excepted: 17 for 1 MiB and the
    // header, with room for a few flushed early if the origin paused
    // (FLUSH_AFTER) on a busy machine.
    assert!((3..=3 + 24).contains(&ops), "{ops} operations for 1 MiB");
}
