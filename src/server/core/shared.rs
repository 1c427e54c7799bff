//! What belongs to the process rather than to one configuration
//! generation, and so outlives a reload: the thread pools (one per name for
//! the life of the process, resized when a reload changes them), the idle
//! upstream connections, each worker's measurements, and the tables of the
//! `limit_req` and `limit_conn` zones.
//!
//! A generation ([`crate::server::core::site::Site`]) borrows from here; when a reload
//! starts a new one, the pools it names are the same pools, so a disk with
//! `threads=16` never gets 32 while the old generation drains.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::cache::zone::Zone;
use crate::config::model::CachePath;
use crate::config::model::ThreadPoolConf;
use crate::io::pool::ThreadInit;
use crate::io::{Pool, Pools};
use crate::log::ErrorLog;
use crate::metrics::WorkerMetrics;
use crate::metrics::upstream::PeerMetrics;
use crate::upstream::keepalive;

/// Who a pool's threads run as (uid, gid), or `None` for the invoking
/// user. A pool keeps its threads' identity; a reload that changes `user`
/// gets new pools.
pub type Identity = Option<(u32, u32)>;

struct PoolEntry {
    pool: Arc<Pool>,
    identity: Identity,
    /// The loops' `worker_priority` its threads run below: they take it
    /// when they start, so a reload that changes it gets new pools too.
    loop_nice: Option<i32>,
}

/// The process's state.
#[derive(Default)]
pub struct Shared {
    pools: Mutex<HashMap<String, PoolEntry>>,
    /// Pools a reload replaced or dropped, shut down once no generation
    /// holds them.
    retired: Mutex<Vec<Arc<Pool>>>,
    /// Idle upstream connections.
    pub keepalive: keepalive::Cache,
    metrics: Mutex<BTreeMap<usize, Arc<WorkerMetrics>>>,
    /// Per upstream server (group, peer name), across reloads.
    peers: Mutex<HashMap<(String, String), Arc<PeerMetrics>>>,
    /// The cache zones (keys zones), by name, across reloads.
    zones: Mutex<HashMap<String, Arc<Zone>>>,
    /// The `limit_req_zone` and `limit_conn_zone` tables, across reloads.
    pub limits: crate::server::core::hooks::access::Registry,
    /// The status page's last minutes, one sample a second
    /// (`server::modules::status_ring`).
    ring: Mutex<crate::metrics::ring::Ring>,
    /// Whether the sampler that fills [`Shared::ring`] was started.
    sampler: std::sync::atomic::AtomicBool,
    /// TLS session caches and ticket keys, across reloads.
    pub tls: crate::server::engine::tls::TlsShared,
    /// The ACME client (nginx's ACME module): its issuers' threads and
    /// the certificates and challenge tokens they keep, across reloads.
    pub acme: crate::acme::service::Service,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// Empty state.
    pub fn new() -> Arc<Shared> {
        Arc::new(Shared::default())
    }

    /// The pools a configuration names, made to match it: an existing pool
    /// of the name (identity and loops' priority) is resized, a new name
    /// starts a pool, and pools no longer named are retired. The error
    /// names the pool.
    pub fn pools_for(
        &self,
        wanted: &[ThreadPoolConf],
        identity: Identity,
        loop_nice: Option<i32>,
        init: ThreadInit,
    ) -> Result<Pools, (String, std::io::Error)> {
        let mut all = lock(&self.pools);
        let mut out = Pools::new();
        for w in wanted {
            let reuse = all
                .get(&w.name)
                .filter(|e| e.identity == identity && e.loop_nice == loop_nice)
                .map(|e| e.pool.clone());
            let pool = match reuse {
                Some(p) => {
                    p.resize(w.threads, w.max_queue)
                        .map_err(|e| (w.name.clone(), e))?;
                    p
                }
                None => {
                    let p = Pool::with_thread_init(
                        &w.name,
                        w.threads,
                        w.max_queue,
                        Some(init.clone()),
                        loop_nice,
                    )
                    .map_err(|e| (w.name.clone(), e))?;
                    if let Some(old) = all.insert(
                        w.name.clone(),
                        PoolEntry {
                            pool: p.clone(),
                            identity,
                            loop_nice,
                        },
                    ) {
                        lock(&self.retired).push(old.pool);
                    }
                    p
                }
            };
            out.insert(pool);
        }
        let gone: Vec<String> = all
            .keys()
            .filter(|n| !wanted.iter().any(|w| &w.name == *n))
            .cloned()
            .collect();
        for name in gone {
            if let Some(e) = all.remove(&name) {
                lock(&self.retired).push(e.pool);
            }
        }
        Ok(out)
    }

