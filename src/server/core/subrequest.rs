//! Subrequests: a request runs the phases for another URI on behalf of its
//! client, as nginx's `ngx_http_subrequest`, and takes its output — streamed
//! in order into its own (nginx's postpone filter) or kept in memory
//! (`r->subrequest_in_memory`). SSI's `include` uses them; `auth_request`
//! and `mirror` can.
//!
//! A subrequest is a [`Req`] made from its parent ([`Req::subrequest`]:
//! same connection, server, head, request body and variables; its own URI,
//! arguments, captures and location; method `GET`) and walked through the
//! same phases ([`Walk`]): a static file is read through the file layer, a
//! proxied location streams from its upstream, an error gives its error
//! page, logged as nginx logs it (with `, subrequest: "…"`). Its reply goes
//! through its own body filters (an included page may be SSI itself).
//!
//! [`Subrequest`] is the parent's handle: a [`Source`] of the output. It
//! runs as soon as it is started, whether or not its output is wanted yet —
//! several included pages are fetched at once, as nginx runs them — but it
//! holds at most [`PIPE_BYTES`] of output its parent has not taken, then
//! waits (nginx would keep it all in memory). Everything runs on the
//! connection's task: whoever polls the parent's body drives them.
//!
//! Limits are nginx's: 51 levels of nesting ([`MAX_SUBREQUESTS`] + 1,
//! then "subrequests cycle"), no subrequest from one whose output goes to
//! memory, `subrequest_output_buffer_size` for that output. A subrequest
//! that fails after its output began, or that nginx would terminate
//! (`return 444`, an upgrade), ends its parent's body with an error: the
//! client's response is cut, as nginx terminates the main request.
//!
//! `log_subrequest on` in the subrequest's location writes it to that
//! location's access logs when it is over and its parent has taken the
//! last of its output — nginx logs a subrequest when it is done and the
//! active one (`r == c->data` in `ngx_http_finalize_request`), so its line
//! comes before its parent's, in output order (one whose output went to
//! memory is polled, as a source of nothing, where it stands in its
//! parent's output, and logged then). A subrequest that failed is not
//! logged: nginx terminates the whole request.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;

use crate::body::source::Pieces;
use crate::body::{Source, SourceError};
use crate::http::status::Status;
use crate::io::client_stream::ClientStream;
use crate::log::Level;

use crate::server::core::hooks::filter;
use crate::server::core::hooks::ssi;
use crate::server::core::phases::{Handled, Walk};
use crate::server::core::reply::{Body, Reply};
use crate::server::core::request::Req;
use crate::server::engine::client::{BodyProgress, Client};

/// How deep subrequests nest (`NGX_HTTP_MAX_SUBREQUESTS`): the main request
/// starts with one more than this (`r->subrequests = 51`), each level one
/// less, so subrequests nest 51 levels deep and the 52nd is refused
/// ("subrequests cycle").
pub const MAX_SUBREQUESTS: u32 = 50;

/// Output a subrequest may hold that its parent has not taken yet, before
/// it waits (nginx's postpone filter keeps it all in memory).
pub const PIPE_BYTES: usize = 64 * 1024;

/// What every request of a connection's subrequest tree can reach: the
/// client's socket (a subrequest never reads from it, but the walk's
/// content handlers are handed the connection), and how much the
/// connection has written.
#[derive(Clone, Copy)]
pub struct Env<'r> {
    /// The client connection.
    pub stream: &'r ClientStream,
    /// Bytes written to the client for the main request so far, head
    /// included (nginx's `c->sent`): a subrequest's `$bytes_sent` and
    /// `$body_bytes_sent` in the access log.
    pub sent: &'r Cell<u64>,
}

/// What a subrequest inherits, kept in its [`Req`].
#[derive(Clone)]
pub struct SubState {
    /// Levels of subrequests it may still start (nginx's `r->subrequests`).
    pub remaining: u32,
    /// Its output goes to memory, not to the client.
    pub in_memory: bool,
    /// The SSI state of the whole tree (nginx keeps it in the main
    /// request's SSI context).
    pub ssi: Rc<RefCell<ssi::Shared>>,
    /// A clone of its parent (a background cache update,
    /// `NGX_HTTP_SUBREQUEST_CLONE`): the parent's method, not `GET`.
    pub is_clone: bool,
}

/// Where a subrequest's output goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// To the parent, in order, as a [`Source`].
    Stream,
    /// Into memory, whole ([`Subrequest::memory`]).
    Memory,
}

