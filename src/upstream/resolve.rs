//! `resolver`: names looked up at request time, as nginx's resolver does
//! for a `proxy_pass` whose host comes from variables.
//!
//! Owns: DNS queries over UDP (RFC 1035 §4) for `A` and `AAAA` records,
//! the answers' parsing (compressed names included), and a cache of the
//! addresses found, kept for the answers' TTL (or `valid=`).
//! Must not: block. The queries are the loop's own non-blocking sockets,
//! bounded by `resolver_timeout`; the cache's lock is held for map updates
//! only.
//!
//! nginx's words for failures are kept (`ngx_resolver_strerror`): "Format
//! error", "Server failure", "Host not found", "Unimplemented",
//! "Operation refused", and "Operation timed out" for a timeout.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The DNS port, for addresses written without one.
pub const DNS_PORT: u16 = 53;
/// The largest UDP answer read.
const MAX_ANSWER: usize = 4096;
/// Record types asked for.
const TYPE_A: u16 = 1;
/// See [`TYPE_A`].
const TYPE_AAAA: u16 = 28;
/// The Internet class.
const CLASS_IN: u16 = 1;
/// How often an unanswered query is sent again (nginx resends every 5 s).
const RESEND: Duration = Duration::from_secs(5);

/// Why a name could not be resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolveError {
    /// nginx's code: the DNS response code, or 110 for a timeout.
    pub code: u16,
}

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = match self.code {
            1 => "Format error",
            2 => "Server failure",
            3 => "Host not found",
            4 => "Unimplemented",
            5 => "Operation refused",
            110 => "Operation timed out",
            _ => "Unknown error",
        };
        write!(f, "{}: {text}", self.code)
    }
}

/// The timeout's code, as nginx reports it (`NGX_RESOLVE_TIMEDOUT`).
const TIMED_OUT: u16 = 110;

/// One `resolver` directive: its servers, settings, and the addresses it
/// has found (shared by the levels that inherit it).
#[derive(Debug)]
pub struct Resolver {
    /// The name servers, asked in turn.
    servers: Vec<SocketAddr>,
    /// `valid=`: how long answers are kept, instead of their TTL.
    valid: Option<Duration>,
    /// `ipv4=`: ask for `A` records.
    ipv4: bool,
    /// `ipv6=`: ask for `AAAA` records.
    ipv6: bool,
    /// Name → (addresses, until when).
    cache: Mutex<HashMap<String, (Vec<IpAddr>, Instant)>>,
    /// The next server to ask.
    next: AtomicUsize,
}

impl Resolver {
    /// A resolver asking `servers`.
    pub fn new(servers: Vec<SocketAddr>, valid: Option<Duration>, ipv4: bool, ipv6: bool) -> Self {
        Resolver {
            servers,
            valid,
            ipv4,
            ipv6,
            cache: Mutex::new(HashMap::new()),
            next: AtomicUsize::new(0),
        }
    }

    /// The addresses of `name`, from the cache or asked within `timeout`.
    pub async fn resolve(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<Vec<IpAddr>, ResolveError> {
        let key = name.to_ascii_lowercase();
        let now = Instant::now();
        {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((addrs, until)) = cache.get(&key) {
                if *until > now {
                    return Ok(addrs.clone());
                }
            }
        }
        let server = self.servers[self.next.fetch_add(1, Ordering::Relaxed) % self.servers.len()];
        let (addrs, ttl) = tokio::time::timeout(timeout, self.ask(server, &key))
            .await
            .map_err(|_| ResolveError { code: TIMED_OUT })??;
        let keep = self.valid.unwrap_or(Duration::from_secs(u64::from(ttl)));
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, (addrs.clone(), now + keep));
        Ok(addrs)
    }

    /// Asks `server` for the records of `name`; the addresses and the
    /// smallest TTL.
    async fn ask(
        &self,
        server: SocketAddr,
        name: &str,
    ) -> Result<(Vec<IpAddr>, u32), ResolveError> {
        let local: SocketAddr = if server.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let io_error = |_| ResolveError { code: 2 };
        let sock = tokio::net::UdpSocket::bind(local).await.map_err(io_error)?;
        sock.connect(server).await.map_err(io_error)?;
        let id = query_id();
        let mut queries = Vec::new();
        if self.ipv4 {
            queries.push((id, TYPE_A));
        }
        if self.ipv6 {
            queries.push((id.wrapping_add(1), TYPE_AAAA));
        }
        let mut pending: Vec<(u16, u16)> = queries.clone();
        let mut addrs = Vec::new();
        let mut ttl = u32::MAX;
        let mut failure = None;
        let mut buf = vec![0u8; MAX_ANSWER];
        while !pending.is_empty() {
            for &(qid, qtype) in &pending {
                let q = query(qid, name, qtype).ok_or(ResolveError { code: 1 })?;
                sock.send(&q).await.map_err(io_error)?;
            }
            let deadline = tokio::time::Instant::now() + RESEND;
            while !pending.is_empty() {
                let n = match tokio::time::timeout_at(deadline, sock.recv(&mut buf)).await {
                    Ok(r) => r.map_err(io_error)?,
                    Err(_) => break,
                };
                let Some(answer) = parse_answer(&buf[..n]) else {
                    continue;
                };
                let Some(at) = pending.iter().position(|&(qid, _)| qid == answer.id) else {
                    continue;
                };
                pending.remove(at);
                if answer.rcode != 0 {
                    failure = Some(ResolveError {
                        code: u16::from(answer.rcode),
                    });
                    continue;
                }
                ttl = ttl.min(answer.ttl);
                addrs.extend(answer.addrs);
            }
        }
        if addrs.is_empty() {
            return Err(failure.unwrap_or(ResolveError { code: 3 }));
        }
        Ok((addrs, ttl))
    }
}

