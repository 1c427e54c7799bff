//! The Prometheus text exposition of nowait's measurements, served by a
//! location with `nowait_status;` (as nginx's `stub_status`, in the format
//! monitoring systems read).

use std::fmt::Write;

use hdrhistogram::Histogram;

use super::worker::{FastOp, FastOutcome, WorkerMetrics};
use crate::io::Pools;

/// The content type of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4";

/// One series of a histogram in seconds from microseconds recorded
/// (`_bucket`, `_sum`, `_count`; see [`super::buckets`]).
fn histogram(out: &mut String, name: &str, labels: &str, h: &Histogram<u64>) {
    super::buckets::series(out, name, labels, h);
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// The per-upstream-server section.
fn render_upstreams(out: &mut String, peers: &[super::upstream::PeerSample]) {
    if peers.is_empty() {
        return;
    }
    let labels = |p: &super::upstream::PeerSample| {
        format!("upstream=\"{}\",peer=\"{}\"", p.upstream, p.peer)
    };
    header(
        out,
        "nowait_upstream_requests_total",
        "counter",
        "Exchanges begun with an upstream server.",
    );
    for p in peers {
        let _ = writeln!(
            out,
            "nowait_upstream_requests_total{{{}}} {}",
            labels(p),
            p.requests
        );
    }
    header(
        out,
        "nowait_upstream_failures_total",
        "counter",
        "Exchanges with an upstream server that failed (connect, send, timeout, invalid response).",
    );
    for p in peers {
        let _ = writeln!(
            out,
            "nowait_upstream_failures_total{{{}}} {}",
            labels(p),
            p.failures
        );
    }
    header(
        out,
        "nowait_upstream_connections",
        "gauge",
        "Connections to an upstream server: in use (active) and idle in the keep-alive cache.",
    );
    for p in peers {
        let l = labels(p);
        let _ = writeln!(
            out,
            "nowait_upstream_connections{{{l},state=\"active\"}} {}",
            p.active
        );
        let _ = writeln!(
            out,
            "nowait_upstream_connections{{{l},state=\"idle\"}} {}",
            p.idle
        );
    }
    header(
        out,
        "nowait_upstream_response_seconds",
        "histogram",
        "Time from the start of an exchange with an upstream server to its end.",
    );
    for p in peers {
        histogram(
            out,
            "nowait_upstream_response_seconds",
            &labels(p),
            &p.response,
        );
    }
}

/// The whole page.
pub fn render(
    workers: &[std::sync::Arc<WorkerMetrics>],
    pools: &Pools,
    upstreams: &[super::upstream::PeerSample],
    caches: &[super::cache::ZoneSample],
    logs: &[super::logs::LogSample],
) -> String {
    let mut out = String::with_capacity(8192);
    // Copied out so that no worker's loop waits on its lock while the page
    // is written.
    let hists: Vec<_> = workers
        .iter()
        .map(|w| (w.id, w.histograms().clone()))
        .collect();
    header(
        &mut out,
        "nowait_loop_poll_seconds",
        "histogram",
        "Time one task held a worker's event loop in one poll.",
    );
    for (id, h) in &hists {
        histogram(
            &mut out,
            "nowait_loop_poll_seconds",
            &format!("worker=\"{id}\""),
            &h.poll,
        );
    }
    header(
        &mut out,
        "nowait_loop_lag_seconds",
        "histogram",
        "How late a worker's periodic timer fired: time the loop was held by other work.",
    );
    for (id, h) in &hists {
        histogram(
            &mut out,
            "nowait_loop_lag_seconds",
            &format!("worker=\"{id}\""),
            &h.lag,
        );
    }
    header(
        &mut out,
        "nowait_loop_turn_seconds",
        "histogram",
        "One turn of a worker's event loop: from the reactor's return to the next park.",
    );
    for (id, h) in &hists {
        histogram(
            &mut out,
            "nowait_loop_turn_seconds",
            &format!("worker=\"{id}\""),
            &h.turn,
        );
    }
    for (name, help, pick) in [
        (
            "nowait_loop_poll_max_seconds",
            "The longest poll of one task on a worker's loop since start (within 1%).",
            (|h: &super::worker::Histograms| h.poll.max()) as fn(&super::worker::Histograms) -> u64,
        ),
        (
            "nowait_loop_turn_max_seconds",
            "The longest turn of a worker's event loop since start (within 1%).",
            |h| h.turn.max(),
        ),
    ] {
        header(&mut out, name, "gauge", help);
        for (id, h) in &hists {
            let _ = writeln!(out, "{name}{{worker=\"{id}\"}} {}", pick(h) as f64 / 1e6);
        }
    }
    header(
        &mut out,
        "nowait_ttfb_seconds",
        "histogram",
        "Time from a complete request head to the first response byte.",
    );
    for (id, h) in &hists {
        histogram(
            &mut out,
            "nowait_ttfb_seconds",
            &format!("worker=\"{id}\""),
            &h.ttfb,
        );
    }
    drop(hists);
    header(
        &mut out,
        "nowait_requests_total",
        "counter",
        "Requests answered.",
    );
    for w in workers {
        let _ = writeln!(
            out,
            "nowait_requests_total{{worker=\"{}\"}} {}",
            w.id,
            w.requests.load(std::sync::atomic::Ordering::Relaxed)
        );
    }
    header(&mut out, "nowait_connections", "gauge", "Connections open.");
    for w in workers {
        let _ = writeln!(
            out,
            "nowait_connections{{worker=\"{}\"}} {}",
            w.id,
            w.connections.load(std::sync::atomic::Ordering::Relaxed)
        );
    }
    for (name, help, pick) in [
        (
            "nowait_connections_parked",
            "Client connections parked between requests: held outside any task.",
            (|w: &WorkerMetrics| &w.parked) as fn(&WorkerMetrics) -> &std::sync::atomic::AtomicU64,
        ),
        (
            "nowait_connections_hot_waiting",
            "Client connections waiting for their next request in their own task, before they park.",
            |w| &w.hot_waiting,
        ),
    ] {
        header(&mut out, name, "gauge", help);
        for w in workers {
            let _ = writeln!(
                out,
                "{name}{{worker=\"{}\"}} {}",
                w.id,
                pick(w).load(std::sync::atomic::Ordering::Relaxed)
            );
        }
    }
    header(
        &mut out,
        "nowait_connection_buffers_bytes",
        "gauge",
        "Bytes of read buffers client connections hold (none while they wait for a request).",
    );
    for w in workers {
        let _ = writeln!(
            out,
            "nowait_connection_buffers_bytes{{worker=\"{}\"}} {}",
            w.id,
            w.connection_buffers
                .load(std::sync::atomic::Ordering::Relaxed)
        );
    }
    header(
        &mut out,
        "nowait_fast_path_total",
        "counter",
        "Non-blocking fast-path attempts on the loop, by operation and outcome.",
    );
    for w in workers {
        for op in FastOp::ALL {
            for o in FastOutcome::ALL {
                let _ = writeln!(
                    out,
                    "nowait_fast_path_total{{worker=\"{}\",op=\"{}\",result=\"{}\"}} {}",
                    w.id,
                    op.name(),
                    o.name(),
                    w.fast_count(op, o)
                );
            }
        }
    }
    let mut pools: Vec<_> = pools.iter().collect();
    pools.sort_by(|a, b| a.name().cmp(b.name()));
    header(
        &mut out,
        "nowait_pool_threads",
        "gauge",
        "Threads of a pool.",
    );
    for p in &pools {
        let _ = writeln!(
            out,
            "nowait_pool_threads{{pool=\"{}\"}} {}",
            p.name(),
            p.stats().threads
        );
    }
    header(
        &mut out,
        "nowait_pool_waiting",
        "gauge",
        "Tasks waiting in a pool's queue.",
    );
    for p in &pools {
        let _ = writeln!(
            out,
            "nowait_pool_waiting{{pool=\"{}\"}} {}",
            p.name(),
            p.stats().waiting
        );
    }
    header(
        &mut out,
        "nowait_pool_running",
        "gauge",
        "Tasks running on a pool's threads.",
    );
    for p in &pools {
        let _ = writeln!(
            out,
            "nowait_pool_running{{pool=\"{}\"}} {}",
            p.name(),
            p.stats().running
        );
    }
    header(
        &mut out,
        "nowait_pool_tasks_total",
        "counter",
        "Tasks a pool completed.",
    );
    for p in &pools {
        let _ = writeln!(
            out,
            "nowait_pool_tasks_total{{pool=\"{}\"}} {}",
            p.name(),
            p.stats().completed
        );
    }
    header(
        &mut out,
        "nowait_pool_overflows_total",
        "counter",
        "Tasks refused because the queue was full.",
    );
    for p in &pools {
        let _ = writeln!(
            out,
            "nowait_pool_overflows_total{{pool=\"{}\"}} {}",
            p.name(),
            p.stats().overflows
        );
    }
    header(
        &mut out,
        "nowait_pool_front_lane_total",
        "counter",
        "Tasks queued ahead of the others: the rest of a response served from memory.",
    );
    for p in &pools {
        let _ = writeln!(
            out,
            "nowait_pool_front_lane_total{{pool=\"{}\"}} {}",
            p.name(),
            p.stats().front
        );
    }
    header(
        &mut out,
        "nowait_pool_queue_wait_seconds",
        "histogram",
        "Time a task waited for a pool thread.",
    );
    for p in &pools {
        histogram(
            &mut out,
            "nowait_pool_queue_wait_seconds",
            &format!("pool=\"{}\"", p.name()),
            &p.timings().queue_wait,
        );
    }
    header(
        &mut out,
        "nowait_pool_task_run_seconds",
        "histogram",
        "Time a pool task ran.",
    );
    for p in &pools {
        histogram(
            &mut out,
            "nowait_pool_task_run_seconds",
            &format!("pool=\"{}\"", p.name()),
            &p.timings().run,
        );
    }
    header(
        &mut out,
        "nowait_closes_off_loop_total",
        "counter",
        "Files with no name left whose last close a loop handed to the closer thread.",
    );
    let _ = writeln!(
        out,
        "nowait_closes_off_loop_total {}",
        crate::io::closer::deferred()
    );
    super::body::render(&mut out);
    super::tls::render(&mut out);
    render_upstreams(&mut out, upstreams);
    super::cache::render(&mut out, caches);
    super::logs::render(&mut out, logs);
    render_popularity(&mut out, &pools);
    render_memory(&mut out);
    out
}

/// The popularity order of the pools' queues (`io::popularity`): tasks a
/// thread took ahead of an older one, and the sketch's own counters.
fn render_popularity(out: &mut String, pools: &[&std::sync::Arc<crate::io::Pool>]) {
    header(
        out,
        "nowait_pool_promoted_total",
        "counter",
        "Tasks a pool thread took while an older task still waited: the front lane, or a more popular file's miss.",
    );
    for p in pools {
        let _ = writeln!(
            out,
            "nowait_pool_promoted_total{{pool=\"{}\"}} {}",
            p.name(),
            p.stats().promoted
        );
    }
    header(
        out,
        "nowait_pool_cold_limit",
        "gauge",
        "Reads of file data for files not popular lately that a pool lets run at once, following how long they take.",
    );
    for p in pools {
        let _ = writeln!(
            out,
            "nowait_pool_cold_limit{{pool=\"{}\"}} {}",
            p.name(),
            p.stats().cold_limit
        );
    }
    let s = crate::io::popularity::stats();
    header(
        out,
        "nowait_popularity_touches_total",
        "counter",
        "Opens counted in the file popularity sketch.",
    );
    let _ = writeln!(out, "nowait_popularity_touches_total {}", s.touches);
    header(
        out,
        "nowait_popularity_agings_total",
        "counter",
        "Times the file popularity sketch halved every count.",
    );
    let _ = writeln!(out, "nowait_popularity_agings_total {}", s.agings);
    header(
        out,
        "nowait_read_ahead_bytes_total",
        "counter",
        "Bytes of popular files read into the page cache ahead of their readers (by a pool thread, on a miss).",
    );
    let _ = writeln!(
        out,
        "nowait_read_ahead_bytes_total {}",
        crate::io::read_ahead::advised_bytes()
    );
}

/// Whether memory is short (`io::pressure`), which makes the loops copy
/// resident file data rather than `sendfile()` it.
fn render_memory(out: &mut String) {
    header(
        out,
        "nowait_memory_short",
        "gauge",
        "1 while the memory cgroup is near its limit or the machine's available memory is low: the loops copy file data they find in memory instead of sendfile()ing it, except from pinned files.",
    );
    let _ = writeln!(
        out,
        "nowait_memory_short {}",
        u8::from(crate::io::pressure::reclaiming())
    );
    let pins = crate::io::pins::stats();
    for (name, kind, help, value) in [
        (
            "nowait_pinned_files",
            "gauge",
            "Popular files locked in memory (mmap + mlock by a pool thread) so that the loops sendfile() them while memory is short.",
            pins.files,
        ),
        (
            "nowait_pinned_bytes",
            "gauge",
            "Bytes of pinned files, with those being pinned.",
            pins.bytes,
        ),
        (
            "nowait_pinned_budget_bytes",
            "gauge",
            "Bytes the pins may hold: an eighth of the memory the process may fill, within RLIMIT_MEMLOCK (0: pinning off).",
            crate::io::pins::budget(),
        ),
        (
            "nowait_pins_dropped_total",
            "counter",
            "Pins dropped: idle, replaced by a more popular file, or of a file that changed.",
            pins.dropped,
        ),
        (
            "nowait_pin_failures_total",
            "counter",
            "Files whose mapping or locking failed (the locked-memory limit, a file cut short).",
            pins.failures,
        ),
    ] {
        header(out, name, kind, help);
        let _ = writeln!(out, "{name} {value}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::worker::record;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn renders_histograms_counters_and_pools() {
        let w = Arc::new(WorkerMetrics::new(1));
        {
            let mut h = w.histograms();
            for ms in [1, 2, 3, 100] {
                record(&mut h.poll, Duration::from_millis(ms));
            }
        }
        w.fast(FastOp::Open, FastOutcome::Hit);
        w.fast(FastOp::Open, FastOutcome::Hit);
        w.fast(FastOp::Read, FastOutcome::Miss);
        let mut pools = Pools::new();
        pools.add("disk", 1, 0).unwrap();
        let text = render(&[w], &pools, &[], &[], &[]);
        assert!(text.contains("# TYPE nowait_loop_poll_seconds histogram"));
        assert!(text.contains("nowait_loop_poll_seconds_count{worker=\"1\"} 4"));
        // 1, 2 and 3 ms are at most 5 ms; the 100 ms poll is not.
        assert!(text.contains("nowait_loop_poll_seconds_bucket{worker=\"1\",le=\"0.005\"} 3"));
        assert!(text.contains("nowait_loop_poll_seconds_bucket{worker=\"1\",le=\"0.1\"} 4"));
        assert!(text.contains("# TYPE nowait_loop_turn_seconds histogram"));
        // The longest poll to 1%, not the upper bound of its bucket (0.25).
        let max: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("nowait_loop_poll_max_seconds{worker=\"1\"} "))
            .expect("the poll maximum")
            .parse()
            .expect("a number");
        assert!((0.1..=0.101).contains(&max), "{max}");
        assert!(text.contains("nowait_loop_turn_max_seconds{worker=\"1\"} 0\n"));
        assert!(text.contains("nowait_fast_path_total{worker=\"1\",op=\"open\",result=\"hit\"} 2"));
        assert!(
            text.contains("nowait_fast_path_total{worker=\"1\",op=\"read\",result=\"miss\"} 1")
        );
        assert!(text.contains("nowait_pool_threads{pool=\"disk\"} 1"));
        assert!(text.contains("nowait_pool_overflows_total{pool=\"disk\"} 0"));
        assert!(text.contains("nowait_pool_promoted_total{pool=\"disk\"} 0"));
        assert!(text.contains("nowait_popularity_touches_total "));
        pools.shutdown();
    }
}
