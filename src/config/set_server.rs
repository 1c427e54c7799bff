//! Setters for `server` blocks: `listen`, `server_name`, `location`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use super::build::{Builder, Scope};
use super::listen_addr::{ListenAddr, UNIX_PREFIX};
use super::model::{Listen, Location, LocationMatch, Server, SoKeepalive};
use super::syntax::Directive;
use super::value;

/// `server { ... }`
pub fn server(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let Scope::Http(h) = scope else {
        unreachable!("the table allows server blocks in http only")
    };
    let mut s = Server {
        loc: Some(d.loc.clone()),
        ..Server::default()
    };
    b.walk(
        &mut Scope::Server(&mut s),
        d.block.as_deref().unwrap_or_default(),
    );
    h.servers.push(s);
    Ok(())
}

/// Listen parameters nginx has that nowait does not implement yet.
const UNIMPLEMENTED_LISTEN_PARAMS: &[&str] = &["http2", "quic", "proxy_protocol", "udp"];

/// Parses the address part of `listen`: `port`, `addr`, `addr:port`, `*:port`,
/// `[v6]:port`, `unix:/path`, or a host name resolved now, as nginx does at
/// start-up. The port may be a range, `first-last` (nginx 1.27.3, backported
/// by Debian to its 1.22.1): one address per port, in order.
pub fn parse_listen_addr(s: &str) -> Result<Vec<ListenAddr>, String> {
    if s.len() >= UNIX_PREFIX.len()
        && s.as_bytes()[..UNIX_PREFIX.len()].eq_ignore_ascii_case(UNIX_PREFIX.as_bytes())
    {
        return parse_unix(s).map(|a| vec![a]);
    }
    parse_inet(s).map(|v| v.into_iter().map(ListenAddr::Inet).collect())
}

/// `unix:/path` (nginx's `ngx_parse_unix_domain_url` without a URI part:
/// the path is everything after the prefix, colons included).
fn parse_unix(s: &str) -> Result<ListenAddr, String> {
    let opts = super::url::UrlOptions {
        default_port: 80,
        uri_part: false,
        resolve: false,
    };
    let parsed = super::url::parse_url(s, opts)
        .map_err(|e| format!("{e} in \"{s}\" of the \"listen\" directive"))?;
    Ok(ListenAddr::Unix(Arc::from(Path::new(&parsed.host))))
}

/// The inet forms of [`parse_listen_addr`].
fn parse_inet(s: &str) -> Result<Vec<SocketAddr>, String> {
    let bad_port = || format!("invalid port in \"{s}\" of the \"listen\" directive");
    let port_of = |p: &str| match value::number(p) {
        Some(n) if (1..=65535).contains(&n) => Ok(n as u16),
        _ => Err(bad_port()),
    };
    // `first-last` or one port (`ngx_parse_inet_url` with `u->listen`).
    let ports_of = |p: &str| -> Result<(u16, u16), String> {
        let Some((first, last)) = p.split_once('-') else {
            let port = port_of(p)?;
            return Ok((port, port));
        };
        let (first, last) = (port_of(first)?, port_of(last)?);
        if first > last {
            return Err(format!(
                "invalid port range in \"{s}\" of the \"listen\" directive"
            ));
        }
        Ok((first, last))
    };
    let each = |ip: IpAddr, (first, last): (u16, u16)| {
        (first..=last)
            .map(|port| SocketAddr::new(ip, port))
            .collect()
    };
    if s.bytes().all(|c| c.is_ascii_digit() || c == b'-') {
        return Ok(each(IpAddr::V4(Ipv4Addr::UNSPECIFIED), ports_of(s)?));
    }
    let (host, ports) = if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("invalid host in \"{s}\" of the \"listen\" directive"))?;
        let ports = match after.strip_prefix(':') {
            Some(p) => ports_of(p)?,
            None if after.is_empty() => (80, 80),
            None => return Err(bad_port()),
        };
        let ip: IpAddr = h
            .parse()
            .map_err(|_| format!("invalid IPv6 address in \"{s}\" of the \"listen\" directive"))?;
        return Ok(each(ip, ports));
    } else if let Some((h, p)) = s.rsplit_once(':') {
        (h, ports_of(p)?)
    } else {
        (s, (80, 80))
    };
    if host == "*" {
        return Ok(each(IpAddr::V4(Ipv4Addr::UNSPECIFIED), ports));
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(each(ip, ports));
    }
    super::names::lookup(host, ports.0)
        .ok()
        .and_then(|addrs| addrs.into_iter().find(|a| a.is_ipv4()))
        .map(|a| each(a.ip(), ports))
        .ok_or_else(|| format!("host not found in \"{s}\" of the \"listen\" directive"))
}

