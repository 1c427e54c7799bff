//! Fault injection for tests: make file operations on chosen paths behave
//! like a disk that makes them wait.
//!
//! Set `NOWAIT_TEST_STALL` to `SUBSTRING=MILLIS[,SUBSTRING=MILLIS…]` in the
//! server's environment. For a path containing SUBSTRING:
//! - the non-blocking fast paths report a miss (`EAGAIN`), as they would for
//!   data that is not in memory;
//! - every blocking operation (open, stat, read, sendfile) first sleeps
//!   MILLIS milliseconds in whatever thread runs it — the event loop itself
//!   under `aio off`, a pool thread under `aio threads`; so does each write
//!   of a log file's writer thread.
//!
//! With `NOWAIT_TEST_STALL_MARKS=DIR` also set, each stall first creates a
//! file `DIR/stall-N` holding the name of the thread that runs it and the
//! path (`pool_1#2 /c/1/ab/…`), so a test can wait until an operation is
//! really stalled before it sends the next request, and tell where it ran.
//!
//! `NOWAIT_TEST_PANIC=SUBSTRING[,SUBSTRING…]` makes the same blocking
//! operations on a matching path panic instead, in whatever thread runs
//! them (its fast paths miss too, so under `aio threads` the panic happens
//! on a pool thread): how a bug in a pool task is survived.
//!
//! This exists so tests can show, by ordering and counters rather than by
//! timing thresholds, what waits behind what. It is read once at start-up
//! and costs one empty check per operation when unset.
//!
//! Compiled only with the `test-faults` cargo feature, which the test builds
//! turn on (Cargo.toml's self dev-dependency) and `cargo build` does not:
//! without it `stall_for` is `None` and `stall` does nothing, both inlined
//! away, and the variables are never read. [`ENABLED`] says which.

use std::path::Path;
#[cfg(feature = "test-faults")]
use std::sync::OnceLock;
use std::time::Duration;

/// Whether this build reads the fault-injection variables (`-V` says so).
pub const ENABLED: bool = cfg!(feature = "test-faults");

/// The environment variable read.
#[cfg(feature = "test-faults")]
pub const ENV: &str = "NOWAIT_TEST_STALL";
/// The directory where stalls leave their marks, if set.
#[cfg(feature = "test-faults")]
pub const MARKS_ENV: &str = "NOWAIT_TEST_STALL_MARKS";

/// The variable naming paths whose operations panic.
#[cfg(feature = "test-faults")]
pub const PANIC_ENV: &str = "NOWAIT_TEST_PANIC";

/// The substrings of [`PANIC_ENV`].
#[cfg(feature = "test-faults")]
fn panics() -> &'static [String] {
    static PANICS: OnceLock<Vec<String>> = OnceLock::new();
    PANICS.get_or_init(|| {
        std::env::var(PANIC_ENV)
            .map(|v| {
                v.split(',')
                    .filter(|p| !p.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    })
}

/// Whether an operation on `path` is to panic.
#[cfg(feature = "test-faults")]
fn panics_for(path: &Path) -> bool {
    let panics = panics();
    !panics.is_empty() && {
        let p = path.to_string_lossy();
        panics.iter().any(|pat| p.contains(pat.as_str()))
    }
}

#[cfg(feature = "test-faults")]
fn rules() -> &'static [(String, Duration)] {
    static RULES: OnceLock<Vec<(String, Duration)>> = OnceLock::new();
    RULES.get_or_init(|| std::env::var(ENV).map(|v| parse(&v)).unwrap_or_default())
}

/// Parses `SUBSTRING=MILLIS,…`; malformed entries are skipped.
#[cfg(feature = "test-faults")]
pub fn parse(spec: &str) -> Vec<(String, Duration)> {
    spec.split(',')
        .filter_map(|rule| {
            let (pat, ms) = rule.rsplit_once('=')?;
            let ms: u64 = ms.trim().parse().ok()?;
            (!pat.is_empty()).then(|| (pat.to_string(), Duration::from_millis(ms)))
        })
        .collect()
}

/// The stall configured for `path`, if any (zero for a path whose
/// operations panic: the fast paths must miss for it too).
#[cfg(feature = "test-faults")]
pub fn stall_for(path: &Path) -> Option<Duration> {
    if panics_for(path) {
        return Some(Duration::ZERO);
    }
    let rules = rules();
    if rules.is_empty() {
        return None;
    }
    let p = path.to_string_lossy();
    rules
        .iter()
        .find(|(pat, _)| p.contains(pat.as_str()))
        .map(|(_, d)| *d)
}

/// Sleeps for the stall configured for `path` (the "disk" answering).
#[cfg(feature = "test-faults")]
pub fn stall(path: &Path) {
    if panics_for(path) {
        panic!("{PANIC_ENV}: injected panic on \"{}\"", path.display());
    }
    if let Some(d) = stall_for(path) {
        mark(path);
        std::thread::sleep(d);
    }
}

/// Leaves a mark that a stall began (see the module header).
#[cfg(feature = "test-faults")]
fn mark(path: &Path) {
    static MARKS: OnceLock<Option<std::path::PathBuf>> = OnceLock::new();
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    if let Some(dir) = MARKS.get_or_init(|| std::env::var_os(MARKS_ENV).map(Into::into)) {
        let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let thread = std::thread::current();
        let text = format!("{} {}", thread.name().unwrap_or("?"), path.display());
        let _ = std::fs::write(dir.join(format!("stall-{n}")), text);
    }
}

/// The folder stalls leave their marks in (`NOWAIT_TEST_STALL_MARKS`), in
/// test builds: Landlock must let the serving process write there.
#[cfg(feature = "test-faults")]
pub fn marks_dir() -> Option<std::path::PathBuf> {
    std::env::var_os(MARKS_ENV).map(Into::into)
}

/// Without the `test-faults` feature: no marks, never a folder for them.
#[cfg(not(feature = "test-faults"))]
#[inline(always)]
pub fn marks_dir() -> Option<std::path::PathBuf> {
    None
}

/// Without the `test-faults` feature: no path is ever stalled.
#[cfg(not(feature = "test-faults"))]
#[inline(always)]
pub fn stall_for(_path: &Path) -> Option<Duration> {
    None
}

/// Without the `test-faults` feature: nothing to wait for.
#[cfg(not(feature = "test-faults"))]
#[inline(always)]
pub fn stall(_path: &Path) {}

#[cfg(all(test, feature = "test-faults"))]
mod tests {
    use super::*;

    #[test]
    fn parses_rules() {
        let r = parse("cold=200,/a/b=5,bad,=3,x=y");
        assert_eq!(
            r,
            vec![
                ("cold".to_string(), Duration::from_millis(200)),
                ("/a/b".to_string(), Duration::from_millis(5))
            ]
        );
    }
}
