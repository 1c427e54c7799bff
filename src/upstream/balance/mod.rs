//! Choosing a peer of an `upstream` group for each attempt of a request,
//! exactly as nginx 1.22.1's balancers do, so that a tier of nowait and nginx
//! nodes sends the same key to the same server.
//!
//! - [`PeerGroup`]: a group's peers (primary and `backup`), its method, and
//!   the per-peer counters shared by every worker thread (as nginx shares
//!   them with a `zone`).
//! - [`Tried`]: one request's memory of its attempts (nginx's `tried`
//!   bitmap, `pc->tries` and the hash methods' per-request state).
//! - The methods, one file each: [`round_robin`] (smooth weighted, the
//!   fallback of all others), [`least_conn`], [`ip_hash`], [`hash`] (`hash`
//!   and `hash … consistent`), [`random`] (`random [two]`).
//!
//! No I/O and no logging here: the caller connects, times, logs (`no live
//! upstreams`, `upstream server temporarily disabled`) and reports the
//! outcome with [`PeerGroup::done`].

pub mod hash;
pub mod ip_hash;
pub mod least_conn;
pub mod random;
pub mod round_robin;

use std::fmt;
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use super::peer::{PeerId, PeerSpec, PeerState, PeerStats};

/// Misses (a chosen peer that was tried, down, failed or full) after which
/// `ip_hash`, `hash` and `random` give up and fall back to round robin
/// (nginx's `tries > 20`).
pub const FALLBACK_AFTER_MISSES: u32 = 20;

/// The balancing method of an `upstream` block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Balance {
    /// The default: smooth weighted round robin.
    RoundRobin,
    /// `least_conn`: fewest connections per unit of weight, ties by round
    /// robin.
    LeastConn,
    /// `ip_hash`: the client's address (first three octets of IPv4).
    IpHash,
    /// `random`, or `random two [least_conn]` when `two`.
    Random {
        /// Draw two peers and take the one with fewer connections.
        two: bool,
    },
    /// `hash KEY [consistent]`: the caller evaluates KEY per request and
    /// passes its bytes in [`PickCtx::hash_key`].
    Hash {
        /// The ketama ring (`consistent`) instead of the modulo hash.
        consistent: bool,
    },
}

/// What a pick needs to know about the request.
#[derive(Clone, Copy, Debug, Default)]
pub struct PickCtx<'a> {
    /// The client's address for `ip_hash`, as the connection (or the realip
    /// module) has it; an IPv4-mapped IPv6 address is hashed as IPv6, as
    /// nginx does on a dual-stack socket. `None` (a unix-socket client)
    /// hashes as nginx's pseudo address, three zero bytes.
    pub client_ip: Option<IpAddr>,
    /// The evaluated `hash` key. Empty or `None` makes nginx's hash methods
    /// use round robin.
    pub hash_key: Option<&'a [u8]>,
}

/// The answer of [`PeerGroup::pick`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Connect to this peer, then call [`PeerGroup::done`].
    Peer(PeerId),
    /// Every peer (backups included) is tried, down, failed or at its
    /// `max_conns`: nginx's `NGX_BUSY`, logged as `no live upstreams`.
    NoLive,
}

/// How an attempt ended, for [`PeerGroup::done`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The peer answered. Also for an answer that `proxy_next_upstream`
    /// passes over without blaming the peer (`http_403`, `http_404`:
    /// nginx's `NGX_PEER_NEXT`).
    Ok,
    /// The attempt failed in a way that counts against the peer (nginx's
    /// `NGX_PEER_FAILED`): connect error, timeout, bad header, a
    /// `proxy_next_upstream` status other than 403/404.
    Failed,
}

/// Why a group cannot be made (the configuration layer reports these first,
/// in nginx's words, with file and line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupError {
    /// No primary peer (nginx: `no servers in upstream`).
    NoServers,
    /// A peer with `weight=0` (nginx: `invalid parameter "weight=0"`).
    ZeroWeight {
        /// The peer's `server` string.
        server: String,
    },
}

