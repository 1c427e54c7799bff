//! The rewrite phases: running a server's or a location's rewrite script,
//! as nginx's `ngx_http_rewrite_handler` runs the codes of
//! `ngx_http_script.c`. The instructions are those of
//! [`crate::config::script`]: `rewrite`, `return`, `set`, `if` and `break`,
//! one list per server and per location, so the phase engine
//! ([`crate::server::core::phases`]) only asks "run this script" and reads how it ended
//! ([`Flow`]).
//!
//! nginx's rules kept here: a `rewrite` without a flag lets the script go
//! on and makes the location be searched again at its end; `last` stops
//! and searches again; `break` (flag or directive) stops and stays; a
//! redirect stops with a reply. A true `if` in a location moves the request
//! into the `if`'s anonymous location, runs the block's instructions, and
//! the enclosing script then goes on after the block (so a later true `if`
//! moves the request again, as in nginx). A failed match forgets the
//! captures. `rewrite_log` writes nginx's `notice` lines.
//!
//! ## Scripts that wait
//!
//! Only a file test (`if (-f …)`) can wait, on the file system. A script
//! runs synchronously, on the caller's stack, until it ends or meets a
//! file test; then [`run`] returns [`Flow::Wait`] with a [`Paused`] script:
//! the `if` it stopped at, the state of the run, and the path to look at.
//! The phase engine's synchronous part (`Walk::route`) hands that to its
//! asynchronous part (`Walk::content`), which awaits [`Paused::finish`]:
//! the `stat()` goes through the file layer (on the loop when it cannot
//! block, through the pool otherwise) and the script goes on from the `if`.
//! A script without file tests therefore never pays for a future, and one
//! with them never blocks a loop. A paused script is resumed by index, not
//! by a saved stack: `if` blocks do not nest (nginx refuses it), so the
//! index of the `if` in its script is the whole position.

use std::borrow::Cow;
use std::path::PathBuf;

use crate::config::model::{Return, Rewrite, RewriteFlag, RewriteOp, SetTarget, SetVar};
use crate::config::template::{Part, Template, Var};
use crate::http::conditional;
use crate::http::escape;
use crate::http::status::Status;
use crate::io::file::FileLayer;
use crate::log::Level;

use crate::server::core::reply::{Body, Reply};
use crate::server::core::request::Req;
use crate::server::core::script_if::{self, Eval};

/// The first status `return` without text answers as an error (nginx's
/// `NGX_HTTP_BAD_REQUEST`).
const ERROR_STATUSES: u16 = 400;

/// How a script ended.
pub enum Flow<'a> {
    /// Go on with the next phase where the request stands.
    Continue,
    /// The URI changed (`rewrite` without a flag, or `last`): search the
    /// location again (nginx's post-rewrite phase).
    Relocate,
    /// Answer with this reply now (`return`, a redirect, an error).
    Reply(Box<Reply>),
    /// A file test must ask the file system: await [`Paused::finish`].
    Wait(Paused<'a>),
}

/// What one run of a script carries from instruction to instruction.
#[derive(Clone, Copy, Debug)]
struct Run {
    /// `rewrite_log` where the script started (nginx's `e->log`).
    log: bool,
    /// Whether a `rewrite` changed the URI for a new location search
    /// (nginx's `r->uri_changed`).
    uri_changed: bool,
}

/// A script stopped at an `if` whose file test needs `stat()`.
pub struct Paused<'a> {
    /// The script.
    script: &'a [RewriteOp],
    /// The index of the waiting `if` in `script`.
    at: usize,
    /// The run's state.
    run: Run,
    /// The path to look at.
    path: PathBuf,
}

/// What one instruction did.
enum Step<'a> {
    /// Go on with the next instruction.
    Next,
    /// The script is over.
    Stop(Flow<'a>),
}

/// Runs `script` for `r` until it ends or waits.
pub fn run<'a>(r: &mut Req<'a>, script: &'a [RewriteOp]) -> Flow<'a> {
    if script.is_empty() {
        return Flow::Continue;
    }
    let run = Run {
        log: r.conf.rewrite_log,
        uri_changed: false,
    };
    exec(r, script, 0, None, run)
}

impl<'a> Paused<'a> {
    /// Makes the file test through `files` and runs the script on from its
    /// `if`, awaiting any later file test the same way, until it ends.
    pub async fn finish(self, r: &mut Req<'a>, files: FileLayer<'_>) -> Flow<'a> {
        let mut p = self;
        loop {
            let Some(RewriteOp::If(op)) = p.script.get(p.at) else {
                unreachable!("a script pauses at an `if` only")
            };
            let crate::config::model::Condition::File { test, negative, .. } = op.cond else {
                unreachable!("only a file test pauses a script")
            };
            let lookup = crate::server::core::file_rules::lookup(
                r,
                r.conf,
                p.path.as_os_str().as_encoded_bytes(),
            );
            let stat = crate::io::open_cache::stat(files, &p.path, &lookup).await;
            let truth = match script_if::file_truth(r, test, negative, &p.path, stat) {
                Ok(t) => t,
                Err(reply) => return Flow::Reply(reply),
            };
            match exec(r, p.script, p.at, Some(truth), p.run) {
                Flow::Wait(next) => p = next,
                done => return done,
            }
        }
    }
}

