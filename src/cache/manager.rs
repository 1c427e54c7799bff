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

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::zone::Zone;
use crate::log::{ErrorLog, Level};

/// How long the manager rests when a pass found nothing to do.
const IDLE: Duration = Duration::from_secs(1);

/// Runs until the zone is dropped (no configuration names it any more).
pub fn run(zone: Weak<Zone>, log: ErrorLog) {
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
        remove(&z, &log, victims);
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
                crate::config::errno_text(&e)
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
