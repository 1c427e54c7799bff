//! Bodies that stream: the pieces a response body is made of when it is not
//! a file or bytes known in advance — an upstream's response read as it
//! arrives — and the tools around them: a chunked encoder for clients that
//! need framing, a tee that hands the same bytes to a second consumer (the
//! cache writer), and the spool that lets a reader run ahead of a slow
//! client within `proxy_buffers` and a temp file.
//!
//! This room sits below `server`, `upstream` and `cache`: they all point
//! down to it, it points up to none of them. It stands on `io` (a file read
//! as a body) and `http`.
//!
//! - [`source`]: the [`Source`] trait every streaming body implements, and
//!   [`source::Teed`], the tee.
//! - [`file`]: a file's bytes as a streamed body, read through the file
//!   layer (`io`), for the filters that rewrite bodies (gzip, charset).
//! - [`chunked`]: `Transfer-Encoding: chunked` framing for the client.
//! - [`upgrade`]: what follows a `101` (the bytes of an upgraded connection).
//! - [`range`]: one byte range of a streamed body.
//! - [`gzip`], [`gunzip`]: a body compressed or decompressed as it streams.
//! - [`recode`]: a body recoded between charsets as it streams.

pub mod chunked;
pub mod file;
pub mod gunzip;
pub mod gzip;
pub mod range;
pub mod recode;
pub mod source;
pub mod upgrade;

pub use source::{Source, SourceError, Tee, Teed};
pub use upgrade::{Upgrade, UpgradeError};