/// Runs `script` from instruction `from`; `known` is the truth of the
/// condition at `from` when a file test already gave it.
fn exec<'a>(
    r: &mut Req<'a>,
    script: &'a [RewriteOp],
    from: usize,
    mut known: Option<bool>,
    mut run: Run,
) -> Flow<'a> {
    for (i, op) in script.iter().enumerate().skip(from) {
        let step = match op {
            RewriteOp::If(f) => {
                let truth = match known.take() {
                    Some(t) => t,
                    None => match script_if::eval(r, &f.cond, run.log) {
                        Eval::Known(t) => t,
                        Eval::Stat(path) => {
                            return Flow::Wait(Paused {
                                script,
                                at: i,
                                run,
                                path,
                            });
                        }
                    },
                };
                if !truth {
                    continue;
                }
                if let Some(l) = &f.location {
                    r.enter(Some(l));
                }
                block(r, &f.script, &mut run)
            }
            op => instruction(r, op, &mut run),
        };
        if let Step::Stop(flow) = step {
            return flow;
        }
    }
    end(run)
}

/// Runs the instructions of an `if` block.
fn block<'a>(r: &mut Req<'a>, script: &[RewriteOp], run: &mut Run) -> Step<'a> {
    for op in script {
        if let Step::Stop(flow) = instruction(r, op, run) {
            return Step::Stop(flow);
        }
    }
    Step::Next
}

/// How a script that ran to its end ends.
fn end<'a>(run: Run) -> Flow<'a> {
    if run.uri_changed {
        Flow::Relocate
    } else {
        Flow::Continue
    }
}

/// Runs one instruction other than `if`.
fn instruction<'a>(r: &mut Req<'a>, op: &RewriteOp, run: &mut Run) -> Step<'a> {
    match op {
        RewriteOp::Return(ret) => Step::Stop(Flow::Reply(Box::new(reply_return(r, ret)))),
        RewriteOp::Break => {
            // ngx_http_script_break_code: a changed URI stays where it is.
            if run.uri_changed {
                r.valid_location = false;
                run.uri_changed = false;
            }
            Step::Stop(Flow::Continue)
        }
        RewriteOp::Set(s) => {
            set(r, s);
            Step::Next
        }
        RewriteOp::Rewrite(rw) => rewrite(r, rw, run),
        // The table allows no `if` inside an `if`.
        RewriteOp::If(_) => Step::Next,
    }
}

/// `set $variable value`.
fn set(r: &mut Req<'_>, s: &SetVar) {
    let value = r.expand(&s.value);
    match &s.target {
        SetTarget::Named(name) => r.set_user_var(name, value),
        SetTarget::Args => r.args = Some(Some(lossy(value))),
        SetTarget::LimitRate => {
            let text = lossy(value);
            match crate::config::value::size(&text) {
                Some(n) => r.limit_rate = Some(n),
                None => r.error_log().log(
                    Level::Error,
                    Some(r.conn_no),
                    format_args!("invalid $limit_rate \"{text}\"{}", r.log_context()),
                ),
            }
        }
    }
}

/// Logs a `rewrite_log` line at `notice`.
fn notice(r: &Req<'_>, msg: std::fmt::Arguments<'_>) {
    r.error_log().log(
        Level::Notice,
        Some(r.conn_no),
        format_args!("{msg}{}", r.log_context()),
    );
}

