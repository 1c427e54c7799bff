//! HTTP/1.x, the `proxy_pass` plug-in of the upstream engine
//! (`ngx_http_proxy_module`'s `create_request`, `process_status_line`,
//! `process_header` and its copy and chunked filters): the request line
//! and fields ([`super::request`]), the status line and fields parsed
//! ([`crate::upstream::head`]), the body framed by length, chunks or close
//! ([`crate::upstream::body`]), the head made into the reply
//! ([`super::response`]).

use std::future::Future;
use std::pin::Pin;

use crate::config::model::ProxyHttpVersion;
use crate::io::file::FileLayer;
use crate::upstream::body::BodyDecoder;
use crate::upstream::head::{self as uhead, HeadParse, ResponseHead};

use super::super::upstream::Proxied;
use super::super::upstream::accel::Accel;
use super::super::upstream::protocol::{Created, Header, InvalidHeader, Protocol, RequestPlan};
use super::{request, response};
use crate::server::core::reply::Reply;
use crate::server::core::request::Req;
use crate::server::core::site::Site;
use crate::server::engine::client::Client;

/// The HTTP/1.x plug-in.
#[derive(Default)]
pub struct Http {
    /// The answer had no status line (HTTP/0.9): its body is everything
    /// until the upstream closes.
    headless: bool,
}

impl Protocol for Http {
    type Filter = BodyDecoder;

    fn create_request(&mut self, r: &Req<'_>, plan: &RequestPlan<'_>) -> Created {
        let method = if plan.as_get {
            std::borrow::Cow::Borrowed(&b"GET"[..])
        } else {
            request::method(r, r.conf.proxy_method.as_ref())
        };
        let head = request::head(r, r.conf, &method, plan.uri, plan.body, plan.cache_headers);
        Created {
            head,
            head_request: method.eq_ignore_ascii_case(b"HEAD"),
        }
    }

    fn frame_body(&self, piece: &[u8], chunked: bool, out: &mut Vec<u8>) {
        if chunked {
            crate::body::chunked::chunk_head(piece.len(), out);
            out.extend_from_slice(piece);
            out.extend_from_slice(crate::body::chunked::CHUNK_END);
        } else {
            out.extend_from_slice(piece);
        }
    }

    fn end_body(&self, chunked: bool, out: &mut Vec<u8>) {
        if chunked {
            out.extend_from_slice(crate::body::chunked::LAST_CHUNK);
        }
    }

    fn streams_chunked(&self, r: &Req<'_>) -> bool {
        r.conf.proxy_http_version == ProxyHttpVersion::V11
    }

    fn process_header(&mut self, buf: &[u8]) -> Result<Header, InvalidHeader> {
        let parsed = uhead::parse_head(buf)
            .map_err(|e| InvalidHeader(String::from_utf8_lossy(&e.message()).into_owned()))?;
        Ok(match parsed {
            HeadParse::Partial => Header::Partial,
            HeadParse::Complete { head, len } => Header::Complete { head, len },
            HeadParse::Interim { len, .. } => Header::Skip(len),
            HeadParse::Http09 => {
                self.headless = true;
                Header::Headless {
                    head: http09_head(),
                    message: uhead::NO_VALID_HEADER,
                }
            }
        })
    }

    fn input_filter_init(&mut self, head: &ResponseHead, head_request: bool) -> BodyDecoder {
        if self.headless {
            // Everything the upstream sends, until it closes.
            return BodyDecoder::new(uhead::Framing::UntilClose);
        }
        BodyDecoder::for_response(head, head_request)
    }

    fn process_headers(r: &Req<'_>, head: &ResponseHead) -> (Reply, Accel) {
        response::reply(r, r.conf, head)
    }

    fn rerun<'x, 'c, 's>(
        site: &'s Site,
        r: &'x mut Req<'s>,
        client: &'x mut Client<'c>,
        files: FileLayer<'x>,
    ) -> Pin<Box<dyn Future<Output = Proxied> + 'x>> {
        Box::pin(super::handle(site, r, client, files))
    }
}

/// The head of an HTTP/0.9 answer: 200, no fields, until close.
fn http09_head() -> ResponseHead {
    ResponseHead {
        version: (0, 9),
        status: 200,
        status_line: b"200 OK".to_vec(),
        headers: Default::default(),
        content_length: None,
        chunked: false,
        connection_close: true,
        upgrade: false,
    }
}
