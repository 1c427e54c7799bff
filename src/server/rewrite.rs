//! The rewrite phases: running a server's or a location's rewrite script
//! (nginx's `ngx_http_rewrite_module`). Today the script holds `return`;
//! `rewrite`, `set`, `if` and `break` join it as instructions of the same
//! list, run here, so that the phase engine needs no new cases for them.

use crate::config::model::{Return, RewriteOp};
use crate::http::conditional;
use crate::http::status::Status;

use super::reply::{Body, Reply};
use super::request::Req;
use super::static_file::absolute_url;

/// How a script ended.
pub enum Flow {
    /// Go on with the next phase.
    Continue,
    /// Answer with this reply now (`return`).
    Reply(Box<Reply>),
}

/// Runs `script` for `r`.
// `return` is the only instruction until `rewrite`, `set` and `if` join it;
// the loop is the shape they need.
#[allow(clippy::never_loop)]
pub fn run(r: &mut Req<'_>, script: &[RewriteOp]) -> Flow {
    for op in script {
        match op {
            RewriteOp::Return(ret) => return Flow::Reply(Box::new(reply_return(r, ret))),
        }
    }
    Flow::Continue
}

/// `return code [text|URL]`.
pub fn reply_return(r: &Req<'_>, ret: &Return) -> Reply {
    let status = Status(ret.code);
    let Some(text) = &ret.text else {
        return Reply::special(status);
    };
    if crate::config::set_server::REDIRECT_CODES.contains(&ret.code) {
        let text = r.expand_lossy(text);
        let mut reply = Reply::special(status);
        reply.location = Some(if text.starts_with('/') {
            absolute_url(r, &text)
        } else {
            text
        });
        return reply;
    }
    let mut reply = Reply::new(status, Body::Bytes(r.expand(text)));
    reply.content_type = Some(r.conf.default_type.clone());
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
