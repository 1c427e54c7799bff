//! Two small content handlers that answer from memory: `stub_status`
//! (nginx's connection counters as text, `ngx_http_stub_status_module.c`)
//! and `empty_gif` (a 1×1 transparent GIF, `ngx_http_empty_gif_module.c`).
//! Both answer GET and HEAD only.

use crate::http::request::Method;
use crate::http::status::Status;
use crate::metrics::connections;

use crate::server::core::reply::{Body, Reply};
use crate::server::core::request::Req;

/// nginx's GIF, byte for byte.
pub const EMPTY_GIF: [u8; 43] = [
    b'G', b'I', b'F', b'8', b'9', b'a', // header
    0x01, 0x00, 0x01, 0x00, // logical screen: 1×1
    0x80, // global colour table flag, 2 entries
    0x01, // background colour
    0x00, // pixel aspect ratio
    0x00, 0x00, 0x00, // colour 0: black
    0xff, 0xff, 0xff, // colour 1: white
    0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x01, 0x00, // graphic control: transparent 1
    0x2c, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, // image descriptor
    0x02, 0x02, 0x4c, 0x01, 0x00, // image data
    0x3b, // trailer
];

/// The `Last-Modified` nginx gives the GIF (Sun, 28 Sep 1970 06:00:00 GMT).
pub const EMPTY_GIF_LAST_MODIFIED: i64 = 23_349_600;

/// Whether the method is one these handlers answer.
fn readable(r: &Req<'_>) -> bool {
    matches!(r.head.method, Method::Get | Method::Head)
}

/// `stub_status`.
pub fn stub_status(r: &Req<'_>) -> Reply {
    if !readable(r) {
        return Reply::special(Status::NOT_ALLOWED);
    }
    let text = connections::stub_status_text(&connections::snapshot());
    let mut reply = Reply::text(Status::OK, text, "text/plain");
    reply.content = true;
    reply
}

/// `empty_gif`.
pub fn empty_gif(r: &Req<'_>) -> Reply {
    if !readable(r) {
        return Reply::special(Status::NOT_ALLOWED);
    }
    let mut reply = Reply::new(Status::OK, Body::Bytes(EMPTY_GIF.to_vec()));
    reply.content_type = Some("image/gif".into());
    reply.last_modified = Some(EMPTY_GIF_LAST_MODIFIED);
    reply.content = true;
    reply
}
