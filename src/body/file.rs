//! [`FileBody`]: a range of an open file read as a [`Source`], one piece at a
//! time, through the file layer — for the body filters, which need the bytes
//! in memory (nginx's `filter_need_in_memory`: its copy filter reads the file
//! into `output_buffers` buffers instead of sending it with `sendfile`).
//!
//! Each read goes where `aio` says (the loop's non-blocking fast path, the
//! pool, or the loop under `aio off`); at most one read is in flight and
//! one piece of `chunk` bytes is held, so a large file never sits in memory.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;

use super::source::{Source, SourceError};
use crate::io::Pool;
use crate::io::file::{FileError, FileLayer, OpenFile};

/// The smallest piece a [`FileBody`] reads (a zero `output_buffers` size
/// cannot be configured; this guards the arithmetic).
const MIN_CHUNK: usize = 1;

/// Where a [`FileBody`]'s reads run: the owned form of a [`FileLayer`].
#[derive(Clone)]
pub struct Reads {
    /// The pool of `aio threads`, if any.
    pub pool: Option<Arc<Pool>>,
    /// `aio_fast_path`.
    pub fast: bool,
}

/// A read in flight.
type Pending = Pin<Box<dyn Future<Output = Result<Vec<u8>, FileError>>>>;

/// The bytes `start..end` of a file, read `chunk` bytes at a time.
pub struct FileBody {
    /// The file.
    file: OpenFile,
    /// The next offset to read.
    next: u64,
    /// Where the range ends (exclusive).
    end: u64,
    /// How much one read takes.
    chunk: usize,
    /// Where reads run.
    reads: Reads,
    /// The read in flight.
    reading: Option<Pending>,
}

impl FileBody {
    /// A source over `start..end` of `file`, read in pieces of `chunk`.
    pub fn new(file: OpenFile, start: u64, end: u64, chunk: usize, reads: Reads) -> FileBody {
        FileBody {
            file,
            next: start,
            end: end.max(start),
            chunk: chunk.max(MIN_CHUNK),
            reads,
            reading: None,
        }
    }
}

impl Source for FileBody {
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, SourceError>> {
        if self.reading.is_none() {
            if self.next >= self.end {
                return Poll::Ready(Ok(None));
            }
            let want = ((self.end - self.next).min(self.chunk as u64)) as usize;
            let (file, off, reads) = (self.file.clone(), self.next, self.reads.clone());
            self.reading = Some(Box::pin(async move {
                let layer = FileLayer {
                    pool: reads.pool.as_ref(),
                    fast: reads.fast,
                    write: false,
                };
                layer.read_at(&file, want, off).await
            }));
        }
        let Some(reading) = self.reading.as_mut() else {
            return Poll::Ready(Ok(None));
        };
        let result = std::task::ready!(reading.as_mut().poll(cx));
        self.reading = None;
        match result {
            Ok(piece) if piece.is_empty() => Poll::Ready(Err(SourceError::new(format!(
                "file \"{}\" was truncated",
                self.file.path.display()
            )))),
            Ok(piece) => {
                self.next += piece.len() as u64;
                Poll::Ready(Ok(Some(Bytes::from(piece))))
            }
            Err(e) => Poll::Ready(Err(SourceError::new(e.to_string()))),
        }
    }

    fn length(&self) -> Option<u64> {
        Some(self.end - self.next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(s: &mut FileBody) -> Result<Vec<Vec<u8>>, SourceError> {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut out = Vec::new();
        loop {
            match s.poll_chunk(&mut cx) {
                Poll::Ready(Ok(Some(b))) => out.push(b.to_vec()),
                Poll::Ready(Ok(None)) => return Ok(out),
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => panic!("reads on the loop are never pending"),
            }
        }
    }

    fn open(contents: &[u8]) -> (std::path::PathBuf, OpenFile) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "nowait-filebody-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, contents).unwrap();
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let opened = {
            let mut fut = Box::pin(FileLayer::INLINE.open(&path));
            fut.as_mut().poll(&mut cx)
        };
        let Poll::Ready(Ok(crate::io::file::Opened::Regular(f))) = opened else {
            panic!("open on the loop finishes at once");
        };
        (path, f)
    }

    #[test]
    fn reads_the_range_in_pieces() {
        let (path, f) = open(b"0123456789");
        let reads = Reads {
            pool: None,
            fast: false,
        };
        let mut b = FileBody::new(f, 2, 9, 3, reads);
        assert_eq!(b.length(), Some(7));
        let pieces = drain(&mut b).unwrap();
        assert_eq!(
            pieces,
            vec![b"234".to_vec(), b"567".to_vec(), b"8".to_vec()]
        );
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_file_shorter_than_promised_is_an_error() {
        let (path, f) = open(b"abc");
        let reads = Reads {
            pool: None,
            fast: false,
        };
        let mut b = FileBody::new(f, 0, 10, 4, reads);
        let e = drain(&mut b).unwrap_err();
        assert!(e.message.contains("was truncated"), "{e}");
        std::fs::remove_file(path).unwrap();
    }
}