/// `listen address[:port] [default_server] [reuseport] [backlog=N] …;`
pub fn listen(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let Scope::Server(s) = scope else {
        unreachable!("the table allows listen in server only")
    };
    let addrs = parse_listen_addr(d.arg(0))?;
    let Some(first) = addrs.first().cloned() else {
        return Err(format!(
            "no address in \"{}\" of the \"listen\" directive",
            d.arg(0)
        ));
    };
    let mut l = Listen::new(first, d.loc.clone());
    for w in &d.args[1..] {
        let p = w.value.as_str();
        let (key, val) = p.split_once('=').unwrap_or((p, ""));
        match key {
            "default_server" | "default" if val.is_empty() => l.default_server = true,
            "reuseport" if val.is_empty() => l.reuseport = true,
            "ssl" if val.is_empty() => l.ssl = true,
            "bind" if val.is_empty() => l.bind = true,
            "backlog" => {
                l.backlog = match value::number(val) {
                    Some(n) if n >= 1 && n <= i32::MAX as u64 => n as i32,
                    _ => return Err(format!("invalid backlog \"{p}\"")),
                };
                l.backlog_set = true;
            }
            "rcvbuf" | "sndbuf" => {
                let size = value::size(val)
                    .filter(|&n| n > 0 && n <= i32::MAX as u64)
                    .ok_or_else(|| format!("invalid {key} \"{p}\""))?
                    as usize;
                if key == "rcvbuf" {
                    l.rcvbuf = Some(size);
                } else {
                    l.sndbuf = Some(size);
                }
            }
            "deferred" if val.is_empty() => {
                l.deferred = true;
                l.bind = true;
            }
            "fastopen" if p.contains('=') => {
                // `ngx_atoi`: digits only.
                let n = value::number(val)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| format!("invalid fastopen \"{p}\""))?;
                l.fastopen = Some(n);
                l.bind = true;
            }
            "ipv6only" if val.starts_with('o') => {
                l.ipv6only = match val {
                    "on" => true,
                    "off" => false,
                    _ => return Err(format!("invalid ipv6only flags \"{val}\"")),
                };
                l.bind = true;
            }
            "so_keepalive" if p.contains('=') => {
                l.so_keepalive = Some(
                    so_keepalive(val)
                        .ok_or_else(|| format!("invalid so_keepalive value: \"{val}\""))?,
                );
                l.bind = true;
            }
            // BSD's accept filters: nginx on Linux says so and goes on.
            "accept_filter" if p.contains('=') => b.error_continue(
                format!("accept filters \"{p}\" are not supported on this platform, ignored"),
                &d.loc,
            ),
            k if UNIMPLEMENTED_LISTEN_PARAMS.contains(&k) => {
                return Err(format!(
                    "the \"{k}\" parameter of \"listen\" is not implemented yet"
                ));
            }
            _ => return Err(format!("invalid parameter \"{p}\"")),
        }
    }
    // nginx binds every address separately only with `bind` or options that
    // need their own socket; reuseport implies its own socket too.
    if l.reuseport {
        l.bind = true;
    }
    // A range is one listen per port (`ngx_http_add_listen` for each). The
    // duplicate check looks the server's addresses up in a set, not in a
    // list per port: a range of 60,000 ports took seconds, twice that as
    // many more (found by the config fuzz target).
    let mut known: std::collections::HashSet<ListenAddr> =
        s.listens.iter().map(|o| o.addr.clone()).collect();
    for addr in addrs {
        if !known.insert(addr.clone()) {
            return Err(format!("a duplicate listen {addr}"));
        }
        s.listens.push(Listen { addr, ..l.clone() });
    }
    Ok(())
}

