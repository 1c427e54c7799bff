//! The address a `listen` names: an IP address and port, or a unix-domain
//! socket's path (`listen unix:/run/nowait.sock;`). It keys the listening
//! sockets, the virtual servers of each address and what the privileged
//! helper agrees to bind, and is a connection's local address
//! (`$server_addr`).
//!
//! What this module must not do: resolve names or touch the socket file.

use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

/// nginx's prefix of a unix-domain socket address (`unix:/path`).
pub const UNIX_PREFIX: &str = "unix:";

/// A listening address, inet or unix-domain.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ListenAddr {
    /// An IP address and port.
    Inet(SocketAddr),
    /// A unix-domain socket's path (never empty: the parser refuses it).
    /// Shared: every connection accepted on it names it as its local
    /// address.
    Unix(Arc<Path>),
}

impl ListenAddr {
    /// The IP address and port; `None` for a unix-domain socket.
    pub fn inet(&self) -> Option<SocketAddr> {
        match self {
            ListenAddr::Inet(a) => Some(*a),
            ListenAddr::Unix(_) => None,
        }
    }

    /// The socket file's path; `None` for an inet address.
    pub fn unix_path(&self) -> Option<&Path> {
        match self {
            ListenAddr::Inet(_) => None,
            ListenAddr::Unix(p) => Some(p),
        }
    }

    /// The port (`$server_port`); 0 for a unix-domain socket, which has
    /// none (nginx's `ngx_inet_get_port`).
    pub fn port(&self) -> u16 {
        self.inet().map_or(0, |a| a.port())
    }

    /// The address without the port, as nginx prints a connection's local
    /// address (`$server_addr`, a `Location` made absolute without a
    /// `Host`): `127.0.0.1`, `::1`, `unix:/path`.
    pub fn host_text(&self) -> String {
        match self {
            ListenAddr::Inet(a) => a.ip().to_string(),
            ListenAddr::Unix(p) => format!("{UNIX_PREFIX}{}", p.display()),
        }
    }

    /// Parses what [`fmt::Display`] wrote (`127.0.0.1:80`, `[::1]:80`,
    /// `unix:/path`): the privileged helper's wire form.
    pub fn parse_text(s: &str) -> Option<ListenAddr> {
        match s.strip_prefix(UNIX_PREFIX) {
            Some("") => None,
            Some(path) => Some(ListenAddr::Unix(Arc::from(Path::new(path)))),
            None => s.parse().ok().map(ListenAddr::Inet),
        }
    }
}

impl From<SocketAddr> for ListenAddr {
    fn from(a: SocketAddr) -> ListenAddr {
        ListenAddr::Inet(a)
    }
}

impl fmt::Display for ListenAddr {
    /// nginx's `addr_text` of a listening socket: `127.0.0.1:80`,
    /// `[::1]:80`, `unix:/path`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Inet(a) => write!(f, "{a}"),
            ListenAddr::Unix(p) => write!(f, "{UNIX_PREFIX}{}", p.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_and_reads_as_nginx_prints_it() {
        for s in ["127.0.0.1:80", "[::1]:8080", "unix:/run/a b.sock"] {
            let a = ListenAddr::parse_text(s).unwrap();
            assert_eq!(a.to_string(), s);
        }
        let u = ListenAddr::parse_text("unix:/tmp/x.sock").unwrap();
        assert_eq!(u.host_text(), "unix:/tmp/x.sock");
        assert_eq!(u.port(), 0);
        assert_eq!(u.unix_path(), Some(Path::new("/tmp/x.sock")));
        let i = ListenAddr::parse_text("[::1]:8080").unwrap();
        assert_eq!((i.host_text(), i.port()), ("::1".to_string(), 8080));
        assert_eq!(ListenAddr::parse_text("unix:"), None);
        assert_eq!(ListenAddr::parse_text("not an address"), None);
    }
}
