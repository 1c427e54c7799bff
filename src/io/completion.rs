//! What [`crate::io::Pool::submit`] hands back: a [`Completion`] to await,
//! or a [`SubmitError`] at once; and [`TaskError`] for an accepted task that
//! produced no result.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::oneshot;

/// Why [`Pool::submit`](super::Pool::submit) refused a task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubmitError {
    /// `max_queue` tasks are already waiting.
    Overflow {
        /// The pool's name.
        pool: Arc<str>,
        /// Tasks waiting when the submission was refused.
        waiting: usize,
    },
    /// The pool is shutting down.
    Closed {
        /// The pool's name.
        pool: Arc<str>,
    },
}

impl fmt::Display for SubmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubmitError::Overflow { pool, waiting } => {
                write!(
                    f,
                    "thread pool \"{pool}\" queue overflow: {waiting} tasks waiting"
                )
            }
            SubmitError::Closed { pool } => write!(f, "thread pool \"{pool}\" is shutting down"),
        }
    }
}

impl std::error::Error for SubmitError {}

/// Why an accepted task produced no result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskError {
    /// The task panicked on the pool thread (the thread survives).
    Panicked {
        /// The pool's name.
        pool: Arc<str>,
    },
    /// The task was dropped without running (its thread died).
    Lost {
        /// The pool's name.
        pool: Arc<str>,
    },
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::Panicked { pool } => write!(f, "task in thread pool \"{pool}\" panicked"),
            TaskError::Lost { pool } => write!(f, "task in thread pool \"{pool}\" was lost"),
        }
    }
}

impl std::error::Error for TaskError {}

/// The result of a submitted task: a future that resolves when a pool thread
/// has run it, waking the task that awaits it on any runtime.
#[must_use = "dropping a Completion discards the task's result (the task still runs)"]
#[derive(Debug)]
pub struct Completion<T> {
    rx: oneshot::Receiver<Result<T, ()>>,
    pool: Arc<str>,
}

impl<T> Completion<T> {
    /// Blocks the calling thread until the task is done. Not for event loops
    /// (it panics inside a tokio runtime); for startup code and tests.
    pub fn wait_blocking(self) -> Result<T, TaskError> {
        let pool = self.pool;
        convert(self.rx.blocking_recv(), pool)
    }
}

fn convert<T>(
    r: Result<Result<T, ()>, oneshot::error::RecvError>,
    pool: Arc<str>,
) -> Result<T, TaskError> {
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(())) => Err(TaskError::Panicked { pool }),
        Err(_) => Err(TaskError::Lost { pool }),
    }
}

impl<T> Future for Completion<T> {
    type Output = Result<T, TaskError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        Pin::new(&mut this.rx)
            .poll(cx)
            .map(|r| convert(r, Arc::clone(&this.pool)))
    }
}

impl<T> Completion<T> {
    /// Wraps the receiving end of a task's result channel.
    pub(super) fn new(rx: oneshot::Receiver<Result<T, ()>>, pool: Arc<str>) -> Completion<T> {
        Completion { rx, pool }
    }
}
