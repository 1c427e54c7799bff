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
//!
//! To come: the client (connecting, sending, reading the response head and
//! body stream) and the keep-alive pool of idle upstream connections. Like
//! the balancer, they own no configuration parsing: `config/` builds the
//! [`peer::PeerSpec`]s and the [`balance::Balance`].

pub mod balance;
pub mod peer;
pub mod split;

pub use balance::{Balance, GroupError, Outcome, PeerGroup, Pick, PickCtx, Tried};
pub use peer::{PeerAddr, PeerId, PeerSpec, PeerStats};
