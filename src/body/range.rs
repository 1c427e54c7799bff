//! [`Ranged`]: one byte range of a streamed body (`proxy_force_ranges`):
//! the bytes before the range are dropped, the range is passed, the rest
//! is read and dropped so the source still ends as it should (an upstream
//! connection is reusable only once its body was read whole).

use std::task::{Context, Poll};

use bytes::Bytes;

use super::source::{Source, SourceError};

/// A range of a source.
pub struct Ranged {
    inner: Box<dyn Source>,
    /// Bytes still to drop before the range.
    skip: u64,
    /// Bytes of the range still to pass.
    take: u64,
    len: u64,
}

impl Ranged {
    /// The `len` bytes of `inner` starting at `start`.
    pub fn new(inner: Box<dyn Source>, start: u64, len: u64) -> Ranged {
        Ranged {
            inner,
            skip: start,
            take: len,
            len,
        }
    }
}

impl Source for Ranged {
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, SourceError>> {
        loop {
            let Some(mut piece) = std::task::ready!(self.inner.poll_chunk(cx))? else {
                return Poll::Ready(Ok(None));
            };
            if self.skip > 0 {
                let drop = self.skip.min(piece.len() as u64) as usize;
                let _ = piece.split_to(drop);
                self.skip -= drop as u64;
            }
            if self.take == 0 || piece.is_empty() {
                continue;
            }
            let keep = self.take.min(piece.len() as u64) as usize;
            piece.truncate(keep);
            self.take -= keep as u64;
            return Poll::Ready(Ok(Some(piece)));
        }
    }

    fn length(&self) -> Option<u64> {
        Some(self.len)
    }

    fn received(&self) -> u64 {
        self.inner.received()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::source::Pieces;

    #[test]
    fn passes_only_the_range_and_reads_to_the_end() {
        let src = Pieces::new(
            vec![
                Ok(Bytes::from("SEE-")),
                Ok(Bytes::from("THIS")),
                Ok(Bytes::from("!!")),
            ],
            Some(10),
        );
        let mut r = Ranged::new(Box::new(src), 2, 5);
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut out = Vec::new();
        while let Poll::Ready(Ok(Some(b))) = r.poll_chunk(&mut cx) {
            out.extend_from_slice(&b);
        }
        assert_eq!(out, b"E-THI");
        assert_eq!(r.length(), Some(5));
    }
}
