//! Black-box tests of zero-copy bodies under `aio threads; sendfile on;`:
//! what is in memory and up to date is `sendfile()`d by the worker's loop,
//! what needs the disk by a pool thread, and `sendfile off` copies. Which
//! path ran is read from `nowait_body_bytes_total{path}` on the status
//! page; every body is compared byte for byte with the file.
//!
//! A page is made to need the disk with `posix_fadvise(DONTNEED)` after
//! the file is written back (`fsync`), and the test checks with
//! `cachestat()` that the kernel really dropped it before relying on it.

mod common;

use std::path::Path;
use std::time::Duration;

use common::client::{get, request};
use common::{Conf, Conn, Server, TempDir};
use nowait::sys::file as sysfile;

/// Size of the large file: many times what a loopback socket takes at once
/// and larger than `sendfile_max_chunk 2m`.
const LARGE: usize = 6 * 1024 * 1024;
/// The file truncated while sent: larger than loopback socket buffers hold.
const HUGE: usize = 64 * 1024 * 1024;
/// The ranges the tests drop from memory start and end on this boundary:
/// the page cache may hold a file in folios of up to 2 MiB (the PMD size),
/// naturally aligned, and `DONTNEED` drops only folios wholly inside its
/// range.
const FOLIO_MAX: usize = 2 * 1024 * 1024;

/// Writes `name` in `dir` with `data`, readable by the workers, and on
/// the disk (so that its pages are clean and can be dropped).
fn write_file(dir: &Path, name: &str, data: &[u8]) {
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    std::fs::File::open(&path).unwrap().sync_all().unwrap();
    common::tmp::set_mode(&path, 0o644);
}

/// Drops `[off, off + len)` of `name` from the page cache and checks that
/// the kernel did (a file system that keeps its pages, such as tmpfs,
/// cannot run these tests).
fn drop_pages(dir: &Path, name: &str, off: usize, len: usize) {
    let fd = sysfile::open_read(&dir.join(name)).unwrap();
    // A page under read-ahead I/O (started by the last request's probes or
    // asked for by the server for a popular file) is locked and `DONTNEED`
    // passes it by: ask again once that I/O is done, which takes more than a
    // second when the whole test suite shares the disk.
    let mut cs = Default::default();
    for _ in 0..250 {
        sysfile::fadvise(&fd, off as u64, len as u64, sysfile::Advice::DontNeed).unwrap();
        cs = sysfile::cachestat(&fd, off as u64, len as u64).expect("cachestat (Linux 6.5+)");
        if cs.cached == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        cs.cached, 0,
        "{name}: the file system kept pages posix_fadvise(DONTNEED) should drop: {cs:?}"
    );
}

fn serve(root: &Path, extra: &str) -> Server {
    let conf = Conf::server(&format!(
        "root {{root}};\naio threads;\n{extra}\nlocation = /status {{ nowait_status; }}"
    ))
    .root(root)
    .render();
    Server::tested(&conf)
}

/// `nowait_body_bytes_total{path=…}` for `loop_sendfile`, `pool_sendfile`
/// and `copy`.
#[derive(Clone, Copy, Debug, Default)]
struct Paths {
    loop_sendfile: u64,
    pool_sendfile: u64,
    copy: u64,
}

impl Paths {
    fn read(s: &Server) -> Paths {
        Paths::read_port(s.port())
    }

    fn read_port(port: u16) -> Paths {
        let text = String::from_utf8_lossy(&get(port, "/status").body).into_owned();
        let value = |path: &str| {
            let key = format!("nowait_body_bytes_total{{path=\"{path}\"}} ");
            text.lines()
                .find_map(|l| l.strip_prefix(key.as_str()))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or_else(|| panic!("no {key} on the status page:\n{text}"))
        };
        Paths {
            loop_sendfile: value("loop_sendfile"),
            pool_sendfile: value("pool_sendfile"),
            copy: value("copy"),
        }
    }

