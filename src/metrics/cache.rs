//! Per cache zone (one `proxy_cache_path`, so one disk in the brief's
//! layout): what the status page shows of it, as plain numbers. The cache
//! feeds a [`ZoneSample`] per zone when the page is made; this module does
//! not know the cache's types.

use std::fmt::Write;

/// One zone's numbers at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneSample {
    /// The `keys_zone` name.
    pub zone: String,
    /// The cache path (the disk).
    pub path: String,
    /// The pool its fills write through (`aio threads=`), once a fill
    /// named one; empty before.
    pub pool: String,
    /// Requests by `$upstream_cache_status`: HIT, MISS, EXPIRED, STALE,
    /// UPDATING, REVALIDATED, BYPASS, in that order.
    pub statuses: [u64; 7],
    /// Waiters that streamed a fill under way (read-while-write).
    pub coalesced: u64,
    /// Body bytes written into entries.
    pub bytes_filled: u64,
    /// Fills published.
    pub fills: u64,
    /// Fills given up (upstream cut, disk full or behind, client gone).
    pub fills_abandoned: u64,
    /// Fills not started: the zone's backlog had no room for them.
    pub fills_skipped: u64,
    /// Bytes teed to the zone's fills and not yet on the disk (a gauge).
    pub fill_backlog: u64,
    /// Entries removed (inactive, `max_size`, `min_free`, zone full).
    pub evictions: u64,
    /// Keys in the index.
    pub keys: u64,
    /// Bytes on disk of the entries the index knows.
    pub size: u64,
    /// Files the loader has read.
    pub loaded_files: u64,
    /// Bytes on disk of the entries the loader has found.
    pub loaded_bytes: u64,
    /// Passes the manager has made.
    pub manager_passes: u64,
    /// Files the manager has removed.
    pub manager_removed: u64,
    /// Whether the loader has finished walking the path.
    pub loader_done: bool,
}

/// The names of [`ZoneSample::statuses`], as `$upstream_cache_status`.
pub const STATUSES: [&str; 7] = [
    "HIT",
    "MISS",
    "EXPIRED",
    "STALE",
    "UPDATING",
    "REVALIDATED",
    "BYPASS",
];

/// A plain number of the page: name, kind, help, and how to read it.
type Scalar = (
    &'static str,
    &'static str,
    &'static str,
    fn(&ZoneSample) -> u64,
);

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// The cache section of the status page.
pub fn render(out: &mut String, zones: &[ZoneSample]) {
    if zones.is_empty() {
        return;
    }
    let labels = |z: &ZoneSample| {
        format!(
            "zone=\"{}\",path=\"{}\",pool=\"{}\"",
            z.zone, z.path, z.pool
        )
    };
    header(
        out,
        "nowait_cache_requests_total",
        "counter",
        "Cached requests by $upstream_cache_status.",
    );
    for z in zones {
        for (s, n) in STATUSES.iter().zip(z.statuses) {
            let _ = writeln!(
                out,
                "nowait_cache_requests_total{{{},status=\"{s}\"}} {n}",
                labels(z)
            );
        }
    }
    let scalars: [Scalar; 14] = [
        (
            "nowait_cache_coalesced_total",
            "counter",
            "Requests waiting on proxy_cache_lock that streamed the fill under way.",
            |z| z.coalesced,
        ),
        (
            "nowait_cache_filled_bytes_total",
            "counter",
            "Body bytes written into cache entries.",
            |z| z.bytes_filled,
        ),
        (
            "nowait_cache_fills_total",
            "counter",
            "Cache entries written and published.",
            |z| z.fills,
        ),
        (
            "nowait_cache_fills_abandoned_total",
            "counter",
            "Fills given up: upstream cut, disk full or behind, client gone.",
            |z| z.fills_abandoned,
        ),
        (
            "nowait_cache_fills_skipped_total",
            "counter",
            "Fills not started because the zone's fill backlog was full; served uncached.",
            |z| z.fills_skipped,
        ),
        (
            "nowait_cache_fill_backlog_bytes",
            "gauge",
            "Bytes teed to the zone's fills and not yet written to its disk.",
            |z| z.fill_backlog,
        ),
        (
            "nowait_cache_evictions_total",
            "counter",
            "Entries removed: inactive, max_size, min_free, zone full.",
            |z| z.evictions,
        ),
        (
            "nowait_cache_keys",
            "gauge",
            "Keys in the zone's index.",
            |z| z.keys,
        ),
        (
            "nowait_cache_size_bytes",
            "gauge",
            "Bytes on disk of the entries the index knows.",
            |z| z.size,
        ),
        (
            "nowait_cache_loader_files_total",
            "counter",
            "Files the cache loader has read.",
            |z| z.loaded_files,
        ),
        (
            "nowait_cache_loader_bytes_total",
            "counter",
            "Bytes on disk of the entries the cache loader has found.",
            |z| z.loaded_bytes,
        ),
        (
            "nowait_cache_manager_passes_total",
            "counter",
            "Passes the cache manager has made over the zone.",
            |z| z.manager_passes,
        ),
        (
            "nowait_cache_manager_removed_total",
            "counter",
            "Files the cache manager removed: inactive, max_size, min_free.",
            |z| z.manager_removed,
        ),
        (
            "nowait_cache_loader_done",
            "gauge",
            "1 once the loader has walked the whole cache path.",
            |z| u64::from(z.loader_done),
        ),
    ];
    for (name, kind, help, get) in scalars {
        header(out, name, kind, help);
        for z in zones {
            let _ = writeln!(out, "{name}{{{}}} {}", labels(z), get(z));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_zone_with_its_disk() {
        let mut out = String::new();
        let z = ZoneSample {
            zone: "cache_1".into(),
            path: "/d1".into(),
            pool: "pool_1".into(),
            statuses: [3, 1, 0, 0, 0, 0, 0],
            fills_skipped: 2,
            fill_backlog: 65536,
            loader_done: true,
            ..ZoneSample::default()
        };
        render(&mut out, &[z]);
        assert!(out.contains(
            "nowait_cache_requests_total{zone=\"cache_1\",path=\"/d1\",pool=\"pool_1\",status=\"HIT\"} 3"
        ));
        assert!(
            out.contains(
                "nowait_cache_loader_done{zone=\"cache_1\",path=\"/d1\",pool=\"pool_1\"} 1"
            )
        );
        assert!(out.contains("# TYPE nowait_cache_fill_backlog_bytes gauge\n"));
        assert!(out.contains(
            "nowait_cache_fill_backlog_bytes{zone=\"cache_1\",path=\"/d1\",pool=\"pool_1\"} 65536"
        ));
        assert!(out.contains(
            "nowait_cache_fills_skipped_total{zone=\"cache_1\",path=\"/d1\",pool=\"pool_1\"} 2"
        ));
        let mut empty = String::new();
        render(&mut empty, &[]);
        assert!(empty.is_empty());
    }
}
