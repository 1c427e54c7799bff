//! The request phases, as nginx's phase engine runs them: (post-read:
//! `realip`) → server rewrite → find location → location rewrite →
//! pre-access and access checks ([`access`]: limits, rules, passwords) →
//! content → (the log phase is the connection's, after sending). An
//! internal redirect (an `index` file, an `error_page`, later `rewrite …
//! last` and `try_files`) starts the walk again at the server rewrite
//! phase with the new URI; a named location (`@x`) is entered directly.
//!
//! The walk is split where it may wait: [`Walk::route`] runs every phase
//! that decides without I/O (a `return`, the status page, a body too large)
//! on the caller's stack; only when a content handler must read files or
//! talk to an upstream does [`Walk::content`] create the larger future that
//! awaits it. A `return 200` therefore never pays for the static handler's
//! state. A rewrite script that meets a file test (`if (-f …)`) is the
//! other thing that waits: the script pauses ([`rewrite::Flow::Wait`]),
//! `route` hands over, and `content` awaits the test through the file
//! layer before the walk goes on where the script stood.
//!
//! After a location's script changed the URI (`rewrite … last`, or a
//! `rewrite` without a flag), the location is searched again without the
//! server's script (nginx's post-rewrite phase); internal redirects start
//! at the server's script. Both count toward the same limit.
//!
//! `error_page` is applied here too (once under nginx's default
//! `recursive_error_pages off`; again for the page's own errors when on):
//! a reply the server made for an error that a page is configured for
//! becomes an internal redirect, with the method turned into GET.

use std::sync::Arc;

use crate::config::inherit::LocConf;
use crate::config::model::{Aio, ErrorPage, Handler, Location, LocationMatch};
use crate::http::status::Status;
use crate::io::Pool;
use crate::io::file::FileLayer;
use crate::log::Level;
use crate::upstream::head::FieldText;

use crate::server::core::hooks::rewrite::{self, Flow, Paused};
use crate::server::core::hooks::static_file::{self, Fetch, Served};
use crate::server::core::hooks::try_files::Tried;
use crate::server::core::hooks::{self, access};
use crate::server::core::locate;
use crate::server::core::reply::Reply;
use crate::server::core::request::Req;
use crate::server::core::site::Site;
use crate::server::engine::client::Client;
use crate::server::proxy;
use crate::server::upstream::Proxied;

/// The answer when a pool's queue is full. nginx answers 500; nowait
/// answers 503 Service Unavailable, because the condition is temporary
/// overload, not a fault, and clients and load balancers retry a 503
/// elsewhere or later.
pub const OVERFLOW_STATUS: Status = Status::SERVICE_UNAVAILABLE;

/// The methods a static location answers, for `Allow`.
pub const STATIC_METHODS: &str = "GET, HEAD";

/// nginx's limit on internal redirects per request (`index`, `error_page`,
/// `rewrite … last`): the eleventh is a 500 with "rewrite or internal
/// redirection cycle".
pub const MAX_INTERNAL_REDIRECTS: u32 = 10;

/// A reply and the location settings it was produced under (the access log,
/// `send_timeout`, `sendfile` … come from there).
pub struct Handled<'a> {
    /// What to send (boxed: the walk and the futures that send it move a
    /// pointer, not the reply).
    pub reply: Box<Reply>,
    /// The settings in force where the request ended.
    pub conf: &'a LocConf,
    /// The pool for this request's file operations, if `aio threads`.
    pub pool: Option<Arc<Pool>>,
}

/// What a content handler did.
enum Outcome {
    /// It answered.
    Reply(Box<Reply>),
    /// It redirected internally: the walk goes on.
    Redirected,
}

/// Where the walk goes on.
enum Target<'a> {
    /// A URI: the walk starts again at the server rewrite phase.
    Uri,
    /// The location for the URI is searched (the server's script has run,
    /// or a location's changed the URI).
    Find,
    /// A named location, entered directly.
    Named(&'a Location),
}

/// Which rewrite phase a script belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The server's script, before a location is chosen.
    Server,
    /// The location's script.
    Location,
}

/// What the phases before content concluded. (A reply is moved by value,
/// not boxed: a `return` on the fast path allocates nothing for it.)
#[allow(clippy::large_enum_variant)]
enum Located {
    /// A reply is ready.
    Reply(Box<Reply>),
    /// The request stands where its content handler runs.
    Content,
    /// A script waits on a file test (see [`Walk::paused`]).
    Wait,
}

