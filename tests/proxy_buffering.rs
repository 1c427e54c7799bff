//! How a response body travels from the upstream to the client: with
//! `proxy_buffering on` a slow client does not hold the upstream (what
//! does not fit in memory spills to `proxy_temp_path`: what follows the
//! `proxy_busy_buffers_size` bytes kept for the client), unless
//! `proxy_max_temp_file_size 0`; with it off (or `X-Accel-Buffering: no`)
//! bytes go on as they come; `proxy_limit_rate` paces the reading.
//!
//! Checked against nginx 1.22 with `NOWAIT_TEST_NGINX=1`. Durations are
//! bounds on waits or lower bounds a rate implies, never speed.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::proxy::{conf, get, start};
use common::wait::until;
use common::{Conn, Server, Upstream, body};

/// The large body: more than every socket buffer between the upstream
/// and the client can hold (loopback autotuning reaches a few MiB each
/// way), so that only a spill lets the upstream finish early.
const LARGE: usize = 24 << 20;

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

/// An upstream that sends `LARGE` bytes with a length and says when it
/// has written them all.
fn large_upstream(done: Arc<AtomicBool>) -> Upstream {
    Upstream::start(move |c| {
        if c.read_request().is_some() {
            let mut out =
                format!("HTTP/1.1 200 OK\r\nContent-Length: {LARGE}\r\nConnection: close\r\n\r\n")
                    .into_bytes();
            out.extend_from_slice(&pattern(LARGE));
            if c.write(&out) {
                done.store(true, Ordering::SeqCst);
            }
        }
    })
}

/// Requests the large body on a connection with a small receive buffer,
/// reads nothing for a while, then everything; returns whether the
/// upstream had finished writing before the client read a byte.
fn slow_client(location_extra: &str) -> bool {
    let done = Arc::new(AtomicBool::new(false));
    let up = large_upstream(done.clone());
    let text = conf(
        Some(&up),
        "",
        &format!("location / {{ proxy_pass http://UP; {location_extra} }}"),
    )
    .replace(
        "listen 127.0.0.1:{port};",
        "listen 127.0.0.1:{port} sndbuf=64k;",
    );
    let server = Server::tested(&text);
    let mut c = Conn::open(server.port());
    socket2::SockRef::from(&c.stream)
        .set_recv_buffer_size(16 * 1024)
        .expect("SO_RCVBUF");
    c.send(b"GET /large HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    // A spill of LARGE bytes takes a couple of seconds here (nginx too):
    // the bound is generous, and the case without spill waits it whole.
    let finished_first = until(Duration::from_secs(8), || done.load(Ordering::SeqCst));
    // Now read at full speed.
    socket2::SockRef::from(&c.stream)
        .set_recv_buffer_size(4 << 20)
        .expect("SO_RCVBUF");
    let r = c
        .response_within("GET", Duration::from_secs(60))
        .expect("the whole response");
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), LARGE);
    assert!(r.body == pattern(LARGE), "the body arrived changed");
    finished_first
}

#[test]
fn a_slow_client_does_not_hold_the_upstream_when_the_body_spills() {
    assert!(
        slow_client(""),
        "the upstream should finish into the temp file"
    );
}

#[test]
fn without_temp_files_a_slow_client_holds_the_upstream() {
    assert!(
        !slow_client("proxy_max_temp_file_size 0;"),
        "nothing may spill: the upstream must wait for the client"
    );
}

/// A body of 16-byte records, each its own offset in decimal: a piece of
/// it says where in the body it was.
fn records(n: usize) -> Vec<u8> {
    (0..n / 16)
        .flat_map(|i| format!("{:015}\n", i * 16).into_bytes())
        .collect()
}

/// The first 64 bytes of the temp files (possibly unlinked) some process
/// holds open under `dir`, found through `/proc/*/fd`.
fn open_temp_files(dir: &std::path::Path) -> Vec<Vec<u8>> {
    let mut found = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    for p in procs.flatten() {
        if !p
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|l| l.starts_with(dir)) {
                if let Ok(mut f) = std::fs::File::open(fd.path()) {
                    let mut head = vec![0; 64];
                    if let Ok(n) = std::io::Read::read(&mut f, &mut head) {
                        head.truncate(n);
                        found.push(head);
                    }
                }
            }
        }
    }
    found
}

