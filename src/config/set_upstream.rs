//! Setters for `upstream { … }` and what goes inside it (`server`, the
//! balancing methods, `keepalive*`, `zone`), and nginx's list of upstream
//! groups that `proxy_pass` adds implicit groups to
//! (`ngx_http_upstream_add`), in nginx's order and words.
//!
//! Server names are resolved here, while loading, as nginx resolves them
//! while parsing; names of implicit groups are resolved when the whole
//! `http` block is known (see [`super::finish_proxy`]).

use std::time::Duration;

use super::build::{Builder, Scope};
use super::model::{
    DEFAULT_FAIL_TIMEOUT, DEFAULT_MAX_FAILS, DEFAULT_UPSTREAM_KEEPALIVE_REQUESTS,
    DEFAULT_UPSTREAM_KEEPALIVE_TIME, DEFAULT_UPSTREAM_KEEPALIVE_TIMEOUT, DEFAULT_WEIGHT, Upstream,
    UpstreamBalance, UpstreamServer,
};
use super::slot;
use super::source::Loc;
use super::syntax::Directive;
use super::url::{self, ParsedUrl, UrlOptions};
use super::value;
use super::zones::ZoneUse;

/// The smallest `zone` size nginx accepts: eight pages.
pub const MIN_ZONE_SIZE: u64 = 8 * super::inherit::PAGE_SIZE;

/// How `server` addresses inside `upstream` are read: resolved now, no URI.
const SERVER_URL: UrlOptions = UrlOptions {
    default_port: 80,
    uri_part: false,
    resolve: true,
};

/// An upstream group while the configuration is read: the model's
/// [`Upstream`] and nginx's bookkeeping around it
/// (`ngx_http_upstream_srv_conf_t`).
#[derive(Clone, Debug)]
pub struct UpstreamEntry {
    /// The group.
    pub upstream: Upstream,
    /// Declared by an `upstream` block (nginx's `NGX_HTTP_UPSTREAM_CREATE`).
    pub block: bool,
    /// Named without a port where it was first named.
    pub no_port: bool,
    /// Where it was first named: nginx reports problems found later there.
    pub first_loc: Loc,
}

/// What an `upstream` block has set so far, beyond the model.
#[derive(Debug)]
pub struct UpstreamState {
    /// Whether the balancing method in force accepts `backup` (nginx's
    /// `NGX_HTTP_UPSTREAM_BACKUP` flag): round robin and `least_conn` do.
    pub backup_allowed: bool,
    /// A method or `keepalive` has taken the group's initialisation; another
    /// method replaces it with nginx's warning.
    pub init_set: bool,
    /// `keepalive` was written (it cannot be written twice, even when a
    /// later method has disabled it).
    pub keepalive_written: bool,
    /// `keepalive_requests`.
    pub keepalive_requests: Option<u64>,
    /// `keepalive_timeout`.
    pub keepalive_timeout: Option<Duration>,
    /// `keepalive_time`.
    pub keepalive_time: Option<Duration>,
}

impl Default for UpstreamState {
    fn default() -> Self {
        UpstreamState {
            backup_allowed: true,
            init_set: false,
            keepalive_written: false,
            keepalive_requests: None,
            keepalive_timeout: None,
            keepalive_time: None,
        }
    }
}

/// An empty group named `name`, as a block starts.
fn new_upstream(name: &str, implicit: bool, host: &str, port: u16, loc: &Loc) -> Upstream {
    Upstream {
        name: name.to_string(),
        servers: Vec::new(),
        balance: UpstreamBalance::RoundRobin,
        keepalive: None,
        keepalive_requests: DEFAULT_UPSTREAM_KEEPALIVE_REQUESTS,
        keepalive_timeout: DEFAULT_UPSTREAM_KEEPALIVE_TIMEOUT,
        keepalive_time: DEFAULT_UPSTREAM_KEEPALIVE_TIME,
        zone: None,
        implicit,
        host: host.to_string(),
        port,
        loc: loc.clone(),
    }
}

