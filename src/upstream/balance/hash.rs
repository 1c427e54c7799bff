//! `hash KEY` and `hash KEY consistent`: nginx's
//! `ngx_http_upstream_hash_module.c`, bit for bit, so that nowait and nginx
//! nodes send a key to the same server.
//!
//! - `hash` (compatible with Cache::Memcached): each round adds
//!   `(crc32([REHASH] KEY) >> 16) & 0x7fff` to a running sum, REHASH being
//!   the round number in decimal, omitted in round 0; `sum % total_weight`
//!   walks the weights to a peer (`ngx_http_upstream_get_hash_peer`).
//! - `hash … consistent` (compatible with Cache::Memcached::Fast, ketama):
//!   each peer puts `160 * weight` points on a ring, point j being
//!   `crc32(HOST '\0' PORT PREV)` where HOST and PORT come from the `server`
//!   string as written and PREV is point j-1 (0 first) as four
//!   little-endian bytes (`ngx_http_upstream_init_chash`). The key's
//!   `crc32` finds the first point at or after it; the peers of that point's
//!   server compete by smooth weighted round robin; when none can be used
//!   the next point is tried (`ngx_http_upstream_get_chash_peer`).
//!
//! Both give up after 20 misses, and use round robin for an empty key or a
//! lone peer.

use crc32fast::Hasher;

use super::ip_hash::walk;
use super::round_robin;
use super::{FALLBACK_AFTER_MISSES, PeerGroup, State, Tried};
use crate::http::decimal::{U64_DIGITS, decimal};
use crate::upstream::peer::{PeerId, PeerSpec};

/// Ring points per unit of weight.
pub const POINTS_PER_WEIGHT: u32 = 160;
/// The prefix that makes a `server` string a unix socket path (any case).
const UNIX_PREFIX: &[u8] = b"unix:";

/// `hash KEY`: the peer the key's running hash walks to.
pub(crate) fn get(
    g: &PeerGroup,
    st: &mut State,
    tried: &mut Tried,
    key: &[u8],
    now: i64,
) -> Option<PeerId> {
    // The backup list is only reached through round robin, after the misses.
    if tried.misses > FALLBACK_AFTER_MISSES || g.single || key.is_empty() || tried.backup {
        return round_robin::get(g, st, tried, now);
    }
    let list = &g.primary;
    let p = loop {
        tried.hash = tried.hash.wrapping_add(round_hash(tried.rehash, key));
        tried.rehash += 1;
        let weights = list.specs.iter().map(|s| s.weight);
        let p = walk(weights, list.total_weight, u64::from(tried.hash));
        if !tried.bits.test(p) && st.primary[p].usable(&list.specs[p], now) {
            break p;
        }
        tried.misses += 1;
        if tried.misses > FALLBACK_AFTER_MISSES {
            return round_robin::get(g, st, tried, now);
        }
    };
    let peer = &mut st.primary[p];
    peer.conns += 1;
    peer.touch(&list.specs[p], now);
    tried.bits.set(p);
    Some(PeerId::new(false, p))
}

/// `hash KEY`'s round `rehash`: `(crc32([rehash] key) >> 16) & 0x7fff`,
/// the decimal prefix omitted in round 0.
pub fn round_hash(rehash: u64, key: &[u8]) -> u32 {
    let mut crc = Hasher::new();
    if rehash > 0 {
        let mut digits = [0u8; U64_DIGITS];
        crc.update(decimal(rehash, &mut digits));
    }
    crc.update(key);
    (crc.finalize() >> 16) & 0x7fff
}

/// `hash KEY consistent`: the first usable peer on the ring at or after the
/// key's point.
pub(crate) fn get_consistent(
    g: &PeerGroup,
    st: &mut State,
    tried: &mut Tried,
    key: &[u8],
    now: i64,
) -> Option<PeerId> {
    let Some(ring) = g.ring.as_ref() else {
        return round_robin::get(g, st, tried, now);
    };
    if !tried.ring_started {
        // nginx finds the key's point once per request, when it starts.
        tried.hash = ring.find(crc32fast::hash(key)) as u32;
        tried.ring_started = true;
    }
    if tried.misses > FALLBACK_AFTER_MISSES || g.single || key.is_empty() || tried.backup {
        return round_robin::get(g, st, tried, now);
    }
    let specs = &g.primary.specs;
    let best = loop {
        let server = ring.server_at(tried.hash);
        let mut best: Option<(usize, i64)> = None;
        let mut total: i64 = 0;
        for (i, (spec, peer)) in specs.iter().zip(st.primary.iter_mut()).enumerate() {
            if tried.bits.test(i) || !peer.usable(spec, now) || ring.server_of[i] != server {
                continue;
            }
            peer.current_weight += peer.effective_weight;
            total += peer.effective_weight;
            if peer.effective_weight < i64::from(spec.weight) {
                peer.effective_weight += 1;
            }
            if best.is_none_or(|(_, w)| peer.current_weight > w) {
                best = Some((i, peer.current_weight));
            }
        }
        if let Some((i, _)) = best {
            st.primary[i].current_weight -= total;
            break i;
        }
        tried.hash = tried.hash.wrapping_add(1);
        tried.misses += 1;
        if tried.misses > FALLBACK_AFTER_MISSES {
            return round_robin::get(g, st, tried, now);
        }
    };
    let peer = &mut st.primary[best];
    peer.conns += 1;
    peer.touch(&specs[best], now);
    tried.bits.set(best);
    Some(PeerId::new(false, best))
}

