//! `realip`: the client's address as a trusted proxy reports it
//! (`ngx_http_realip_module.c`). When the connection comes from an address
//! in `set_real_ip_from`, the address in `real_ip_header` replaces the
//! request's `$remote_addr` and `$remote_port` — for everything the
//! request does after (access rules, limits, logs, `X-Forwarded-For` to
//! upstreams, `ip_hash`) — and `$realip_remote_addr` keeps the original.
//!
//! This file is pure: it computes the address; `super` applies it.

use std::net::{IpAddr, SocketAddr};

use crate::config::access_model::{RealIpFrom, RealIpHeader, inet_addr, inet6_addr};
use crate::config::inherit::LocConf;
use crate::http::request::RequestHead;

use crate::server::engine::client_addr::ClientAddr;

/// Whether `addr` is one `from` trusts (`ngx_cidr_match`: `unix:` trusts
/// every unix-domain client, a CIDR the addresses in it).
fn trusted(from: &[RealIpFrom], addr: &ClientAddr) -> bool {
    from.iter().any(|f| match (f, addr.ip()) {
        (RealIpFrom::Cidr(c), Some(ip)) => c.contains(ip),
        (RealIpFrom::Unix, None) => true,
        _ => false,
    })
}

/// `ngx_parse_addr`: a bare IPv4 or IPv6 address.
fn parse_addr(s: &[u8]) -> Option<IpAddr> {
    inet_addr(s)
        .map(IpAddr::V4)
        .or_else(|| inet6_addr(s).map(IpAddr::V6))
}

/// `ngx_parse_addr_port`: an address, `a.b.c.d:port` or `[v6]:port`
/// (port 0 when none is given).
fn parse_addr_port(s: &[u8]) -> Option<SocketAddr> {
    if let Some(ip) = parse_addr(s) {
        return Some(SocketAddr::new(ip, 0));
    }
    let (host, port) = if s.first() == Some(&b'[') {
        let close = s.iter().position(|&c| c == b']')?;
        if close + 1 >= s.len() || s[close + 1] != b':' {
            return None;
        }
        (&s[1..close], &s[close + 2..])
    } else {
        let colon = s.iter().position(|&c| c == b':')?;
        (&s[..colon], &s[colon + 1..])
    };
    let port = std::str::from_utf8(port).ok()?;
    let port = crate::config::value::number(port).filter(|p| (1..=65535).contains(p))?;
    Some(SocketAddr::new(parse_addr(host)?, port as u16))
}

/// What one header's list of addresses gave.
enum Found {
    /// The peer is not trusted, or the last address does not parse.
    Declined,
    /// An address was taken, and the walk ended on an untrusted hop or a
    /// bad address (nginx's `NGX_DONE`).
    Done,
    /// The whole list was walked (nginx's `NGX_OK`).
    Ok,
}

/// `ngx_http_get_forwarded_addr_internal`: walks `xff` from its end while
/// each hop is trusted (only the last one without `recursive`).
fn forwarded(addr: &mut ClientAddr, xff: &[u8], from: &[RealIpFrom], recursive: bool) -> Found {
    let mut found = false;
    let mut len = xff.len();
    loop {
        if !trusted(from, addr) {
            return if found { Found::Done } else { Found::Declined };
        }
        // Trailing spaces and commas.
        let mut p = len.saturating_sub(1);
        while p > 0 && (xff[p] == b' ' || xff[p] == b',') {
            p -= 1;
            len -= 1;
        }
        // The last item starts after the previous space or comma.
        while p > 0 {
            if xff[p] == b' ' || xff[p] == b',' {
                p += 1;
                break;
            }
            p -= 1;
        }
        let Some(a) = parse_addr_port(&xff[p..len]) else {
            return if found { Found::Done } else { Found::Declined };
        };
        *addr = ClientAddr::Inet(a);
        found = true;
        len = p.saturating_sub(1);
        if !(recursive && p > 0) {
            return Found::Ok;
        }
    }
}

