//! The upstream groups of one configuration generation: each `upstream`
//! block (and each group `proxy_pass` made implicitly) as a balancer over
//! its peers, with the `hash` key and the `keepalive` settings the proxy
//! needs per request.
//!
//! Peer state (failures, connections) belongs to the generation, as nginx's
//! belongs to its cycle; the idle connections a group's `keepalive` keeps
//! belong to the process (`server::shared`) and outlive the reload.

// Looked up on every proxied request: a fast hash, not SipHash (the keys
// come from the configuration, not from clients).
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use crate::config::model::{HttpConf, Upstream, UpstreamAddr, UpstreamBalance};
use crate::config::template::Template;
use crate::metrics::upstream::{PeerMetrics, PeerSample};
use crate::server::core::shared::Shared;
use crate::upstream::keepalive::Key;
use crate::upstream::keepalive::Limits;
use crate::upstream::{Balance, PeerAddr, PeerGroup, PeerId, PeerSpec};

/// One upstream group ready to serve.
pub struct Group {
    /// The group's name (`$upstream_addr` when no peer is live).
    pub name: Arc<str>,
    /// The balancer over its peers.
    pub peers: PeerGroup,
    /// `hash KEY`: the key, evaluated per request.
    pub hash_key: Option<Template>,
    /// `keepalive` and its companions, when the group caches connections.
    pub keepalive: Option<Limits>,
    /// nginx's `uscf->host` and `uscf->port`, for a `proxy_pass` with
    /// variables.
    pub host: String,
    /// See [`Group::host`]; 0 for a block.
    pub port: u16,
    /// Each peer's measurements (the process's, across reloads).
    pub metrics: HashMap<PeerId, Arc<PeerMetrics>>,
}

impl Group {
    /// Records an exchange with `peer` that ended after `took`.
    pub fn record(&self, peer: PeerId, ok: bool, took: std::time::Duration) {
        if let Some(m) = self.metrics.get(&peer) {
            m.record(ok, took);
        }
    }
}

/// Every group of a generation, by name.
#[derive(Default)]
pub struct Groups {
    by_name: HashMap<String, Arc<Group>>,
    /// In configuration order, for `proxy_pass` with variables.
    ordered: Vec<Arc<Group>>,
}

fn peer_addr(a: &UpstreamAddr) -> PeerAddr {
    match a {
        UpstreamAddr::Inet(s) => PeerAddr::Inet(*s),
        UpstreamAddr::Unix(p) => PeerAddr::Unix(p.clone()),
    }
}

fn balance(b: &UpstreamBalance) -> (Balance, Option<Template>) {
    match b {
        UpstreamBalance::RoundRobin => (Balance::RoundRobin, None),
        UpstreamBalance::LeastConn => (Balance::LeastConn, None),
        UpstreamBalance::IpHash => (Balance::IpHash, None),
        UpstreamBalance::Random { two } => (Balance::Random { two: *two }, None),
        UpstreamBalance::Hash { key, consistent } => (
            Balance::Hash {
                consistent: *consistent,
            },
            Some(key.clone()),
        ),
    }
}

/// A group from its configuration; `workers` sizes the keep-alive cache.
pub fn build(u: &Upstream, workers: usize, shared: &Shared) -> Result<Group, String> {
    let (mut primary, mut backup) = (Vec::new(), Vec::new());
    let (method, hash_key) = balance(&u.balance);
    let backups_used = matches!(method, Balance::RoundRobin | Balance::LeastConn);
    for s in &u.servers {
        if s.backup && !backups_used {
            // nginx accepts a `backup` written before the balancer that
            // ignores it; those peers are never used.
            continue;
        }
        for a in &s.addrs {
            let mut p = PeerSpec::new(peer_addr(a), &a.to_string(), &s.address);
            p.weight = s.weight;
            p.max_fails = s.max_fails;
            p.fail_timeout = s.fail_timeout;
            p.down = s.down;
            p.max_conns = s.max_conns;
            if s.backup {
                backup.push(p);
            } else {
                primary.push(p);
            }
        }
    }
    let peers = PeerGroup::new(primary, backup, method)
        .map_err(|e| format!("upstream \"{}\": {e}", u.name))?;
    let metrics = peers
        .peers()
        .map(|(id, spec)| (id, shared.peer_metrics(&u.name, &spec.name)))
        .collect();
    Ok(Group {
        metrics,
        name: Arc::from(u.name.as_str()),
        peers,
        hash_key,
        keepalive: u.keepalive.map(|n| Limits {
            per_worker: n as usize,
            workers,
            timeout: u.keepalive_timeout,
            max_requests: u.keepalive_requests,
            max_age: u.keepalive_time,
        }),
        host: u.host.clone(),
        port: u.port,
    })
}

impl Groups {
    /// The groups of `http`.
    pub fn new(http: &HttpConf, workers: usize, shared: &Shared) -> Result<Groups, String> {
        let mut g = Groups::default();
        for u in &http.upstreams {
            let group = Arc::new(build(u, workers, shared)?);
            g.by_name.insert(u.name.clone(), group.clone());
            g.ordered.push(group);
        }
        Ok(g)
    }

    /// The group named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Group>> {
        self.by_name.get(name)
    }

    /// The group a `proxy_pass` URL evaluated at run time names, as
    /// `ngx_http_upstream_init_request` finds it: the host compared without
    /// case, and either a block (port 0) named by a URL without a port, or
    /// the same port.
    pub fn find(&self, host: &str, port: u16, port_given: bool) -> Option<&Arc<Group>> {
        self.ordered.iter().find(|g| {
            g.host.eq_ignore_ascii_case(host) && ((g.port == 0 && !port_given) || g.port == port)
        })
    }

    /// Every group, in configuration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Group>> {
        self.ordered.iter()
    }

    /// Every server's figures, for the status page.
    pub fn samples(&self, shared: &Shared) -> Vec<PeerSample> {
        let mut out = Vec::new();
        for g in &self.ordered {
            for (id, spec) in g.peers.peers() {
                let Some(m) = g.metrics.get(&id) else {
                    continue;
                };
                let idle = shared.keepalive.idle_for(&Key {
                    group: g.name.clone(),
                    peer: spec.addr.clone(),
                    tls: None,
                });
                out.push(m.sample(&g.name, &spec.name, g.peers.stats(id).conns, idle as u64));
            }
        }
        out
    }
}
