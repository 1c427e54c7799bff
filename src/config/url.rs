//! nginx's `ngx_parse_url` for upstream addresses: `host[:port][/uri]`,
//! `[v6]:port`, `unix:/path[:uri]`, with nginx's error words (`invalid
//! port`, `no host`, `host not found`, …) for the caller to finish as
//! `… in upstream "X"`.
//!
//! Names are resolved with the system resolver (`getaddrinfo` through
//! `std::net::ToSocketAddrs`), which can block: this runs while loading the
//! configuration on the main thread, never on a worker's event loop.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;

use super::model::UpstreamAddr;

/// The longest Unix socket path, with its terminating NUL (`sun_path`).
pub const SUN_PATH_LEN: usize = 108;

/// What to parse and how, as nginx's `ngx_url_t` flags.
#[derive(Clone, Copy, Debug)]
pub struct UrlOptions {
    /// The port when none is written.
    pub default_port: u16,
    /// A URI may follow the address (`proxy_pass`); otherwise `/` is an
    /// invalid host (`server`).
    pub uri_part: bool,
    /// Resolve a host name now; otherwise leave `addrs` empty for it.
    pub resolve: bool,
}

/// A parsed address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedUrl {
    /// nginx's `u->host`: the host as written (`[::1]` with brackets), or
    /// the socket path for `unix:`.
    pub host: String,
    /// The port, the default when none was written; 0 for a socket.
    pub port: u16,
    /// The port as written (`08080`), when one was.
    pub port_text: Option<String>,
    /// No port was written (never set for a socket, as in nginx).
    pub no_port: bool,
    /// The URI part (`/x`, `?a`), empty when absent.
    pub uri: String,
    /// The addresses: one for a literal address or a socket, every resolved
    /// address for a name when resolving, none otherwise.
    pub addrs: Vec<UpstreamAddr>,
    /// A Unix-domain socket.
    pub unix: bool,
}

/// Parses `url` (without any `http://`) as `ngx_parse_url` does. The error
/// is nginx's `u->err`.
pub fn parse_url(url: &str, opts: UrlOptions) -> Result<ParsedUrl, &'static str> {
    if url.len() >= 5 && url.as_bytes()[..5].eq_ignore_ascii_case(b"unix:") {
        return parse_unix(url, opts);
    }
    if url.starts_with('[') {
        return parse_inet6(url, opts);
    }
    parse_inet(url, opts)
}

fn parse_unix(url: &str, opts: UrlOptions) -> Result<ParsedUrl, &'static str> {
    let rest = &url[5..];
    let (path, uri) = match rest.find(':') {
        Some(i) if opts.uri_part => (&rest[..i], &rest[i + 1..]),
        _ => (rest, ""),
    };
    if path.is_empty() {
        return Err("no path in the unix domain socket");
    }
    if path.len() + 1 > SUN_PATH_LEN {
        return Err("too long path in the unix domain socket");
    }
    Ok(ParsedUrl {
        host: path.to_string(),
        port: 0,
        port_text: None,
        no_port: false,
        uri: uri.to_string(),
        addrs: vec![UpstreamAddr::Unix(PathBuf::from(path))],
        unix: true,
    })
}

/// nginx's `ngx_atoi` for a port: digits only, 1..=65535.
fn port_number(s: &str) -> Result<u16, &'static str> {
    match super::value::number(s) {
        Some(n @ 1..=65535) => Ok(n as u16),
        _ => Err("invalid port"),
    }
}

fn parse_inet(url: &str, opts: UrlOptions) -> Result<ParsedUrl, &'static str> {
    let mut last = url.len();
    let mut port_at = url.find(':');
    let mut uri_at = url.find('/');
    if let Some(q) = url.find('?') {
        if uri_at.is_none_or(|u| q < u) {
            uri_at = Some(q);
        }
    }
    let mut uri = "";
    if let Some(u) = uri_at {
        if !opts.uri_part {
            return Err("invalid host");
        }
        uri = &url[u..];
        last = u;
        if port_at.is_some_and(|p| u < p) {
            port_at = None;
        }
    }
    let (host, port, port_text, no_port) = match port_at {
        Some(p) => {
            let text = &url[p + 1..last];
            (&url[..p], port_number(text)?, Some(text.to_string()), false)
        }
        None => (&url[..last], opts.default_port, None, true),
    };
    if host.is_empty() {
        return Err("no host");
    }
    let mut parsed = ParsedUrl {
        host: host.to_string(),
        port,
        port_text,
        no_port,
        uri: uri.to_string(),
        addrs: Vec::new(),
        unix: false,
    };
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        parsed
            .addrs
            .push(UpstreamAddr::Inet(SocketAddr::new(IpAddr::V4(ip), port)));
        return Ok(parsed);
    }
    if opts.resolve {
        parsed.addrs = resolve(host, port)?;
    }
    Ok(parsed)
}

