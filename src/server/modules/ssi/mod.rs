//! The SSI filter (nginx's `ngx_http_ssi_filter_module`): responses of
//! `ssi_types` in a location with `ssi on` are parsed as they stream, and
//! their `<!--# … -->` commands replaced: `include` (a subrequest's output,
//! in place), `echo`, `set`, `if`/`elif`/`else`/`endif`, `config`,
//! `block`/`endblock`.
//!
//! - [`parse`]: the parser, nginx's state machine, fed piece by piece.
//! - [`expr`]: parameter values (`$variables`, escapes), `if` operands,
//!   `echo` encodings.
//! - [`command`]: what each command does.
//!
//! The header part ([`header_filter`]) decides, when a reply is final,
//! whether the filter applies, and for the main request drops
//! `Content-Length` and `Accept-Ranges`, and `Last-Modified` and `ETag`
//! unless `ssi_last_modified` (then the `ETag` becomes weak). The body part
//! ([`Filter`]) is a [`Source`] over the reply's body: it passes text on as
//! it reads it and never holds the body — only the output waiting behind an
//! included page that is not done yet (nginx's postpone filter), up to
//! [`POSTPONED_MAX`] before it stops reading.
//!
//! What the whole tree of an SSI page and its included pages shares —
//! variables `set` assigns, `block`s, the captures of an `if` regex — is
//! [`Shared`], as nginx keeps it in the main request's context; the rest
//! (`config` settings, `if` state) is each filter's own.

pub mod command;
pub mod expr;
pub mod parse;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::task::{Context, Poll};

use bytes::Bytes;

use crate::body::{Source, SourceError};
use crate::config::inherit::LocConf;
use crate::log::Level;

use crate::server::core::reply::Reply;
use crate::server::core::request::Req;
use crate::server::core::subrequest::{Env, Subrequest};
use parse::{Parser, Step};

/// `$date_local` and `$date_gmt`'s format unless `config timefmt` changes
/// it (nginx's `ngx_http_ssi_timefmt`).
pub const DEFAULT_TIMEFMT: &[u8] = b"%A, %d-%b-%Y %H:%M:%S %Z";

/// What a failed command outputs unless `config errmsg` changes it.
pub const DEFAULT_ERRMSG: &[u8] = b"[an error occurred while processing the directive]";

/// How much output may wait behind an unfinished included page before the
/// filter stops reading its own body (nginx's postpone filter has no bound).
pub const POSTPONED_MAX: usize = 256 * 1024;

/// One `block`: a name and the text (commands kept as text) up to its
/// `endblock`.
#[derive(Clone, Debug, Default)]
pub struct Block {
    /// The name, as written.
    pub name: Vec<u8>,
    /// The text.
    pub bufs: Vec<Bytes>,
}

/// The captures of the last `if` regular expression that matched (nginx's
/// `ctx->captures`): `$0` … `$9` of SSI while fewer than `count`.
#[derive(Clone, Debug, Default)]
pub struct Captures {
    /// The string matched.
    pub subject: Vec<u8>,
    /// Each group's span (`None`: the group did not take part).
    pub groups: Vec<Option<(usize, usize)>>,
}

/// The SSI state shared by a page and every page it includes.
#[derive(Clone, Debug, Default)]
pub struct Shared {
    /// Variables `set`, `include set=` and named captures assign, by
    /// lowercased name, in order.
    pub vars: Vec<(Vec<u8>, Vec<u8>)>,
    /// `block`s, in order; the first of a name is the one used.
    pub blocks: Vec<Block>,
    /// The last `if` regex's captures.
    pub captures: Option<Captures>,
}

impl Shared {
    /// The value `set` gave `name` (lowercased), or capture `$name`.
    pub fn get(&self, name: &[u8]) -> Option<Vec<u8>> {
        if let [d @ b'0'..=b'9'] = name {
            let i = usize::from(d - b'0');
            if let Some(c) = &self.captures {
                if i < c.groups.len() {
                    return Some(match c.groups[i] {
                        Some((a, b)) => c.subject[a..b].to_vec(),
                        None => Vec::new(),
                    });
                }
            }
        }
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    /// Sets `name` (lowercased) to `value`.
    pub fn set(&mut self, name: &[u8], value: Vec<u8>) {
        match self.vars.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => self.vars.push((name.to_vec(), value)),
        }
    }
}

