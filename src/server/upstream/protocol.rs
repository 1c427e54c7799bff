//! The protocol plug-in: what one upstream protocol (HTTP for
//! `proxy_pass`; FastCGI, uwsgi, SCGI, memcached and gRPC next) adds to the
//! engine, as nginx's `ngx_http_upstream_t` callbacks do
//! (`create_request`, `reinit_request`, `process_header`,
//! `input_filter_init`, `input_filter`, `finalize_request`).
//!
//! Owns: the trait [`Protocol`] and the body framing it hands the engine
//! ([`InputFilter`]). Must not: touch a socket, a timer or the cache. A
//! plug-in turns a request into bytes and bytes into a response head and a
//! body's payload; connecting, retrying, buffering, the cache and X-Accel
//! are the engine's, the same for every protocol.

use std::future::Future;
use std::pin::Pin;

use crate::io::file::FileLayer;
use crate::server::core::reply::Reply;
use crate::server::core::request::Req;
use crate::server::core::site::Site;
use crate::server::engine::client::Client;
use crate::upstream::body::{BodyDecoder, BodyError, Step};
use crate::upstream::head::ResponseHead;

use super::Proxied;
use super::accel::Accel;

/// How the request body goes upstream, as the request head announces it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyFraming {
    /// No body.
    None,
    /// A body of this length.
    Length(u64),
    /// A body streamed from the client as it arrives, framed by the
    /// protocol (HTTP/1.1 chunks; FastCGI `STDIN` records).
    Chunked,
}

/// What the engine knows when the plug-in builds the request.
pub struct RequestPlan<'p> {
    /// The URI to send (the plug-in's own [`Protocol`] computed it with the
    /// target; kept here for the cache key and the log).
    pub uri: &'p [u8],
    /// The body's framing.
    pub body: BodyFraming,
    /// The cache asks for a `GET` (`proxy_cache_convert_head`).
    pub as_get: bool,
    /// The fields a cache fill sends instead of the client's conditions
    /// (nginx's `headers_cache`), when the answer will be stored.
    pub cache_headers: Option<&'p [(&'static str, Vec<u8>)]>,
}

/// The request a plug-in built.
pub struct Created {
    /// The bytes before the body (HTTP: request line and fields; FastCGI:
    /// `BEGIN_REQUEST` and `PARAMS` records).
    pub head: Vec<u8>,
    /// The request asks for no body in return (`HEAD`): the response's
    /// framing says so.
    pub head_request: bool,
}

/// What the response head parser found at the start of a buffer.
pub enum Header {
    /// Not complete: read more (within the buffer size) and parse again.
    Partial,
    /// A final head, `len` bytes of the buffer.
    Complete {
        /// The head.
        head: ResponseHead,
        /// The bytes it took.
        len: usize,
    },
    /// Bytes to drop before parsing again (an interim `1xx`).
    Skip(usize),
    /// No head at all: the whole answer is a body, relayed as it comes
    /// until the upstream closes (HTTP/0.9).
    Headless {
        /// The head the engine goes on with (200, no fields).
        head: ResponseHead,
        /// What to log about it (at `error`).
        message: &'static str,
    },
}

/// A response head the plug-in refuses: what nginx logs before `while
/// reading response header from upstream` (an `invalid_header` for
/// `*_next_upstream`, else a 502).
#[derive(Debug)]
pub struct InvalidHeader(pub String);

/// The framing of a response body (nginx's `input_filter`): where it ends,
/// its payload, and whether the connection may carry another request.
pub trait InputFilter {
    /// Why a body could not be read to its end, in nginx's words (logged
    /// before `while reading upstream`).
    type Error: std::fmt::Display;
    /// Decodes from `input`: how much it took and where the payload is.
    fn step(&mut self, input: &[u8]) -> Result<Step, Self::Error>;
    /// The upstream closed: whether that ends the body cleanly.
    fn eof(&mut self) -> Result<(), Self::Error>;
    /// The body has ended.
    fn is_complete(&self) -> bool;
    /// How many body bytes are still to come, when the framing knows.
    fn length_left(&self) -> Option<u64>;
    /// Payload bytes so far (`$upstream_response_length`).
    fn received(&self) -> u64;
    /// What to warn about once the body ended (extra bytes after it).
    fn warning(&self) -> Option<&'static str>;
    /// The connection may carry another request (nginx's `u->keepalive`).
    fn keepalive(&self) -> bool;
}

impl InputFilter for BodyDecoder {
    type Error = BodyError;
    fn step(&mut self, input: &[u8]) -> Result<Step, BodyError> {
        BodyDecoder::step(self, input)
    }
    fn eof(&mut self) -> Result<(), BodyError> {
        BodyDecoder::eof(self)
    }
    fn is_complete(&self) -> bool {
        BodyDecoder::is_complete(self)
    }
    fn length_left(&self) -> Option<u64> {
        BodyDecoder::length_left(self)
    }
    fn received(&self) -> u64 {
        BodyDecoder::received(self)
    }
    fn warning(&self) -> Option<&'static str> {
        BodyDecoder::warning(self)
    }
    fn keepalive(&self) -> bool {
        BodyDecoder::keepalive(self)
    }
}

/// A response head made into the client's reply (the protocol's header
/// rules: hidden and passed fields, redirects and cookies rewritten), with
/// the `X-Accel-*` fields it carried. The cache calls it for a stored head
/// too, as nginx runs `process_header` on a cached one.
pub type HeadReply = fn(&Req<'_>, &ResponseHead) -> (Reply, Accel);

/// One upstream protocol.
pub trait Protocol {
    /// The response body's framing.
    type Filter: InputFilter + 'static;

    /// nginx's `create_request`: the bytes that go before the body.
    fn create_request(&mut self, r: &Req<'_>, plan: &RequestPlan<'_>) -> Created;

    /// Appends one piece of a body streamed from the client, framed
    /// (HTTP/1.1 chunked: size line, bytes, CRLF; as it is without
    /// chunking).
    fn frame_body(&self, piece: &[u8], chunked: bool, out: &mut Vec<u8>);

    /// Appends what ends a streamed body (HTTP/1.1 chunked: the last chunk).
    fn end_body(&self, chunked: bool, out: &mut Vec<u8>);

    /// Whether a body of unknown length can be streamed as it arrives (an
    /// HTTP/1.0 upstream cannot take chunks: the body is read whole first).
    fn streams_chunked(&self, r: &Req<'_>) -> bool;

    /// nginx's `process_header`: what the start of `buf` holds.
    fn process_header(&mut self, buf: &[u8]) -> Result<Header, InvalidHeader>;

    /// nginx's `input_filter_init`: the body's framing after `head`. It
    /// may take over the plug-in's parser state (a FastCGI header block
    /// can end inside a `STDOUT` record the body goes on in).
    fn input_filter_init(&mut self, head: &ResponseHead, head_request: bool) -> Self::Filter;

    /// The head made into the reply (see [`HeadReply`]).
    fn process_headers(r: &Req<'_>, head: &ResponseHead) -> (Reply, Accel);

    /// Runs a request again through the plug-in's handler, as nginx runs a
    /// background subrequest through its location
    /// (`proxy_cache_background_update`).
    fn rerun<'x, 'c, 's>(
        site: &'s Site,
        r: &'x mut Req<'s>,
        client: &'x mut Client<'c>,
        files: FileLayer<'x>,
    ) -> Pin<Box<dyn Future<Output = Proxied> + 'x>>;
}

#[cfg(test)]
mod tests;
