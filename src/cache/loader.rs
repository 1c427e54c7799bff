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
//! Progress: every [`PROGRESS_EVERY`] of a long walk an `info` line says
//! how many files and bytes it has found so far, and the status page's
//! `nowait_cache_loader_*` figures move as it goes; at the end, nginx's
//! `notice` line (`ngx_http_file_cache_loader`): the path, the size in
//! megabytes and the block size.
//!
//! This thread is not an event loop: it may wait on the disk.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::key::{NAME_LEN, md5_from_name};
use super::zone::Zone;
use crate::log::{ErrorLog, Level};

/// How often a long walk logs its progress.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// Walks `zone`'s directory and marks it loaded.
pub fn run(zone: Arc<Zone>, log: ErrorLog) {
    let mut pace = Pace {
        files: 0,
        since: Instant::now(),
        started: std::time::SystemTime::now(),
        reported: Instant::now(),
    };
    let root = zone.conf.path.clone();
    walk(&zone, &log, &root, 0, &mut pace);
    zone.loaded();
    log.log(Level::Notice, None, format_args!("{}", done_line(&zone)));
}

/// nginx's line at the end of the walk: `http file cache: PATH SIZEM,
/// bsize: BLOCK` (the size of the entries found, in MiB to three places).
fn done_line(zone: &Zone) -> String {
    use std::os::unix::fs::MetadataExt;
    let bsize = std::fs::metadata(&zone.conf.path).map_or(512, |m| m.blksize());
    format!(
        "http file cache: {} {:.3}M, bsize: {bsize}",
        zone.conf.path.display(),
        zone.size() as f64 / (1024.0 * 1024.0)
    )
}

/// The progress line of a walk under way.
fn progress_line(zone: &Zone) -> String {
    format!(
        "http file cache loader: \"{}\" {} files, {} bytes so far",
        zone.conf.path.display(),
        zone.stats.loaded_files.load(Ordering::Relaxed),
        zone.stats.loaded_bytes.load(Ordering::Relaxed)
    )
}

/// The loader's pacing state.
struct Pace {
    files: u32,
    since: Instant,
    /// When the walk began: a temp file written since is a fill of this
    /// process under way, not a crash's leftover.
    started: std::time::SystemTime,
    /// When progress was last logged (or the walk began).
    reported: Instant,
}

impl Pace {
    fn step(&mut self, zone: &Zone, log: &ErrorLog) {
        self.files += 1;
        if self.reported.elapsed() >= PROGRESS_EVERY {
            self.reported = Instant::now();
            log.log(Level::Info, None, format_args!("{}", progress_line(zone)));
        }
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
                        crate::sys::error::errno_text(&e)
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
        pace.step(zone, log);
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
                crate::sys::error::errno_text(&e)
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_and_end_lines_say_files_and_bytes() {
        let zone = Zone::new(crate::cache::zone::test_path(
            std::path::PathBuf::from("/nonexistent/c"),
            1 << 20,
        ));
        zone.add_loaded([7; 16], 0, 0, 3 * 1024 * 1024 / 2, Instant::now());
        assert_eq!(
            progress_line(&zone),
            "http file cache loader: \"/nonexistent/c\" 1 files, 1572864 bytes so far"
        );
        assert_eq!(
            done_line(&zone),
            "http file cache: /nonexistent/c 1.500M, bsize: 512"
        );
    }

    #[test]
    fn temp_names_are_told_from_entries() {
        assert!(is_temp_name("b81084b41c0d805db64b5521fbe066c9.0000000123"));
        assert!(!is_temp_name("b81084b41c0d805db64b5521fbe066c9"));
        assert!(!is_temp_name("b81084b41c0d805db64b5521fbe066c9.000000012x"));
        assert!(!is_temp_name("notanentry"));
    }
}
