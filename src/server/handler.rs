//! From a parsed request to a reply: `return`, location selection, the
//! static file handler with its internal redirects (`index`), `error_page`,
//! and the headers every reply gets (`add_header`).

use std::sync::Arc;

use crate::config::inherit::LocConf;
use crate::config::model::{Aio, ErrorPage, Location, Return, Server};
use crate::http::request::Method;
use crate::http::status::Status;
use crate::io::Pool;
use crate::io::file::FileLayer;
use crate::log::Level;

use super::locate;
use super::reply::{ADD_HEADER_STATUSES, Body, Reply};
use super::request::Req;
use super::site::Site;
use super::static_file::{self, Served, absolute_url};
use crate::http::conditional;

/// The answer when a pool's queue is full. nginx answers 500; nowait
/// answers 503 Service Unavailable, because the condition is temporary
/// overload, not a fault, and clients and load balancers retry a 503
/// elsewhere or later.
pub const OVERFLOW_STATUS: Status = Status::SERVICE_UNAVAILABLE;

/// The methods a static location answers, for `Allow`.
pub const STATIC_METHODS: &str = "GET, HEAD";

/// nginx's limit on internal redirects per request (`index`, `error_page`).
pub const MAX_INTERNAL_REDIRECTS: u32 = 10;

/// A reply and the location settings it was produced under (the access log,
/// `send_timeout`, `sendfile` … come from there).
pub struct Handled<'a> {
    /// What to send.
    pub reply: Reply,
    /// The settings in force where the request ended.
    pub conf: &'a LocConf,
    /// The pool for this request's file operations, if `aio threads`.
    pub pool: Option<Arc<Pool>>,
}

/// The settings of the location `uri` selects, and the location.
fn select<'a>(server: &'a Server, uri: &str) -> (Option<&'a Location>, &'a LocConf) {
    let loc = locate::find(&server.locations, uri);
    (loc, loc.map_or(&server.conf, |l| &l.conf))
}

/// The pool `aio` names for this request, or the error to answer.
fn pool_for(site: &Site, r: &Req<'_>, conf: &LocConf) -> Result<Option<Arc<Pool>>, Status> {
    let Aio::Threads(name) = &conf.aio else {
        return Ok(None);
    };
    let name = r.expand(name);
    match site.pools.get(&name) {
        Some(p) => Ok(Some(p.clone())),
        None => {
            site.error_log.log(
                Level::Error,
                Some(r.conn_no),
                format_args!("thread pool \"{name}\" not found{}", r.log_context()),
            );
            Err(Status::INTERNAL_SERVER_ERROR)
        }
    }
}

/// `return code [text|URL]`.
fn reply_return(r: &Req<'_>, ret: &Return, conf: &LocConf) -> Reply {
    let status = Status(ret.code);
    let Some(text) = &ret.text else {
        return Reply::special(status);
    };
    let text = r.expand(text);
    if crate::config::set_server::REDIRECT_CODES.contains(&ret.code) {
        let mut reply = Reply::special(status);
        reply.location = Some(if text.starts_with('/') {
            absolute_url(r, &text)
        } else {
            text
        });
        return reply;
    }
    let mut reply = Reply::text(status, text, &conf.default_type);
    reply.content = true;
    if status == Status::OK {
        // nginx's not-modified filter sees `return` too: `If-None-Match: *`
        // matches any response.
        let h = r.head;
        let c = conditional::Conditions {
            if_modified_since: h.if_modified_since.as_deref(),
            if_unmodified_since: h.if_unmodified_since.as_deref(),
            if_match: h.if_match.as_deref(),
            if_none_match: h.if_none_match.as_deref(),
        };
        let v = conditional::Validators {
            last_modified: None,
            etag: None,
        };
        match conditional::evaluate(&c, &v, conditional::IfModifiedSince::Exact) {
            conditional::Outcome::Proceed => {}
            conditional::Outcome::NotModified => {
                reply = Reply::new(Status::NOT_MODIFIED, Body::Empty)
            }
            conditional::Outcome::PreconditionFailed => {
                reply = Reply::special(Status::PRECONDITION_FAILED)
            }
        }
    }
    reply
}

