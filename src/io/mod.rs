//! The never-blocking file layer and the named thread pools.
//!
//! - [`pool`]: `thread_pool NAME threads=N max_queue=M`: a bounded FIFO of
//!   blocking tasks shared by every worker loop, run by named threads, whose
//!   completion wakes the posting tokio task. A full queue is an error at once,
//!   never a wait.
//!
//! What this module must not do: block an event loop. Anything that may wait
//! on a disk either runs in its non-blocking form on the loop (see
//! [`crate::sys::file`]) or is handed to a [`pool::Pool`].

pub mod pool;

pub use pool::{Completion, Pool, PoolStats, PoolTimings, Pools, SubmitError, TaskError};
pub mod file;