impl fmt::Display for GroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupError::NoServers => write!(f, "no servers in upstream"),
            GroupError::ZeroWeight { server } => {
                write!(f, "invalid parameter \"weight=0\" of server \"{server}\"")
            }
        }
    }
}

impl std::error::Error for GroupError {}

/// One list of peers, primary or backup, as configured (nginx's
/// `ngx_http_upstream_rr_peers_t` without the counters).
#[derive(Debug)]
pub(crate) struct List {
    /// The peers in `server` line order.
    pub(crate) specs: Vec<PeerSpec>,
    /// The sum of their weights, down ones included.
    pub(crate) total_weight: u64,
    /// How many are not `down`: what each list adds to a request's tries.
    pub(crate) tries: usize,
}

impl List {
    fn new(specs: Vec<PeerSpec>) -> Result<List, GroupError> {
        if let Some(s) = specs.iter().find(|s| s.weight == 0) {
            return Err(GroupError::ZeroWeight {
                server: s.server.to_string(),
            });
        }
        Ok(List {
            total_weight: specs.iter().map(|s| u64::from(s.weight)).sum(),
            tries: specs.iter().filter(|s| !s.down).count(),
            specs,
        })
    }
}

/// The counters every worker updates, behind the group's mutex.
#[derive(Debug)]
pub(crate) struct State {
    /// One per primary peer, in order.
    pub(crate) primary: Vec<PeerState>,
    /// One per backup peer, in order.
    pub(crate) backup: Vec<PeerState>,
    /// The generator `random` draws from.
    pub(crate) rng: random::Rng,
}

impl State {
    /// The counters of the primary or the backup list.
    pub(crate) fn list_mut(&mut self, backup: bool) -> &mut [PeerState] {
        if backup {
            &mut self.backup
        } else {
            &mut self.primary
        }
    }
}

/// An `upstream` group at run time, shared by all worker threads.
#[derive(Debug)]
pub struct PeerGroup {
    /// The primary peers.
    pub(crate) primary: List,
    /// The `backup` peers, used when no primary peer can be.
    pub(crate) backup: List,
    /// The method.
    balance: Balance,
    /// Exactly one primary peer and no backup: nginx's `peers->single`,
    /// a peer that failures never take out.
    pub(crate) single: bool,
    /// The ketama ring of `hash … consistent`.
    pub(crate) ring: Option<hash::Ring>,
    /// `random`'s cumulative weights of the primary peers.
    pub(crate) ranges: Vec<u64>,
    /// Second 0 of the group's clock (nginx counts whole seconds).
    epoch: Instant,
    /// The counters. A std mutex, not an async one: nothing awaits while it
    /// is held, every critical section is a short loop over the peers.
    state: Mutex<State>,
}

impl PeerGroup {
    /// A group of `primary` and `backup` peers balanced by `balance`.
    pub fn new(
        primary: Vec<PeerSpec>,
        backup: Vec<PeerSpec>,
        balance: Balance,
    ) -> Result<PeerGroup, GroupError> {
        if primary.is_empty() {
            return Err(GroupError::NoServers);
        }
        let primary = List::new(primary)?;
        let backup = List::new(backup)?;
        let ring = match balance {
            Balance::Hash { consistent: true } => Some(hash::Ring::new(&primary.specs)),
            _ => None,
        };
        let ranges = match balance {
            Balance::Random { .. } => random::ranges(&primary.specs),
            _ => Vec::new(),
        };
        let state = State {
            primary: primary.specs.iter().map(PeerState::new).collect(),
            backup: backup.specs.iter().map(PeerState::new).collect(),
            rng: random::Rng::seeded(),
        };
        Ok(PeerGroup {
            single: primary.specs.len() == 1 && backup.specs.is_empty(),
            primary,
            backup,
            balance,
            ring,
            ranges,
            epoch: Instant::now(),
            state: Mutex::new(state),
        })
    }

    /// The method.
    pub fn balance(&self) -> Balance {
        self.balance
    }

