//! The typed configuration of the access-control and rate modules: `allow`
//! and `deny` rules, `satisfy`, `limit_req` and `limit_conn` zones and
//! limits, and the `realip` module's trusted addresses and header.
//!
//! Only data and the parsers nginx's directives share (addresses with a
//! prefix length, as `ngx_ptocidr`); what a request does with them is the
//! server's (`server::modules::access`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::template::Template;

/// An address block: `192.168.1.0/24`, `::1`, `2001:db8::/32` (nginx's
/// `ngx_cidr_t`). The address is stored with its low bits cleared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cidr {
    /// IPv4: address and mask, host order.
    V4 {
        /// The network address.
        addr: u32,
        /// The mask.
        mask: u32,
    },
    /// IPv6: address and mask bytes.
    V6 {
        /// The network address.
        addr: [u8; 16],
        /// The mask.
        mask: [u8; 16],
    },
}

/// What [`parse_cidr`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CidrParse {
    /// A block whose address had no bits below the mask.
    Exact(Cidr),
    /// A block whose address had bits below the mask (cleared): nginx
    /// warns "low address bits of X are meaningless".
    LowBits(Cidr),
}

impl CidrParse {
    /// The block, whichever way it was written.
    pub fn cidr(self) -> Cidr {
        match self {
            CidrParse::Exact(c) | CidrParse::LowBits(c) => c,
        }
    }
}

/// nginx's `ngx_inet_addr`: four decimal octets separated by dots (an
/// octet may be empty and counts as 0, as nginx's loop lets it);
/// `255.255.255.255` is `INADDR_NONE` and so not an address.
pub fn inet_addr(s: &[u8]) -> Option<Ipv4Addr> {
    let (mut addr, mut octet, mut dots) = (0u32, 0u32, 0);
    for &c in s {
        match c {
            b'0'..=b'9' => {
                octet = octet * 10 + u32::from(c - b'0');
                if octet > 255 {
                    return None;
                }
            }
            b'.' => {
                addr = (addr << 8) + octet;
                octet = 0;
                dots += 1;
            }
            _ => return None,
        }
    }
    if dots != 3 {
        return None;
    }
    let addr = (addr << 8) + octet;
    (addr != u32::MAX).then(|| Ipv4Addr::from(addr))
}

/// An IPv6 address as `ngx_inet6_addr` reads it (the textual forms the
/// standard library reads, with an IPv4 tail).
pub fn inet6_addr(s: &[u8]) -> Option<Ipv6Addr> {
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// Parses `ADDRESS[/BITS]` as nginx's `ngx_ptocidr`: `None` for anything
/// else (nginx: `invalid parameter`).
pub fn parse_cidr(text: &str) -> Option<CidrParse> {
    let b = text.as_bytes();
    let (addr, bits) = match b.iter().position(|&c| c == b'/') {
        Some(i) => (&b[..i], Some(&text[i + 1..])),
        None => (b, None),
    };
    let shift = match bits {
        Some(bits) => Some(super::value::number(bits)?),
        None => None,
    };
    if let Some(a) = inet_addr(addr) {
        let a = u32::from(a);
        let Some(shift) = shift else {
            return Some(CidrParse::Exact(Cidr::V4 {
                addr: a,
                mask: u32::MAX,
            }));
        };
        if shift > 32 {
            return None;
        }
        let mask = if shift == 0 {
            0
        } else {
            u32::MAX << (32 - shift)
        };
        let cidr = Cidr::V4 {
            addr: a & mask,
            mask,
        };
        return Some(if a & mask == a {
            CidrParse::Exact(cidr)
        } else {
            CidrParse::LowBits(cidr)
        });
    }
    let a = inet6_addr(addr)?.octets();
    let Some(mut shift) = shift else {
        return Some(CidrParse::Exact(Cidr::V6 {
            addr: a,
            mask: [0xff; 16],
        }));
    };
    if shift > 128 {
        return None;
    }
    let (mut addr, mut mask, mut low) = (a, [0u8; 16], false);
    for i in 0..16 {
        let s = shift.min(8);
        shift -= s;
        mask[i] = (0xffu16 << (8 - s)) as u8;
        if addr[i] & mask[i] != addr[i] {
            low = true;
            addr[i] &= mask[i];
        }
    }
    let cidr = Cidr::V6 { addr, mask };
    Some(if low {
        CidrParse::LowBits(cidr)
    } else {
        CidrParse::Exact(cidr)
    })
}

impl Cidr {
    /// Whether `ip` is in the block, as `ngx_cidr_match` decides: an
    /// IPv4-mapped IPv6 address is compared as IPv4.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => IpAddr::V6(v6),
            },
            v4 => v4,
        };
        match (self, ip) {
            (Cidr::V4 { addr, mask }, IpAddr::V4(a)) => u32::from(a) & mask == *addr,
            (Cidr::V6 { addr, mask }, IpAddr::V6(a)) => {
                let o = a.octets();
                (0..16).all(|i| o[i] & mask[i] == addr[i])
            }
            _ => false,
        }
    }
}

