//! The HTTP/1.1 protocol pieces that do no I/O: pure functions and types,
//! used by the connection state machine in `server` and tested in isolation.
//!
//! Must not: read sockets or files, look at the clock, or log. Every input
//! (bytes, times, file metadata) is passed in by the caller.
//!
//! - [`request`]: request heads (`httparse`), with nginx's smuggling checks.
//! - [`head_scan`]: nginx's request-line and header-line state machines.
//! - [`head_error`]: why a head was refused: status and nginx log words.
//! - [`uri`]: request targets → `$uri`, `$args`; host validation; escaping.
//! - [`escape`]: the escaping and unescaping of `rewrite` replacements.
//! - [`range`]: `Range`/`If-Range` and `multipart/byteranges` framing.
//! - [`conditional`]: nginx's not-modified filter (304 / 412).
//! - [`etag`]: nginx-style ETags.
//! - [`field_name`]: header field names compared without case, a word at a time.
//! - [`date`]: HTTP-date formatting and parsing, the cached `Date` value.
//! - [`status`]: reason phrases, built-in error pages, closing statuses.
//! - [`response`]: response heads in nginx's header order.
//! - [`chunked`]: incremental chunked request-body decoding.
//! - [`mime`]: extension → MIME type lookup.
//! - [`charset`]: charsets, `charset_map` tables and body recoding.
//! - [`listing`]: the autoindex module's directory listings (HTML, JSON, XML).
//! - [`gzip`]: when a response may be compressed (`Accept-Encoding`, `gzip_proxied`).
//! - [`unsafe_uri`]: URIs the server writes itself (SSI `include`): split,
//!   decoded, checked.
//! - [`user_agent`]: the browser families nginx reads from `User-Agent`.

pub mod charset;
pub mod chunked;
pub mod conditional;
pub mod date;
pub mod decimal;
pub mod escape;
pub mod etag;
pub mod field_name;
pub mod gzip;
pub mod head_error;
pub mod head_scan;
pub mod listing;
pub mod mime;
pub mod range;
pub mod request;
pub mod response;
pub mod status;
pub mod unsafe_uri;
pub mod uri;
pub mod user_agent;
