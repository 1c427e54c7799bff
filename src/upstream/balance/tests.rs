//! Unit tests of the balancers. Expected values come from nginx 1.22.1's
//! C code (its hash functions and loops run on the same inputs).

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use super::hash::Ring;
use super::*;
use crate::upstream::peer::{PeerId, PeerSpec};

/// Peers 127.0.0.1:8081… with these weights.
fn peers(weights: &[u32]) -> Vec<PeerSpec> {
    weights
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            let port = 8081 + u16::try_from(i).expect("few peers");
            let mut s = PeerSpec::inet(SocketAddr::from(([127, 0, 0, 1], port)));
            s.weight = w;
            s
        })
        .collect()
}

fn group(primary: Vec<PeerSpec>, backup: Vec<PeerSpec>, balance: Balance) -> PeerGroup {
    PeerGroup::new(primary, backup, balance).expect("valid group")
}

/// `secs` seconds after the group's clock started.
fn at(g: &PeerGroup, secs: u64) -> Instant {
    g.epoch + Duration::from_secs(secs)
}

fn index(pick: Pick) -> Option<usize> {
    match pick {
        Pick::Peer(id) => Some(id.index()),
        Pick::NoLive => None,
    }
}

/// One request with one attempt that succeeds; the peer's index.
fn request(g: &PeerGroup, ctx: &PickCtx<'_>, secs: u64) -> Option<usize> {
    let mut tried = Tried::new(g);
    let pick = g.pick(ctx, &mut tried, at(g, secs));
    if let Pick::Peer(id) = pick {
        g.done(&mut tried, id, Outcome::Ok, at(g, secs));
    }
    index(pick)
}

/// One request whose one attempt fails; the peer's index.
fn failing_request(g: &PeerGroup, secs: u64) -> Option<usize> {
    let mut tried = Tried::new(g);
    let pick = g.pick(&PickCtx::default(), &mut tried, at(g, secs));
    if let Pick::Peer(id) = pick {
        g.done(&mut tried, id, Outcome::Failed, at(g, secs));
    }
    index(pick)
}

fn sequence(g: &PeerGroup, n: usize) -> Vec<usize> {
    (0..n)
        .map(|_| request(g, &PickCtx::default(), 0).expect("a peer"))
        .collect()
}

#[test]
fn smooth_weighted_5_1_1_is_nginx_order() {
    // nginx's documented order for weights 5, 1, 1: a a b a c a a.
    let g = group(peers(&[5, 1, 1]), vec![], Balance::RoundRobin);
    let once = [0, 0, 1, 0, 2, 0, 0];
    let twice: Vec<usize> = once.iter().chain(once.iter()).copied().collect();
    assert_eq!(sequence(&g, 14), twice);
}

#[test]
fn equal_weights_take_turns() {
    let g = group(peers(&[1, 1, 1]), vec![], Balance::RoundRobin);
    assert_eq!(sequence(&g, 6), vec![0, 1, 2, 0, 1, 2]);
}

#[test]
fn failed_peer_is_out_for_fail_timeout_whole_seconds() {
    let g = group(peers(&[1, 1]), vec![], Balance::RoundRobin);
    assert_eq!(failing_request(&g, 0), Some(0));
    assert_eq!(g.stats(PeerId::new(false, 0)).fails, 1);
    // now - checked <= fail_timeout (10 s) keeps it out, 10 included.
    for secs in [1, 5, 10] {
        assert_eq!(
            request(&g, &PickCtx::default(), secs),
            Some(1),
            "at {secs}s"
        );
    }
    // At 11 s it is back, its effective weight 0 after the failure: it
    // climbs back one per pick before it wins again. The pick restarts its
    // window, the success clears the failure.
    let seq: Vec<_> = (0..3)
        .map(|_| request(&g, &PickCtx::default(), 11))
        .collect();
    assert_eq!(seq, vec![Some(1), Some(1), Some(0)]);
    assert_eq!(g.stats(PeerId::new(false, 0)).fails, 0);
}