/// Which clients one `allow`/`deny` rule names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessMatch {
    /// `all`: every client, of any family.
    All,
    /// `unix:`: clients on unix-domain sockets.
    Unix,
    /// An address block.
    Cidr(Cidr),
}

/// One `allow` or `deny`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessRule {
    /// `deny` (else `allow`).
    pub deny: bool,
    /// Whom it names.
    pub matches: AccessMatch,
}

/// `satisfy all | any`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Satisfy {
    /// Every access module must allow.
    #[default]
    All,
    /// One access module allowing is enough.
    Any,
}

/// A `limit_req_zone` or `limit_conn_zone`.
#[derive(Clone, Debug)]
pub struct LimitZone {
    /// The zone's name.
    pub name: String,
    /// The key, as written (nginx compares it across reloads).
    pub key: Template,
    /// The key's source text.
    pub key_source: String,
    /// The zone's size in bytes.
    pub size: u64,
    /// `rate=` in thousandths of a request per second (`limit_req_zone`
    /// only; 0 for a connection zone).
    pub rate: u64,
}

/// One `limit_req` of a level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitReq {
    /// The zone's name.
    pub zone: String,
    /// `burst=`, in thousandths of a request.
    pub burst: u64,
    /// `delay=` (or `nodelay`: the largest), in thousandths of a request.
    pub delay: u64,
}

/// `nodelay`: nginx's `NGX_MAX_INT_T_VALUE / 1000` requests.
pub const NODELAY: u64 = (i64::MAX / 1000) as u64;

/// One `limit_conn` of a level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitConn {
    /// The zone's name.
    pub zone: String,
    /// Connections allowed per key.
    pub conn: u32,
}

/// `limit_conn` and `limit_req`'s highest number: nginx's `connection
/// limit must be less 65536`.
pub const MAX_LIMIT_CONN: u64 = 65535;

/// One `set_real_ip_from`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RealIpFrom {
    /// `unix:`: any unix-domain client.
    Unix,
    /// An address block (a host name is resolved to one block per address).
    Cidr(Cidr),
}

/// `real_ip_header`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum RealIpHeader {
    /// `X-Real-IP` (the default), the first such header.
    #[default]
    XRealIp,
    /// `X-Forwarded-For`: every such header, the last address first.
    XForwardedFor,
    /// Any other header, by lowercase name (the first such header).
    Other(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_parse_as_ngx_ptocidr() {
        assert_eq!(
            parse_cidr("10.0.0.0/8"),
            Some(CidrParse::Exact(Cidr::V4 {
                addr: 0x0a00_0000,
                mask: 0xff00_0000
            }))
        );
        assert_eq!(
            parse_cidr("10.1.2.3/8"),
            Some(CidrParse::LowBits(Cidr::V4 {
                addr: 0x0a00_0000,
                mask: 0xff00_0000
            }))
        );
        assert_eq!(
            parse_cidr("0.0.0.0/0").map(CidrParse::cidr),
            Some(Cidr::V4 { addr: 0, mask: 0 })
        );
        assert_eq!(parse_cidr("10.0.0.0/33"), None);
        assert_eq!(parse_cidr("10.0.0.0/"), None);
        assert_eq!(parse_cidr("255.255.255.255"), None, "INADDR_NONE");
        assert_eq!(parse_cidr("example.com"), None);
        assert!(matches!(
            parse_cidr("::1"),
            Some(CidrParse::Exact(Cidr::V6 { .. }))
        ));
        assert!(matches!(
            parse_cidr("2001:db8::1/32"),
            Some(CidrParse::LowBits(Cidr::V6 { .. }))
        ));
        assert_eq!(parse_cidr("::1/129"), None);
    }

    #[test]
    fn membership_follows_ngx_cidr_match() {
        let net = parse_cidr("127.0.0.0/8").unwrap().cidr();
        assert!(net.contains("127.0.0.1".parse().unwrap()));
        assert!(
            net.contains("::ffff:127.0.0.1".parse().unwrap()),
            "v4-mapped"
        );
        assert!(!net.contains("10.0.0.1".parse().unwrap()));
        assert!(!net.contains("::1".parse().unwrap()));
        let v6 = parse_cidr("::1").unwrap().cidr();
        assert!(v6.contains("::1".parse().unwrap()));
        assert!(!v6.contains("127.0.0.1".parse().unwrap()));
    }

    #[test]
    fn inet_addr_is_nginx_s() {
        assert_eq!(inet_addr(b"1.2.3.4"), Some(Ipv4Addr::new(1, 2, 3, 4)));
        assert_eq!(inet_addr(b"1..3.4"), Some(Ipv4Addr::new(1, 0, 3, 4)));
        assert_eq!(inet_addr(b"1.2.3"), None);
        assert_eq!(inet_addr(b"1.2.3.256"), None);
        assert_eq!(inet_addr(b"1.2.3.4 "), None);
    }
}
