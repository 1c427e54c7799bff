//! [`FileSource`]: parts of an open file (and bytes between them) read as a
//! streamed body, through the file layer. A body filter that rewrites a
//! body (gzip, charset recoding, later SSI) needs the bytes themselves,
//! not a `sendfile()`: this is how a file body becomes a stream.
//!
//! Each piece is read as the file layer reads: on the loop with
//! `preadv2(RWF_NOWAIT)` when the pages are in memory (`aio threads` with
//! the fast path), else on the pool, else (`aio off`) on the loop,
//! blocking, as nginx reads a file it filters.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;

use super::{Source, SourceError};
use crate::io::Pool;
use crate::io::file::{FileError, FileLayer, OpenFile};

/// How much of a file one piece reads: nginx's `output_buffers 2 32k`.
pub const PIECE: usize = 32 * 1024;

/// One part of a [`FileSource`].
#[derive(Clone, Debug)]
pub enum Segment {
    /// Bytes in memory (e.g. a multipart part's head).
    Bytes(Bytes),
    /// The file's bytes `start..end`.
    File {
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
    },
}

/// A read in flight on the pool.
type Read = Pin<Box<dyn Future<Output = Result<Vec<u8>, FileError>>>>;

/// Where a [`FileSource`] reads: the pool of `aio threads`, and whether it
/// first tries memory on the loop.
#[derive(Clone, Default)]
pub struct Reader {
    /// The pool of `aio threads`; `None` under `aio off`.
    pub pool: Option<Arc<Pool>>,
    /// `aio_fast_path`.
    pub fast: bool,
    /// How much one read takes (`output_buffers`' size); 0: [`PIECE`].
    pub piece: usize,
}

impl Reader {
    fn layer(&self) -> FileLayer<'_> {
        FileLayer {
            pool: self.pool.as_ref(),
            fast: self.fast,
            write: false,
        }
    }
}

/// Segments of one open file as a [`Source`].
pub struct FileSource {
    file: OpenFile,
    segments: VecDeque<Segment>,
    reader: Reader,
    pending: Option<Read>,
    length: u64,
}

impl FileSource {
    /// A source of `segments` of `file`, read where `reader` says.
    pub fn new(file: OpenFile, segments: Vec<Segment>, reader: Reader) -> FileSource {
        let length = segments
            .iter()
            .map(|s| match s {
                Segment::Bytes(b) => b.len() as u64,
                Segment::File { start, end } => end.saturating_sub(*start),
            })
            .sum();
        FileSource {
            file,
            segments: segments.into(),
            reader,
            pending: None,
            length,
        }
    }

    /// The file's bytes `start..end`.
    pub fn range(file: OpenFile, start: u64, end: u64, reader: Reader) -> FileSource {
        FileSource::new(file, vec![Segment::File { start, end }], reader)
    }

    /// Counts `n` bytes of the front file segment as read.
    fn advance(&mut self, n: usize) {
        if let Some(Segment::File { start, end }) = self.segments.front_mut() {
            *start += n as u64;
            if *start >= *end {
                self.segments.pop_front();
            }
        }
    }
}

impl Source for FileSource {
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, SourceError>> {
        loop {
            if let Some(read) = &mut self.pending {
                let result = std::task::ready!(read.as_mut().poll(cx));
                self.pending = None;
                return Poll::Ready(match result {
                    Ok(buf) if buf.is_empty() => Err(SourceError::new(format!(
                        "file \"{}\" was truncated while read",
                        self.file.path.display()
                    ))),
                    Ok(buf) => {
                        self.advance(buf.len());
                        Ok(Some(Bytes::from(buf)))
                    }
                    Err(e) => Err(SourceError::new(e.to_string())),
                });
            }
            let (off, len) = match self.segments.front() {
                None => return Poll::Ready(Ok(None)),
                Some(Segment::Bytes(_)) => {
                    if let Some(Segment::Bytes(b)) = self.segments.pop_front() {
                        if !b.is_empty() {
                            return Poll::Ready(Ok(Some(b)));
                        }
                    }
                    continue;
                }
                Some(&Segment::File { start, end }) => {
                    if start >= end {
                        self.segments.pop_front();
                        continue;
                    }
                    let piece = match self.reader.piece {
                        0 => PIECE,
                        n => n,
                    };
                    (start, (end - start).min(piece as u64) as usize)
                }
            };
            if self.reader.pool.is_some() && self.reader.fast {
                let mut buf = Vec::new();
                let n = self.reader.layer().body_now(&self.file, &mut buf, len, off);
                if n > 0 {
                    self.advance(n);
                    return Poll::Ready(Ok(Some(Bytes::from(buf))));
                }
            }
            let file = self.file.clone();
            let pool = self.reader.pool.clone();
            self.pending = Some(Box::pin(async move {
                let layer = FileLayer {
                    pool: pool.as_ref(),
                    fast: false,
                    write: false,
                };
                layer.read_at(&file, len, off).await
            }));
        }
    }