    fn since(self, before: Paths) -> Paths {
        Paths {
            loop_sendfile: self.loop_sendfile - before.loop_sendfile,
            pool_sendfile: self.pool_sendfile - before.pool_sendfile,
            copy: self.copy - before.copy,
        }
    }
}

/// GETs `/large.bin` and checks it byte for byte; what each path sent.
fn fetch_whole(s: &Server, data: &[u8]) -> Paths {
    fetch_whole_port(s.port(), data)
}

/// [`fetch_whole`] from the server on `port`.
fn fetch_whole_port(port: u16, data: &[u8]) -> Paths {
    let before = Paths::read_port(port);
    let r = get(port, "/large.bin");
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), data.len());
    assert!(r.body == data, "the body differs from the file");
    Paths::read_port(port).since(before)
}

fn root() -> (TempDir, Vec<u8>) {
    let dir = TempDir::new("sendfile-root");
    let data = common::pattern(LARGE);
    write_file(dir.path(), "large.bin", &data);
    write_file(dir.path(), "x.txt", b"x\n");
    (dir, data)
}

#[test]
fn a_file_in_memory_is_sendfiled_by_the_loop() {
    let (dir, data) = root();
    let s = serve(dir.path(), "sendfile on;");
    // The first request may meet pages the write-back left; the second
    // finds the whole file in memory.
    fetch_whole(&s, &data);
    let d = fetch_whole(&s, &data);
    assert_eq!(d.loop_sendfile, LARGE as u64, "{d:?}");
    assert_eq!((d.pool_sendfile, d.copy), (0, 0), "{d:?}");
}

#[test]
fn sendfile_off_copies_as_nginx_does() {
    let (dir, data) = root();
    let s = serve(dir.path(), "sendfile off;");
    fetch_whole(&s, &data);
    let d = fetch_whole(&s, &data);
    assert_eq!(d.copy, LARGE as u64, "{d:?}");
    assert_eq!((d.loop_sendfile, d.pool_sendfile), (0, 0), "{d:?}");
}

/// How many times a test drops pages and fetches before it concludes the
/// pool never took a miss. A `preadv2(RWF_NOWAIT)` probe that misses starts
/// read-ahead without waiting for it; on a fast disk, a loop thread that is
/// preempted inside the call (a loaded 2-CPU machine) can find that I/O done
/// and the pages up to date before the call returns. The loop then sends
/// them, rightly: it did not wait. One attempt in which the probe saw the
/// miss is what the tests need.
const MISS_ATTEMPTS: usize = 8;

/// Drops `[off, off + len)` of `/large.bin`, fetches it whole, and repeats
/// until the pool sent part of it; every body is checked byte for byte and
/// every attempt must account for the whole file. The last attempt's paths.
fn fetch_after_drop(s: &Server, dir: &Path, data: &[u8], off: usize, len: usize) -> Paths {
    let mut seen = Vec::new();
    for _ in 0..MISS_ATTEMPTS {
        drop_pages(dir, "large.bin", off, len);
        let d = fetch_whole(s, data);
        assert_eq!(d.loop_sendfile + d.pool_sendfile, LARGE as u64, "{d:?}");
        assert_eq!(d.copy, 0, "{d:?}");
        if d.pool_sendfile > 0 {
            return d;
        }
        seen.push(d);
    }
    panic!(
        "the pool sent nothing in {MISS_ATTEMPTS} fetches after the pages were dropped: {seen:?}"
    );
}

#[test]
fn a_file_not_in_memory_is_sendfiled_by_the_pool() {
    let (dir, data) = root();
    let s = serve(dir.path(), "sendfile on;");
    fetch_after_drop(&s, dir.path(), &data, 0, LARGE);
}

