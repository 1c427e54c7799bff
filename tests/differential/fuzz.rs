//! The differential request fuzzer: mutates requests of the differential
//! corpus, sends each to nginx and to nowait (one fresh connection each, at
//! the same time), and sorts the outcomes that differ into classes.
//!
//! Each case is `mutate(seed, index)`: the same seed and index always give
//! the same bytes, so any example a report prints can be replayed.
//!
//! One exchange ([`probe`]): write the bytes, read until the server closes
//! or stays quiet for a moment ("closed" means it closed by itself), then
//! half-close our side and read to the end (a server that does not close
//! within [`HANG_LIMIT`] after that is "hung"). Compared: how many
//! responses came, each one's status line (or its absence: nginx answers
//! some malformed request lines the HTTP/0.9 way), the headers in
//! [`FUZZ_HEADERS`], the body once server names are normalized, and
//! whether the connection was closed. A mismatch seen with the short quiet
//! time is run again with a long one before it counts, so that a slow
//! scheduler cannot make one.
//!
//! In proxy mode the same requests go to two proxies, each in front of its
//! own [`Origin`], which records the heads it receives; what each proxy
//! forwarded (request line and header lines, bodies, ports normalized) is
//! compared as well.

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::common::{Exchange, request_methods};
use crate::compare::{Outcome, show};

/// How long a server may stay quiet before we take its answer as complete.
pub const QUIET: Duration = Duration::from_millis(10);
/// The quiet time when a mismatch is checked again.
pub const QUIET_CONFIRM: Duration = Duration::from_millis(300);
/// How long a server may take to close after our half-close.
pub const HANG_LIMIT: Duration = Duration::from_secs(3);
/// How long connect() may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// The longest mutated request.
const MAX_CASE: usize = 16 * 1024;
/// Seeds longer than this are left out (bodies of megabytes teach the head
/// parser nothing).
const MAX_SEED: usize = 8 * 1024;
/// A long run says how far it is every this many cases.
const PROGRESS_EVERY: usize = 10_000;
/// Response headers compared: those that say how the answer is framed,
/// what it is and whether the connection stays.
pub const FUZZ_HEADERS: &[&str] = &[
    "Content-Length",
    "Content-Type",
    "Content-Range",
    "Location",
    "Connection",
    "Transfer-Encoding",
    "ETag",
    "Last-Modified",
];

/// splitmix64: small, fast, and the same everywhere.
pub struct Rng(u64);