/// Whether the filter processes a response of `content_type` under `conf`.
pub fn applies(conf: &LocConf, content_type: Option<&str>) -> bool {
    conf.ssi && conf.ssi_types.matches(content_type)
}

/// The header part of the filter (`ngx_http_ssi_header_filter`).
pub fn header_filter(reply: &mut Reply, r: &Req<'_>) {
    let conf = r.conf;
    let length = crate::server::modules::filter::content_length(reply, r);
    if length == Some(0) || !applies(conf, reply.content_type.as_deref()) {
        return;
    }
    reply.filters.ssi = true;
    if !r.is_main() {
        return;
    }
    reply.length_override = None;
    reply.accept_ranges = false;
    reply
        .extra
        .retain(|(n, _)| !n.eq_ignore_ascii_case("Accept-Ranges"));
    crate::server::modules::filter::validators(reply, conf.ssi_last_modified);
}

/// `$date_local` (`gmt` false) or `$date_gmt` now, formatted with
/// `timefmt` (`%s` alone: seconds since the epoch). `None` when the format
/// yields nothing, which nginx treats as a failure.
pub fn date_variable(timefmt: &[u8], gmt: bool) -> Option<Vec<u8>> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    if timefmt == b"%s" {
        return Some(now.to_string().into_bytes());
    }
    crate::sys::time::strftime(timefmt, now, gmt)
}

/// `echo`'s encodings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// `none`.
    None,
    /// `url`.
    Url,
    /// `entity` (the default).
    Entity,
}

/// Which `if` part the filter is in (nginx's `ctx->conditional`).
pub const COND_IF: u8 = 1;
/// After `else`.
pub const COND_ELSE: u8 = 2;

/// One piece of output, in order.
enum Out<'r> {
    /// Text (the filter's own, or what a command wrote).
    Data(Bytes),
    /// An included page's output, with its number.
    Sub(u64, Subrequest<'r>),
}

/// What the filter waits for before it reads on (nginx's `ctx->wait`).
enum Wait<'r> {
    /// The included page with this number (`wait="yes"`, `file=`).
    Queued(u64),
    /// An `include … set=` page, whose output goes to this variable.
    Memory {
        /// The subrequest.
        sub: Subrequest<'r>,
        /// The variable (lowercased).
        var: Vec<u8>,
    },
}

/// The body part of the filter: a [`Source`] over a request's body.
pub struct Filter<'r, 'a> {
    /// The connection, for subrequests.
    env: Env<'r>,
    /// The request whose body this is (its variables, its URI).
    r: &'r Req<'a>,
    /// The body being filtered.
    input: Box<dyn Source + 'r>,
    /// The body has ended (or failed).
    input_done: bool,
    /// The piece being parsed.
    piece: Bytes,
    /// How far it was parsed.
    pos: usize,
    /// The parser's state between pieces.
    parser: Parser,
    /// The tree's shared state.
    shared: Rc<RefCell<Shared>>,
    /// The response's `Content-Type` (a stub is typed as it).
    content_type: Option<crate::server::core::reply::ContentType>,
    /// Text goes out (nginx's `ctx->output`).
    output: bool,
    /// A branch of the current `if` was taken.
    output_chosen: bool,
    /// [`COND_IF`], [`COND_ELSE`] or 0.
    conditional: u8,
    /// Inside a `block`.
    block: bool,
    /// `echo`'s current encoding.
    encoding: Encoding,
    /// `config timefmt`.
    timefmt: Vec<u8>,
    /// `config errmsg`.
    errmsg: Vec<u8>,
    /// Output in order.
    queue: VecDeque<Out<'r>>,
    /// Bytes of text in `queue`.
    queued: usize,
    /// The next included page's number.
    next_sub: u64,
    /// What the filter waits for before it parses on.
    wait: Option<Wait<'r>>,
    /// The error that ended the body, kept for later polls.
    failed: Option<SourceError>,
    /// The body could not be read to its end: what was made of it so far
    /// goes out, then this error.
    input_error: Option<SourceError>,
}