#[test]
fn a_hole_in_a_file_in_memory_goes_to_the_pool_and_the_rest_stays_on_the_loop() {
    let (dir, data) = root();
    let s = serve(dir.path(), "sendfile on;");
    fetch_whole(&s, &data);
    // The second 2 MiB need the disk; the first are sent from the loop.
    let d = fetch_after_drop(&s, dir.path(), &data, FOLIO_MAX, FOLIO_MAX);
    assert!(d.loop_sendfile >= FOLIO_MAX as u64, "{d:?}");
}

#[test]
fn ranges_are_exact_from_memory_and_from_the_disk() {
    let (dir, data) = root();
    let s = serve(dir.path(), "sendfile on;\nsendfile_max_chunk 64k;");
    fetch_whole(&s, &data);
    let ranges = [
        (1_000_003, 2_500_000),
        (LARGE - 70_000, LARGE - 1),
        (65_535, 65_536),
        (3 * 1024 * 1024 - 5, 5 * 1024 * 1024 + 7),
    ];
    // Once from memory, then with the middle of the file (which most ranges
    // cross) dropped, until the pool took part (see [`MISS_ATTEMPTS`]).
    let rounds = std::iter::once(false).chain(std::iter::repeat_n(true, MISS_ATTEMPTS));
    for dropped in rounds {
        if dropped {
            if Paths::read(&s).pool_sendfile > 0 {
                break;
            }
            drop_pages(dir.path(), "large.bin", FOLIO_MAX, FOLIO_MAX);
        }
        for (first, last) in ranges {
            let r = request(
                s.port(),
                &format!(
                    "GET /large.bin HTTP/1.1\r\nHost: localhost\r\nRange: bytes={first}-{last}\r\nConnection: close\r\n\r\n"
                ),
            );
            assert_eq!(r.status, 206, "{first}-{last} dropped={dropped}");
            assert!(
                r.body == data[first..=last],
                "range {first}-{last} differs (dropped={dropped})"
            );
        }
        let r = request(
            s.port(),
            "GET /large.bin HTTP/1.1\r\nHost: localhost\r\nRange: bytes=10-19,2000000-2300009\r\nConnection: close\r\n\r\n",
        );
        assert_eq!(r.status, 206);
        let needle = &data[2_000_000..2_300_010];
        assert!(
            r.body.windows(needle.len()).any(|w| w == needle),
            "the second part differs (dropped={dropped})"
        );
    }
    let d = Paths::read(&s);
    assert!(d.loop_sendfile > 0 && d.pool_sendfile > 0, "{d:?}");
}

#[test]
fn a_file_truncated_while_sendfiled_from_memory_ends_the_response() {
    let dir = TempDir::new("sendfile-trunc");
    let path = dir.path().join("huge.bin");
    write_file(dir.path(), "huge.bin", &common::pattern(HUGE));
    write_file(dir.path(), "x.txt", b"x\n");
    let s = serve(dir.path(), "sendfile on;");
    let mut c = Conn::open(s.port());
    c.send(b"GET /huge.bin HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert!(!c.quiet_for(Duration::from_secs(5)), "no response");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(1024 * 1024)
        .unwrap();
    // Read until the server closes: it must, the promised length is gone.
    let mut total = c.pending().len();
    let mut buf = vec![0u8; 256 * 1024];
    c.stream
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    loop {
        use std::io::Read;
        match c.stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => total += n,
        }
    }
    assert!(total < HUGE, "{total} bytes of a file truncated to 1 MiB");
    let logged = |s: &Server| {
        s.stderr().lines().any(|l| {
            l.contains("[alert]")
                && l.contains("sendfile() reported that \"")
                && l.contains("huge.bin\" was truncated at ")
        })
    };
    assert!(
        common::wait::until(Duration::from_secs(5), || logged(&s)),
        "the truncation is not logged as nginx logs it:\n{}",
        s.stderr()
    );
    let r = get(s.port(), "/x.txt");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"x\n"[..]));
}

