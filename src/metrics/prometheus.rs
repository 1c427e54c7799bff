//! The Prometheus text exposition of nowait's measurements, served by a
//! location with `nowait_status;` (as nginx's `stub_status`, in the format
//! monitoring systems read).

use std::fmt::Write;

use hdrhistogram::Histogram;

use super::worker::{FastOp, FastOutcome, WorkerMetrics};

/// The content type of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4";

/// One series of a histogram in seconds from microseconds recorded
/// (`_bucket`, `_sum`, `_count`; see [`super::buckets`]).
pub(super) fn histogram(out: &mut String, name: &str, labels: &str, h: &Histogram<u64>) {
    super::buckets::series(out, name, labels, h);
}

pub(super) fn header(out: &mut String, name: &str, kind: &str, help: &str) {
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
    io: &super::pools::IoSample,
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
    super::pools::render_pools(&mut out, &io.pools);
    super::pools::render_closes(&mut out, &io.files);
    super::body::render(&mut out);
    super::tls::render(&mut out);
    render_upstreams(&mut out, upstreams);
    super::cache::render(&mut out, caches);
    super::logs::render(&mut out, logs);
    super::pools::render_popularity(&mut out, &io.pools, &io.files);
    super::pools::render_memory(&mut out, &io.files);
    out
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
        let io = crate::metrics::pools::IoSample::one_pool("disk", 1);
        let text = render(&[w], &io, &[], &[], &[]);
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
    }
}