/// Serves `r` when that needs neither a file nor an `error_page` fetch:
/// `return`, the status page, a body too large. `None`: call [`handle`].
///
/// The answers that never wait are decided here, outside [`handle`]'s
/// future, whose state (the static file handler's and `error_page`'s) is
/// large enough that creating it cost a `return 200` more than deciding it.
pub fn handle_now<'a>(site: &'a Site, r: &mut Req<'a>) -> Option<Handled<'a>> {
    let server = r.server;
    let (reply, conf) = if let Some(ret) = &server.ret {
        (reply_return(r, ret, &server.conf), &server.conf)
    } else {
        let (loc, conf) = select(server, &r.uri);
        let reply = immediate(site, r, loc, conf)?;
        (reply, conf)
    };
    if needs_error_page(&reply, conf) {
        return None;
    }
    let mut out = Handled {
        reply,
        conf,
        pool: None,
    };
    decorate(&mut out, r);
    Some(out)
}

/// The reply a location gives without touching files, if it does.
fn immediate(site: &Site, r: &Req<'_>, loc: Option<&Location>, conf: &LocConf) -> Option<Reply> {
    let max_body = conf.client_max_body_size;
    if max_body != 0 && r.head.content_length.is_some_and(|n| n > max_body) {
        site.error_log.log(
            Level::Error,
            Some(r.conn_no),
            format_args!(
                "client intended to send too large body: {} bytes{}",
                r.head.content_length.unwrap_or(0),
                r.log_context()
            ),
        );
        return Some(Reply::special(Status::REQUEST_ENTITY_TOO_LARGE));
    }
    if let Some(ret) = loc.and_then(|l| l.ret.as_ref()) {
        return Some(reply_return(r, ret, conf));
    }
    if loc.is_some_and(|l| l.status_page) {
        let text = crate::metrics::prometheus::render(&site.worker_metrics(), &site.pools);
        return Some(Reply::text(
            Status::OK,
            text,
            crate::metrics::prometheus::CONTENT_TYPE,
        ));
    }
    None
}

/// Whether an `error_page` replaces `reply`.
fn needs_error_page(reply: &Reply, conf: &LocConf) -> bool {
    reply.special
        && conf
            .error_pages
            .iter()
            .any(|p| p.codes.contains(&reply.status.0))
}

/// Serves `r` through its server's configuration.
pub async fn handle<'a>(site: &'a Site, r: &mut Req<'a>) -> Handled<'a> {
    let server = r.server;
    if let Some(ret) = &server.ret {
        let reply = reply_return(r, ret, &server.conf);
        return finish(site, r, reply, &server.conf, None, 0).await;
    }
    let mut redirects = 0;
    loop {
        let (loc, conf) = select(server, &r.uri);
        if let Some(reply) = immediate(site, r, loc, conf) {
            return finish(site, r, reply, conf, None, redirects).await;
        }
        let pool = match pool_for(site, r, conf) {
            Ok(p) => p,
            Err(status) => {
                return finish(site, r, Reply::special(status), conf, None, redirects).await;
            }
        };
        let files = FileLayer {
            pool: pool.as_ref(),
            fast: conf.aio_fast_path,
        };
        let uri = r.uri.clone();
        match static_file::serve(r, conf, loc, &uri, files).await {
            Served::Reply(reply) => return finish(site, r, *reply, conf, pool, redirects).await,
            Served::InternalRedirect(next) => {
                redirects += 1;
                if redirects > MAX_INTERNAL_REDIRECTS {
                    site.error_log.log(
                        Level::Error,
                        Some(r.conn_no),
                        format_args!("rewrite or internal redirection cycle while internally redirecting to \"{next}\"{}", r.log_context()),
                    );
                    let reply = Reply::special(Status::INTERNAL_SERVER_ERROR);
                    return finish(site, r, reply, conf, pool, redirects).await;
                }
                r.uri = next.into();
            }
            Served::Error(status, msg) => {
                if let Some(msg) = msg {
                    site.error_log.log(
                        Level::Error,
                        Some(r.conn_no),
                        format_args!("{msg}{}", r.log_context()),
                    );
                }
                return finish(site, r, Reply::special(status), conf, pool, redirects).await;
            }
            Served::Overflow(msg) => {
                // nginx's line, exactly: the pool's own message, no request context.
                site.error_log
                    .log(Level::Error, Some(r.conn_no), format_args!("{msg}"));
                let reply = Reply::special(OVERFLOW_STATUS);
                return finish(site, r, reply, conf, pool, redirects).await;
            }
        }
    }
}