#[test]
fn max_fails_counts_failures_in_the_window() {
    let mut specs = peers(&[1, 1]);
    specs[0].max_fails = 2;
    let g = group(specs, vec![], Balance::RoundRobin);
    let id = PeerId::new(false, 0);
    let mut tried = Tried::new(&g);
    assert_eq!(
        index(g.pick(&PickCtx::default(), &mut tried, at(&g, 0))),
        Some(0)
    );
    assert!(
        !g.done(&mut tried, id, Outcome::Failed, at(&g, 0)),
        "1 of 2"
    );
    // One failure of two: still in (and weight 1 - 1/2 = 1 stays).
    assert_eq!(sequence(&g, 2), vec![1, 0]);
    let mut tried = Tried::new(&g);
    assert_eq!(
        index(g.pick(&PickCtx::default(), &mut tried, at(&g, 1))),
        Some(1)
    );
    assert_eq!(
        index(g.pick(&PickCtx::default(), &mut tried, at(&g, 1))),
        Some(0)
    );
    assert!(g.done(&mut tried, id, Outcome::Failed, at(&g, 1)), "2 of 2");
    assert_eq!(request(&g, &PickCtx::default(), 2), Some(1));
    assert_eq!(request(&g, &PickCtx::default(), 2), Some(1));
}

#[test]
fn max_fails_zero_never_takes_a_peer_out() {
    let mut specs = peers(&[1, 1]);
    specs[0].max_fails = 0;
    let g = group(specs, vec![], Balance::RoundRobin);
    assert_eq!(failing_request(&g, 0), Some(0));
    assert_eq!(failing_request(&g, 0), Some(1));
    assert_eq!(request(&g, &PickCtx::default(), 0), Some(0));
    // No weight is taken off either (nginx divides by max_fails only when
    // it is set).
    assert_eq!(g.stats(PeerId::new(false, 0)).effective_weight, 1);
}

#[test]
fn failure_lowers_effective_weight_and_picks_restore_it() {
    let mut specs = peers(&[6, 1]);
    specs[0].max_fails = 3;
    let g = group(specs, vec![], Balance::RoundRobin);
    let id = PeerId::new(false, 0);
    assert_eq!(failing_request(&g, 0), Some(0));
    // 6 - 6/3.
    assert_eq!(g.stats(id).effective_weight, 4);
    request(&g, &PickCtx::default(), 0);
    assert_eq!(g.stats(id).effective_weight, 5);
    request(&g, &PickCtx::default(), 0);
    assert_eq!(g.stats(id).effective_weight, 6);
    request(&g, &PickCtx::default(), 0);
    assert_eq!(g.stats(id).effective_weight, 6, "never above weight");
}

#[test]
fn retries_skip_tried_peers_until_none_is_left() {
    let g = group(peers(&[1, 1, 1]), vec![], Balance::RoundRobin);
    let mut tried = Tried::new(&g);
    assert_eq!(tried.remaining(), 3);
    let mut seen = Vec::new();
    for left in [2, 1, 0] {
        let Pick::Peer(id) = g.pick(&PickCtx::default(), &mut tried, at(&g, 0)) else {
            panic!("a peer");
        };
        assert!(tried.contains(id));
        seen.push(id.index());
        g.done(&mut tried, id, Outcome::Failed, at(&g, 0));
        assert_eq!(tried.remaining(), left);
    }
    seen.sort_unstable();
    assert_eq!(seen, vec![0, 1, 2]);
    assert_eq!(
        g.pick(&PickCtx::default(), &mut tried, at(&g, 0)),
        Pick::NoLive
    );
}

#[test]
fn all_peers_failed_is_no_live_upstreams_without_a_reset() {
    // nginx 1.22 does not reset the failures when every peer is out: the
    // request gets NGX_BUSY ("no live upstreams") until a window ends.
    let g = group(peers(&[1, 1]), vec![], Balance::RoundRobin);
    assert_eq!(failing_request(&g, 0), Some(0));
    assert_eq!(failing_request(&g, 0), Some(1));
    assert_eq!(request(&g, &PickCtx::default(), 3), None);
    assert_eq!(request(&g, &PickCtx::default(), 10), None);
    assert!(request(&g, &PickCtx::default(), 11).is_some());
}

