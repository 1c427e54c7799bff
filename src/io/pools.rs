//! [`Pools`]: every configured thread pool by name, and the defaults nginx
//! gives the implicit `default` pool.

use super::pool::Pool;
use rustc_hash::FxHashMap as HashMap;
use std::io;
use std::sync::Arc;

/// Name of the implicit pool behind `aio threads;`.
pub const DEFAULT_POOL: &str = "default";
/// `threads=` of the implicit `default` pool (nginx's value).
pub const DEFAULT_THREADS: usize = 32;
/// `max_queue=` of every pool that does not set it (nginx's value).
pub const DEFAULT_MAX_QUEUE: usize = 65536;

/// Every configured pool by name: `aio threads=NAME` (or `pool_$disk`,
/// resolved per request) looks its pool up here.
#[derive(Debug, Default)]
pub struct Pools {
    /// By name. Looked up on every request of a location with `aio
    /// threads`: a fast hash, not SipHash, since the names come from the
    /// configuration, never from a client.
    pools: HashMap<String, Arc<Pool>>,
}

impl Pools {
    /// No pools.
    pub fn new() -> Pools {
        Pools::default()
    }

    /// Starts pool `name`; `AlreadyExists` if one of that name exists
    /// (the config layer reports `duplicate thread pool "NAME"` first).
    pub fn add(&mut self, name: &str, threads: usize, max_queue: usize) -> io::Result<Arc<Pool>> {
        self.add_with_init(name, threads, max_queue, None)
    }

    /// As [`Pools::add`], running `init` first on each of the pool's threads.
    pub fn add_with_init(
        &mut self,
        name: &str,
        threads: usize,
        max_queue: usize,
        init: Option<super::pool::ThreadInit>,
    ) -> io::Result<Arc<Pool>> {
        if self.pools.contains_key(name) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("duplicate thread pool \"{name}\""),
            ));
        }
        let pool = Pool::with_thread_init(name, threads, max_queue, init, None)?;
        self.pools.insert(name.to_owned(), Arc::clone(&pool));
        Ok(pool)
    }

    /// Adds `pool` under its own name (replacing one of that name).
    pub fn insert(&mut self, pool: Arc<Pool>) {
        self.pools.insert(pool.name().to_owned(), pool);
    }

    /// The pool named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Pool>> {
        self.pools.get(name)
    }

    /// Every pool, in no particular order (for metrics).
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Pool>> {
        self.pools.values()
    }

    /// Shuts every pool down: refuses new work everywhere first, then joins.
    pub fn shutdown(&self) {
        for p in self.pools.values() {
            p.close();
        }
        for p in self.pools.values() {
            p.shutdown();
        }
    }
}