/// Applies `error_page` (once: nginx's `recursive_error_pages off`), then
/// the page body and `add_header`.
async fn finish<'a>(
    site: &'a Site,
    r: &mut Req<'a>,
    reply: Reply,
    conf: &'a LocConf,
    pool: Option<Arc<Pool>>,
    redirects: u32,
) -> Handled<'a> {
    let mut out = Handled { reply, conf, pool };
    if needs_error_page(&out.reply, conf) {
        let status = out.reply.status;
        if let Some(page) = conf
            .error_pages
            .iter()
            .find(|p| p.codes.contains(&status.0))
        {
            if let Some(h) = error_page(site, r, page, status, redirects).await {
                out = h;
            }
        }
    }
    decorate(&mut out, r);
    out
}

/// Serves an `error_page` target; `None` keeps the original reply.
async fn error_page<'a>(
    site: &'a Site,
    r: &mut Req<'a>,
    page: &ErrorPage,
    status: Status,
    redirects: u32,
) -> Option<Handled<'a>> {
    let target = r.expand(&page.uri);
    if target.starts_with("http://") || target.starts_with("https://") {
        let code = match page.overwrite {
            Some(Some(c)) if [301, 302, 303, 307, 308].contains(&c) => c,
            _ => 302,
        };
        let mut reply = Reply::special(Status(code));
        reply.location = Some(target);
        return Some(Handled {
            reply,
            conf: &r.server.conf,
            pool: None,
        });
    }
    if redirects >= MAX_INTERNAL_REDIRECTS {
        return None;
    }
    let (loc, conf) = if target.starts_with('@') {
        let loc = locate::find_named(&r.server.locations, &target)?;
        (Some(loc), &loc.conf)
    } else {
        r.uri = target.clone().into();
        select(r.server, &target)
    };
    let mut reply = if let Some(ret) = loc.and_then(|l| l.ret.as_ref()) {
        reply_return(r, ret, conf)
    } else {
        let pool = pool_for(site, r, conf).ok()?;
        let files = FileLayer {
            pool: pool.as_ref(),
            fast: conf.aio_fast_path,
        };
        // The page is fetched with GET whatever the request's method, as nginx does.
        let uri = r.uri.clone();
        let mut as_get = r.head.clone();
        if as_get.method != Method::Head {
            as_get.method = Method::Get;
        }
        as_get.range = None;
        as_get.if_modified_since = None;
        as_get.if_none_match = None;
        as_get.if_match = None;
        as_get.if_unmodified_since = None;
        let sub = r.with_head(&as_get);
        match static_file::serve(&sub, conf, loc, &uri, files).await {
            Served::Reply(rep) => {
                let mut rep = *rep;
                rep.status = match page.overwrite {
                    Some(Some(c)) => Status(c),
                    Some(None) => rep.status,
                    None => status,
                };
                rep.special = false;
                rep.accept_ranges = false;
                rep.close = status.closes_connection();
                return Some(Handled {
                    reply: rep,
                    conf,
                    pool,
                });
            }
            Served::InternalRedirect(_) | Served::Error(..) | Served::Overflow(_) => return None,
        }
    };
    match page.overwrite {
        Some(Some(c)) => reply.status = Status(c),
        // nginx sends a page produced under `error_page` without `=` with
        // the error's status (`r->err_status` wins in
        // `ngx_http_send_header`); special replies (`return 302 …`, a bare
        // code) set their own status again.
        None if !reply.special => reply.status = status,
        Some(None) | None => {}
    }
    Some(Handled {
        reply,
        conf,
        pool: None,
    })
}

/// The page body of special replies and `add_header`.
fn decorate(h: &mut Handled<'_>, r: &Req<'_>) {
    let signature = crate::signature(h.conf.server_tokens);
    h.reply.fill_special_page(signature);
    let status = h.reply.status.0;
    if status == 405
        && !h
            .reply
            .extra
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("Allow"))
    {
        // RFC 9110 §15.5.6: a 405 must say what is allowed (nginx omits it).
        h.reply
            .extra
            .push(("Allow".to_string(), STATIC_METHODS.to_string()));
    }
    for a in &h.conf.add_headers {
        if a.always || ADD_HEADER_STATUSES.contains(&status) {
            h.reply.extra.push((a.name.clone(), r.expand(&a.value)));
        }
    }
}
