//! The HTTP/1.1 protocol pieces that do no I/O: pure functions and types,
//! used by the connection state machine in `server` and tested in isolation.
//!
//! Must not: read sockets or files, look at the clock, or log. Every input
//! (bytes, times, file metadata) is passed in by the caller.
//!
//! - [`request`]: request heads (`httparse`), with nginx's smuggling checks.
//! - [`head_error`]: why a head was refused: status and nginx log words.
//! - [`uri`]: request targets → `$uri`, `$args`; host validation; escaping.
//! - [`escape`]: the escaping and unescaping of `rewrite` replacements.
//! - [`range`]: `Range`/`If-Range` and `multipart/byteranges` framing.
//! - [`conditional`]: nginx's not-modified filter (304 / 412).
//! - [`etag`]: nginx-style ETags.
//! - [`date`]: HTTP-date formatting and parsing, the cached `Date` value.
//! - [`status`]: reason phrases, built-in error pages, closing statuses.
//! - [`response`]: response heads in nginx's header order.
//! - [`chunked`]: incremental chunked request-body decoding.
//! - [`mime`]: extension → MIME type lookup.
//! - [`user_agent`]: the browser families nginx reads from `User-Agent`.

pub mod chunked;
pub mod conditional;
pub mod date;
pub mod escape;
pub mod etag;
pub mod head_error;
pub mod mime;
pub mod range;
pub mod request;
pub mod response;
pub mod status;
pub mod uri;
pub mod user_agent;
