//! Black-box tests of the `user` directive: started as root, nowait leaves
//! root to a small helper process (see tests/privsep.rs) and every thread
//! of the serving process runs as `user`, so that file permissions apply to
//! clients as they would to nginx's workers.
//!
//! These tests need root (they run as root in CI); they fail, not skip,
//! without it.

mod common;

use common::client::get;
use common::{Conf, Fixture, Server};

/// `nobody`'s uid and `nogroup`'s gid on Debian.
const NOBODY: u32 = 65534;

/// The four ids of the `Uid:` (or `Gid:`) line of a `/proc/.../status`.
fn ids(status: &str, key: &str) -> Vec<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} line in {status}"))
        .split_whitespace()
        .map(|v| v.parse().expect("a number"))
        .collect()
}

fn assert_root() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    assert_eq!(
        ids(&status, "Uid:")[1],
        0,
        "the privilege tests must run as root (as in CI)"
    );
}

/// (thread name, status text) of every thread of `pid`, the main thread
/// (tid == pid) first.
fn threads(pid: u32) -> Vec<(u32, String, String)> {
    let mut out: Vec<(u32, String, String)> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("read the task list")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let tid: u32 = e.file_name().to_str()?.parse().ok()?;
            let name = std::fs::read_to_string(e.path().join("comm")).ok()?;
            let status = std::fs::read_to_string(e.path().join("status")).ok()?;
            Some((tid, name.trim().to_string(), status))
        })
        .collect();
    out.sort_by_key(|(tid, ..)| (*tid != pid, *tid));
    out
}

#[test]
fn workers_serve_as_nobody_and_file_permissions_apply() {
    assert_root();
    let f = Fixture::build();
    let conf = Conf::server("root {root};\nlocation /dir/ { aio threads; }")
        .main("user nobody nogroup;\nworker_processes 2;")
        .root(f.root())
        .render();
    let s = Server::tested(&conf);
    // secret.txt is 0600 root: readable by the main thread, not by nobody.
    assert_eq!(get(s.port(), "/secret.txt").status, 403);
    assert_eq!(get(s.port(), "/private/").status, 403);
    assert_eq!(get(s.port(), "/index.html").status, 200);
    // Through the thread pool too.
    let secret = f.root().join("dir/secret.txt");
    std::fs::write(&secret, "root only\n").unwrap();
    common::tmp::set_mode(&secret, 0o600);
    assert_eq!(get(s.port(), "/dir/secret.txt").status, 403);
    assert_eq!(get(s.port(), "/dir/file.txt").status, 200);
}

#[test]
fn every_thread_of_the_serving_process_has_the_nobody_uid() {
    assert_root();
    let f = Fixture::build();
    let conf = Conf::server("root {root};\naio threads;")
        .main("user nobody nogroup;\nworker_processes 2;")
        .root(f.root())
        .render();
    let s = Server::nowait(&conf);
    // Let the pool start its threads.
    assert_eq!(get(s.port(), "/index.html").status, 200);
    let pid = s.pid().unwrap();
    // The port listens before every worker thread has started: wait
    // (bounded) until both are there.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let threads = loop {
        let t = threads(pid);
        let count = t
            .iter()
            .filter(|(_, name, _)| name.starts_with("worker#"))
            .count();
        if count >= 2 || std::time::Instant::now() > deadline {
            break t;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let (main_tid, _, _) = &threads[0];
    assert_eq!(*main_tid, pid);
    let workers: Vec<_> = threads
        .iter()
        .filter(|(_, name, _)| name.starts_with("worker#"))
        .collect();
    assert_eq!(workers.len(), 2, "{:?}", names(&threads));
    // No thread keeps root: not the main thread (reloads go through the
    // privileged helper), not the log writers, not the pool's.
    for (tid, name, status) in &threads {
        assert_eq!(
            ids(status, "Uid:"),
            [NOBODY; 4],
            "thread {tid} {name}; threads: {:?}",
            names(&threads)
        );
        assert_eq!(ids(status, "Gid:"), [NOBODY; 4], "{name}");
    }
}

fn names(threads: &[(u32, String, String)]) -> Vec<&str> {
    threads.iter().map(|(_, n, _)| n.as_str()).collect()
}

/// nginx's `ngx_create_paths`: the request-body temp directory is created
/// at start-up, private (0700), and given to `user`, who writes there.
#[test]
fn temp_directories_are_created_for_the_serving_user() {
    assert_root();
    let f = Fixture::build();
    let conf = Conf::server("root {root};")
        .main("user nobody nogroup;")
        .root(f.root())
        .render()
        .replace(
            "client_body_temp_path client_body_temp;",
            "client_body_temp_path {prefix}/bodies 1 2;",
        );
    let s = Server::nowait(&conf);
    // The port accepts (its backlog) as soon as it is bound, before the
    // directories are made: one answer says start-up is over.
    assert_eq!(get(s.port(), "/index.html").status, 200);
    let meta = std::fs::metadata(s.prefix().join("bodies")).expect("the directory exists");
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
    assert_eq!(meta.uid(), NOBODY);
}