impl<'r, 'a: 'r> Filter<'r, 'a> {
    /// The filter over `input`, the body of `r`'s response of
    /// `content_type`; `shared` is the tree's SSI state.
    pub fn new(
        env: Env<'r>,
        r: &'r Req<'a>,
        input: Box<dyn Source + 'r>,
        content_type: Option<crate::server::core::reply::ContentType>,
        shared: Rc<RefCell<Shared>>,
    ) -> Filter<'r, 'a> {
        Filter {
            env,
            r,
            input,
            input_done: false,
            piece: Bytes::new(),
            pos: 0,
            parser: Parser::new(r.conf.ssi_value_length as usize),
            shared,
            content_type,
            output: true,
            output_chosen: false,
            conditional: 0,
            block: false,
            encoding: Encoding::Entity,
            timefmt: DEFAULT_TIMEFMT.to_vec(),
            errmsg: DEFAULT_ERRMSG.to_vec(),
            queue: VecDeque::new(),
            queued: 0,
            next_sub: 0,
            wait: None,
            failed: None,
            input_error: None,
        }
    }

    /// Logs `msg` at `error` with the request's context.
    fn log(&self, msg: &str) {
        self.r.error_log().log(
            Level::Error,
            Some(self.r.conn_no),
            format_args!("{msg}{}", self.r.log_context()),
        );
    }

    /// Queues output.
    fn push(&mut self, b: Bytes) {
        if !b.is_empty() {
            self.queued += b.len();
            self.queue.push_back(Out::Data(b));
        }
    }

    /// Text of the body: out, into the current block, or dropped.
    fn text(&mut self, b: Bytes) {
        if self.output {
            self.push(b);
        } else if self.block {
            if let Some(bl) = self.shared.borrow_mut().blocks.last_mut() {
                bl.bufs.push(b);
            }
        }
    }

    /// A failed command: the error message, unless `ssi_silent_errors`.
    fn ssi_error(&mut self) {
        if !self.r.conf.ssi_silent_errors {
            let msg = Bytes::from(self.errmsg.clone());
            self.push(msg);
        }
    }

    /// Whether the body has been read and parsed to its end.
    fn finished(&self) -> bool {
        self.input_done && self.pos >= self.piece.len()
    }

    /// Parses on: the rest of the current piece, or the next one.
    /// `Ready(true)` when something was done.
    fn parse_some(&mut self, cx: &mut Context<'_>) -> Poll<Result<bool, SourceError>> {
        if self.pos >= self.piece.len() {
            if self.input_done {
                return Poll::Ready(Ok(false));
            }
            match std::task::ready!(self.input.poll_chunk(cx)) {
                Err(e) if e.terminate => return Poll::Ready(Err(e)),
                Err(e) => {
                    // What was parsed goes out first, as nginx flushes it.
                    self.input_error = Some(e);
                    self.input_done = true;
                    self.piece = Bytes::new();
                    self.pos = 0;
                    return Poll::Ready(Ok(true));
                }
                Ok(None) => {
                    // A command cut by the end of the body is dropped, as
                    // is the start of one held back.
                    self.input_done = true;
                    return Poll::Ready(Ok(true));
                }
                Ok(Some(b)) => {
                    self.piece = b;
                    self.pos = 0;
                }
            }
        }
        let piece = self.piece.clone();
        let mut logs = Vec::new();
        while self.wait.is_none() && self.failed.is_none() {
            let step = self
                .parser
                .step(&piece, &mut self.pos, &mut |m| logs.push(m));
            for m in logs.drain(..) {
                self.log(&m);
            }
            match step {
                Step::Text(range) => self.text(piece.slice(range)),
                Step::Held(h) => self.text(Bytes::from_static(h)),
                Step::Command => self.command(),
                Step::Error => self.ssi_error(),
                Step::More => break,
            }
        }
        Poll::Ready(Ok(true))
    }

    /// Ends the body with `e` (what waits is dropped).
    fn fail(&mut self, e: SourceError) -> Poll<Result<Option<Bytes>, SourceError>> {
        self.failed = Some(e.clone());
        self.queue.clear();
        self.wait = None;
        Poll::Ready(Err(e))
    }

    /// Whether what the filter waits for is over (then it reads on).
    fn wait_over(&mut self, cx: &mut Context<'_>) -> Result<bool, SourceError> {
        let over = match &mut self.wait {
            None => return Ok(false),
            Some(Wait::Queued(id)) => {
                let id = *id;
                self.queue.iter().all(|o| match o {
                    Out::Sub(n, s) => *n != id || s.is_done(),
                    Out::Data(_) => true,
                })
            }
            Some(Wait::Memory { sub, var }) => {
                sub.drive(cx);
                match sub.memory() {
                    None => false,
                    Some(Err(e)) => return Err(e),
                    Some(Ok(m)) => {
                        // nginx's `ngx_http_ssi_set_variable`: only a
                        // response below 300 that produced output.
                        if m.status < 300 {
                            if let Some(body) = m.body {
                                let var = var.clone();
                                self.shared.borrow_mut().set(&var, body);
                            }
                        }
                        true
                    }
                }
            }
        };
        if over {
            if let Some(Wait::Memory { sub, .. }) = self.wait.take() {
                // Its place in the output, though it has none: it is
                // logged when the output before it has gone, as nginx logs
                // a subrequest once it is the active one.
                let id = self.next_sub;
                self.next_sub += 1;
                self.queue.push_back(Out::Sub(id, sub));
            }
        }
        Ok(over)
    }
}

