//! Read-while-write: a fill's temp file shared with the requests waiting on
//! `proxy_cache_lock`, so that they stream the body as it is written
//! instead of waiting for the whole entry (nginx's waiters wait for the
//! rename, polling the lock every 500 ms).
//!
//! The fill that holds the key's lock makes a [`Share`] once its temp file
//! holds the entry's header and the upstream's head, and publishes it in
//! the zone's node. A waiter takes a [`ShareReader`]: a body source that
//! reads the temp file's descriptor (which outlives the rename, and the
//! unlink of a failed fill) through the file layer — the pool under `aio
//! threads`, as any file read — up to what the fill reports written, and
//! then waits on a `watch` channel for more: a notification, never a poll.
//!
//! A fill that ends incomplete (upstream cut, disk full, abandoned) ends
//! its readers with an error, so their clients get a cut response, never a
//! complete-looking one. A fill whose writer vanishes without saying how it
//! ended counts as cut ([`Progress`] is sent on drop).
//!
//! Owns: the progress of one fill and the readers' sources. Must not: take
//! or release the fill lock (the zone and the fill do), or decide what is
//! cacheable.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::sync::watch;

use super::fill::Files;
use super::format::EntryHeader;
use crate::body::{Source, SourceError};
use crate::io::file::FileError;
use crate::io::temp::TempFile;
use crate::upstream::head::ResponseHead;

/// How much a reader asks of the file layer at a time.
pub const READ_CHUNK: usize = 64 * 1024;

/// How a fill stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Still writing.
    Open,
    /// Published: every body byte is written.
    Complete,
    /// Ended without an entry: readers must end cut.
    Cut,
}

/// What readers see of a fill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Body bytes in the file so far.
    pub written: u64,
    /// Whether and how it ended.
    pub end: End,
}

/// One fill's temp file, readable while it is written.
pub struct Share {
    /// The temp file (its descriptor; the name may have changed).
    temp: TempFile,
    /// The entry's header (validators, `body_start`).
    pub header: EntryHeader,
    /// The stored upstream head.
    pub head: ResponseHead,
    /// The progress, sent by the fill.
    progress: watch::Sender<Progress>,
}

impl std::fmt::Debug for Share {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Share")
            .field("temp", &self.temp.path)
            .field("progress", &*self.progress.borrow())
            .finish_non_exhaustive()
    }
}

impl Share {
    /// A share of `temp`, whose body starts at `header.body_start`.
    pub fn new(temp: TempFile, header: EntryHeader, head: ResponseHead) -> Share {
        let (progress, _) = watch::channel(Progress {
            written: 0,
            end: End::Open,
        });
        Share {
            temp,
            header,
            head,
            progress,
        }
    }

    /// The fill has `written` body bytes in the file.
    pub fn advance(&self, written: u64) {
        self.progress.send_modify(|p| p.written = written);
    }

    /// The fill ended: published (`true`) or not.
    pub fn finish(&self, complete: bool) {
        self.progress.send_modify(|p| {
            if p.end == End::Open {
                p.end = if complete { End::Complete } else { End::Cut };
            }
        });
    }

    /// The fill's progress now.
    pub fn progress(&self) -> Progress {
        *self.progress.borrow()
    }

    /// A body source over the whole body, read where `files` says.
    pub fn reader(self: &std::sync::Arc<Self>, files: Files) -> ShareReader {
        ShareReader {
            share: self.clone(),
            rx: self.progress.subscribe(),
            files,
            pos: 0,
            read: None,
            wait: None,
        }
    }
}

impl Drop for Share {
    /// A share dropped unfinished (its writer is gone) is cut.
    fn drop(&mut self) {
        self.finish(false);
    }
}

/// Ends a share when the fill's writer goes away, however it goes.
pub struct FinishOnDrop(pub Option<std::sync::Arc<Share>>);

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        if let Some(s) = &self.0 {
            s.finish(false);
        }
    }
}

type ReadFuture = Pin<Box<dyn Future<Output = Result<Vec<u8>, FileError>>>>;
type WaitFuture = Pin<Box<dyn Future<Output = ()>>>;

/// A waiter's body: the fill's bytes as they reach the file.
pub struct ShareReader {
    share: std::sync::Arc<Share>,
    rx: watch::Receiver<Progress>,
    files: Files,
    /// Body bytes given out so far.
    pos: u64,
    /// A read in flight.
    read: Option<ReadFuture>,
    /// A wait for progress in flight.
    wait: Option<WaitFuture>,
}