/// A query id: random, as an answer must not be guessable.
fn query_id() -> u16 {
    let mut b = [0u8; 2];
    if crate::sys::random::getrandom(&mut b).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .subsec_nanos();
        return t as u16;
    }
    u16::from_be_bytes(b)
}

/// A query for `name`'s records of `qtype` (recursion desired); `None`
/// for a name no query can carry (an empty or too long label).
pub fn query(id: u16, name: &str, qtype: u16) -> Option<Vec<u8>> {
    let mut q = Vec::with_capacity(18 + name.len());
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[0x01, 0x00]); // RD
    q.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]); // QDCOUNT 1
    for label in name.trim_end_matches('.').split('.') {
        if label.is_empty() || label.len() > 63 {
            return None;
        }
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.push(0);
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&CLASS_IN.to_be_bytes());
    Some(q)
}

/// What an answer said.
#[derive(Debug, PartialEq, Eq)]
pub struct Answer {
    /// The query it answers.
    pub id: u16,
    /// The response code (0: no error).
    pub rcode: u8,
    /// The `A` and `AAAA` addresses in it.
    pub addrs: Vec<IpAddr>,
    /// The smallest TTL of those records.
    pub ttl: u32,
}

/// A reader of DNS messages.
struct Msg<'a> {
    b: &'a [u8],
    at: usize,
}

impl Msg<'_> {
    fn u8(&mut self) -> Option<u8> {
        let v = *self.b.get(self.at)?;
        self.at += 1;
        Some(v)
    }

    fn u16(&mut self) -> Option<u16> {
        Some(u16::from(self.u8()?) << 8 | u16::from(self.u8()?))
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from(self.u16()?) << 16 | u32::from(self.u16()?))
    }

    /// Skips a name: labels ending in a zero, or in a compression pointer.
    fn skip_name(&mut self) -> Option<()> {
        loop {
            let len = self.u8()?;
            match len {
                0 => return Some(()),
                l if l & 0xc0 == 0xc0 => {
                    self.u8()?;
                    return Some(());
                }
                l => self.at += usize::from(l),
            }
            if self.at > self.b.len() {
                return None;
            }
        }
    }
}

/// Parses an answer to one of our queries; `None` when it is not one.
pub fn parse_answer(b: &[u8]) -> Option<Answer> {
    let mut m = Msg { b, at: 0 };
    let id = m.u16()?;
    let flags = m.u16()?;
    if flags & 0x8000 == 0 {
        return None;
    }
    let rcode = (flags & 0x000f) as u8;
    let qd = m.u16()?;
    let an = m.u16()?;
    m.u16()?;
    m.u16()?;
    for _ in 0..qd {
        m.skip_name()?;
        m.u32()?;
    }
    let mut addrs = Vec::new();
    let mut ttl = u32::MAX;
    for _ in 0..an {
        m.skip_name()?;
        let rtype = m.u16()?;
        let class = m.u16()?;
        let t = m.u32()?;
        let len = usize::from(m.u16()?);
        let data = b.get(m.at..m.at + len)?;
        m.at += len;
        if class != CLASS_IN {
            continue;
        }
        match (rtype, data.len()) {
            (TYPE_A, 4) => {
                addrs.push(IpAddr::from([data[0], data[1], data[2], data[3]]));
                ttl = ttl.min(t);
            }
            (TYPE_AAAA, 16) => {
                let mut o = [0u8; 16];
                o.copy_from_slice(data);
                addrs.push(IpAddr::from(o));
                ttl = ttl.min(t);
            }
            _ => {}
        }
    }
    Some(Answer {
        id,
        rcode,
        addrs,
        ttl: if ttl == u32::MAX { 0 } else { ttl },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_as_the_wire_carries_it() {
        let q = query(0x1234, "ab.c", TYPE_A).unwrap();
        assert_eq!(
            q,
            [
                0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2, b'a', b'b', 1, b'c', 0, 0, 1, 0, 1
            ]
        );
        assert!(query(1, "a..b", TYPE_A).is_none());
    }

    #[test]
    fn answers_with_compressed_names() {
        // As nginx's test DNS server writes them: three A records, each
        // named by a pointer to the question.
        let mut b = query(7, "localhost", TYPE_A).unwrap();
        b[2] = 0x81;
        b[3] = 0x80;
        b[7] = 3; // ANCOUNT
        for _ in 0..3 {
            b.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 127, 0, 0, 1]);
        }
        let a = parse_answer(&b).unwrap();
        assert_eq!(a.id, 7);
        assert_eq!(a.rcode, 0);
        assert_eq!(a.addrs, vec![IpAddr::from([127, 0, 0, 1]); 3]);
        assert_eq!(a.ttl, 3600);
        // A query is not an answer; a cut message is nothing.
        assert!(parse_answer(&query(7, "x", TYPE_A).unwrap()).is_none());
        assert!(parse_answer(&b[..b.len() - 3]).is_none());
    }

    #[test]
    fn errors_in_nginx_words() {
        assert_eq!(ResolveError { code: 3 }.to_string(), "3: Host not found");
        assert_eq!(
            ResolveError { code: 110 }.to_string(),
            "110: Operation timed out"
        );
    }
}
