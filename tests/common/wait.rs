//! Bounded polling, for effects that happen shortly after a request or a
//! signal (a log line written, a file appearing, a process exiting).

use std::thread::sleep;
use std::time::{Duration, Instant};

/// Pause between two checks.
const POLL: Duration = Duration::from_millis(20);

/// Checks `cond` until it holds or `limit` passes; whether it held.
pub fn until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        sleep(POLL);
    }
}

/// The file's content as text, empty when it does not exist (yet).
pub fn read_text(path: &std::path::Path) -> String {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}
