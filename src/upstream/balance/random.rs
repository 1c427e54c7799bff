//! `random` and `random two [least_conn]`: nginx's
//! `ngx_http_upstream_get_random_peer` and `…_get_random2_peer`. A draw
//! `x % total_weight` is looked up in the cumulative weights of the primary
//! peers; `two` draws until it has two different usable peers and takes the
//! one with fewer connections per unit of weight (the second on a tie). Each
//! unusable draw, and the first of the two, counts a miss; after 20 the
//! request goes to round robin.
//!
//! The generator is a xorshift64* in the group's state: no system call, no
//! lock of its own, nothing that blocks. Draws are not nginx's `random()`
//! sequence; only their distribution is meant to match.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::round_robin;
use super::{FALLBACK_AFTER_MISSES, PeerGroup, State, Tried};
use crate::upstream::peer::{PeerId, PeerSpec};

/// Tells apart groups made in the same nanosecond.
static SEEDS: AtomicU64 = AtomicU64::new(0);

/// A xorshift64* generator.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator seeded from the clock and a process-wide counter.
    pub(crate) fn seeded() -> Rng {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let count = SEEDS.fetch_add(1, Ordering::Relaxed);
        Rng::from_seed(nanos ^ count.rotate_left(32))
    }

    /// A generator from `seed` (tests use fixed ones).
    pub(crate) fn from_seed(seed: u64) -> Rng {
        // splitmix64 spreads any seed, 0 included, over the state.
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        Rng(if z == 0 { 1 } else { z })
    }

    /// The next draw.
    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// The weight of all peers before each one (nginx's `ranges[i].range`).
pub(crate) fn ranges(peers: &[PeerSpec]) -> Vec<u64> {
    let mut total = 0;
    peers
        .iter()
        .map(|p| {
            let before = total;
            total += u64::from(p.weight);
            before
        })
        .collect()
}

/// nginx's `ngx_http_upstream_peek_random_peer`: the peer whose range holds
/// a draw.
fn peek(g: &PeerGroup, st: &mut State) -> usize {
    let x = st.rng.next() % g.primary.total_weight;
    let (mut i, mut j) = (0, g.ranges.len());
    while j - i > 1 {
        let k = (i + j) / 2;
        if x < g.ranges[k] {
            j = k;
        } else {
            i = k;
        }
    }
    i
}

/// A random usable peer, or with `two` the less loaded of two.
pub(crate) fn get(
    g: &PeerGroup,
    st: &mut State,
    tried: &mut Tried,
    two: bool,
    now: i64,
) -> Option<PeerId> {
    // The backup list is only reached through round robin, after the misses.
    if tried.misses > FALLBACK_AFTER_MISSES || g.single || tried.backup {
        return round_robin::get(g, st, tried, now);
    }
    let specs = &g.primary.specs;
    let mut prev: Option<usize> = None;
    let p = loop {
        let i = peek(g, st);
        if prev != Some(i) && !tried.bits.test(i) && st.primary[i].usable(&specs[i], now) {
            match prev {
                Some(first) => {
                    // The second draw unless it is the more loaded one.
                    let mine = u128::from(st.primary[i].conns) * u128::from(specs[first].weight);
                    let theirs = u128::from(st.primary[first].conns) * u128::from(specs[i].weight);
                    break if mine > theirs { first } else { i };
                }
                None if !two => break i,
                // The first of two: nginx counts it as a miss too.
                None => prev = Some(i),
            }
        }
        tried.misses += 1;
        if tried.misses > FALLBACK_AFTER_MISSES {
            return round_robin::get(g, st, tried, now);
        }
    };
    let peer = &mut st.primary[p];
    peer.touch(&specs[p], now);
    peer.conns += 1;
    tried.bits.set(p);
    Some(PeerId::new(false, p))
}
