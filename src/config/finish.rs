//! The second half of a load: merge every level with its parent, apply the
//! defaults that depend on the prefix, and check what refers to what
//! (thread pools, log formats, variables, listen sockets, cache zones).

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use super::build::Builder;
use super::finish_cache;
use super::finish_proxy::{self, MergeChecks};
use super::inherit::{LocConf, SrvConf};
use super::listen_addr::ListenAddr;
use super::model::{
    AccessLogs, AccessTarget, DEFAULT_POOL, Handler, HttpConf, Listen, Location, LogTarget,
    MainConf, Root, ThreadPoolConf, VarDef,
};
use super::proxy_hash::Tables;
use super::template::{Part, Template, Var};

/// Merges and checks; errors go to the builder's diagnostics.
pub fn finish(b: &mut Builder, main: &mut MainConf, http: Option<&mut HttpConf>) {
    check_variables(b);
    check_pools(b, main, http.as_deref());
    if let Some(h) = http {
        h.var_defs = var_defs(b, h);
        h.sets_builtins = b.sets_builtins;
        check_log_formats(b, h);
        finish_cache::check_variable_zones(b, h);
        finish_proxy::finish_upstreams(b, h);
        merge_http(b, h);
        super::set_acme::finish(b, h);
        super::finish_ssl::finish(b, h);
        super::finish_ssl::handshake_pool(main, h);
        super::set_charset::check_recodes(b, h);
        check_listens(b, h);
    }
    finish_proxy::check_zones(b);
}

fn check_variables(b: &mut Builder) {
    let uses = std::mem::take(&mut b.var_uses);
    // Names are case-insensitive (some definers keep them as written).
    let defined: HashSet<String> = b
        .defined_vars
        .iter()
        .map(|n| n.to_ascii_lowercase())
        .collect();
    let mut reported = HashSet::new();
    for (name, loc) in uses {
        let lower = name.to_ascii_lowercase();
        if !defined.contains(&lower) && reported.insert((lower, loc.clone().line)) {
            b.error(format!("unknown \"{name}\" variable"), &loc);
        }
    }
}

/// What defines each configuration-defined variable, as nginx's variables
/// end up with one get handler each: a `map` or `split_clients` (the last
/// one written wins, as each replaces the handler), else a named capture,
/// else `set` alone.
fn var_defs(b: &Builder, h: &HttpConf) -> HashMap<Arc<str>, VarDef> {
    let mut defs: HashMap<Arc<str>, VarDef> = HashMap::new();
    for name in &b.defined_vars {
        let lower = name.to_ascii_lowercase();
        let def = if b.capture_vars.contains(&lower) || !b.set_vars.contains(&lower) {
            VarDef::Capture
        } else {
            VarDef::Set
        };
        defs.insert(Arc::from(lower.as_str()), def);
    }
    for (i, s) in h.split_clients.iter().enumerate() {
        defs.insert(Arc::from(s.var.as_str()), VarDef::Split(i));
    }
    for (i, m) in h.maps.iter().enumerate() {
        defs.insert(m.var.clone(), VarDef::Map(i));
    }
    defs
}

/// The most names [`possible_values`] spells out. Each variable multiplies
/// the count by its number of values, so `$a$a$a$a$a$a` over 60 values would
/// be 46 billion strings; past this bound the pool is left to be checked per
/// request, as nginx does for every variable pool name.
pub const MAX_POSSIBLE_VALUES: usize = 4096;

/// The values a template can take when its variables are all defined by
/// `split_clients` with fixed values; `None` when it depends on the request
/// (or could take more than [`MAX_POSSIBLE_VALUES`] values).
pub(super) fn possible_values(t: &Template, http: Option<&HttpConf>) -> Option<Vec<String>> {
    let mut out = vec![String::new()];
    for part in &t.parts {
        match part {
            Part::Literal(s) => out.iter_mut().for_each(|o| o.push_str(s)),
            Part::Var(Var::Named(v)) => {
                let sc = http?.split_clients.iter().find(|s| *s.var == **v)?;
                let vals: Vec<&str> = sc.parts.iter().map(|(_, v)| v.as_str()).collect();
                if out.len().saturating_mul(vals.len()) > MAX_POSSIBLE_VALUES {
                    return None;
                }
                out = out
                    .iter()
                    .flat_map(|o| vals.iter().map(move |v| format!("{o}{v}")))
                    .collect();
            }
            Part::Var(_) => return None,
        }
    }
    Some(out)
}