/// A server with nginx's default parameters.
pub fn default_server(
    address: &str,
    addrs: Vec<super::model::UpstreamAddr>,
    loc: &Loc,
) -> UpstreamServer {
    UpstreamServer {
        address: address.to_string(),
        addrs,
        weight: DEFAULT_WEIGHT,
        max_fails: DEFAULT_MAX_FAILS,
        fail_timeout: DEFAULT_FAIL_TIMEOUT,
        backup: false,
        down: false,
        max_conns: 0,
        loc: loc.clone(),
    }
}

/// `upstream name { ... }`
pub fn upstream(b: &mut Builder, _: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let name = d.arg(0);
    // `ngx_http_upstream_add` with NGX_HTTP_UPSTREAM_CREATE.
    let mut existing = None;
    for (i, e) in b.upstreams.iter().enumerate() {
        if !e.upstream.host.eq_ignore_ascii_case(name) {
            continue;
        }
        if e.block {
            return Err(format!("duplicate upstream \"{name}\""));
        }
        if !e.no_port {
            // nginx reports this where the port was written (and stops;
            // nowait goes on as if the port had not been written).
            let msg = format!("upstream \"{name}\" may not have port {}", e.upstream.port);
            let at = e.first_loc.clone();
            b.error(msg, &at);
        }
        existing = Some(i);
        break;
    }
    let mut u = new_upstream(name, false, name, 0, &d.loc);
    let mut state = UpstreamState::default();
    let errors_before = b.diags.items.len();
    b.walk(
        &mut Scope::Upstream(&mut u, &mut state),
        d.block.as_deref().unwrap_or_default(),
    );
    // nginx stops at an error inside the block; so does its next check.
    let block_failed = b.diags.items[errors_before..]
        .iter()
        .any(|e| e.level.stops());
    u.keepalive_requests = state
        .keepalive_requests
        .unwrap_or(DEFAULT_UPSTREAM_KEEPALIVE_REQUESTS);
    u.keepalive_timeout = state
        .keepalive_timeout
        .unwrap_or(DEFAULT_UPSTREAM_KEEPALIVE_TIMEOUT);
    u.keepalive_time = state
        .keepalive_time
        .unwrap_or(DEFAULT_UPSTREAM_KEEPALIVE_TIME);
    if u.servers.is_empty() && !block_failed {
        let at = d.end.clone().unwrap_or_else(|| d.loc.clone());
        b.error("no servers are inside upstream", &at);
    }
    match existing {
        // A group `proxy_pass` named earlier becomes this block, where it
        // stands in nginx's list.
        Some(i) => {
            let e = &mut b.upstreams[i];
            let old = std::mem::replace(&mut e.upstream, u);
            e.block = true;
            e.no_port = true;
            b.upstream_renames.push((old.name, e.upstream.name.clone()));
        }
        None => b.upstreams.push(UpstreamEntry {
            upstream: u,
            block: true,
            no_port: true,
            first_loc: d.loc.clone(),
        }),
    }
    Ok(())
}

/// The group `proxy_pass` sends to (`ngx_http_upstream_add` without
/// NGX_HTTP_UPSTREAM_CREATE): the block or implicit group of that host
/// (and port), or a new implicit group. Returns its name.
pub fn add_for_proxy_pass(b: &mut Builder, u: &ParsedUrl, loc: &Loc) -> Result<String, String> {
    for e in &b.upstreams {
        if !e.upstream.host.eq_ignore_ascii_case(&u.host) {
            continue;
        }
        if e.block && !u.no_port {
            return Err(format!(
                "upstream \"{}\" may not have port {}",
                u.host, u.port
            ));
        }
        if e.upstream.port != 0 && u.port != 0 && e.upstream.port != u.port {
            continue;
        }
        return Ok(e.upstream.name.clone());
    }
    let (name, address) = if u.unix {
        let n = format!("unix:{}", u.host);
        (n.clone(), n)
    } else {
        let written = match &u.port_text {
            Some(p) => format!("{}:{p}", u.host),
            None => u.host.clone(),
        };
        (format!("{}:{}", u.host, u.port), written)
    };
    let mut up = new_upstream(&name, true, &u.host, u.port, loc);
    // A literal address or a socket has its address now; a name is
    // resolved once the whole http block is read (nginx's
    // ngx_http_upstream_init_round_robin), see `finish_proxy`.
    up.servers
        .push(default_server(&address, u.addrs.clone(), loc));
    b.upstreams.push(UpstreamEntry {
        upstream: up,
        block: false,
        no_port: u.no_port,
        first_loc: loc.clone(),
    });
    Ok(name)
}

