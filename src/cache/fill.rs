//! Filling the cache: the response body, teed from the stream the client
//! gets, written into a temp file and published by rename when complete.
//!
//! The temp file is beside the entry (`use_temp_path=off`: the entry's name
//! plus a ten-digit number, the same disk) or in `proxy_temp_path`. Every
//! file operation — the directories, the create, each write, the rename or
//! the unlink — goes through the file layer of the request, that is the
//! pool `aio threads=` names for it (the disk's pool): a slow disk slows
//! its own fills, never an event loop.
//!
//! The client never waits for the disk: the tee queues what it is given
//! and a writer task of the worker writes it. When the disk falls more than
//! [`MAX_BACKLOG`] behind, the fill is abandoned (counted) and the client
//! goes on streaming. An entry is published only when the whole body was
//! read: an upstream that dies mid-body, a full disk or a crash leave at
//! most a temp file, never an entry that can be served (the loader removes
//! temp files it finds).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use tokio::sync::mpsc;

use super::format::{EntryHeader, encode};
use super::key::{CacheKey, Md5};
use super::share::{FinishOnDrop, Share};
use super::zone::{LockToken, Zone};
use crate::body::Tee;
use crate::config::model::TempPath;
use crate::io::Pool;
use crate::io::file::FileLayer;
use crate::io::temp::TempFile;
use crate::log::{ErrorLog, Level};

/// How far the disk may fall behind the client before a fill is given up.
pub const MAX_BACKLOG: usize = 8 * 1024 * 1024;

/// Writes are gathered to at least this much before they go to the pool.
const WRITE_GATHER: usize = 64 * 1024;

/// Where the file layer runs a fill's operations (the request's settings,
/// owned so that the writer can outlive the request's borrows).
#[derive(Clone)]
pub struct Files {
    /// The pool `aio threads` names, if any.
    pub pool: Option<Arc<Pool>>,
    /// `aio_fast_path`.
    pub fast: bool,
    /// `aio_write`.
    pub write: bool,
}

impl Files {
    /// The file layer these settings make.
    pub fn layer(&self) -> FileLayer<'_> {
        FileLayer {
            pool: self.pool.as_ref(),
            fast: self.fast,
            write: self.write,
        }
    }
}

/// Everything a fill needs to write its entry.
pub struct FillPlan {
    /// The zone the entry belongs to.
    pub zone: Arc<Zone>,
    /// The key (its text goes on the `KEY:` line).
    pub key: CacheKey,
    /// The file's MD5 (the key's, or the variant's).
    pub md5: Md5,
    /// The entry's header, validity decided.
    pub header: EntryHeader,
    /// The upstream's status line and header fields as received.
    pub head: Vec<u8>,
    /// The same head, parsed (for requests that stream the fill).
    pub response: crate::upstream::head::ResponseHead,
    /// The fill lock this fill holds (`proxy_cache_lock`), let go when it
    /// ends; with it, the temp file is shared with the lock's waiters.
    pub lock: Option<LockToken>,
    /// `proxy_temp_path` when `use_temp_path=on`; `None`: beside the entry.
    pub temp_dir: Option<TempPath>,
    /// Where file operations run.
    pub files: Files,
    /// For the lines a failing fill logs.
    pub log: ErrorLog,
    /// Told `true` when the fill has ended, published or not.
    pub done: Option<tokio::sync::watch::Sender<bool>>,
}

enum Msg {
    Data(Bytes),
    End(bool),
}

/// The tee half of a fill: hands the body to the writer task.
pub struct Fill {
    tx: Option<mpsc::UnboundedSender<Msg>>,
    backlog: Arc<AtomicUsize>,
    abandoned: bool,
}

impl Fill {
    /// Starts the writer task of `plan` on the current worker and returns
    /// the tee that feeds it. The caller holds the fill lock of the key.
    /// `plan.header` must be made for `plan.head` (`EntryHeader::for_entry`
    /// with its length), so that its `body_start` is where the body goes.
    pub fn start(plan: FillPlan) -> Fill {
        let (tx, rx) = mpsc::unbounded_channel();
        let backlog = Arc::new(AtomicUsize::new(0));
        let counter = backlog.clone();
        tokio::task::spawn_local(write_entry(plan, rx, counter));
        Fill {
            tx: Some(tx),
            backlog,
            abandoned: false,
        }
    }

    fn abandon(&mut self) {
        if !self.abandoned {
            self.abandoned = true;
            if let Some(tx) = self.tx.take() {
                let _ = tx.send(Msg::End(false));
            }
        }
    }
}

impl Tee for Fill {
    fn data(&mut self, chunk: &Bytes) {
        if self.abandoned {
            return;
        }
        if self.backlog.load(Ordering::Relaxed) + chunk.len() > MAX_BACKLOG {
            // The disk is too far behind: the client must not wait for it.
            self.abandon();
            return;
        }
        self.backlog.fetch_add(chunk.len(), Ordering::Relaxed);
        if let Some(tx) = &self.tx {
            if tx.send(Msg::Data(chunk.clone())).is_err() {
                self.abandon();
            }
        }
    }

