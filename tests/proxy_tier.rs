//! A cache tier scaled out the way nginx users do it: edge nodes with
//! `hash $request_uri consistent` in front of shard nodes. Three nowait
//! shards; one nowait edge and one nginx edge with the same `upstream`
//! block. Every key must land on the same shard through either edge (so a
//! tier may mix nowait and nginx nodes), and removing one shard from the
//! ring (a reload of both edges) must move only that shard's keys — about
//! a third of them.

mod common;

use std::time::{Duration, Instant};

use common::client::get;
use common::{Conf, Server};

/// Keys requested through the edges.
const KEYS: usize = 300;

fn shard(n: usize) -> Server {
    Server::nowait(&Conf::server(&format!("location / {{ return 200 \"shard-{n}\"; }}")).render())
}

fn edge_conf(shards: &[&Server]) -> String {
    let servers: String = shards
        .iter()
        .map(|s| format!("  server 127.0.0.1:{};\n", s.port()))
        .collect();
    Conf::http(&format!(
        "upstream shards {{\n  hash $request_uri consistent;\n{servers}}}\n\
         server {{\n listen 127.0.0.1:{{port}};\n location / {{ proxy_pass http://shards; }}\n}}\n"
    ))
    .render()
}

/// The shard each key lands on through `edge`.
fn placement(edge: &Server) -> Vec<String> {
    (0..KEYS)
        .map(|i| {
            let r = get(edge.port(), &format!("/object/{i}?v=1"));
            assert_eq!(r.status, 200, "key {i}");
            common::body(&r)
        })
        .collect()
}

#[test]
fn nowait_and_nginx_edges_agree_and_a_removed_shard_moves_only_its_keys() {
    let shards = [shard(1), shard(2), shard(3)];
    let all: Vec<&Server> = shards.iter().collect();
    let edges = [
        Server::nowait(&edge_conf(&all)),
        Server::nginx(&edge_conf(&all)),
    ];
    let before = placement(&edges[0]);
    assert_eq!(
        before,
        placement(&edges[1]),
        "nowait and nginx place every key on the same shard"
    );
    for n in 1..=3 {
        let count = before
            .iter()
            .filter(|s| **s == format!("shard-{n}"))
            .count();
        assert!(
            count > KEYS / 6,
            "shard-{n} holds {count} of {KEYS} keys: the ring spreads them"
        );
    }

    // Shard 2 leaves the ring: both edges reload without it.
    let without = edge_conf(&[&shards[0], &shards[2]]);
    for e in &edges {
        e.write_conf(&without);
        e.signal("HUP");
    }
    // The reload is done when a key that was on shard 2 goes elsewhere.
    let probe = before
        .iter()
        .position(|s| s == "shard-2")
        .expect("shard 2 held keys");
    for e in &edges {
        let deadline = Instant::now() + Duration::from_secs(10);
        while common::body(&get(e.port(), &format!("/object/{probe}?v=1"))) == "shard-2" {
            assert!(Instant::now() < deadline, "the reload took effect");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let after = placement(&edges[0]);
    assert_eq!(after, placement(&edges[1]), "the edges still agree");
    let mut moved = 0;
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        if b == "shard-2" {
            assert_ne!(a, "shard-2", "key {i} left the removed shard");
            moved += 1;
        } else {
            assert_eq!(a, b, "key {i} was on {b}: it stays");
        }
    }
    let share = moved as f64 / KEYS as f64;
    assert!(
        (0.2..0.47).contains(&share),
        "about a third of the keys move: {moved} of {KEYS}"
    );
}