impl Rng {
    /// A generator for case `index` of the run seeded with `seed`.
    pub fn new(seed: u64, index: u64) -> Rng {
        let mut r = Rng(seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        r.next();
        r
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Single bytes that parsers treat specially.
const BYTES: &[u8] = &[
    0x00, 0x01, 0x08, b'\t', b'\n', 0x0b, 0x0c, b'\r', 0x1f, b' ', b'"', b'#', b'%', b'.', b'/',
    b':', b';', b'?', b'\\', b'_', b'-', 0x7f, 0x80, 0xc3, 0xff, b'a', b'A', b'0', b'9', b'H',
];

/// Pieces of requests inserted whole.
const TOKENS: &[&[u8]] = &[
    b"\r\n",
    b"\n",
    b"\r",
    b" ",
    b"  ",
    b"\t",
    b"\r\n\r\n",
    b"HTTP/1.1",
    b"HTTP/1.0",
    b"HTTP/2.0",
    b"HTTP/11",
    b"HTTP/1.",
    b"HTTP/0.9",
    b"HTTP/1.10",
    b"http/1.1",
    b"Host: localhost\r\n",
    b"Host: \r\n",
    b"Host: a b\r\n",
    b"Content-Length: 3\r\n",
    b"Content-Length: -1\r\n",
    b"Content-Length: 1, 1\r\n",
    b"Transfer-Encoding: chunked\r\n",
    b"Transfer-Encoding: gzip, chunked\r\n",
    b"Connection: close\r\n",
    b"Connection: keep-alive\r\n",
    b"Expect: 100-continue\r\n",
    b"Range: bytes=0-1\r\n",
    b"a_b: c\r\n",
    b"foo bar\r\n",
    b" folded\r\n",
    b"X: \x01\x7f\r\n",
    b": empty\r\n",
    b"%2",
    b"%00",
    b"%2e%2e",
    b"/../",
    b"//",
    b"/./",
    b"?a=b",
    b"#frag",
    b"http://localhost",
    b"*",
    b"GET ",
    b"HEAD ",
    b"POST ",
    b"0\r\n\r\n",
];

/// Applies one to three mutations to a seed request.
pub fn mutate(seeds: &[Vec<u8>], seed: u64, index: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed, index);
    let mut b = rng.pick(seeds).clone();
    for _ in 0..1 + rng.below(3) {
        mutate_once(&mut rng, &mut b, seeds);
    }
    b.truncate(MAX_CASE);
    b
}

fn mutate_once(rng: &mut Rng, b: &mut Vec<u8>, seeds: &[Vec<u8>]) {
    let at = |rng: &mut Rng, b: &Vec<u8>| rng.below(b.len() + 1);
    match rng.below(12) {
        0 if !b.is_empty() => {
            let i = rng.below(b.len());
            b[i] = rng.next() as u8;
        }
        1 | 2 if !b.is_empty() => {
            let i = rng.below(b.len());
            b[i] = *rng.pick(BYTES);
        }
        3 => {
            let i = at(rng, b);
            let c = *rng.pick(BYTES);
            b.insert(i, c);
        }
        4 | 5 => {
            let i = at(rng, b);
            let t = rng.pick(TOKENS);
            b.splice(i..i, t.iter().copied());
        }
        6 if !b.is_empty() => {
            let i = rng.below(b.len());
            let n = 1 + rng.below(8);
            b.drain(i..(i + n).min(b.len()));
        }
        7 => {
            // Truncate.
            let i = at(rng, b);
            b.truncate(i);
        }
        8 | 9 => {
            // Delete, duplicate or move a line.
            let lines = split_lines(b);
            if lines.is_empty() {
                return;
            }
            let (s, e) = *rng.pick(&lines);
            let line = b[s..e].to_vec();
            match rng.below(3) {
                0 => {
                    b.drain(s..e);
                }
                1 => {
                    b.splice(e..e, line);
                }
                _ => {
                    b.drain(s..e);
                    let (t, _) = *rng.pick(
                        &split_lines(b)
                            .into_iter()
                            .chain([(0, 0)])
                            .collect::<Vec<_>>(),
                    );
                    b.splice(t..t, line);
                }
            }
        }
        10 => {
            // A line of another seed.
            let other = rng.pick(seeds);
            let lines = split_lines(other);
            if lines.is_empty() {
                return;
            }
            let (s, e) = *rng.pick(&lines);
            let i = line_start(b, at(rng, b));
            b.splice(i..i, other[s..e].iter().copied());
        }
        _ if !b.is_empty() => {
            let i = rng.below(b.len());
            b[i] ^= 0x20;
        }
        _ => b.push(*rng.pick(BYTES)),
    }
}

/// Each line's start and end (its LF included).
fn split_lines(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut s = 0;
    for (i, &c) in b.iter().enumerate() {
        if c == b'\n' {
            out.push((s, i + 1));
            s = i + 1;
        }
    }
    if s < b.len() {
        out.push((s, b.len()));
    }
    out
}

/// The start of the line holding offset `i`.
fn line_start(b: &[u8], i: usize) -> usize {
    b[..i]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1)
}

/// The seeds: every case of the differential corpus, its segments joined,
/// short enough to mutate.
pub fn seeds(corpus: &[crate::corpus::Case]) -> Vec<Vec<u8>> {
    corpus
        .iter()
        .map(|c| c.segments.concat())
        .filter(|b| b.len() <= MAX_SEED)
        .collect()
}

/// What one server did with one case.
#[derive(Debug, Default)]
pub struct Probe {
    /// Every byte it sent.
    pub bytes: Vec<u8>,
    /// It closed before we half-closed.
    pub closed: bool,
    /// It did not close within [`HANG_LIMIT`] after our half-close.
    pub hung: bool,
}

/// Sends `request` to `port` on a fresh connection; see the module header.
pub fn probe(port: u16, request: &[u8], quiet: Duration) -> Probe {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)
        .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    let _ = stream.set_nodelay(true);
    let mut out = Probe::default();
    // The server may close before reading everything: a failed write is
    // part of the outcome, not an error of the fuzzer.
    let _ = stream.write_all(request);
    out.closed = read_until(&mut stream, &mut out.bytes, quiet);
    if !out.closed {
        let _ = stream.shutdown(Shutdown::Write);
        out.hung = !read_until(&mut stream, &mut out.bytes, HANG_LIMIT);
    }
    out
}

/// Reads into `bytes` until the peer closes (true) or sends nothing for
/// `quiet` (false).
fn read_until(stream: &mut TcpStream, bytes: &mut Vec<u8>, quiet: Duration) -> bool {
    let _ = stream.set_read_timeout(Some(quiet));
    let mut buf = [0u8; 64 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false;
            }
            Err(_) => return true,
        }
    }
}

/// One server's outcome in brief: statuses (`0.9` for a reply without a
/// status line), then `closed`, `open` or `hung`. Holds no colon, so that
/// it can name a class in `known-differences.txt`.
fn signature(o: &Outcome, p: &Probe) -> String {
    let mut parts: Vec<String> = o
        .parsed
        .responses
        .iter()
        .map(|r| {
            if r.status == 0 {
                "0.9".to_string()
            } else {
                r.status.to_string()
            }
        })
        .collect();
    if parts.is_empty() {
        parts.push("none".into());
    }
    if o.parsed.error.is_some() {
        parts.push("malformed".into());
    }
    let end = if p.hung {
        "hung"
    } else if p.closed {
        "closed"
    } else {
        "open"
    };
    format!("{} {end}", parts.join(","))
}

