//! The pools and the file layer as the status page shows them: plain
//! numbers `io` hands over ([`IoSample`], taken by `io::sample`), so that
//! the metrics layer knows no type of the layer it measures.

use std::fmt::Write;

use hdrhistogram::Histogram;

use super::prometheus::{header, histogram};

/// Counters of one pool, as exported to the metrics layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolStats {
    /// `threads=`.
    pub threads: usize,
    /// `max_queue=`.
    pub max_queue: usize,
    /// Tasks waiting for a thread now.
    pub waiting: usize,
    /// Tasks running now.
    pub running: usize,
    /// Tasks accepted since start.
    pub submitted: u64,
    /// Tasks finished since start.
    pub completed: u64,
    /// Tasks refused with a queue overflow since start.
    pub overflows: u64,
    /// Tasks accepted into the front lane since start.
    pub front: u64,
    /// Tasks taken ahead of an older waiting task since start (front lane,
    /// or a more popular file's miss).
    pub promoted: u64,
    /// Cold bulk reads allowed at once now (`io::pool`'s cold limit).
    pub cold_limit: usize,
}

/// Merged timing histograms of one pool, in microseconds.
#[derive(Clone, Debug)]
pub struct PoolTimings {
    /// Submit → a thread takes the task.
    pub queue_wait: Histogram<u64>,
    /// Time spent running the task.
    pub run: Histogram<u64>,
}

/// One pool as the status page shows it.
#[derive(Clone, Debug)]
pub struct PoolSample {
    /// The pool's name (`thread_pool NAME`).
    pub name: String,
    /// Its counters.
    pub stats: PoolStats,
    /// Its timing histograms.
    pub timings: PoolTimings,
}

/// The file layer's process-wide counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileLayerSample {
    /// Closes the closer thread made for the loops.
    pub deferred_closes: u64,
    /// Opens counted in the popularity sketch.
    pub popularity_touches: u64,
    /// Times the sketch halved every count.
    pub popularity_agings: u64,
    /// Bytes of popular files read ahead.
    pub read_ahead_bytes: u64,
    /// Whether memory is short now.
    pub memory_short: bool,
    /// Files pinned now.
    pub pinned_files: u64,
    /// Bytes pinned or being pinned now.
    pub pinned_bytes: u64,
    /// The pins' budget in bytes (0: pinning off).
    pub pinned_budget: u64,
    /// Pins dropped since start.
    pub pins_dropped: u64,
    /// Mappings that failed since start.
    pub pin_failures: u64,
}

/// What the status page shows of `io`.
#[derive(Clone, Debug, Default)]
pub struct IoSample {
    /// Every pool, in any order (rendered by name).
    pub pools: Vec<PoolSample>,
    /// The file layer's counters.
    pub files: FileLayerSample,
}

/// One per-pool series: name, type, help and the counter it shows.
type PoolSeries = (
    &'static str,
    &'static str,
    &'static str,
    fn(&PoolStats) -> u64,
);

/// Each series of `series`, a line a pool.
fn per_pool(out: &mut String, pools: &[&PoolSample], series: &[PoolSeries]) {
    for (name, kind, help, value) in series {
        header(out, name, kind, help);
        for p in pools {
            let _ = writeln!(out, "{name}{{pool=\"{}\"}} {}", p.name, value(&p.stats));
        }
    }
}

/// The per-pool series, pools by name.
pub(super) fn render_pools(out: &mut String, pools: &[PoolSample]) {
    let mut pools: Vec<_> = pools.iter().collect();
    pools.sort_by(|a, b| a.name.cmp(&b.name));
    let series: [PoolSeries; 6] = [
        ("nowait_pool_threads", "gauge", "Threads of a pool.", |s| {
            s.threads as u64
        }),
        (
            "nowait_pool_waiting",
            "gauge",
            "Tasks waiting in a pool's queue.",
            |s| s.waiting as u64,
        ),
        (
            "nowait_pool_running",
            "gauge",
            "Tasks running on a pool's threads.",
            |s| s.running as u64,
        ),
        (
            "nowait_pool_tasks_total",
            "counter",
            "Tasks a pool completed.",
            |s| s.completed,
        ),
        (
            "nowait_pool_overflows_total",
            "counter",
            "Tasks refused because the queue was full.",
            |s| s.overflows,
        ),
        (
            "nowait_pool_front_lane_total",
            "counter",
            "Tasks queued ahead of the others: the rest of a response served from memory.",
            |s| s.front,
        ),
    ];
    per_pool(out, &pools, &series);
    header(
        out,
        "nowait_pool_queue_wait_seconds",
        "histogram",
        "Time a task waited for a pool thread.",
    );
    for p in &pools {
        histogram(
            out,
            "nowait_pool_queue_wait_seconds",
            &format!("pool=\"{}\"", p.name),
            &p.timings.queue_wait,
        );
    }
    header(
        out,
        "nowait_pool_task_run_seconds",
        "histogram",
        "Time a pool task ran.",
    );
    for p in &pools {
        histogram(
            out,
            "nowait_pool_task_run_seconds",
            &format!("pool=\"{}\"", p.name),
            &p.timings.run,
        );
    }
}