#[test]
fn down_peers_are_never_chosen_nor_counted_in_tries() {
    let mut specs = peers(&[1, 1, 1]);
    specs[1].down = true;
    let g = group(specs, vec![], Balance::RoundRobin);
    assert_eq!(Tried::new(&g).remaining(), 2);
    assert_eq!(sequence(&g, 4), vec![0, 2, 0, 2]);
}

#[test]
fn backup_is_used_when_every_primary_is_out() {
    let g = group(peers(&[1, 1]), peers(&[1, 1]), Balance::RoundRobin);
    assert_eq!(Tried::new(&g).remaining(), 4);
    assert_eq!(failing_request(&g, 0), Some(0));
    // One primary left: no backup yet.
    let mut tried = Tried::new(&g);
    let pick = g.pick(&PickCtx::default(), &mut tried, at(&g, 0));
    assert_eq!(pick, Pick::Peer(PeerId::new(false, 1)));
    g.done(
        &mut tried,
        PeerId::new(false, 1),
        Outcome::Failed,
        at(&g, 0),
    );
    // The same request moves on to the backup list, with a fresh tried set.
    let pick = g.pick(&PickCtx::default(), &mut tried, at(&g, 0));
    assert_eq!(pick, Pick::Peer(PeerId::new(true, 0)));
    assert!(tried.in_backup());
    let pick = g.pick(&PickCtx::default(), &mut tried, at(&g, 0));
    assert_eq!(pick, Pick::Peer(PeerId::new(true, 1)));
    assert_eq!(
        g.pick(&PickCtx::default(), &mut tried, at(&g, 0)),
        Pick::NoLive
    );
    // New requests go straight to the backups while both primaries are out.
    let mut tried = Tried::new(&g);
    let pick = g.pick(&PickCtx::default(), &mut tried, at(&g, 1));
    assert!(matches!(pick, Pick::Peer(id) if id.is_backup()), "{pick:?}");
}

#[test]
fn max_conns_full_peers_are_skipped_then_busy() {
    let mut specs = peers(&[1, 1]);
    specs[0].max_conns = 1;
    specs[1].max_conns = 1;
    let g = group(specs, vec![], Balance::RoundRobin);
    let ctx = PickCtx::default();
    let mut a = Tried::new(&g);
    let mut b = Tried::new(&g);
    let mut c = Tried::new(&g);
    let Pick::Peer(first) = g.pick(&ctx, &mut a, at(&g, 0)) else {
        panic!("a peer")
    };
    let Pick::Peer(second) = g.pick(&ctx, &mut b, at(&g, 0)) else {
        panic!("a peer")
    };
    assert_ne!(first, second);
    assert_eq!(g.stats(first).conns, 1);
    assert_eq!(g.pick(&ctx, &mut c, at(&g, 0)), Pick::NoLive);
    g.done(&mut a, first, Outcome::Ok, at(&g, 0));
    assert_eq!(g.stats(first).conns, 0);
    assert_eq!(g.pick(&ctx, &mut c, at(&g, 0)), Pick::Peer(first));
}

#[test]
fn a_lone_peer_is_never_taken_out() {
    let g = group(peers(&[1]), vec![], Balance::RoundRobin);
    for secs in 0..5 {
        let mut tried = Tried::new(&g);
        assert_eq!(tried.remaining(), 1);
        let pick = g.pick(&PickCtx::default(), &mut tried, at(&g, secs));
        assert_eq!(pick, Pick::Peer(PeerId::new(false, 0)));
        assert!(!g.done(
            &mut tried,
            PeerId::new(false, 0),
            Outcome::Failed,
            at(&g, secs)
        ));
        assert_eq!(tried.remaining(), 0, "no retry after a lone peer");
    }
    assert_eq!(g.stats(PeerId::new(false, 0)).fails, 0);
    assert_eq!(g.stats(PeerId::new(false, 0)).conns, 0);
}

#[test]
fn a_lone_peer_down_or_full_is_busy() {
    let mut specs = peers(&[1]);
    specs[0].down = true;
    let g = group(specs, vec![], Balance::RoundRobin);
    assert_eq!(request(&g, &PickCtx::default(), 0), None);

    let mut specs = peers(&[1]);
    specs[0].max_conns = 1;
    let g = group(specs, vec![], Balance::RoundRobin);
    let mut held = Tried::new(&g);
    assert!(index(g.pick(&PickCtx::default(), &mut held, at(&g, 0))).is_some());
    assert_eq!(request(&g, &PickCtx::default(), 0), None);
}