/// The class of a case's difference, `None` when the outcomes agree.
pub fn classify(
    request: &[u8],
    (a, a_port): (&Probe, u16),
    (b, b_port): (&Probe, u16),
) -> Option<String> {
    let methods = request_methods(request);
    let outcome = |p: &Probe, port: u16| {
        let exchange = Exchange {
            bytes: p.bytes.clone(),
            closed: true,
            ..Exchange::default()
        };
        Outcome::new(&exchange, &methods, port)
    };
    let (oa, ob) = (outcome(a, a_port), outcome(b, b_port));
    let (sa, sb) = (signature(&oa, a), signature(&ob, b));
    let (ra, ea) = sa.rsplit_once(' ').unwrap_or((&sa, ""));
    let (rb, eb) = sb.rsplit_once(' ').unwrap_or((&sb, ""));
    if ra != rb {
        return Some(format!("nginx {sa} / nowait {sb}"));
    }
    // The same statuses: the class names every field that differs, so that
    // a listed class excuses those fields only.
    let fields = differing_fields(&oa, &ob);
    match (ea != eb, fields.is_empty()) {
        (false, true) => None,
        // The same responses; only the connection's end differs.
        (true, true) => Some(format!("same responses, nginx {ea} / nowait {eb}")),
        (true, false) => Some(format!(
            "nginx {sa} / nowait {eb} / differs in {}",
            fields.join(", ")
        )),
        (false, false) => Some(format!("nginx {sa} / differs in {}", fields.join(", "))),
    }
}

/// The fields of the responses two servers sent that differ, in order.
fn differing_fields(oa: &Outcome, ob: &Outcome) -> Vec<String> {
    let mut fields = Vec::new();
    for (ra, rb) in oa.parsed.responses.iter().zip(&ob.parsed.responses) {
        if ra.status_line != rb.status_line {
            fields.push("status line".to_string());
        }
        for h in FUZZ_HEADERS {
            if ra.header(h) != rb.header(h) {
                fields.push(format!("header {h}"));
            }
        }
        if ra.body != rb.body {
            fields.push("body".into());
        }
    }
    if oa.parsed.rest != ob.parsed.rest {
        fields.push("unparsed bytes".into());
    }
    fields.dedup();
    fields
}

/// A raw-bytes origin for proxy mode: answers every request with a fixed
/// `200` and closes, recording each request's head and body as received.
pub struct Origin {
    /// Where it listens.
    pub port: u16,
    /// The requests received, in order.
    got: Arc<Mutex<Vec<Vec<u8>>>>,
    /// Set on drop.
    stop: Arc<AtomicBool>,
    /// The accepting thread.
    thread: Option<JoinHandle<()>>,
}

/// What the origin answers.
const ORIGIN_ANSWER: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\nX-Origin: 1\r\n\r\norigin\n";
/// How long the origin waits for a request's bytes.
const ORIGIN_READ: Duration = Duration::from_secs(2);

impl Origin {
    /// Listens on a free loopback port.
    pub fn start() -> Origin {
        let listener =
            TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap_or_else(|e| panic!("bind: {e}"));
        let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
        let got = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (got, stop) = (got.clone(), stop.clone());
            thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    if let Ok(mut conn) = conn {
                        // Recorded before answering: once the client has
                        // the answer, the record is there.
                        let request = origin_read(&mut conn);
                        got.lock().unwrap_or_else(|e| e.into_inner()).push(request);
                        let _ = conn.write_all(ORIGIN_ANSWER);
                    }
                }
            })
        };
        Origin {
            port,
            got,
            stop,
            thread: Some(thread),
        }
    }

    /// Takes the requests received since the last call.
    pub fn take(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.got.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One request's head and its body per `Content-Length`, as far as it
/// comes within [`ORIGIN_READ`].
fn origin_read(conn: &mut TcpStream) -> Vec<u8> {
    let _ = conn.set_read_timeout(Some(ORIGIN_READ));
    let mut b = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        if let Some(end) = b.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&b[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if b.len() >= end + 4 + len {
                return b;
            }
        }
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return b,
            Ok(n) => b.extend_from_slice(&buf[..n]),
        }
    }
}

/// What a proxy forwarded, ports normalized, for comparison.
pub fn forwarded(got: &[Vec<u8>], origin_port: u16) -> String {
    let port = origin_port.to_string();
    got.iter()
        .map(|r| String::from_utf8_lossy(r).replace(&port, "ORIGIN"))
        .collect::<Vec<_>>()
        .join("|")
}

