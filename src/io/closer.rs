//! Closing files off the event loops.
//!
//! The last close of a file whose name is gone — an unlinked temp file, a
//! cache entry replaced by a newer fill or removed by the manager — evicts
//! its inode, and eviction truncates the inode's pages, waiting for any
//! that are under writeback: on a slow disk, for as long as the disk takes.
//! nginx closes on its loop and waits there. nowait does not: a descriptor
//! held in a [`CloseOffLoop`] that is dropped on a worker's loop thread,
//! and whose file has no name left, is handed to one process-wide closer
//! thread, which closes it. Every other close stays where it happens (one
//! `fstat` to decide, which never waits on a disk). A descriptor opened
//! under `aio off` ([`CloseOffLoop::plain`]) is closed where it is dropped,
//! unchecked: that setting asks for nginx's behaviour, whose loop opens,
//! reads and closes files itself, and its open and reads already ran on
//! the loop.
//!
//! What this module must not do: block the thread that drops a file. The
//! hand-over is a send on an unbounded channel.

use std::ops::Deref;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, OnceLock};

use crate::sys::file as sysfile;

/// Files the closer thread closed for the loops (for tests and metrics).
static DEFERRED: AtomicU64 = AtomicU64::new(0);

/// A descriptor whose last close, if it falls on a loop thread and the file
/// has no name left, happens on the closer thread instead.
#[derive(Debug)]
pub struct CloseOffLoop<T: AsFd + Into<OwnedFd> + Send + 'static> {
    inner: Option<T>,
    /// Whether a drop on a loop thread checks for a nameless file.
    checked: AtomicBool,
}

impl<T: AsFd + Into<OwnedFd> + Send + 'static> CloseOffLoop<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Self {
        CloseOffLoop {
            inner: Some(inner),
            checked: AtomicBool::new(true),
        }
    }

    /// Wraps `inner`, closed wherever it is dropped (`aio off`).
    pub fn plain(inner: T) -> Self {
        CloseOffLoop {
            inner: Some(inner),
            checked: AtomicBool::new(false),
        }
    }

    /// From now on, a drop on a loop thread checks (a descriptor kept
    /// beyond the request that opened it: `open_file_cache`).
    pub fn check_on_close(&self) {
        self.checked.store(true, Ordering::Relaxed);
    }
}

impl<T: AsFd + Into<OwnedFd> + Send + 'static> Deref for CloseOffLoop<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.inner.as_ref().expect("present until dropped")
    }
}

impl<T: AsFd + Into<OwnedFd> + Send + 'static> AsFd for CloseOffLoop<T> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.deref().as_fd()
    }
}

impl<T: AsFd + Into<OwnedFd> + Send + 'static> Drop for CloseOffLoop<T> {
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        if self.checked.load(Ordering::Relaxed)
            && on_loop()
            && sysfile::link_count(&inner).is_ok_and(|n| n == 0)
        {
            hand_over(inner.into());
        }
    }
}

/// Whether this thread runs a worker's event loop.
fn on_loop() -> bool {
    crate::metrics::worker::with(|_| ()).is_some()
}

/// Sends `fd` to the closer thread (started on first use); closes it here
/// if the thread cannot be started.
fn hand_over(fd: OwnedFd) {
    static CLOSER: OnceLock<Option<Mutex<Sender<OwnedFd>>>> = OnceLock::new();
    let sender = CLOSER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<OwnedFd>();
        std::thread::Builder::new()
            .name("nowait-closer".into())
            .spawn(move || {
                for fd in rx {
                    drop(fd);
                    DEFERRED.fetch_add(1, Ordering::Relaxed);
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    match sender {
        Some(tx) => {
            let tx = tx.lock().unwrap_or_else(|p| p.into_inner());
            // A send fails only when the thread is gone: then `fd` comes
            // back in the error and is closed here.
            let _ = tx.send(fd);
        }
        None => drop(fd),
    }
}

/// How many descriptors the closer thread has closed for the loops.
pub fn deferred() -> u64 {
    DEFERRED.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unlinked_file_dropped_on_a_loop_is_closed_by_the_closer() {
        let dir = std::env::temp_dir().join(format!("nowait-closer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let kept = dir.join("kept");
        let gone = dir.join("gone");
        let a = CloseOffLoop::new(std::fs::File::create(&kept).unwrap());
        let b = CloseOffLoop::new(std::fs::File::create(&gone).unwrap());
        // Opened under `aio off`: closed on the loop even without a name.
        let c = CloseOffLoop::plain(std::fs::File::open(&gone).unwrap());
        // Kept by `open_file_cache`: checked again.
        let d = CloseOffLoop::plain(std::fs::File::open(&gone).unwrap());
        d.check_on_close();
        std::fs::remove_file(&gone).unwrap();
        let before = deferred();
        // Off a loop: both close where they are dropped.
        drop(CloseOffLoop::new(std::fs::File::open(&kept).unwrap()));
        assert_eq!(deferred(), before);
        // On a loop thread: only the unlinked checked ones are handed over.
        std::thread::spawn(move || {
            crate::metrics::worker::install(std::sync::Arc::new(
                crate::metrics::worker::WorkerMetrics::new(1),
            ));
            drop(a);
            drop(c);
            drop(d);
            drop(b);
        })
        .join()
        .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while deferred() != before + 2 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(deferred(), before + 2, "the nameless checked ones (b, d)");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