#[test]
fn one_primary_with_a_backup_is_not_lone() {
    // nginx clears `single` when there are backups: failures count.
    let g = group(peers(&[1]), peers(&[1]), Balance::RoundRobin);
    assert_eq!(failing_request(&g, 0), Some(0));
    let mut tried = Tried::new(&g);
    let pick = g.pick(&PickCtx::default(), &mut tried, at(&g, 1));
    assert_eq!(pick, Pick::Peer(PeerId::new(true, 0)));
}

#[test]
fn many_peers_use_more_than_one_bitmap_word() {
    let g = group(peers(&[1; 70]), vec![], Balance::RoundRobin);
    let mut tried = Tried::new(&g);
    let mut seen = [false; 70];
    for _ in 0..70 {
        let Pick::Peer(id) = g.pick(&PickCtx::default(), &mut tried, at(&g, 0)) else {
            panic!("a peer")
        };
        assert!(!seen[id.index()], "{} twice", id.index());
        seen[id.index()] = true;
    }
    assert_eq!(
        g.pick(&PickCtx::default(), &mut tried, at(&g, 0)),
        Pick::NoLive
    );
}

#[test]
fn bad_groups_are_refused() {
    assert_eq!(
        PeerGroup::new(vec![], vec![], Balance::RoundRobin).err(),
        Some(GroupError::NoServers)
    );
    let err = PeerGroup::new(peers(&[1, 0]), vec![], Balance::RoundRobin).err();
    assert_eq!(
        err.map(|e| e.to_string()),
        Some("invalid parameter \"weight=0\" of server \"127.0.0.1:8082\"".into())
    );
}

// least_conn

#[test]
fn least_conn_takes_the_least_loaded_per_weight() {
    let g = group(peers(&[1, 2, 1]), vec![], Balance::LeastConn);
    let ctx = PickCtx::default();
    // Hold connections: ties broken by round robin (weights 1, 2, 1).
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut t = Tried::new(&g);
        let Pick::Peer(id) = g.pick(&ctx, &mut t, at(&g, 0)) else {
            panic!("a peer")
        };
        held.push(id.index());
    }
    // conns 0/1 0/2 0/1: all tie, round robin gives peer 1 (weight 2);
    // then 0/1 vs 0/1 tie between 0 and 2; and so on.
    assert_eq!(held, vec![1, 0, 2, 1]);
    for i in 0..3 {
        let conns = g.stats(PeerId::new(false, i)).conns;
        assert_eq!(conns, [1, 2, 1][i]);
    }
}

#[test]
fn least_conn_prefers_fewer_connections_over_order() {
    let g = group(peers(&[1, 1]), vec![], Balance::LeastConn);
    let ctx = PickCtx::default();
    let mut a = Tried::new(&g);
    let Pick::Peer(first) = g.pick(&ctx, &mut a, at(&g, 0)) else {
        panic!("a peer")
    };
    assert_eq!(first.index(), 0);
    // Peer 0 is busy: every new request goes to peer 1 until it is not.
    for _ in 0..3 {
        assert_eq!(request(&g, &ctx, 0), Some(1));
    }
    g.done(&mut a, first, Outcome::Ok, at(&g, 0));
    let both: Vec<_> = (0..2).map(|_| request(&g, &ctx, 0)).collect();
    assert!(both.contains(&Some(0)), "{both:?}");
}

#[test]
fn least_conn_falls_back_to_backup() {
    let mut specs = peers(&[1]);
    specs[0].down = true;
    specs.extend(peers(&[1]).into_iter().map(|mut s| {
        s.down = true;
        s
    }));
    let g = group(specs, peers(&[1]), Balance::LeastConn);
    let mut t = Tried::new(&g);
    assert_eq!(
        g.pick(&PickCtx::default(), &mut t, at(&g, 0)),
        Pick::Peer(PeerId::new(true, 0))
    );
}

// ip_hash

fn ip(text: &str) -> Option<IpAddr> {
    Some(text.parse().expect("an address"))
}