    /// Peers in both lists.
    pub fn len(&self) -> usize {
        self.primary.specs.len() + self.backup.specs.len()
    }

    /// Always false: a group has a primary peer.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every peer with its id: the primary list, then the backup list.
    pub fn peers(&self) -> impl Iterator<Item = (PeerId, &PeerSpec)> {
        let primary = self.primary.specs.iter().enumerate();
        let backup = self.backup.specs.iter().enumerate();
        primary
            .map(|(i, s)| (PeerId::new(false, i), s))
            .chain(backup.map(|(i, s)| (PeerId::new(true, i), s)))
    }

    /// The peer `id` as configured. Panics on an id not made by this group.
    pub fn spec(&self, id: PeerId) -> &PeerSpec {
        &self.list(id.is_backup()).specs[id.index()]
    }

    /// The peer's counters, for metrics. Panics on an id not made by this
    /// group.
    pub fn stats(&self, id: PeerId) -> PeerStats {
        self.lock().list_mut(id.is_backup())[id.index()].stats()
    }

    /// Chooses the peer for the request's next attempt and counts a
    /// connection to it; `Pick::NoLive` when none can take it.
    pub fn pick(&self, ctx: &PickCtx<'_>, tried: &mut Tried, now: Instant) -> Pick {
        let now = self.seconds(now);
        let mut guard = self.lock();
        let st = &mut *guard;
        let key = ctx.hash_key.unwrap_or_default();
        let id = match self.balance {
            Balance::RoundRobin => round_robin::get(self, st, tried, now),
            Balance::LeastConn => least_conn::get(self, st, tried, now),
            Balance::IpHash => ip_hash::get(self, st, tried, ctx.client_ip, now),
            Balance::Hash { consistent: false } => hash::get(self, st, tried, key, now),
            Balance::Hash { consistent: true } => hash::get_consistent(self, st, tried, key, now),
            Balance::Random { two } => random::get(self, st, tried, two, now),
        };
        match id {
            Some(id) => Pick::Peer(id),
            None => Pick::NoLive,
        }
    }

    /// Reports how the attempt on `peer` ended (nginx's
    /// `ngx_http_upstream_free_round_robin_peer`, shared by every method):
    /// gives its connection back, counts a failure or clears old ones, and
    /// uses up one of the request's tries. Returns true when this failure
    /// took the peer out for `fail_timeout` (nginx then logs `upstream
    /// server temporarily disabled` at `warn`). Panics on an id not made by
    /// this group.
    pub fn done(&self, tried: &mut Tried, peer: PeerId, outcome: Outcome, now: Instant) -> bool {
        let now = self.seconds(now);
        let mut guard = self.lock();
        round_robin::free(self, &mut guard, tried, peer, outcome, now)
    }

    /// The configured list holding primary or backup peers.
    pub(crate) fn list(&self, backup: bool) -> &List {
        if backup { &self.backup } else { &self.primary }
    }

    /// Whole seconds since the group was made: nginx's `ngx_time()`
    /// arithmetic on `fail_timeout` windows.
    fn seconds(&self, now: Instant) -> i64 {
        let secs = now.saturating_duration_since(self.epoch).as_secs();
        i64::try_from(secs).unwrap_or(i64::MAX)
    }

