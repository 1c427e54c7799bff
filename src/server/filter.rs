//! The output filters between a request's reply and where it goes (the
//! client, or the parent of a subrequest), as nginx's header and body
//! filter chains.
//!
//! Two steps, because nginx's filters see the head before the body:
//! - [`headers`] runs when a reply is final (the phases' last step, for the
//!   main request and every subrequest): each filter decides whether it
//!   applies and changes the head as it must (SSI drops `Content-Length`,
//!   `Accept-Ranges`, `Last-Modified`, `ETag`); the decisions are kept in
//!   [`Reply::filters`].
//! - [`body`] runs when the body is sent, where the request is at hand (the
//!   connection for the main request, [`super::subrequest`] for a
//!   subrequest): the body becomes a [`Source`] and each filter that
//!   applies wraps it — a filter takes a body and gives a new one.
//!
//! nginx's order, the body flowing from the handler to the client: addition
//! → sub → charset → SSI → postpone (a subrequest's output joins its
//! parent's here) → gzip → chunked framing. The filters before postpone run
//! for every request, subrequests included; those after it run once, on
//! the main request's whole body.
//!
//! A body that no filter changes is sent as it is (a file with
//! `sendfile`); one that a filter reads is read into memory in
//! `output_buffers` pieces (nginx's `filter_need_in_memory`).

use std::sync::Arc;

use crate::body::Source;
use crate::body::file::{FileBody, Reads};
use crate::body::source::Pieces;
use crate::io::Pool;

use super::reply::{Body, Reply};
use super::request::Req;
use super::ssi;
use super::subrequest::Env;

/// The body filters a reply goes through, as its header filters decided.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Filters {
    /// The SSI filter processes the body.
    pub ssi: bool,
}

impl Filters {
    /// Whether any filter changes the body (its length is then unknown).
    pub fn any(&self) -> bool {
        self.ssi
    }
}

/// The header filters of a final reply of `r`.
pub fn headers(reply: &mut Reply, r: &Req<'_>) {
    if reply.abort || matches!(reply.body, Body::Upgrade(_)) {
        return;
    }
    ssi::header_filter(reply, r);
}

/// Whether a file of `content_type` served to `r` will be changed by a
/// body filter: the static handler then serves it whole, ignoring `Range`
/// (nginx's range filter sees no length after such a filter).
pub fn changes_file(r: &Req<'_>, content_type: &str) -> bool {
    ssi::applies(r.conf, Some(content_type))
}

/// Runs the body filters `reply.filters` names over its body, for `r`;
/// `None` when none applies (the body is sent as it is). The reply keeps
/// an empty body.
pub fn body<'r>(
    env: Env<'r>,
    r: &'r Req<'_>,
    reply: &mut Reply,
    pool: Option<&Arc<Pool>>,
) -> Option<Box<dyn Source + 'r>> {
    if !reply.filters.any() {
        return None;
    }
    if matches!(reply.body, Body::Multipart { .. } | Body::Upgrade(_)) {
        return None;
    }
    let content_type = reply.content_type.clone();
    let mut src = source(std::mem::replace(&mut reply.body, Body::Empty), r, pool)?;
    if reply.filters.ssi {
        src = Box::new(ssi::Filter::new(env, r, src, content_type));
    }
    Some(src)
}

/// A reply's body as a [`Source`]: bytes as one piece, a file read in
/// `output_buffers` pieces through the file layer, a stream as it is.
/// `None` for what is not a body (a multipart set, an upgrade).
pub fn source<'r>(
    body: Body,
    r: &Req<'_>,
    pool: Option<&Arc<Pool>>,
) -> Option<Box<dyn Source + 'r>> {
    Some(match body {
        Body::Empty => Box::new(Pieces::new(Vec::new(), Some(0))),
        Body::Bytes(b) => {
            let len = b.len() as u64;
            Box::new(Pieces::new(vec![Ok(bytes::Bytes::from(b))], Some(len)))
        }
        Body::File { file, range } => {
            let reads = Reads {
                pool: pool.cloned(),
                fast: r.conf.aio_fast_path,
            };
            let chunk = r.conf.output_buffers.1 as usize;
            Box::new(FileBody::new(file, range.start, range.end, chunk, reads))
        }
        Body::Stream(s) => s,
        Body::Multipart { .. } | Body::Upgrade(_) => return None,
    })
}
