//! The check that `docs/metrics.md` lists every metric the status page
//! exports, with its type, and nothing it does not export.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::cache::ZoneSample;
use super::logs::LogSample;
use super::pools::IoSample;
use super::upstream::PeerMetrics;
use super::worker::WorkerMetrics;

/// The reference, as committed.
const DOC: &str = include_str!("../../docs/metrics.md");

/// `name → type` of every `# TYPE` line of a page with every section filled.
fn exported() -> BTreeMap<String, String> {
    let w = Arc::new(WorkerMetrics::new(1));
    let io = IoSample::one_pool("disk", 1);
    let peer = PeerMetrics::default();
    peer.record(true, Duration::from_millis(1));
    let page = super::prometheus::render(
        &[w],
        &io,
        &[peer.sample("backend", "127.0.0.1:1", 0, 0)],
        &[ZoneSample {
            zone: "z".into(),
            ..ZoneSample::default()
        }],
        &[LogSample {
            log: "stderr".into(),
            ..LogSample::default()
        }],
    );
    page.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect()
}

/// `name → type` of the reference's table rows (`| \`name\` | type | …`).
fn documented() -> BTreeMap<String, String> {
    DOC.lines()
        .filter_map(|l| l.strip_prefix("| `nowait_"))
        .filter_map(|l| {
            let (name, rest) = l.split_once("` | ")?;
            let kind = rest.split(" |").next()?.trim();
            Some((format!("nowait_{name}"), kind.to_string()))
        })
        .collect()
}

#[test]
fn every_exported_metric_is_documented_with_its_type() {
    let exported = exported();
    let documented = documented();
    assert!(
        exported.len() > 30,
        "a page with every section: {exported:?}"
    );
    for (name, kind) in &exported {
        assert_eq!(
            documented.get(name),
            Some(kind),
            "docs/metrics.md must list {name} as a {kind}"
        );
    }
    for name in documented.keys() {
        assert!(
            exported.contains_key(name),
            "docs/metrics.md lists {name}, which the server does not export"
        );
    }
}
