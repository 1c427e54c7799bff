//! [`Gunzipped`]: a gzip body decompressed as it streams, for clients that
//! do not accept gzip (nginx's gunzip filter). Streams of several gzip
//! members are decompressed whole, as nginx does.

use std::io::Write;
use std::task::{Context, Poll};

use bytes::Bytes;
use flate2::write::MultiGzDecoder;

use super::source::{Source, SourceError};

/// Compressed bytes fed to the decoder at a time: what one feed can
/// expand to is bounded (deflate's ratio is at most about 1032:1).
const FEED: usize = 512;

/// A gzip source, decompressed.
pub struct Gunzipped<'a> {
    inner: Box<dyn Source + 'a>,
    decoder: MultiGzDecoder<Vec<u8>>,
    /// Compressed bytes not fed yet.
    input: Bytes,
    /// The size of a piece of output handed on (`gunzip_buffers`' size).
    piece: usize,
    /// The source ended and the decoder finished.
    done: bool,
}

impl<'a> Gunzipped<'a> {
    /// `inner` decompressed, handed on in pieces of about `piece` bytes.
    pub fn new(inner: Box<dyn Source + 'a>, piece: usize) -> Gunzipped<'a> {
        Gunzipped {
            inner,
            decoder: MultiGzDecoder::new(Vec::new()),
            input: Bytes::new(),
            piece: piece.max(1),
            done: false,
        }
    }

    fn take(&mut self) -> Option<Bytes> {
        let out = self.decoder.get_mut();
        (!out.is_empty()).then(|| Bytes::from(std::mem::take(out)))
    }
}

fn failed(e: std::io::Error) -> SourceError {
    SourceError::new(format!("inflate() failed: {e}"))
}

impl Source for Gunzipped<'_> {
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, SourceError>> {
        loop {
            while !self.input.is_empty() && self.decoder.get_ref().len() < self.piece {
                let n = self.input.len().min(FEED);
                let feed = self.input.split_to(n);
                self.decoder.write_all(&feed).map_err(failed)?;
            }
            if self.decoder.get_ref().len() >= self.piece || (self.done && self.input.is_empty()) {
                return Poll::Ready(Ok(self.take()));
            }
            match self.inner.poll_chunk(cx) {
                Poll::Pending => {
                    return match self.take() {
                        Some(b) => Poll::Ready(Ok(Some(b))),
                        None => Poll::Pending,
                    };
                }
                Poll::Ready(Ok(Some(chunk))) => self.input = chunk,
                Poll::Ready(Ok(None)) => {
                    self.decoder.try_finish().map_err(|e| {
                        SourceError::new(format!("inflate() failed on response end: {e}"))
                    })?;
                    self.done = true;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            }
        }
    }

    fn length(&self) -> Option<u64> {
        None
    }

    fn flushes(&self) -> bool {
        // An unbuffered upstream's pieces go on as they come.
        self.inner.flushes()
    }

    fn received(&self) -> u64 {
        self.inner.received()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::source::Pieces;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn drain(s: &mut dyn Source) -> Result<Vec<u8>, SourceError> {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut out = Vec::new();
        loop {
            match s.poll_chunk(&mut cx) {
                Poll::Ready(Ok(Some(b))) => out.extend_from_slice(&b),
                Poll::Ready(Ok(None)) => return Ok(out),
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => unreachable!(),
            }
        }
    }

    #[test]
    fn decompresses_members_split_anywhere() {
        let text: Vec<u8> = (0..5000u32)
            .flat_map(|i| format!("X{i:03}XXXXXX").into_bytes())
            .collect();
        let mut z = gzip(&text);
        z.extend(gzip(b"and more"));
        let pieces = z
            .chunks(777)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let mut g = Gunzipped::new(Box::new(Pieces::new(pieces, None)), 4096);
        let mut want = text.clone();
        want.extend_from_slice(b"and more");
        assert_eq!(drain(&mut g).unwrap(), want);
        let mut empty = Gunzipped::new(
            Box::new(Pieces::new(vec![Ok(Bytes::from(gzip(b"")))], None)),
            4096,
        );
        assert_eq!(drain(&mut empty).unwrap(), b"");
    }

    #[test]
    fn broken_or_cut_streams_fail() {
        let z = gzip(b"some text that is long enough to matter");
        let cut = Bytes::copy_from_slice(&z[..z.len() - 6]);
        let mut g = Gunzipped::new(Box::new(Pieces::new(vec![Ok(cut)], None)), 4096);
        assert!(drain(&mut g).is_err());
        let mut g = Gunzipped::new(
            Box::new(Pieces::new(
                vec![Ok(Bytes::from_static(b"not gzip at all"))],
                None,
            )),
            4096,
        );
        assert!(drain(&mut g).is_err());
    }
}