    /// Shuts down retired pools no generation holds any more (`Arc`
    /// counts: the list's own reference only). Blocks while their queues
    /// drain: call from the main thread, never a loop.
    pub fn reap_pools(&self) {
        let idle: Vec<Arc<Pool>> = {
            let mut retired = lock(&self.retired);
            let (idle, busy): (Vec<_>, Vec<_>) =
                retired.drain(..).partition(|p| Arc::strong_count(p) == 1);
            *retired = busy;
            idle
        };
        for p in idle {
            p.shutdown();
        }
    }

    /// Shuts every pool down (at exit).
    pub fn shutdown_pools(&self) {
        let all: Vec<Arc<Pool>> = lock(&self.pools)
            .drain()
            .map(|(_, e)| e.pool)
            .chain(lock(&self.retired).drain(..))
            .collect();
        for p in &all {
            p.close();
        }
        for p in &all {
            p.shutdown();
        }
    }

    /// Worker `id`'s measurements, the same across generations.
    pub fn worker_metrics(&self, id: usize) -> Arc<WorkerMetrics> {
        lock(&self.metrics)
            .entry(id)
            .or_insert_with(|| Arc::new(WorkerMetrics::new(id)))
            .clone()
    }

    /// The measurements of server `peer` of upstream group `group`, the
    /// same across generations.
    pub fn peer_metrics(&self, group: &str, peer: &str) -> Arc<PeerMetrics> {
        lock(&self.peers)
            .entry((group.to_string(), peer.to_string()))
            .or_default()
            .clone()
    }

    /// The cache zones a configuration declares: a zone of the same name,
    /// path, levels and limits keeps its index (and its loader's work)
    /// across a reload; a new or changed one starts cold, with a loader
    /// thread that walks its directory at once and a manager thread that
    /// lives as long as the zone. Both threads run as `user` (`init`).
    pub fn zones_for(
        &self,
        paths: &[CachePath],
        init: &ThreadInit,
        log: &ErrorLog,
    ) -> HashMap<String, Arc<Zone>> {
        let mut all = lock(&self.zones);
        let mut out = HashMap::new();
        for p in paths {
            let same = all.get(&p.zone).filter(|z| same_path(&z.conf, p)).cloned();
            let zone = match same {
                Some(z) => z,
                None => {
                    let z = Arc::new(Zone::new(p.clone()));
                    start_threads(&z, init, log);
                    all.insert(p.zone.clone(), z.clone());
                    z
                }
            };
            out.insert(p.zone.clone(), zone);
        }
        all.retain(|name, _| out.contains_key(name));
        out
    }

    /// Every pool the process runs now (not the retired ones).
    pub fn all_pools(&self) -> Vec<Arc<Pool>> {
        lock(&self.pools).values().map(|e| e.pool.clone()).collect()
    }

    /// Every cache zone the current configuration declares.
    pub fn all_zones(&self) -> Vec<Arc<Zone>> {
        lock(&self.zones).values().cloned().collect()
    }

    /// Claims the start of the status sampler: true for the first caller.
    pub fn claim_sampler(&self) -> bool {
        !self
            .sampler
            .swap(true, std::sync::atomic::Ordering::Relaxed)
    }

