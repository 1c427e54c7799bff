//! The smooth weighted round robin, the fallback of every other method, and
//! the bookkeeping after an attempt that all methods share: nginx's
//! `ngx_http_upstream_get_round_robin_peer`, `ngx_http_upstream_get_peer`
//! and `ngx_http_upstream_free_round_robin_peer`.
//!
//! Smooth weighted: each usable peer's `current_weight` grows by its
//! `effective_weight`; the largest wins and loses the sum of all. Weights
//! 5, 1, 1 give a a b a c a a. A failure lowers `effective_weight` by
//! `weight / max_fails`; each later pick gives one back.

use super::{PeerGroup, State, Tried};
use crate::upstream::balance::Outcome;
use crate::upstream::peer::{PeerId, PeerSpec, PeerState};

/// nginx's `ngx_http_upstream_get_round_robin_peer`: a lone peer unless it
/// is down or full; otherwise the smooth weighted choice among the list the
/// request is on; when nothing is left in the primary list, the backup list
/// with a fresh `tried` set. `None` is nginx's `NGX_BUSY`.
pub(crate) fn get(g: &PeerGroup, st: &mut State, tried: &mut Tried, now: i64) -> Option<PeerId> {
    let backup = tried.backup;
    if g.single && !backup {
        // A lone peer is never taken out by failures, and not marked tried.
        let spec = &g.primary.specs[0];
        let peer = &mut st.primary[0];
        if spec.down || peer.full(spec) {
            return None;
        }
        peer.conns += 1;
        return Some(PeerId::new(false, 0));
    }
    let specs = &g.list(backup).specs;
    if let Some(i) = smooth(specs, st.list_mut(backup), tried, now) {
        st.list_mut(backup)[i].conns += 1;
        return Some(PeerId::new(backup, i));
    }
    to_backup(g, tried)?;
    get(g, st, tried, now)
}

/// Moves the request to the backup list with nothing tried in it, when it is
/// on the primary list and there is a backup list (nginx's `failed:` label
/// in each get function); `None` when there is nowhere to go.
pub(crate) fn to_backup(g: &PeerGroup, tried: &mut Tried) -> Option<()> {
    if tried.backup || g.backup.specs.is_empty() {
        return None;
    }
    tried.backup = true;
    tried.bits.clear();
    Some(())
}

/// nginx's `ngx_http_upstream_get_peer`: the smooth weighted choice among
/// the peers not tried, not down, not failed and not full; marks it tried
/// and restarts its failure window if that has passed. Its connection is the
/// caller's to count.
fn smooth(
    specs: &[PeerSpec],
    peers: &mut [PeerState],
    tried: &mut Tried,
    now: i64,
) -> Option<usize> {
    // The best so far and its current weight (which cannot change again
    // in this pass: each peer is visited once).
    let mut best: Option<(usize, i64)> = None;
    let mut total: i64 = 0;
    for (i, (spec, peer)) in specs.iter().zip(peers.iter_mut()).enumerate() {
        if tried.bits.test(i) || !peer.usable(spec, now) {
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
    let (best, _) = best?;
    tried.bits.set(best);
    let peer = &mut peers[best];
    peer.current_weight -= total;
    peer.touch(&specs[best], now);
    Some(best)
}

/// nginx's `ngx_http_upstream_free_round_robin_peer`: gives the connection
/// back; a failure counts against the peer, lowers its effective weight and
/// restarts its window; a success after the window clears the failures. A
/// lone peer only gives its connection back and leaves the request no tries.
/// Returns true when this failure reached `max_fails`.
pub(crate) fn free(
    g: &PeerGroup,
    st: &mut State,
    tried: &mut Tried,
    id: PeerId,
    outcome: Outcome,
    now: i64,
) -> bool {
    let spec = g.spec(id);
    let peer = &mut st.list_mut(id.is_backup())[id.index()];
    if g.single && !id.is_backup() {
        peer.conns = peer.conns.saturating_sub(1);
        tried.use_try(true);
        return false;
    }
    let mut disabled = false;
    match outcome {
        Outcome::Failed => {
            peer.fails += 1;
            peer.accessed = now;
            peer.checked = now;
            // Only with max_fails set (nginx divides by it).
            if let Some(share) = spec.weight.checked_div(spec.max_fails) {
                peer.effective_weight -= i64::from(share);
                disabled = peer.fails >= u64::from(spec.max_fails);
            }
            if peer.effective_weight < 0 {
                peer.effective_weight = 0;
            }
        }
        Outcome::Ok => {
            // Mark the peer live if the check passed: a pick after the
            // window moved `checked` past the last failure.
            if peer.accessed < peer.checked {
                peer.fails = 0;
            }
        }
    }
    peer.conns = peer.conns.saturating_sub(1);
    tried.use_try(false);
    disabled
}
