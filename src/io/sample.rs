//! [`sample`]: the pools' and the file layer's numbers, copied out for the
//! status page as the metrics layer's plain types (`metrics::pools`), which
//! name nothing of `io`.

use super::Pools;
use crate::metrics::pools::{FileLayerSample, IoSample, PoolSample};

/// Every pool's counters and timings and the file layer's counters, now.
/// Takes each pool thread's timing lock briefly: for the status page, not a
/// loop's hot path.
pub fn sample(pools: &Pools) -> IoSample {
    let pins = super::pins::stats();
    let popularity = super::popularity::stats();
    IoSample {
        pools: pools
            .iter()
            .map(|p| PoolSample {
                name: p.name().to_string(),
                stats: p.stats(),
                timings: p.timings(),
            })
            .collect(),
        files: FileLayerSample {
            deferred_closes: super::closer::deferred(),
            popularity_touches: popularity.touches,
            popularity_agings: popularity.agings,
            read_ahead_bytes: super::read_ahead::advised_bytes(),
            memory_short: super::pressure::reclaiming(),
            pinned_files: pins.files,
            pinned_bytes: pins.bytes,
            pinned_budget: super::pins::budget(),
            pins_dropped: pins.dropped,
            pin_failures: pins.failures,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_is_sampled_with_its_name_and_threads() {
        let mut pools = Pools::new();
        pools.add("disk", 2, 0).expect("a pool of two threads");
        let s = sample(&pools);
        pools.shutdown();
        assert_eq!(s.pools.len(), 1);
        assert_eq!(s.pools[0].name, "disk");
        assert_eq!(s.pools[0].stats.threads, 2);
        assert_eq!(s.pools[0].stats.overflows, 0);
    }
}