/// The value of `so_keepalive=`: `on`, `off`, or
/// `[idle]:[interval]:[count]` (times in seconds, any part left out but not
/// all of them zero), as `ngx_http_core_listen` reads it.
fn so_keepalive(val: &str) -> Option<SoKeepalive> {
    match val {
        "on" | "off" => {
            return Some(SoKeepalive {
                on: val == "on",
                idle: None,
                interval: None,
                count: None,
            });
        }
        _ => {}
    }
    let secs = |s: &str| -> Option<Option<u32>> {
        if s.is_empty() {
            return Some(None);
        }
        let t = value::time(s, false)?;
        Some(Some(u32::try_from(t.as_secs()).unwrap_or(u32::MAX)))
    };
    let (idle, rest) = val.split_once(':').unwrap_or((val, ""));
    let (interval, count) = rest.split_once(':').unwrap_or((rest, ""));
    let idle = secs(idle)?;
    let interval = secs(interval)?;
    let count = match count {
        "" => None,
        c => Some(u32::try_from(value::number(c)?).ok()?),
    };
    let set = |v: Option<u32>| v.is_some_and(|n| n > 0);
    if !set(idle) && !set(interval) && !set(count) {
        return None;
    }
    Some(SoKeepalive {
        on: true,
        idle: idle.filter(|&n| n > 0),
        interval: interval.filter(|&n| n > 0),
        count: count.filter(|&n| n > 0),
    })
}

/// Compiles a `server_name ~regex` as nginx does: case-insensitive when it
/// holds an uppercase letter (host names are matched lowercased).
pub fn server_name_regex(re: &str) -> Result<crate::config::regex::Regex, String> {
    super::regex::compile(re, re.bytes().any(|c| c.is_ascii_uppercase()))
}

/// `server_name name ...;`
pub fn server_name(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let Scope::Server(s) = scope else {
        unreachable!("the table allows server_name in server only")
    };
    for w in &d.args {
        let name = w.value.as_str();
        if let Some(re) = name.strip_prefix('~') {
            if re.is_empty() {
                return Err(format!("empty regex in server name \"{name}\""));
            }
            // Named captures become variables, as in nginx.
            let compiled = server_name_regex(re)?;
            b.define_captures(&compiled);
            s.names.push(name.to_string());
            s.name_regexes.push(compiled);
            continue;
        }
        let lower = name.to_ascii_lowercase();
        let stars = lower.matches('*').count();
        let wildcard_ok =
            stars == 0 || (stars == 1 && (lower.starts_with("*.") || lower.ends_with(".*")));
        if !wildcard_ok || lower == "." {
            return Err(format!("server name \"{name}\" is invalid"));
        }
        s.names.push(lower);
    }
    Ok(())
}

/// Parses a location's modifier and URI.
fn location_match(d: &Directive) -> Result<LocationMatch, String> {
    let (modifier, uri) = if d.args.len() == 2 {
        (d.arg(0), d.arg(1).to_string())
    } else {
        let a = d.arg(0);
        if let Some(rest) = a.strip_prefix("^~").filter(|r| !r.is_empty()) {
            ("^~", rest.to_string())
        } else if let Some(rest) = a.strip_prefix("~*").filter(|r| !r.is_empty()) {
            ("~*", rest.to_string())
        } else if let Some(rest) = a.strip_prefix('~').filter(|r| !r.is_empty()) {
            ("~", rest.to_string())
        } else if let Some(rest) = a.strip_prefix('=').filter(|r| !r.is_empty()) {
            ("=", rest.to_string())
        } else {
            ("", a.to_string())
        }
    };
    Ok(match modifier {
        "=" => LocationMatch::Exact(uri),
        "^~" => LocationMatch::PrefixNoRegex(uri),
        "~" | "~*" => {
            let ci = modifier == "~*";
            let re = super::regex::compile(&uri, ci)?;
            LocationMatch::Regex {
                source: uri,
                re,
                case_insensitive: ci,
            }
        }
        "" if uri.starts_with('@') => LocationMatch::Named(uri),
        "" => LocationMatch::Prefix(uri),
        m => return Err(format!("invalid location modifier \"{m}\"")),
    })
}

