//! [`Source`]: a body read as it arrives, one piece at a time, polled by
//! whoever sends it; and [`Teed`], a source that hands every piece to a
//! [`Tee`] as well (the cache writer of a response being cached).
//!
//! A source is polled rather than awaited so that the sender can wait on the
//! source and on the client at once (reading ahead while the client is slow)
//! without boxing a future per piece.

use std::fmt;
use std::task::{Context, Poll};

use bytes::Bytes;

/// Why a body could not be read to its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceError {
    /// nginx's words for the error log (`upstream prematurely closed
    /// connection while reading upstream`).
    pub message: String,
    /// Whether it was a timeout (nginx logs those at a different level).
    pub timed_out: bool,
    /// The request is terminated (nginx's `ngx_http_terminate_request`: a
    /// subrequest nginx gives up on): what waits to be sent is dropped,
    /// not flushed. Its cause was logged where it happened.
    pub terminate: bool,
}

impl SourceError {
    /// An error with `message`.
    pub fn new(message: impl Into<String>) -> SourceError {
        SourceError {
            message: message.into(),
            timed_out: false,
            terminate: false,
        }
    }

    /// A timeout with `message`.
    pub fn timeout(message: impl Into<String>) -> SourceError {
        SourceError {
            message: message.into(),
            timed_out: true,
            terminate: false,
        }
    }

