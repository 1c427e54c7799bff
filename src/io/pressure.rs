//! Whether the kernel is likely reclaiming page cache from under the
//! process: its memory cgroup near its limit, or the machine near the end
//! of its available memory. While it is, the loops copy file data from
//! memory instead of `sendfile()`ing it (see `server::core::send`).
//!
//! Why: a loop `sendfile()`s only the bytes a `preadv2(RWF_NOWAIT)` probe
//! just found up to date, so that the call meets no page it must wait for.
//! Between the probe and the call the page can be evicted, and read again
//! by someone else: the call then waits for that read, on the loop. Under a
//! cgroup's memory limit, where every new page of the cache evicts an old
//! one, the slow-disk lab caught loops there (`folio_wait_bit_common <
//! filemap_splice_read < do_sendfile`) for up to 2.5 s. A copy has no such
//! window: `preadv2(RWF_NOWAIT)` into a buffer takes the bytes or fails, and
//! the write that follows is to a socket. It costs a copy, which only
//! matters for large files, and only while memory is short; a popular
//! file's copy is avoided by pinning it (`io::pins`).
//!
//! The figures come from files opened before the process confines itself
//! ([`open`]) and read again by a thread of their own every [`SAMPLE`]
//! ([`start`]); a loop only reads one flag ([`reclaiming`]). Without a
//! figure to go by (no memory controller, no `/proc/meminfo`), memory is
//! taken as plentiful: the process has no limit of its own then, and the
//! machine's is what `/proc/meminfo` would have told.
//!
//! What this module must not do: read anything on a loop.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often the thread reads the figures.
pub const SAMPLE: Duration = Duration::from_millis(200);
/// A cgroup whose usage is at least this share of its limit (per mille) is
/// taken as reclaiming: the page cache fills any cgroup up to its limit, so
/// near it every new page evicts one.
pub const CGROUP_FULL_PERMILLE: u64 = 900;
/// A machine with less than this share of its memory available (per mille
/// of `MemTotal`) is taken as reclaiming.
pub const AVAILABLE_LOW_PERMILLE: u64 = 50;
/// Largest figure file read (`memory.stat` is a few KiB).
const READ_MAX: usize = 16 * 1024;
/// A cgroup v1 limit at or above this is "no limit" (the kernel reports
/// `PAGE_COUNTER_MAX` pages, about 2^63 bytes).
const NO_LIMIT: u64 = 1 << 60;

/// The files the figures are read from, opened before the process gives up
/// the right to open them.
#[derive(Debug, Default)]
struct Sources {
    /// The memory cgroup's figures, if the process is in one with a limit.
    cgroup: Option<Cgroup>,
    /// `/proc/meminfo`.
    meminfo: Option<File>,
}

/// A memory cgroup's usage and limit files.
#[derive(Debug)]
enum Cgroup {
    /// cgroup v1: `memory.usage_in_bytes`, and `memory.stat` for
    /// `hierarchical_memory_limit` (the smallest limit of it and its
    /// ancestors).
    V1 { usage: File, stat: File },
    /// cgroup v2: `memory.current`, and `memory.max` and `memory.high`.
    V2 {
        current: File,
        max: File,
        high: Option<File>,
    },
}

static SOURCES: OnceLock<Mutex<Sources>> = OnceLock::new();
/// The last sample's verdict.
static RECLAIMING: AtomicBool = AtomicBool::new(false);
/// Whether the sampling thread was started.
static STARTED: AtomicBool = AtomicBool::new(false);

/// Whether memory looks short lately (the last sample; `false` before any).
pub fn reclaiming() -> bool {
    RECLAIMING.load(Ordering::Relaxed)
}

/// Opens the figure files; call before the process confines itself. Later
/// calls do nothing.
pub fn open() {
    SOURCES.get_or_init(|| {
        Mutex::new(Sources {
            cgroup: std::fs::read_to_string("/proc/self/cgroup")
                .ok()
                .and_then(|text| open_cgroup(&text, Path::new("/sys/fs/cgroup"))),
            meminfo: File::open("/proc/meminfo").ok(),
        })
    });
}

