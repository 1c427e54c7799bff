//! What one upstream peer is ([`PeerSpec`], built by the configuration layer
//! from a `server` line) and what the balancer remembers about it at run time
//! ([`PeerState`], nginx's `ngx_http_upstream_rr_peer_t` counters).
//!
//! nginx makes one peer per resolved address of a `server` line; each peer
//! carries the line's parameters. This module only describes peers: choosing
//! one is `balance`'s, connecting to one is the proxy's.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// `weight=` when the `server` line does not say (nginx's value).
pub const DEFAULT_WEIGHT: u32 = 1;
/// `max_fails=` when the `server` line does not say (nginx's value).
pub const DEFAULT_MAX_FAILS: u32 = 1;
/// `fail_timeout=` when the `server` line does not say (nginx's value).
pub const DEFAULT_FAIL_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a peer listens.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PeerAddr {
    /// A TCP address (`server 127.0.0.1:8080;`, or one address a name
    /// resolved to).
    Inet(SocketAddr),
    /// A unix-domain socket (`server unix:/run/app.sock;`).
    Unix(PathBuf),
}

/// One peer as configured: an address and its `server` line's parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerSpec {
    /// Where to connect.
    pub addr: PeerAddr,
    /// The address as `$upstream_addr` prints it: `127.0.0.1:8081`,
    /// `[::1]:8081` or `unix:/path`.
    pub name: Arc<str>,
    /// The `server` line's address exactly as written (`example.com:8080`,
    /// `unix:/path`); every peer of one line shares it. The consistent hash
    /// places its ring points from this string, as nginx uses
    /// `peer->server`, so that nodes agree whatever the names resolve to.
    pub server: Arc<str>,
    /// `weight=`, at least 1.
    pub weight: u32,
    /// `max_fails=`: failures within `fail_timeout` that take the peer out
    /// for `fail_timeout`; 0 never takes it out.
    pub max_fails: u32,
    /// `fail_timeout=`: the window failures are counted in and how long a
    /// failed peer stays out. nginx keeps whole seconds; so does the
    /// balancer (the fraction is dropped).
    pub fail_timeout: Duration,
    /// `down`: never chosen.
    pub down: bool,
    /// `max_conns=`: connections the peer may have at once; 0 is no limit.
    pub max_conns: u32,
}

impl PeerSpec {
    /// A peer with nginx's default parameters (`weight=1 max_fails=1
    /// fail_timeout=10s`, not down, no `max_conns`).
    pub fn new(addr: PeerAddr, name: &str, server: &str) -> PeerSpec {
        PeerSpec {
            addr,
            name: Arc::from(name),
            server: Arc::from(server),
            weight: DEFAULT_WEIGHT,
            max_fails: DEFAULT_MAX_FAILS,
            fail_timeout: DEFAULT_FAIL_TIMEOUT,
            down: false,
            max_conns: 0,
        }
    }

    /// A TCP peer whose `name` and `server` are both `addr` as nginx prints
    /// it (the usual case of `server 127.0.0.1:8080;`).
    pub fn inet(addr: SocketAddr) -> PeerSpec {
        let text = addr.to_string();
        PeerSpec::new(PeerAddr::Inet(addr), &text, &text)
    }

    /// `fail_timeout` in whole seconds, as nginx's `time_t` arithmetic sees
    /// it.
    pub(crate) fn fail_timeout_secs(&self) -> i64 {
        i64::try_from(self.fail_timeout.as_secs()).unwrap_or(i64::MAX)
    }
}

/// Which peer of a group: the primary list or the `backup` list, and the
/// position in it (the order of the `server` lines, then of the addresses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PeerId {
    /// Whether the peer is in the backup list.
    backup: bool,
    /// Its position in its list.
    index: usize,
}

impl PeerId {
    /// The peer at `index` of the primary list (`backup == false`) or of the
    /// backup list.
    pub fn new(backup: bool, index: usize) -> PeerId {
        PeerId { backup, index }
    }

    /// Whether the peer is a `backup` one.
    pub fn is_backup(self) -> bool {
        self.backup
    }

    /// Its position in its list.
    pub fn index(self) -> usize {
        self.index
    }
}

/// A peer's counters as metrics read them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerStats {
    /// Connections picked and not yet given back with `done`.
    pub conns: u64,
    /// Failures counted in the current `fail_timeout` window (reset by a
    /// success after the window).
    pub fails: u64,
    /// The weight the smooth round robin uses now: lowered by failures,
    /// climbing back by one per pick.
    pub effective_weight: i64,
}

/// A moment that is long before any `now` (nginx's zeroed `time_t`, 1970).
pub(crate) const NEVER: i64 = -(1 << 40);

/// What the balancer remembers about one peer (nginx's
/// `ngx_http_upstream_rr_peer_t` counters); times are whole seconds since the
/// group was made.
#[derive(Clone, Debug)]
pub(crate) struct PeerState {
    /// The smooth weighted round robin's running score.
    pub(crate) current_weight: i64,
    /// The weight in use: `weight`, lowered by failures, restored by picks.
    pub(crate) effective_weight: i64,
    /// Connections in use.
    pub(crate) conns: u64,
    /// Failures counted.
    pub(crate) fails: u64,
    /// When the last failure happened.
    pub(crate) accessed: i64,
    /// When the failure window was last restarted (a failure, or a pick
    /// after the window ended).
    pub(crate) checked: i64,
}

impl PeerState {
    /// A fresh peer: effective weight `weight`, no history.
    pub(crate) fn new(spec: &PeerSpec) -> PeerState {
        PeerState {
            current_weight: 0,
            effective_weight: i64::from(spec.weight),
            conns: 0,
            fails: 0,
            accessed: NEVER,
            checked: NEVER,
        }
    }

    /// Whether the peer is out because it failed `max_fails` times and
    /// `fail_timeout` has not passed since (nginx's repeated test in every
    /// balancer).
    pub(crate) fn failed(&self, spec: &PeerSpec, now: i64) -> bool {
        spec.max_fails != 0
            && self.fails >= u64::from(spec.max_fails)
            && now.saturating_sub(self.checked) <= spec.fail_timeout_secs()
    }

    /// Whether the peer is at its `max_conns`.
    pub(crate) fn full(&self, spec: &PeerSpec) -> bool {
        spec.max_conns != 0 && self.conns >= u64::from(spec.max_conns)
    }

    /// Whether the peer may be chosen: not down, not failed, not full.
    pub(crate) fn usable(&self, spec: &PeerSpec, now: i64) -> bool {
        !spec.down && !self.failed(spec, now) && !self.full(spec)
    }

    /// Restarts the failure window when it has passed (done on every pick).
    pub(crate) fn touch(&mut self, spec: &PeerSpec, now: i64) {
        if now.saturating_sub(self.checked) > spec.fail_timeout_secs() {
            self.checked = now;
        }
    }

    /// The counters metrics read.
    pub(crate) fn stats(&self) -> PeerStats {
        PeerStats {
            conns: self.conns,
            fails: self.fails,
            effective_weight: self.effective_weight,
        }
    }
}
