//! The status page's sampler: a thread of the process that, once a second,
//! takes the workers', pools' and cache zones' counters and histograms,
//! turns them into that second's figures (differences since the last
//! second, percentiles of the second's own values) and pushes them into the
//! process's ring (`metrics::ring`), which the page's charts fetch as JSON.
//!
//! It belongs to the process (`Shared`), not to a generation, so a reload
//! neither empties the ring nor starts a second sampler. It is not an event
//! loop and takes each lock only for a copy; it never touches a disk.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;

use crate::metrics::FastOutcome;
use crate::metrics::connections;
use crate::metrics::ring::{PoolSecond, Second, WorkerSecond, ZoneSecond};
use crate::metrics::worker::FastOp;
use crate::server::core::shared::Shared;

/// How often the sampler takes a sample.
pub const SAMPLE_PERIOD: Duration = Duration::from_secs(1);

/// Starts the process's sampler once; later calls do nothing. The thread
/// runs `init` first (it serves nobody, and like every thread but the main
/// one and the log writers it gives up root), and ends when the process's
/// state is dropped.
pub fn start(shared: &Arc<Shared>, init: &crate::io::pool::ThreadInit, log: &crate::log::ErrorLog) {
    if !shared.claim_sampler() {
        return;
    }
    let weak = Arc::downgrade(shared);
    let init = init.clone();
    let spawned = std::thread::Builder::new()
        .name("status".into())
        .spawn(move || {
            init();
            run(weak)
        });
    if let Err(e) = spawned {
        log.log(
            crate::log::Level::Alert,
            None,
            format_args!(
                "could not start the status sampler ({e}): the status page draws no charts"
            ),
        );
    }
}

/// How long after a whole second of the wall clock a sample is taken, so
/// that each sample's second (`Second::t`) is a different one.
const SAMPLE_OFFSET: Duration = Duration::from_millis(5);

/// The time until the next whole second of the wall clock, plus
/// [`SAMPLE_OFFSET`].
fn until_next_second() -> Duration {
    let into = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(Duration::ZERO, |d| {
            Duration::from_nanos(u64::from(d.subsec_nanos()))
        });
    SAMPLE_PERIOD.saturating_sub(into) + SAMPLE_OFFSET
}

fn run(shared: Weak<Shared>) {
    let mut last = Previous::default();
    loop {
        std::thread::sleep(until_next_second());
        let Some(s) = shared.upgrade() else {
            return;
        };
        let second = last.sample(&s);
        s.push_second(second);
    }
}

/// What the last sample read, to take differences from.
#[derive(Default)]
struct Previous {
    /// Whether a sample was taken (the first one only sets the baseline).
    primed: bool,
    requests: u64,
    ttfb: Option<Histogram<u64>>,
    turns: HashMap<usize, Histogram<u64>>,
    pool_waits: HashMap<String, Histogram<u64>>,
    /// Fast-path hits and attempts.
    fast: (u64, u64),
    /// Per zone: HITs and cached requests.
    zones: HashMap<String, (u64, u64)>,
    /// TLS handshakes: succeeded, resumed, failed.
    tls: (u64, u64, u64),
}

/// The `q` quantile (µs) of the values recorded into `now` since `before`;
/// 0 when there are none (or the histogram shrank: a pool thread went).
pub fn delta_quantile(now: &Histogram<u64>, before: Option<&Histogram<u64>>, q: f64) -> u64 {
    let mut d = now.clone();
    if let Some(b) = before {
        if d.subtract(b).is_err() {
            return 0;
        }
    }
    if d.is_empty() {
        0
    } else {
        d.value_at_quantile(q)
    }
}

fn ratio(hits: u64, tries: u64) -> Option<f64> {
    (tries > 0).then(|| hits as f64 / tries as f64)
}

