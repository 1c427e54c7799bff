//! nginx's range header filter (`ngx_http_range_header_filter`) for the
//! static handler's replies: after the headers filter, so that an `If-Range`
//! is compared with the `ETag` and `Last-Modified` the reply ends up with
//! (`add_header Last-Modified ""` leaves a date nothing to match).
//!
//! Owns: turning a whole-file 200 into a 206 (one range or multipart), a
//! 416, or a 200 with `Accept-Ranges`. Must not: read the file (the body
//! stays a range of the open file) or parse the header (`http::range`).

use crate::http::range::{self, Multipart, RangeSpec};
use crate::http::request::Version;
use crate::http::status::Status;

use super::headers_filter::{etag, last_modified_time};
use super::reply::{Body, Reply};
use super::request::Req;

/// What the filter made of a reply.
pub enum Ranged {
    /// The reply goes on (200 or 206).
    Same(Reply),
    /// No range is satisfiable: a 416 special reply, which `error_page`
    /// may replace. It keeps the fields the reply had (nginx's list is not
    /// cleared on this path).
    NotSatisfiable(Reply),
}

/// Applies the range filter to `reply` for request `r`.
pub fn apply(mut reply: Reply, r: &Req<'_>) -> Ranged {
    let size = match &reply.body {
        Body::File { range, .. } if range.start == 0 => range.end,
        _ => return Ranged::Same(reply),
    };
    if !reply.allow_ranges
        || reply.status != Status::OK
        || r.head.version == Version::Http09
        || r.conf.max_ranges == Some(0)
    {
        return Ranged::Same(reply);
    }
    let h = r.head;
    let spec = match &h.range {
        Some(header) if size > 0 => {
            let applies = match &h.if_range {
                Some(ir) => range::if_range_matches(ir, etag(&reply), last_modified_time(&reply)),
                None => true,
            };
            if applies {
                range::parse_range_limited(header, size, r.conf.max_ranges.map(|n| n as usize))
            } else {
                RangeSpec::Full
            }
        }
        _ => RangeSpec::Full,
    };
    match spec {
        RangeSpec::Full => {
            reply.accept_ranges = true;
            Ranged::Same(reply)
        }
        RangeSpec::Unsatisfiable => {
            let mut e = Reply::special(Status::RANGE_NOT_SATISFIABLE);
            e.content_range = Some(range::unsatisfiable_content_range(size));
            e.extra = std::mem::take(&mut reply.extra);
            // nginx sends no validators with a 416.
            e.extra.retain(|(n, _)| {
                !n.eq_ignore_ascii_case("Last-Modified") && !n.eq_ignore_ascii_case("ETag")
            });
            Ranged::NotSatisfiable(e)
        }
        RangeSpec::Satisfiable(ranges) => {
            let Body::File { file, .. } = std::mem::replace(&mut reply.body, Body::Empty) else {
                return Ranged::Same(reply);
            };
            reply.status = Status::PARTIAL_CONTENT;
            reply.status_line = None;
            if let [one] = ranges.as_slice() {
                reply.content_range = Some(one.content_range(size));
                reply.body = Body::File { file, range: *one };
            } else {
                let ct = reply.content_type.clone();
                let parts = Multipart::new(&ranges, ct.as_deref(), size, next_boundary());
                reply.content_type = Some(parts.content_type().to_string());
                reply.body = Body::Multipart { file, parts };
            }
            Ranged::Same(reply)
        }
    }
}

/// nginx numbers multipart boundaries with a per-process counter.
fn next_boundary() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
