//! `proxy_store`: a `200` response kept as a plain file (nginx's
//! `ngx_http_upstream_store`). The body is teed, as a cache fill's is, into
//! a temp file in `proxy_temp_path`; when the whole body came (its length
//! as the upstream announced it, if it did), the file gets
//! `proxy_store_access`'s mode and the upstream's `Last-Modified` as its
//! time, and is renamed to its name (the URI under `root`/`alias`, or the
//! `proxy_store` string), its directories made on the way. A body that
//! ends early leaves nothing: the temp file is removed.
//!
//! Every operation — create, write, chmod, rename, unlink — goes through
//! the request's file layer (the pool `aio threads` names). The client
//! never waits for the disk: a store the disk cannot keep up with is
//! given up.

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;

use super::backlog::MAX_BACKLOG;
use super::fill::Files;
use crate::body::Tee;
use crate::io::temp::TempFile;
use crate::io::temp::TempPath;
use crate::log::{ErrorLog, Level};

/// Everything a store needs.
pub struct StorePlan {
    /// The file's final name.
    pub path: PathBuf,
    /// `proxy_temp_path`.
    pub temp_dir: TempPath,
    /// `proxy_store_access` (mode bits of the file and of directories
    /// made for it).
    pub access: u32,
    /// The upstream's `Last-Modified`, Unix seconds, to set as the file's
    /// time.
    pub mtime: Option<i64>,
    /// The upstream's `Content-Length`: a body of another length is not
    /// kept.
    pub length: Option<u64>,
    /// Where file operations run.
    pub files: Files,
    /// For the lines a failing store logs.
    pub log: ErrorLog,
    /// Told `true` when the store has ended, kept or not.
    pub done: Option<tokio::sync::watch::Sender<bool>>,
}

enum Msg {
    Data(Bytes),
    End(bool),
}

/// The tee half of a store.
pub struct Store {
    tx: Option<mpsc::UnboundedSender<Msg>>,
    queued: usize,
    written: Arc<std::sync::atomic::AtomicUsize>,
}

impl Store {
    /// Starts the writer task of `plan` on the current worker.
    pub fn start(plan: StorePlan) -> Store {
        let (tx, rx) = mpsc::unbounded_channel();
        let written = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        tokio::task::spawn_local(write(plan, rx, written.clone()));
        Store {
            tx: Some(tx),
            queued: 0,
            written,
        }
    }
}

impl Tee for Store {
    fn data(&mut self, chunk: &Bytes) {
        let done = self.written.load(std::sync::atomic::Ordering::Relaxed);
        if self.queued.saturating_sub(done) + chunk.len() > MAX_BACKLOG {
            // The disk is too far behind: give the store up.
            if let Some(tx) = self.tx.take() {
                let _ = tx.send(Msg::End(false));
            }
            return;
        }
        self.queued += chunk.len();
        if let Some(tx) = &self.tx {
            let _ = tx.send(Msg::Data(chunk.clone()));
        }
    }

    fn end(&mut self, complete: bool) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Msg::End(complete));
        }
    }

    fn wants_rest(&self) -> bool {
        self.tx.is_some()
    }
}

async fn write(
    plan: StorePlan,
    mut rx: mpsc::UnboundedReceiver<Msg>,
    written: Arc<std::sync::atomic::AtomicUsize>,
) {
    let files = plan.files.layer();
    let mut temp: Option<TempFile> = None;
    let outcome: Result<bool, String> = async {
        let mut t = files
            .create_temp(&plan.temp_dir, true)
            .await
            .map_err(|e| e.to_string())?;
        temp = Some(t.clone());
        loop {
            match rx.recv().await {
                Some(Msg::Data(b)) => {
                    let n = b.len();
                    files
                        .append_kept(&mut t, Arc::from(&b[..]))
                        .await
                        .map_err(|e| e.to_string())?;
                    written.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
                }
                Some(Msg::End(true)) => break,
                Some(Msg::End(false)) | None => return Ok(false),
            }
        }
        if plan.length.is_some_and(|l| l != t.len) {
            return Ok(false);
        }
        files
            .publish_store(&t, &plan.path, plan.access, plan.mtime)
            .await
            .map_err(|e| e.to_string())?;
        Ok(true)
    }
    .await;
    let done = plan.done.clone();
    match outcome {
        Ok(true) => {}
        Ok(false) => {
            if let Some(t) = &temp {
                let _ = files.remove_temp(t).await;
            }
        }
        Err(msg) => {
            plan.log.log(
                Level::Crit,
                None,
                format_args!("{msg} while storing response"),
            );
            if let Some(t) = &temp {
                let _ = files.remove_temp(t).await;
            }
        }
    }
    if let Some(done) = done {
        let _ = done.send(true);
    }
}
