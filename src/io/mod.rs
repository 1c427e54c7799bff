//! The never-blocking file layer and the named thread pools.
//!
//! - [`pool`]: `thread_pool NAME threads=N max_queue=M`: a bounded FIFO of
//!   blocking tasks shared by every worker loop, run by named threads. A full
//!   queue is an error at once, never a wait.
//! - [`completion`]: what a submission returns: a future that wakes the
//!   posting tokio task on any runtime, or the overflow error.
//! - [`pools`]: the pools by name, for `aio threads=NAME` lookups.
//! - [`popularity`]: how often each file is opened lately (a TinyLFU
//!   frequency sketch): the rank of its misses in a pool's queue.
//! - [`pressure`]: whether memory is short (the cgroup near its limit, or
//!   the machine's available memory low), sampled by a thread of its own:
//!   the loops then copy resident file data instead of `sendfile()`ing it.
//! - [`read_ahead`]: a popular file's miss asks the kernel for the rest of
//!   the file at once, so that it comes back in one trip through the disk's
//!   queue.
//! - [`sample`]: the pools' and the file layer's numbers for the status
//!   page, as the metrics layer's plain types.
//! - [`closer`]: the last close of a file with no name left, off the loops.
//! - [`temp`]: temporary files (request bodies, buffered responses).
//! - [`dir`]: directory listings (`autoindex`) through the file layer.
//! - [`open_cache`]: `open_file_cache`: descriptors, metadata and errors kept
//!   across requests; every lookup it makes goes through [`file`].
//! - [`ready`]: socket reads that keep the reactor's readiness exact, so
//!   that a drained socket costs no `EAGAIN` read.
//! - [`deadline`]: timeouts for waits that nearly always end first, on
//!   timers the worker reuses.
//! - [`client_stream`]: a client's connection, TCP or unix-domain, as one
//!   type.
//!
//! What this module must not do: block an event loop. Anything that may wait
//! on a disk either runs in its non-blocking form on the loop (see
//! [`crate::sys::file`]) or is handed to a [`Pool`].

pub mod client_stream;
pub mod closer;
pub mod completion;
pub mod deadline;
pub mod dir;
pub mod fault;
pub mod file;
pub mod open_cache;
pub mod pins;
pub mod pool;
pub mod pools;
pub mod popularity;
pub mod pressure;
pub mod read_ahead;
pub mod ready;
pub mod sample;
pub mod temp;
pub mod tls_stream;

pub use completion::{Completion, SubmitError, TaskError};
pub use pool::{Lane, Pool, PoolStats, PoolTimings, thread_name};
pub use pools::{DEFAULT_MAX_QUEUE, DEFAULT_POOL, DEFAULT_THREADS, Pools};
