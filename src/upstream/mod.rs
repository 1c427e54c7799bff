//! The upstream room: everything between a request that `proxy_pass`es and
//! the servers of an `upstream` group. It sits below `server/` and never
//! imports it; the proxy calls into it.
//!
//! - [`peer`]: what a peer is (address, `server` line parameters) and its
//!   counters.
//! - [`balance`]: choosing a peer per attempt as nginx 1.22.1's balancers do
//!   (round robin, `least_conn`, `ip_hash`, `hash [consistent]`,
//!   `random [two]`), failures and `backup` peers included. Pure logic.
//! - [`split`]: `split_clients`' choice of a part (MurmurHash2).
//! - [`head`]: an upstream's response head, read as nginx 1.22's proxy
//!   module reads it, and the body framing it announces.
//! - [`body`]: the response body decoder (length, chunked, until close) and
//!   whether the connection may be kept alive after it.
//! - [`conn`]: connections to upstreams (TCP, unix sockets, TLS), in use
//!   or idle.
//! - [`tls`]: TLS to an upstream: its name, the handshake, the check of
//!   its certificate after it (`proxy_ssl_*`).
//! - [`idle`]: a worker's own idle upstream connections, still registered
//!   with its reactor (the keep-alive cache's first tier).
//! - [`keepalive`]: the process's tier of idle upstream connections, where
//!   they outlive a worker (a reload).
//! - [`resolve`]: `resolver`: names looked up at request time over UDP,
//!   without blocking, and kept for their TTL.
//! - [`wire`]: the FastCGI, uwsgi, SCGI and memcached wire formats, pure
//!   codecs without I/O.
//!
//! Like the balancer, the rest owns no configuration parsing: `config/`
//! builds the [`peer::PeerSpec`]s and the [`balance::Balance`].

pub mod balance;
pub mod body;
pub mod conn;
pub mod head;
pub mod idle;
pub mod keepalive;
pub mod peer;
pub mod resolve;
pub mod split;
pub mod tls;
pub mod wire;

pub use balance::{Balance, GroupError, Outcome, PeerGroup, Pick, PickCtx, Tried};
pub use peer::{PeerAddr, PeerId, PeerSpec, PeerStats};