fn upstream_scope<'a>(scope: &'a mut Scope<'_>) -> (&'a mut Upstream, &'a mut UpstreamState) {
    match scope {
        Scope::Upstream(u, s) => (u, s),
        _ => unreachable!("the table allows this directive in upstream only"),
    }
}

/// `server address [weight=N] [max_conns=N] [max_fails=N] [fail_timeout=T] [backup] [down];`
pub fn upstream_server(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let (u, state) = upstream_scope(scope);
    let mut s = default_server(d.arg(0), Vec::new(), &d.loc);
    // nginx reads the parameters before the address.
    for w in &d.args[1..] {
        let p = w.value.as_str();
        let invalid = || format!("invalid parameter \"{p}\"");
        let count = |v: &str| value::number(v).map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        if let Some(v) = p.strip_prefix("weight=") {
            s.weight = count(v).filter(|&n| n > 0).ok_or_else(invalid)?;
        } else if let Some(v) = p.strip_prefix("max_conns=") {
            s.max_conns = count(v).ok_or_else(invalid)?;
        } else if let Some(v) = p.strip_prefix("max_fails=") {
            s.max_fails = count(v).ok_or_else(invalid)?;
        } else if let Some(v) = p.strip_prefix("fail_timeout=") {
            s.fail_timeout = value::time(v, false).ok_or_else(invalid)?;
        } else if p == "backup" {
            if !state.backup_allowed {
                return Err(format!(
                    "balancing method does not support parameter \"{p}\""
                ));
            }
            s.backup = true;
        } else if p == "down" {
            s.down = true;
        } else {
            return Err(invalid());
        }
    }
    let addr = d.arg(0);
    let parsed =
        url::parse_url(addr, SERVER_URL).map_err(|e| format!("{e} in upstream \"{addr}\""))?;
    s.addrs = parsed.addrs;
    u.servers.push(s);
    Ok(())
}

/// Sets the balancing method, with nginx's warning when one (or
/// `keepalive`) was set before: the earlier one stops applying.
fn balance(
    b: &mut Builder,
    d: &Directive,
    u: &mut Upstream,
    state: &mut UpstreamState,
    method: UpstreamBalance,
) {
    if state.init_set {
        b.warn("load balancing method redefined", &d.loc);
        // A `keepalive` before the method wrapped the old method only.
        u.keepalive = None;
    }
    state.init_set = true;
    state.backup_allowed = matches!(method, UpstreamBalance::LeastConn);
    u.balance = method;
}

/// `hash key [consistent];`
pub fn hash(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let key = b.template(d.arg(0), &d.loc)?;
    let consistent = d.args.len() == 2 && d.arg(1) == "consistent";
    let (u, state) = upstream_scope(scope);
    balance(b, d, u, state, UpstreamBalance::Hash { key, consistent });
    if d.args.len() == 2 && !consistent {
        return Err(format!("invalid parameter \"{}\"", d.arg(1)));
    }
    Ok(())
}

/// `ip_hash;`
pub fn ip_hash(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let (u, state) = upstream_scope(scope);
    balance(b, d, u, state, UpstreamBalance::IpHash);
    Ok(())
}

/// `least_conn;`
pub fn least_conn(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let (u, state) = upstream_scope(scope);
    balance(b, d, u, state, UpstreamBalance::LeastConn);
    Ok(())
}

/// `random [two [least_conn]];`
pub fn random(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let two = d.args.first().is_some_and(|w| w.value == "two");
    let (u, state) = upstream_scope(scope);
    balance(b, d, u, state, UpstreamBalance::Random { two });
    if let Some(w) = d.args.first() {
        if !two {
            return Err(format!("invalid parameter \"{}\"", w.value));
        }
    }
    if let Some(w) = d.args.get(1) {
        if w.value != "least_conn" {
            return Err(format!("invalid parameter \"{}\"", w.value));
        }
    }
    Ok(())
}