/// Where [`Walk::proceed`] left the request (the reply unboxed, as above).
#[allow(clippy::large_enum_variant)]
enum Next<'a> {
    /// A final reply.
    Done(Handled<'a>),
    /// The content handler must run.
    Content,
    /// A script waits on a file test.
    Wait,
}

/// The walk of one request through the phases.
pub struct Walk<'a> {
    site: &'a Site,
    /// Internal redirects so far.
    redirects: u32,
    /// Where the next [`Walk::route`] starts.
    target: Target<'a>,
    /// The status of the error an `error_page` is being served for, and
    /// its `=code` (nginx's `r->err_status`, `r->error_page`).
    error: Option<(Status, Option<Option<u16>>)>,
    /// No more `error_page` applies: one was taken where
    /// `recursive_error_pages` is off.
    error_pages_done: bool,
    /// An `X-Accel-Redirect` turned the method into GET.
    as_get: bool,
    /// A script paused on a file test, and its phase: `content` finishes it.
    paused: Option<(Phase, Paused<'a>)>,
    /// The `Location` of the reply an `error_page` replaced: nginx keeps
    /// the header it had set, and the page's reply carries it.
    error_location: Option<String>,
    /// The header fields the replaced reply had set (`WWW-Authenticate`
    /// of a 401): nginx keeps them for the page too.
    error_fields: Vec<(FieldText, FieldText)>,
    /// The access checks wait on a timer or a password file: `content`
    /// finishes them.
    access_wait: Option<access::Wait>,
    /// The access checks of the location the request stands in are done
    /// (a wait finished them).
    access_done: bool,
}

