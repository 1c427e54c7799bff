//! Cache directories move between nginx and nowait both ways, in the
//! brief's three-disk layout (`examples/cache-three-disks.conf`: three
//! `proxy_cache_path` disks, `split_clients $request_uri $disk`,
//! `proxy_cache cache_$disk`, `aio threads=pool_$disk`): Debian's nginx
//! 1.22 fills the three disks and nowait, given copies of them, serves
//! every key as a `HIT` without asking the origin; nowait fills them and
//! nginx serves every key as a `HIT`. Both put each key in the same file
//! on the same disk.
//!
//! nginx's cache loader starts a minute after nginx; until then a key its
//! zone does not know is looked up on disk by name (the zone is "cold"),
//! which is what serves the copied files here.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::cached::{Cached, files_under, wait_until};
use common::server::{Kind, NGINX_BIN};
use common::{Server, TempDir, Upstream};

/// Keys requested.
const KEYS: usize = 30;
/// The disks.
const DISKS: [&str; 3] = ["disk1", "disk2", "disk3"];

fn origin() -> (Upstream, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let n = asked.clone();
    let up = Upstream::start(move |c| {
        while let Some(req) = c.read_request() {
            n.fetch_add(1, Ordering::SeqCst);
            let body = format!("origin says {}\n", req.target());
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nCache-Control: max-age=600\r\n\
                 Content-Type: text/plain\r\n\r\n{body}",
                body.len()
            );
            if !c.write(resp.as_bytes()) {
                return;
            }
        }
    });
    (up, asked)
}

/// The example, verbatim but for its ports, run as root (so that the
/// workers can write the test's directories), with the cache status shown.
fn conf(origin_port: u16) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cache-three-disks.conf");
    std::fs::read_to_string(path)
        .expect("the example exists")
        .replace("listen 8000;", "listen 127.0.0.1:{port};")
        .replace(
            "server 127.0.0.1:8081;",
            &format!("server 127.0.0.1:{origin_port};"),
        )
        .replace(
            "sendfile on;",
            "sendfile on;\n            add_header X-Cache $upstream_cache_status;",
        )
        + "\nuser root;\npid server.pid;\n"
}

fn start(kind: Kind, origin_port: u16) -> Server {
    let mut dirs = DISKS.to_vec();
    dirs.push("logs");
    Server::start_with_dirs(kind, &conf(origin_port), &dirs)
}

/// Fills the disks of `s` with every key; returns the files, relative to
/// the prefix.
fn fill(s: &Server) -> BTreeSet<PathBuf> {
    for i in 0..KEYS {
        let r = common::client::get(s.port(), &format!("/object/{i}"));
        assert_eq!(r.status, 200, "{:?} /object/{i}", s.kind());
        assert_eq!(r.header("X-Cache").as_deref(), Some("MISS"));
    }
    let entries = || -> BTreeSet<PathBuf> {
        DISKS
            .iter()
            .flat_map(|d| files_under(&s.prefix().join(d)))
            .filter(|p| !p.to_string_lossy().contains('.'))
            .map(|p| {
                p.strip_prefix(s.prefix())
                    .map(Path::to_path_buf)
                    .unwrap_or(p)
            })
            .collect()
    };
    wait_until("every entry renamed into place", || entries().len() == KEYS);
    entries()
}

/// Copies the disks under `from` into `to` (replacing any there).
fn copy_disks(from: &Path, to: &Path) {
    for d in DISKS {
        let _ = std::fs::remove_dir_all(to.join(d));
        let st = Command::new("cp")
            .arg("-a")
            .arg(from.join(d))
            .arg(to)
            .status()
            .expect("run cp");
        assert!(st.success(), "cp {d}");
    }
}

/// Every key answered by the server on `port` as a `HIT`, with the
/// origin's body.
fn all_hits(port: u16, who: &str) {
    for i in 0..KEYS {
        let r = common::client::get(port, &format!("/object/{i}"));
        assert_eq!(
            common::body(&r),
            format!("origin says /object/{i}\n"),
            "{who}"
        );
        assert_eq!(
            r.header("X-Cache").as_deref(),
            Some("HIT"),
            "{who} /object/{i}"
        );
    }
}

#[test]
fn nginx_and_nowait_serve_each_others_three_disk_caches() {
    assert!(
        Path::new(NGINX_BIN).exists(),
        "{NGINX_BIN} is missing: this test exchanges caches with nginx 1.22"
    );
    let (up, asked) = origin();
    // nginx fills, nowait serves copies of its disks.
    let nginx = start(Kind::Nginx, up.port());
    let by_nginx = fill(&nginx);
    let dir = TempDir::new("cache-exchange");
    std::fs::create_dir_all(dir.path().join("logs")).expect("logs");
    copy_disks(nginx.prefix(), dir.path());
    drop(nginx);
    let s = Cached::start_text(dir.path(), &conf(up.port()), &[]);
    let before = asked.load(Ordering::SeqCst);
    all_hits(s.port, "nowait");
    assert_eq!(
        asked.load(Ordering::SeqCst),
        before,
        "nowait never asked the origin"
    );
    drop(s);

    // nowait fills, nginx serves copies of its disks.
    let nowait = start(Kind::Nowait, up.port());
    let by_nowait = fill(&nowait);
    assert_eq!(
        by_nowait, by_nginx,
        "each key in the same file on the same disk (split_clients, MD5, levels)"
    );
    let n = start(Kind::Nginx, up.port());
    copy_disks(nowait.prefix(), n.prefix());
    drop(nowait);
    let before = asked.load(Ordering::SeqCst);
    all_hits(n.port(), "nginx");
    assert_eq!(
        asked.load(Ordering::SeqCst),
        before,
        "nginx never asked the origin"
    );
}
