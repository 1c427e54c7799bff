//! Listening sockets: bound once by the main thread (as root, before the
//! privilege drop), kept across reloads, handed to worker loops.
//!
//! An address with `reuseport` gets one `SO_REUSEPORT` socket per worker, and
//! the kernel spreads connections over them (brief §1C). Without it, one
//! socket is shared by every worker (see `docs/architecture.md` for what
//! `accept_mutex` changes then).

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, TcpListener};

use socket2::{Domain, Protocol, Socket, Type};

use crate::config::model::Listen;

/// What failed while binding, in nginx's words.
#[derive(Debug)]
pub struct BindError {
    /// The call that failed (`bind()`, `listen()`, `setsockopt(SO_REUSEPORT)`…).
    pub call: &'static str,
    /// The address.
    pub addr: SocketAddr,
    /// The cause.
    pub source: io::Error,
}

impl std::fmt::Display for BindError {
    /// `bind() to 0.0.0.0:80 failed (98: Address already in use)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} to {} failed ({})",
            self.call,
            self.addr,
            crate::config::errno_text(&self.source)
        )
    }
}

/// The sockets of one address: one shared, or one per worker.
#[derive(Debug)]
pub struct AddrSockets {
    /// The listen options that created them (the first server's).
    pub listen: Listen,
    /// The sockets; with `reuseport`, one per worker.
    pub sockets: Vec<TcpListener>,
}

/// Every listening socket, by address.
#[derive(Debug, Default)]
pub struct Listeners {
    /// Address → sockets.
    pub by_addr: HashMap<SocketAddr, AddrSockets>,
}

fn bind_one(l: &Listen, reuseport: bool) -> Result<TcpListener, BindError> {
    let err = |call: &'static str| {
        move |source| BindError {
            call,
            addr: l.addr,
            source,
        }
    };
    let domain = if l.addr.is_ipv4() {
        Domain::IPV4
    } else {
        Domain::IPV6
    };
    let s = Socket::new(
        domain,
        Type::STREAM.nonblocking().cloexec(),
        Some(Protocol::TCP),
    )
    .map_err(err("socket()"))?;
    s.set_reuse_address(true)
        .map_err(err("setsockopt(SO_REUSEADDR)"))?;
    if reuseport {
        s.set_reuse_port(true)
            .map_err(err("setsockopt(SO_REUSEPORT)"))?;
    }
    if l.addr.is_ipv6() {
        s.set_only_v6(true)
            .map_err(err("setsockopt(IPV6_V6ONLY)"))?;
    }
    if let Some(n) = l.rcvbuf {
        s.set_recv_buffer_size(n)
            .map_err(err("setsockopt(SO_RCVBUF)"))?;
    }
    if let Some(n) = l.sndbuf {
        s.set_send_buffer_size(n)
            .map_err(err("setsockopt(SO_SNDBUF)"))?;
    }
    crate::sys::privsep::bind(&s, l.addr).map_err(err("bind()"))?;
    s.listen(l.backlog).map_err(err("listen()"))?;
    Ok(s.into())
}

/// The sockets a configuration needs, as nginx decides them: one per
/// distinct address, the options of whichever `listen` wrote them; and a
/// specific address without `bind` is served by the wildcard socket of its
/// port when there is one (the connection's local address then picks the
/// server, see [`super::vhost`]).
pub fn wanted(listens: impl Iterator<Item = Listen>) -> Vec<Listen> {
    let mut out: Vec<Listen> = Vec::new();
    for l in listens {
        match out.iter_mut().find(|o| o.addr == l.addr) {
            Some(o) if l.has_options() => {
                *o = Listen {
                    default_server: o.default_server,
                    ..l
                }
            }
            Some(_) => {}
            None => out.push(l),
        }
    }
    let wildcard_ports: Vec<(bool, u16)> = out
        .iter()
        .filter(|l| l.addr.ip().is_unspecified())
        .map(|l| (l.addr.is_ipv4(), l.addr.port()))
        .collect();
    out.retain(|l| {
        l.addr.ip().is_unspecified()
            || l.bind
            || !wildcard_ports.contains(&(l.addr.is_ipv4(), l.addr.port()))
    });
    out
}

impl Listeners {
    /// Makes the socket set match `wanted` for `workers` workers, keeping
    /// every socket that can be kept (so a reload refuses no connection),
    /// binding new ones, and closing those no longer wanted.
    pub fn update(&mut self, wanted: &[Listen], workers: usize) -> Result<(), BindError> {
        let mut next = HashMap::new();
        for l in wanted {
            let count = if l.reuseport { workers } else { 1 };
            // The old sockets are kept even when `reuseport` changes: the
            // running generation still listens on them, so a new socket on
            // the address could not bind. As nginx does, a socket that
            // gains `reuseport` gets SO_REUSEPORT set before the new ones
            // join it; one that loses it keeps the option, harmlessly.
            let old = self.by_addr.remove(&l.addr);
            let old_listen = old.as_ref().map(|o| o.listen.clone());
            let mut sockets = old.map_or_else(Vec::new, |o| o.sockets);
            let mut result = Ok(());
            if l.reuseport && old_listen.as_ref().is_some_and(|o| !o.reuseport) {
                result = sockets.iter().try_for_each(|s| {
                    socket2::SockRef::from(s)
                        .set_reuse_port(true)
                        .map_err(|source| BindError {
                            call: "setsockopt(SO_REUSEPORT)",
                            addr: l.addr,
                            source,
                        })
                });
            }
            while result.is_ok() && sockets.len() < count {
                match bind_one(l, l.reuseport) {
                    Ok(s) => sockets.push(s),
                    Err(e) => result = Err(e),
                }
            }
            if let Err(e) = result {
                // Put back what we took so a failed reload keeps serving.
                if let Some(listen) = old_listen {
                    self.by_addr.insert(l.addr, AddrSockets { listen, sockets });
                }
                self.by_addr.extend(next);
                return Err(e);
            }
            sockets.truncate(count);
            next.insert(
                l.addr,
                AddrSockets {
                    listen: l.clone(),
                    sockets,
                },
            );
        }
        self.by_addr = next;
        Ok(())
    }

    /// The sockets worker `i` of `workers` accepts on: its own socket of each
    /// `reuseport` address and every shared socket, each with its address.
    pub fn for_worker(&self, i: usize) -> io::Result<Vec<(SocketAddr, TcpListener)>> {
        let mut out = Vec::new();
        for (addr, a) in &self.by_addr {
            let s = if a.listen.reuseport {
                &a.sockets[i % a.sockets.len()]
            } else {
                &a.sockets[0]
            };
            out.push((*addr, s.try_clone()?));
        }
        Ok(out)
    }
}
