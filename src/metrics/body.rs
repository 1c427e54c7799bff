//! How file bodies left the process: bytes `sendfile()`d by a worker's
//! loop, bytes `sendfile()`d by a pool thread, and bytes copied through a
//! buffer (`sendfile off`, small files sent with their head, and the
//! pool's reads). Process-wide relaxed counters fed with plain numbers by
//! `server::core::send`; this module imports nothing of `io/` or `server/`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// How one slice of a file body was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyPath {
    /// `sendfile()` on the worker's loop, after the slice was found in
    /// memory and up to date (or under `aio off`, as nginx does).
    LoopSendfile,
    /// `sendfile()` on a pool thread (`aio threads`, the slice needed the disk).
    PoolSendfile,
    /// Read into a buffer and written.
    Copy,
}

impl BodyPath {
    /// Every path, in the order reported.
    pub const ALL: [BodyPath; 3] = [
        BodyPath::LoopSendfile,
        BodyPath::PoolSendfile,
        BodyPath::Copy,
    ];

    /// The label on the status page.
    pub fn name(self) -> &'static str {
        match self {
            BodyPath::LoopSendfile => "loop_sendfile",
            BodyPath::PoolSendfile => "pool_sendfile",
            BodyPath::Copy => "copy",
        }
    }
}

/// Bytes by [`BodyPath`], indexed by its discriminant.
static BYTES: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

/// Counts `n` body bytes sent by `path`.
pub fn record(path: BodyPath, n: usize) {
    BYTES[path as usize].fetch_add(n as u64, Ordering::Relaxed);
}

/// Body bytes sent by `path` since the process started.
pub fn bytes(path: BodyPath) -> u64 {
    BYTES[path as usize].load(Ordering::Relaxed)
}

/// Appends `nowait_body_bytes_total{path}` in Prometheus text.
pub fn render(out: &mut String) {
    let _ = writeln!(
        out,
        "# HELP nowait_body_bytes_total File body bytes sent, by how: sendfile() on a loop or a pool thread, or copied through a buffer."
    );
    let _ = writeln!(out, "# TYPE nowait_body_bytes_total counter");
    for p in BodyPath::ALL {
        let _ = writeln!(
            out,
            "nowait_body_bytes_total{{path=\"{}\"}} {}",
            p.name(),
            bytes(p)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_path_and_renders_every_path() {
        let before = bytes(BodyPath::PoolSendfile);
        record(BodyPath::PoolSendfile, 4096);
        assert!(bytes(BodyPath::PoolSendfile) >= before + 4096);
        let mut out = String::new();
        render(&mut out);
        for p in BodyPath::ALL {
            assert!(
                out.contains(&format!("nowait_body_bytes_total{{path=\"{}\"}}", p.name())),
                "{out}"
            );
        }
    }
}
