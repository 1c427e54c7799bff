//! The range filter (`ngx_http_range_header_filter` and its body part):
//! a whole 200 reply whose handler allows ranges (a file, a cache hit) and
//! whose length is still known after the filters before it answers a
//! `Range` with a 206 of one range, a `multipart/byteranges` 206 of
//! several, or a 416; otherwise it says `Accept-Ranges: bytes`. `If-Range`
//! is checked against the reply's own validators.
//!
//! Running here, after gzip and charset, is what makes a compressed reply
//! ignore `Range` and a recoded multipart reply carry the new charset in
//! its parts, as in nginx.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::inherit::LocConf;
use crate::http::date::parse_http_date;
use crate::http::range::{self, ByteRange, Multipart, RangeSpec};
use crate::http::request::Version;
use crate::http::status::Status;

use super::{Passing, field};
use crate::server::core::reply::{Body, Reply};
use crate::server::core::request::Req;

/// Cuts `reply` as its request's `Range` asks, if it may. `Err`: the
/// ranges are unsatisfiable; the 416 to answer instead.
pub fn header(
    r: &Req<'_>,
    conf: &LocConf,
    reply: &mut Reply,
    p: &Passing,
) -> Result<(), Box<Reply>> {
    if !reply.allow_ranges
        || reply.status != Status::OK
        || r.head.version == Version::Http09
        || p.length.is_none()
        || conf.max_ranges == Some(0)
    {
        return Ok(());
    }
    let (Some(len), Body::File { range: whole, .. }) = (p.length, &reply.body) else {
        accept(reply);
        return Ok(());
    };
    let base = whole.start;
    let mut spec = match &r.head.range {
        Some(h) => range::parse_range_limited(
            h,
            len,
            conf.max_ranges
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        ),
        _ => RangeSpec::Full,
    };
    if let (Some(if_range), RangeSpec::Satisfiable(_) | RangeSpec::Unsatisfiable) =
        (&r.head.if_range, &spec)
    {
        let etag = reply
            .etag
            .clone()
            .or_else(|| field(reply, "ETag").map(String::from));
        let modified = reply
            .last_modified
            .or_else(|| field(reply, "Last-Modified").and_then(parse_http_date));
        if !range::if_range_matches(if_range, etag.as_deref(), modified) {
            spec = RangeSpec::Full;
        }
    }
    match spec {
        RangeSpec::Full => accept(reply),
        RangeSpec::Unsatisfiable => {
            let mut rep = Reply::special(Status::RANGE_NOT_SATISFIABLE);
            rep.content_range = Some(range::unsatisfiable_content_range(len));
            // The fields the reply had stay (nginx's list is not cleared on
            // this path), but no validators go with a 416.
            rep.extra = std::mem::take(&mut reply.extra);
            rep.extra.retain(|(n, _)| {
                !n.eq_ignore_ascii_case("Last-Modified") && !n.eq_ignore_ascii_case("ETag")
            });
            rep.headers_done = true;
            return Err(Box::new(rep));
        }
        RangeSpec::Satisfiable(ranges) => {
            let Body::File { file, .. } = std::mem::replace(&mut reply.body, Body::Empty) else {
                unreachable!("the body was matched as a file above");
            };
            reply.status = Status::PARTIAL_CONTENT;
            reply.status_line = None;
            reply.accept_ranges = false;
            reply.length_override = None;
            if let [one] = ranges.as_slice() {
                reply.content_range = Some(one.content_range(len));
                reply.body = Body::File {
                    file,
                    range: ByteRange {
                        start: base + one.start,
                        end: base + one.end,
                    },
                };
            } else {
                let parts =
                    Multipart::new(&ranges, reply.content_type.as_deref(), len, next_boundary())
                        .shifted(base);
                reply.content_type = Some(parts.content_type().to_string().into());
                reply.body = Body::Multipart { file, parts };
            }
        }
    }
    Ok(())
}

/// `Accept-Ranges: bytes`, unless the reply carries one already (a cached
/// upstream's).
fn accept(reply: &mut Reply) {
    reply.accept_ranges = field(reply, "Accept-Ranges").is_none();
}

/// nginx numbers multipart boundaries with a per-process counter.
fn next_boundary() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