#[test]
fn ip_hash_values_match_nginx() {
    // Reference values from nginx's loop: 89, then (h * 113 + b) % 6271.
    assert_eq!(ip_hash::step(89, ip("192.168.1.10")), 154);
    assert_eq!(ip_hash::step(89, ip("192.168.1.200")), 154, "same /24");
    assert_eq!(ip_hash::step(89, ip("10.0.0.1")), 2565);
    assert_eq!(ip_hash::step(89, ip("172.16.5.4")), 3526);
    assert_eq!(ip_hash::step(89, ip("8.8.8.8")), 3023);
    assert_eq!(ip_hash::step(154, ip("192.168.1.10")), 5654, "rehash");
    assert_eq!(ip_hash::step(89, ip("2001:db8::1")), 2600);
    assert_eq!(ip_hash::step(89, ip("::1")), 5945);
    assert_eq!(ip_hash::step(89, ip("::ffff:192.168.1.10")), 3094);
    assert_eq!(ip_hash::step(89, None), 295, "unix-socket client");
}

#[test]
fn ip_hash_picks_match_nginx() {
    let g = group(peers(&[1, 1, 1]), vec![], Balance::IpHash);
    let pick = |addr: &str| {
        let ctx = PickCtx {
            client_ip: ip(addr),
            hash_key: None,
        };
        request(&g, &ctx, 0)
    };
    assert_eq!(pick("192.168.1.10"), Some(1));
    assert_eq!(pick("192.168.1.200"), Some(1));
    assert_eq!(pick("10.0.0.1"), Some(0));
    assert_eq!(pick("8.8.8.8"), Some(2));
    assert_eq!(pick("2001:db8::1"), Some(2));

    let g = group(peers(&[2, 1, 3]), vec![], Balance::IpHash);
    let ctx = PickCtx {
        client_ip: ip("10.0.0.1"),
        hash_key: None,
    };
    assert_eq!(request(&g, &ctx, 0), Some(2));
}

#[test]
fn ip_hash_retry_continues_from_the_last_hash() {
    let g = group(peers(&[1, 1, 1]), vec![], Balance::IpHash);
    let ctx = PickCtx {
        client_ip: ip("192.168.1.10"),
        hash_key: None,
    };
    let mut tried = Tried::new(&g);
    assert_eq!(index(g.pick(&ctx, &mut tried, at(&g, 0))), Some(1));
    g.done(
        &mut tried,
        PeerId::new(false, 1),
        Outcome::Failed,
        at(&g, 0),
    );
    // 5654 % 3 = 2.
    assert_eq!(index(g.pick(&ctx, &mut tried, at(&g, 0))), Some(2));
}

#[test]
fn ip_hash_finds_the_only_usable_peer() {
    // Every peer but 2 is down: a client that hashes to a down peer keeps
    // rehashing, and round robin answers if 20 rounds never find peer 2.
    let mut specs = peers(&[1, 1, 1]);
    specs[0].down = true;
    specs[1].down = true;
    let g = group(specs, vec![], Balance::IpHash);
    for addr in ["192.168.1.10", "10.0.0.1", "8.8.8.8", "2001:db8::1"] {
        let ctx = PickCtx {
            client_ip: ip(addr),
            hash_key: None,
        };
        assert_eq!(request(&g, &ctx, 0), Some(2), "{addr}");
    }
}

// hash

fn keyed(g: &PeerGroup, key: &str) -> Option<usize> {
    let ctx = PickCtx {
        client_ip: None,
        hash_key: Some(key.as_bytes()),
    };
    request(g, &ctx, 0)
}

fn keys(g: &PeerGroup, n: usize) -> Vec<usize> {
    (0..n)
        .map(|i| keyed(g, &format!("key{i}")).expect("a peer"))
        .collect()
}

#[test]
fn crc32_is_nginx_crc32() {
    assert_eq!(crc32fast::hash(b"123456789"), 0xcbf4_3926);
}