/// Starts the sampling thread once (after [`open`]); it runs `init` first
/// (it serves nobody and gives up root as every other thread does).
pub fn start(init: &super::pool::ThreadInit) -> std::io::Result<()> {
    if STARTED.swap(true, Ordering::Relaxed) {
        return Ok(());
    }
    open();
    let init = init.clone();
    std::thread::Builder::new()
        .name("pressure".into())
        .spawn(move || {
            init();
            loop {
                sample_now();
                super::pins::sweep();
                std::thread::sleep(SAMPLE);
            }
        })
        .map(|_| ())
}

/// Reads the figures once and stores the verdict.
pub fn sample_now() {
    let Some(sources) = SOURCES.get() else {
        return;
    };
    let s = sources.lock().unwrap_or_else(|e| e.into_inner());
    let cgroup = s.cgroup.as_ref().and_then(cgroup_full);
    let machine = s
        .meminfo
        .as_ref()
        .and_then(read)
        .and_then(|t| memory_low(&t));
    RECLAIMING.store(
        cgroup.unwrap_or(false) || machine.unwrap_or(false),
        Ordering::Relaxed,
    );
}

/// The memory the process may fill: its cgroup's limit when it has one
/// (the smallest of `memory.max` and `memory.high` under v2), else the
/// machine's (`MemTotal`); `None` when neither can be read. Reads files:
/// call at startup or from the pressure thread, never on a loop.
pub fn memory_limit() -> Option<u64> {
    let sources = SOURCES.get()?;
    let s = sources.lock().unwrap_or_else(|e| e.into_inner());
    let cgroup = s
        .cgroup
        .as_ref()
        .and_then(cgroup_limit)
        .filter(|&l| l < NO_LIMIT);
    cgroup.or_else(|| Some(meminfo_kb(&read(s.meminfo.as_ref()?)?, "MemTotal")? * 1024))
}

/// The memory cgroup `/proc/self/cgroup` names, under `root`, if its files
/// open.
fn open_cgroup(proc_cgroup: &str, root: &Path) -> Option<Cgroup> {
    let (v1, v2) = cgroup_paths(proc_cgroup);
    if let Some(p) = v1 {
        let dir = root.join("memory").join(p.trim_start_matches('/'));
        if let (Ok(usage), Ok(stat)) = (
            File::open(dir.join("memory.usage_in_bytes")),
            File::open(dir.join("memory.stat")),
        ) {
            return Some(Cgroup::V1 { usage, stat });
        }
    }
    let p = v2?;
    let dir: PathBuf = root.join(p.trim_start_matches('/'));
    let current = File::open(dir.join("memory.current")).ok()?;
    let max = File::open(dir.join("memory.max")).ok()?;
    let high = File::open(dir.join("memory.high")).ok();
    Some(Cgroup::V2 { current, max, high })
}

/// The memory controller's path (cgroup v1: the `memory` line) and the
/// unified hierarchy's (`0::`), from `/proc/self/cgroup`.
fn cgroup_paths(text: &str) -> (Option<&str>, Option<&str>) {
    let mut v1 = None;
    let mut v2 = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            v2 = Some(path);
        } else if controllers.split(',').any(|c| c == "memory") {
            v1 = Some(path);
        }
    }
    (v1, v2)
}

/// Whether the cgroup is near its limit; `None` when a figure is missing.
fn cgroup_full(c: &Cgroup) -> Option<bool> {
    let usage = match c {
        Cgroup::V1 { usage, .. } => number(&read(usage)?)?,
        Cgroup::V2 { current, .. } => number(&read(current)?)?,
    };
    Some(near_limit(usage, cgroup_limit(c)?))
}