fn check_pools(b: &mut Builder, main: &mut MainConf, http: Option<&HttpConf>) {
    let uses = std::mem::take(&mut b.pool_uses);
    for (t, loc) in uses {
        let Some(names) = possible_values(&t, http) else {
            continue; // chosen per request; an unknown name is a 500 then
        };
        for name in names {
            if main.thread_pools.iter().any(|p| p.name == name) {
                continue;
            }
            if name == DEFAULT_POOL.0 {
                main.thread_pools.push(ThreadPoolConf {
                    name,
                    threads: DEFAULT_POOL.1,
                    max_queue: DEFAULT_POOL.2,
                    loc: None,
                });
                continue;
            }
            b.error(format!("unknown thread pool \"{name}\""), &loc);
        }
    }
}

fn check_log_formats(b: &mut Builder, h: &HttpConf) {
    let uses = std::mem::take(&mut b.log_format_uses);
    for (name, loc) in uses {
        if !h.log_formats.contains_key(&name) {
            b.error(format!("unknown log format \"{name}\""), &loc);
        }
    }
}

/// Makes the prefix-relative defaults (`html`, `logs/access.log`) absolute.
fn absolute_defaults(prefix: &Path) -> LocConf {
    let mut d = LocConf::default();
    if let Root::Root(t) = &d.root {
        d.root = Root::Root(Template::literal(&prefix.join(&t.source).to_string_lossy()));
    }
    d.client_body_temp_path.path = prefix.join(&d.client_body_temp_path.path);
    d.proxy_temp_path.path = prefix.join(&d.proxy_temp_path.path);
    if let AccessLogs::Logs(logs) = &mut d.access_log {
        for l in logs {
            if let AccessTarget::Fixed(LogTarget::File(p)) = &l.target {
                l.target = AccessTarget::Fixed(LogTarget::File(prefix.join(p)));
            }
        }
    }
    d
}

fn merge_http(b: &mut Builder, h: &mut HttpConf) {
    h.conf = finish_cache::resolve(&h.set, &absolute_defaults(&b.prefix));
    let srv_http = h.srv_set.resolve(&SrvConf::default());
    let default_port = if crate::sys::process::geteuid() == 0 {
        80
    } else {
        8000
    };
    let at = b.http_end.clone().unwrap_or(super::source::Loc {
        origin: super::source::Origin::Embedded,
        line: 0,
    });
    let mut checks = MergeChecks::new(at, finish_cache::zone_names(h));
    // The http level's header tables: the first server to need them
    // builds them for the others (see `proxy_hash`).
    let mut http_tables = Tables::http(h.set.proxy_set_header.is_some());
    for s in &mut h.servers {
        s.conf = finish_cache::resolve(&s.set, &h.conf);
        checks.level(b, &mut s.conf);
        let mut tables = checks.header_tables(b, &s.set, &s.conf, &mut http_tables);
        checks.secure_link(b, &s.set, &mut s.conf);
        s.srv = s.srv_set.resolve(&srv_http);
        if s.listens.is_empty() {
            s.listens.push(Listen::new(
                SocketAddr::from(([0, 0, 0, 0], default_port)).into(),
                s.loc.clone().unwrap_or(super::source::Loc {
                    origin: super::source::Origin::Embedded,
                    line: 0,
                }),
            ));
        }
        merge_locations(b, &mut checks, &mut s.locations, &s.conf, &mut tables);
    }
    h.upstream_tls = std::mem::take(&mut checks.tls.list);
}

fn merge_locations(
    b: &mut Builder,
    checks: &mut MergeChecks,
    list: &mut [Location],
    parent: &LocConf,
    tables: &mut Tables,
) {
    for l in list {
        merge_location(b, checks, l, parent, tables);
    }
}

