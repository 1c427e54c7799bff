//! What belongs to the process rather than to one configuration
//! generation, and so outlives a reload: the thread pools (one per name for
//! the life of the process, resized when a reload changes them), the idle
//! upstream connections, and each worker's measurements.
//!
//! A generation ([`super::site::Site`]) borrows from here; when a reload
//! starts a new one, the pools it names are the same pools, so a disk with
//! `threads=16` never gets 32 while the old generation drains.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::config::model::ThreadPoolConf;
use crate::io::pool::ThreadInit;
use crate::io::{Pool, Pools};
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
    /// of the name (and identity) is resized, a new name starts a pool, and
    /// pools no longer named are retired. The error names the pool.
    pub fn pools_for(
        &self,
        wanted: &[ThreadPoolConf],
        identity: Identity,
        init: ThreadInit,
    ) -> Result<Pools, (String, std::io::Error)> {
        let mut all = lock(&self.pools);
        let mut out = Pools::new();
        for w in wanted {
            let reuse = all
                .get(&w.name)
                .filter(|e| e.identity == identity)
                .map(|e| e.pool.clone());
            let pool = match reuse {
                Some(p) => {
                    p.resize(w.threads, w.max_queue)
                        .map_err(|e| (w.name.clone(), e))?;
                    p
                }
                None => {
                    let p =
                        Pool::with_thread_init(&w.name, w.threads, w.max_queue, Some(init.clone()))
                            .map_err(|e| (w.name.clone(), e))?;
                    if let Some(old) = all.insert(
                        w.name.clone(),
                        PoolEntry {
                            pool: p.clone(),
                            identity,
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

    /// Every worker's measurements, by worker number.
    pub fn all_worker_metrics(&self) -> Vec<Arc<WorkerMetrics>> {
        lock(&self.metrics).values().cloned().collect()
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
            .pools_for(&[conf("disk", 2)], None, init.clone())
            .unwrap();
        let second = shared
            .pools_for(&[conf("disk", 3), conf("other", 1)], None, init.clone())
            .unwrap();
        let (a, b) = (first.get("disk").unwrap(), second.get("disk").unwrap());
        assert!(Arc::ptr_eq(a, b), "the same pool, not a second one");
        assert_eq!(b.alive(), 3);
        // A pool the next configuration drops is retired, and shut down
        // once no generation holds it.
        let third = shared.pools_for(&[conf("disk", 1)], None, init).unwrap();
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
