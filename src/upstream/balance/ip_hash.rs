//! `ip_hash`: nginx's `ngx_http_upstream_get_ip_hash_peer`. The client's
//! address (the first three octets of IPv4, all sixteen of IPv6, three zero
//! bytes for a unix-socket client) is folded into a hash starting at 89,
//! `hash = (hash * 113 + byte) % 6271` per byte; `hash % total_weight` walks
//! the weights to a peer. A peer that cannot be used rehashes from the last
//! value; after 20 misses the request goes to round robin. A retry starts
//! from the hash that chose the previous peer.

use std::net::IpAddr;

use super::round_robin;
use super::{FALLBACK_AFTER_MISSES, PeerGroup, State, Tried};
use crate::upstream::peer::PeerId;

/// The hash's multiplier.
const MULTIPLIER: u32 = 113;
/// The hash's modulus.
const MODULUS: u32 = 6271;
/// Octets of an IPv4 address that count: clients of one /24 share a peer.
const IPV4_OCTETS: usize = 3;

/// One round of the hash from `hash` over the bytes nginx hashes for
/// `client`.
pub fn step(hash: u32, client: Option<IpAddr>) -> u32 {
    let fold = |octets: &[u8]| {
        octets
            .iter()
            .fold(hash, |h, &b| (h * MULTIPLIER + u32::from(b)) % MODULUS)
    };
    match client {
        Some(IpAddr::V4(a)) => fold(&a.octets()[..IPV4_OCTETS]),
        Some(IpAddr::V6(a)) => fold(&a.octets()),
        None => fold(&[0; IPV4_OCTETS]),
    }
}

/// The position in `weights` that `value % sum(weights)` falls in (the walk
/// nginx's `ip_hash` and `hash` share).
pub(crate) fn walk(weights: impl Iterator<Item = u32>, total: u64, value: u64) -> usize {
    let mut w = value % total;
    let mut p = 0;
    for weight in weights {
        if w < u64::from(weight) {
            break;
        }
        w -= u64::from(weight);
        p += 1;
    }
    p
}

/// The peer for `client`; round robin for a lone peer or after 20 misses.
pub(crate) fn get(
    g: &PeerGroup,
    st: &mut State,
    tried: &mut Tried,
    client: Option<IpAddr>,
    now: i64,
) -> Option<PeerId> {
    // The backup list is only reached through round robin, after the misses.
    if tried.misses > FALLBACK_AFTER_MISSES || g.single || tried.backup {
        return round_robin::get(g, st, tried, now);
    }
    let list = &g.primary;
    let mut hash = tried.hash;
    let p = loop {
        hash = step(hash, client);
        let weights = list.specs.iter().map(|s| s.weight);
        let p = walk(weights, list.total_weight, u64::from(hash));
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
    tried.hash = hash;
    Some(PeerId::new(false, p))
}