/// Merges one location with its parent's settings, then what is inside it:
/// nested locations, and the anonymous locations of its `if` blocks, which
/// take the location's content handler (and `proxy_pass`) unless they
/// name their own, as nginx's `noname` locations do.
fn merge_location(
    b: &mut Builder,
    checks: &mut MergeChecks,
    l: &mut Location,
    parent: &LocConf,
    parent_tables: &mut Tables,
) {
    l.conf = finish_cache::resolve(&l.set, parent);
    checks.location(b, l);
    let mut tables = checks.header_tables(b, &l.set, &l.conf, parent_tables);
    checks.secure_link(b, &l.set, &mut l.conf);
    choose_handler(b, l);
    let conf = l.conf.clone();
    let (handler, proxy_pass) = (l.handler, l.proxy_pass.clone());
    for child in l.children_mut() {
        if child.noname && child.proxy_pass.is_none() && !child.status_page {
            child.proxy_pass = proxy_pass.clone();
            child.status_page = handler == Handler::Status;
        }
        merge_location(b, checks, child, &conf, &mut tables);
        if child.noname && child.handler == Handler::Static {
            child.handler = handler;
        }
    }
}

/// One content handler per location: the directives that name one may not
/// be combined (nginx: the second one's `is duplicate`).
fn choose_handler(b: &mut Builder, l: &mut Location) {
    let mut chosen = Vec::new();
    if l.proxy_pass.is_some() {
        chosen.push((Handler::Proxy, "proxy_pass"));
    }
    if l.status_page {
        chosen.push((Handler::Status, "nowait_status"));
    }
    if let Some((h, _)) = chosen.first() {
        l.handler = *h;
    }
    if let [(_, first), (_, second), ..] = chosen.as_slice() {
        b.error(
            format!("\"{second}\" cannot be used with \"{first}\" in one location: a location has one content handler"),
            &l.loc,
        );
    }
}

fn check_listens(b: &mut Builder, h: &HttpConf) {
    let mut options: HashMap<&ListenAddr, bool> = HashMap::new();
    let mut defaults: HashSet<&ListenAddr> = HashSet::new();
    for s in &h.servers {
        for l in &s.listens {
            let had_options = options.entry(&l.addr).or_insert(false);
            if l.has_options() {
                if *had_options {
                    b.error(format!("duplicate listen options for {}", l.addr), &l.loc);
                }
                *had_options = true;
            }
            if l.default_server && !defaults.insert(&l.addr) {
                b.error(format!("a duplicate default server for {}", l.addr), &l.loc);
            }
        }
    }
    // nginx looks at the names once the configuration read without error.
    if !b.diags.has_errors() {
        conflicting_names(b, h);
    }
}

/// nginx's warning for a name two servers of one address both claim
/// (`ngx_http_server_names`, for an address with more than one server):
/// `conflicting server name "x" on 127.0.0.1:80, ignored`. The first server
/// keeps the name; a server without `server_name` has the name `""`.
/// Regular expressions are not compared.
fn conflicting_names(b: &mut Builder, h: &HttpConf) {
    let mut by_addr: Vec<(&ListenAddr, Vec<&super::model::Server>)> = Vec::new();
    for s in &h.servers {
        for l in &s.listens {
            match by_addr.iter_mut().find(|(a, _)| *a == &l.addr) {
                Some((_, servers)) if !servers.iter().any(|o| std::ptr::eq(*o, s)) => {
                    servers.push(s)
                }
                Some(_) => {}
                None => by_addr.push((&l.addr, vec![s])),
            }
        }
    }
    for (addr, servers) in by_addr {
        if servers.len() < 2 {
            continue;
        }
        let mut seen = HashSet::new();
        for s in servers {
            let unnamed = [String::new()];
            let names = if s.names.is_empty() {
                &unnamed[..]
            } else {
                &s.names[..]
            };
            for name in names.iter().filter(|n| !n.starts_with('~')) {
                if !seen.insert(name.to_ascii_lowercase()) {
                    b.diags.push(super::error::ConfError::warn(
                        format!("conflicting server name \"{name}\" on {addr}, ignored"),
                        None,
                    ));
                }
            }
        }
    }
}
