//! `least_conn`: nginx's `ngx_http_upstream_get_least_conn_peer`. The peer
//! with the fewest connections per unit of weight (`conns * other.weight <
//! other.conns * weight`, no division); when several tie, the smooth
//! weighted round robin among those from the first of them on. Connections
//! are given back by the shared [`round_robin::free`](super::round_robin).

use std::cmp::Ordering;

use super::round_robin;
use super::{PeerGroup, State, Tried};
use crate::upstream::peer::{PeerId, PeerSpec, PeerState};

/// Peer `i`'s load against peer `j`'s, cross-multiplied as nginx does:
/// `conns_i * weight_j` against `conns_j * weight_i`.
fn load(specs: &[PeerSpec], peers: &[PeerState], i: usize, j: usize) -> Ordering {
    let a = u128::from(peers[i].conns) * u128::from(specs[j].weight);
    let b = u128::from(peers[j].conns) * u128::from(specs[i].weight);
    a.cmp(&b)
}

/// The least loaded usable peer of the list the request is on, then of the
/// backup list; `None` is nginx's `NGX_BUSY`.
pub(crate) fn get(g: &PeerGroup, st: &mut State, tried: &mut Tried, now: i64) -> Option<PeerId> {
    if g.single && !tried.backup {
        return round_robin::get(g, st, tried, now);
    }
    let backup = tried.backup;
    let specs = &g.list(backup).specs;
    let peers = st.list_mut(backup);
    let usable = |i: usize, tried: &Tried, peers: &[PeerState]| {
        !tried.bits.test(i) && peers[i].usable(&specs[i], now)
    };

    let mut best: Option<usize> = None;
    let mut many = false;
    for i in 0..specs.len() {
        if !usable(i, tried, peers) {
            continue;
        }
        match best.map(|b| load(specs, peers, i, b)) {
            Some(Ordering::Equal) => many = true,
            Some(Ordering::Greater) => {}
            Some(Ordering::Less) | None => {
                best = Some(i);
                many = false;
            }
        }
    }
    let Some(mut best) = best else {
        round_robin::to_backup(g, tried)?;
        return get(g, st, tried, now);
    };

    let mut total: i64 = 0;
    if many {
        // Round robin among the tied peers, from the first of them on.
        let first = best;
        for i in first..specs.len() {
            if !usable(i, tried, peers) || load(specs, peers, i, first).is_ne() {
                continue;
            }
            let spec = &specs[i];
            let peer = &mut peers[i];
            peer.current_weight += peer.effective_weight;
            total += peer.effective_weight;
            if peer.effective_weight < i64::from(spec.weight) {
                peer.effective_weight += 1;
            }
            if peers[i].current_weight > peers[best].current_weight {
                best = i;
            }
        }
    }
    let peer = &mut peers[best];
    peer.current_weight -= total;
    peer.touch(&specs[best], now);
    peer.conns += 1;
    tried.bits.set(best);
    Some(PeerId::new(backup, best))
}