/// `nowait_read_ahead_bytes_total` on the status page.
fn read_ahead_bytes(s: &Server) -> u64 {
    let text = String::from_utf8_lossy(&get(s.port(), "/status").body).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("nowait_read_ahead_bytes_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no nowait_read_ahead_bytes_total on the status page:\n{text}"))
}

/// A miss of a file many requests read lately asks the kernel for the rest
/// of the file at once (`io::read_ahead`), so that it comes back in one
/// trip through the disk's queue; a file read once keeps the kernel's own
/// read-ahead.
#[test]
fn a_popular_file_missing_from_memory_is_read_ahead_whole_and_a_cold_one_is_not() {
    let (dir, data) = root();
    let s = serve(dir.path(), "sendfile on;\nsendfile_max_chunk 512k;");
    // Read once, and missing from memory: not popular, nothing asked
    // ahead (when the pool took the miss: see [`MISS_ATTEMPTS`]; a retry
    // would count as more reads).
    let before = read_ahead_bytes(&s);
    drop_pages(dir.path(), "large.bin", 0, LARGE);
    let d = fetch_whole(&s, &data);
    if d.pool_sendfile > 0 {
        assert_eq!(
            read_ahead_bytes(&s),
            before,
            "a file read once was read ahead"
        );
    }
    // Read often: its next miss asks for the rest of the file.
    for _ in 0..4 {
        fetch_whole(&s, &data);
    }
    let before = read_ahead_bytes(&s);
    fetch_after_drop(&s, dir.path(), &data, 0, LARGE);
    let asked = read_ahead_bytes(&s) - before;
    assert!(
        asked >= (LARGE - 512 * 1024) as u64,
        "a popular file's miss asked for {asked} bytes ahead"
    );
}

/// nowait started inside a memory cgroup (v1) of its own, limited to a
/// size the test changes; the server is killed and the group removed on
/// drop. (The server reads its cgroup's figures from files it opens at
/// start, so it must start in the group, not be moved into it.)
struct InCgroup {
    child: std::process::Child,
    cgroup: std::path::PathBuf,
    port: u16,
    _prefix: TempDir,
}

impl InCgroup {
    fn start(root: &Path, limit: u64) -> InCgroup {
        let memory = Path::new("/sys/fs/cgroup/memory");
        assert!(
            memory.join("cgroup.procs").exists(),
            "this test needs the cgroup v1 memory controller at {} (the lab's machines have it)",
            memory.display()
        );
        let cgroup = memory.join(format!(
            "nowait-test-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir(&cgroup).expect("make a memory cgroup (run as root)");
        let prefix = TempDir::new("sendfile-cgroup");
        let port = common::server::free_port();
        let conf = format!(
            "worker_processes 1;\nerror_log stderr;\npid {p}/n.pid;\nevents {{ }}\n\
             http {{ access_log off; default_type application/octet-stream;\n\
             server {{ listen 127.0.0.1:{port}; root {root}; aio threads; sendfile on;\n\
             location = /status {{ nowait_status; }} }} }}\n",
            p = prefix.path().display(),
            root = root.display(),
        );
        let conf_path = prefix.path().join("nowait.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let g = InCgroup {
            child: std::process::Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "echo $$ > {procs} && exec {bin} -p {p}/ -c {conf} -g 'daemon off;'",
                    procs = cgroup.join("cgroup.procs").display(),
                    bin = env!("CARGO_BIN_EXE_nowait"),
                    p = prefix.path().display(),
                    conf = conf_path.display(),
                ))
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("start nowait"),
            cgroup,
            port,
            _prefix: prefix,
        };
        g.limit(limit);
        assert!(
            common::wait::until(Duration::from_secs(10), || {
                std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            }),
            "nowait did not listen"
        );
        g
    }

    fn limit(&self, bytes: u64) {
        std::fs::write(self.cgroup.join("memory.limit_in_bytes"), bytes.to_string())
            .expect("set the cgroup's limit");
    }