/// The string two locations must not share, as nginx's duplicate check.
fn duplicate_key(m: &LocationMatch) -> Option<(u8, &str)> {
    match m {
        LocationMatch::Exact(s) => Some((0, s)),
        LocationMatch::Prefix(s) | LocationMatch::PrefixNoRegex(s) => Some((1, s)),
        // nginx checks the static tree only: a named location written
        // twice is taken, the first one answering (`ngx_http_named_location`).
        LocationMatch::Named(_) | LocationMatch::Regex { .. } => None,
    }
}

/// `location [=|~|~*|^~] uri { ... }` and `location @name { ... }`
pub fn location(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let matcher = location_match(d)?;
    if let LocationMatch::Regex { re, .. } = &matcher {
        // Named captures (`(?<name>…)`) are variables, as in nginx.
        b.define_captures(re);
    }
    if let Scope::Location(parent) = scope {
        let inner = matcher.describe();
        match &parent.matcher {
            LocationMatch::Exact(p) => {
                return Err(format!(
                    "location \"{inner}\" cannot be inside the exact location \"{p}\""
                ));
            }
            LocationMatch::Named(p) => {
                return Err(format!(
                    "location \"{inner}\" cannot be inside the named location \"{p}\""
                ));
            }
            LocationMatch::Prefix(p) | LocationMatch::PrefixNoRegex(p) => {
                if let LocationMatch::Named(n) = &matcher {
                    return Err(format!(
                        "named location \"{n}\" can be on the server level only"
                    ));
                }
                if let LocationMatch::Exact(u)
                | LocationMatch::Prefix(u)
                | LocationMatch::PrefixNoRegex(u) = &matcher
                {
                    if !u.starts_with(p.as_str()) {
                        return Err(format!("location \"{u}\" is outside location \"{p}\""));
                    }
                }
            }
            LocationMatch::Regex { .. } => {
                if let LocationMatch::Named(n) = &matcher {
                    return Err(format!(
                        "named location \"{n}\" can be on the server level only"
                    ));
                }
            }
        }
    }
    let siblings = match scope {
        Scope::Server(s) => &s.locations,
        Scope::Location(l) => &l.locations,
        _ => unreachable!("the table allows location in server and location only"),
    };
    if let Some(key) = duplicate_key(&matcher) {
        if siblings
            .iter()
            .any(|o| duplicate_key(&o.matcher) == Some(key))
        {
            return Err(format!("duplicate location \"{}\"", key.1));
        }
    }
    let mut loc = Location::new(matcher, d.loc.clone());
    b.walk(
        &mut Scope::Location(&mut loc),
        d.block.as_deref().unwrap_or_default(),
    );
    match scope {
        Scope::Server(s) => s.locations.push(loc),
        Scope::Location(l) => l.locations.push(loc),
        _ => unreachable!("checked above"),
    }
    Ok(())
}