#[test]
fn hash_picks_match_nginx() {
    let g = group(
        peers(&[1, 1, 1]),
        vec![],
        Balance::Hash { consistent: false },
    );
    let expected = [2, 1, 0, 1, 2, 2, 1, 0, 0, 1, 1, 1, 1, 2, 1, 0, 1, 0, 1, 1];
    assert_eq!(keys(&g, 20), expected);
    let g = group(
        peers(&[2, 1, 3]),
        vec![],
        Balance::Hash { consistent: false },
    );
    let expected = [2, 2, 2, 2, 1, 2, 2, 2, 0, 0, 2, 0, 2, 2, 0, 0, 0, 0, 0, 2];
    assert_eq!(keys(&g, 20), expected);
}

#[test]
fn hash_retry_rehashes_with_the_round_number() {
    // key7's rounds walk to 0, 2, 1 (crc32 of "key7", "1key7", "2key7").
    let g = group(
        peers(&[1, 1, 1]),
        vec![],
        Balance::Hash { consistent: false },
    );
    let ctx = PickCtx {
        client_ip: None,
        hash_key: Some(b"key7"),
    };
    let mut tried = Tried::new(&g);
    for expected in [0, 2, 1] {
        let pick = g.pick(&ctx, &mut tried, at(&g, 0));
        assert_eq!(index(pick), Some(expected));
        g.done(
            &mut tried,
            PeerId::new(false, expected),
            Outcome::Failed,
            at(&g, 0),
        );
    }
    assert_eq!(g.pick(&ctx, &mut tried, at(&g, 0)), Pick::NoLive);
}

#[test]
fn hash_round_values() {
    assert_eq!(
        hash::round_hash(0, b"key7"),
        crc32fast::hash(b"key7") >> 16 & 0x7fff
    );
    assert_eq!(
        hash::round_hash(12, b"k"),
        crc32fast::hash(b"12k") >> 16 & 0x7fff
    );
}

#[test]
fn empty_key_is_round_robin() {
    for consistent in [false, true] {
        let g = group(peers(&[1, 1, 1]), vec![], Balance::Hash { consistent });
        let seq: Vec<_> = (0..3).map(|_| keyed(&g, "")).collect();
        assert_eq!(
            seq,
            vec![Some(0), Some(1), Some(2)],
            "consistent {consistent}"
        );
    }
}

use crate::upstream::peer::PeerAddr;

fn named(servers: &[&str], weights: &[u32]) -> Vec<PeerSpec> {
    servers
        .iter()
        .zip(weights)
        .enumerate()
        .map(|(i, (server, &w))| {
            let port = 9000 + u16::try_from(i).expect("few peers");
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let mut s = PeerSpec::new(PeerAddr::Inet(addr), &addr.to_string(), server);
            s.weight = w;
            s
        })
        .collect()
}

const THREE: [&str; 3] = ["127.0.0.1:8081", "127.0.0.1:8082", "127.0.0.1:8083"];

#[test]
fn ketama_ring_matches_nginx() {
    let ring = Ring::new(&named(&THREE, &[1, 1, 1]));
    let points = ring.points();
    assert_eq!(points.len(), 480);
    assert_eq!((points[0].hash, points[0].server), (0x000d_1815, 0));
    assert_eq!((points[1].hash, points[1].server), (0x003f_fe29, 0));
    assert_eq!((points[479].hash, points[479].server), (0xffd0_3b3d, 0));
    assert_eq!(Ring::new(&named(&THREE, &[1, 2, 1])).points().len(), 640);
}

#[test]
fn consistent_picks_match_nginx() {
    let g = group(
        named(&THREE, &[1, 1, 1]),
        vec![],
        Balance::Hash { consistent: true },
    );
    let expected = [2, 0, 2, 2, 2, 1, 2, 2, 0, 0, 2, 1, 2, 2, 2, 0, 2, 1, 0, 2];
    assert_eq!(keys(&g, 20), expected);
    let g = group(
        named(&THREE, &[1, 2, 1]),
        vec![],
        Balance::Hash { consistent: true },
    );
    let expected = [1, 0, 2, 2, 2, 1, 2, 2, 0, 1, 1, 1, 2, 2, 2, 0, 1, 1, 0, 2];
    assert_eq!(keys(&g, 20), expected);
}

