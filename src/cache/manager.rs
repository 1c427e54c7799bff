//! The cache manager: a thread per cache path that removes entries nobody
//! asked for within `inactive`, then the least recently used ones while
//! the path holds more than `max_size` or its file system has less than
//! `min_free` free, skipping entries being read or filled — at most
//! `manager_files` files per pass, within `manager_threshold`, resting
//! `manager_sleep` between passes (nginx's cache manager).
//!
//! Files are removed through the disk's pool — the pool requests that fill
//! this zone run in (`aio threads=pool_$disk`), learned as they fill it —
//! so the disk's I/O stays bounded by its pool; until a fill has named one,
//! the manager's own thread removes them. Either way, never a loop.
//!
//! Progress: each pass counts in `nowait_cache_manager_passes_total` and
//! each file it removes in `nowait_cache_manager_removed_total`; while it
//! removes, an `info` line at most every [`PROGRESS_EVERY`] says how many
//! files it removed since the last line and what the zone holds now
//! (nginx only logs its passes at `debug`: "http file cache manager").

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::zone::Zone;
use crate::log::{ErrorLog, Level};

/// How long the manager rests when a pass found nothing to do.
const IDLE: Duration = Duration::from_secs(1);

/// How often, at most, the manager logs its progress while it removes.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// The files removed since the last progress line, and when that was.
struct Progress {
    removed: u64,
    since: Instant,
}

impl Progress {
    /// Counts a pass that removed `n` files, and logs when due.
    fn pass(&mut self, zone: &Zone, log: &ErrorLog, n: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        zone.stats.manager_passes.fetch_add(1, Relaxed);
        zone.stats.manager_removed.fetch_add(n as u64, Relaxed);
        self.removed += n as u64;
        if self.removed > 0 && self.since.elapsed() >= PROGRESS_EVERY {
            log.log(
                Level::Info,
                None,
                format_args!("{}", progress_line(zone, self.removed)),
            );
            self.removed = 0;
            self.since = Instant::now();
        }
    }
}

/// The manager's progress line: files removed since the last line, and
/// what the zone holds now.
fn progress_line(zone: &Zone, removed: u64) -> String {
    format!(
        "http file cache manager: \"{}\" {removed} files removed, {} keys, {} bytes",
        zone.conf.path.display(),
        zone.keys(),
        zone.size()
    )
}

/// Runs until the zone is dropped (no configuration names it any more).
pub fn run(zone: Weak<Zone>, log: ErrorLog) {
    let mut progress = Progress {
        removed: 0,
        since: Instant::now(),
    };
    loop {
        let Some(z) = zone.upgrade() else {
            return;
        };
        let started = Instant::now();
        let c = &z.conf;
        let limit = c.manager_files as usize;
        let mut victims = z.expire(Instant::now(), c.max_size, limit);
        if let Some(min_free) = c.min_free {
            if let Some(free) = crate::sys::file::free_bytes(&c.path) {
                if free < min_free && victims.len() < limit {
                    victims.extend(z.evict_bytes(min_free - free, limit - victims.len()));
                }
            }
        }
        let busy = !victims.is_empty();
        let n = victims.len();
        remove(&z, &log, victims);
        progress.pass(&z, &log, n);
        let rest = if busy {
            // More may wait: come back after the configured pause, or at
            // once if the pass was quick.
            if started.elapsed() >= c.manager_threshold {
                c.manager_sleep
            } else {
                Duration::from_millis(1).max(c.manager_sleep / 10)
            }
        } else {
            IDLE
        };
        drop(z);
        std::thread::sleep(rest);
    }
}

/// Removes `files`, through the zone's pool when one is known.
fn remove(zone: &Arc<Zone>, log: &ErrorLog, files: Vec<PathBuf>) {
    if files.is_empty() {
        return;
    }
    let unlink = |p: &PathBuf| -> Option<String> {
        match std::fs::remove_file(p) {
            Ok(()) => None,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => Some(format!(
                "unlink() \"{}\" failed ({})",
                p.display(),
                crate::sys::error::errno_text(&e)
            )),
        }
    };
    let errors: Vec<String> = match zone.pool() {
        Some(pool) => {
            let list = files.clone();
            match pool.submit(move || list.iter().filter_map(unlink).collect()) {
                Ok(done) => done.wait_blocking().unwrap_or_default(),
                // The pool is full or closing: this thread does it (the
                // entries already left the index; their files must go).
                Err(_) => files.iter().filter_map(unlink).collect(),
            }
        }
        None => files.iter().filter_map(unlink).collect(),
    };
    for e in errors {
        log.log(Level::Crit, None, format_args!("{e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_and_removals_are_counted_and_told() {
        use std::sync::atomic::Ordering::Relaxed;
        let zone = Zone::new(crate::cache::zone::test_path(PathBuf::from("/c"), 1 << 20));
        let log = ErrorLog::new();
        let mut p = Progress {
            removed: 0,
            since: Instant::now(),
        };
        p.pass(&zone, &log, 0);
        p.pass(&zone, &log, 3);
        assert_eq!(zone.stats.manager_passes.load(Relaxed), 2);
        assert_eq!(zone.stats.manager_removed.load(Relaxed), 3);
        assert_eq!(p.removed, 3, "not logged within PROGRESS_EVERY");
        p.since = Instant::now() - PROGRESS_EVERY;
        p.pass(&zone, &log, 1);
        assert_eq!(p.removed, 0, "logged and restarted");
        assert_eq!(
            progress_line(&zone, 4),
            "http file cache manager: \"/c\" 4 files removed, 0 keys, 0 bytes"
        );
    }
}