fn parse_inet6(url: &str, opts: UrlOptions) -> Result<ParsedUrl, &'static str> {
    let close = url.find(']').ok_or("invalid host")?;
    let mut last = url.len();
    let mut uri = "";
    if let Some(u) = url[close + 1..].find('/').map(|u| u + close + 1) {
        if !opts.uri_part {
            return Err("invalid host");
        }
        uri = &url[u..];
        last = u;
    }
    let after = &url[close + 1..last];
    let (port, port_text, no_port) = if after.is_empty() {
        (opts.default_port, None, true)
    } else {
        let text = after.strip_prefix(':').ok_or("invalid host")?;
        (port_number(text)?, Some(text.to_string()), false)
    };
    let inner = &url[1..close];
    if inner.is_empty() {
        return Err("no host");
    }
    let ip: Ipv6Addr = inner.parse().map_err(|_| "invalid IPv6 address")?;
    Ok(ParsedUrl {
        host: url[..close + 1].to_string(),
        port,
        port_text,
        no_port,
        uri: uri.to_string(),
        addrs: vec![UpstreamAddr::Inet(SocketAddr::new(IpAddr::V6(ip), port))],
        unix: false,
    })
}

/// Resolves a host name to every IPv4 and IPv6 address it has, each with
/// `port`, in the resolver's order (`ngx_inet_resolve_host`).
pub fn resolve(host: &str, port: u16) -> Result<Vec<UpstreamAddr>, &'static str> {
    let addrs: Vec<UpstreamAddr> = super::names::lookup(host, port)
        .map_err(|_| "host not found")?
        .into_iter()
        .map(UpstreamAddr::Inet)
        .collect();
    if addrs.is_empty() {
        return Err("host not found");
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASS: UrlOptions = UrlOptions {
        default_port: 80,
        uri_part: true,
        resolve: false,
    };
    const SERVER: UrlOptions = UrlOptions {
        default_port: 80,
        uri_part: false,
        resolve: true,
    };

    fn inet(s: &str) -> UpstreamAddr {
        UpstreamAddr::Inet(s.parse().unwrap())
    }

    #[test]
    fn hosts_ports_and_uris() {
        let u = parse_url("127.0.0.1:8080/x/", PASS).unwrap();
        assert_eq!(u.host, "127.0.0.1");
        assert_eq!((u.port, u.no_port), (8080, false));
        assert_eq!(u.uri, "/x/");
        assert_eq!(u.addrs, vec![inet("127.0.0.1:8080")]);

        let u = parse_url("backend", PASS).unwrap();
        assert_eq!((u.host.as_str(), u.port, u.no_port), ("backend", 80, true));
        assert!(u.addrs.is_empty(), "not resolved without `resolve`");

        // A `?` starts the URI too, and a colon after the URI is not a port.
        let u = parse_url("h?a=1:2", PASS).unwrap();
        assert_eq!((u.host.as_str(), u.uri.as_str()), ("h", "?a=1:2"));
        let u = parse_url("h/a:b", PASS).unwrap();
        assert_eq!((u.port, u.uri.as_str()), (80, "/a:b"));

        let u = parse_url("[::1]:81/p", PASS).unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.uri.as_str()),
            ("[::1]", 81, "/p")
        );
        assert_eq!(u.addrs, vec![inet("[::1]:81")]);
    }

    #[test]
    fn unix_sockets() {
        let u = parse_url("unix:/tmp/s.sock:/uri/", PASS).unwrap();
        assert_eq!(u.host, "/tmp/s.sock");
        assert_eq!(u.uri, "/uri/");
        assert!(u.unix && !u.no_port && u.port == 0);
        assert_eq!(u.addrs, vec![UpstreamAddr::Unix("/tmp/s.sock".into())]);
        // Without a URI part the colon belongs to the path.
        let u = parse_url("UNIX:/tmp/a:b", SERVER).unwrap();
        assert_eq!(u.host, "/tmp/a:b");
        assert_eq!(
            parse_url("unix:", PASS),
            Err("no path in the unix domain socket")
        );
        let long = format!("unix:/{}", "a".repeat(SUN_PATH_LEN));
        assert_eq!(
            parse_url(&long, SERVER),
            Err("too long path in the unix domain socket")
        );
    }

    #[test]
    fn nginx_errors() {
        assert_eq!(parse_url("a/b", SERVER), Err("invalid host"));
        assert_eq!(parse_url("a?b", SERVER), Err("invalid host"));
        assert_eq!(parse_url("a:0", SERVER), Err("invalid port"));
        assert_eq!(parse_url("a:", PASS), Err("invalid port"));
        assert_eq!(parse_url("a:65536", PASS), Err("invalid port"));
        assert_eq!(parse_url("a:8x", PASS), Err("invalid port"));
        assert_eq!(parse_url("", PASS), Err("no host"));
        assert_eq!(parse_url(":80", PASS), Err("no host"));
        assert_eq!(parse_url("/x", PASS), Err("no host"));
        assert_eq!(parse_url("[::1", PASS), Err("invalid host"));
        assert_eq!(parse_url("[::1]x", PASS), Err("invalid host"));
        assert_eq!(parse_url("[]:80", PASS), Err("no host"));
        assert_eq!(parse_url("[zz]:80", PASS), Err("invalid IPv6 address"));
        assert_eq!(parse_url("[::1]/x", SERVER), Err("invalid host"));
        assert_eq!(
            parse_url("nonexistent.invalid:80", SERVER),
            Err("host not found")
        );
    }

    #[test]
    fn names_resolve_to_every_address() {
        let u = parse_url("localhost:8080", SERVER).unwrap();
        assert!(!u.addrs.is_empty());
        for a in &u.addrs {
            match a {
                UpstreamAddr::Inet(sa) => {
                    assert_eq!(sa.port(), 8080);
                    assert!(sa.ip().is_loopback(), "{sa}");
                }
                UpstreamAddr::Unix(_) => panic!("{a:?}"),
            }
        }
    }
}
