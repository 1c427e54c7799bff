//! Host names in a configuration (`listen`, `server` of an `upstream`,
//! `proxy_pass`, `set_real_ip_from`), resolved when the configuration is
//! loaded — never on a loop — by the system resolver (`getaddrinfo`), as
//! nginx's `ngx_parse_url` does.
//!
//! The lookup can be replaced once per process ([`set_lookup`]): the
//! configuration fuzz target answers without a network, so that a mutated
//! host name costs a parse, not a resolver timeout.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::OnceLock;

/// A host name lookup: every address of `host` with `port`.
pub type Lookup = fn(&str, u16) -> io::Result<Vec<SocketAddr>>;

/// The lookup in use, when not the system's.
static LOOKUP: OnceLock<Lookup> = OnceLock::new();

/// Every address of `host` (a name or an address literal) with `port`, in
/// the resolver's order.
pub fn lookup(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    match LOOKUP.get() {
        Some(f) => f(host, port),
        None => system(host, port),
    }
}

/// Makes `f` this process's lookup; refused (`Err(f)`) once one was set.
pub fn set_lookup(f: Lookup) -> Result<(), Lookup> {
    LOOKUP.set(f)
}

/// The system resolver (`getaddrinfo`; address literals without it).
fn system(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    Ok((host, port).to_socket_addrs()?.collect())
}

/// A lookup that never leaves the process: address literals and
/// `localhost` (127.0.0.1 and ::1) resolve, every other name is not found.
pub fn offline(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    if host.eq_ignore_ascii_case("localhost") {
        return Ok(vec![
            SocketAddr::from(([127, 0, 0, 1], port)),
            SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port)),
        ]);
    }
    Err(io::Error::new(io::ErrorKind::NotFound, "host not found"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offline_lookup_answers_literals_and_localhost_only() {
        assert_eq!(
            offline("10.0.0.1", 80).unwrap(),
            vec!["10.0.0.1:80".parse().unwrap()]
        );
        assert_eq!(offline("LocalHost", 8080).unwrap().len(), 2);
        assert!(offline("example.org", 80).is_err());
        // The system lookup takes literals without a resolver too.
        assert_eq!(
            system("::1", 443).unwrap(),
            vec!["[::1]:443".parse().unwrap()]
        );
    }
}