impl<'a> Walk<'a> {
    /// A walk for a request that has just been read.
    pub fn new(site: &'a Site) -> Walk<'a> {
        Walk {
            site,
            redirects: 0,
            target: Target::Uri,
            error: None,
            error_pages_done: false,
            as_get: false,
            paused: None,
            error_location: None,
            error_fields: Vec::new(),
            access_wait: None,
            access_done: false,
        }
    }

    /// Runs the phases that decide without waiting. `Some`: the reply is
    /// final. `None`: `r` stands in a location whose content handler must
    /// run, or a script waits on a file test; call [`Walk::content`].
    pub fn route(&mut self, r: &mut Req<'a>) -> Option<Handled<'a>> {
        // nginx's post-read phase, once per request: the real address,
        // then nginx-acme's HTTP-01 answers, before any rewrite or
        // location.
        access::post_read(r);
        if let Some(reply) = acme_challenge(self.site, r) {
            return match self.proceed(r, Located::Reply(reply)) {
                Next::Done(h) => Some(h),
                Next::Content | Next::Wait => None,
            };
        }
        let located = self.locate(r);
        match self.proceed(r, located) {
            Next::Done(h) => Some(h),
            Next::Content | Next::Wait => None,
        }
    }

    /// Starts the walk with an error found before the phases (a head
    /// refused after its request line): `Some` when it is final, `None`
    /// when an `error_page` led to a content handler (call
    /// [`Walk::content`]).
    pub fn fail(&mut self, r: &mut Req<'a>, status: Status) -> Option<Handled<'a>> {
        match self.after(r, Box::new(Reply::special(status)), None) {
            Ok(h) => Some(h),
            Err(()) => {
                let located = self.locate(r);
                match self.proceed(r, located) {
                    Next::Done(h) => Some(h),
                    Next::Content | Next::Wait => None,
                }
            }
        }
    }

    /// Finishes a paused script, runs the content handler `route` stopped
    /// at, then the rest of the walk (internal redirects, `error_page`),
    /// until a final reply.
    pub async fn content(&mut self, r: &mut Req<'a>, client: &mut Client<'_>) -> Handled<'a> {
        loop {
            if let Some(w) = self.access_wait.take() {
                let pool = pool_for(self.site, r).unwrap_or(None);
                let files = r.conf.file_layer(pool.as_ref());
                let located = match access::wait(self.site, r, w, files, client).await {
                    access::Verdict::Pass => {
                        self.access_done = true;
                        Located::Content
                    }
                    access::Verdict::Deny(reply) => Located::Reply(reply),
                    access::Verdict::Wait(w) => {
                        self.access_wait = Some(w);
                        continue;
                    }
                };
                match self.proceed(r, located) {
                    Next::Done(h) => return h,
                    Next::Wait => continue,
                    Next::Content => {}
                }
            }
            if let Some((phase, paused)) = self.paused.take() {
                let flow = self.finish_script(r, paused).await;
                let located = match self.script_ended(r, phase, flow) {
                    Some(located) => located,
                    None => self.locate(r),
                };
                match self.proceed(r, located) {
                    Next::Done(h) => return h,
                    Next::Wait => continue,
                    Next::Content => {}
                }
            }
            let (outcome, pool) = self.run_content(r, client).await;
            if let Outcome::Reply(reply) = outcome {
                if let Ok(h) = self.after(r, reply, pool) {
                    return h;
                }
            }
            // An internal redirect: the walk goes on at the new target.
            let located = self.locate(r);
            if let Next::Done(h) = self.proceed(r, located) {
                return h;
            }
        }
    }

    /// Takes what the phases before content concluded as far as it goes
    /// without waiting: a reply through `error_page` (which may start the
    /// walk again), the handlers that answer at once.
    fn proceed(&mut self, r: &mut Req<'a>, mut located: Located) -> Next<'a> {
        loop {
            let reply = match located {
                Located::Reply(reply) => reply,
                Located::Content => {
                    // The pre-access and access phases, once per location
                    // the request stands in.
                    if !std::mem::take(&mut self.access_done) {
                        match access::check(self.site, r) {
                            access::Verdict::Pass => {}
                            access::Verdict::Deny(reply) => {
                                located = Located::Reply(reply);
                                continue;
                            }
                            access::Verdict::Wait(w) => {
                                self.access_wait = Some(w);
                                return Next::Wait;
                            }
                        }
                    }
                    if hooks::try_files::applies(r) {
                        return Next::Content;
                    }
                    match self.immediate(r) {
                        Some(reply) => reply,
                        None => return Next::Content,
                    }
                }
                Located::Wait => return Next::Wait,
            };
            match self.after(r, reply, None) {
                Ok(h) => return Next::Done(h),
                Err(()) => located = self.locate(r),
            }
        }
    }

    /// Server rewrite, find location, location rewrite, until the request
    /// stands in a location, a script answers, or a script waits.
    fn locate(&mut self, r: &mut Req<'a>) -> Located {
        loop {
            let (phase, flow) = match std::mem::replace(&mut self.target, Target::Uri) {
                Target::Uri => {
                    r.enter(None);
                    let script = &r.server.rewrite;
                    (Phase::Server, rewrite::run(r, script))
                }
                Target::Find => {
                    let l = match locate::find_or_redirect(&r.server.locations, &r.uri) {
                        locate::Found::In(l) => l,
                        locate::Found::Redirect(l) => {
                            // nginx's `auto_redirect`: the location's
                            // settings answer the 301.
                            return match self.enter(r, l) {
                                Some(reply) => Located::Reply(Box::new(reply)),
                                None => Located::Reply(Box::new(
                                    crate::server::core::redirect::auto_redirect(r, l),
                                )),
                            };
                        }
                        locate::Found::None => {
                            // No location matches: the server's own
                            // settings serve, without a location script.
                            r.enter(None);
                            return match self.body_too_large(r) {
                                Some(reply) => Located::Reply(Box::new(reply)),
                                None => Located::Content,
                            };
                        }
                    };
                    if let LocationMatch::Regex { re, .. } = &l.matcher {
                        // The location's expression matched: its captures
                        // are the request's (found again only when it has
                        // groups to read).
                        if re.captures_len() > 1 {
                            r.regex_exec(re, &r.uri);
                        } else {
                            r.matched_without_groups();
                        }
                    }
                    match self.enter(r, l) {
                        Some(reply) => return Located::Reply(Box::new(reply)),
                        None => (Phase::Location, rewrite::run(r, entered(r, l))),
                    }
                }
                Target::Named(l) => match self.enter(r, l) {
                    Some(reply) => return Located::Reply(Box::new(reply)),
                    None => (Phase::Location, rewrite::run(r, entered(r, l))),
                },
            };
            if let Some(located) = self.script_ended(r, phase, flow) {
                return located;
            }
        }
    }

    /// Enters a location found for the request: `Some` when it is
    /// `internal` and the request is not, or its body is too large for it.
    fn enter(&mut self, r: &mut Req<'a>, l: &'a Location) -> Option<Reply> {
        r.enter(Some(l));
        if l.internal && !r.internal {
            return Some(Reply::special(Status::NOT_FOUND));
        }
        self.body_too_large(r)
    }

    /// What follows a script of `phase` that ended with `flow`: `None` when
    /// the walk goes on at its target (call [`Walk::locate`]).
    fn script_ended(&mut self, r: &mut Req<'a>, phase: Phase, flow: Flow<'a>) -> Option<Located> {
        match flow {
            Flow::Reply(reply) => Some(Located::Reply(reply)),
            Flow::Wait(paused) => {
                self.paused = Some((phase, paused));
                Some(Located::Wait)
            }
            Flow::Continue | Flow::Relocate if phase == Phase::Server => {
                self.target = Target::Find;
                None
            }
            Flow::Continue => Some(Located::Content),
            Flow::Relocate => {
                self.redirects += 1;
                if self.redirects > MAX_INTERNAL_REDIRECTS {
                    r.error_log().log(
                        Level::Error,
                        Some(r.conn_no),
                        format_args!(
                            "rewrite or internal redirection cycle while processing \"{}\"{}",
                            r.uri,
                            r.log_context()
                        ),
                    );
                    return Some(Located::Reply(Box::new(Reply::special(
                        Status::INTERNAL_SERVER_ERROR,
                    ))));
                }
                r.enter(None);
                self.target = Target::Find;
                None
            }
        }
    }

    /// Makes a paused script's file tests where this request's `aio` says,
    /// and runs the script to its end.
    async fn finish_script(&mut self, r: &mut Req<'a>, paused: Paused<'a>) -> Flow<'a> {
        let pool = match pool_for(self.site, r) {
            Ok(p) => p,
            Err(status) => return Flow::Reply(Box::new(Reply::special(status))),
        };
        let files = r.conf.file_layer(pool.as_ref());
        paused.finish(r, files).await
    }

    /// nginx's find-config check: a `Content-Length` over the location's
    /// `client_max_body_size` is a 413 before the location's own rewrites.
    fn body_too_large(&self, r: &Req<'a>) -> Option<Reply> {
        let max_body = r.conf.client_max_body_size;
        let len = r.head.content_length?;
        if max_body == 0 || len <= max_body {
            return None;
        }
        r.error_log().log(
            Level::Error,
            Some(r.conn_no),
            format_args!(
                "client intended to send too large body: {len} bytes{}",
                r.log_context()
            ),
        );
        Some(Reply::special(Status::REQUEST_ENTITY_TOO_LARGE))
    }

    /// The checks after the location is known and the handlers that answer
    /// without I/O. `None`: a content handler must run.
    fn immediate(&mut self, r: &mut Req<'a>) -> Option<Box<Reply>> {
        let handler = r.location.map_or(r.server.handler, |l| l.handler);
        hooks::answer_at_once(handler, self.site, r)
    }

    /// The content handler of the location `r` stands in.
    async fn run_content(
        &mut self,
        r: &mut Req<'a>,
        client: &mut Client<'_>,
    ) -> (Outcome, Option<Arc<Pool>>) {
        let site = self.site;
        let pool = match pool_for(site, r) {
            Ok(p) => p,
            Err(status) => return (Outcome::Reply(Box::new(Reply::special(status))), None),
        };
        let files = r.conf.file_layer(pool.as_ref());
        if site.config.uses_realpath_root && r.realpath_root.is_none() {
            r.realpath_root = realpath(r, files).await;
        }
        // The precontent phase: `try_files`.
        match hooks::try_files::run(r, files).await {
            Tried::Declined => {}
            Tried::Reply(reply) => return (Outcome::Reply(reply), pool),
            Tried::Uri(uri) => {
                if self.redirect(r, uri, true) {
                    return (Outcome::Redirected, pool);
                }
                let reply = Reply::special(Status::INTERNAL_SERVER_ERROR);
                return (Outcome::Reply(Box::new(reply)), pool);
            }
            Tried::Named(name) => {
                let reply = match self.enter_named(r, &name) {
                    None => return (Outcome::Redirected, pool),
                    Some(reply) => reply,
                };
                return (Outcome::Reply(Box::new(reply)), pool);
            }
        }
        if let Some(reply) = self.immediate(r) {
            return (Outcome::Reply(reply), pool);
        }
        match r.location.map_or(r.server.handler, |l| l.handler) {
            Handler::Proxy => match proxy::handle(site, r, client, files).await {
                Proxied::Reply(reply) => (Outcome::Reply(reply), pool),
                Proxied::Redirect(uri) => {
                    // `X-Accel-Redirect`: the URI (or named location) the
                    // upstream names, fetched as GET.
                    self.as_get = true;
                    let moved = match uri.strip_prefix('@').map(|_| uri.as_str()) {
                        Some(name) => match locate::find_named(&r.server.locations, name) {
                            Some(l) => {
                                self.redirects += 1;
                                r.internal = true;
                                self.target = Target::Named(l);
                                true
                            }
                            None => false,
                        },
                        None => self.redirect(r, uri, true),
                    };
                    if moved {
                        return (Outcome::Redirected, pool);
                    }
                    (
                        Outcome::Reply(Box::new(Reply::special(Status::INTERNAL_SERVER_ERROR))),
                        pool,
                    )
                }
            },
            Handler::Static | Handler::Status | Handler::StubStatus | Handler::EmptyGif => {
                let uri = r.uri.clone();
                // A page served as a 200 (`=200`, or `=` and the file's own
                // status) is a 200 to nginx's range and not-modified
                // filters (ngx_http_send_header gives it err_status first).
                let as_200 = matches!(self.error, Some((_, Some(Some(200)) | Some(None))));
                let fetch = if (self.error.is_some() && !as_200) || !r.is_main() {
                    // A subrequest, too, is fetched as GET without ranges
                    // or conditionals (nginx's range and not-modified
                    // filters see only the main request).
                    Fetch::ErrorPage
                } else if self.error.is_some() || self.as_get {
                    Fetch::AsGet
                } else {
                    Fetch::Request
                };
                let served = static_file::serve(r, r.conf, r.location, &uri, files, fetch).await;
                let reply = match served {
                    Served::Reply(reply) => *reply,
                    Served::InternalRedirect(next) => {
                        if self.redirect(r, next, false) {
                            return (Outcome::Redirected, pool);
                        }
                        Reply::special(Status::INTERNAL_SERVER_ERROR)
                    }
                    Served::Error(status, msg) => {
                        if let Some(msg) = msg {
                            r.error_log().log(
                                Level::Error,
                                Some(r.conn_no),
                                format_args!("{msg}{}", r.log_context()),
                            );
                        }
                        Reply::special(status)
                    }
                    Served::Overflow(msg) => {
                        // nginx's line, exactly: the pool's own message, no request context.
                        r.error_log()
                            .log(Level::Error, Some(r.conn_no), format_args!("{msg}"));
                        Reply::special(OVERFLOW_STATUS)
                    }
                };
                (Outcome::Reply(Box::new(reply)), pool)
            }
        }
    }

    /// Sets `r` up for an internal redirect to `uri`; `false` past
    /// [`MAX_INTERNAL_REDIRECTS`] (the caller answers 500). With
    /// `split_args` (an `error_page` URI, nginx's `ngx_http_split_args`),
    /// what follows `?` becomes the arguments, and none clears them;
    /// without (an `index` file), the URI is taken whole and the
    /// arguments stay.
    fn redirect(&mut self, r: &mut Req<'a>, uri: String, split_args: bool) -> bool {
        self.redirects += 1;
        if self.redirects > MAX_INTERNAL_REDIRECTS {
            r.error_log().log(
                Level::Error,
                Some(r.conn_no),
                format_args!(
                    "rewrite or internal redirection cycle while internally redirecting to \"{uri}\"{}",
                    r.log_context()
                ),
            );
            return false;
        }
        match uri.split_once('?').filter(|_| split_args) {
            Some((path, args)) => {
                r.uri = path.to_string().into();
                r.args = Some(Some(args.to_string()));
            }
            None => {
                if split_args {
                    r.args = Some(None);
                }
                r.uri = uri.into();
            }
        }
        r.internal = true;
        self.target = Target::Uri;
        true
    }

    /// What follows a reply: an error with an `error_page` becomes an
    /// internal redirect (`Err`: the walk goes on), anything else is
    /// decorated and final (`Ok`).
    fn after(
        &mut self,
        r: &mut Req<'a>,
        mut reply: Box<Reply>,
        pool: Option<Arc<Pool>>,
    ) -> Result<Handled<'a>, ()> {
        if let Some((status, overwrite)) = self.error {
            // The page served for an error carries the error's status (or
            // the `=code`), unless it is itself a special reply.
            match overwrite {
                // nginx gives the page its `=code` before the not-modified
                // filter runs: a 304 that filter made of a `=200` page stays.
                Some(Some(200)) if reply.status == Status::NOT_MODIFIED => {}
                Some(Some(c)) => reply.status = Status(c),
                Some(None) => {}
                None if !reply.special => reply.status = status,
                None => {}
            }
            if !reply.special {
                // nginx's range filter serves ranges of a 200 only: a page
                // served as `=200` keeps them, as nginx's does.
                if reply.status != Status::OK {
                    reply.accept_ranges = false;
                    reply.allow_ranges = false;
                }
                reply.close |= status.closes_connection();
            }
            if reply.location.is_none() {
                reply.location = self.error_location.take();
            }
            if !self.error_fields.is_empty() {
                let kept = std::mem::take(&mut self.error_fields);
                reply.extra.splice(0..0, kept);
            }
        }
        // A page's own error is looked up again only under
        // `recursive_error_pages on` (nginx's `r->error_page`).
        if reply.special && !self.error_pages_done {
            let status = reply.status;
            if let Some(page) = r
                .conf
                .error_pages
                .iter()
                .find(|p| p.codes.contains(&status.0))
            {
                self.error_pages_done = !r.conf.recursive_error_pages;
                self.error_location = reply.location.take();
                self.error_fields = std::mem::take(&mut reply.extra);
                match self.error_page(r, page, status) {
                    None => return Err(()),
                    Some(other) => {
                        *reply = other;
                        let kept = std::mem::take(&mut self.error_fields);
                        reply.extra.splice(0..0, kept);
                    }
                }
            }
        }
        let mut h = Handled {
            reply,
            conf: r.conf,
            pool,
        };
        decorate(&mut h, r);
        if let Err(unsatisfiable) = hooks::filter::headers(&mut h.reply, r) {
            // The range filter's 416 is answered as a handler's would be.
            return self.after(r, unsatisfiable, h.pool);
        }
        Ok(h)
    }

    /// Starts serving `page` for an error of `status`: `None` when the
    /// walk goes on at the page's URI; else the reply to send instead (a
    /// redirect to a URL, or a 500 when the page cannot be reached).
    fn error_page(&mut self, r: &mut Req<'a>, page: &ErrorPage, status: Status) -> Option<Reply> {
        let target = r.expand_lossy(&page.uri);
        if !target.starts_with('/') && !target.starts_with('@') {
            // Anything but a URI or a named location is a redirect
            // (`ngx_http_send_error_page`): 302 unless the `=code` is one.
            let code = match page.overwrite {
                Some(Some(c)) if [301, 302, 303, 307, 308].contains(&c) => c,
                _ => 302,
            };
            let mut reply = Reply::special(Status(code));
            reply.location = Some(target);
            return Some(reply);
        }
        self.error = Some((status, page.overwrite));
        if target.starts_with('@') {
            return self.enter_named(r, &target);
        }
        if self.redirect(r, target, true) {
            None
        } else {
            Some(Reply::special(Status::INTERNAL_SERVER_ERROR))
        }
    }

    /// Moves the request into the named location `name` (`@x`): `None`
    /// when the walk goes on there, else the 500 of a name no location has.
    fn enter_named(&mut self, r: &mut Req<'a>, name: &str) -> Option<Reply> {
        match locate::find_named(&r.server.locations, name) {
            Some(l) => {
                self.redirects += 1;
                r.internal = true;
                self.target = Target::Named(l);
                None
            }
            None => {
                r.error_log().log(
                    Level::Error,
                    Some(r.conn_no),
                    format_args!(
                        "could not find named location \"{name}\"{}",
                        r.log_context()
                    ),
                );
                Some(Reply::special(Status::INTERNAL_SERVER_ERROR))
            }
        }
    }

    /// Whether the request is being answered with an `error_page`.
    pub fn serving_error_page(&self) -> bool {
        self.error.is_some()
    }
}

/// The script of the location the request entered for `l`: a
/// `limit_except` block's (empty: nginx does not inherit rewrites into it)
/// when the block serves the method.
/// Where ACME servers ask for an HTTP-01 token (RFC 8555 §8.3).
const ACME_CHALLENGE_PREFIX: &str = "/.well-known/acme-challenge/";

/// nginx-acme's HTTP-01 handler: a GET for a token being validated is
/// answered with its key authorization (`text/plain`, and the connection
/// closed, as nginx-acme answers it), whatever the server's locations say.
fn acme_challenge(site: &Site, r: &Req<'_>) -> Option<Box<Reply>> {
    if *r.method() != crate::http::request::Method::Get || !r.is_main() {
        return None;
    }
    let token = r.uri.strip_prefix(ACME_CHALLENGE_PREFIX)?;
    let answer = site.shared.acme.challenge(token)?;
    let mut reply = Reply::text(Status::OK, answer, "text/plain");
    reply.close = true;
    Some(Box::new(reply))
}

fn entered<'a>(r: &Req<'a>, l: &'a Location) -> &'a [crate::config::model::RewriteOp] {
    &r.location.unwrap_or(l).rewrite
}

/// The pool `aio` names for this request, or the error to answer.
fn pool_for(site: &Site, r: &Req<'_>) -> Result<Option<Arc<Pool>>, Status> {
    let Aio::Threads(name) = &r.conf.aio else {
        return Ok(None);
    };
    // A name without variables (nearly always) is looked up as written,
    // not copied first.
    let expanded;
    let name = match name.parts.as_slice() {
        [crate::config::template::Part::Literal(s)] => s.as_str(),
        _ => {
            expanded = r.expand_lossy(name);
            expanded.as_str()
        }
    };
    match site.pools.get(name) {
        Some(p) => Ok(Some(p.clone())),
        None => {
            r.error_log().log(
                Level::Error,
                Some(r.conn_no),
                format_args!("thread pool \"{name}\" not found{}", r.log_context()),
            );
            Err(Status::INTERNAL_SERVER_ERROR)
        }
    }
}

/// `$realpath_root`: the document root with symbolic links resolved,
/// through the file layer (the fast path or the pool, never a blocking
/// walk on the loop).
async fn realpath(r: &Req<'_>, files: FileLayer<'_>) -> Option<String> {
    let root = r.document_root();
    files
        .realpath(std::path::Path::new(&root))
        .await
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

/// What a final reply gets last: nginx's special response (the MSIE
/// refresh page, the error page and its MSIE padding), `Allow` on a 405,
/// the headers filter (`expires`, `add_header`, `add_trailer`) if the
/// content filters did not run, and the absolute `Location`.
fn decorate(h: &mut Handled<'_>, r: &Req<'_>) {
    let conf = h.conf;
    let reply = &mut h.reply;
    if reply.special
        && matches!(reply.status.0, 301 | 302)
        && reply.location.is_some()
        && conf.msie_refresh
        && crate::server::core::redirect::from_msie(r)
    {
        crate::server::core::redirect::msie_refresh(reply);
    }
    if reply.special && matches!(reply.body, crate::server::core::reply::Body::Empty) {
        reply.fill_special_page(crate::signature(conf.server_tokens));
        if reply.status.0 >= 400 && conf.msie_padding && padded_browser(r) {
            if let crate::server::core::reply::Body::Bytes(page) = &mut reply.body {
                page.extend_from_slice(crate::server::core::redirect::MSIE_PADDING.as_bytes());
            }
        }
    }
    let status = reply.status.0;
    if status == 405
        && !reply
            .extra
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("Allow"))
    {
        // RFC 9110 §15.5.6: a 405 must say what is allowed (nginx omits it).
        reply.extra.push(("Allow".into(), STATIC_METHODS.into()));
    }
    crate::server::upstream::accel::keep_accel_headers(reply, r);
    hooks::headers_filter::apply(reply, r);
    crate::server::core::redirect::finish_location(reply, r, conf);
}

/// Whether nginx pads error pages for this client: MSIE or Chrome, over
/// HTTP/1.0 or later.
fn padded_browser(r: &Req<'_>) -> bool {
    if r.head.version == crate::http::request::Version::Http09 {
        return false;
    }
    r.head.header("user-agent").is_some_and(|ua| {
        let b = crate::http::user_agent::classify(ua);
        b.msie || b.chrome
    })
}
