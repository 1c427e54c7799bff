//! The cache room: nginx 1.22.1's `proxy_cache`, file for file compatible
//! with nginx's cache directories. It sits below `server/` and never
//! imports it; the proxy calls into it, and it reaches the upstream only
//! through the response head and the body stream.
//!
//! Split as pingora-cache splits it, one concept per module:
//!
//! - [`key`]: the evaluated `proxy_cache_key` → MD5 (identity, file name)
//!   and CRC32; the path under `levels`; the `Vary` variant hash.
//! - [`format`]: the on-disk entry (nginx's header struct, version 5, the
//!   `KEY:` line, the upstream head, the body): encode, decode with nginx's
//!   checks and log words, the header rewrite after a `304`.
//! - [`policy`]: whether a response is stored and until when
//!   (`X-Accel-Expires`, `Cache-Control`, `Expires`, `proxy_cache_valid`,
//!   `Set-Cookie`, `Vary`), and what a cached location changes in the
//!   request sent upstream.
//!
//! - [`zone`]: the keys zone (nodes, LRU, sizes, the fill lock, cached
//!   error statuses), shared by every worker.
//! - [`loader`] and [`manager`]: the threads that fill the zone from disk
//!   and expire entries (`inactive`, `max_size`, `min_free`).
//! - [`fill`]: the tee that writes a temp file and publishes it by rename.
//! - [`backlog`]: what a fill holds that the disk has not taken, bounded
//!   per fill and per zone; the writer's batches.
//! - [`share`]: read-while-write, a fill's temp file streamed to the
//!   requests waiting on `proxy_cache_lock`.
//! - [`hit`]: open, read the header off the loop, check.
//! - [`store`]: `proxy_store`, a response kept as a plain file under root.
//!
//! Only the last five do I/O, and only through the file layer (the
//! loader and manager on threads of their own); the others are pure.

pub mod backlog;
pub mod fill;
pub mod format;
pub mod hit;
pub mod key;
pub mod loader;
pub mod manager;
pub mod policy;
pub mod share;
pub mod store;
pub mod zone;