/// What is sent instead of a subrequest's output when it produced none
/// (nginx's post-subrequest handler; SSI's `stub`): its reply was an error
/// or its body was empty. It goes through the subrequest's own filters,
/// typed as the parent's response.
#[derive(Clone, Debug)]
pub struct Fallback {
    /// The body.
    pub body: Vec<Bytes>,
    /// The parent's `Content-Type`.
    pub content_type: Option<crate::server::core::reply::ContentType>,
}

/// How to run a subrequest.
#[derive(Clone, Debug)]
pub struct Options {
    /// Where the output goes.
    pub output: Output,
    /// What replaces missing output.
    pub fallback: Option<Fallback>,
}

/// A subrequest's output kept in memory, once it is done.
#[derive(Clone, Debug)]
pub struct Memory {
    /// The response's status.
    pub status: u16,
    /// The body; `None` when the response was an error the server made,
    /// which produces no output the parent can use.
    pub body: Option<Vec<u8>>,
}

/// The channel from a running subrequest to its parent.
#[derive(Default)]
struct Pipe {
    /// Output not yet taken.
    chunks: VecDeque<Bytes>,
    /// Bytes in `chunks`.
    bytes: usize,
    /// How the output ended, once it has.
    end: Option<Result<(), SourceError>>,
    /// The runner, waiting for room.
    producer: Option<Waker>,
    /// The status of the reply, and whether it was one the server made for
    /// an error (for memory output).
    status: Option<(u16, bool)>,
    /// Output kept in memory.
    memory: Vec<u8>,
    /// The parent has taken the end of the output: the subrequest is the
    /// active one and done, and is logged now.
    taken: bool,
}

/// A running subrequest, as its parent holds it.
pub struct Subrequest<'r> {
    /// Runs the subrequest's walk and pumps its body into `pipe`.
    task: Option<Pin<Box<dyn Future<Output = ()> + 'r>>>,
    /// Output the runner made and the parent has not taken.
    pipe: Rc<RefCell<Pipe>>,
    /// Where the output goes.
    output: Output,
}

/// The SSI state a request's subrequests share: the tree's (a subrequest's
/// own), or a fresh one for the main request.
pub fn shared_ssi(r: &Req<'_>) -> Rc<RefCell<ssi::Shared>> {
    match &r.sub {
        Some(s) => s.ssi.clone(),
        None => Rc::new(RefCell::new(ssi::Shared::default())),
    }
}

/// Starts a subrequest of `parent` for `uri` (decoded, absolute) and
/// `args`. `None` when nginx would refuse it; the reason is logged.
pub fn start<'r, 'a: 'r>(
    env: Env<'r>,
    parent: &'r Req<'a>,
    uri: String,
    args: Option<String>,
    ssi: Rc<RefCell<ssi::Shared>>,
    opts: Options,
) -> Option<Subrequest<'r>> {
    let (remaining, in_memory) = match &parent.sub {
        Some(s) => (s.remaining, s.in_memory),
        None => (MAX_SUBREQUESTS + 1, false),
    };
    if remaining == 0 {
        parent.error_log().log(
            Level::Error,
            Some(parent.conn_no),
            format_args!(
                "subrequests cycle while processing \"{uri}\"{}",
                parent.log_context()
            ),
        );
        return None;
    }
    if in_memory {
        parent.error_log().log(
            Level::Error,
            Some(parent.conn_no),
            format_args!(
                "nested in-memory subrequest \"{uri}\"{}",
                parent.log_context()
            ),
        );
        return None;
    }
    let state = SubState {
        remaining: remaining - 1,
        in_memory: opts.output == Output::Memory,
        ssi,
        is_clone: false,
    };
    let pipe = Rc::new(RefCell::new(Pipe::default()));
    let output = opts.output;
    let task = run(env, parent, uri, args, state, opts, pipe.clone());
    Some(Subrequest {
        task: Some(Box::pin(task)),
        pipe,
        output,
    })
}