impl Previous {
    fn sample(&mut self, shared: &Shared) -> Second {
        let t = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let workers = shared.all_worker_metrics();
        let requests = connections::snapshot().requests;
        let mut ttfb: Option<Histogram<u64>> = None;
        let mut worker_seconds = Vec::with_capacity(workers.len());
        let mut turns = HashMap::new();
        let (mut hits, mut tries) = (0, 0);
        for w in &workers {
            let (w_ttfb, turn) = {
                let h = w.histograms();
                (h.ttfb.clone(), h.turn.clone())
            };
            match &mut ttfb {
                Some(all) => {
                    let _ = all.add(&w_ttfb);
                }
                None => ttfb = Some(w_ttfb),
            }
            worker_seconds.push(WorkerSecond {
                id: w.id,
                turn_p99_us: delta_quantile(&turn, self.turns.get(&w.id), 0.99),
                turn_max_us: w.take_turn_max(),
            });
            turns.insert(w.id, turn);
            for op in FastOp::ALL {
                for o in FastOutcome::ALL {
                    let n = w.fast_count(op, o);
                    tries += n;
                    if o == FastOutcome::Hit {
                        hits += n;
                    }
                }
            }
        }
        let (ttfb_p50_us, ttfb_p99_us) = match &ttfb {
            Some(h) => (
                delta_quantile(h, self.ttfb.as_ref(), 0.5),
                delta_quantile(h, self.ttfb.as_ref(), 0.99),
            ),
            None => (0, 0),
        };
        let mut pools = Vec::new();
        let mut pool_waits = HashMap::new();
        let mut all_pools = shared.all_pools();
        all_pools.sort_by(|a, b| a.name().cmp(b.name()));
        for p in all_pools {
            let wait = p.timings().queue_wait;
            pools.push(PoolSecond {
                name: p.name().to_string(),
                waiting: p.stats().waiting as u64,
                wait_p99_us: delta_quantile(&wait, self.pool_waits.get(p.name()), 0.99),
            });
            pool_waits.insert(p.name().to_string(), wait);
        }
        let mut zones = Vec::new();
        let mut zone_counts = HashMap::new();
        let mut all_zones = shared.all_zones();
        all_zones.sort_by(|a, b| a.name().cmp(b.name()));
        for z in all_zones {
            let s = &z.stats;
            let zhits = s.hits.load(Relaxed);
            let total = zhits
                + s.misses.load(Relaxed)
                + s.expired.load(Relaxed)
                + s.stale.load(Relaxed)
                + s.updating.load(Relaxed)
                + s.revalidated.load(Relaxed)
                + s.bypass.load(Relaxed);
            let (h0, t0) = self.zones.get(z.name()).copied().unwrap_or((zhits, total));
            zones.push(ZoneSecond {
                zone: z.name().to_string(),
                hit_ratio: ratio(zhits.saturating_sub(h0), total.saturating_sub(t0)),
            });
            zone_counts.insert(z.name().to_string(), (zhits, total));
        }
        let tls = tls_counts();
        let (ok0, resumed0, failed0) = if self.primed { self.tls } else { tls };
        let second = Second {
            t,
            tls_handshakes: tls.0.saturating_sub(ok0),
            tls_resumed: tls.1.saturating_sub(resumed0),
            tls_failed: tls.2.saturating_sub(failed0),
            requests: if self.primed {
                requests.saturating_sub(self.requests)
            } else {
                0
            },
            ttfb_p50_us,
            ttfb_p99_us,
            workers: worker_seconds,
            pools,
            fast_hit_ratio: ratio(
                hits.saturating_sub(self.fast.0),
                tries.saturating_sub(self.fast.1),
            ),
            zones,
        };
        *self = Previous {
            primed: true,
            requests,
            ttfb,
            turns,
            pool_waits,
            fast: (hits, tries),
            zones: zone_counts,
            tls,
        };
        second
    }
}

/// TLS handshakes so far: (succeeded, resumed, failed).
fn tls_counts() -> (u64, u64, u64) {
    use crate::metrics::tls::{Outcome, count};
    let resumed = count(Outcome::Resumed);
    let ok = count(Outcome::Full) + resumed;
    let failed = [
        Outcome::TlsError,
        Outcome::Closed,
        Outcome::TimedOut,
        Outcome::Rejected,
        Outcome::PoolFull,
    ]
    .into_iter()
    .map(count)
    .sum();
    (ok, resumed, failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::worker::record;

    #[test]
    fn a_second_shows_only_its_own_values() {
        let mut before = crate::metrics::worker::histogram();
        record(&mut before, Duration::from_millis(50));
        let mut now = before.clone();
        for _ in 0..100 {
            record(&mut now, Duration::from_micros(10));
        }
        assert_eq!(delta_quantile(&now, Some(&before), 0.99), 10);
        assert!(delta_quantile(&now, None, 1.0) >= 49_000);
        assert_eq!(delta_quantile(&before, Some(&before), 0.99), 0);
        assert_eq!(delta_quantile(&before, Some(&now), 0.99), 0, "shrank");
    }

    #[test]
    fn samples_are_differences_per_second() {
        let shared = Shared::new();
        let w = shared.worker_metrics(1);
        let mut prev = Previous::default();
        let first = prev.sample(&shared);
        assert_eq!(first.requests, 0, "the first sample is the baseline");
        w.fast(FastOp::Open, FastOutcome::Hit);
        w.fast(FastOp::Open, FastOutcome::Miss);
        w.turn(Duration::from_micros(40));
        let s = prev.sample(&shared);
        assert_eq!(s.fast_hit_ratio, Some(0.5));
        assert_eq!(s.workers.len(), 1);
        assert_eq!(s.workers[0].turn_p99_us, 40);
        assert_eq!(s.workers[0].turn_max_us, 40);
        let quiet = prev.sample(&shared);
        assert_eq!(quiet.fast_hit_ratio, None);
        assert_eq!(quiet.workers[0].turn_p99_us, 0);
    }
}
