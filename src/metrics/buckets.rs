//! Prometheus histograms with explicit buckets, rendered from the
//! microsecond hdrhistograms nowait records into (worker loop turns, time
//! to first byte, pool queue wait and run, upstream exchanges).
//!
//! A summary's quantiles computed since start can be neither added across
//! workers or machines nor narrowed to the last minute; cumulative bucket
//! counts can (`histogram_quantile(0.99, sum by (le) (rate(…[1m])))`). The
//! recording side keeps its hdrhistogram, which the status page uses for
//! exact percentiles; this module only reads it.
//!
//! Bucket bounds are exact for values up to 256 µs (the histograms'
//! sub-bucket count at two significant digits) and within 1% above.

use std::fmt::Write;

use hdrhistogram::Histogram;

/// The upper bounds of the buckets, in microseconds, `+Inf` implied: from
/// 1 µs (a loop turn that only polled the reactor) to 10 s, 1-2.5-5 per
/// decade.
pub const BOUNDS_MICROS: [u64; 22] = [
    1, 2, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000,
    250_000, 500_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000,
];

/// Cumulative counts at each bound of [`BOUNDS_MICROS`] (the `le` buckets),
/// then the total count (`+Inf`).
pub fn cumulative(h: &Histogram<u64>) -> [u64; BOUNDS_MICROS.len() + 1] {
    let mut out = [0u64; BOUNDS_MICROS.len() + 1];
    for v in h.iter_recorded() {
        let value = h.lowest_equivalent(v.value_iterated_to());
        let n = v.count_since_last_iteration();
        let first = BOUNDS_MICROS.partition_point(|&b| b < value);
        // Counted in its own bucket and every wider one; the per-bucket
        // adds are summed below.
        out[first] += n;
    }
    for i in 1..out.len() {
        out[i] += out[i - 1];
    }
    out
}

/// Formats a bound in seconds as Prometheus writes `le` values.
fn le(micros: u64) -> String {
    let s = micros as f64 / 1e6;
    format!("{s}")
}

/// Writes the `# HELP` and `# TYPE … histogram` lines of `name`.
pub fn header(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} histogram");
}

/// Writes one series of histogram `name` (seconds) with `labels` (without
/// braces; may be empty): its `_bucket` lines, `_sum` and `_count`.
pub fn series(out: &mut String, name: &str, labels: &str, h: &Histogram<u64>) {
    let counts = cumulative(h);
    let sep = if labels.is_empty() { "" } else { "," };
    for (b, n) in BOUNDS_MICROS.iter().zip(counts) {
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{}\"}} {n}", le(*b));
    }
    let total = counts[BOUNDS_MICROS.len()];
    let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {total}");
    let sum = h.mean() * h.len() as f64 / 1e6;
    let braces = if labels.is_empty() {
        String::new()
    } else {
        format!("{{{labels}}}")
    };
    let _ = writeln!(out, "{name}_sum{braces} {sum:.6}");
    let _ = writeln!(out, "{name}_count{braces} {total}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(values: &[u64]) -> Histogram<u64> {
        let mut h = crate::metrics::worker::histogram();
        for v in values {
            h.record(*v).unwrap();
        }
        h
    }

    #[test]
    fn buckets_are_cumulative_and_end_with_the_count() {
        let c = cumulative(&h(&[1, 3, 3, 120, 900, 20_000_000]));
        assert_eq!(c[0], 1, "le 1 µs");
        assert_eq!(c[1], 1, "le 2 µs");
        assert_eq!(c[2], 3, "le 5 µs");
        assert_eq!(c[6], 3, "le 100 µs");
        assert_eq!(c[7], 4, "le 250 µs");
        assert_eq!(c[9], 5, "le 1 ms");
        assert_eq!(c[BOUNDS_MICROS.len() - 1], 5, "le 10 s");
        assert_eq!(c[BOUNDS_MICROS.len()], 6, "+Inf");
    }

    #[test]
    fn a_value_on_a_bound_is_in_that_bucket() {
        let c = cumulative(&h(&[250, 1_000]));
        assert_eq!(c[7], 1, "250 µs is le 0.00025");
        assert_eq!(c[9], 2, "1000 µs is le 0.001");
    }

    #[test]
    fn series_are_in_the_text_format() {
        let mut out = String::new();
        header(&mut out, "x_seconds", "X.");
        series(&mut out, "x_seconds", "worker=\"1\"", &h(&[10, 2000]));
        assert!(out.contains("# TYPE x_seconds histogram\n"));
        assert!(out.contains("x_seconds_bucket{worker=\"1\",le=\"0.00001\"} 1\n"));
        assert!(out.contains("x_seconds_bucket{worker=\"1\",le=\"0.0025\"} 2\n"));
        assert!(out.contains("x_seconds_bucket{worker=\"1\",le=\"+Inf\"} 2\n"));
        assert!(out.contains("x_seconds_count{worker=\"1\"} 2\n"));
        assert!(out.contains("x_seconds_sum{worker=\"1\"} 0.002"));
        let mut bare = String::new();
        series(&mut bare, "y_seconds", "", &h(&[5]));
        assert!(bare.contains("y_seconds_bucket{le=\"0.000005\"} 1\n"));
        assert!(bare.contains("y_seconds_count 1\n"));
    }
}