impl Subrequest<'_> {
    /// Lets the subrequest make progress without taking its output (it
    /// runs while earlier output is still being sent). `true` once it has
    /// finished.
    pub fn drive(&mut self, cx: &mut Context<'_>) -> bool {
        if let Some(task) = self.task.as_mut() {
            if task.as_mut().poll(cx).is_ready() {
                self.task = None;
            }
        }
        self.is_done()
    }

    /// Whether it has finished (nginx's `sr->done`): its output is all in
    /// the pipe or in memory (its runner may still wait to log it).
    pub fn is_done(&self) -> bool {
        self.task.is_none() || self.pipe.borrow().end.is_some()
    }

    /// The output kept in memory, once done (for [`Output::Memory`]);
    /// `Err` when the subrequest failed.
    pub fn memory(&mut self) -> Option<Result<Memory, SourceError>> {
        if !self.is_done() || self.output != Output::Memory {
            return None;
        }
        let mut pipe = self.pipe.borrow_mut();
        if let Some(Err(e)) = &pipe.end {
            return Some(Err(e.clone()));
        }
        let (status, special) = pipe.status.unwrap_or((0, true));
        let body = (!special).then(|| std::mem::take(&mut pipe.memory));
        Some(Ok(Memory { status, body }))
    }
}

impl Source for Subrequest<'_> {
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, SourceError>> {
        loop {
            {
                let mut pipe = self.pipe.borrow_mut();
                if let Some(b) = pipe.chunks.pop_front() {
                    pipe.bytes -= b.len();
                    if let Some(w) = pipe.producer.take() {
                        w.wake();
                    }
                    return Poll::Ready(Ok(Some(b)));
                }
                if let Some(end) = pipe.end.clone() {
                    pipe.taken = true;
                    drop(pipe);
                    // The runner, waiting for this, logs the subrequest
                    // before its parent goes on.
                    self.drive(cx);
                    return Poll::Ready(end.map(|()| None));
                }
            }
            if self.task.is_none() {
                // The runner ended without saying how: nothing more comes.
                return Poll::Ready(Ok(None));
            }
            let had = self.pipe.borrow().chunks.len();
            self.drive(cx);
            let pipe = self.pipe.borrow();
            if pipe.chunks.len() == had && pipe.end.is_none() && !self.is_done() {
                return Poll::Pending;
            }
        }
    }

    fn length(&self) -> Option<u64> {
        None
    }
}

/// The subrequest itself: the walk, then its body (through its filters)
/// into the pipe.
async fn run<'r, 'a: 'r>(
    env: Env<'r>,
    parent: &'r Req<'a>,
    uri: String,
    args: Option<String>,
    state: SubState,
    opts: Options,
    pipe: Rc<RefCell<Pipe>>,
) {
    let mut sr = parent.subrequest(uri, args, state);
    let mut buf = Vec::new();
    let mut client = Client::new(env.stream, &mut buf);
    // A subrequest never reads the client's body (nginx hands it the
    // parent's, if that was read).
    client.body = BodyProgress::Failed;
    let site = parent.site;
    let mut walk = Walk::new(site);
    let handled = match walk.route(&mut sr) {
        Some(h) => h,
        None => walk.content(&mut sr, &mut client).await,
    };
    drop(client);
    let Handled {
        mut reply,
        conf,
        pool,
    } = handled;
    // The length as its header filters left it (nginx's SSI and sub
    // filters clear only the main request's), before the body moves.
    let length = filter::content_length(&reply, &sr);
    let result = output(env, &sr, &mut reply, conf, pool, &opts, &pipe).await;
    let ok = result.is_ok();
    pipe.borrow_mut().end = Some(result);
    if !ok || !conf.log_subrequest {
        return;
    }
    // Logged once it is the active request: when the parent has taken the
    // end of its output (for output in memory, the parent polls it as a
    // source of nothing where it stands in the output).
    std::future::poll_fn(|cx| {
        let mut p = pipe.borrow_mut();
        if p.taken {
            Poll::Ready(())
        } else {
            p.producer = Some(cx.waker().clone());
            Poll::Pending
        }
    })
    .await;
    let mut head = reply.head_copy();
    head.length_override = length;
    crate::server::core::hooks::access_log::subrequest(&sr, conf, &head, env.sent.get());
}

/// Sends a subrequest's reply (or its fallback) into the pipe.
async fn output(
    env: Env<'_>,
    sr: &Req<'_>,
    reply: &mut Reply,
    conf: &crate::config::inherit::LocConf,
    pool: Option<std::sync::Arc<crate::io::Pool>>,
    opts: &Options,
    pipe: &Rc<RefCell<Pipe>>,
) -> Result<(), SourceError> {
    if reply.abort {
        // `return 444` and the like: nginx terminates the whole request.
        return Err(SourceError::terminated());
    }
    if matches!(reply.body, Body::Upgrade(_)) {
        sr.error_log().log(
            Level::Error,
            Some(sr.conn_no),
            format_args!("connection upgrade in subrequest{}", sr.log_context()),
        );
        return Err(SourceError::terminated());
    }
    if reply.special {
        if let Some(fb) = &opts.fallback {
            // nginx's post-subrequest handler runs before the error page
            // is made: the stub replaces it, with a head of its own.
            pipe.borrow_mut().status = Some((reply.status.0, true));
            return send_fallback(env, sr, fb, None, conf, pool.clone(), opts, pipe).await;
        }
    }
    pipe.borrow_mut().status = Some((reply.status.0, reply.special));
    let filters = reply.filters.clone();
    let produced = send_reply(env, sr, reply, conf, pool.clone(), opts, pipe).await?;
    if !produced {
        if let Some(fb) = &opts.fallback {
            // The head was made: the stub goes through the filters it chose.
            return send_fallback(env, sr, fb, Some(filters), conf, pool, opts, pipe).await;
        }
    }
    Ok(())
}

