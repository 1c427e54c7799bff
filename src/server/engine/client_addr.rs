//! A client's address: an IP address and port, or a unix-domain peer
//! (`listen unix:`), with the texts nginx makes of it (`$remote_addr`,
//! `$binary_remote_addr`, `client:` in the error log).
//!
//! A unix-domain peer is `unix:` followed by the path its socket is bound
//! to, which for almost every client is none (nginx's `ngx_sock_ntop`
//! prints `unix:` for an unnamed or abstract peer too).

use std::borrow::Cow;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use crate::config::listen_addr::UNIX_PREFIX;

/// Where a connection comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientAddr {
    /// An IP client.
    Inet(SocketAddr),
    /// A unix-domain client, with the path its socket is bound to, if any.
    Unix(Option<Arc<Path>>),
}

impl ClientAddr {
    /// A unix-domain peer as `accept()` reports it.
    pub fn unix(path: Option<&Path>) -> ClientAddr {
        ClientAddr::Unix(path.filter(|p| !p.as_os_str().is_empty()).map(Arc::from))
    }

    /// The IP address; `None` for a unix-domain client.
    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            ClientAddr::Inet(a) => Some(a.ip()),
            ClientAddr::Unix(_) => None,
        }
    }

    /// The port (`$remote_port`); 0 for a unix-domain client, and for an
    /// address `realip` took from a header without one.
    pub fn port(&self) -> u16 {
        match self {
            ClientAddr::Inet(a) => a.port(),
            ClientAddr::Unix(_) => 0,
        }
    }

    /// `$binary_remote_addr`: the address's 4 or 16 bytes; for a
    /// unix-domain client its text (`unix:`), as nginx
    /// (`ngx_http_variable_binary_remote_addr` uses `addr_text`).
    pub fn binary(&self) -> Cow<'static, [u8]> {
        match self {
            ClientAddr::Inet(a) => Cow::Owned(match a.ip() {
                IpAddr::V4(v4) => v4.octets().to_vec(),
                IpAddr::V6(v6) => v6.octets().to_vec(),
            }),
            ClientAddr::Unix(None) => Cow::Borrowed(UNIX_PREFIX.as_bytes()),
            ClientAddr::Unix(Some(_)) => Cow::Owned(self.to_string().into_bytes()),
        }
    }
}

impl From<SocketAddr> for ClientAddr {
    fn from(a: SocketAddr) -> ClientAddr {
        ClientAddr::Inet(a)
    }
}

impl fmt::Display for ClientAddr {
    /// nginx's `addr_text` (`$remote_addr`, `client: …`): the IP without
    /// the port, or `unix:` and the peer's path.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientAddr::Inet(a) => write!(f, "{}", a.ip()),
            ClientAddr::Unix(None) => f.write_str(UNIX_PREFIX),
            ClientAddr::Unix(Some(p)) => write!(f, "{UNIX_PREFIX}{}", p.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_nginx_s() {
        let v4 = ClientAddr::from("127.0.0.1:5000".parse::<SocketAddr>().unwrap());
        assert_eq!((v4.to_string(), v4.port()), ("127.0.0.1".into(), 5000));
        assert_eq!(&v4.binary()[..], &[127, 0, 0, 1]);
        let v6 = ClientAddr::from("[::1]:5000".parse::<SocketAddr>().unwrap());
        assert_eq!(v6.to_string(), "::1");
        assert_eq!(v6.binary().len(), 16);
        let unnamed = ClientAddr::unix(None);
        assert_eq!((unnamed.to_string(), unnamed.port()), ("unix:".into(), 0));
        assert_eq!(&unnamed.binary()[..], b"unix:");
        assert_eq!(unnamed.ip(), None);
        assert_eq!(ClientAddr::unix(Some(Path::new(""))), unnamed);
        let bound = ClientAddr::unix(Some(Path::new("/tmp/c.sock")));
        assert_eq!(bound.to_string(), "unix:/tmp/c.sock");
        assert_eq!(&bound.binary()[..], b"unix:/tmp/c.sock");
    }
}
