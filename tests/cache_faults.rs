//! The cache when things go wrong, and where its disk work runs:
//! - a crash (SIGKILL) in the middle of a fill leaves only a temp file,
//!   never an entry; the loader of the next start removes it;
//! - a full disk (a tiny tmpfs as the cache path, mounted here as root):
//!   the fill fails, the client still gets the whole response, nothing
//!   broken is stored;
//! - under `aio threads`, every file operation of a fill — create, write,
//!   rename — and the header refresh after a `304` runs on the disk's pool
//!   threads, never on a worker (`aio off`: on the worker, as nginx);
//! - per-disk isolation: one disk's pool held by a stalled fill does not
//!   delay a hit on another disk (shown by the order responses complete
//!   and by the pools' counters, not by timing thresholds).
//!
//! `NOWAIT_TEST_STALL` makes file operations on matching paths wait in
//! whatever thread runs them; with `NOWAIT_TEST_STALL_MARKS`, each stall
//! leaves a file naming its thread and path.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use common::cached::{Cached, IO_TIMEOUT, Reader, files_under, wait_until};
use common::{TempDir, Upstream};

/// Half of the held response's body.
const HALF: usize = 100_000;

#[derive(Clone)]
struct Gate(Arc<Mutex<Receiver<()>>>);

fn gate() -> (Sender<()>, Gate) {
    let (tx, rx) = channel();
    (tx, Gate(Arc::new(Mutex::new(rx))))
}

impl Gate {
    fn wait(&self) {
        let rx = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let _ = rx.recv_timeout(IO_TIMEOUT);
    }
}

fn is_temp(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.contains('.'))
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
fn a_crash_mid_fill_leaves_no_entry_and_the_loader_removes_the_temp_file() {
    let (open, held) = gate();
    let asked = Arc::new(AtomicUsize::new(0));
    let n = asked.clone();
    let up = Upstream::start(move |c| {
        while c.read_request().is_some() {
            if n.fetch_add(1, Ordering::SeqCst) == 0 {
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nCache-Control: max-age=600\r\n\r\n",
                    2 * HALF
                );
                c.write(head.as_bytes());
                c.write(&vec![b'a'; HALF]);
                held.wait();
                return;
            }
            c.write(
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nCache-Control: max-age=600\r\n\r\nwhole",
            );
        }
    });
    let tmp = TempDir::new("cache-crash");
    let http = one_cache(&up, "");
    let mut s = Cached::start(tmp.path(), &http, &[]);
    let mut r = Reader::get(s.port, "/big", "1.1", "");
    r.body_at_least(HALF);
    let cache = tmp.path().join("c");
    wait_until("the temp file holds the first half", || {
        files_under(&cache)
            .iter()
            .any(|p| is_temp(p) && p.metadata().is_ok_and(|m| m.len() as usize > HALF))
    });
    s.kill9();
    let left = files_under(&cache);
    assert!(
        left.iter().all(|p| is_temp(p)),
        "only a temp file is left: {left:?}"
    );
    assert_eq!(left.len(), 1);
    open.send(()).ok();
    // Started again on the same cache: the loader removes the leftover,
    // and the key is a miss, fetched whole.
    let s = Cached::start(tmp.path(), &http, &[]);
    wait_until("the loader", || {
        s.metric("nowait_cache_loader_done{zone=\"z\"") == 1
    });
    assert_eq!(files_under(&cache), Vec::<PathBuf>::new());
    let r = common::client::get(s.port, "/big");
    assert_eq!(r.body, b"whole");
    assert_eq!(r.header("X-Cache").as_deref(), Some("MISS"));
}

