//! The upstream room: response heads now; balancing, connections and
//! keep-alive come next.
//!
//! Sits below `server/` and never imports it: the proxy handler hands it
//! bytes read from an upstream and gets back what they mean.
//!
//! - [`head`]: an upstream's response head, read as nginx 1.22's proxy
//!   module reads it, and the body framing it announces.
//! - [`body`]: the response body decoder (length, chunked, until close) and
//!   whether the connection may be kept alive after it.

pub mod body;
pub mod head;
