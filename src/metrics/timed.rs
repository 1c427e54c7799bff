//! Timing every poll of a task: how long it held its worker's loop.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use super::worker;

/// A future that records the duration of each of its polls in the current
/// worker's `poll` histogram.
pub struct Timed<F> {
    inner: Pin<Box<F>>,
}

impl<F: Future> Timed<F> {
    /// Wraps `f`.
    pub fn new(f: F) -> Timed<F> {
        Timed { inner: Box::pin(f) }
    }
}

impl<F: Future> Future for Timed<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let start = Instant::now();
        let out = self.inner.as_mut().poll(cx);
        let spent = start.elapsed();
        worker::with(|m| worker::record(&mut m.histograms().poll, spent));
        out
    }
}