/// A tmpfs mounted for the test's life.
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(at: &Path, size: &str) -> Mount {
        std::fs::create_dir_all(at).expect("mount point");
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .expect("run mount");
        assert!(st.success(), "mount a tmpfs (the test needs root)");
        Mount(at.to_path_buf())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_fails_the_fill_and_the_client_still_gets_everything() {
    let size = 1 << 20;
    let body: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    let sent = body.clone();
    let up = Upstream::start(move |c| {
        while c.read_request().is_some() {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nCache-Control: max-age=600\r\n\r\n",
                sent.len()
            );
            c.write(head.as_bytes());
            c.write(&sent);
        }
    });
    let tmp = TempDir::new("cache-enospc");
    let _m = Mount::tmpfs(&tmp.path().join("c"), "64k");
    let s = Cached::start(tmp.path(), &one_cache(&up, ""), &[]);
    let r = common::client::get(s.port, "/big");
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), body.len());
    assert!(r.body == body, "the whole response, intact");
    wait_until("the fill is given up", || {
        s.metric("nowait_cache_fills_abandoned_total{zone=\"z\"") == 1
    });
    assert_eq!(files_under(&tmp.path().join("c")), Vec::<PathBuf>::new());
    // Log lines reach the file through the log writer thread.
    wait_until("the logged write failure", || {
        s.error_log()
            .contains("No space left on device) while filling cache")
    });
    let r = common::client::get(s.port, "/big");
    assert_eq!(
        r.header("X-Cache").as_deref(),
        Some("MISS"),
        "nothing was stored"
    );
}

/// The stall marks: (thread name, path) of every stalled operation.
fn marks(dir: &Path) -> Vec<(String, String)> {
    files_under(dir)
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter_map(|t| {
            let (thread, path) = t.split_once(' ')?;
            Some((thread.to_string(), path.to_string()))
        })
        .collect()
}

/// Fills an entry, then revalidates it (a `304` rewrites its header), in
/// a server whose cache operations all stall 1 ms and leave marks; returns
/// the marks on the cache path.
fn cache_work_threads(aio: &str, label: &str) -> Vec<(String, String)> {
    let up = Upstream::start(|c| {
        while let Some(req) = c.read_request() {
            if req.header("If-Modified-Since").is_some() {
                c.write(b"HTTP/1.1 304 Not Modified\r\nCache-Control: max-age=600\r\n\r\n");
            } else {
                c.write(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nX-Accel-Expires: @1\r\n\
                      Last-Modified: Mon, 02 Mar 2015 17:20:58 GMT\r\n\r\nbody",
                );
            }
        }
    });
    let tmp = TempDir::new(label);
    let marks_dir = tmp.path().join("marks");
    std::fs::create_dir_all(&marks_dir).expect("marks dir");
    let cache = tmp.path().join("c");
    let http = format!(
        "proxy_cache_path {c} levels=1:2 keys_zone=z:1m use_temp_path=off;\n\
         server {{\n listen 127.0.0.1:{{port}};\n location = /status {{ nowait_status; }}\n \
         location / {{\n  proxy_pass http://{up};\n  proxy_cache z;\n  proxy_cache_revalidate on;\n  \
         {aio}\n  add_header X-Cache $upstream_cache_status always;\n }}\n}}\n",
        c = cache.display(),
        up = up.addr()
    );
    let main = if aio.contains("threads") {
        "thread_pool disk threads=2;"
    } else {
        ""
    };
    let s = Cached::start_main(
        tmp.path(),
        main,
        &http,
        &[
            ("NOWAIT_TEST_STALL", format!("{}/=1", cache.display())),
            ("NOWAIT_TEST_STALL_MARKS", marks_dir.display().to_string()),
        ],
    );
    assert_eq!(common::client::get(s.port, "/e").body, b"body");
    wait_until("the entry", || {
        s.metric("nowait_cache_fills_total{zone=\"z\"") == 1
    });
    let r = common::client::get(s.port, "/e");
    assert_eq!(r.header("X-Cache").as_deref(), Some("REVALIDATED"));
    let m = marks(&marks_dir);
    let ops: Vec<_> = m
        .iter()
        .filter(|(_, p)| p.starts_with(&cache.display().to_string()))
        .cloned()
        .collect();
    assert!(
        ops.iter().any(|(_, p)| is_temp(Path::new(p))),
        "the temp file's create and writes stalled: {m:?}"
    );
    assert!(
        ops.iter().filter(|(_, p)| !is_temp(Path::new(p))).count() >= 1,
        "the entry's header refresh stalled: {m:?}"
    );
    ops
}

#[test]
fn under_aio_threads_every_cache_write_runs_on_the_disk_pool() {
    let ops = cache_work_threads("aio threads=disk;", "cache-aio-threads");
    for (thread, path) in &ops {
        assert!(
            thread.starts_with("disk#"),
            "{path} was worked on by {thread}, not the disk's pool"
        );
    }
    // The same under `aio off`: on the worker's loop, as nginx does —
    // which shows the marks tell threads apart.
    let ops = cache_work_threads("aio off;", "cache-aio-off");
    assert!(
        ops.iter().all(|(t, _)| t.starts_with("worker#")),
        "aio off works on the loop: {ops:?}"
    );
}