/// The cgroup's limit: v1's `hierarchical_memory_limit` (the smallest of it
/// and its ancestors'), v2's smaller of `memory.max` and `memory.high`
/// (`u64::MAX` for neither); "no limit" is a huge number either way.
fn cgroup_limit(c: &Cgroup) -> Option<u64> {
    match c {
        Cgroup::V1 { stat, .. } => field(&read(stat)?, "hierarchical_memory_limit"),
        Cgroup::V2 { max, high, .. } => Some(
            [Some(max), high.as_ref()]
                .into_iter()
                .flatten()
                .filter_map(|f| read(f).and_then(|t| number(&t)))
                .min()
                .unwrap_or(u64::MAX),
        ),
    }
}

/// `usage` is at least [`CGROUP_FULL_PERMILLE`] of a real `limit`.
fn near_limit(usage: u64, limit: u64) -> bool {
    limit < NO_LIMIT && usage.saturating_mul(1000) >= limit.saturating_mul(CGROUP_FULL_PERMILLE)
}

/// From `/proc/meminfo`: `MemAvailable` below [`AVAILABLE_LOW_PERMILLE`] of
/// `MemTotal`.
fn memory_low(meminfo: &str) -> Option<bool> {
    let total = meminfo_kb(meminfo, "MemTotal")?;
    let available = meminfo_kb(meminfo, "MemAvailable")?;
    Some(available.saturating_mul(1000) < total.saturating_mul(AVAILABLE_LOW_PERMILLE))
}

/// The kB figure of `name` in `/proc/meminfo`'s text.
fn meminfo_kb(meminfo: &str, name: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let rest = l.strip_prefix(name)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse::<u64>().ok()
    })
}

/// A file's whole text, read from its start (procfs and cgroupfs files
/// are generated anew on each read at offset 0).
fn read(f: &File) -> Option<String> {
    let mut buf = vec![0u8; READ_MAX];
    let mut len = 0;
    while len < buf.len() {
        match f.read_at(&mut buf[len..], len as u64) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).ok()
}

/// A file holding one number (`max` for cgroup v2's "no limit").
fn number(text: &str) -> Option<u64> {
    match text.trim() {
        "max" => Some(u64::MAX),
        t => t.parse().ok(),
    }
}

/// The value of `name` in a `memory.stat` (`name value` lines).
fn field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == name).then(|| v.trim().parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_memory_cgroup_in_both_hierarchies() {
        let v1 = "9:name=systemd:/\n4:memory:/lab/server\n0::/\n";
        assert_eq!(cgroup_paths(v1), (Some("/lab/server"), Some("/")));
        let both = "5:cpu,memory:/a\n";
        assert_eq!(cgroup_paths(both), (Some("/a"), None));
        let v2 = "0::/system.slice/nowait.service\n";
        assert_eq!(
            cgroup_paths(v2),
            (None, Some("/system.slice/nowait.service"))
        );
    }

    #[test]
    fn a_cgroup_near_its_limit_is_reclaiming_and_one_without_a_limit_never() {
        assert!(near_limit(250 << 20, 256 << 20));
        assert!(!near_limit(100 << 20, 256 << 20));
        assert!(!near_limit(250 << 20, 9_223_372_036_854_771_712));
        assert!(!near_limit(250 << 20, u64::MAX));
        let stat = "cache 100\nhierarchical_memory_limit 268435456\ntotal_cache 5\n";
        assert_eq!(field(stat, "hierarchical_memory_limit"), Some(268_435_456));
        assert_eq!(field(stat, "cache"), Some(100));
        assert_eq!(number("max\n"), Some(u64::MAX));
        assert_eq!(number("1048576\n"), Some(1_048_576));
    }

    #[test]
    fn a_machine_short_of_available_memory_is_reclaiming() {
        let plenty = "MemTotal:       24684084 kB\nMemFree: 1 kB\nMemAvailable:   24269688 kB\n";
        assert_eq!(memory_low(plenty), Some(false));
        let short = "MemTotal:       24684084 kB\nMemAvailable:     600000 kB\n";
        assert_eq!(memory_low(short), Some(true));
        assert_eq!(memory_low("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn reads_this_machine() {
        // Whatever the verdict, the figures read here parse.
        let text = read(&File::open("/proc/meminfo").unwrap()).unwrap();
        assert!(memory_low(&text).is_some());
        open();
        sample_now();
    }
}
