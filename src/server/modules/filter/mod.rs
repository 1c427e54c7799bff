//! The output filters between a request's reply and where it goes (the
//! client, or the parent of a subrequest), as nginx's header and body
//! filter chains, in nginx's order (`auto/modules`):
//!
//! - [`gunzip`]: a gzip body for a client without gzip is decompressed;
//! - [`crate::server::modules::addition`]: `add_before_body` / `add_after_body`;
//! - [`crate::server::modules::sub_filter`]: strings replaced;
//! - [`charset`]: `; charset=` in the type, and the body recoded;
//! - [`crate::server::modules::ssi`]: server-side includes (postpone: a subrequest's output
//!   joins its parent's after this point);
//! - [`gzip`]: the body compressed, `Content-Encoding: gzip` (the main
//!   request's only);
//! - [`range`]: `Range` answered on a whole 200 (206, multipart, 416).
//!
//! Two steps, because nginx's filters see the head before the body:
//! - [`headers`] runs when a reply is final (the phases' last step, for the
//!   main request and every subrequest): each filter decides whether it
//!   applies and changes the head as it must; the decisions are kept in
//!   [`Reply::filters`]. The range filter cuts the handler's body here
//!   (it runs first on the body, last on the head).
//! - [`body`] runs when the body is sent, where the request is at hand (the
//!   connection for the main request, [`crate::server::core::subrequest`] for a
//!   subrequest): the body becomes a [`Source`] and each filter that
//!   applies wraps it, innermost first — a filter takes a body and gives a
//!   new one.
//!
//! A body that no filter changes is sent as it is (a file with
//! `sendfile`); one that a filter reads is read into memory in
//! `output_buffers` pieces through the file layer (nginx's
//! `filter_need_in_memory`).
//!
//! Must not: wait. Filters only decide and wrap; the bytes move when the
//! body is sent.

pub mod charset;
pub mod gunzip;
pub mod gzip;
pub mod range;

// What other modules ask of the filters: the charset a reply will be
// sent in (autoindex), whether gzip would compress (gzip_static).
pub use charset::destination_name;
pub use gzip::gzip_ok;

use std::sync::Arc;

use crate::body::Source;
use crate::body::file::{FileSource, Reader, Segment};
use crate::body::gzip::GzipOptions;
use crate::body::source::Pieces;
use crate::http::charset::Recoder;
use crate::io::Pool;

use super::{addition, ssi, sub_filter};
use crate::server::core::reply::{Body, Reply};
use crate::server::core::request::Req;
use crate::server::core::subrequest::{self, Env};

/// The body filters a reply goes through, as its header filters decided.
#[derive(Clone, Debug, Default)]
pub struct Filters {
    /// gunzip decompresses the body, in pieces of this size.
    pub gunzip: Option<usize>,
    /// `add_before_body` / `add_after_body` wrap the body.
    pub addition: bool,
    /// `sub_filter` replaces these strings.
    pub sub: Option<sub_filter::Patterns>,
    /// charset recodes the body.
    pub recode: Option<Recoder>,
    /// The SSI filter processes the body.
    pub ssi: bool,
    /// gzip compresses the body.
    pub gzip: Option<GzipOptions>,
    /// A header filter cleared the length (nginx's `content_length_n` is
    /// -1 from there on): none is announced.
    pub length_cleared: bool,
}

impl Filters {
    /// Whether any body filter applies.
    pub fn any(&self) -> bool {
        self.gunzip.is_some()
            || self.addition
            || self.sub.is_some()
            || self.recode.is_some()
            || self.ssi
            || self.gzip.is_some()
    }
}

/// What the header filters learn about a reply as it passes them.
#[derive(Clone, Copy, Debug)]
pub struct Passing {
    /// The length the reply will have, if known (nginx's
    /// `content_length_n`); a filter that changes the length clears it.
    pub length: Option<u64>,
    /// `Vary: Accept-Encoding` applies (nginx's `r->gzip_vary`).
    pub vary: bool,
}