    fn end(&mut self, complete: bool) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Msg::End(complete && !self.abandoned));
        }
    }

    fn wants_rest(&self) -> bool {
        !self.abandoned && self.tx.is_some()
    }
}

/// The writer task: header, head, body, then publish or discard.
async fn write_entry(
    plan: FillPlan,
    mut rx: mpsc::UnboundedReceiver<Msg>,
    backlog: Arc<AtomicUsize>,
) {
    let final_path = plan.zone.path_of(&plan.md5);
    let files = plan.files.layer();
    let zone = plan.zone.clone();
    let md5 = plan.md5;
    let mut share = FinishOnDrop(None);
    let outcome = write(&plan, &files, &final_path, &mut rx, &backlog, &mut share).await;
    match outcome {
        Ok((fs_size, body)) => {
            zone.stats.bytes_filled.fetch_add(body, Ordering::Relaxed);
            zone.stats.fills.fetch_add(1, Ordering::Relaxed);
            if let Some(s) = share.0.take() {
                s.finish(true);
            }
            let evicted = zone.filled(
                &md5,
                plan.header.valid_sec,
                plan.header.body_start,
                fs_size,
                plan.lock,
            );
            for p in evicted {
                let _ = files.remove_file(&p).await;
            }
        }
        Err(failure) => {
            if let Some((msg, temp)) = failure {
                if let Some(msg) = msg {
                    plan.log
                        .log(Level::Crit, None, format_args!("{msg} while filling cache"));
                }
                if let Some(t) = temp {
                    let _ = files.remove_temp(&t).await;
                }
            }
            zone.stats.fills_abandoned.fetch_add(1, Ordering::Relaxed);
            drop(share);
            zone.fill_failed(&md5, plan.lock);
        }
    }
    if let Some(done) = &plan.done {
        let _ = done.send(true);
    }
}

/// A failed fill: what to log (nothing for an abandoned one) and the temp
/// file to remove.
type Failure = Option<(Option<String>, Option<TempFile>)>;

async fn write(
    plan: &FillPlan,
    files: &FileLayer<'_>,
    final_path: &std::path::Path,
    rx: &mut mpsc::UnboundedReceiver<Msg>,
    backlog: &AtomicUsize,
    share: &mut FinishOnDrop,
) -> Result<(u64, u64), Failure> {
    let mut temp = match &plan.temp_dir {
        None => files.create_temp_beside(final_path).await,
        Some(dir) => files.create_temp(dir, true).await,
    }
    .map_err(|e| Some((Some(e.to_string()), None)))?;
    let mut start = encode(&plan.header, plan.key.text());
    start.extend_from_slice(&plan.head);
    let fail =
        |e: crate::io::file::FileError, t: &TempFile| Some((Some(e.to_string()), Some(t.clone())));
    files
        .append_temp(&mut temp, Arc::from(start))
        .await
        .map_err(|e| fail(e, &temp))?;
    if let Some(token) = plan.lock {
        // The lock's waiters may read the body from here on.
        let s = Arc::new(Share::new(
            temp.clone(),
            plan.header.clone(),
            plan.response.clone(),
        ));
        plan.zone.set_share(&plan.md5, token, s.clone());
        share.0 = Some(s);
    }
    let mut body = 0u64;
    let mut gathered: Vec<u8> = Vec::new();
    loop {
        let msg = rx.recv().await;
        let mut end = None;
        match msg {
            Some(Msg::Data(b)) => {
                backlog.fetch_sub(b.len(), Ordering::Relaxed);
                gathered.extend_from_slice(&b);
                // Take what else is queued, up to one gathered write.
                while gathered.len() < WRITE_GATHER {
                    match rx.try_recv() {
                        Ok(Msg::Data(b)) => {
                            backlog.fetch_sub(b.len(), Ordering::Relaxed);
                            gathered.extend_from_slice(&b);
                        }
                        Ok(Msg::End(c)) => {
                            end = Some(c);
                            break;
                        }
                        Err(_) => break,
                    }
                }
            }
            Some(Msg::End(c)) => end = Some(c),
            // The tee was dropped without an end: incomplete.
            None => end = Some(false),
        }
        if !gathered.is_empty() && end != Some(false) {
            body += gathered.len() as u64;
            files
                .append_temp(&mut temp, Arc::from(std::mem::take(&mut gathered)))
                .await
                .map_err(|e| fail(e, &temp))?;
            if let Some(s) = &share.0 {
                s.advance(body);
            }
        }
        match end {
            None => continue,
            Some(false) => return Err(Some((None, Some(temp)))),
            Some(true) => break,
        }
    }
    let fs_size = files
        .publish_temp(&temp, final_path)
        .await
        .map_err(|e| fail(e, &temp))?;
    Ok((fs_size, body))
}

/// Where a fill writes its temp file: `None` beside the entry.
pub fn temp_dir(use_temp_path: bool, proxy_temp_path: &TempPath) -> Option<TempPath> {
    use_temp_path.then(|| proxy_temp_path.clone())
}

/// The path an entry of `md5` is published under (for logs and tests).
pub fn entry_path(zone: &Zone, md5: &Md5) -> PathBuf {
    zone.path_of(md5)
}
