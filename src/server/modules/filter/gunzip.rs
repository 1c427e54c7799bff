//! The gunzip filter's header part (`ngx_http_gunzip_header_filter`): with
//! `gunzip on`, a reply in `Content-Encoding: gzip` goes to a client that
//! does not accept gzip decompressed, without the encoding, its length or
//! its ranges. `Vary: Accept-Encoding` applies either way.

use crate::config::inherit::LocConf;

use super::gzip::gzip_ok;
use super::{Passing, body_changes, field};
use crate::server::core::reply::Reply;
use crate::server::core::request::Req;

/// Decides whether `reply` is decompressed; if so, sets its head and
/// returns the size of the pieces to hand on (`gunzip_buffers`).
pub fn header(r: &Req<'_>, conf: &LocConf, reply: &mut Reply, p: &mut Passing) -> Option<usize> {
    if !conf.gunzip
        || !field(reply, "Content-Encoding").is_some_and(|e| e.eq_ignore_ascii_case("gzip"))
    {
        return None;
    }
    p.vary = true;
    if gzip_ok(r, conf, Some(reply)) {
        return None;
    }
    if let Some(i) = reply
        .extra
        .iter()
        .position(|(n, _)| n.eq_ignore_ascii_case("Content-Encoding"))
    {
        reply.extra.remove(i);
    }
    body_changes(reply, p);
    Some(usize::try_from(conf.gunzip_buffers.1).unwrap_or(usize::MAX))
}
