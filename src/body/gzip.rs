//! [`Gzipped`]: a body compressed as it streams, in the gzip format nginx's
//! gzip filter sends (zlib's header: no name, no time, OS "Unix"; raw
//! deflate; CRC-32 and length trailer).
//!
//! Deflate is `flate2` with its Rust backend (`miniz_oxide`): no C library
//! to build or load, the same streaming calls nginx makes of zlib
//! (compress what arrived, `Z_SYNC_FLUSH` when the stream pauses,
//! `Z_FINISH` at the end). The compressed bytes differ from zlib's; the
//! stream is standard gzip either way.

use std::task::{Context, Poll};

use bytes::Bytes;
use flate2::{Compress, Compression, FlushCompress, Status};

use super::source::{Source, SourceError};

/// gzip's magic, method (deflate) and flags (none), then a zero time.
const HEADER_START: [u8; 8] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0];
/// The OS byte zlib writes on Unix.
const OS_UNIX: u8 = 3;
/// Output room added at a time.
const OUT_STEP: usize = 16 * 1024;

/// How a [`Gzipped`] body is made (from the location's `gzip_*`).
#[derive(Clone, Copy, Debug)]
pub struct GzipOptions {
    /// `gzip_comp_level` 1..=9.
    pub level: u32,
    /// The size of a piece of output handed on (`gzip_buffers`' size).
    pub piece: usize,
    /// `gzip_no_buffer`: hand on output after every input piece.
    pub no_buffer: bool,
    /// `postpone_gzipping`: no flush while less input than this arrived.
    pub postpone: u64,
    /// Flush what is compressed when the source has nothing more yet
    /// (a stream, e.g. proxied), so that a slow stream reaches the client
    /// as it comes; a file has no pauses worth a flush.
    pub flush_when_idle: bool,
}

/// The `XFL` byte zlib writes for a level: 2 for the slowest, 4 for the
/// fastest, else 0.
fn extra_flags(level: u32) -> u8 {
    match level {
        9 => 2,
        0 | 1 => 4,
        _ => 0,
    }
}

/// A source compressed with gzip.
pub struct Gzipped<'a> {
    inner: Box<dyn Source + 'a>,
    z: Compress,
    crc: crc32fast::Hasher,
    /// Compressed bytes not handed on yet.
    out: Vec<u8>,
    o: GzipOptions,
    /// Input since the last flush.
    fed: bool,
    /// All input so far.
    total_in: u64,
    /// The trailer is in `out`.
    finished: bool,
}