    /// Appends one second to the status ring.
    pub fn push_second(&self, s: crate::metrics::ring::Second) {
        lock(&self.ring).push(s);
    }

    /// The status ring's seconds after `since` (Unix seconds) as JSON.
    pub fn ring_json(&self, since: u64) -> String {
        lock(&self.ring).json(since)
    }

    /// Every worker's measurements, by worker number.
    pub fn all_worker_metrics(&self) -> Vec<Arc<WorkerMetrics>> {
        lock(&self.metrics).values().cloned().collect()
    }
}

/// Whether two `proxy_cache_path`s describe the same zone (where they
/// were written does not matter).
fn same_path(a: &CachePath, b: &CachePath) -> bool {
    a.path == b.path
        && a.levels == b.levels
        && a.zone_size == b.zone_size
        && a.max_size == b.max_size
        && a.inactive == b.inactive
        && a.use_temp_path == b.use_temp_path
        && a.min_free == b.min_free
        && a.manager_files == b.manager_files
        && a.manager_sleep == b.manager_sleep
        && a.manager_threshold == b.manager_threshold
        && a.loader_files == b.loader_files
        && a.loader_sleep == b.loader_sleep
        && a.loader_threshold == b.loader_threshold
}

/// Starts a zone's loader and manager threads.
fn start_threads(zone: &Arc<Zone>, init: &ThreadInit, log: &ErrorLog) {
    let name = |what: &str| {
        crate::io::thread_name(&format!("{what}:{}", zone.name()), 0)
            .trim_end_matches("#0")
            .to_string()
    };
    {
        let (zone, init, log1) = (zone.clone(), init.clone(), log.clone());
        let spawned = std::thread::Builder::new()
            .name(name("loader"))
            .spawn(move || {
                init();
                crate::cache::loader::run(zone, log1)
            });
        if let Err(e) = spawned {
            log.log(
                crate::log::Level::Alert,
                None,
                format_args!("could not start the cache loader ({e})"),
            );
        }
    }
    let (weak, init, log2) = (Arc::downgrade(zone), init.clone(), log.clone());
    let spawned = std::thread::Builder::new()
        .name(name("manager"))
        .spawn(move || {
            init();
            crate::cache::manager::run(weak, log2)
        });
    if let Err(e) = spawned {
        log.log(
            crate::log::Level::Alert,
            None,
            format_args!("could not start the cache manager ({e})"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(name: &str, threads: usize) -> ThreadPoolConf {
        ThreadPoolConf {
            name: name.into(),
            threads,
            max_queue: 10,
            loc: None,
        }
    }

    #[test]
    fn a_reload_resizes_the_one_pool_of_a_name() {
        let shared = Shared::new();
        let init: ThreadInit = Arc::new(|| {});
        let first = shared
            .pools_for(&[conf("disk", 2)], None, None, init.clone())
            .unwrap();
        let second = shared
            .pools_for(
                &[conf("disk", 3), conf("other", 1)],
                None,
                None,
                init.clone(),
            )
            .unwrap();
        let (a, b) = (first.get("disk").unwrap(), second.get("disk").unwrap());
        assert!(Arc::ptr_eq(a, b), "the same pool, not a second one");
        assert_eq!(b.alive(), 3);
        // A pool the next configuration drops is retired, and shut down
        // once no generation holds it.
        let third = shared
            .pools_for(&[conf("disk", 1)], None, None, init)
            .unwrap();
        drop(second);
        shared.reap_pools();
        assert_eq!(third.iter().count(), 1);
        drop(first);
        shared.shutdown_pools();
    }

    #[test]
    fn metrics_outlive_a_generation() {
        let shared = Shared::new();
        let a = shared.worker_metrics(1);
        let b = shared.worker_metrics(1);
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(shared.all_worker_metrics().len(), 1);
    }
}
