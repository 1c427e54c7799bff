//! The gzip filter's header part (`ngx_http_gzip_header_filter`) and the
//! test of whether a request may get gzip at all (`ngx_http_gzip_ok`,
//! which `gzip_static` and `gunzip` ask too).
//!
//! A reply is compressed when `gzip` is on, its status is 200, 403 or 404,
//! it has no `Content-Encoding`, it is not known to be shorter than
//! `gzip_min_length`, its type is in `gzip_types`, and the request accepts
//! gzip under `gzip_disable`, `gzip_http_version` and `gzip_proxied`.

use crate::body::gzip::GzipOptions;
use crate::config::filter_model::{GzipHttpVersion, GzipProxied};
use crate::config::inherit::LocConf;
use crate::http::date::parse_http_date;
use crate::http::gzip::{accepts_gzip, has_token, is_msie6};
use crate::http::request::Version;

use super::{Passing, body_changes, field, has_content_encoding, mime};
use crate::server::core::reply::Reply;
use crate::server::core::request::Req;

/// The statuses gzip compresses.
const STATUSES: [u16; 3] = [200, 403, 404];

/// Decides whether `reply` is compressed; if so, sets its head
/// (`Content-Encoding: gzip`, no length, no ranges, a weak `ETag`) and
/// returns how to compress its body.
pub fn header(
    r: &Req<'_>,
    conf: &LocConf,
    reply: &mut Reply,
    p: &mut Passing,
) -> Option<GzipOptions> {
    if !conf.gzip
        || !STATUSES.contains(&reply.status.0)
        || has_content_encoding(reply)
        || p.length.is_some_and(|l| l < conf.gzip_min_length)
        || !conf.gzip_types.matches(mime(reply))
    {
        return None;
    }
    p.vary = true;
    if !gzip_ok(r, conf, Some(reply)) {
        return None;
    }
    reply.extra.push(("Content-Encoding".into(), "gzip".into()));
    body_changes(reply, p);
    Some(GzipOptions {
        level: conf.gzip_comp_level,
        piece: usize::try_from(conf.gzip_buffers.1).unwrap_or(usize::MAX),
        no_buffer: conf.gzip_no_buffer,
        postpone: conf.postpone_gzipping,
        flush_when_idle: true,
    })
}

/// `ngx_http_gzip_ok`: whether the client may get a gzip answer. `reply`
/// is the response so far (its `Expires`, `Cache-Control`,
/// `Last-Modified` and `ETag` matter to `gzip_proxied`); `None` before a
/// response exists (`gzip_static`).
pub fn gzip_ok(r: &Req<'_>, conf: &LocConf, reply: Option<&Reply>) -> bool {
    if !r.is_main() {
        // A subrequest's output joins its parent's, which gzip compresses.
        return false;
    }
    let h = r.head;
    let Some(ae) = h.header("Accept-Encoding") else {
        return false;
    };
    if !accepts_gzip(ae) {
        return false;
    }
    let ua = h.user_agent.as_deref().unwrap_or("");
    if conf.gzip_disable_msie6 && is_msie6(ua.as_bytes()) {
        return false;
    }
    let version = match h.version {
        Version::Http09 => None,
        Version::Http10 => Some(GzipHttpVersion::V10),
        Version::Http11 => Some(GzipHttpVersion::V11),
    };
    if version.is_none_or(|v| v < conf.gzip_http_version) {
        return false;
    }
    if h.header("Via").is_some() && !proxied_ok(r, conf, reply) {
        return false;
    }
    if h.user_agent.is_some() && conf.gzip_disable.iter().any(|re| re.re.is_match(ua)) {
        return false;
    }
    true
}

/// `gzip_proxied` for a request that came through a proxy.
fn proxied_ok(r: &Req<'_>, conf: &LocConf, reply: Option<&Reply>) -> bool {
    let p = conf.gzip_proxied;
    if p.contains(GzipProxied::OFF) {
        return false;
    }
    if p.contains(GzipProxied::ANY) {
        return true;
    }
    if p.contains(GzipProxied::AUTH) && r.head.header("Authorization").is_some() {
        return true;
    }
    let Some(reply) = reply else {
        // No response headers yet (`gzip_static`): none of the tests
        // below can refuse, as in nginx at that point.
        return true;
    };
    if let Some(expires) = field(reply, "Expires") {
        if !p.contains(GzipProxied::EXPIRED) {
            return false;
        }
        let Some(expires) = parse_http_date(expires) else {
            return false;
        };
        let date = match reply.date.as_deref() {
            Some(d) => match parse_http_date(d) {
                Some(d) => d,
                None => return false,
            },
            None => crate::http::date::unix_secs(crate::metrics::timed::wall_now()),
        };
        return expires < date;
    }
    let cc: Vec<&str> = reply
        .extra
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("Cache-Control"))
        .map(|(_, v)| v.as_str())
        .collect();
    if !cc.is_empty() {
        return (p.contains(GzipProxied::NO_CACHE) && has_token(cc.iter().copied(), "no-cache"))
            || (p.contains(GzipProxied::NO_STORE) && has_token(cc.iter().copied(), "no-store"))
            || (p.contains(GzipProxied::PRIVATE) && has_token(cc.iter().copied(), "private"));
    }
    let last_modified = reply.last_modified.is_some() || field(reply, "Last-Modified").is_some();
    if p.contains(GzipProxied::NO_LAST_MODIFIED) && last_modified {
        return false;
    }
    let etag = reply.etag.is_some() || field(reply, "ETag").is_some();
    if p.contains(GzipProxied::NO_ETAG) && etag {
        return false;
    }
    true
}
