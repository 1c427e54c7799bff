//! Redirects nowait makes itself, as nginx's core and header filter make
//! them: the scheme, host and port a relative `Location` gets
//! (`absolute_redirect`, `server_name_in_redirect`, `port_in_redirect`),
//! the `auto_redirect` of a location named with a trailing `/` that passes
//! requests upstream, and the MSIE refresh page (`msie_refresh`) and error
//! page padding (`msie_padding`).
//!
//! Owns: the text of `Location` and of the pages these make. Must not:
//! decide whether to redirect (the phases and handlers do).

use crate::config::inherit::LocConf;
use crate::config::model::{Location, LocationMatch};
use crate::http::status::Status;

use crate::server::core::reply::{Body, Reply};
use crate::server::core::request::Req;

/// What nginx appends to error pages for MSIE and Chrome, so that they show
/// the server's page rather than their own (`ngx_http_msie_padding`).
pub const MSIE_PADDING: &str = concat!(
    "<!-- a padding to disable MSIE and Chrome friendly error page -->\r\n",
    "<!-- a padding to disable MSIE and Chrome friendly error page -->\r\n",
    "<!-- a padding to disable MSIE and Chrome friendly error page -->\r\n",
    "<!-- a padding to disable MSIE and Chrome friendly error page -->\r\n",
    "<!-- a padding to disable MSIE and Chrome friendly error page -->\r\n",
    "<!-- a padding to disable MSIE and Chrome friendly error page -->\r\n",
);

/// The refresh page's text before the URL (`ngx_http_msie_refresh_head`).
const REFRESH_HEAD: &str = "<html><head><meta http-equiv=\"Refresh\" content=\"0; URL=";
/// The refresh page's text after the URL (`ngx_http_msie_refresh_tail`).
const REFRESH_TAIL: &str = "\"></head><body></body></html>\r\n";

/// The port that goes without saying in an `http://` URL.
const HTTP_PORT: u16 = 80;

/// `Location` as the header filter writes it: a path made absolute with
/// the request's host (the server's name under `server_name_in_redirect`,
/// the local address without a host) and, under `port_in_redirect`, the
/// local port unless it is 80.
pub fn absolute(r: &Req<'_>, conf: &LocConf, path: &str) -> String {
    let host = if conf.server_name_in_redirect {
        r.server.name().to_string()
    } else {
        match &r.head.host {
            Some(h) if !h.is_empty() => h.clone(),
            // `unix:/path` on a unix-domain socket (nginx's
            // `ngx_connection_local_sockaddr` text), never bracketed.
            _ if r.local.unix_path().is_some() => {
                return with_port(r, conf, r.local.host_text(), path);
            }
            _ => r.local.host_text(),
        }
    };
    let host = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host
    };
    with_port(r, conf, host, path)
}

/// `http://host[:port]path`: the port under `port_in_redirect` unless it
/// is 80 (a unix-domain socket has none: 0, never written).
fn with_port(r: &Req<'_>, conf: &LocConf, host: String, path: &str) -> String {
    let port = r.local.port();
    if conf.port_in_redirect && port != HTTP_PORT && port != 0 {
        format!("http://{host}:{port}{path}")
    } else {
        format!("http://{host}{path}")
    }
}

/// The `Location` a reply finally carries: a path made absolute when the
/// location where the request ended says so.
pub fn finish_location(reply: &mut Reply, r: &Req<'_>, conf: &LocConf) {
    if let Some(loc) = &reply.location {
        if loc.starts_with('/') && conf.absolute_redirect {
            reply.location = Some(absolute(r, conf, loc));
        }
    }
}

/// The 301 of nginx's `auto_redirect`: to the location's name, escaped,
/// with the request's arguments.
pub fn auto_redirect(r: &Req<'_>, l: &Location) -> Reply {
    let name = match &l.matcher {
        LocationMatch::Exact(s) | LocationMatch::Prefix(s) | LocationMatch::PrefixNoRegex(s) => {
            s.as_str()
        }
        _ => "/",
    };
    let mut out = Vec::with_capacity(name.len() + 16);
    crate::http::uri::escape_uri(name.as_bytes(), &mut out);
    let mut location = String::from_utf8_lossy(&out).into_owned();
    if let Some(args) = r.args() {
        if !args.is_empty() {
            location.push('?');
            location.push_str(&args);
        }
    }
    let mut reply = Reply::special(Status::MOVED_PERMANENTLY);
    reply.location = Some(location);
    reply
}

/// Whether the request comes from MSIE (nginx's `r->headers_in.msie`).
pub fn from_msie(r: &Req<'_>) -> bool {
    r.head
        .header("user-agent")
        .is_some_and(|ua| crate::http::user_agent::classify(ua).msie)
}

/// Turns a 301 or 302 special reply into nginx's refresh page for MSIE
/// (`ngx_http_send_refresh`): a 200 whose page sends the browser on, with
/// no `Location`.
pub fn msie_refresh(reply: &mut Reply) {
    let Some(location) = reply.location.take() else {
        return;
    };
    let mut page = String::from(REFRESH_HEAD);
    for &c in location.as_bytes() {
        if c <= 0x20 || c >= 0x7f || matches!(c, b'"' | b'\'' | b'%') {
            page.push_str(&format!("%{c:02X}"));
        } else {
            page.push(char::from(c));
        }
    }
    page.push_str(REFRESH_TAIL);
    reply.status = Status::OK;
    reply.body = Body::Bytes(page.into_bytes());
    reply.content_type = Some("text/html".into());
    reply.last_modified = None;
    reply.etag = None;
    reply.accept_ranges = false;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refresh_page_escapes_its_url() {
        let mut reply = Reply::special(Status::MOVED_PERMANENTLY);
        reply.location = Some("space ".into());
        msie_refresh(&mut reply);
        let Body::Bytes(page) = &reply.body else {
            panic!("a page")
        };
        assert_eq!(
            String::from_utf8_lossy(page),
            "<html><head><meta http-equiv=\"Refresh\" content=\"0; URL=space%20\"></head><body></body></html>\r\n"
        );
        assert_eq!(reply.status, Status::OK);
        assert!(reply.location.is_none());
    }
}
