//! The brief's last configuration, verbatim (`examples/cache-three-disks.conf`:
//! three `proxy_cache_path` disks, a `thread_pool` per disk, `split_clients
//! $request_uri $disk`, `proxy_cache cache_$disk`, `aio threads=pool_$disk`),
//! with only its listening port and its origin's port changed: it starts,
//! every key is cached on the disk `split_clients` gives it (nginx's
//! MurmurHash2 buckets), and a second round is served from the disks
//! without the origin.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::client::get;
use common::{Server, Upstream};
use nowait::cache::key::{CacheKey, file_name, relative_path};
use nowait::upstream::split::split_index;

/// Keys requested.
const KEYS: usize = 60;

fn example() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cache-three-disks.conf");
    std::fs::read_to_string(path).expect("the example exists")
}

/// The disk (1, 2, 3) `split_clients $request_uri` puts `uri` on.
fn disk_of(uri: &str) -> usize {
    // 33.3% 1; 33.3% 2; * 3;
    split_index(&[3330, 3330, 0], uri.as_bytes()).expect("`*` takes the rest") + 1
}

#[test]
fn the_brief_configuration_caches_each_key_on_its_disk() {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let origin = Upstream::start(move |c| {
        while let Some(req) = c.read_request() {
            counter.fetch_add(1, Ordering::SeqCst);
            let body = format!("origin says {}\n", req.target());
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nCache-Control: max-age=600\r\n\r\n{body}",
                body.len()
            );
            if !c.write(resp.as_bytes()) {
                return;
            }
        }
    });
    let conf = example()
        .replace("listen 8000;", "listen 127.0.0.1:{port};")
        .replace(
            "server 127.0.0.1:8081;",
            &format!("server 127.0.0.1:{};", origin.port()),
        )
        + "\npid nowait.pid;\nerror_log stderr;\n";
    // The example keeps nginx's default access log, in the prefix's logs/.
    let s = Server::start_with_dirs(common::server::Kind::Nowait, &conf, &["logs"]);
    for i in 0..KEYS {
        let r = get(s.port(), &format!("/object/{i}"));
        assert_eq!(r.status, 200, "key {i}");
        assert_eq!(common::body(&r), format!("origin says /object/{i}\n"));
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        KEYS,
        "every first request is a miss"
    );
    // Each entry is published (renamed into place) after its response:
    // wait, bounded, until every file is there, then check where.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut per_disk = [0usize; 3];
    for i in 0..KEYS {
        let uri = format!("/object/{i}");
        let key = CacheKey::new(uri.as_bytes());
        let rel = relative_path(&[1, 2], key.md5()).expect("levels 1:2");
        let disk = disk_of(&uri);
        let path = s.prefix().join(format!("disk{disk}")).join(&rel);
        while !path.exists() {
            assert!(
                Instant::now() < deadline,
                "{uri}: no entry at {}",
                path.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        for other in (1..=3).filter(|d| *d != disk) {
            assert!(
                !s.prefix().join(format!("disk{other}")).join(&rel).exists(),
                "{uri} is on disk{disk} only"
            );
        }
        assert!(rel.ends_with(&file_name(key.md5())));
        per_disk[disk - 1] += 1;
    }
    assert!(
        per_disk.iter().all(|&n| n > KEYS / 10),
        "split_clients spreads the keys: {per_disk:?}"
    );
    // A second round comes from the disks.
    for i in 0..KEYS {
        let r = get(s.port(), &format!("/object/{i}"));
        assert_eq!(common::body(&r), format!("origin says /object/{i}\n"));
    }
    assert_eq!(hits.load(Ordering::SeqCst), KEYS, "the second round hits");
}
