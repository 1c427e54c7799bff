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
//! (`backlog.rs`) and a writer task of the worker writes it, in batches of
//! at least `WRITE_GATHER` bytes, the entry's header with the first. What
//! a slow disk may cost in memory is bounded: a fill starts only when its
//! zone's backlog has room for it — otherwise the response is served
//! uncached, as if it were not cacheable, and counted as skipped — and a
//! fill whose disk falls too far behind (`MAX_BACKLOG` for the fill,
//! `ZONE_BACKLOG` for all the zone's fills) is abandoned (counted) while
//! its client goes on streaming. An entry is published only when the whole
//! body was read: an upstream that dies mid-body, a full disk or a crash
//! leave at most a temp file, never an entry that can be served (the
//! loader removes temp files it finds).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::backlog::{Backlog, FILL_COST};
use super::format::{EntryHeader, encode};
use super::key::{CacheKey, Md5};
use super::share::{FinishOnDrop, Share};
use super::zone::{LockToken, Zone};
use crate::body::Tee;
use crate::io::Pool;
use crate::io::file::FileLayer;
use crate::io::temp::TempFile;
use crate::io::temp::TempPath;
use crate::log::{ErrorLog, Level};

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

/// The tee half of a fill: hands the body to the writer task.
pub struct Fill {
    /// The queue to the writer; `None` once the body ended, the fill was
    /// given up, or when it was never admitted.
    backlog: Option<Arc<Backlog>>,
    /// The zone had no room for the fill: nothing is written.
    skipped: bool,
}

impl Fill {
    /// Starts the writer task of `plan` on the current worker and returns
    /// the tee that feeds it. The caller holds the fill lock of the key.
    /// `plan.header` must be made for `plan.head` (`EntryHeader::for_entry`
    /// with its length), so that its `body_start` is where the body goes.
    ///
    /// When the zone's backlog has no room for the fill (its cost and the
    /// response's `Content-Length`), no writer starts: the fill lock is
    /// let go at once, the fill is counted as skipped, and the tee returned
    /// takes nothing — the client's response goes on as an uncached one.
    pub fn start(plan: FillPlan) -> Fill {
        let Some(backlog) = Backlog::admit(&plan.zone, plan.response.content_length) else {
            plan.zone
                .stats
                .fills_skipped
                .fetch_add(1, Ordering::Relaxed);
            plan.zone.fill_failed(&plan.md5, plan.lock);
            if let Some(done) = &plan.done {
                let _ = done.send(true);
            }
            return Fill {
                backlog: None,
                skipped: true,
            };
        };
        tokio::task::spawn_local(write_entry(plan, backlog.clone()));
        Fill {
            backlog: Some(backlog),
            skipped: false,
        }
    }

    /// Whether the zone had no room for this fill (nothing is written).
    pub fn skipped(&self) -> bool {
        self.skipped
    }
}

impl Tee for Fill {
    fn data(&mut self, chunk: &Bytes) {
        if let Some(b) = &self.backlog {
            if b.push(chunk).is_err() {
                // The disk is too far behind (or the writer gave up): the
                // client must not wait for it, nor memory grow for it.
                b.abandon();
                self.backlog = None;
            }
        }
    }

    fn end(&mut self, complete: bool) {
        if let Some(b) = self.backlog.take() {
            b.end(complete);
        }
    }

    fn wants_rest(&self) -> bool {
        self.backlog.as_ref().is_some_and(|b| !b.is_closed())
    }
}

impl Drop for Fill {
    /// A tee dropped before the end of its body gives the fill up.
    fn drop(&mut self) {
        if let Some(b) = self.backlog.take() {
            b.end(false);
        }
    }
}