    fn length(&self) -> Option<u64> {
        Some(self.length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::file::Opened;

    fn open(tag: &str, data: &[u8]) -> (std::path::PathBuf, OpenFile) {
        let p = std::env::temp_dir().join(format!("nowait-io-stream-{}-{tag}", std::process::id()));
        std::fs::write(&p, data).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let Opened::Regular(f) = rt.block_on(FileLayer::INLINE.open(&p)).unwrap() else {
            panic!("a regular file");
        };
        (p, f)
    }

    fn drain(mut s: FileSource) -> Result<Vec<u8>, SourceError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        // What came so far outlives each poll: a read that waits on the
        // pool returns `Pending` between pieces.
        let mut out = Vec::new();
        rt.block_on(std::future::poll_fn(move |cx| {
            loop {
                match std::task::ready!(s.poll_chunk(cx)) {
                    Ok(Some(b)) => out.extend_from_slice(&b),
                    Ok(None) => return Poll::Ready(Ok(std::mem::take(&mut out))),
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
        }))
    }

    #[test]
    fn a_piece_is_at_most_what_the_reader_says() {
        let data = vec![7u8; 10_000];
        let (p, f) = open("pieces", &data);
        let reader = Reader {
            piece: 3000,
            ..Reader::default()
        };
        let mut s = FileSource::range(f, 0, 10_000, reader);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let sizes = rt.block_on(std::future::poll_fn(move |cx| {
            let mut sizes = Vec::new();
            loop {
                match std::task::ready!(s.poll_chunk(cx)) {
                    Ok(Some(b)) => sizes.push(b.len()),
                    Ok(None) => return Poll::Ready(sizes),
                    Err(e) => panic!("{e}"),
                }
            }
        }));
        assert_eq!(sizes, vec![3000, 3000, 3000, 1000]);
        std::fs::remove_file(p).unwrap();
    }

    #[test]
    fn reads_segments_in_order_on_the_loop_and_the_pool() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let (p, f) = open("segments", &data);
        let pool = crate::io::Pool::new("streamtest", 1, 8).unwrap();
        for reader in [
            Reader::default(),
            Reader {
                pool: Some(pool.clone()),
                fast: true,
                piece: 0,
            },
            Reader {
                pool: Some(pool.clone()),
                fast: false,
                piece: 7000,
            },
        ] {
            let s = FileSource::new(
                f.clone(),
                vec![
                    Segment::Bytes(Bytes::from_static(b"<")),
                    Segment::File {
                        start: 10,
                        end: 70_000,
                    },
                    Segment::Bytes(Bytes::from_static(b">")),
                    Segment::File { start: 5, end: 5 },
                ],
                reader,
            );
            assert_eq!(s.length(), Some(1 + 69_990 + 1));
            let got = drain(s).unwrap();
            let mut want = b"<".to_vec();
            want.extend_from_slice(&data[10..70_000]);
            want.push(b'>');
            assert_eq!(got, want);
        }
        pool.shutdown();
        std::fs::remove_file(p).unwrap();
    }

    #[test]
    fn a_file_shorter_than_promised_is_an_error() {
        let (p, f) = open("short", b"abc");
        let err = drain(FileSource::range(f, 0, 10, Reader::default())).unwrap_err();
        assert!(err.message.contains("was truncated"), "{err}");
        std::fs::remove_file(p).unwrap();
    }
}
