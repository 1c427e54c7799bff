//! The HTTP/1 connection: from an accepted socket to requests handed to
//! the core, and back to bytes.
//!
//! - [`conn`]: one connection's loop: head, body, reply, keep-alive.
//! - [`conn_buf`]: its read buffer, given back between requests.
//! - [`read`]: reading heads and bodies within limits, lingering close.
//! - [`max_headers`]: the `max_headers` check on a head.
//! - [`hot_wait`]: the moment between a reply and parking, for a
//!   pipelined or quick next request.
//! - [`park`]: connections waiting for a request, held outside any task
//!   (a slab and a deadline queue per worker); handed to the next
//!   generation on reload.

pub mod conn;
pub mod conn_buf;
pub mod hot_wait;
pub mod max_headers;
pub mod park;
pub mod read;
