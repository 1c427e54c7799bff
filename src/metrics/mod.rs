//! What nowait measures about itself instead of guessing (brief §2.3): how
//! long a worker's event loop is held, time to first byte, the pools' queues,
//! and how often the non-blocking fast paths answer on the loop.
//!
//! - [`worker`]: each worker's histograms and counters, reached from the
//!   worker's own thread through a thread-local handle.
//! - [`buckets`]: Prometheus histograms rendered from the hdrhistograms.
//! - [`timed`]: the future wrapper that times every poll of a task.
//! - [`upstream`]: per upstream server: requests, failures, response time.
//! - [`connections`]: nginx's connection counters (`stub_status`).
//! - [`logs`]: per log destination, lines written and dropped.
//! - [`ring`]: the status page's last minutes, one sample a second.
//! - [`body`]: file body bytes by how they were sent (loop or pool
//!   `sendfile()`, or copied).
//! - [`tls`]: TLS handshakes by outcome, their time, and when each served
//!   certificate expires.
//! - [`pools`]: the pools and the file layer, as plain numbers `io` hands
//!   over (metrics names no `io` type: `io` stands on it).
//! - [`prometheus`]: the text the `nowait_status` location serves.
//!
//! Recording must stay cheap: a histogram update behind an uncontended lock
//! (only the owning worker writes; the status page reads), a relaxed atomic
//! for a counter.

pub mod body;
pub mod buckets;
pub mod cache;
pub mod connections;
#[cfg(test)]
mod docs;
pub mod logs;
pub mod pools;
pub mod prometheus;
pub mod ring;
pub mod timed;
pub mod tls;
pub mod upstream;
pub mod worker;

pub use worker::{FastOp, FastOutcome, WorkerMetrics};
