//! `add_before_body` and `add_after_body` (nginx's
//! `ngx_http_addition_filter_module`): the output of a subrequest is sent
//! before and after the body of a `200` of `addition_types` (main requests
//! only). The first subrequest starts when the body does, the second when
//! the body has ended; the URIs are taken as written, without arguments.

use std::cell::RefCell;
use std::rc::Rc;
use std::task::{Context, Poll};

use bytes::Bytes;

use crate::body::{Source, SourceError};

use crate::server::core::reply::Reply;
use crate::server::core::request::Req;
use crate::server::core::subrequest::{self, Env, Options, Output, Subrequest};
use crate::server::modules::ssi;

/// The header part (`ngx_http_addition_header_filter`).
pub fn header_filter(reply: &mut Reply, r: &Req<'_>) {
    let conf = r.conf;
    if reply.status.0 != 200 || !r.is_main() {
        return;
    }
    if conf.add_before_body.is_none() && conf.add_after_body.is_none() {
        return;
    }
    if !conf.addition_types.matches(reply.content_type.as_deref()) {
        return;
    }
    reply.filters.addition = true;
    reply.length_override = None;
    reply.accept_ranges = false;
    reply
        .extra
        .retain(|(n, _)| !n.eq_ignore_ascii_case("Accept-Ranges"));
    crate::server::modules::filter::weaken_etags(reply);
}

/// Where the filter stands.
enum Stage<'r> {
    /// Nothing sent yet.
    Start,
    /// The `add_before_body` subrequest's output.
    Before(Subrequest<'r>),
    /// The body.
    Body,
    /// The `add_after_body` subrequest's output.
    After(Subrequest<'r>),
    /// All sent.
    Done,
}

/// The body part: the additions around a body.
pub struct Addition<'r, 'a> {
    /// The connection, for the subrequests.
    env: Env<'r>,
    /// The request whose body this is.
    r: &'r Req<'a>,
    /// The body (through the other filters).
    inner: Box<dyn Source + 'r>,
    /// The tree's SSI state, for the subrequests.
    ssi: Rc<RefCell<ssi::Shared>>,
    /// Where the filter stands.
    stage: Stage<'r>,
}

impl<'r, 'a: 'r> Addition<'r, 'a> {
    /// The additions of `r` around `inner`; included pages share `ssi`.
    pub fn new(
        env: Env<'r>,
        r: &'r Req<'a>,
        inner: Box<dyn Source + 'r>,
        ssi: Rc<RefCell<ssi::Shared>>,
    ) -> Self {
        Addition {
            env,
            r,
            inner,
            ssi,
            stage: Stage::Start,
        }
    }

    /// Starts the subrequest for `uri`; `None` when it cannot be (logged).
    fn start(&self, uri: &str) -> Option<Subrequest<'r>> {
        let opts = Options {
            output: Output::Stream,
            fallback: None,
        };
        subrequest::start(
            self.env,
            self.r,
            uri.to_string(),
            None,
            self.ssi.clone(),
            opts,
        )
    }
}

/// A subrequest nginx could not start ends the request.
fn refused() -> SourceError {
    SourceError::terminated()
}

impl<'r, 'a: 'r> Source for Addition<'r, 'a> {
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, SourceError>> {
        loop {
            match &mut self.stage {
                Stage::Start => {
                    self.stage = match self.r.conf.add_before_body.as_deref() {
                        Some(uri) => Stage::Before(self.start(uri).ok_or_else(refused)?),
                        None => Stage::Body,
                    };
                }
                Stage::Before(sub) => match std::task::ready!(sub.poll_chunk(cx))? {
                    Some(b) => return Poll::Ready(Ok(Some(b))),
                    None => self.stage = Stage::Body,
                },
                Stage::Body => match std::task::ready!(self.inner.poll_chunk(cx))? {
                    Some(b) => return Poll::Ready(Ok(Some(b))),
                    None => {
                        self.stage = match self.r.conf.add_after_body.as_deref() {
                            Some(uri) => Stage::After(self.start(uri).ok_or_else(refused)?),
                            None => Stage::Done,
                        };
                    }
                },
                Stage::After(sub) => match std::task::ready!(sub.poll_chunk(cx))? {
                    Some(b) => return Poll::Ready(Ok(Some(b))),
                    None => self.stage = Stage::Done,
                },
                Stage::Done => return Poll::Ready(Ok(None)),
            }
        }
    }

    fn length(&self) -> Option<u64> {
        None
    }

    fn received(&self) -> u64 {
        self.inner.received()
    }

    fn flushes(&self) -> bool {
        self.inner.flushes()
    }
}