    /// The request is terminated; the cause was logged already.
    pub fn terminated() -> SourceError {
        SourceError {
            message: String::new(),
            timed_out: false,
            terminate: true,
        }
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SourceError {}

/// A body that arrives piece by piece.
pub trait Source {
    /// The next piece of the body; `Ok(None)` once the body is complete.
    /// An error means the body ended before it was complete: the client
    /// must not be given a response that looks complete.
    ///
    /// Must be cancel-safe: a poll that returns `Pending` loses nothing.
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, SourceError>>;

    /// The body's length when it is known in advance.
    fn length(&self) -> Option<u64>;

    /// Bytes received so far from wherever the body comes from, framing
    /// included (`$upstream_bytes_received`).
    fn received(&self) -> u64 {
        0
    }

    /// Whether each piece should reach the client as soon as it comes
    /// (nginx's flush buffers: an unbuffered upstream), rather than be
    /// gathered up to `postpone_output` first.
    fn flushes(&self) -> bool {
        false
    }
}

impl<S: Source + ?Sized> Source for Box<S> {
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, SourceError>> {
        (**self).poll_chunk(cx)
    }

    fn length(&self) -> Option<u64> {
        (**self).length()
    }

    fn received(&self) -> u64 {
        (**self).received()
    }

    fn flushes(&self) -> bool {
        (**self).flushes()
    }
}

/// A second consumer of a body's bytes, fed as the body is read.
pub trait Tee {
    /// The next piece of the body.
    fn data(&mut self, chunk: &Bytes);
    /// The body ended: completely (`true`) or not. A tee that was not told
    /// `true` must discard what it was given.
    fn end(&mut self, complete: bool);

    /// Whether the body should still be read to its end for this tee when
    /// its reader goes away early (a client gone, a range served): a cache
    /// fill or a `proxy_store` wants the rest, as nginx keeps reading the
    /// upstream for them after the client aborts.
    fn wants_rest(&self) -> bool {
        false
    }
}

/// A [`Source`] whose pieces also go to a [`Tee`].
pub struct Teed<S: Source + 'static, T: Tee + 'static> {
    source: Option<S>,
    tee: Option<T>,
    /// This is the drain of an abandoned body: its drop does not start
    /// another.
    draining: bool,
}

impl<S: Source + 'static, T: Tee + 'static> Teed<S, T> {
    /// Tees `source` into `tee`.
    pub fn new(source: S, tee: T) -> Teed<S, T> {
        Teed {
            source: Some(source),
            tee: Some(tee),
            draining: false,
        }
    }
}

impl<S: Source + 'static, T: Tee + 'static> Source for Teed<S, T> {
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, SourceError>> {
        let Some(source) = self.source.as_mut() else {
            return Poll::Ready(Ok(None));
        };
        let r = std::task::ready!(source.poll_chunk(cx));
        match &r {
            Ok(Some(chunk)) => {
                if let Some(t) = &mut self.tee {
                    t.data(chunk);
                }
            }
            Ok(None) => {
                if let Some(mut t) = self.tee.take() {
                    t.end(true);
                }
            }
            Err(_) => {
                if let Some(mut t) = self.tee.take() {
                    t.end(false);
                }
            }
        }
        Poll::Ready(r)
    }

    fn length(&self) -> Option<u64> {
        self.source.as_ref().and_then(Source::length)
    }

    fn received(&self) -> u64 {
        self.source.as_ref().map_or(0, Source::received)
    }

    fn flushes(&self) -> bool {
        self.source.as_ref().is_some_and(Source::flushes)
    }
}

impl<S: Source + 'static, T: Tee + 'static> Drop for Teed<S, T> {
    /// A body dropped before its end (the client went away, a range was
    /// served) is read to its end by a task of the worker when the tee
    /// wants the rest; otherwise the tee is told it is incomplete.
    fn drop(&mut self) {
        let Some(mut tee) = self.tee.take() else {
            return;
        };
        if !self.draining && tee.wants_rest() {
            if let Some(source) = self.source.take() {
                let mut rest = Teed {
                    source: Some(source),
                    tee: Some(tee),
                    draining: true,
                };
                tokio::task::spawn_local(async move {
                    while let Ok(Some(_)) = std::future::poll_fn(|cx| rest.poll_chunk(cx)).await {}
                });
                return;
            }
        }
        tee.end(false);
    }
}

/// A source over pieces known in advance (tests, and bodies assembled in
/// memory that are sent like streams).
pub struct Pieces {
    pieces: std::collections::VecDeque<Result<Bytes, SourceError>>,
    length: Option<u64>,
}

impl Pieces {
    /// A source yielding `pieces` in order, then the end (or the error).
    pub fn new(pieces: Vec<Result<Bytes, SourceError>>, length: Option<u64>) -> Pieces {
        Pieces {
            pieces: pieces.into(),
            length,
        }
    }
}

impl Source for Pieces {
    fn poll_chunk(&mut self, _: &mut Context<'_>) -> Poll<Result<Option<Bytes>, SourceError>> {
        Poll::Ready(match self.pieces.pop_front() {
            Some(Ok(b)) => Ok(Some(b)),
            Some(Err(e)) => Err(e),
            None => Ok(None),
        })
    }

    fn length(&self) -> Option<u64> {
        self.length
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    #[derive(Default)]
    struct Record(Rc<RefCell<(Vec<u8>, Option<bool>)>>);

    impl Tee for Record {
        fn data(&mut self, chunk: &Bytes) {
            self.0.borrow_mut().0.extend_from_slice(chunk);
        }
        fn end(&mut self, complete: bool) {
            self.0.borrow_mut().1 = Some(complete);
        }
    }

    fn drain(s: &mut impl Source) -> Result<Vec<u8>, SourceError> {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut out = Vec::new();
        loop {
            match s.poll_chunk(&mut cx) {
                Poll::Ready(Ok(Some(b))) => out.extend_from_slice(&b),
                Poll::Ready(Ok(None)) => return Ok(out),
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => unreachable!("Pieces is always ready"),
            }
        }
    }

    #[test]
    fn a_tee_sees_every_byte_and_the_end() {
        let rec = Record::default();
        let seen = rec.0.clone();
        let src = Pieces::new(vec![Ok(Bytes::from("ab")), Ok(Bytes::from("c"))], None);
        let mut t = Teed::new(src, rec);
        assert_eq!(drain(&mut t).unwrap(), b"abc");
        assert_eq!(*seen.borrow(), (b"abc".to_vec(), Some(true)));
    }

    #[test]
    fn a_tee_is_told_an_incomplete_body_is_incomplete() {
        let rec = Record::default();
        let seen = rec.0.clone();
        let src = Pieces::new(
            vec![Ok(Bytes::from("ab")), Err(SourceError::new("cut"))],
            None,
        );
        let mut t = Teed::new(src, rec);
        assert!(drain(&mut t).is_err());
        assert_eq!(seen.borrow().1, Some(false));

        // Dropped before the end: incomplete too.
        let rec = Record::default();
        let seen = rec.0.clone();
        drop(Teed::new(Pieces::new(vec![], None), rec));
        assert_eq!(seen.borrow().1, Some(false));
    }
}
