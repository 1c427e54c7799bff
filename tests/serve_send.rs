//! Black-box tests of sending file bodies: a large file with `sendfile`
//! (sliced by `sendfile_max_chunk`), without it, and through `aio threads`;
//! ranges inside the large file; `tcp_nopush`; and a file truncated while
//! it is being sent.

mod common;

use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use common::client::{get, request};
use common::{Conf, Conn, Server, TempDir};

/// Size of the large file: bigger than any socket buffer on loopback, so
/// the server must write it in many steps.
const LARGE: usize = 3 * 1024 * 1024;
/// The file truncated while sent: larger than what loopback socket buffers
/// can hold, so the server is still sending when the test truncates it.
const HUGE: usize = 64 * 1024 * 1024;

/// A document root with `large.bin` ([`LARGE`] bytes) and `x.txt`.
fn root() -> (TempDir, Vec<u8>) {
    let dir = TempDir::new("send-root");
    let data = common::pattern(LARGE);
    std::fs::write(dir.path().join("large.bin"), &data).unwrap();
    std::fs::write(dir.path().join("x.txt"), "x\n").unwrap();
    for f in ["large.bin", "x.txt"] {
        common::tmp::set_mode(&dir.path().join(f), 0o644);
    }
    (dir, data)
}

fn serve(root: &Path, extra: &str) -> Server {
    let conf = Conf::server(&format!("root {{root}};\n{extra}"))
        .root(root)
        .render();
    Server::tested(&conf)
}

fn assert_large_served(s: &Server, data: &[u8]) {
    let r = get(s.port(), "/large.bin");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Length"), Some(LARGE.to_string()));
    assert_eq!(r.body.len(), data.len());
    assert!(r.body == data, "the body differs from the file");
}

#[test]
fn large_file_with_sendfile_and_max_chunk() {
    let (dir, data) = root();
    let s = serve(dir.path(), "sendfile on;\nsendfile_max_chunk 64k;");
    assert_large_served(&s, &data);
}

#[test]
fn large_file_without_sendfile() {
    let (dir, data) = root();
    let s = serve(dir.path(), "sendfile off;");
    assert_large_served(&s, &data);
}

#[test]
fn large_file_with_aio_threads() {
    let (dir, data) = root();
    for sendfile in ["on", "off"] {
        let s = serve(dir.path(), &format!("aio threads;\nsendfile {sendfile};"));
        assert_large_served(&s, &data);
    }
}

#[test]
fn large_file_with_tcp_nopush() {
    let (dir, data) = root();
    let s = serve(dir.path(), "sendfile on;\ntcp_nopush on;");
    assert_large_served(&s, &data);
    // A small file on a kept-alive connection is not held back by the cork.
    let mut c = Conn::open(s.port());
    for _ in 0..2 {
        c.send(b"GET /x.txt HTTP/1.1\r\nHost: localhost\r\n\r\n");
        let r = c.response().expect("a response");
        assert_eq!(r.body, b"x\n");
    }
}

#[test]
fn ranges_inside_the_large_file() {
    let (dir, data) = root();
    for extra in [
        "sendfile on;\nsendfile_max_chunk 64k;",
        "sendfile off;",
        "aio threads;",
    ] {
        let s = serve(dir.path(), extra);
        for (first, last) in [
            (1_000_003, 2_500_000),
            (LARGE - 70_000, LARGE - 1),
            (65_535, 65_536),
        ] {
            let r = request(
                s.port(),
                &format!(
                    "GET /large.bin HTTP/1.1\r\nHost: localhost\r\nRange: bytes={first}-{last}\r\nConnection: close\r\n\r\n"
                ),
            );
            assert_eq!(r.status, 206, "{extra} {first}-{last}");
            assert!(
                r.body == data[first..=last],
                "{extra}: range {first}-{last} differs"
            );
        }
        let r = request(
            s.port(),
            "GET /large.bin HTTP/1.1\r\nHost: localhost\r\nRange: bytes=10-19,2000000-2000009\r\nConnection: close\r\n\r\n",
        );
        assert_eq!(r.status, 206);
        let needle = &data[2_000_000..2_000_010];
        assert!(
            r.body.windows(10).any(|w| w == needle),
            "{extra}: the second part is missing"
        );
    }
}

/// Reads from `c` until it closes or `limit` passes; the byte count.
fn drain(c: &mut Conn, limit: Duration) -> (usize, bool) {
    let deadline = Instant::now() + limit;
    let mut total = c.pending().len();
    let mut buf = vec![0; 256 * 1024];
    while Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now());
        c.stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        match c.stream.read(&mut buf) {
            Ok(0) => return (total, true),
            Ok(n) => total += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return (total, false);
            }
            Err(_) => return (total, true),
        }
    }
    (total, false)
}

#[test]
fn file_truncated_while_sent_ends_the_response() {
    // nginx's words for each way of sending: `ngx_linux_sendfile` and
    // `ngx_output_chain_copy_buf`, at [alert], in the connection's context.
    for (extra, words) in [
        ("sendfile on;", "sendfile() reported that \""),
        ("sendfile off;", "pread() read only "),
        ("aio threads;", "pread() read only "),
    ] {
        let dir = TempDir::new("trunc-root");
        let path = dir.path().join("huge.bin");
        std::fs::write(&path, common::pattern(HUGE)).unwrap();
        common::tmp::set_mode(&path, 0o644);
        std::fs::write(dir.path().join("x.txt"), "x\n").unwrap();
        common::tmp::set_mode(&dir.path().join("x.txt"), 0o644);
        let s = serve(dir.path(), extra);

        let mut c = Conn::open(s.port());
        c.send(b"GET /huge.bin HTTP/1.1\r\nHost: localhost\r\n\r\n");
        // Wait for the first bytes: the response has started.
        assert!(!c.quiet_for(Duration::from_secs(5)), "{extra}: no response");
        let head_end = find_head_end(c.pending());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(1024 * 1024)
            .unwrap();
        let (total, closed) = drain(&mut c, Duration::from_secs(15));
        assert!(
            closed,
            "{extra}: the connection stays open after truncation"
        );
        let head = head_end.expect("the head arrived with the first bytes");
        assert!(
            total - head < HUGE,
            "{extra}: {} body bytes sent of a file truncated to 1 MiB",
            total - head
        );
        let logged = |s: &Server| {
            s.stderr().lines().any(|l| {
                l.contains("[alert]")
                    && l.contains(words)
                    && l.contains("huge.bin\"")
                    && l.contains(" while sending response to client, client: 127.0.0.1")
            })
        };
        assert!(
            common::wait::until(Duration::from_secs(5), || logged(&s)),
            "{extra}: the truncation is not logged as nginx logs it:\n{}",
            s.stderr()
        );
        // The server keeps serving.
        let r = get(s.port(), "/x.txt");
        assert_eq!((r.status, r.body.as_slice()), (200, &b"x\n"[..]), "{extra}");
    }
}

fn find_head_end(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}