/// `rewrite regex replacement [flag]` (`ngx_http_script_regex_start_code`
/// and `…_regex_end_code`).
fn rewrite<'a>(r: &mut Req<'a>, rw: &Rewrite, run: &mut Run) -> Step<'a> {
    let matched = r.regex_exec(&rw.regex, &r.uri);
    if run.log {
        script_if::log_match(r, &rw.pattern, &r.uri, matched);
    }
    if !matched {
        *r.captures.borrow_mut() = None;
        return Step::Next;
    }
    // Captures copied into arguments or a redirect are escaped again when
    // the request's URI was escaped (nginx's quoted_uri / plus_in_uri).
    let escape = r.quoted_uri() || r.plus_in_uri();
    if let RewriteFlag::Redirect(code) = rw.flag {
        let text = expand_replacement(r, &rw.uri, escape);
        let mut location = escape::unescape_redirect(&text);
        if rw.add_args {
            if let Some(args) = r.args().filter(|a| !a.is_empty()) {
                location.push(if rw.args_in_text { b'&' } else { b'?' });
                location.extend_from_slice(args.as_bytes());
            }
        }
        let location = lossy(location);
        if run.log {
            notice(r, format_args!("rewritten redirect: \"{location}\""));
        }
        let mut reply = Reply::special(Status(code));
        // The header filter makes a path absolute (`absolute_redirect`).
        reply.location = Some(location);
        return Step::Stop(Flow::Reply(Box::new(reply)));
    }
    // ngx_http_script_regex_start_code: a rewritten URI is the request's
    // own no longer (`r->internal`, and `r->valid_unparsed_uri` cleared):
    // the proxy sends the new one, escaped, and `internal` locations take
    // it.
    r.internal = true;
    if rw.flag == RewriteFlag::Break {
        r.valid_location = false;
        run.uri_changed = false;
    } else {
        run.uri_changed = true;
    }
    let uri = expand_replacement(r, &rw.uri, false);
    match &rw.args {
        Some(t) => {
            let mut args = expand_replacement(r, t, escape);
            if rw.add_args {
                if let Some(old) = r.args().filter(|a| !a.is_empty()) {
                    args.push(b'&');
                    args.extend_from_slice(old.as_bytes());
                }
            }
            r.args = Some(Some(lossy(args)));
        }
        // A replacement ending with `?` drops the arguments.
        None if !rw.add_args && r.args().is_some() => r.args = Some(Some(String::new())),
        None => {}
    }
    let uri = lossy(uri);
    if run.log {
        let args = r.args().map(Cow::into_owned).unwrap_or_default();
        notice(
            r,
            format_args!("rewritten data: \"{uri}\", args: \"{args}\""),
        );
    }
    if uri.is_empty() {
        r.error_log().log(
            Level::Error,
            Some(r.conn_no),
            format_args!("the rewritten URI has a zero length{}", r.log_context()),
        );
        return Step::Stop(Flow::Reply(Box::new(Reply::special(
            Status::INTERNAL_SERVER_ERROR,
        ))));
    }
    r.uri = Cow::Owned(uri);
    match rw.flag {
        RewriteFlag::Last => Step::Stop(Flow::Relocate),
        RewriteFlag::Break => Step::Stop(Flow::Continue),
        RewriteFlag::Continue | RewriteFlag::Redirect(_) => Step::Next,
    }
}

/// Expands a replacement; with `escape_captures`, `$1`…`$9` are escaped as
/// arguments (`ngx_http_script_copy_capture_code`); other variables are
/// copied as they are.
fn expand_replacement(r: &Req<'_>, t: &Template, escape_captures: bool) -> Vec<u8> {
    if !escape_captures {
        return r.expand(t);
    }
    let mut out = Vec::new();
    for p in &t.parts {
        match p {
            Part::Literal(s) => out.extend_from_slice(s.as_bytes()),
            Part::Var(Var::Capture(n)) => {
                if let Some(c) = r.captures.borrow().as_ref() {
                    escape::escape_args(c.get(usize::from(*n)).as_bytes(), &mut out);
                }
            }
            Part::Var(v) => {
                if let Some(val) = r.var(v, None) {
                    out.extend_from_slice(&val);
                }
            }
        }
    }
    out
}

fn lossy(v: Vec<u8>) -> String {
    match String::from_utf8(v) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// `return code [text|URL]` (`ngx_http_script_return_code`): a redirect
/// status with a URL, or a status from 400 up without text, is a special
/// response (`error_page` applies); anything else is sent as a response
/// with the text as its body (empty without one), typed by the URI's
/// extension as nginx's `ngx_http_send_response` does.
pub fn reply_return(r: &Req<'_>, ret: &Return) -> Reply {
    let status = Status(ret.code);
    let redirect = crate::config::set_rewrite::REDIRECT_CODES.contains(&ret.code);
    let body = match &ret.text {
        Some(text) if redirect => {
            let text = r.expand_lossy(text);
            let mut reply = Reply::special(status);
            reply.location = Some(text);
            return reply;
        }
        Some(text) => r.expand(text),
        None if redirect => {
            // nginx sets the (empty) text as the Location all the same.
            let mut reply = Reply::special(status);
            reply.location = Some(String::new());
            return reply;
        }
        None if ret.code >= ERROR_STATUSES => return Reply::special(status),
        None => Vec::new(),
    };
    let mut reply = Reply::new(status, Body::Bytes(body));
    reply.content_type = Some(crate::server::modules::static_file::content_type(
        r.conf, &r.uri,
    ));
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
                reply = Reply::special(Status::PRECONDITION_FAILED);
                // nginx's not-modified filter finalizes the request with
                // the 412 (`ngx_http_filter_finalize_request`): the
                // connection closes, whatever its head said.
                reply.close = true;
            }
        }
    }
    reply
}