/// `keepalive connections;`
pub fn keepalive(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let (u, state) = upstream_scope(scope);
    if state.keepalive_written {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let n = match value::number(d.arg(0)) {
        Some(n @ 1..) => u32::try_from(n).unwrap_or(u32::MAX),
        _ => {
            return Err(format!(
                "invalid value \"{}\" in \"{}\" directive",
                d.arg(0),
                d.name
            ));
        }
    };
    state.keepalive_written = true;
    state.init_set = true;
    u.keepalive = Some(n);
    Ok(())
}

/// `keepalive_requests number;` (inside `upstream`)
pub fn keepalive_requests(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let (_, state) = upstream_scope(scope);
    if state.keepalive_requests.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    state.keepalive_requests = Some(slot::num(d, 0)?);
    Ok(())
}

/// `keepalive_timeout time;` (inside `upstream`)
pub fn keepalive_timeout(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let (_, state) = upstream_scope(scope);
    if state.keepalive_timeout.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    state.keepalive_timeout = Some(slot::msec(d, 0)?);
    Ok(())
}

/// `keepalive_time time;`
pub fn keepalive_time(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let (_, state) = upstream_scope(scope);
    if state.keepalive_time.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    state.keepalive_time = Some(slot::msec(d, 0)?);
    Ok(())
}

/// `zone name [size];`
pub fn zone(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let name = d.arg(0);
    if name.is_empty() {
        return Err(format!("invalid zone name \"{name}\""));
    }
    let size = match d.args.get(1) {
        None => None,
        Some(w) => {
            let size = value::size(&w.value)
                .ok_or_else(|| format!("invalid zone size \"{}\"", w.value))?;
            if size < MIN_ZONE_SIZE {
                return Err(format!("zone \"{name}\" is too small"));
            }
            Some(size)
        }
    };
    b.zones.add(name, size.unwrap_or(0), ZoneUse::Upstream)?;
    let (u, _) = upstream_scope(scope);
    u.zone = Some((name.to_string(), size));
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::config::load_text;
    use crate::config::model::{HttpConf, ProxyTarget, UpstreamAddr, UpstreamBalance};

    fn http(body: &str) -> HttpConf {
        let text = format!("events {{}}\nhttp {{\n{body}\n}}\n");
        let l = load_text(&text).unwrap_or_else(|e| panic!("{e:?}"));
        l.config.http.unwrap()
    }

    fn errors(body: &str) -> Vec<String> {
        let text = format!("events {{}}\nhttp {{\n{body}\n}}\n");
        match load_text(&text) {
            Ok(_) => Vec::new(),
            Err(e) => e
                .into_iter()
                .filter(|e| e.level.stops())
                .map(|e| e.message)
                .collect(),
        }
    }

    fn inet(s: &str) -> UpstreamAddr {
        UpstreamAddr::Inet(s.parse().unwrap())
    }

    #[test]
    fn a_block_with_every_parameter() {
        let h = http(
            "upstream b {\n\
             zone b 64k;\n\
             least_conn;\n\
             server 127.0.0.1:8081 weight=3 max_fails=0 fail_timeout=5s max_conns=7;\n\
             server 127.0.0.2 backup;\n\
             server unix:/tmp/s.sock down;\n\
             keepalive 16;\n\
             keepalive_requests 100;\n\
             keepalive_timeout 30s;\n\
             keepalive_time 2h;\n\
             }",
        );
        let u = &h.upstreams[0];
        assert_eq!((u.name.as_str(), u.implicit, u.port), ("b", false, 0));
        assert!(matches!(u.balance, UpstreamBalance::LeastConn));
        assert_eq!(u.keepalive, Some(16));
        assert_eq!(u.keepalive_requests, 100);
        assert_eq!(u.keepalive_timeout, Duration::from_secs(30));
        assert_eq!(u.keepalive_time, Duration::from_secs(7200));
        assert_eq!(u.zone, Some(("b".into(), Some(65536))));
        let s = &u.servers;
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].address, "127.0.0.1:8081");
        assert_eq!(s[0].addrs, vec![inet("127.0.0.1:8081")]);
        assert_eq!((s[0].weight, s[0].max_fails, s[0].max_conns), (3, 0, 7));
        assert_eq!(s[0].fail_timeout, Duration::from_secs(5));
        assert_eq!(s[1].addrs, vec![inet("127.0.0.2:80")], "default port 80");
        assert!(s[1].backup && !s[1].down);
        assert_eq!((s[1].weight, s[1].max_fails), (1, 1));
        assert_eq!(s[1].fail_timeout, Duration::from_secs(10));
        assert_eq!(s[2].addrs, vec![UpstreamAddr::Unix("/tmp/s.sock".into())]);
        assert!(s[2].down);
    }

    #[test]
    fn defaults_of_a_block() {
        let h = http("upstream b { server 127.0.0.1:1; }");
        let u = &h.upstreams[0];
        assert!(matches!(u.balance, UpstreamBalance::RoundRobin));
        assert_eq!(u.keepalive, None);
        assert_eq!(u.keepalive_requests, 1000);
        assert_eq!(u.keepalive_timeout, Duration::from_secs(60));
        assert_eq!(u.keepalive_time, Duration::from_secs(3600));
        assert_eq!(u.zone, None);
    }

    #[test]
    fn names_resolve_while_loading() {
        let h = http("upstream b { server localhost:8080; }");
        let addrs = &h.upstreams[0].servers[0].addrs;
        assert!(!addrs.is_empty());
        assert!(addrs.iter().all(|a| matches!(a,
            UpstreamAddr::Inet(sa) if sa.port() == 8080 && sa.ip().is_loopback())));
    }

    #[test]
    fn balancing_methods() {
        let h = http(
            "upstream a { hash $uri consistent; server 127.0.0.1:1; }\n\
             upstream b { random two least_conn; server 127.0.0.1:1; }\n\
             upstream c { random; ip_hash; server 127.0.0.1:1; }",
        );
        match &h.upstreams[0].balance {
            UpstreamBalance::Hash { key, consistent } => {
                assert_eq!(key.source, "$uri");
                assert!(consistent);
            }
            b => panic!("{b:?}"),
        }
        assert!(matches!(
            h.upstreams[1].balance,
            UpstreamBalance::Random { two: true }
        ));
        // The last method wins, with nginx's warning.
        assert!(matches!(h.upstreams[2].balance, UpstreamBalance::IpHash));
    }

    /// nginx: a method after `keepalive` replaces the keepalive wrapper.
    #[test]
    fn a_method_after_keepalive_disables_it() {
        let text =
            "events {}\nhttp {\nupstream b { keepalive 8; hash $uri; server 127.0.0.1:1; }\n}\n";
        let l = load_text(text).unwrap();
        assert_eq!(l.config.http.unwrap().upstreams[0].keepalive, None);
        assert_eq!(l.warnings.len(), 1);
        assert_eq!(l.warnings[0].message, "load balancing method redefined");
        let h = http("upstream b { hash $uri; keepalive 8; server 127.0.0.1:1; }");
        assert_eq!(h.upstreams[0].keepalive, Some(8));
    }

    /// nginx checks `backup` against the method in force when `server` is
    /// read: before `hash` it is accepted.
    #[test]
    fn backup_depends_on_the_order() {
        let h = http("upstream b { server 127.0.0.1:1; server 127.0.0.1:2 backup; hash $uri; }");
        assert!(h.upstreams[0].servers[1].backup);
        assert_eq!(
            errors("upstream b { ip_hash; server 127.0.0.1:1 backup; }"),
            vec!["balancing method does not support parameter \"backup\""]
        );
        assert!(
            errors("upstream b { least_conn; server 127.0.0.1:1; server 127.0.0.1:2 backup; }")
                .is_empty()
        );
    }

    fn target(h: &HttpConf, loc: usize) -> crate::config::model::ProxyUrl {
        match &h.servers[0].locations[loc]
            .proxy_pass
            .as_ref()
            .unwrap()
            .target
        {
            ProxyTarget::Static(u) => u.clone(),
            ProxyTarget::Dynamic => panic!("dynamic"),
        }
    }

    #[test]
    fn implicit_groups_are_made_once_per_host_and_port() {
        let h = http(
            "server {\n\
             location /a { proxy_pass http://127.0.0.1:8080; }\n\
             location /b { proxy_pass http://127.0.0.1:8080/x/; }\n\
             location /c { proxy_pass http://127.0.0.1:8081; }\n\
             location /d { proxy_pass http://localhost; }\n\
             location /e { proxy_pass http://LOCALHOST:80/; }\n\
             }",
        );
        let names: Vec<&str> = h.upstreams.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["127.0.0.1:8080", "127.0.0.1:8081", "localhost:80"]);
        assert!(h.upstreams.iter().all(|u| u.implicit));
        assert_eq!(target(&h, 0).upstream, "127.0.0.1:8080");
        assert_eq!(target(&h, 1).upstream, "127.0.0.1:8080");
        assert_eq!(target(&h, 4).upstream, "localhost:80");
        let u = &h.upstreams[0];
        assert_eq!((u.host.as_str(), u.port), ("127.0.0.1", 8080));
        assert_eq!(u.servers.len(), 1);
        assert_eq!(u.servers[0].address, "127.0.0.1:8080");
        assert_eq!(u.servers[0].addrs, vec![inet("127.0.0.1:8080")]);
        // A name is resolved once the http block is read.
        let l = &h.upstreams[2];
        assert_eq!(l.servers[0].address, "localhost");
        assert!(!l.servers[0].addrs.is_empty());
    }

    /// nginx: a `proxy_pass` naming a block declared later uses the block.
    #[test]
    fn a_block_after_its_proxy_pass() {
        let h = http(
            "server { location / { proxy_pass http://backend; } }\n\
             upstream backend { server 127.0.0.1:1; server 127.0.0.1:2; }",
        );
        assert_eq!(h.upstreams.len(), 1);
        let u = &h.upstreams[0];
        assert_eq!((u.name.as_str(), u.implicit, u.port), ("backend", false, 0));
        assert_eq!(u.servers.len(), 2);
        assert_eq!(target(&h, 0).upstream, "backend");
    }

    #[test]
    fn a_block_cannot_be_given_a_port() {
        let e = errors(
            "upstream b { server 127.0.0.1:1; }\n\
             server { location / { proxy_pass http://b:8080; } }",
        );
        assert_eq!(e, vec!["upstream \"b\" may not have port 8080"]);
        let e = errors(
            "server { location / { proxy_pass http://b:8080; } }\n\
             upstream b { server 127.0.0.1:1; }",
        );
        assert_eq!(e, vec!["upstream \"b\" may not have port 8080"]);
    }

    #[test]
    fn implicit_names_stay_unique() {
        let h = http(
            "upstream 127.0.0.1:8080 { server 127.0.0.1:1; }\n\
             server { location / { proxy_pass http://127.0.0.1:8080; } }",
        );
        let names: Vec<&str> = h.upstreams.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["127.0.0.1:8080", "127.0.0.1:8080#2"]);
        assert_eq!(target(&h, 0).upstream, "127.0.0.1:8080#2");
    }

    #[test]
    fn zones() {
        assert_eq!(
            errors("upstream b { zone z; server 127.0.0.1:1; }"),
            vec!["zero size shared memory zone \"z\""]
        );
        // A zone sized by another group is shared.
        let h = http(
            "upstream a { zone z 64k; server 127.0.0.1:1; }\n\
             upstream b { zone z; server 127.0.0.1:1; }",
        );
        assert_eq!(h.upstreams[1].zone, Some(("z".into(), None)));
        assert_eq!(
            errors("upstream b { zone \"\"; server 127.0.0.1:1; }"),
            vec!["invalid zone name \"\""]
        );
        assert_eq!(
            errors("upstream b { zone z 1x; server 127.0.0.1:1; }"),
            vec!["invalid zone size \"1x\""]
        );
    }
}