#[test]
fn ketama_splits_host_and_port_as_nginx() {
    // unix: (any case) is all host; a port is digits after the last ':'.
    let servers = [
        "unix:/tmp/a.sock",
        "example.com",
        "[::1]:80",
        "Unix:/tmp/b",
        "backend:abc",
    ];
    let ring = Ring::new(&named(&servers, &[1; 5]));
    assert_eq!(ring.points().len(), 800);
    assert_eq!(
        (ring.points()[0].hash, ring.points()[0].server),
        (0x0093_0c38, 0)
    );
    let g = group(
        named(&servers, &[1; 5]),
        vec![],
        Balance::Hash { consistent: true },
    );
    let expected = [2, 0, 1, 0, 1, 0, 3, 3, 3, 2, 0, 3, 1, 3, 1, 1, 1, 3, 2, 4];
    assert_eq!(keys(&g, 20), expected);
    assert_eq!(
        hash::split_host_port(b"[::1]:80"),
        (&b"[::1]"[..], &b"80"[..])
    );
    assert_eq!(hash::split_host_port(b"a:b:"), (&b"a:b"[..], &b""[..]));
    assert_eq!(hash::split_host_port(b"UNIX:/x"), (&b"/x"[..], &b""[..]));
}

#[test]
fn consistent_peers_of_one_server_line_share_its_points() {
    // One `server` line resolving to two addresses: two peers, one string.
    let specs = named(&["app:80", "app:80", "other:80"], &[1, 1, 1]);
    let ring = Ring::new(&specs);
    assert_eq!(ring.servers(), ["app:80", "other:80"]);
    // Both peers place the same 160 points: duplicates are dropped.
    assert_eq!(ring.points().len(), 320);
    let g = group(specs, vec![], Balance::Hash { consistent: true });
    let app_key = (0..100)
        .map(|i| format!("k{i}"))
        .find(|k| ring.server_for(k.as_bytes()) == Some("app:80"))
        .expect("a key of app");
    // Its requests alternate between the two addresses (round robin).
    let seq: Vec<_> = (0..4).map(|_| keyed(&g, &app_key)).collect();
    assert_eq!(seq, vec![Some(0), Some(1), Some(0), Some(1)]);
}

#[test]
fn consistent_retry_walks_the_ring() {
    let g = group(
        named(&THREE, &[1, 1, 1]),
        vec![],
        Balance::Hash { consistent: true },
    );
    let ctx = PickCtx {
        client_ip: None,
        hash_key: Some(b"key0"),
    };
    let mut tried = Tried::new(&g);
    let mut seen = Vec::new();
    while let Pick::Peer(id) = g.pick(&ctx, &mut tried, at(&g, 0)) {
        seen.push(id.index());
        g.done(&mut tried, id, Outcome::Failed, at(&g, 0));
    }
    assert_eq!(seen[0], 2);
    seen.sort_unstable();
    assert_eq!(seen, vec![0, 1, 2]);
}

#[test]
fn removing_a_server_moves_only_its_keys() {
    let all = Ring::new(&named(&THREE, &[1, 1, 1]));
    let two = Ring::new(&named(&THREE[..2], &[1, 1]));
    let n = 3000;
    let mut moved = 0;
    for i in 0..n {
        let key = format!("key{i}");
        let before = all.server_for(key.as_bytes()).expect("a server");
        let after = two.server_for(key.as_bytes()).expect("a server");
        if before != after {
            assert_eq!(before, THREE[2], "{key} moved from a server still there");
            moved += 1;
        } else {
            assert_ne!(before, THREE[2]);
        }
    }
    // About a third of the keys were on the removed server.
    assert!((n / 5..n / 2).contains(&moved), "{moved} of {n} moved");
}

#[test]
fn consistent_skips_a_failed_server_and_keeps_the_others() {
    let g = group(
        named(&THREE, &[1, 1, 1]),
        vec![],
        Balance::Hash { consistent: true },
    );
    let before = keys(&g, 40);
    // Take server 2 out: its keys move, the others stay.
    let mut tried = Tried::new(&g);
    let ctx = PickCtx {
        client_ip: None,
        hash_key: Some(b"key0"),
    };
    assert_eq!(index(g.pick(&ctx, &mut tried, at(&g, 0))), Some(2));
    g.done(
        &mut tried,
        PeerId::new(false, 2),
        Outcome::Failed,
        at(&g, 0),
    );
    let after = keys(&g, 40);
    for (b, a) in before.iter().zip(&after) {
        if *b == 2 {
            assert_ne!(*a, 2);
        } else {
            assert_eq!(a, b);
        }
    }
}