/// The writer task: header, head, body, then publish or discard.
async fn write_entry(plan: FillPlan, backlog: Arc<Backlog>) {
    let final_path = plan.zone.path_of(&plan.md5);
    let files = plan.files.layer();
    let zone = plan.zone.clone();
    let md5 = plan.md5;
    let mut share = FinishOnDrop(None);
    let outcome = write(&plan, &files, &final_path, &backlog, &mut share).await;
    // What was not written leaves the zone's backlog now, not when the
    // client's response ends.
    backlog.close();
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
    backlog: &Backlog,
    share: &mut FinishOnDrop,
) -> Result<(u64, u64), Failure> {
    let mut temp = match &plan.temp_dir {
        None => files.create_temp_beside(final_path).await,
        Some(dir) => files.create_temp(dir, true).await,
    }
    .map_err(|e| Some((Some(e.to_string()), None)))?;
    let fail =
        |e: crate::io::file::FileError, t: &TempFile| Some((Some(e.to_string()), Some(t.clone())));
    // The entry's header and the upstream head go out with the first body
    // bytes: one write, as nginx writes its `buf_to_file` with the first
    // buffers (`ngx_event_pipe_write_chain_to_temp_file`).
    let mut out = encode(&plan.header, plan.key.text());
    out.extend_from_slice(&plan.head);
    let mut first = true;
    let mut body = 0u64;
    loop {
        let before = out.len();
        let end = backlog.next(&mut out).await;
        if end == Some(false) {
            return Err(Some((None, Some(temp))));
        }
        let n = (out.len() - before) as u64;
        if !out.is_empty() {
            files
                .append_kept(&mut temp, std::mem::take(&mut out))
                .await
                .map_err(|e| fail(e, &temp))?;
        }
        body += n;
        backlog.written(if first { n + FILL_COST } else { n });
        if first {
            first = false;
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
        }
        if let Some(s) = &share.0 {
            s.advance(body);
        }
        if end == Some(true) {
            break;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::backlog::{MAX_BACKLOG, ZONE_BACKLOG};
    use std::time::{Duration, Instant};

    fn zone(dir: &std::path::Path) -> Arc<Zone> {
        let z = Arc::new(Zone::new(crate::cache::zone::test_path(
            dir.to_path_buf(),
            1 << 20,
        )));
        z.loaded();
        z
    }

    /// A plan for `key` holding the key's fill lock; the body's length as
    /// the response announces it.
    fn plan(zone: &Arc<Zone>, key: &str, length: Option<u64>) -> FillPlan {
        let key = CacheKey::new(key.as_bytes());
        let md5 = *key.md5();
        let head = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
        let header = EntryHeader::for_entry(&key, head.len()).expect("a short key");
        let now = Instant::now();
        let _ = zone.lookup(&md5, now, &mut Vec::new());
        let lock = zone.lock_fill(&md5, now, Duration::from_secs(5));
        assert!(lock.is_some(), "the key's fill lock");
        FillPlan {
            zone: zone.clone(),
            key,
            md5,
            header,
            head,
            response: crate::upstream::head::ResponseHead {
                version: (1, 1),
                status: 200,
                status_line: b"200 OK".to_vec(),
                headers: Default::default(),
                content_length: length,
                chunked: false,
                connection_close: false,
                upgrade: false,
            },
            lock,
            temp_dir: None,
            files: Files {
                pool: None,
                fast: false,
                write: false,
            },
            log: ErrorLog::new(),
            done: None,
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("nowait-fill-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("a scratch directory");
        d
    }

    fn gauge(z: &Zone) -> u64 {
        z.stats.fill_backlog.load(Ordering::Relaxed)
    }

    /// Runs `f` on a worker-like loop (fills spawn their writer locally),
    /// then lets the writers run until `done` holds, bounded.
    fn on_loop(f: impl FnOnce(), done: impl Fn() -> bool) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime");
        tokio::task::LocalSet::new().block_on(&rt, async {
            f();
            for _ in 0..500 {
                if done() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
    }

    fn files_in(dir: &std::path::Path) -> usize {
        let mut n = 0;
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                if e.path().is_dir() {
                    stack.push(e.path());
                } else {
                    n += 1;
                }
            }
        }
        n
    }

    #[test]
    fn no_fill_starts_when_the_zone_backlog_has_no_room() {
        let z = zone(std::path::Path::new("/nonexistent"));
        let others = ZONE_BACKLOG - FILL_COST - 1000;
        z.stats.fill_backlog.store(others, Ordering::Relaxed);
        let mut p = plan(&z, "/k", Some(2000));
        let md5 = p.md5;
        let (done, mut told) = tokio::sync::watch::channel(false);
        p.done = Some(done);
        // No runtime: a skipped fill spawns nothing.
        let mut fill = Fill::start(p);
        assert!(fill.skipped());
        fill.data(&Bytes::from_static(b"body"));
        assert!(!fill.wants_rest(), "nothing to read the rest for");
        fill.end(true);
        assert_eq!(z.stats.fills_skipped.load(Ordering::Relaxed), 1);
        assert_eq!(gauge(&z), others, "a skipped fill counts nothing");
        assert!(*told.borrow_and_update(), "the connection need not wait");
        assert!(
            z.lock_fill(&md5, Instant::now(), Duration::from_secs(5))
                .is_some(),
            "the key's fill lock was let go"
        );
    }

    #[test]
    fn a_fill_past_the_zone_backlog_is_abandoned_and_gives_its_bytes_back() {
        let dir = scratch("abandon");
        let z = zone(&dir);
        // Others hold all but room for this fill's cost and one chunk.
        let others = ZONE_BACKLOG - FILL_COST - 100;
        z.stats.fill_backlog.store(others, Ordering::Relaxed);
        let p = plan(&z, "/big", None);
        let md5 = p.md5;
        on_loop(
            || {
                let mut fill = Fill::start(p);
                fill.data(&Bytes::from(vec![b'a'; 100]));
                assert!(fill.wants_rest(), "the first chunk fits");
                assert_eq!(gauge(&z), ZONE_BACKLOG);
                fill.data(&Bytes::from(vec![b'b'; 100]));
                assert!(!fill.wants_rest(), "the second does not: given up");
                assert_eq!(gauge(&z), others + FILL_COST, "queued bytes left");
                fill.data(&Bytes::from(vec![b'c'; 1]));
                fill.end(true);
            },
            || z.stats.fills_abandoned.load(Ordering::Relaxed) == 1,
        );
        assert_eq!(z.stats.fills_abandoned.load(Ordering::Relaxed), 1);
        assert_eq!(z.stats.fills.load(Ordering::Relaxed), 0);
        assert_eq!(gauge(&z), others, "every byte the fill counted is back");
        assert_eq!(files_in(&dir), 0, "no entry, the temp file removed");
        assert!(
            z.lock_fill(&md5, Instant::now(), Duration::from_secs(5))
                .is_some(),
            "the key's fill lock was let go"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_fill_dropped_mid_body_gives_its_bytes_back() {
        let dir = scratch("dropped");
        let z = zone(&dir);
        let p = plan(&z, "/gone", Some(1 << 20));
        on_loop(
            || {
                let mut fill = Fill::start(p);
                fill.data(&Bytes::from(vec![b'a'; 1000]));
                // The body source went away without an end.
                drop(fill);
            },
            || z.stats.fills_abandoned.load(Ordering::Relaxed) == 1,
        );
        assert_eq!(z.stats.fills_abandoned.load(Ordering::Relaxed), 1);
        assert_eq!(gauge(&z), 0);
        assert_eq!(files_in(&dir), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_complete_fill_publishes_and_the_backlog_returns_to_zero() {
        let dir = scratch("complete");
        let z = zone(&dir);
        let p = plan(&z, "/small", None);
        let md5 = p.md5;
        let body_start = usize::from(p.header.body_start);
        on_loop(
            || {
                let mut fill = Fill::start(p);
                for _ in 0..40 {
                    fill.data(&Bytes::from(vec![b'x'; 8 * 1024]));
                }
                assert!(gauge(&z) >= FILL_COST + 40 * 8 * 1024);
                assert!(gauge(&z) <= MAX_BACKLOG as u64);
                fill.end(true);
            },
            || z.stats.fills.load(Ordering::Relaxed) == 1,
        );
        assert_eq!(z.stats.fills.load(Ordering::Relaxed), 1);
        assert_eq!(z.stats.bytes_filled.load(Ordering::Relaxed), 40 * 8 * 1024);
        assert_eq!(gauge(&z), 0);
        let file = std::fs::read(z.path_of(&md5)).expect("the entry is published");
        assert_eq!(file.len(), body_start + 40 * 8 * 1024);
        assert!(file[body_start..].iter().all(|&b| b == b'x'));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
