//! Bodies that stream: the pieces a response body is made of when it is not
//! a file or bytes known in advance — an upstream's response read as it
//! arrives — and the tools around them: a chunked encoder for clients that
//! need framing, a tee that hands the same bytes to a second consumer (the
//! cache writer), and the spool that lets a reader run ahead of a slow
//! client within `proxy_buffers` and a temp file.
//!
//! This room sits below `server`, `upstream` and `cache`: they all point
//! down to it, it points up to none of them.
//!
//! - [`source`]: the [`Source`] trait every streaming body implements, and
//!   [`source::Teed`], the tee.
//! - [`chunked`]: `Transfer-Encoding: chunked` framing for the client.
//! - [`upgrade`]: what follows a `101` (the bytes of an upgraded connection).
//! - [`range`]: one byte range of a streamed body.
//! - [`file`]: a range of a file read piece by piece (for body filters).

pub mod chunked;
pub mod file;
pub mod range;
pub mod source;
pub mod upgrade;

pub use source::{Source, SourceError, Tee, Teed};
pub use upgrade::{Upgrade, UpgradeError};
