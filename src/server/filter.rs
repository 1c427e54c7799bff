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
use super::subrequest::{self, Env};
use super::{addition, ssi, sub_filter};

/// The body filters a reply goes through, as its header filters decided.
#[derive(Clone, Debug, Default)]
pub struct Filters {
    /// `add_before_body` / `add_after_body` wrap the body.
    pub addition: bool,
    /// `sub_filter` replaces these strings.
    pub sub: Option<sub_filter::Patterns>,
    /// The SSI filter processes the body.
    pub ssi: bool,
}

impl Filters {
    /// Whether any filter changes the body (its length is then unknown).
    pub fn any(&self) -> bool {
        self.addition || self.sub.is_some() || self.ssi
    }
}

/// The header filters of a final reply of `r`, in nginx's order.
pub fn headers(reply: &mut Reply, r: &Req<'_>) {
    if reply.abort || matches!(reply.body, Body::Upgrade(_)) {
        return;
    }
    addition::header_filter(reply, r);
    sub_filter::header_filter(reply, r);
    ssi::header_filter(reply, r);
}

/// The response's length as a header filter sees it (nginx's
/// `content_length_n`): unknown once an earlier filter changed the main
/// request's body.
pub fn content_length(reply: &Reply, r: &Req<'_>) -> Option<u64> {
    if r.is_main() && reply.filters.any() {
        return None;
    }
    reply.length_override.or_else(|| reply.body.len())
}

/// What a filter that changes the body does to the validators: drops
/// `Last-Modified` and `ETag`, or with `keep` (`ssi_last_modified`,
/// `sub_filter_last_modified`) makes the `ETag` weak.
pub fn validators(reply: &mut Reply, keep: bool) {
    if keep {
        weak_etag(reply);
        return;
    }
    reply.last_modified = None;
    reply.etag = None;
    reply.extra.retain(|(n, _)| {
        !n.eq_ignore_ascii_case("Last-Modified") && !n.eq_ignore_ascii_case("ETag")
    });
}

/// nginx's `ngx_http_weak_etag`: a strong `"…"` becomes `W/"…"`, a weak one
/// stays, anything else is dropped.
pub fn weak_etag(reply: &mut Reply) {
    fn weak(e: &str) -> Option<String> {
        if e.len() > 2 && e.starts_with("W/") {
            return Some(e.to_string());
        }
        e.starts_with('"').then(|| format!("W/{e}"))
    }
    if let Some(e) = reply.etag.take() {
        reply.etag = weak(&e);
    }
    reply.extra.retain_mut(|(n, v)| {
        if !n.eq_ignore_ascii_case("ETag") {
            return true;
        }
        match weak(v) {
            Some(w) => {
                *v = w;
                true
            }
            None => false,
        }
    });
}

/// Whether a file of `content_type` served to `r` will be changed by a
/// body filter: the static handler then serves it whole, ignoring `Range`
/// (nginx's range filter sees no length after such a filter).
pub fn changes_file(r: &Req<'_>, content_type: &str) -> bool {
    let conf = r.conf;
    let ct = Some(content_type);
    ssi::applies(conf, ct)
        || (!conf.sub_filter.is_empty() && conf.sub_filter_types.matches(ct))
        || (r.is_main()
            && (conf.add_before_body.is_some() || conf.add_after_body.is_some())
            && conf.addition_types.matches(ct))
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
    // The SSI state is the tree's: included pages and additions share it.
    let shared = subrequest::shared_ssi(r);
    // Innermost first: the body flows addition → sub → SSI in nginx, and
    // an addition's subrequests join the output around the others'.
    if let Some(patterns) = &reply.filters.sub {
        src = Box::new(sub_filter::SubFilter::new(r, src, patterns.clone()));
    }
    if reply.filters.ssi {
        src = Box::new(ssi::Filter::new(env, r, src, content_type, shared.clone()));
    }
    if reply.filters.addition {
        src = Box::new(addition::Addition::new(env, r, src, shared));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::status::Status;

    #[test]
    fn validators_are_dropped_or_weakened() {
        let mut r = Reply::new(Status::OK, Body::Empty);
        r.etag = Some("\"abc\"".into());
        r.last_modified = Some(1);
        r.extra.push(("ETag".into(), "W/\"up\"".into()));
        r.extra.push(("Last-Modified".into(), "x".into()));
        let mut weak = Reply::new(Status::OK, Body::Empty);
        weak.etag = r.etag.clone();
        weak.extra = r.extra.clone();
        weak.extra.push(("ETag".into(), "unquoted".into()));
        validators(&mut r, false);
        assert_eq!((r.etag, r.last_modified, r.extra.len()), (None, None, 0));
        validators(&mut weak, true);
        assert_eq!(weak.etag.as_deref(), Some("W/\"abc\""));
        let etags: Vec<&str> = weak
            .extra
            .iter()
            .filter(|(n, _)| n == "ETag")
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(etags, vec!["W/\"up\""]);
    }
}