impl ShareReader {
    fn start_read(&mut self, len: usize) {
        let files = self.files.clone();
        let temp = self.share.temp.clone();
        let off = u64::from(self.share.header.body_start) + self.pos;
        self.read = Some(Box::pin(async move {
            files.layer().read_temp(&temp, off, len).await
        }));
    }
}

impl Source for ShareReader {
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, SourceError>> {
        loop {
            if let Some(read) = &mut self.read {
                let got = std::task::ready!(read.as_mut().poll(cx));
                self.read = None;
                match got {
                    Ok(buf) if !buf.is_empty() => {
                        self.pos += buf.len() as u64;
                        return Poll::Ready(Ok(Some(Bytes::from(buf))));
                    }
                    // The fill said the bytes were written: a short file
                    // is a broken one.
                    Ok(_) => {
                        return Poll::Ready(Err(SourceError::new(
                            "cache file being filled is shorter than written",
                        )));
                    }
                    Err(e) => return Poll::Ready(Err(SourceError::new(e.to_string()))),
                }
            }
            if let Some(wait) = &mut self.wait {
                std::task::ready!(wait.as_mut().poll(cx));
                self.wait = None;
            }
            let p = *self.rx.borrow_and_update();
            if self.pos < p.written {
                let len = (p.written - self.pos).min(READ_CHUNK as u64) as usize;
                self.start_read(len);
                continue;
            }
            match p.end {
                End::Complete => return Poll::Ready(Ok(None)),
                End::Cut => {
                    return Poll::Ready(Err(SourceError::new(
                        "cache fill ended before the body was complete",
                    )));
                }
                End::Open => {
                    // Wait for the next change; the clone has seen what
                    // this receiver has, so no change is missed.
                    let mut rx = self.rx.clone();
                    self.wait = Some(Box::pin(async move {
                        let _ = rx.changed().await;
                    }));
                }
            }
        }
    }

    fn length(&self) -> Option<u64> {
        self.share.head.content_length
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn share(dir: &std::path::Path) -> (Arc<Share>, TempFile) {
        let path = dir.join("entry.0000000001");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let temp = TempFile {
            file: Arc::new(crate::io::closer::CloseOffLoop::new(file)),
            path: Arc::from(path.as_path()),
            named: true,
            len: 0,
        };
        let key = super::super::key::CacheKey::new(b"k");
        let header = EntryHeader::for_entry(&key, 0).unwrap();
        let head = ResponseHead {
            version: (1, 1),
            status: 200,
            status_line: b"200 OK".to_vec(),
            headers: Default::default(),
            content_length: None,
            chunked: false,
            connection_close: false,
            upgrade: false,
        };
        (Arc::new(Share::new(temp.clone(), header, head)), temp)
    }

    fn poll(r: &mut ShareReader) -> Poll<Result<Option<Bytes>, SourceError>> {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        r.poll_chunk(&mut cx)
    }

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("nowait-share-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_reader_gets_what_is_written_then_waits_then_ends() {
        use std::os::unix::fs::FileExt;
        let d = dir("read");
        let (s, temp) = share(&d);
        let start = u64::from(s.header.body_start);
        let mut r = s.reader(Files {
            pool: None,
            fast: false,
            write: false,
        });
        assert!(poll(&mut r).is_pending(), "nothing written yet");
        temp.file.write_all_at(b"hello", start).unwrap();
        s.advance(5);
        assert_eq!(poll(&mut r), Poll::Ready(Ok(Some(Bytes::from("hello")))));
        assert!(poll(&mut r).is_pending(), "waits for more");
        temp.file.write_all_at(b" world", start + 5).unwrap();
        s.advance(11);
        s.finish(true);
        assert_eq!(poll(&mut r), Poll::Ready(Ok(Some(Bytes::from(" world")))));
        assert_eq!(poll(&mut r), Poll::Ready(Ok(None)));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_cut_fill_ends_its_readers_with_an_error() {
        let d = dir("cut");
        let (s, _temp) = share(&d);
        let mut r = s.reader(Files {
            pool: None,
            fast: false,
            write: false,
        });
        assert!(poll(&mut r).is_pending());
        {
            let _guard = FinishOnDrop(Some(s.clone()));
        }
        assert!(matches!(poll(&mut r), Poll::Ready(Err(_))));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
