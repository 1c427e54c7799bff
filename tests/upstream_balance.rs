//! Differential test of the upstream balancer: the real nginx 1.22 proxies
//! to three tiny backends that answer with their letter, and nowait's
//! `PeerGroup` (given the same `server` strings) must choose the same
//! backend for every request: `hash KEY` and `hash KEY consistent` (equal
//! weights, a weighted server, a `down` server), `ip_hash` (client
//! addresses set with the realip module), the smooth weighted round robin
//! and `least_conn` on sequential requests, and `split_clients`' part.
//!
//! The backends' ports are new each run, so each run checks other rings.
//!
//! Needs `/usr/sbin/nginx` (Debian's nginx): run
//! `scripts/install-test-deps.sh` as root.
//!
//! Run: `cargo test --test upstream_balance`

mod common;

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::server::NGINX_BIN;
use common::{Conf, Server, parse_responses, raw_exchange};
use nowait::upstream::split::{SplitClients, parse_percent};
use nowait::upstream::{Balance, Outcome, PeerGroup, PeerSpec, Pick, PickCtx, Tried};

/// Keys requested per hash case.
const KEYS: usize = 300;
/// How long a backend waits for a request head before giving up on it.
const BACKEND_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// The letters the backends answer with, in port order.
const LETTERS: [u8; 3] = *b"ABC";

/// Three backends on loopback, each answering any request with its letter
/// (`HTTP/1.0 200`, `Content-Length: 1`) and closing; stopped on drop.
struct Backends {
    /// Their addresses, in letter order.
    addrs: Vec<SocketAddr>,
    /// Tells the accept loops to end.
    stop: Arc<AtomicBool>,
    /// The accept loops.
    threads: Vec<JoinHandle<()>>,
}

impl Backends {
    fn start() -> Backends {
        let stop = Arc::new(AtomicBool::new(false));
        let mut addrs = Vec::new();
        let mut threads = Vec::new();
        for letter in LETTERS {
            let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .unwrap_or_else(|e| panic!("bind a backend: {e}"));
            addrs.push(listener.local_addr().expect("backend address"));
            let stop = Arc::clone(&stop);
            threads.push(std::thread::spawn(move || serve(&listener, letter, &stop)));
        }
        Backends {
            addrs,
            stop,
            threads,
        }
    }

    /// The `server` lines' addresses, as written in the configuration.
    fn servers(&self) -> Vec<String> {
        self.addrs.iter().map(SocketAddr::to_string).collect()
    }
}

impl Drop for Backends {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for addr in &self.addrs {
            // Wake the blocking accept so it sees the flag.
            let _ = TcpStream::connect(addr);
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// One backend's accept loop.
fn serve(listener: &TcpListener, letter: u8, stop: &AtomicBool) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut conn) = conn else { continue };
        let _ = conn.set_read_timeout(Some(BACKEND_READ_TIMEOUT));
        // Read the head before answering, so that closing sends no reset.
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match conn.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let mut reply = b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n".to_vec();
        reply.push(letter);
        let _ = conn.write_all(&reply);
    }
}

fn require_nginx() {
    assert!(
        Path::new(NGINX_BIN).exists(),
        "{NGINX_BIN} is missing: the upstream differential test needs the real nginx. \
         Install it with scripts/install-test-deps.sh (as root)."
    );
}

/// nginx with `upstream u { <method> <servers> }` proxied at `/`.
fn nginx_upstream(method: &str, servers: &[String], params: &[&str]) -> Server {
    let lines: String = servers
        .iter()
        .zip(params)
        .map(|(s, p)| format!("  server {s} {p};\n"))
        .collect();
    let conf = Conf::http(&format!(
        "upstream u {{\n  {method}\n{lines}}}\n\
         server {{\n listen 127.0.0.1:{{port}};\n server_name localhost;\n \
         set_real_ip_from 127.0.0.1;\n real_ip_header X-Real-IP;\n \
         location / {{ proxy_pass http://u; }}\n}}\n"
    ))
    .render();
    Server::nginx(&conf)
}

