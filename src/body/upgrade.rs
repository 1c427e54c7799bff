//! [`Upgrade`]: what follows a `101 Switching Protocols` reply — the
//! connection stops being HTTP and its bytes go both ways to wherever the
//! handler decides (an upstream, for a proxied WebSocket).

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use crate::io::client_stream::ClientStream;

/// Why an upgraded connection ended other than by a close.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpgradeError {
    /// A socket failed.
    Closed,
    /// The upstream was silent past `proxy_read_timeout`, or took no bytes
    /// for `proxy_send_timeout`.
    UpstreamTimedOut,
    /// The client took no bytes for `send_timeout`.
    ClientTimedOut,
}

impl fmt::Display for UpgradeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UpgradeError::Closed => "connection closed",
            UpgradeError::UpstreamTimedOut => {
                "upstream timed out (110: Connection timed out) while proxying upgraded connection"
            }
            UpgradeError::ClientTimedOut => {
                "client timed out (110: Connection timed out) while proxying upgraded connection"
            }
        })
    }
}

/// The other end of an upgraded connection.
pub trait Upgrade {
    /// Runs the connection until either side closes. `client_leftover`:
    /// bytes the client sent after its request head, to pass on first;
    /// `sent` counts the bytes written to the client (nginx counts them as
    /// the response's body: `$body_bytes_sent`).
    fn run<'a>(
        self: Box<Self>,
        client: &'a ClientStream,
        client_leftover: Vec<u8>,
        sent: &'a std::cell::Cell<u64>,
    ) -> Pin<Box<dyn Future<Output = Result<(), UpgradeError>> + 'a>>;
}
