//! The trait checked against a protocol that is not HTTP: a test plug-in
//! for memcached, built on `upstream::wire::memcached`, and the HTTP
//! plug-in, both driven by the same loop the engine runs (`head.rs` then
//! `source.rs`): bytes in pieces of any size to `process_header` until a
//! head, then to the filter `input_filter_init` made.

use std::future::Future;
use std::pin::Pin;

use crate::http::status::Status;
use crate::io::file::FileLayer;
use crate::server::core::reply::{Body, Reply};
use crate::server::core::request::Req;
use crate::server::core::site::Site;
use crate::server::engine::client::Client;
use crate::server::proxy::http::Http;
use crate::upstream::body::Step;
use crate::upstream::head::ResponseHead;
use crate::upstream::wire::memcached::{self, HeadReader, ValueReader};

use super::super::Proxied;
use super::super::accel::Accel;
use super::{Created, Header, InputFilter, InvalidHeader, Protocol, RequestPlan};

/// memcached as a plug-in: `get <key>`, the `VALUE`/`END` line, the value
/// and its trailer.
struct Memcached {
    /// The first line's reader.
    head: HeadReader,
}

impl Memcached {
    fn new(key: &[u8]) -> Memcached {
        Memcached {
            head: HeadReader::new(key, 0),
        }
    }
}

/// A head of `status`, its length known.
fn head_of(status: u16, length: u64) -> ResponseHead {
    ResponseHead {
        version: (1, 1),
        status,
        status_line: format!("{status}").into_bytes(),
        headers: Default::default(),
        content_length: Some(length),
        chunked: false,
        connection_close: false,
        upgrade: false,
    }
}

/// The value after a `VALUE` line (none after `END`).
struct Value {
    /// The value's reader; `None`: no body.
    reader: Option<ValueReader>,
    /// Payload bytes so far.
    received: u64,
    /// The trailer was read.
    ended: bool,
}

impl InputFilter for Value {
    type Error = String;

    fn step(&mut self, input: &[u8]) -> Result<Step, String> {
        let Some(reader) = &mut self.reader else {
            return Err("upstream sent data after the end".to_string());
        };
        let step = reader.feed(input);
        self.received += step.data.len() as u64;
        match step.end {
            Some(Err(e)) => Err(e.to_string()),
            end => {
                self.ended = end.is_some();
                Ok(Step {
                    consumed: input.len(),
                    data: step.data,
                })
            }
        }
    }

    fn eof(&mut self) -> Result<(), String> {
        if self.is_complete() {
            Ok(())
        } else {
            Err("upstream prematurely closed connection".to_string())
        }
    }

    fn is_complete(&self) -> bool {
        self.reader.is_none() || self.ended
    }

    fn length_left(&self) -> Option<u64> {
        None
    }

    fn received(&self) -> u64 {
        self.received
    }

    fn warning(&self) -> Option<&'static str> {
        None
    }

    fn keepalive(&self) -> bool {
        self.is_complete()
    }
}

impl Protocol for Memcached {
    type Filter = Value;

    fn create_request(&mut self, _r: &Req<'_>, plan: &RequestPlan<'_>) -> Created {
        let mut head = Vec::new();
        let _ = memcached::request(&mut head, plan.uri);
        Created {
            head,
            head_request: false,
        }
    }

    fn frame_body(&self, _piece: &[u8], _chunked: bool, _out: &mut Vec<u8>) {}

    fn end_body(&self, _chunked: bool, _out: &mut Vec<u8>) {}

    fn streams_chunked(&self, _r: &Req<'_>) -> bool {
        false
    }

    fn process_header(&mut self, buf: &[u8]) -> Result<Header, InvalidHeader> {
        match self.head.read(buf) {
            Ok(None) => Ok(Header::Partial),
            Ok(Some(memcached::Head::Value { used, length, .. })) => Ok(Header::Complete {
                head: head_of(200, length),
                len: used,
            }),
            Ok(Some(memcached::Head::NotFound { used })) => Ok(Header::Complete {
                head: head_of(404, 0),
                len: used,
            }),
            Err(e) => Err(InvalidHeader(e.to_string())),
        }
    }

    fn input_filter_init(&mut self, head: &ResponseHead, _head_request: bool) -> Value {
        Value {
            reader: (head.status == 200)
                .then(|| ValueReader::new(head.content_length.unwrap_or(0))),
            received: 0,
            ended: false,
        }
    }