/// The class of a forwarding difference: which part differs first.
pub fn forward_class(a: &str, b: &str) -> Option<String> {
    if a == b {
        return None;
    }
    let (ra, rb): (Vec<&str>, Vec<&str>) = (a.split('|').collect(), b.split('|').collect());
    if ra.len() != rb.len() || a.is_empty() != b.is_empty() {
        return Some(format!(
            "forwarded {} / {} requests",
            if a.is_empty() { 0 } else { ra.len() },
            if b.is_empty() { 0 } else { rb.len() }
        ));
    }
    for (x, y) in ra.iter().zip(&rb) {
        let (lx, ly): (Vec<&str>, Vec<&str>) =
            (x.split("\r\n").collect(), y.split("\r\n").collect());
        if lx.first() != ly.first() {
            return Some("forwarded request line".into());
        }
        let names = |ls: &[&str]| -> Vec<String> {
            ls.iter()
                .skip(1)
                .map(|l| l.split(':').next().unwrap_or("").to_ascii_lowercase())
                .collect()
        };
        let (nx, ny) = (names(&lx), names(&ly));
        if nx != ny {
            return Some("forwarded header names".into());
        }
        for ((name, l1), l2) in nx.iter().zip(lx.iter().skip(1)).zip(ly.iter().skip(1)) {
            if l1 != l2 {
                return Some(format!("forwarded header {name}"));
            }
        }
    }
    Some("forwarded body".into())
}

/// A case's class and both replies, or `None` when the outcomes agree.
pub type Found = Option<(String, Vec<u8>, Vec<u8>)>;

/// A class's count, and its shortest example: index, request, nginx's and
/// nowait's replies.
pub type Example = (usize, u64, Vec<u8>, Vec<u8>, Vec<u8>);

/// The differences found: per class, how many and the shortest example.
#[derive(Default)]
pub struct Report {
    /// Cases run.
    pub cases: usize,
    /// Cases whose outcomes agree.
    pub same: usize,
    /// Cases where a server hung.
    pub hung: usize,
    /// Class → (count, index of the shortest example, its bytes, nginx's
    /// and nowait's replies).
    pub classes: BTreeMap<String, Example>,
}

impl Report {
    /// Records one case's result.
    pub fn add(&mut self, index: u64, request: &[u8], class: Found) {
        self.cases += 1;
        let Some((class, a, b)) = class else {
            self.same += 1;
            return;
        };
        if class.contains("hung") {
            self.hung += 1;
        }
        let e = self
            .classes
            .entry(class)
            .or_insert_with(|| (0, index, request.to_vec(), a.clone(), b.clone()));
        e.0 += 1;
        if request.len() < e.2.len() {
            (e.1, e.2, e.3, e.4) = (index, request.to_vec(), a, b);
        }
    }

    /// The report as text: totals, then each class with its example.
    pub fn render(&self, seed: u64, known: &BTreeMap<String, String>) -> String {
        let pct = if self.cases == 0 {
            100.0
        } else {
            100.0 * self.same as f64 / self.cases as f64
        };
        let mut out = format!(
            "seed {seed}: {} cases, {} identical ({pct:.3}%), {} classes of differences, {} hung\n",
            self.cases,
            self.same,
            self.classes.len(),
            self.hung
        );
        for (class, (count, index, req, a, b)) in &self.classes {
            let reason = known
                .get(class)
                .map_or("NOT LISTED".to_string(), |r| format!("known: {r}"));
            out.push_str(&format!(
                "\n[{count}] {class}\n  {reason}\n  example (index {index}): {}\n  nginx:  {}\n  nowait: {}\n",
                show(req),
                show(&a[..a.len().min(400)]),
                show(&b[..b.len().min(400)])
            ));
        }
        out
    }
}

/// Runs cases `0..count` until all are done or `deadline` passes, on
/// `jobs` threads; `run` does case `i` and returns its bytes and class.
pub fn run_many(
    count: u64,
    deadline: Instant,
    jobs: usize,
    run: &(dyn Fn(u64) -> (Vec<u8>, Found) + Sync),
) -> Report {
    let next = AtomicUsize::new(0);
    let report = Mutex::new(Report::default());
    thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed) as u64;
                    if i >= count || Instant::now() >= deadline {
                        return;
                    }
                    let (request, class) = run(i);
                    let mut report = report.lock().unwrap_or_else(|e| e.into_inner());
                    report.add(i, &request, class);
                    if report.cases % PROGRESS_EVERY == 0 {
                        eprintln!(
                            "fuzz: {} cases, {} identical, {} classes",
                            report.cases,
                            report.same,
                            report.classes.len()
                        );
                    }
                }
            });
        }
    });
    report.into_inner().unwrap_or_else(|e| e.into_inner())
}