/// Closes handed to the closer thread.
pub(super) fn render_closes(out: &mut String, files: &FileLayerSample) {
    header(
        out,
        "nowait_closes_off_loop_total",
        "counter",
        "Files with no name left whose last close a loop handed to the closer thread.",
    );
    let _ = writeln!(
        out,
        "nowait_closes_off_loop_total {}",
        files.deferred_closes
    );
}

/// The popularity order of the pools' queues (`io::popularity`): tasks a
/// thread took ahead of an older one, and the sketch's own counters.
pub(super) fn render_popularity(out: &mut String, pools: &[PoolSample], files: &FileLayerSample) {
    let mut pools: Vec<_> = pools.iter().collect();
    pools.sort_by(|a, b| a.name.cmp(&b.name));
    let series: [PoolSeries; 2] = [
        (
            "nowait_pool_promoted_total",
            "counter",
            "Tasks a pool thread took while an older task still waited: the front lane, or a more popular file's miss.",
            |s| s.promoted,
        ),
        (
            "nowait_pool_cold_limit",
            "gauge",
            "Reads of file data for files not popular lately that a pool lets run at once, following how long they take.",
            |s| s.cold_limit as u64,
        ),
    ];
    per_pool(out, &pools, &series);
    header(
        out,
        "nowait_popularity_touches_total",
        "counter",
        "Opens counted in the file popularity sketch.",
    );
    let _ = writeln!(
        out,
        "nowait_popularity_touches_total {}",
        files.popularity_touches
    );
    header(
        out,
        "nowait_popularity_agings_total",
        "counter",
        "Times the file popularity sketch halved every count.",
    );
    let _ = writeln!(
        out,
        "nowait_popularity_agings_total {}",
        files.popularity_agings
    );
    header(
        out,
        "nowait_read_ahead_bytes_total",
        "counter",
        "Bytes of popular files read into the page cache ahead of their readers (by a pool thread, on a miss).",
    );
    let _ = writeln!(
        out,
        "nowait_read_ahead_bytes_total {}",
        files.read_ahead_bytes
    );
}

/// Whether memory is short (`io::pressure`), which makes the loops copy
/// resident file data rather than `sendfile()` it.
pub(super) fn render_memory(out: &mut String, files: &FileLayerSample) {
    header(
        out,
        "nowait_memory_short",
        "gauge",
        "1 while the memory cgroup is near its limit or the machine's available memory is low: the loops copy file data they find in memory instead of sendfile()ing it, except from pinned files.",
    );
    let _ = writeln!(out, "nowait_memory_short {}", u8::from(files.memory_short));
    for (name, kind, help, value) in [
        (
            "nowait_pinned_files",
            "gauge",
            "Popular files locked in memory (mmap + mlock by a pool thread) so that the loops sendfile() them while memory is short.",
            files.pinned_files,
        ),
        (
            "nowait_pinned_bytes",
            "gauge",
            "Bytes of pinned files, with those being pinned.",
            files.pinned_bytes,
        ),
        (
            "nowait_pinned_budget_bytes",
            "gauge",
            "Bytes the pins may hold: an eighth of the memory the process may fill, within RLIMIT_MEMLOCK (0: pinning off).",
            files.pinned_budget,
        ),
        (
            "nowait_pins_dropped_total",
            "counter",
            "Pins dropped: idle, replaced by a more popular file, or of a file that changed.",
            files.pins_dropped,
        ),
        (
            "nowait_pin_failures_total",
            "counter",
            "Files whose mapping or locking failed (the locked-memory limit, a file cut short).",
            files.pin_failures,
        ),
    ] {
        header(out, name, kind, help);
        let _ = writeln!(out, "{name} {value}");
    }
}

#[cfg(test)]
impl IoSample {
    /// A sample of one idle pool of `threads` threads, for the page's tests.
    pub(super) fn one_pool(name: &str, threads: usize) -> IoSample {
        let empty = || Histogram::new(3).expect("three significant digits are valid");
        IoSample {
            pools: vec![PoolSample {
                name: name.to_string(),
                stats: PoolStats {
                    threads,
                    max_queue: 0,
                    waiting: 0,
                    running: 0,
                    submitted: 0,
                    completed: 0,
                    overflows: 0,
                    front: 0,
                    promoted: 0,
                    cold_limit: 0,
                },
                timings: PoolTimings {
                    queue_wait: empty(),
                    run: empty(),
                },
            }],
            files: FileLayerSample::default(),
        }
    }
}