/// `nowait_status;` — the location answers with nowait's measurements in
/// the Prometheus text format (as nginx's `stub_status`, richer).
pub fn nowait_status(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let Scope::Location(l) = scope else {
        unreachable!("the table allows nowait_status in location only")
    };
    if std::mem::replace(&mut l.status_page, true) {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs(s: &str) -> Result<Vec<String>, String> {
        parse_listen_addr(s).map(|v| v.iter().map(|a| a.to_string()).collect())
    }

    #[test]
    fn port_ranges_are_one_address_per_port() {
        assert_eq!(
            addrs("127.0.0.1:8182-8184").unwrap(),
            ["127.0.0.1:8182", "127.0.0.1:8183", "127.0.0.1:8184"]
        );
        assert_eq!(
            addrs("[::1]:8182-8183").unwrap(),
            ["[::1]:8182", "[::1]:8183"]
        );
        assert_eq!(
            addrs("8182-8183").unwrap(),
            ["0.0.0.0:8182", "0.0.0.0:8183"]
        );
        assert_eq!(addrs("*:90-90").unwrap(), ["0.0.0.0:90"]);
        assert_eq!(addrs("[::1]").unwrap(), ["[::1]:80"]);
    }

    #[test]
    fn bad_ranges_say_what_nginx_says() {
        let err = |s: &str| addrs(s).unwrap_err();
        assert_eq!(
            err("127.0.0.1:8183-8182"),
            "invalid port range in \"127.0.0.1:8183-8182\" of the \"listen\" directive"
        );
        assert_eq!(
            err("8183-8182"),
            "invalid port range in \"8183-8182\" of the \"listen\" directive"
        );
        for s in [
            "127.0.0.1:0-8183",
            "127.0.0.1:8182-",
            "127.0.0.1:-8183",
            "127.0.0.1:8182--8183",
            "127.0.0.1:8182-65536",
            "127.0.0.1:8182-8183x",
        ] {
            assert_eq!(
                err(s),
                format!("invalid port in \"{s}\" of the \"listen\" directive")
            );
        }
    }

    fn errors(body: &str) -> Vec<String> {
        let text = format!("events {{}}\nhttp {{\n{body}\n}}\n");
        match crate::config::load_text(&text) {
            Ok(_) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.message).collect(),
        }
    }

    #[test]
    fn unix_sockets_are_their_path() {
        assert_eq!(addrs("unix:/tmp/x.sock").unwrap(), ["unix:/tmp/x.sock"]);
        // The prefix in any case (`ngx_strncasecmp`); no URI part: colons
        // belong to the path.
        assert_eq!(addrs("UNIX:/tmp/a:b").unwrap(), ["unix:/tmp/a:b"]);
        assert_eq!(
            parse_listen_addr("unix:/tmp/x.sock").unwrap()[0].unix_path(),
            Some(Path::new("/tmp/x.sock"))
        );
    }

    #[test]
    fn bad_unix_sockets_say_what_nginx_says() {
        assert_eq!(
            addrs("unix:").unwrap_err(),
            "no path in the unix domain socket in \"unix:\" of the \"listen\" directive"
        );
        let long = format!("unix:/{}", "a".repeat(super::super::url::SUN_PATH_LEN));
        assert_eq!(
            addrs(&long).unwrap_err(),
            format!(
                "too long path in the unix domain socket in \"{long}\" of the \"listen\" directive"
            )
        );
    }

    #[test]
    fn a_unix_listen_takes_the_socket_parameters() {
        let text = "events {}\nhttp {\n server { listen unix:/tmp/u.sock default_server backlog=16 rcvbuf=64k sndbuf=32k; }\n}\n";
        let c = crate::config::load_text(text)
            .unwrap_or_else(|e| panic!("{e:?}"))
            .config;
        let l = &c.http.unwrap().servers[0].listens[0];
        assert_eq!(l.addr.to_string(), "unix:/tmp/u.sock");
        assert!(l.default_server);
        assert_eq!(
            (l.backlog, l.rcvbuf, l.sndbuf),
            (16, Some(65536), Some(32768))
        );
    }

    /// A range overlapping a listen already given is a duplicate, at the
    /// first port they share; a wide range is one listen per port (its
    /// check once a list scan per port: the config fuzz target's slowest
    /// inputs, `listen 40-62652;`, took seconds).
    #[test]
    fn ranges_are_checked_for_duplicates() {
        assert_eq!(
            errors("server { listen 127.0.0.1:8081; listen 127.0.0.1:8080-8082; }"),
            vec!["a duplicate listen 127.0.0.1:8081"]
        );
        let c = crate::config::load_text(
            "events {}\nhttp { server { listen 127.0.0.1:2000-61999; } }\n",
        )
        .unwrap_or_else(|e| panic!("{e:?}"))
        .config;
        assert_eq!(c.http.unwrap().servers[0].listens.len(), 60_000);
    }

    #[test]
    fn unix_listen_errors_are_nginx_s() {
        assert_eq!(
            errors("server { listen unix:/tmp/u.sock; listen unix:/tmp/u.sock; }"),
            vec!["a duplicate listen unix:/tmp/u.sock"]
        );
        assert_eq!(
            errors(
                "server { listen unix:/tmp/u.sock default_server; }\n\
                 server { listen unix:/tmp/u.sock default_server; }"
            ),
            vec!["a duplicate default server for unix:/tmp/u.sock"]
        );
        assert_eq!(
            errors(
                "server { listen unix:/tmp/u.sock backlog=8; }\n\
                 server { listen unix:/tmp/u.sock backlog=9; }"
            ),
            vec!["duplicate listen options for unix:/tmp/u.sock"]
        );
        assert_eq!(
            errors("server { listen unix:/tmp/u.sock proxy_protocol; }"),
            vec!["the \"proxy_protocol\" parameter of \"listen\" is not implemented yet"]
        );
    }
}