/// The header filters of a final reply of `r`, in nginx's order. `Err`:
/// the range filter found the `Range` unsatisfiable; the caller answers the
/// 416 given instead (as nginx finalizes a request with the code a filter
/// returns, so that `error_page` applies).
pub fn headers(reply: &mut Reply, r: &Req<'_>) -> Result<(), Box<Reply>> {
    if reply.abort || matches!(reply.body, Body::Upgrade(_)) {
        return Ok(());
    }
    let conf = r.conf;
    let mut p = Passing {
        length: reply.announced_length(),
        vary: reply.gzip_vary,
    };
    reply.filters.gunzip = gunzip::header(r, conf, reply, &mut p);
    sync(reply, &mut p);
    addition::header_filter(reply, r);
    sync(reply, &mut p);
    sub_filter::header_filter(reply, r);
    sync(reply, &mut p);
    reply.filters.recode = charset::header(r, conf, reply, &mut p);
    sync(reply, &mut p);
    ssi::header_filter(reply, r);
    sync(reply, &mut p);
    if r.is_main() {
        reply.filters.gzip = gzip::header(r, conf, reply, &mut p);
        sync(reply, &mut p);
    }
    charset::fold(reply);
    if r.is_main() {
        range::header(r, conf, reply, &p)?;
    }
    reply.gzip_vary = p.vary && conf.gzip_vary;
    Ok(())
}

/// Keeps the reply and what the filters pass in step: a body filter of the
/// main request's (addition, sub, SSI) makes the length unknown and ranges
/// impossible; a length a filter cleared is announced nowhere.
fn sync(reply: &mut Reply, p: &mut Passing) {
    let f = &reply.filters;
    if f.addition || f.sub.is_some() || f.ssi {
        p.length = None;
        reply.allow_ranges = false;
    }
    if p.length.is_none() && f.any() {
        reply.filters.length_cleared = true;
    }
}

/// The response's length as a header filter sees it (nginx's
/// `content_length_n`): unknown once an earlier filter changed the main
/// request's body.
pub fn content_length(reply: &Reply, r: &Req<'_>) -> Option<u64> {
    if r.is_main() && reply.filters.length_cleared {
        return None;
    }
    reply.length_override.or_else(|| reply.body.len())
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
    if !reply.filters.any() || matches!(reply.body, Body::Upgrade(_)) {
        return None;
    }
    let f = reply.filters.clone();
    let content_type = reply.content_type.clone();
    // A filter that keeps the length (8-bit recoding) leaves it announced
    // after the body has moved into the stream.
    reply.length_override = reply.announced_length();
    let (mut src, from_file) = source(std::mem::replace(&mut reply.body, Body::Empty), r, pool);
    if let Some(piece) = f.gunzip {
        src = Box::new(crate::body::gunzip::Gunzipped::new(src, piece));
    }
    if let Some(patterns) = f.sub {
        src = Box::new(sub_filter::SubFilter::new(r, src, patterns));
    }
    if let Some(recoder) = f.recode {
        src = Box::new(crate::body::recode::Recoded::new(src, recoder));
    }
    if f.ssi || f.addition {
        // The SSI state is the tree's: included pages and additions share it.
        let shared = subrequest::shared_ssi(r);
        if f.ssi {
            src = Box::new(ssi::Filter::new(env, r, src, content_type, shared.clone()));
        }
        if f.addition {
            // An addition's subrequests join the output around the others'.
            src = Box::new(addition::Addition::new(env, r, src, shared));
        }
    }
    if let Some(mut o) = f.gzip {
        // Streams from files never pause for long: no flush on their waits.
        o.flush_when_idle = !from_file;
        src = Box::new(crate::body::gzip::Gzipped::new(src, o));
    }
    Some(src)
}

/// A reply's body as a stream (with whether it comes from a file): bytes
/// as one piece, a file or its multipart ranges read through the file
/// layer in `output_buffers` pieces, a stream as it is.
pub fn source<'r>(
    body: Body,
    r: &Req<'_>,
    pool: Option<&Arc<Pool>>,
) -> (Box<dyn Source + 'r>, bool) {
    let reader = Reader {
        pool: pool.cloned(),
        fast: r.conf.aio_fast_path,
        piece: usize::try_from(r.conf.output_buffers.1).unwrap_or(usize::MAX),
    };
    match body {
        Body::Empty | Body::Upgrade(_) => (Box::new(Pieces::new(Vec::new(), Some(0))), false),
        Body::Bytes(b) => {
            let len = b.len() as u64;
            (Box::new(Pieces::new(vec![Ok(b.into())], Some(len))), false)
        }
        Body::File { file, range } => (
            Box::new(FileSource::range(file, range.start, range.end, reader)),
            true,
        ),
        Body::Multipart { file, parts } => {
            let mut segments = Vec::new();
            for (head, r) in parts.parts() {
                segments.push(Segment::Bytes(bytes::Bytes::copy_from_slice(head)));
                segments.push(Segment::File {
                    start: r.start,
                    end: r.end,
                });
            }
            segments.push(Segment::Bytes(bytes::Bytes::copy_from_slice(
                parts.trailer(),
            )));
            (Box::new(FileSource::new(file, segments, reader)), true)
        }
        Body::Stream(s) => (s, false),
    }
}