impl<'r, 'a: 'r> Source for Filter<'r, 'a> {
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, SourceError>> {
        if let Some(e) = &self.failed {
            return Poll::Ready(Err(e.clone()));
        }
        loop {
            // The output in order: text, or the included page whose turn it is.
            match self.queue.front_mut() {
                Some(Out::Data(_)) => {
                    // Text in a row goes on as one piece (nginx passes it
                    // on as one chain: one chunk to the client).
                    let mut run = VecDeque::new();
                    while let Some(Out::Data(_)) = self.queue.front() {
                        if let Some(Out::Data(b)) = self.queue.pop_front() {
                            self.queued -= b.len();
                            run.push_back(b);
                        }
                    }
                    return Poll::Ready(Ok(Some(crate::server::modules::sub_filter::join(
                        &mut run,
                    ))));
                }
                Some(Out::Sub(_, s)) => match s.poll_chunk(cx) {
                    Poll::Ready(Ok(Some(b))) => return Poll::Ready(Ok(Some(b))),
                    Poll::Ready(Ok(None)) => {
                        self.queue.pop_front();
                        continue;
                    }
                    Poll::Ready(Err(e)) => return self.fail(e),
                    Poll::Pending => {}
                },
                None => {}
            }
            match self.wait_over(cx) {
                Ok(true) => continue,
                Ok(false) => {}
                Err(e) => return self.fail(e),
            }
            if self.wait.is_none() && !self.finished() && self.queued < POSTPONED_MAX {
                match self.parse_some(cx) {
                    Poll::Ready(Ok(true)) => continue,
                    Poll::Ready(Ok(false)) | Poll::Pending => {}
                    Poll::Ready(Err(e)) => return self.fail(e),
                }
            }
            // Included pages further on run meanwhile.
            let mut finished = false;
            for out in self.queue.iter_mut().skip(1) {
                if let Out::Sub(_, s) = out {
                    if !s.is_done() && s.drive(cx) {
                        finished = true;
                    }
                }
            }
            if finished {
                continue;
            }
            if self.queue.is_empty() && self.wait.is_none() && self.finished() {
                if let Some(e) = self.input_error.take() {
                    return self.fail(e);
                }
                return Poll::Ready(Ok(None));
            }
            return Poll::Pending;
        }
    }

    fn length(&self) -> Option<u64> {
        None
    }

    fn received(&self) -> u64 {
        self.input.received()
    }

    fn flushes(&self) -> bool {
        self.input.flushes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_come_before_variables_while_the_match_has_them() {
        let mut sh = Shared::default();
        sh.set(b"1", b"var".to_vec());
        sh.set(b"x", b"y".to_vec());
        assert_eq!(sh.get(b"1"), Some(b"var".to_vec()));
        sh.captures = Some(Captures {
            subject: b"abc".to_vec(),
            groups: vec![Some((0, 3)), None],
        });
        // $0 and $1 belong to the match ($1 took no part: empty); $2 is
        // past it, so a variable of that name would be found instead.
        assert_eq!(sh.get(b"0"), Some(b"abc".to_vec()));
        assert_eq!(sh.get(b"1"), Some(Vec::new()));
        assert_eq!(sh.get(b"2"), None);
        sh.set(b"x", b"z".to_vec());
        assert_eq!(sh.get(b"x"), Some(b"z".to_vec()));
    }

    #[test]
    fn dates_in_the_configured_format() {
        let secs = date_variable(b"%s", true).expect("seconds");
        assert!(secs.iter().all(u8::is_ascii_digit) && secs.len() >= 10);
        assert_eq!(date_variable(b"const", true), Some(b"const".to_vec()));
        assert_eq!(date_variable(b"", false), None);
    }
}
