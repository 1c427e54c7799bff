//! The never-blocking file layer, shown by ordering and counters, never by
//! timing thresholds. `NOWAIT_TEST_STALL=cold=MS` makes every file operation
//! on a path containing "cold" wait MS milliseconds in whatever thread runs
//! it (and its non-blocking forms report a miss), like a slow disk would.
//!
//! - `aio threads`: a request for a hot file completes while one for a cold
//!   file is stalled; the hot file is served by the fast path without
//!   entering the pool.
//! - `aio off`: the same hot request waits behind the stall (the loop is
//!   blocked), which is nginx's behaviour and the baseline.
//! - overflow: the exact log line and a 503; `max_queue=0` and `max_queue=1`.
//! - a rewrite script's file test (`if (-f …)`) is one more file operation:
//!   under `aio threads` a stalled test waits in the pool while the loop
//!   answers others; under `aio off` it waits on the loop, as in nginx.
//! - a file deleted while it is sent ends that response cleanly.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a stalled operation waits: long enough that ordering is
/// unambiguous on a loaded machine, short enough to keep the suite quick.
const STALL_MS: u64 = 1500;
/// The most any single exchange may take before the test gives up.
const IO_TIMEOUT: Duration = Duration::from_secs(20);

struct Srv {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl Drop for Srv {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts nowait with `http_body` inside `http { server { … } }`, a
/// document root holding `hot.txt`, `cold.txt`, `cold2.txt`, `cold3.txt`
/// and a 32 MiB `big.bin`, and the stall injection on.
fn start(main: &str, server_body: &str, label: &str) -> Srv {
    let dir = std::env::temp_dir().join(format!("nowait-fl-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    for name in ["hot.txt", "cold.txt", "cold2.txt", "cold3.txt"] {
        std::fs::write(root.join(name), format!("{name}\n")).unwrap();
    }
    let big: Vec<u8> = (0..32u32 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    std::fs::write(root.join("big.bin"), &big).unwrap();
    Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(&dir)
        .status()
        .unwrap();
    let marks = dir.join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    // Stalls run on threads that serve as `nobody`.
    Command::new("chmod")
        .arg("0777")
        .arg(&marks)
        .status()
        .unwrap();
    let port = free_port();
    let conf = format!(
        "worker_processes 1;\nerror_log {dir}/error.log info;\npid {dir}/nowait.pid;\n{main}\n\
         events {{}}\nhttp {{\n access_log off;\n server {{\n  listen 127.0.0.1:{port};\n  root {root};\n\
         location = /status {{ nowait_status; aio off; }}\n  {server_body}\n }}\n}}\n",
        dir = dir.display(),
        root = root.display(),
    );
    std::fs::write(dir.join("nowait.conf"), conf).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_nowait"))
        .arg("-p")
        .arg(&dir)
        .arg("-c")
        .arg(dir.join("nowait.conf"))
        .args(["-g", "daemon off;"])
        .env("NOWAIT_TEST_STALL", format!("cold={STALL_MS}"))
        .env("NOWAIT_TEST_STALL_MARKS", &marks)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let srv = Srv { child, dir, port };
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "nowait did not listen: {}",
            srv.error_log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    srv
}

impl Srv {
    fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }

    /// Waits (bounded) until the error log, written by a writer thread, has
    /// a line containing `needle`; returns the log.
    fn wait_log(&self, needle: &str) -> String {
        let deadline = Instant::now() + IO_TIMEOUT;
        loop {
            let log = self.error_log();
            if log.contains(needle) || Instant::now() > deadline {
                return log;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// How many stalls have begun.
    fn stalls(&self) -> usize {
        std::fs::read_dir(self.dir.join("marks")).map_or(0, |d| d.count())
    }

    /// Waits (bounded) until `n` stalls have begun.
    fn wait_stalls(&self, n: usize) {
        let deadline = Instant::now() + IO_TIMEOUT;
        while self.stalls() < n {
            assert!(Instant::now() < deadline, "no stall began");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn root(&self) -> PathBuf {
        self.dir.join("root")
    }

    /// GET `path` on a new connection; returns (status, body).
    fn get(&self, path: &str) -> (u16, Vec<u8>) {
        get(self.port, path)
    }

    /// A metric's value from the status page (summed over label sets that
    /// contain every `labels` item).
    fn metric(&self, name: &str, labels: &[&str]) -> u64 {
        let (_, body) = self.get("/status");
        let text = String::from_utf8(body).unwrap();
        text.lines()
            .filter(|l| l.starts_with(&format!("{name}{{")) && labels.iter().all(|x| l.contains(x)))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64)
            .sum()
    }
}

fn get(port: u16, path: &str) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let head_end = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete head")
        + 4;
    let status = std::str::from_utf8(&out[9..12]).unwrap().parse().unwrap();
    (status, out[head_end..].to_vec())
}

/// One request of an ordering test, and what to wait for once it is sent
/// before the next one goes out.
enum Then {
    /// Its file operation has begun stalling.
    Stalls,
    /// Nothing to observe: give the server a moment to take it.
    Settle,
    /// The pool has this many tasks waiting (read from the status page).
    Waiting(u64),
}

/// Sends the requests one after the other on separate connections, each
/// once the previous one is where `Then` says, and returns their paths in
/// the order their responses completed, with the statuses.
fn completion_order(srv: &Srv, steps: &[(&str, Then)]) -> Vec<(String, u16)> {
    let (tx, rx) = mpsc::channel();
    let mut threads = Vec::new();
    for (p, then) in steps {
        let before = srv.stalls();
        let mut s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
        s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        write!(
            s,
            "GET {p} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let tx = tx.clone();
        let p = p.to_string();
        threads.push(std::thread::spawn(move || {
            let mut out = Vec::new();
            s.read_to_end(&mut out).unwrap();
            let status = std::str::from_utf8(&out[9..12]).unwrap().parse().unwrap();
            tx.send((p, status)).unwrap();
        }));
        match then {
            Then::Stalls => srv.wait_stalls(before + 1),
            Then::Settle => std::thread::sleep(Duration::from_millis(200)),
            Then::Waiting(n) => {
                let deadline = Instant::now() + IO_TIMEOUT;
                while srv.metric("nowait_pool_waiting", &[]) < *n {
                    assert!(Instant::now() < deadline, "no task came to wait");
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }
    drop(tx);
    for t in threads {
        t.join().unwrap();
    }
    rx.iter().collect()
}

#[test]
fn aio_threads_serves_others_while_a_file_operation_is_stalled() {
    let srv = start(
        "thread_pool disk threads=4;",
        "aio threads=disk;",
        "threads",
    );
    let order = completion_order(
        &srv,
        &[("/cold.txt", Then::Stalls), ("/hot.txt", Then::Settle)],
    );
    assert_eq!(
        order[0],
        ("/hot.txt".to_string(), 200),
        "the hot file must not wait behind the cold one: {order:?}"
    );
    assert_eq!(order[1], ("/cold.txt".to_string(), 200));
}

/// The locations of the file-test tests: `/t/` tests a cold file, `/r/`
/// answers at once.
const IF_FILE_LOCATIONS: &str = "location /t/ { if (-f $document_root/cold.txt) { return 200 \"cold exists\\n\"; } return 404; }\n\
     location /r/ { return 200 \"ready\\n\"; }";

#[test]
fn if_file_test_waits_in_the_pool_while_the_loop_serves_others() {
    let srv = start(
        "thread_pool disk threads=4;",
        &format!("aio threads=disk;\n{IF_FILE_LOCATIONS}"),
        "if-threads",
    );
    let order = completion_order(&srv, &[("/t/", Then::Stalls), ("/r/", Then::Settle)]);
    assert_eq!(
        order,
        [("/r/".to_string(), 200), ("/t/".to_string(), 200)],
        "the script's stat() must not hold the loop"
    );
    assert_eq!(srv.get("/t/"), (200, b"cold exists\n".to_vec()));
}

#[test]
fn if_file_test_under_aio_off_waits_on_the_loop_like_nginx() {
    let srv = start("", &format!("aio off;\n{IF_FILE_LOCATIONS}"), "if-off");
    let before = srv.stalls();
    let mut cold = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
    cold.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    write!(
        cold,
        "GET /t/ HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    srv.wait_stalls(before + 1);
    let t = Instant::now();
    assert_eq!(srv.get("/r/").0, 200);
    assert!(
        t.elapsed() >= Duration::from_millis(STALL_MS / 2),
        "with aio off the file test held the loop, as nginx's does: {:?}",
        t.elapsed()
    );
    let mut out = Vec::new();
    cold.read_to_end(&mut out).unwrap();
    assert!(out.starts_with(b"HTTP/1.1 200"), "{out:?}");
}

#[test]
fn aio_off_waits_behind_the_stalled_operation_like_nginx() {
    let srv = start("", "aio off;", "off");
    // The cold request's file operation stalls on the loop itself...
    let before = srv.stalls();
    let mut cold = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
    cold.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    write!(
        cold,
        "GET /cold.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    srv.wait_stalls(before + 1);
    // ...so a hot request sent during the stall is answered only once the
    // stall is over (which of the two is then answered first is incidental).
    let t = Instant::now();
    assert_eq!(srv.get("/hot.txt").0, 200);
    assert!(
        t.elapsed() >= Duration::from_millis(STALL_MS / 2),
        "with aio off the hot request did not wait for the loop: {:?}",
        t.elapsed()
    );
    let mut out = Vec::new();
    cold.read_to_end(&mut out).unwrap();
    assert!(out.starts_with(b"HTTP/1.1 200"), "{out:?}");
}

#[test]
fn hot_file_takes_the_fast_path_and_never_enters_the_pool() {
    let srv = start("thread_pool disk threads=2;", "aio threads=disk;", "fast");
    for _ in 0..3 {
        assert_eq!(srv.get("/hot.txt"), (200, b"hot.txt\n".to_vec()));
    }
    assert_eq!(
        srv.metric("nowait_pool_tasks_total", &["pool=\"disk\""]),
        0,
        "no task entered the pool"
    );
    assert!(srv.metric("nowait_fast_path_total", &["op=\"open\"", "result=\"hit\""]) >= 3);
    assert!(srv.metric("nowait_fast_path_total", &["op=\"read\"", "result=\"hit\""]) >= 3);
    // A cold file misses and goes to the pool.
    assert_eq!(srv.get("/cold.txt").0, 200);
    assert!(srv.metric("nowait_pool_tasks_total", &["pool=\"disk\""]) >= 1);
    assert!(
        srv.metric(
            "nowait_fast_path_total",
            &["op=\"open\"", "result=\"miss\""]
        ) >= 1
    );
}

#[test]
fn fast_path_off_sends_everything_to_the_pool() {
    let srv = start(
        "thread_pool disk threads=2;",
        "aio threads=disk; aio_fast_path off;",
        "slow",
    );
    assert_eq!(srv.get("/hot.txt"), (200, b"hot.txt\n".to_vec()));
    assert!(
        srv.metric("nowait_pool_tasks_total", &["pool=\"disk\""]) >= 2,
        "open and read ran on the pool"
    );
    assert_eq!(srv.metric("nowait_fast_path_total", &["result=\"hit\""]), 0);
}

#[test]
fn full_queue_fails_at_once_with_nginx_log_line() {
    let srv = start(
        "thread_pool one threads=1 max_queue=0;",
        "aio threads=one;",
        "overflow",
    );
    let order = completion_order(
        &srv,
        &[("/cold.txt", Then::Stalls), ("/cold2.txt", Then::Settle)],
    );
    // The second request is refused at once, so it completes first.
    assert_eq!(order[0], ("/cold2.txt".to_string(), 503), "{order:?}");
    assert_eq!(order[1], ("/cold.txt".to_string(), 200));
    let log = srv.wait_log("queue overflow");
    assert!(
        log.lines().any(|l| l.contains("[error]")
            && l.ends_with("thread pool \"one\" queue overflow: 0 tasks waiting")),
        "error log:\n{log}"
    );
    assert_eq!(
        srv.metric("nowait_pool_overflows_total", &["pool=\"one\""]),
        1
    );
}

#[test]
fn max_queue_one_lets_one_task_wait_and_refuses_the_next() {
    let srv = start(
        "thread_pool one threads=1 max_queue=1;",
        "aio threads=one;",
        "queue1",
    );
    let order = completion_order(
        &srv,
        &[
            ("/cold.txt", Then::Stalls),
            ("/cold2.txt", Then::Waiting(1)),
            ("/cold3.txt", Then::Settle),
        ],
    );
    assert_eq!(order[0], ("/cold3.txt".to_string(), 503), "{order:?}");
    assert_eq!(order[1], ("/cold.txt".to_string(), 200));
    assert_eq!(order[2], ("/cold2.txt".to_string(), 200));
    let log = srv.wait_log("queue overflow");
    assert!(
        log.contains("thread pool \"one\" queue overflow: 1 tasks waiting"),
        "{log}"
    );
}

#[test]
fn unknown_pool_from_a_variable_is_a_500_and_a_log_line() {
    let srv = start(
        "thread_pool pool_a threads=1;",
        "location /v/ { aio threads=pool_$arg_p; }",
        "varpool",
    );
    std::fs::create_dir_all(srv.root().join("v")).unwrap();
    std::fs::write(srv.root().join("v/f.txt"), "f\n").unwrap();
    Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(srv.root())
        .status()
        .unwrap();
    assert_eq!(srv.get("/v/f.txt?p=a").0, 200);
    assert_eq!(srv.get("/v/f.txt?p=b").0, 500);
    let log = srv.wait_log("thread pool \"pool_b\" not found");
    assert!(log.contains("thread pool \"pool_b\" not found"), "{log}");
}

fn read_response_slowly(port: u16, path: &str, then: impl FnOnce()) -> (usize, usize) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut first = vec![0u8; 64 * 1024];
    let n = s.read(&mut first).unwrap();
    then();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    let all = [&first[..n], &rest[..]].concat();
    let head_end = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let text = String::from_utf8_lossy(&all[..head_end]).to_string();
    let len: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (len, all.len() - head_end)
}

fn deleted_while_sent(aio: &str, label: &str) {
    let srv = start(
        "thread_pool disk threads=2;",
        &format!("aio {aio}; sendfile on; sendfile_max_chunk 256k;"),
        label,
    );
    let big: &Path = &srv.root().join("big.bin");
    let (promised, got) =
        read_response_slowly(srv.port, "/big.bin", || std::fs::remove_file(big).unwrap());
    // The open descriptor keeps the deleted file's data: the response ends
    // whole and cleanly.
    assert_eq!(promised, got);
    assert_eq!(srv.get("/hot.txt").0, 200, "the server goes on serving");
    assert_eq!(srv.get("/big.bin").0, 404);
}

#[test]
fn file_deleted_while_sent_completes_with_aio_threads() {
    deleted_while_sent("threads=disk", "del-threads");
}

#[test]
fn file_deleted_while_sent_completes_with_aio_off() {
    deleted_while_sent("off", "del-off");
}

fn truncated_while_sent(aio: &str, label: &str) {
    let srv = start(
        "thread_pool disk threads=2;",
        &format!("aio {aio}; sendfile on; sendfile_max_chunk 256k;"),
        label,
    );
    let big = srv.root().join("big.bin");
    let (promised, got) = read_response_slowly(srv.port, "/big.bin", || {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&big)
            .unwrap()
            .set_len(1024)
            .unwrap();
    });
    // The response is cut short (the connection closes before the promised
    // length, so the client knows) and nothing else is affected.
    assert!(got < promised, "got {got} of {promised}");
    assert_eq!(srv.get("/hot.txt").0, 200, "the server goes on serving");
    let log = srv.wait_log("truncated");
    assert!(log.contains("truncated"), "{log}");
}

#[test]
fn file_truncated_while_sent_ends_that_response_with_aio_threads() {
    truncated_while_sent("threads=disk", "trunc-threads");
}

#[test]
fn file_truncated_while_sent_ends_that_response_with_aio_off() {
    truncated_while_sent("off", "trunc-off");
}

#[test]
fn fifo_is_refused_without_waiting_for_a_writer() {
    for (aio, label) in [("off", "fifo-off"), ("threads=disk", "fifo-threads")] {
        let srv = start("thread_pool disk threads=2;", &format!("aio {aio};"), label);
        let fifo = srv.root().join("pipe");
        assert!(
            Command::new("mkfifo")
                .arg("-m")
                .arg("0666")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        // No writer: a blocking open() for reading would wait forever and
        // hold the loop (or a pool thread); the server's open must not.
        let t = Instant::now();
        assert_eq!(srv.get("/pipe").0, 404, "aio {aio}");
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the FIFO's open waited (aio {aio})"
        );
        let log = srv.wait_log("is not a regular file");
        assert!(log.contains("is not a regular file"), "{log}");
        // The worker still serves.
        std::fs::write(srv.root().join("after.txt"), "after").unwrap();
        assert_eq!(srv.get("/after.txt").0, 200, "aio {aio}");
    }
}

/// A directory listing (`autoindex`) is file work too: under `aio threads`
/// the stalled directory is opened and read on the pool while the loop
/// answers others; under `aio off` it is read on the loop, as nginx does,
/// and the hot file waits behind it.
#[test]
fn a_cold_directory_listing_waits_in_the_pool_not_on_the_loop() {
    for (main, body, hot_first) in [
        (
            "thread_pool disk threads=4;",
            "aio threads=disk; autoindex on;",
            true,
        ),
        ("", "aio off; autoindex on;", false),
    ] {
        let srv = start(main, body, if hot_first { "ai-threads" } else { "ai-off" });
        let dir = srv.root().join("colddir");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("listed.txt"), "x").unwrap();
        Command::new("chmod")
            .args(["-R", "a+rX"])
            .arg(&dir)
            .status()
            .unwrap();
        if hot_first {
            let order = completion_order(
                &srv,
                &[("/colddir/", Then::Stalls), ("/hot.txt", Then::Settle)],
            );
            assert_eq!(order[0], ("/hot.txt".to_string(), 200), "{body}: {order:?}");
            let (status, page) = srv.get("/colddir/");
            assert_eq!(status, 200);
            assert!(String::from_utf8_lossy(&page).contains("listed.txt"));
        } else {
            // The loop itself waits on the stalled directory: a hot request
            // sent meanwhile is answered only when the stall is over (the
            // two answers then leave the same loop turn, in either order).
            let before = srv.stalls();
            let cold = std::thread::spawn({
                let port = srv.port;
                move || {
                    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
                    s.write_all(b"GET /colddir/ HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                        .unwrap();
                    let mut out = Vec::new();
                    s.read_to_end(&mut out).unwrap();
                    out
                }
            });
            srv.wait_stalls(before + 1);
            let t = Instant::now();
            assert_eq!(srv.get("/hot.txt").0, 200);
            assert!(
                t.elapsed() >= Duration::from_millis(STALL_MS / 2),
                "{body}: the hot file did not wait behind the loop's stall ({:?})",
                t.elapsed()
            );
            let page = cold.join().unwrap();
            assert!(String::from_utf8_lossy(&page).contains("listed.txt"));
        }
    }
}

/// Issue: under a load of cold files, a popular file's misses waited in
/// the pool's FIFO behind every older cold miss, so a hot file that fell
/// out of memory never came back. The pool now takes the misses of files
/// opened often lately (the popularity sketch) first.
#[test]
fn a_popular_files_miss_overtakes_older_cold_misses_in_the_pool() {
    // `start` puts the document root here; a second location reaches the
    // same files through another pool.
    let root = std::env::temp_dir()
        .join(format!("nowait-fl-popular-{}", std::process::id()))
        .join("root");
    let srv = start(
        "thread_pool disk threads=1; thread_pool wide threads=16;",
        &format!(
            "aio threads=disk;\n  location /p/ {{ alias {}/; aio threads=wide; }}",
            root.display()
        ),
        "popular",
    );
    assert_eq!(srv.root(), root);
    std::fs::write(root.join("coldpop.txt"), "coldpop.txt\n").unwrap();
    // Make coldpop.txt popular: eight opens at once through the wide pool
    // (they stall side by side).
    let port = srv.port;
    let warm: Vec<_> = (0..8)
        .map(|_| std::thread::spawn(move || get(port, "/p/coldpop.txt")))
        .collect();
    for w in warm {
        assert_eq!(w.join().unwrap(), (200, b"coldpop.txt\n".to_vec()));
    }
    assert_eq!(
        srv.metric("nowait_pool_promoted_total", &["pool=\"disk\""]),
        0
    );
    // The one thread of "disk" is held by a cold open; two cold misses
    // wait, then the popular file's.
    let order = completion_order(
        &srv,
        &[
            ("/cold.txt", Then::Stalls),
            ("/cold2.txt", Then::Waiting(1)),
            ("/cold3.txt", Then::Waiting(2)),
            ("/coldpop.txt", Then::Waiting(3)),
        ],
    );
    let at = |p: &str| order.iter().position(|(q, _)| q == p).unwrap();
    assert!(order.iter().all(|(_, status)| *status == 200), "{order:?}");
    // In nginx's FIFO it would complete last; ranked, before both cold
    // misses that were queued before it.
    assert!(at("/coldpop.txt") < at("/cold2.txt"), "{order:?}");
    assert!(at("/coldpop.txt") < at("/cold3.txt"), "{order:?}");
    assert!(srv.metric("nowait_pool_promoted_total", &["pool=\"disk\""]) >= 1);
}