/// What a filter that changes the body does to the validators: drops
/// `Last-Modified` and `ETag`, or with `keep` (`ssi_last_modified`,
/// `sub_filter_last_modified`) makes the `ETag` weak.
pub fn validators(reply: &mut Reply, keep: bool) {
    if keep {
        weaken_etags(reply);
        return;
    }
    reply.last_modified = None;
    reply.etag = None;
    reply.extra.retain(|(n, _)| {
        !n.eq_ignore_ascii_case("Last-Modified") && !n.eq_ignore_ascii_case("ETag")
    });
}

/// `ngx_http_weak_etag` on every `ETag` the reply carries.
pub fn weaken_etags(reply: &mut Reply) {
    if let Some(e) = reply.etag.take() {
        reply.etag = weak_etag(e);
    }
    reply.extra.retain_mut(|(n, v)| {
        if !n.eq_ignore_ascii_case("ETag") {
            return true;
        }
        match weak_etag(std::mem::take(v).into_string()) {
            Some(w) => {
                *v = w.into();
                true
            }
            None => false,
        }
    });
}

/// The value of the first response field `name` the reply carries among
/// the fields it passes on (an upstream's, `add_header`'s).
pub fn field<'r>(reply: &'r Reply, name: &str) -> Option<&'r str> {
    reply
        .extra
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Whether the reply has a non-empty `Content-Encoding` (nginx's
/// `r->headers_out.content_encoding`).
pub fn has_content_encoding(reply: &Reply) -> bool {
    field(reply, "Content-Encoding").is_some_and(|v| !v.is_empty())
}

/// The reply's MIME type without the charset parameter an upstream's type
/// carries (what nginx's `content_type_len` covers), as filters compare it
/// with their type lists.
pub fn mime(reply: &Reply) -> Option<&str> {
    let ct = reply.content_type.as_deref()?;
    Some(match reply.content_type_len {
        Some(n) => ct.get(..n).unwrap_or(ct),
        None => ct,
    })
}

/// A filter that changes the body's length or encoding: no length, no
/// ranges, a weak `ETag` (`ngx_http_clear_content_length`,
/// `ngx_http_clear_accept_ranges`, `ngx_http_weak_etag`).
pub fn body_changes(reply: &mut Reply, p: &mut Passing) {
    p.length = None;
    reply.length_override = None;
    reply.allow_ranges = false;
    reply.accept_ranges = false;
    reply
        .extra
        .retain(|(n, _)| !n.eq_ignore_ascii_case("Accept-Ranges"));
    weaken_etags(reply);
}

/// `ngx_http_weak_etag`: a strong `"x"` becomes `W/"x"`, a weak one stays,
/// anything else is dropped.
pub fn weak_etag(e: String) -> Option<String> {
    if e.len() > 2 && e.starts_with("W/") {
        Some(e)
    } else if e.starts_with('"') {
        Some(format!("W/{e}"))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::status::Status;

    #[test]
    fn etags_weakened_as_nginx() {
        assert_eq!(weak_etag("\"a\"".into()).as_deref(), Some("W/\"a\""));
        assert_eq!(weak_etag("W/\"a\"".into()).as_deref(), Some("W/\"a\""));
        assert_eq!(weak_etag("a".into()), None);
    }

    #[test]
    fn a_changed_body_loses_length_ranges_and_strong_etags() {
        let mut reply = Reply::new(Status::OK, Body::Bytes(b"abc".to_vec()));
        reply.etag = Some("\"1-2\"".into());
        reply.allow_ranges = true;
        reply.accept_ranges = true;
        reply.length_override = Some(3);
        reply.extra = vec![
            ("Accept-Ranges".into(), "bytes".into()),
            ("ETag".into(), "x".into()),
            ("X".into(), "y".into()),
        ];
        let mut p = Passing {
            length: Some(3),
            vary: false,
        };
        body_changes(&mut reply, &mut p);
        assert_eq!(p.length, None);
        assert_eq!(reply.length_override, None);
        assert!(!reply.allow_ranges && !reply.accept_ranges);
        assert_eq!(reply.etag.as_deref(), Some("W/\"1-2\""));
        assert_eq!(reply.extra, vec![("X".into(), "y".into())]);
    }

    #[test]
    fn the_type_filters_compare_leaves_out_an_upstream_charset() {
        let mut reply = Reply::new(Status::OK, Body::Empty);
        reply.set_upstream_content_type("Text/HTML; charset=B".into());
        assert_eq!(mime(&reply), Some("Text/HTML"));
        reply.content_type = Some("text/html; charset=utf-8".into());
        reply.content_type_len = None;
        assert_eq!(mime(&reply), Some("text/html; charset=utf-8"));
    }
}