impl<'a> Gzipped<'a> {
    /// `inner` compressed as `o` says.
    pub fn new(inner: Box<dyn Source + 'a>, o: GzipOptions) -> Gzipped<'a> {
        let mut out = Vec::with_capacity(HEADER_START.len() + 2);
        out.extend_from_slice(&HEADER_START);
        out.push(extra_flags(o.level));
        out.push(OS_UNIX);
        Gzipped {
            inner,
            z: Compress::new(Compression::new(o.level.min(9)), false),
            crc: crc32fast::Hasher::new(),
            out,
            o,
            fed: false,
            total_in: 0,
            finished: false,
        }
    }

    /// Compresses `input` with `flush` into `out`.
    fn deflate(&mut self, mut input: &[u8], flush: FlushCompress) -> Result<(), SourceError> {
        loop {
            if self.out.capacity() - self.out.len() < OUT_STEP / 4 {
                self.out.reserve(OUT_STEP);
            }
            let before = self.z.total_in();
            let room = self.out.capacity() - self.out.len();
            let out_before = self.out.len();
            let status = self
                .z
                .compress_vec(input, &mut self.out, flush)
                .map_err(|e| SourceError::new(format!("deflate() failed: {e}")))?;
            input = &input[(self.z.total_in() - before) as usize..];
            let filled = self.out.len() - out_before == room;
            match flush {
                FlushCompress::Finish if status == Status::StreamEnd => return Ok(()),
                FlushCompress::Finish => {}
                _ if input.is_empty() && !filled => return Ok(()),
                _ => {}
            }
        }
    }

    fn take(&mut self) -> Bytes {
        Bytes::from(std::mem::take(&mut self.out))
    }
}

impl Source for Gzipped<'_> {
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, SourceError>> {
        loop {
            if self.finished {
                if self.out.is_empty() {
                    return Poll::Ready(Ok(None));
                }
                return Poll::Ready(Ok(Some(self.take())));
            }
            if self.out.len() >= self.o.piece {
                return Poll::Ready(Ok(Some(self.take())));
            }
            match self.inner.poll_chunk(cx) {
                Poll::Pending => {
                    if self.o.flush_when_idle && self.fed && self.total_in >= self.o.postpone {
                        self.deflate(&[], FlushCompress::Sync)?;
                        self.fed = false;
                        if !self.out.is_empty() {
                            return Poll::Ready(Ok(Some(self.take())));
                        }
                    }
                    return Poll::Pending;
                }
                Poll::Ready(Ok(Some(chunk))) => {
                    self.crc.update(&chunk);
                    self.total_in += chunk.len() as u64;
                    self.deflate(&chunk, FlushCompress::None)?;
                    self.fed = true;
                    if self.o.no_buffer && self.out.len() > HEADER_START.len() + 2 {
                        return Poll::Ready(Ok(Some(self.take())));
                    }
                }
                Poll::Ready(Ok(None)) => {
                    self.deflate(&[], FlushCompress::Finish)?;
                    let crc = std::mem::take(&mut self.crc).finalize();
                    self.out.extend_from_slice(&crc.to_le_bytes());
                    self.out
                        .extend_from_slice(&(self.total_in as u32).to_le_bytes());
                    self.finished = true;
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
    use std::io::Read;

    pub(crate) fn drain(s: &mut dyn Source) -> Vec<Bytes> {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut out = Vec::new();
        loop {
            match s.poll_chunk(&mut cx) {
                Poll::Ready(Ok(Some(b))) => out.push(b),
                Poll::Ready(Ok(None)) => return out,
                Poll::Ready(Err(e)) => panic!("{e}"),
                Poll::Pending => panic!("pieces are always ready"),
            }
        }
    }

    fn gunzip(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(data)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    const OPTS: GzipOptions = GzipOptions {
        level: 1,
        piece: 4096,
        no_buffer: false,
        postpone: 0,
        flush_when_idle: true,
    };

    #[test]
    fn compresses_to_a_standard_gzip_stream() {
        let text: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let pieces = text
            .chunks(10_000)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let mut g = Gzipped::new(Box::new(Pieces::new(pieces, Some(text.len() as u64))), OPTS);
        assert_eq!(g.length(), None);
        let out: Vec<u8> = drain(&mut g).concat();
        assert_eq!(&out[..10], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 3]);
        assert_eq!(gunzip(&out), text);
        assert!(out.len() < text.len() / 3);
    }

    #[test]
    fn an_empty_body_is_a_twenty_byte_stream() {
        for level in [1, 6, 9] {
            let o = GzipOptions { level, ..OPTS };
            let out: Vec<u8> =
                drain(&mut Gzipped::new(Box::new(Pieces::new(vec![], Some(0))), o)).concat();
            assert_eq!(out.len(), 20, "level {level}");
            assert_eq!(gunzip(&out), b"");
        }
    }

    /// A source that says "not yet" between its pieces, as a slow upstream.
    struct Slow(Vec<Bytes>, bool);

    impl Source for Slow {
        fn poll_chunk(&mut self, _: &mut Context<'_>) -> Poll<Result<Option<Bytes>, SourceError>> {
            self.1 = !self.1;
            if self.1 {
                return Poll::Pending;
            }
            Poll::Ready(Ok(if self.0.is_empty() {
                None
            } else {
                Some(self.0.remove(0))
            }))
        }
        fn length(&self) -> Option<u64> {
            None
        }
    }

    #[test]
    fn a_paused_stream_is_flushed_so_the_client_gets_what_came() {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut g = Gzipped::new(Box::new(Slow(vec![Bytes::from("hello ")], false)), OPTS);
        // First poll: the source pauses before anything came: nothing.
        assert!(g.poll_chunk(&mut cx).is_pending());
        // Then "hello " comes and the source pauses again: flushed.
        let Poll::Ready(Ok(Some(first))) = g.poll_chunk(&mut cx) else {
            panic!("a flushed piece");
        };
        let mut d = flate2::Decompress::new(false);
        let mut plain = Vec::with_capacity(64);
        d.decompress_vec(&first[10..], &mut plain, flate2::FlushDecompress::Sync)
            .unwrap();
        assert_eq!(plain, b"hello ");
        // Without flushing on pauses (a file), nothing comes before the end.
        let o = GzipOptions {
            flush_when_idle: false,
            ..OPTS
        };
        let mut g = Gzipped::new(Box::new(Slow(vec![Bytes::from("x")], false)), o);
        assert!(g.poll_chunk(&mut cx).is_pending());
        assert!(g.poll_chunk(&mut cx).is_pending());
    }
}