/// The body of `GET <target>` with `extra` header lines; panics unless 200.
fn get(server: &Server, target: &str, extra: &str) -> Vec<u8> {
    let request = format!("GET {target} HTTP/1.0\r\nHost: localhost\r\n{extra}\r\n");
    let bytes = raw_exchange(server.port(), request.as_bytes());
    let parsed = parse_responses(&bytes, &["GET".to_string()], true);
    let response = parsed.responses.first().unwrap_or_else(|| {
        panic!(
            "no response to {target}: {:?}; nginx stderr:\n{}",
            String::from_utf8_lossy(&bytes),
            server.stderr()
        )
    });
    assert_eq!(response.status, 200, "{target}: {}", server.stderr());
    response.body.clone()
}

/// Which backend answered `GET <target>`.
fn backend_of(server: &Server, target: &str, extra: &str) -> usize {
    let body = get(server, target, extra);
    LETTERS
        .iter()
        .position(|l| body == [*l])
        .unwrap_or_else(|| panic!("{target}: unexpected body {body:?}"))
}

/// The group nowait would build from the same `server` lines.
fn group(servers: &[String], params: &[&str], balance: Balance) -> PeerGroup {
    let specs = servers
        .iter()
        .zip(params)
        .map(|(s, p)| {
            let addr: SocketAddr = s.parse().expect("a loopback address");
            let mut spec = PeerSpec::inet(addr);
            for param in p.split_whitespace() {
                match param.split_once('=') {
                    Some(("weight", w)) => spec.weight = w.parse().expect("a weight"),
                    None if param == "down" => spec.down = true,
                    _ => panic!("parameter {param} not used by these tests"),
                }
            }
            spec
        })
        .collect();
    PeerGroup::new(specs, vec![], balance).expect("a valid group")
}

/// nowait's choice for one request that succeeds at once.
fn choose(group: &PeerGroup, ctx: &PickCtx<'_>) -> usize {
    let mut tried = Tried::new(group);
    let now = Instant::now();
    match group.pick(ctx, &mut tried, now) {
        Pick::Peer(id) => {
            group.done(&mut tried, id, Outcome::Ok, now);
            id.index()
        }
        Pick::NoLive => panic!("no live upstreams"),
    }
}