    fn process_headers(_r: &Req<'_>, head: &ResponseHead) -> (Reply, Accel) {
        (
            Reply::new(Status(head.status), Body::Empty),
            Accel::default(),
        )
    }

    fn rerun<'x, 'c, 's>(
        _site: &'s Site,
        _r: &'x mut Req<'s>,
        _client: &'x mut Client<'c>,
        _files: FileLayer<'x>,
    ) -> Pin<Box<dyn Future<Output = Proxied> + 'x>> {
        Box::pin(async { super::super::reply(Reply::special(Status::NOT_FOUND)) })
    }
}

/// What the engine's loop makes of `answer` fed in pieces of `piece`
/// bytes: the head, the payload, and whether the connection may be kept;
/// or the error it would log.
fn drive<P: Protocol>(
    p: &mut P,
    answer: &[u8],
    piece: usize,
) -> Result<(u16, Vec<u8>, bool), String> {
    let mut pieces = answer.chunks(piece);
    let mut buf = Vec::new();
    let (head, len) = loop {
        if !buf.is_empty() {
            match p.process_header(&buf).map_err(|e| e.0)? {
                Header::Complete { head, len } => break (head, len),
                Header::Skip(len) => {
                    buf.drain(..len);
                    continue;
                }
                Header::Headless { head, .. } => break (head, 0),
                Header::Partial => {}
            }
        }
        buf.extend_from_slice(pieces.next().ok_or("closed before the head")?);
    };
    let mut filter = p.input_filter_init(&head, false);
    let mut body = Vec::new();
    let mut input = buf[len..].to_vec();
    loop {
        let mut pos = 0;
        while pos < input.len() && !filter.is_complete() {
            let step = filter.step(&input[pos..]).map_err(|e| e.to_string())?;
            body.extend_from_slice(&input[pos..][step.data]);
            pos += step.consumed;
        }
        if filter.is_complete() {
            break;
        }
        match pieces.next() {
            Some(next) => input = next.to_vec(),
            None => {
                filter.eof().map_err(|e| e.to_string())?;
                break;
            }
        }
    }
    Ok((head.status, body, filter.keepalive()))
}

#[test]
fn a_memcached_value_comes_through_the_trait_in_pieces_of_any_size() {
    let answer = b"VALUE k 0 5\r\nhello\r\nEND\r\n";
    for piece in [1, 2, 7, answer.len()] {
        let got = drive(&mut Memcached::new(b"k"), answer, piece);
        assert_eq!(got, Ok((200, b"hello".to_vec(), true)), "pieces of {piece}");
    }
}

#[test]
fn memcached_end_alone_is_a_404_without_a_body() {
    let got = drive(&mut Memcached::new(b"k"), b"END\r\n", 2);
    assert_eq!(got, Ok((404, Vec::new(), true)));
}

#[test]
fn memcached_errors_are_its_own_in_nginx_words() {
    let bad_trailer = drive(&mut Memcached::new(b"k"), b"VALUE k 0 2\r\nhiXX", 64);
    assert_eq!(
        bad_trailer,
        Err("memcached sent invalid trailer".to_string())
    );
    let cut = drive(&mut Memcached::new(b"k"), b"VALUE k 0 5\r\nhel", 64);
    assert_eq!(
        cut,
        Err("upstream prematurely closed connection".to_string())
    );
    let other_key = drive(&mut Memcached::new(b"k"), b"VALUE x 0 1\r\n", 64);
    assert!(other_key.is_err_and(|e| e.contains("memcached sent invalid key in response")));
}

#[test]
fn http_runs_through_the_same_loop() {
    let answer = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    for piece in [1, 3, answer.len()] {
        let got = drive(&mut Http::default(), answer, piece);
        assert_eq!(got, Ok((200, b"hello".to_vec(), true)), "pieces of {piece}");
    }
    let chunked =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n";
    assert_eq!(
        drive(&mut Http::default(), chunked, 4),
        Ok((200, b"hello".to_vec(), true))
    );
    let cut = b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhel";
    assert_eq!(
        drive(&mut Http::default(), cut, 64),
        Err("upstream prematurely closed connection".to_string())
    );
}
