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
//! To come, each in a module of its own: the index (the keys zone: nodes,
//! LRU, sizes), the loader (the walk that fills the index from disk), the
//! manager (`inactive`, `max_size`, `min_free` eviction), fill (the tee
//! that writes a temp file and publishes it by rename), hit (open, read the
//! header off the loop, check, serve), and lock (`proxy_cache_lock`). Only
//! those do I/O, and only through the file layer; the modules here are
//! pure.

pub mod fill;
pub mod format;
pub mod hit;
pub mod key;
pub mod loader;
pub mod manager;
pub mod policy;
pub mod zone;