/// Sends the fallback body as the subrequest's response, through
/// `filters` (those of a reply whose head was made) or the filters a head
/// of the parent's type chooses.
#[allow(clippy::too_many_arguments)]
async fn send_fallback(
    env: Env<'_>,
    sr: &Req<'_>,
    fb: &Fallback,
    filters: Option<filter::Filters>,
    conf: &crate::config::inherit::LocConf,
    pool: Option<std::sync::Arc<crate::io::Pool>>,
    opts: &Options,
    pipe: &Rc<RefCell<Pipe>>,
) -> Result<(), SourceError> {
    let pieces = fb.body.iter().cloned().map(Ok).collect();
    let mut reply = Reply::new(
        Status::OK,
        Body::Stream(Box::new(Pieces::new(pieces, None))),
    );
    reply.content_type = fb.content_type.clone();
    match filters {
        Some(f) => reply.filters = f,
        None => {
            // A fallback is a 200 of no length: the range filter, the only
            // one that can refuse a reply, has nothing to answer.
            let _ = filter::headers(&mut reply, sr);
        }
    }
    send_reply(env, sr, &mut reply, conf, pool, opts, pipe)
        .await
        .map(|_| ())
}

/// Sends `reply`'s body through the subrequest's filters into the pipe
/// (the reply keeps its head, for the log); `Ok(true)` when it produced
/// output.
async fn send_reply(
    env: Env<'_>,
    sr: &Req<'_>,
    reply: &mut Reply,
    conf: &crate::config::inherit::LocConf,
    pool: Option<std::sync::Arc<crate::io::Pool>>,
    opts: &Options,
    pipe: &Rc<RefCell<Pipe>>,
) -> Result<bool, SourceError> {
    if matches!(reply.status.0, 204 | 304) {
        return Ok(false);
    }
    let memory_limit = conf.subrequest_output_buffer_size as usize;
    if opts.output == Output::Memory {
        if let Some(n) = reply.announced_length() {
            if n > memory_limit as u64 {
                sr.error_log().log(
                    Level::Error,
                    Some(sr.conn_no),
                    format_args!("too big subrequest response: {n}{}", sr.log_context()),
                );
                return Err(SourceError::terminated());
            }
        }
    }
    let mut body = match filter::body(env, sr, reply, pool.as_ref()) {
        Some(b) => b,
        None => match reply.body {
            Body::Multipart { .. } | Body::Upgrade(_) => return Ok(false),
            _ => {
                filter::source(
                    std::mem::replace(&mut reply.body, Body::Empty),
                    sr,
                    pool.as_ref(),
                )
                .0
            }
        },
    };
    let mut produced = false;
    loop {
        let piece = std::future::poll_fn(|cx| body.poll_chunk(cx)).await?;
        let Some(piece) = piece else {
            return Ok(produced);
        };
        if piece.is_empty() {
            continue;
        }
        produced = true;
        if opts.output == Output::Memory {
            let mut p = pipe.borrow_mut();
            if p.memory.len() + piece.len() > memory_limit {
                drop(p);
                sr.error_log().log(
                    Level::Error,
                    Some(sr.conn_no),
                    format_args!("too big subrequest response{}", sr.log_context()),
                );
                return Err(SourceError::terminated());
            }
            p.memory.extend_from_slice(&piece);
            continue;
        }
        // Wait for room: the parent takes output in order.
        std::future::poll_fn(|cx| {
            let mut p = pipe.borrow_mut();
            if p.bytes < PIPE_BYTES {
                Poll::Ready(())
            } else {
                p.producer = Some(cx.waker().clone());
                Poll::Pending
            }
        })
        .await;
        let mut p = pipe.borrow_mut();
        p.bytes += piece.len();
        p.chunks.push_back(piece);
    }
}