/// One point of the ring: a hash and the server that placed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Point {
    /// The point's place on the ring.
    pub hash: u32,
    /// The server (an index into [`Ring::servers`]) whose peers it leads to.
    pub server: u32,
}

/// The ketama ring of `hash … consistent` over the primary peers.
#[derive(Clone, Debug)]
pub struct Ring {
    /// The points, sorted by hash, one per hash value.
    points: Vec<Point>,
    /// The distinct `server` strings, in order of first appearance.
    servers: Vec<String>,
    /// For each primary peer, its `server` string's index in `servers`:
    /// peers of one `server` line (or of equal strings) share a point.
    server_of: Vec<u32>,
}

impl Ring {
    /// The ring of `peers`: `160 * weight` points per peer from its `server`
    /// string, sorted, duplicates of one hash dropped but the first.
    pub fn new(peers: &[PeerSpec]) -> Ring {
        let mut servers: Vec<String> = Vec::new();
        let mut server_of = Vec::with_capacity(peers.len());
        let total: u64 = peers.iter().map(|p| u64::from(p.weight)).sum();
        let points_wanted = total.saturating_mul(u64::from(POINTS_PER_WEIGHT));
        let mut points = Vec::with_capacity(usize::try_from(points_wanted).unwrap_or(0));
        for peer in peers {
            let server = match servers.iter().position(|s| **s == *peer.server) {
                Some(i) => i,
                None => {
                    servers.push(peer.server.to_string());
                    servers.len() - 1
                }
            } as u32;
            server_of.push(server);
            let base = base_hasher(peer.server.as_bytes());
            let mut prev: u32 = 0;
            for _ in 0..u64::from(peer.weight) * u64::from(POINTS_PER_WEIGHT) {
                let mut crc = base.clone();
                crc.update(&prev.to_le_bytes());
                let hash = crc.finalize();
                points.push(Point { hash, server });
                prev = hash;
            }
        }
        // Stable, as glibc's merge sort under nginx's qsort(): of points with
        // one hash, the first placed is kept.
        points.sort_by_key(|p| p.hash);
        points.dedup_by_key(|p| p.hash);
        Ring {
            points,
            servers,
            server_of,
        }
    }

    /// The points, sorted by hash.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// The distinct `server` strings the points refer to.
    pub fn servers(&self) -> &[String] {
        &self.servers
    }

    /// The position of the first point at or after `hash`; the number of
    /// points when there is none (the search wraps to point 0 then).
    pub fn find(&self, hash: u32) -> usize {
        self.points.partition_point(|p| p.hash < hash)
    }

    /// The server of point `at`, counted around the ring.
    fn server_at(&self, at: u32) -> u32 {
        let len = self.points.len().max(1);
        self.points
            .get(at as usize % len)
            .map(|p| p.server)
            .unwrap_or(0)
    }

    /// The `server` string `key` leads to when every peer can be used: the
    /// server of the first point at or after `crc32(key)`.
    pub fn server_for(&self, key: &[u8]) -> Option<&str> {
        let at = self.find(crc32fast::hash(key)) as u32;
        self.servers
            .get(self.server_at(at) as usize)
            .map(String::as_str)
    }
}

/// The CRC state after `HOST '\0' PORT` of a `server` string, not
/// finalized: a `unix:` path is all host; otherwise the digits after the
/// last `:` are the port when only digits follow it.
fn base_hasher(server: &[u8]) -> Hasher {
    let (host, port) = split_host_port(server);
    let mut crc = Hasher::new();
    crc.update(host);
    crc.update(b"\0");
    crc.update(port);
    crc
}

/// HOST and PORT of a `server` string as nginx's ketama splits it.
pub fn split_host_port(server: &[u8]) -> (&[u8], &[u8]) {
    if server.len() >= UNIX_PREFIX.len()
        && server[..UNIX_PREFIX.len()].eq_ignore_ascii_case(UNIX_PREFIX)
    {
        return (&server[UNIX_PREFIX.len()..], b"");
    }
    for (j, &c) in server.iter().enumerate().rev() {
        if c == b':' {
            return (&server[..j], &server[j + 1..]);
        }
        if !c.is_ascii_digit() {
            break;
        }
    }
    (server, b"")
}