/// Where in the body the first whole record of `head` (the start of a
/// temp file) is.
fn first_offset(head: &[u8]) -> u64 {
    let start = head.iter().position(|&b| b == b'\n').expect("a record end") + 1;
    let digits = std::str::from_utf8(&head[start..start + 15]).expect("digits");
    digits.parse::<u64>().expect("an offset") - start as u64
}

/// With `proxy_busy_buffers_size busy`, a client that reads nothing, and
/// more body than the buffers hold: where in the body the temp file
/// begins, once the upstream has sent it all.
fn spilled_from(busy: &str) -> u64 {
    const SIZE: usize = 1 << 20;
    let done = Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    let up = Upstream::start(move |c| {
        if c.read_request().is_some() {
            let mut out =
                format!("HTTP/1.1 200 OK\r\nContent-Length: {SIZE}\r\nConnection: close\r\n\r\n")
                    .into_bytes();
            out.extend_from_slice(&records(SIZE));
            if c.write(&out) {
                flag.store(true, Ordering::SeqCst);
            }
        }
    });
    let temp = common::TempDir::new("busy");
    // The workers may run as another user than the test.
    common::tmp::set_mode(temp.path(), 0o777);
    let text = conf(
        Some(&up),
        "",
        &format!(
            "location / {{ proxy_pass http://UP; proxy_buffers 16 4k; proxy_buffer_size 4k; \
             proxy_busy_buffers_size {busy}; proxy_temp_file_write_size 8k; \
             proxy_temp_path {}; }}",
            temp.path().display()
        ),
    )
    .replace(
        "listen 127.0.0.1:{port};",
        "listen 127.0.0.1:{port} sndbuf=4k;",
    );
    let server = Server::tested(&text);
    let mut c = Conn::open(server.port());
    // A small window: what the sockets take is little beside the busy sizes.
    socket2::SockRef::from(&c.stream)
        .set_recv_buffer_size(4096)
        .expect("SO_RCVBUF");
    c.send(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert!(
        until(Duration::from_secs(8), || done.load(Ordering::SeqCst)),
        "busy {busy}: the upstream should finish into the temp file"
    );
    let mut files = Vec::new();
    until(Duration::from_secs(5), || {
        files = open_temp_files(temp.path());
        !files.is_empty()
    });
    assert_eq!(files.len(), 1, "busy {busy}: the temp file of the response");
    // The whole body through the clamped window would take long: that a
    // spilled body arrives whole is
    // `a_slow_client_does_not_hold_the_upstream_when_the_body_spills`.
    first_offset(&files[0])
}

/// `proxy_busy_buffers_size` is how much of what the slow client has not
/// taken stays in memory for it; what was read after that is what goes to
/// the temp file when the buffers are full (nginx's `p->in`), so the temp
/// file begins further into the body the larger the busy size. Ignored,
/// the file would begin where the buffers end, whatever the busy size.
#[test]
fn the_busy_buffers_stay_in_memory_and_what_follows_spills() {
    let small = spilled_from("8k");
    let large = spilled_from("56k");
    // The busy bytes were not spilled (one 4k buffer of slack: nginx
    // counts the buffer the head came in).
    assert!(small >= 4 << 10, "busy 8k: the file begins at {small}");
    assert!(large >= 52 << 10, "busy 56k: the file begins at {large}");
    // 48k apart, less what the sockets took in each run.
    assert!(
        large >= small + (24 << 10),
        "the file begins at {small} with busy 8k, at {large} with busy 56k"
    );
}

/// An upstream that sends a head and `first`, waits, then `second`.
fn two_steps(extra_header: &'static str) -> Upstream {
    Upstream::start(move |c| {
        if c.read_request().is_some() {
            c.write(
                format!(
                    "HTTP/1.1 200 OK\r\n{extra_header}Content-Length: 11\r\n\
                     Connection: close\r\n\r\nfirst"
                )
                .as_bytes(),
            );
            c.sleep(1000);
            c.write(b"second");
        }
    })
}

/// Whether `first` reached the client while the upstream was waiting.
fn streamed(up: &Upstream, location_extra: &str) -> bool {
    let server = start(
        up,
        "",
        &format!("location / {{ proxy_pass http://UP; {location_extra} }}"),
    );
    let mut c = Conn::open(server.port());
    c.send(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let early = until(Duration::from_millis(700), || {
        c.quiet_for(Duration::from_millis(20));
        c.pending().ends_with(b"\r\n\r\nfirst")
    });
    let r = c.response().expect("the whole response");
    assert_eq!(body(&r), "firstsecond");
    early
}

#[test]
fn proxy_buffering_off_and_x_accel_buffering_no_pass_bytes_as_they_come() {
    assert!(streamed(&two_steps(""), "proxy_buffering off;"));
    let up = two_steps("X-Accel-Buffering: no\r\n");
    assert!(streamed(&up, ""));
}

#[test]
fn proxy_limit_rate_paces_the_upstream_read() {
    const SIZE: usize = 60_000;
    let mut answer =
        format!("HTTP/1.1 200 OK\r\nContent-Length: {SIZE}\r\nConnection: close\r\n\r\n")
            .into_bytes();
    answer.extend_from_slice(&pattern(SIZE));
    let up = Upstream::fixed(&answer);
    let server = start(
        &up,
        "",
        "location / { proxy_pass http://UP; proxy_limit_rate 40k; }",
    );
    let t0 = Instant::now();
    let r = get(&server, "/");
    assert_eq!(r.body.len(), SIZE);
    // 60 000 bytes at 40 KiB/s: at least about a second.
    assert!(
        t0.elapsed() >= Duration::from_millis(900),
        "{:?}",
        t0.elapsed()
    );
}

/// A client that stops reading a streamed body is cut after
/// `send_timeout` (the timer is armed only when a write has to wait: a
/// regression test for arming it lazily), buffered or not.
#[test]
fn a_client_that_stops_reading_a_proxied_body_is_closed_after_send_timeout() {
    for buffering in ["on", "off"] {
        let up = large_upstream(Arc::new(AtomicBool::new(false)));
        let text = common::Conf::http(&format!(
            "server {{\n listen 127.0.0.1:{{port}} sndbuf=64k;\n server_name localhost;\n\
             send_timeout 1s;\n\
             location / {{ proxy_pass http://{}; proxy_buffering {buffering}; \
             proxy_max_temp_file_size 0; }}\n}}\n",
            up.addr()
        ))
        .main("error_log err.log info;")
        .render();
        let server = Server::tested(&text);
        let mut c = Conn::open(server.port());
        socket2::SockRef::from(&c.stream)
            .set_recv_buffer_size(16 * 1024)
            .expect("SO_RCVBUF");
        c.send(b"GET /large HTTP/1.1\r\nHost: localhost\r\n\r\n");
        let log = server.prefix().join("err.log");
        assert!(
            until(Duration::from_secs(15), || {
                let text = common::wait::read_text(&log);
                text.contains("client timed out") && text.contains("while sending")
            }),
            "buffering {buffering}: no send timeout logged:\n{}",
            common::wait::read_text(&log)
        );
        assert_eq!(
            c.wait_closed(Duration::from_secs(20)),
            common::State::Closed,
            "buffering {buffering}: the connection stays open"
        );
        assert!(
            c.pending().len() < LARGE,
            "buffering {buffering}: the whole body arrived"
        );

        // A client that reads steadily for longer than `send_timeout`, each
        // wait shorter than it, gets the whole body: the timeout runs from
        // the last write, not from the start of the response.
        let mut c = Conn::open(server.port());
        c.send(b"GET /large HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        let started = Instant::now();
        let mut got = 0usize;
        // At most 256 KiB per 25 ms: 10 MB/s, so the body takes over 2 s.
        let mut buf = vec![0u8; 256 * 1024];
        c.stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        loop {
            match std::io::Read::read(&mut c.stream, &mut buf) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) => panic!("buffering {buffering}: read failed after {got} bytes: {e}"),
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        assert!(
            got > LARGE,
            "buffering {buffering}: {got} bytes in {:?}, the body is {LARGE}",
            started.elapsed()
        );
    }
}