#[test]
fn a_stalled_disk_does_not_delay_hits_on_another_disk() {
    let up = Upstream::start(|c| {
        while let Some(req) = c.read_request() {
            let body = format!("body of {}", req.target());
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nCache-Control: max-age=600\r\n\r\n{body}",
                body.len()
            );
            c.write(resp.as_bytes());
        }
    });
    let tmp = TempDir::new("cache-isolation");
    let marks_dir = tmp.path().join("marks");
    std::fs::create_dir_all(&marks_dir).expect("marks dir");
    let http = format!(
        "proxy_cache_path {{dir}}/disk1 levels=1:2 keys_zone=c1:1m use_temp_path=off;\n\
         proxy_cache_path {{dir}}/disk2 levels=1:2 keys_zone=c2:1m use_temp_path=off;\n\
         server {{\n listen 127.0.0.1:{{port}};\n location = /status {{ nowait_status; }}\n \
         location /one/ {{ proxy_pass http://{up}; proxy_cache c1; aio threads=pool_1;\n  \
         add_header X-Cache $upstream_cache_status always; }}\n \
         location /two/ {{ proxy_pass http://{up}; proxy_cache c2; aio threads=pool_2;\n  \
         add_header X-Cache $upstream_cache_status always; }}\n}}\n",
        up = up.addr()
    );
    let main_pools = "thread_pool pool_1 threads=1;\nthread_pool pool_2 threads=1;\n";
    // First run, no stall: an entry on each disk.
    {
        let s = Cached::start_main(tmp.path(), main_pools, &http, &[]);
        for p in ["/one/x", "/two/h"] {
            assert_eq!(common::client::get(s.port, p).status, 200);
        }
        wait_until("both entries", || {
            s.metric("nowait_cache_fills_total{zone=\"c1\"") == 1
                && s.metric("nowait_cache_fills_total{zone=\"c2\"") == 1
        });
    }
    // Second run: every operation on disk2 takes 1 s.
    let disk2 = tmp.path().join("disk2");
    let s = Cached::start_main(
        tmp.path(),
        main_pools,
        &http,
        &[
            ("NOWAIT_TEST_STALL", format!("{}/=1000", disk2.display())),
            ("NOWAIT_TEST_STALL_MARKS", marks_dir.display().to_string()),
        ],
    );
    wait_until("the loaders", || {
        s.metric_where("nowait_cache_loader_done", "zone=\"c") == 2
    });
    // A miss on disk2: the client is answered; the fill's create holds
    // pool_2's only thread.
    let r = common::client::get(s.port, "/two/y");
    assert_eq!(r.body, b"body of /two/y");
    wait_until("disk2's pool stalled", || !marks(&marks_dir).is_empty());
    // A hit on disk2 queues behind it; a hit on disk1 does not.
    let mut on_disk2 = Reader::get(s.port, "/two/h", "1.1", "");
    wait_until("disk2's hit queued in its pool", || {
        s.metric("nowait_pool_waiting{pool=\"pool_2\"}") >= 1
    });
    let on_disk1 = common::client::get(s.port, "/one/x");
    assert_eq!(on_disk1.body, b"body of /one/x");
    assert_eq!(on_disk1.header("X-Cache").as_deref(), Some("HIT"));
    assert!(
        on_disk2.head().is_none(),
        "disk2's hit is still waiting when disk1's has completed"
    );
    assert_eq!(
        s.metric("nowait_pool_waiting{pool=\"pool_1\"}"),
        0,
        "nothing waits in disk1's pool"
    );
    on_disk2.read_to_end();
    assert!(on_disk2.head().is_some_and(|h| h.contains("X-Cache: HIT")));
    assert_eq!(on_disk2.body(), Some(&b"body of /two/h"[..]));
    let threads: Vec<String> = marks(&marks_dir).into_iter().map(|(t, _)| t).collect();
    assert!(
        threads.iter().all(|t| t.starts_with("pool_2#")),
        "disk2's work ran on its pool: {threads:?}"
    );
}