/// The request's address when `conf` says to take it from a header, else
/// `None` (`ngx_http_realip_handler` and `ngx_http_get_forwarded_addr`).
pub fn real_addr(conf: &LocConf, head: &RequestHead, peer: &ClientAddr) -> Option<SocketAddr> {
    if conf.real_ip_from.is_empty() {
        return None;
    }
    let from = &conf.real_ip_from;
    let recursive = conf.real_ip_recursive;
    let mut addr = peer.clone();
    let single = |name: &str| head.header(name);
    let found = match &conf.real_ip_header {
        RealIpHeader::XRealIp => forwarded(&mut addr, single("x-real-ip")?, from, recursive),
        RealIpHeader::Other(name) => forwarded(&mut addr, single(name)?, from, recursive),
        RealIpHeader::XForwardedFor => {
            // Every X-Forwarded-For field, the last one first.
            let fields: Vec<&[u8]> = head
                .headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case("x-forwarded-for"))
                .map(|(_, v)| v)
                .collect();
            if fields.is_empty() {
                return None;
            }
            let mut rc = Found::Declined;
            let mut any = false;
            for v in fields.iter().rev() {
                rc = forwarded(&mut addr, v, from, recursive);
                if !recursive {
                    break;
                }
                if matches!(rc, Found::Declined) && any {
                    rc = Found::Done;
                    break;
                }
                if !matches!(rc, Found::Ok) {
                    break;
                }
                any = true;
            }
            rc
        }
    };
    match (found, addr) {
        (Found::Done | Found::Ok, ClientAddr::Inet(a)) => Some(a),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::access_model::parse_cidr;

    fn conf(from: &[&str], header: RealIpHeader, recursive: bool) -> LocConf {
        LocConf {
            real_ip_from: from
                .iter()
                .map(|f| RealIpFrom::Cidr(parse_cidr(f).unwrap().cidr()))
                .collect(),
            real_ip_header: header,
            real_ip_recursive: recursive,
            ..LocConf::default()
        }
    }

    fn head(fields: &str) -> RequestHead {
        let raw = format!("GET / HTTP/1.0\r\n{fields}\r\n");
        crate::http::request::parse_head(raw.as_bytes())
            .unwrap()
            .unwrap()
            .0
    }

    const PEER: &str = "127.0.0.1:5000";

    fn real(c: &LocConf, fields: &str) -> Option<String> {
        let peer = ClientAddr::Inet(PEER.parse().unwrap());
        real_addr(c, &head(fields), &peer).map(|a| a.to_string())
    }

    #[test]
    fn x_real_ip_from_a_trusted_peer() {
        let c = conf(&["127.0.0.1/32"], RealIpHeader::XRealIp, false);
        assert_eq!(real(&c, "X-Real-IP: 192.0.2.1\r\n").unwrap(), "192.0.2.1:0");
        assert_eq!(
            real(&c, "X-Real-IP: 192.0.2.1:8080\r\n").unwrap(),
            "192.0.2.1:8080"
        );
        assert_eq!(
            real(&c, "X-Real-IP: [2001:db8::1]:81\r\n").unwrap(),
            "[2001:db8::1]:81"
        );
        assert_eq!(real(&c, "X-Real-IP: bogus\r\n"), None);
        assert_eq!(real(&c, ""), None);
        let untrusted = conf(&["10.0.0.0/8"], RealIpHeader::XRealIp, false);
        assert_eq!(real(&untrusted, "X-Real-IP: 192.0.2.1\r\n"), None);
    }

    #[test]
    fn x_forwarded_for_walks_back_while_trusted() {
        let xff = "X-Forwarded-For: 10.0.0.1, 192.0.2.1, 127.0.0.2\r\n";
        let plain = conf(&["127.0.0.0/8"], RealIpHeader::XForwardedFor, false);
        assert_eq!(real(&plain, xff).unwrap(), "127.0.0.2:0");
        let rec = conf(&["127.0.0.0/8"], RealIpHeader::XForwardedFor, true);
        assert_eq!(real(&rec, xff).unwrap(), "192.0.2.1:0");
        // Several fields: the last one first, then the earlier ones.
        let two = "X-Forwarded-For: 10.0.0.1\r\nX-Forwarded-For: 127.0.0.3, 127.0.0.2\r\n";
        assert_eq!(real(&rec, two).unwrap(), "10.0.0.1:0");
        assert_eq!(real(&plain, two).unwrap(), "127.0.0.2:0");
    }

    #[test]
    fn any_header_by_name() {
        let c = conf(
            &["127.0.0.1"],
            RealIpHeader::Other("x-client".into()),
            false,
        );
        assert_eq!(real(&c, "X-Client: 192.0.2.9\r\n").unwrap(), "192.0.2.9:0");
    }

    #[test]
    fn unix_trusts_unix_domain_clients_only() {
        let unix = ClientAddr::unix(None);
        let h = head("X-Real-IP: 192.0.2.1\r\n");
        let mut c = conf(&["127.0.0.1/32"], RealIpHeader::XRealIp, false);
        // realip_hostname.t: `set_real_ip_from localhost` is no unix: one.
        assert_eq!(real_addr(&c, &h, &unix), None);
        c.real_ip_from.push(RealIpFrom::Unix);
        assert_eq!(real_addr(&c, &h, &unix).unwrap().to_string(), "192.0.2.1:0");
        let only_unix = LocConf {
            real_ip_from: vec![RealIpFrom::Unix],
            ..LocConf::default()
        };
        assert_eq!(real(&only_unix, "X-Real-IP: 192.0.2.1\r\n"), None);
        // The hops after a unix-domain peer are inet: `unix:` trusts none.
        let xff = head("X-Forwarded-For: 192.0.2.7, 192.0.2.1\r\n");
        let rec = LocConf {
            real_ip_from: vec![RealIpFrom::Unix],
            real_ip_header: RealIpHeader::XForwardedFor,
            real_ip_recursive: true,
            ..LocConf::default()
        };
        assert_eq!(
            real_addr(&rec, &xff, &unix).unwrap().to_string(),
            "192.0.2.1:0"
        );
    }
}
