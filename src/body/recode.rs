//! [`Recoded`]: a body recoded from one charset to another as it streams
//! (nginx's charset body filter), with a [`Recoder`] from the
//! `charset_map` tables.

use std::task::{Context, Poll};

use bytes::Bytes;

use super::source::{Source, SourceError};
use crate::http::charset::Recoder;

/// A source in another charset.
pub struct Recoded<'a> {
    inner: Box<dyn Source + 'a>,
    recoder: Recoder,
}

impl<'a> Recoded<'a> {
    /// `inner` recoded by `recoder`.
    pub fn new(inner: Box<dyn Source + 'a>, recoder: Recoder) -> Recoded<'a> {
        Recoded { inner, recoder }
    }
}

impl Source for Recoded<'_> {
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, SourceError>> {
        loop {
            let Some(chunk) = std::task::ready!(self.inner.poll_chunk(cx))? else {
                return Poll::Ready(Ok(None));
            };
            let mut out = Vec::with_capacity(chunk.len() + chunk.len() / 2);
            self.recoder.recode(&chunk, &mut out);
            if !out.is_empty() {
                return Poll::Ready(Ok(Some(Bytes::from(out))));
            }
        }
    }

    /// The same length for 8-bit to 8-bit recoding; unknown otherwise.
    fn flushes(&self) -> bool {
        self.inner.flushes()
    }

    fn length(&self) -> Option<u64> {
        if self.recoder.keeps_length() {
            self.inner.length()
        } else {
            None
        }
    }

    fn received(&self) -> u64 {
        self.inner.received()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::source::Pieces;
    use crate::http::charset::MapBuilder;
    use std::sync::Arc;

    #[test]
    fn recodes_piece_by_piece() {
        let mut b = MapBuilder::new(false);
        b.entry("58", "59").unwrap();
        let (fwd, _) = b.finish();
        let src = Pieces::new(vec![Ok(Bytes::from("aX")), Ok(Bytes::from("XX"))], Some(4));
        let mut r = Recoded::new(Box::new(src), Recoder::new(Arc::new(fwd)));
        assert_eq!(r.length(), Some(4));
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut out = Vec::new();
        while let Poll::Ready(Ok(Some(b))) = r.poll_chunk(&mut cx) {
            out.extend_from_slice(&b);
        }
        assert_eq!(out, b"aYYY");
    }
}
