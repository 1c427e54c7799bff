//! Virtual servers: which `server` block answers a connection and a `Host`.
//!
//! As nginx: the servers that listen on the connection's local address (or,
//! failing that, on the wildcard address of its port) are the candidates;
//! among them the `Host` picks by exact name, then the longest leading
//! wildcard (`*.example.com`), then the longest trailing wildcard
//! (`www.example.*`), then the first matching regex (`~…`); otherwise the
//! address's default server (`default_server`, or the first listed).

use std::collections::HashMap;

use crate::config::regex::Regex;

use crate::config::model::{HttpConf, ListenAddr};

/// The servers of one address, ready for lookup.
#[derive(Debug, Default)]
struct AddrServers {
    /// The default server's index.
    default: usize,
    /// Exact names → server index (first definition wins, as nginx).
    exact: HashMap<String, usize>,
    /// `*.suffix` wildcards: (".suffix", index), longest first.
    head_wild: Vec<(String, usize)>,
    /// `prefix.*` wildcards: ("prefix.", index), longest first.
    tail_wild: Vec<(String, usize)>,
    /// Regular expressions in order.
    regex: Vec<(Regex, usize)>,
    /// Whether only the default server can answer on this address (every
    /// name is its own): then the host need not be looked at.
    only_default: bool,
    /// Whether connections to the address speak TLS: a `listen … ssl` of
    /// it in any server, or `ssl on` in its default server (nginx's
    /// `addr_conf->ssl || sscf->enable`).
    ssl: bool,
}

impl AddrServers {
    fn only_default(&self) -> bool {
        self.only_default
    }
}

/// Address → servers. A list, not a map: a configuration has a few
/// addresses, and comparing them costs less than hashing one per request.
#[derive(Debug, Default)]
pub struct VirtualHosts {
    by_addr: Vec<(ListenAddr, AddrServers)>,
}

impl VirtualHosts {
    /// Builds the tables from the http block (server indexes refer to
    /// `http.servers`).
    pub fn new(http: &HttpConf) -> VirtualHosts {
        let mut by_addr: HashMap<ListenAddr, AddrServers> = HashMap::new();
        let mut has_default: HashMap<ListenAddr, bool> = HashMap::new();
        for (i, s) in http.servers.iter().enumerate() {
            for l in &s.listens {
                let entry = by_addr
                    .entry(l.addr.clone())
                    .or_insert_with(|| AddrServers {
                        default: i,
                        ..Default::default()
                    });
                entry.ssl |= l.ssl;
                if l.default_server && !has_default.get(&l.addr).copied().unwrap_or(false) {
                    entry.default = i;
                    has_default.insert(l.addr.clone(), true);
                }
                // A server without `server_name` has the empty name.
                let unnamed = [String::new()];
                let names = if s.names.is_empty() {
                    &unnamed[..]
                } else {
                    &s.names[..]
                };
                for name in names {
                    if let Some(re) = name.strip_prefix('~') {
                        // Checked when the configuration was read.
                        if let Ok(re) = crate::config::set_server::server_name_regex(re) {
                            entry.regex.push((re, i));
                        }
                    } else if let Some(suffix) = name.strip_prefix('*') {
                        entry.head_wild.push((suffix.to_string(), i));
                    } else if let Some(prefix) = name.strip_suffix('*') {
                        entry.tail_wild.push((prefix.to_string(), i));
                    } else if let Some(domain) = name.strip_prefix('.') {
                        entry.exact.entry(domain.to_string()).or_insert(i);
                        entry.head_wild.push((name.clone(), i));
                    } else {
                        entry.exact.entry(name.clone()).or_insert(i);
                    }
                }
            }
        }
        for a in by_addr.values_mut() {
            a.ssl |= http
                .servers
                .get(a.default)
                .is_some_and(|s| s.srv.ssl.is_some());
            a.head_wild.sort_by_key(|(s, _)| std::cmp::Reverse(s.len()));
            a.tail_wild.sort_by_key(|(s, _)| std::cmp::Reverse(s.len()));
            a.only_default = a.exact.values().all(|&i| i == a.default)
                && a.head_wild.is_empty()
                && a.tail_wild.is_empty()
                && a.regex.is_empty();
        }
        VirtualHosts {
            by_addr: by_addr.into_iter().collect(),
        }
    }

