//! [`LogFiles`]: every open log destination, one writer per path.
//!
//! Several `error_log`/`access_log` directives may name the same file; like
//! nginx's `ngx_conf_open_file`, they share one open file (here, one writer
//! thread and one buffer), so their lines never interleave mid-line.

use super::writer::{Batching, DEFAULT_BUFFER_BYTES, Destination, LogWriter};
use crate::sys::error::SysError;
use std::collections::HashMap;
use std::sync::Arc;

/// The open log destinations, by destination.
#[derive(Debug, Default)]
pub struct LogFiles {
    writers: HashMap<Destination, Arc<LogWriter>>,
}

impl LogFiles {
    /// No destinations.
    pub fn new() -> LogFiles {
        LogFiles::default()
    }

    /// The writer for `dest`, opening it (with [`DEFAULT_BUFFER_BYTES`]) the
    /// first time it is named. Fails as `open() "/path" failed (...)`, which
    /// startup reports as `[emerg]`.
    pub fn open(&mut self, dest: Destination) -> Result<Arc<LogWriter>, SysError> {
        self.open_with_capacity(dest, DEFAULT_BUFFER_BYTES)
    }

    /// [`LogFiles::open`] with an explicit buffer size for a new writer; an
    /// existing writer keeps the size it was opened with.
    pub fn open_with_capacity(
        &mut self,
        dest: Destination,
        capacity: usize,
    ) -> Result<Arc<LogWriter>, SysError> {
        self.open_batched(dest, capacity, Batching::default())
    }

    /// [`LogFiles::open_with_capacity`] gathering lines as `batching` says
    /// (`access_log … buffer= flush= gzip`); an existing writer keeps how it
    /// was opened.
    pub fn open_batched(
        &mut self,
        dest: Destination,
        capacity: usize,
        batching: Batching,
    ) -> Result<Arc<LogWriter>, SysError> {
        if let Some(w) = self.writers.get(&dest) {
            return Ok(Arc::clone(w));
        }
        let w = Arc::new(LogWriter::open_batched(dest.clone(), capacity, batching)?);
        self.writers.insert(dest, Arc::clone(&w));
        Ok(w)
    }

    /// Reopens every file (`SIGUSR1`); returns the failures, each to be
    /// logged at `[alert]` (the old files stay in use).
    pub fn reopen_all(&self) -> Vec<SysError> {
        self.writers
            .values()
            .filter_map(|w| w.reopen().err())
            .collect()
    }

    /// Waits until everything accepted so far is written, everywhere.
    pub fn flush_all(&self) {
        for w in self.writers.values() {
            w.flush();
        }
    }

    /// Every writer, for metrics.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<LogWriter>> {
        self.writers.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn the_same_path_shares_one_writer() {
        let path = std::env::temp_dir().join(format!("nowait-logfiles-{}.log", std::process::id()));
        let mut files = LogFiles::new();
        let a = files.open(Destination::File(path.clone())).unwrap();
        let b = files.open(Destination::File(path.clone())).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let e = files.open(Destination::Stderr).unwrap();
        assert!(!Arc::ptr_eq(&a, &e));
        assert_eq!(files.iter().count(), 2);
        a.write_line(b"one");
        b.write_line(b"two");
        files.flush_all();
        assert!(files.reopen_all().is_empty());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_bad_path_is_reported_with_open_and_errno() {
        let mut files = LogFiles::new();
        let err = files
            .open(Destination::File(PathBuf::from(
                "/nonexistent-nowait/error.log",
            )))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "open() \"/nonexistent-nowait/error.log\" failed (2: No such file or directory)"
        );
    }
}
