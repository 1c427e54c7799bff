//! The output filters a final reply goes through before it is sent, in
//! nginx's order (`auto/modules`: the header filters run gunzip → charset →
//! [ssi] → gzip → range; the body filters range → gunzip → charset → [ssi]
//! → gzip):
//!
//! - [`gunzip`]: a gzip body for a client without gzip is decompressed;
//! - [`charset`]: `; charset=` in the type, and the body recoded;
//! - [`gzip`]: the body compressed, `Content-Encoding: gzip`;
//! - [`range`]: `Range` answered on a whole 200 (206, multipart, 416).
//!
//! Each header filter looks at the reply and may change its head; the body
//! filters it asks for are then applied innermost first, each one taking a
//! [`Body`] and giving a new one ([`into_source`] makes any body a stream,
//! a file read through the file layer). A filter that is to come (SSI)
//! takes its place in [`run`] the same way.
//!
//! Must not: wait. Filters only decide and wrap; the bytes move when the
//! body is sent.

pub mod charset;
pub mod gunzip;
pub mod gzip;
pub mod range;

use crate::body::Source;
use crate::body::source::Pieces;
use crate::http::request::Method;
use crate::io::stream::{FileSource, Reader, Segment};

use super::phases::Handled;
use super::reply::{Body, Reply};
use super::request::Req;

/// What the header filters learn about a reply as it passes them.
#[derive(Clone, Copy, Debug)]
pub struct Passing {
    /// The length the reply will have, if known (nginx's
    /// `content_length_n`); a filter that changes the length clears it.
    pub length: Option<u64>,
    /// `Vary: Accept-Encoding` applies (nginx's `r->gzip_vary`).
    pub vary: bool,
}

/// Runs the filters on a final reply. `Err`: the range filter found the
/// `Range` unsatisfiable; the caller answers the 416 given instead (as
/// nginx finalizes a request with the code a filter returns, so that
/// `error_page` applies).
pub fn run(h: &mut Handled<'_>, r: &Req<'_>) -> Result<(), Box<Reply>> {
    let conf = h.conf;
    let reply = &mut h.reply;
    if reply.abort || matches!(reply.body, Body::Upgrade(_)) {
        return Ok(());
    }
    let mut p = Passing {
        length: reply.announced_length(),
        vary: reply.gzip_vary,
    };
    let gunzip = gunzip::header(r, conf, reply, &mut p);
    let recode = charset::header(r, conf, reply, &mut p);
    let gzip = gzip::header(r, conf, reply, &mut p);
    charset::fold(reply);
    range::header(r, conf, reply, &p)?;
    reply.gzip_vary = p.vary && conf.gzip_vary;
    if gunzip.is_none() && recode.is_none() && gzip.is_none() {
        return Ok(());
    }
    if r.head.method == Method::Head {
        // No body is sent: none is made, but a length the filters cleared
        // must not be announced from the body the handler gave.
        if p.length.is_none() {
            reply.body = Body::Stream(Box::new(Pieces::new(Vec::new(), None)));
        }
        return Ok(());
    }
    let reader = Reader {
        pool: h.pool.clone(),
        fast: conf.aio_fast_path,
    };
    let body = std::mem::replace(&mut reply.body, Body::Empty);
    let mut src = into_source(body, &reader);
    // Streams from files never pause for long: no flush on their waits.
    let from_file = src.1;
    if let Some(piece) = gunzip {
        src.0 = Box::new(crate::body::gunzip::Gunzipped::new(src.0, piece));
    }
    if let Some(recoder) = recode {
        src.0 = Box::new(crate::body::recode::Recoded::new(src.0, recoder));
    }
    if let Some(mut o) = gzip {
        o.flush_when_idle = !from_file;
        src.0 = Box::new(crate::body::gzip::Gzipped::new(src.0, o));
    }
    reply.body = Body::Stream(src.0);
    Ok(())
}

/// Any body as a stream (with whether it comes from a file): bytes as one
/// piece, a file or its multipart ranges read through the file layer as
/// `reader` says.
pub fn into_source(body: Body, reader: &Reader) -> (Box<dyn Source>, bool) {
    match body {
        Body::Empty | Body::Upgrade(_) => (Box::new(Pieces::new(Vec::new(), Some(0))), false),
        Body::Bytes(b) => {
            let len = b.len() as u64;
            (Box::new(Pieces::new(vec![Ok(b.into())], Some(len))), false)
        }
        Body::File { file, range } => (
            Box::new(FileSource::range(
                file,
                range.start,
                range.end,
                reader.clone(),
            )),
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
            (
                Box::new(FileSource::new(file, segments, reader.clone())),
                true,
            )
        }
        Body::Stream(s) => (s, false),
    }
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
    if let Some(e) = reply.etag.take() {
        reply.etag = weak_etag(e);
    }
    let mut i = 0;
    while i < reply.extra.len() {
        if reply.extra[i].0.eq_ignore_ascii_case("ETag") {
            let v = std::mem::take(&mut reply.extra[i].1);
            match weak_etag(v) {
                Some(w) => {
                    reply.extra[i].1 = w;
                    i += 1;
                }
                None => {
                    reply.extra.remove(i);
                }
            }
        } else {
            i += 1;
        }
    }
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
        assert_eq!(reply.extra, vec![("X".to_string(), "y".to_string())]);
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