    fn servers_of(&self, addr: &ListenAddr) -> Option<&AddrServers> {
        self.by_addr.iter().find(|(a, _)| a == addr).map(|(_, s)| s)
    }

    /// Whether the configuration listens on `socket_addr` (a connection
    /// accepted there before a reload still has servers after it).
    pub fn listens_on(&self, socket_addr: &ListenAddr) -> bool {
        self.servers_of(socket_addr).is_some()
    }

    /// The default server's index for a connection accepted on
    /// `socket_addr` whose local address is `local`.
    pub fn default_index(&self, socket_addr: &ListenAddr, local: &ListenAddr) -> Option<usize> {
        self.servers_of(local)
            .or_else(|| self.servers_of(socket_addr))
            .map(|a| a.default)
    }

    /// Whether connections accepted on `socket_addr` speak TLS.
    pub fn is_ssl(&self, socket_addr: &ListenAddr) -> bool {
        self.servers_of(socket_addr).is_some_and(|a| a.ssl)
    }

    /// The server index for a connection accepted on `socket_addr` whose
    /// local address is `local`, asking for `host` (lower-case, no port).
    pub fn find(&self, socket_addr: &ListenAddr, local: &ListenAddr, host: Option<&str>) -> usize {
        self.find_match(socket_addr, local, host).0
    }

    /// [`VirtualHosts::find`], with the `server_name` regular expression
    /// that chose the server, if one did (its captures are the request's,
    /// as nginx's `ngx_http_find_virtual_server` makes them).
    pub fn find_match(
        &self,
        socket_addr: &ListenAddr,
        local: &ListenAddr,
        host: Option<&str>,
    ) -> (usize, Option<&Regex>) {
        let Some(a) = self
            .servers_of(local)
            .or_else(|| self.servers_of(socket_addr))
        else {
            return (0, None);
        };
        self.named_match(socket_addr, local, host.unwrap_or(""))
            .unwrap_or((a.default, None))
    }

    /// The server whose `server_name` is `host`, if one's is: what
    /// `ngx_http_find_virtual_server` finds, without the default server
    /// it falls back to (none when the address has no names at all).
    pub fn named(&self, socket_addr: &ListenAddr, local: &ListenAddr, host: &str) -> Option<usize> {
        self.named_match(socket_addr, local, host).map(|(i, _)| i)
    }

    /// [`VirtualHosts::named`] with the regular expression that matched.
    fn named_match(
        &self,
        socket_addr: &ListenAddr,
        local: &ListenAddr,
        host: &str,
    ) -> Option<(usize, Option<&Regex>)> {
        let a = self
            .servers_of(local)
            .or_else(|| self.servers_of(socket_addr))?;
        if a.only_default() {
            return None;
        }
        // No host is the empty name (`server_name ""`), as in nginx.
        if let Some(&i) = a.exact.get(host) {
            return Some((i, None));
        }
        if let Some((_, i)) = a
            .head_wild
            .iter()
            .find(|(s, _)| host.ends_with(s.as_str()) && host.len() > s.len())
        {
            return Some((*i, None));
        }
        if let Some((_, i)) = a
            .tail_wild
            .iter()
            .find(|(p, _)| host.starts_with(p.as_str()) && host.len() > p.len())
        {
            return Some((*i, None));
        }
        if host.is_empty() {
            return None;
        }
        a.regex
            .iter()
            .find(|(re, _)| re.is_match(host))
            .map(|(re, i)| (*i, Some(re)))
    }
}