// random

#[test]
fn random_follows_the_weights() {
    let g = group(peers(&[1, 3]), vec![], Balance::Random { two: false });
    g.lock().rng = random::Rng::from_seed(7);
    let mut counts = [0u32; 2];
    for _ in 0..4000 {
        counts[request(&g, &PickCtx::default(), 0).expect("a peer")] += 1;
    }
    // Expected 1000 and 3000.
    assert!((850..1150).contains(&counts[0]), "{counts:?}");
}

#[test]
fn random_skips_unusable_peers() {
    let mut specs = peers(&[1, 1, 1]);
    specs[0].down = true;
    specs[2].down = true;
    let g = group(specs, vec![], Balance::Random { two: false });
    for _ in 0..50 {
        assert_eq!(request(&g, &PickCtx::default(), 0), Some(1));
    }
}

#[test]
fn random_two_takes_the_less_loaded() {
    // With two peers, `two` always draws both: the one holding a connection
    // is never chosen while the other holds none.
    let g = group(peers(&[1, 1]), vec![], Balance::Random { two: true });
    let ctx = PickCtx::default();
    let mut held = Tried::new(&g);
    let Pick::Peer(busy) = g.pick(&ctx, &mut held, at(&g, 0)) else {
        panic!("a peer")
    };
    for _ in 0..50 {
        assert_eq!(request(&g, &ctx, 0), Some(1 - busy.index()));
    }
    g.done(&mut held, busy, Outcome::Ok, at(&g, 0));
    // On a tie the second draw wins: both come up.
    let seen: Vec<_> = (0..50).map(|_| request(&g, &ctx, 0)).collect();
    assert!(
        seen.contains(&Some(0)) && seen.contains(&Some(1)),
        "{seen:?}"
    );
}

#[test]
fn random_weights_ranges() {
    assert_eq!(random::ranges(&peers(&[2, 1, 3])), vec![0, 2, 3]);
}

// sharing

#[test]
fn a_group_is_shared_by_worker_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<PeerGroup>();
    let mut specs = peers(&[3, 1, 2]);
    specs[1].max_conns = 2;
    let g = std::sync::Arc::new(group(specs, vec![], Balance::LeastConn));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let g = std::sync::Arc::clone(&g);
            std::thread::spawn(move || {
                for i in 0..500 {
                    let mut tried = Tried::new(&g);
                    if let Pick::Peer(id) = g.pick(&PickCtx::default(), &mut tried, at(&g, 0)) {
                        assert!(g.stats(id).conns >= 1);
                        let outcome = if i % 50 == 0 {
                            Outcome::Failed
                        } else {
                            Outcome::Ok
                        };
                        g.done(&mut tried, id, outcome, at(&g, 100 + i));
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a worker");
    }
    // Every connection picked was given back.
    for (id, _) in g.peers() {
        assert_eq!(g.stats(id).conns, 0, "{id:?}");
    }
}

#[test]
fn hash_methods_fall_back_to_round_robin_after_20_misses() {
    // Peer 0 is down and holds nearly all the weight: the hashes and draws
    // keep landing on it, and round robin finds peer 1.
    let mut specs = peers(&[1000, 1]);
    specs[0].down = true;
    let ctx = PickCtx {
        client_ip: ip("192.168.1.10"),
        hash_key: Some(b"key0"),
    };
    for balance in [
        Balance::IpHash,
        Balance::Hash { consistent: false },
        Balance::Hash { consistent: true },
        Balance::Random { two: false },
        Balance::Random { two: true },
    ] {
        let g = group(specs.clone(), vec![], balance);
        g.lock().rng = random::Rng::from_seed(1);
        let mut tried = Tried::new(&g);
        let pick = g.pick(&ctx, &mut tried, at(&g, 0));
        assert_eq!(pick, Pick::Peer(PeerId::new(false, 1)), "{balance:?}");
        assert_eq!(tried.misses, FALLBACK_AFTER_MISSES + 1, "{balance:?}");
    }
}
