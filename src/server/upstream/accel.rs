//! `X-Accel-*`: what an upstream's response asks of the engine
//! (`ngx_http_upstream_process_headers`): serve another URI instead
//! (`X-Accel-Redirect`, keeping some of its fields), buffer or not, pace
//! the client. The plug-in reads the fields from its head into [`Accel`];
//! the engine acts on it.

use crate::http::request::Method;
use crate::http::status::Status;
use crate::log::Level;
use crate::upstream::head as uhead;

use super::{Proxied, reply};
use crate::server::core::reply::Reply;
use crate::server::core::request::Req;

/// What the upstream asked of this response through `X-Accel-*`.
#[derive(Debug, Default)]
pub struct Accel {
    /// `X-Accel-Redirect`: serve this URI (or `@name`) instead.
    pub redirect: Option<String>,
    /// `X-Accel-Buffering: yes|no`.
    pub buffering: Option<bool>,
    /// `X-Accel-Limit-Rate`: bytes per second (0: none).
    pub limit_rate: Option<u64>,
}

/// The header fields an `X-Accel-Redirect` response hands to the response
/// of the URI it names (`redirect` in nginx's `ngx_http_upstream_headers_in`).
const ACCEL_KEPT: [&str; 6] = [
    "Content-Type",
    "Set-Cookie",
    "Content-Disposition",
    "Cache-Control",
    "Expires",
    "Accept-Ranges",
];

/// `X-Accel-Redirect` (`ngx_http_upstream_process_headers`): keep the
/// fields nginx keeps, check the URI (`ngx_http_parse_unsafe_uri`: an
/// unsafe one is a 404), and turn the method into `GET` (but `HEAD`).
pub fn redirect(r: &mut Req<'_>, head: &uhead::ResponseHead, uri: String) -> Proxied {
    r.upstream.accel_kept = head
        .headers
        .iter()
        .filter(|(n, _)| {
            ACCEL_KEPT
                .iter()
                .any(|k| n.eq_ignore_ascii_case(k.as_bytes()))
        })
        .map(|(n, v)| {
            (
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )
        })
        .collect();
    if uri.starts_with('@') {
        return Proxied::Redirect(uri);
    }
    let Ok((path, args)) = crate::http::unsafe_uri::parse(uri.as_bytes()) else {
        r.error_log().log(
            Level::Error,
            Some(r.conn_no),
            format_args!("unsafe URI \"{uri}\" was detected{}", r.log_context()),
        );
        return reply(Reply::special(Status::NOT_FOUND));
    };
    if r.head.method != Method::Head {
        r.upstream.accel_get = true;
    }
    let mut target = String::from_utf8_lossy(&path).into_owned();
    if let Some(args) = args {
        target.push('?');
        target.push_str(&String::from_utf8_lossy(&args));
    }
    Proxied::Redirect(target)
}

/// Applies the fields an `X-Accel-Redirect` kept to the final reply: its
/// `Content-Type` replaces the handler's, its `Accept-Ranges` stands in
/// for the range filter's, the rest are added.
pub fn keep_accel_headers(reply: &mut Reply, r: &Req<'_>) {
    for (n, v) in &r.upstream.accel_kept {
        if n.eq_ignore_ascii_case("Content-Type") {
            reply.content_type = Some(v.clone().into());
            continue;
        }
        if n.eq_ignore_ascii_case("Accept-Ranges") {
            reply.accept_ranges = false;
        }
        reply
            .extra
            .retain(|(e, _)| !e.eq_ignore_ascii_case(n) || n.eq_ignore_ascii_case("Set-Cookie"));
        reply.extra.push((n.clone().into(), v.clone().into()));
    }
}