    /// The counters. A worker that panicked while holding the lock left
    /// plain numbers behind, still usable, so poisoning is ignored.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One request's attempts on a group: which peers it tried, whether it moved
/// on to the backup list, how many tries it has left, and the hash methods'
/// state carried from one attempt to the next.
#[derive(Clone, Debug)]
pub struct Tried {
    /// The peers of the current list already tried (nginx's `tried`).
    pub(crate) bits: Bitmap,
    /// Whether the request moved on to the backup list (nginx's
    /// `rrp->peers == peers->next`).
    pub(crate) backup: bool,
    /// Tries left (nginx's `pc->tries`).
    remaining: usize,
    /// `ip_hash`, `hash` and `random`'s misses; past
    /// [`FALLBACK_AFTER_MISSES`] they use round robin.
    pub(crate) misses: u32,
    /// `ip_hash`: the running hash (starts at 89); `hash`: the sum of the
    /// key's hashes; `hash … consistent`: the ring point.
    pub(crate) hash: u32,
    /// `hash`: how many times the key was hashed.
    pub(crate) rehash: u64,
    /// `hash … consistent`: whether `hash` holds the key's ring point yet.
    pub(crate) ring_started: bool,
}

/// `ip_hash`'s starting value (nginx's `iphp->hash = 89`).
const IP_HASH_START: u32 = 89;

impl Tried {
    /// A request that has tried nothing: its tries are the peers of both
    /// lists that are not `down` (nginx's `ngx_http_upstream_tries`).
    pub fn new(group: &PeerGroup) -> Tried {
        let longest = group.primary.specs.len().max(group.backup.specs.len());
        Tried {
            bits: Bitmap::new(longest),
            backup: false,
            remaining: group.primary.tries + group.backup.tries,
            misses: 0,
            hash: match group.balance {
                Balance::IpHash => IP_HASH_START,
                _ => 0,
            },
            rehash: 0,
            ring_started: false,
        }
    }

    /// Tries left (nginx's `pc->tries`): the proxy gives up on
    /// `proxy_next_upstream` when it reaches 0. A lone peer leaves none after
    /// its attempt.
    pub fn remaining(&self) -> usize {
        self.remaining
    }

    /// Whether the request moved on to the backup peers.
    pub fn in_backup(&self) -> bool {
        self.backup
    }

    /// Whether peer `id` was tried (in the list the request is on now).
    pub fn contains(&self, id: PeerId) -> bool {
        id.is_backup() == self.backup && self.bits.test(id.index())
    }

    /// Gives back one try: a connection from the keep-alive cache failed,
    /// which says nothing of the peer (nginx's `u->peer.tries++` for a
    /// cached connection in `ngx_http_upstream_next`).
    pub fn add_try(&mut self) {
        self.remaining += 1;
    }

    /// Uses up one try (`lone` peer: all of them).
    pub(crate) fn use_try(&mut self, lone: bool) {
        if lone {
            self.remaining = 0;
        } else {
            self.remaining = self.remaining.saturating_sub(1);
        }
    }
}

/// Bits per word of a [`Bitmap`].
const WORD_BITS: usize = u64::BITS as usize;

/// A set of peer positions; no allocation up to 64 peers.
#[derive(Clone, Debug)]
pub(crate) struct Bitmap {
    /// Positions 0..64.
    first: u64,
    /// Positions from 64 on, 64 per word.
    rest: Vec<u64>,
}

impl Bitmap {
    /// An empty set for positions below `len`.
    fn new(len: usize) -> Bitmap {
        let words = len.div_ceil(WORD_BITS).saturating_sub(1);
        Bitmap {
            first: 0,
            rest: vec![0; words],
        }
    }

    /// The word and bit of position `i`.
    fn slot(&mut self, i: usize) -> (&mut u64, u64) {
        let bit = 1u64 << (i % WORD_BITS);
        match i / WORD_BITS {
            0 => (&mut self.first, bit),
            w => (&mut self.rest[w - 1], bit),
        }
    }

    /// Whether position `i` is in the set.
    pub(crate) fn test(&self, i: usize) -> bool {
        let bit = 1u64 << (i % WORD_BITS);
        let word = match i / WORD_BITS {
            0 => self.first,
            w => self.rest.get(w - 1).copied().unwrap_or(0),
        };
        word & bit != 0
    }

    /// Adds position `i`.
    pub(crate) fn set(&mut self, i: usize) {
        let (word, bit) = self.slot(i);
        *word |= bit;
    }

    /// Empties the set (moving on to the backup list).
    pub(crate) fn clear(&mut self) {
        self.first = 0;
        self.rest.iter_mut().for_each(|w| *w = 0);
    }
}

#[cfg(test)]
mod tests;
