//! The cache loader: at start-up, a thread per cache path walks its
//! directory and fills the zone with the entries it finds — at once, where
//! nginx's loader process waits 60 seconds — in batches of `loader_files`
//! files, resting `loader_sleep` after a batch or after `loader_threshold`
//! of work, as nginx's loader paces itself.
//!
//! As nginx's (`ngx_http_file_cache_add_file`), it reads names and sizes,
//! not files: an entry's freshness and body offset are read from its header
//! when it is first served. Until the walk ends the zone is *cold* and a
//! key it does not know is probed on disk (through the request's pool).
//! Temp files a crash left behind (an entry's name plus `.` and ten digits)
//! are removed — nginx leaves them — and so are files whose names are not
//! entries' names.
//!
//! This thread is not an event loop: it may wait on the disk.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::key::{NAME_LEN, md5_from_name};
use super::zone::Zone;
use crate::log::{ErrorLog, Level};

/// Walks `zone`'s directory and marks it loaded.
pub fn run(zone: Arc<Zone>, log: ErrorLog) {
    let mut pace = Pace {
        files: 0,
        since: Instant::now(),
        started: std::time::SystemTime::now(),
    };
    let root = zone.conf.path.clone();
    walk(&zone, &log, &root, 0, &mut pace);
    zone.loaded();
    log.log(
        Level::Notice,
        None,
        format_args!(
            "http file cache: \"{}\" {} keys loaded, {} bytes",
            root.display(),
            zone.keys(),
            zone.size()
        ),
    );
}

/// The loader's pacing state.
struct Pace {
    files: u32,
    since: Instant,
    /// When the walk began: a temp file written since is a fill of this
    /// process under way, not a crash's leftover.
    started: std::time::SystemTime,
}

impl Pace {
    fn step(&mut self, zone: &Zone) {
        self.files += 1;
        let c = &zone.conf;
        if self.files >= c.loader_files || self.since.elapsed() >= c.loader_threshold {
            std::thread::sleep(c.loader_sleep);
            self.files = 0;
            self.since = Instant::now();
        }
    }
}

fn walk(zone: &Zone, log: &ErrorLog, dir: &Path, depth: usize, pace: &mut Pace) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            if depth == 0 {
                log.log(
                    Level::Crit,
                    None,
                    format_args!(
                        "opendir() \"{}\" failed ({})",
                        dir.display(),
                        crate::config::errno_text(&e)
                    ),
                );
            }
            return;
        }
    };
    let levels = zone.conf.levels.len();
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        if meta.is_dir() {
            if depth < levels {
                walk(zone, log, &path, depth + 1, pace);
            }
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        pace.step(zone);
        if depth != levels {
            continue;
        }
        match md5_from_name(&name) {
            Some(md5) if name.len() == NAME_LEN => {
                if meta.len() < super::format::HEADER_SIZE as u64 {
                    log.log(
                        Level::Crit,
                        None,
                        format_args!("cache file \"{}\" is too small", path.display()),
                    );
                    remove(log, &path);
                    continue;
                }
                use std::os::unix::fs::MetadataExt;
                zone.add_loaded(md5, 0, 0, meta.blocks() * 512, Instant::now());
            }
            _ if is_temp_name(&name) && meta.modified().is_ok_and(|m| m < pace.started) => {
                remove(log, &path);
            }
            _ => {}
        }
    }
}

/// An entry's temp file: 32 hex digits, `.`, 10 digits.
fn is_temp_name(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() == NAME_LEN + 11
        && b[NAME_LEN] == b'.'
        && md5_from_name(&name[..NAME_LEN]).is_some()
        && b[NAME_LEN + 1..].iter().all(u8::is_ascii_digit)
}

fn remove(log: &ErrorLog, path: &Path) {
    if let Err(e) = std::fs::remove_file(path) {
        log.log(
            Level::Crit,
            None,
            format_args!(
                "unlink() \"{}\" failed ({})",
                path.display(),
                crate::config::errno_text(&e)
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_told_from_entries() {
        assert!(is_temp_name("b81084b41c0d805db64b5521fbe066c9.0000000123"));
        assert!(!is_temp_name("b81084b41c0d805db64b5521fbe066c9"));
        assert!(!is_temp_name("b81084b41c0d805db64b5521fbe066c9.000000012x"));
        assert!(!is_temp_name("notanentry"));
    }
}