/// Requests `/?k=key<i>` from nginx and compares each backend with the
/// group's choice for the key; reports every mismatch.
fn compare_hash(method: &str, params: &[&str], consistent: bool) {
    require_nginx();
    let backends = Backends::start();
    let servers = backends.servers();
    let nginx = nginx_upstream(method, &servers, params);
    let group = group(&servers, params, Balance::Hash { consistent });
    let mut mismatches = Vec::new();
    let mut seen = [0usize; 3];
    for i in 0..KEYS {
        let key = format!("key{i}");
        let theirs = backend_of(&nginx, &format!("/?k={key}"), "");
        let ctx = PickCtx {
            client_ip: None,
            hash_key: Some(key.as_bytes()),
        };
        let ours = choose(&group, &ctx);
        seen[theirs] += 1;
        if theirs != ours {
            mismatches.push(format!("{key}: nginx {theirs}, nowait {ours}"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{method} with servers {servers:?} {params:?}: {} of {KEYS} differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    // The case proves something only if the keys spread.
    let live = params.iter().filter(|p| !p.contains("down")).count();
    let used = seen.iter().filter(|&&n| n > 0).count();
    assert_eq!(used, live, "keys per backend {seen:?}");
}

#[test]
fn consistent_hash_matches_nginx() {
    compare_hash("hash $arg_k consistent;", &["", "", ""], true);
}

#[test]
fn weighted_consistent_hash_matches_nginx() {
    compare_hash("hash $arg_k consistent;", &["", "weight=2", ""], true);
}

#[test]
fn consistent_hash_around_a_down_server_matches_nginx() {
    compare_hash("hash $arg_k consistent;", &["", "", "down"], true);
}

#[test]
fn hash_matches_nginx() {
    compare_hash("hash $arg_k;", &["", "", ""], false);
}

#[test]
fn weighted_hash_matches_nginx() {
    compare_hash("hash $arg_k;", &["weight=3", "", "weight=2"], false);
}

#[test]
fn hash_around_a_down_server_matches_nginx() {
    // The keys of the down server rehash with the round number.
    compare_hash("hash $arg_k;", &["", "down", ""], false);
}

/// Requests with client addresses (given in `X-Real-IP`) from nginx and
/// compares each backend with the group's choice for the address.
fn compare_ip_hash(params: &[&str]) {
    require_nginx();
    let backends = Backends::start();
    let servers = backends.servers();
    let nginx = nginx_upstream("ip_hash;", &servers, params);
    let group = group(&servers, params, Balance::IpHash);
    let mut clients: Vec<IpAddr> = (0..120u8)
        .map(|i| IpAddr::from([10, i, i.wrapping_mul(7), 1]))
        .collect();
    clients.extend((0..60u16).map(|i| IpAddr::from([0x2001, 0xdb8, i, 0, 0, 0, 0, i])));
    let mut mismatches = Vec::new();
    for client in clients {
        let theirs = backend_of(&nginx, "/", &format!("X-Real-IP: {client}\r\n"));
        let ctx = PickCtx {
            client_ip: Some(client),
            hash_key: None,
        };
        let ours = choose(&group, &ctx);
        if theirs != ours {
            mismatches.push(format!("{client}: nginx {theirs}, nowait {ours}"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "ip_hash {params:?}: {}",
        mismatches.join("\n")
    );
}

#[test]
fn ip_hash_matches_nginx() {
    compare_ip_hash(&["", "weight=2", ""]);
}

#[test]
fn ip_hash_around_a_down_server_matches_nginx() {
    // The clients of the down server rehash from their last value.
    compare_ip_hash(&["", "", "down"]);
}

/// Sequential requests: nginx's order and the group's must be the same.
fn compare_sequence(method: &str, balance: Balance) {
    require_nginx();
    let backends = Backends::start();
    let servers = backends.servers();
    let params = ["weight=5", "", ""];
    let nginx = nginx_upstream(method, &servers, &params);
    let group = group(&servers, &params, balance);
    let theirs: Vec<usize> = (0..21).map(|_| backend_of(&nginx, "/", "")).collect();
    let ours: Vec<usize> = (0..21)
        .map(|_| choose(&group, &PickCtx::default()))
        .collect();
    assert_eq!(theirs, ours, "{method}");
    assert_eq!(&ours[..7], [0, 0, 1, 0, 2, 0, 0]);
}

#[test]
fn round_robin_order_matches_nginx() {
    compare_sequence("", Balance::RoundRobin);
}

#[test]
fn least_conn_order_matches_nginx() {
    // One request at a time: every peer ties at 0 connections, and
    // least_conn's tie-break is the smooth round robin.
    compare_sequence("least_conn;", Balance::LeastConn);
}

#[test]
fn split_clients_matches_nginx() {
    require_nginx();
    let conf = Conf::http(
        "split_clients \"${arg_k}\" $b {\n  33.3% a;\n  33.3% b;\n  * c;\n}\n\
         server {\n listen 127.0.0.1:{port};\n server_name localhost;\n \
         location / { return 200 $b; }\n}\n",
    )
    .render();
    let nginx = Server::nginx(&conf);
    let percents: Vec<u32> = ["33.3%", "33.3%"]
        .iter()
        .map(|p| parse_percent(p).expect("a percentage"))
        .chain([0])
        .collect();
    let split = SplitClients::new(&percents).expect("valid parts");
    let mut mismatches = Vec::new();
    let mut seen = [0usize; 3];
    for i in 0..KEYS {
        let key = format!("key{i}");
        let theirs = get(&nginx, &format!("/?k={key}"), "");
        let ours = split.choose(key.as_bytes()).expect("`*` takes the rest");
        seen[ours] += 1;
        if theirs != [b"abc"[ours]] {
            mismatches.push(format!("{key}: nginx {theirs:?}, nowait part {ours}"));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    assert!(seen.iter().all(|&n| n > 0), "parts {seen:?}");
}