    /// `nowait_memory_short` on the status page.
    fn memory_short(&self) -> bool {
        let text = String::from_utf8_lossy(&get(self.port, "/status").body).into_owned();
        text.lines()
            .find_map(|l| l.strip_prefix("nowait_memory_short "))
            .unwrap_or_else(|| panic!("no nowait_memory_short on the status page:\n{text}"))
            .trim()
            == "1"
    }
}

impl Drop for InCgroup {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Empty once its process is gone (the privilege helper, if any,
        // exits with it).
        for _ in 0..50 {
            if std::fs::remove_dir(&self.cgroup).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Near its memory cgroup's limit, where each new page of the cache
/// evicts an old one, a loop copies what it finds in memory instead of
/// `sendfile()`ing it: a page evicted between its probe and the call made
/// the loop wait for the page's read (the slow-disk lab caught loops in
/// `do_sendfile` for seconds). Away from the limit it `sendfile()`s again.
#[test]
fn near_its_memory_limit_the_loop_copies_instead_of_sendfile() {
    let (dir, data) = root();
    // Read through the server's page cache: more than the limit.
    write_file(dir.path(), "filler.bin", &vec![7u8; 192 << 20]);
    // Out of memory, so that the server's reads bring it in, charged to
    // its cgroup (pages the test wrote count against the test's).
    drop_pages(dir.path(), "filler.bin", 0, 192 << 20);
    drop_pages(dir.path(), "large.bin", 0, LARGE);
    let s = InCgroup::start(dir.path(), 128 << 20);
    fetch_whole_port(s.port, &data);
    let d = fetch_whole_port(s.port, &data);
    assert!(!s.memory_short(), "memory short before the filler was read");
    assert_eq!(d.loop_sendfile, LARGE as u64, "{d:?}");
    let r = get(s.port, "/filler.bin");
    assert_eq!((r.status, r.body.len()), (200, 192 << 20));
    assert!(
        common::wait::until(Duration::from_secs(5), || s.memory_short()),
        "the server never saw its cgroup near its limit"
    );
    let d = fetch_whole_port(s.port, &data);
    assert_eq!(d.loop_sendfile, 0, "{d:?}");
    assert!(d.copy > 0, "{d:?}");
    // Room again: zero copy from the loop.
    s.limit(1 << 30);
    assert!(
        common::wait::until(Duration::from_secs(5), || !s.memory_short()),
        "memory still short with room in the cgroup"
    );
    fetch_whole_port(s.port, &data);
    let d = fetch_whole_port(s.port, &data);
    assert!(d.loop_sendfile > 0, "{d:?}");
}

/// A gauge or counter of the status page.
fn status_value(port: u16, name: &str) -> u64 {
    let text = String::from_utf8_lossy(&get(port, "/status").body).into_owned();
    let key = format!("{name} ");
    text.lines()
        .find_map(|l| l.strip_prefix(key.as_str()))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} on the status page:\n{text}"))
}

/// While memory is short, a popular file (opened four times lately) is
/// locked in memory by a pool thread, and from then on the loop sends it
/// with `sendfile()` again, zero copy: its pages cannot be evicted under
/// the call. A file opened once is never pinned.
#[test]
fn near_its_memory_limit_a_popular_file_is_pinned_and_sendfiled() {
    const PINNED: usize = 2 << 20;
    let (dir, _) = root();
    let data = common::pattern(PINNED);
    write_file(dir.path(), "pin.bin", &data);
    write_file(dir.path(), "filler.bin", &vec![7u8; 192 << 20]);
    write_file(dir.path(), "once.bin", &vec![9u8; 1 << 20]);
    drop_pages(dir.path(), "filler.bin", 0, 192 << 20);
    drop_pages(dir.path(), "pin.bin", 0, PINNED);
    let s = InCgroup::start(dir.path(), 128 << 20);
    // An eighth of the cgroup's limit, within RLIMIT_MEMLOCK (raised to
    // it while the server is root, where the kernel lets root raise it).
    assert!(
        common::wait::until(Duration::from_secs(5), || {
            let b = status_value(s.port, "nowait_pinned_budget_bytes");
            b > 0 && b <= 16 << 20
        }),
        "budget {} for a 128 MiB cgroup",
        status_value(s.port, "nowait_pinned_budget_bytes")
    );
    let budget = status_value(s.port, "nowait_pinned_budget_bytes");
    assert!(
        budget >= 2 * PINNED as u64,
        "RLIMIT_MEMLOCK too small here ({budget} bytes) to pin a {PINNED}-byte file"
    );
    let r = get(s.port, "/filler.bin");
    assert_eq!((r.status, r.body.len()), (200, 192 << 20));
    assert!(
        common::wait::until(Duration::from_secs(5), || s.memory_short()),
        "the server never saw its cgroup near its limit"
    );
    let r = get(s.port, "/once.bin");
    assert_eq!((r.status, r.body.len()), (200, 1 << 20));
    let fetch = || {
        let before = Paths::read_port(s.port);
        let r = get(s.port, "/pin.bin");
        assert_eq!((r.status, r.body.len()), (200, PINNED));
        assert!(r.body == data, "the body differs from the file");
        Paths::read_port(s.port).since(before)
    };
    let mut copied = 0;
    for _ in 0..12 {
        copied += fetch().copy;
        if status_value(s.port, "nowait_pinned_files") == 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(copied > 0, "copied before it was pinned");
    assert!(
        common::wait::until(Duration::from_secs(5), || {
            status_value(s.port, "nowait_pinned_files") == 1
        }),
        "the popular file was never pinned"
    );
    assert_eq!(
        status_value(s.port, "nowait_pinned_bytes"),
        PINNED as u64,
        "pin.bin alone: once.bin was read once"
    );
    assert!(s.memory_short(), "memory no longer short");
    let d = fetch();
    assert_eq!(
        (d.loop_sendfile, d.copy, d.pool_sendfile),
        (PINNED as u64, 0, 0),
        "{d:?}"
    );
    assert_eq!(status_value(s.port, "nowait_pin_failures_total"), 0);
}

/// A popular small file — read into the response head rather than sent
/// with `sendfile()` — is pinned too while memory is short: before, only
/// files sent in slices asked for a pin, and under the slow-disk lab's
/// random load the hot set's small files were the ones that lost pages,
/// each miss waiting behind the cold reads for a pool thread and a disk
/// slot while every hot connection came to ask for the same file.
#[test]
fn near_its_memory_limit_a_popular_small_file_is_pinned_too() {
    const SMALL: usize = 8 * 1024;
    let (dir, _) = root();
    let data = common::pattern(SMALL);
    write_file(dir.path(), "small.bin", &data);
    write_file(dir.path(), "filler.bin", &vec![7u8; 192 << 20]);
    drop_pages(dir.path(), "filler.bin", 0, 192 << 20);
    let s = InCgroup::start(dir.path(), 128 << 20);
    assert!(
        common::wait::until(Duration::from_secs(5), || {
            status_value(s.port, "nowait_pinned_budget_bytes") > 0
        }),
        "no pin budget in a 128 MiB cgroup"
    );
    let r = get(s.port, "/filler.bin");
    assert_eq!((r.status, r.body.len()), (200, 192 << 20));
    assert!(
        common::wait::until(Duration::from_secs(5), || s.memory_short()),
        "the server never saw its cgroup near its limit"
    );
    for _ in 0..20 {
        let r = get(s.port, "/small.bin");
        assert_eq!(r.status, 200);
        assert!(r.body == data, "the body differs from the file");
        if status_value(s.port, "nowait_pinned_files") == 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        status_value(s.port, "nowait_pinned_files"),
        1,
        "the popular small file was never pinned"
    );
    assert_eq!(status_value(s.port, "nowait_pinned_bytes"), SMALL as u64);
    assert_eq!(status_value(s.port, "nowait_pin_failures_total"), 0);
}
