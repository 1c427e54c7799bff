//! The proxy's part of finishing a load, once the whole `http` block is
//! read: nginx's `ngx_http_upstream_init_main_conf` (implicit groups'
//! names resolved, groups without usable servers refused) and the checks
//! and derived values of `ngx_http_proxy_merge_loc_conf` (buffer sizes,
//! `proxy_next_upstream off`, the default `proxy_redirect`, the zone of
//! `proxy_cache`, the header tables' sizes).
//!
//! nginx reports merge problems where the `http` block closes, and so does
//! this (the header tables' without a place, as nginx's); a problem
//! inherited by several servers is reported once.

use std::collections::HashSet;

use super::build::Builder;
use super::error::ConfError;
use super::finish_cache;
use super::inherit::LocConf;
use super::model::{HttpConf, Location, NextUpstream, ProxyRedirect, ProxyTarget, Upstream};
use super::proxy_hash::Tables;
use super::set_proxy::default_redirect;
use super::source::Loc;
use super::url;

/// Resolves implicit groups' names, checks every group has a server that
/// is not a backup, makes names unique and moves the groups into `h`.
pub fn finish_upstreams(b: &mut Builder, h: &mut HttpConf) {
    let entries = std::mem::take(&mut b.upstreams);
    let mut out: Vec<Upstream> = Vec::with_capacity(entries.len());
    for mut e in entries {
        let u = &mut e.upstream;
        if u.implicit {
            for s in u.servers.iter_mut().filter(|s| s.addrs.is_empty()) {
                if u.port == 0 {
                    b.error(format!("no port in upstream \"{}\"", u.host), &e.first_loc);
                    continue;
                }
                match url::resolve(&u.host, u.port) {
                    Ok(addrs) => s.addrs = addrs,
                    Err(why) => b.error(format!("{why} in upstream \"{}\"", u.host), &e.first_loc),
                }
            }
        } else if !u.servers.is_empty() && u.servers.iter().all(|s| s.backup) {
            b.error(
                format!("no servers in upstream \"{}\"", u.host),
                &e.first_loc,
            );
        }
        out.push(e.upstream);
    }
    for (old, new) in std::mem::take(&mut b.upstream_renames) {
        for s in &mut h.servers {
            rename_in(&mut s.locations, &old, &new);
        }
    }
    unique_names(&mut out, h);
    h.upstreams = out;
}

/// Gives an implicit group whose `host:port` name equals a block's name a
/// name of its own (`host:port#2`), and points its `proxy_pass`es at it. No
/// `proxy_pass` can name such a block (its name has a port), so every
/// `proxy_pass` with that name meant the implicit group.
fn unique_names(list: &mut [Upstream], h: &mut HttpConf) {
    let blocks: HashSet<String> = list
        .iter()
        .filter(|u| !u.implicit)
        .map(|u| u.name.clone())
        .collect();
    for u in list.iter_mut().filter(|u| u.implicit) {
        if !blocks.contains(&u.name) {
            continue;
        }
        let old = u.name.clone();
        let mut n = 2;
        while blocks.contains(&format!("{old}#{n}")) {
            n += 1;
        }
        u.name = format!("{old}#{n}");
        for s in &mut h.servers {
            rename_in(&mut s.locations, &old, &u.name);
        }
    }
}

fn rename_in(locations: &mut [Location], old: &str, new: &str) {
    for l in locations {
        rename_at(l, old, new);
    }
}

/// [`rename_in`] for one location and everything inside it (nested
/// locations and the locations of its `if` blocks).
fn rename_at(l: &mut Location, old: &str, new: &str) {
    if let Some(p) = &mut l.proxy_pass {
        if let ProxyTarget::Static(t) = &mut p.target {
            if t.upstream == old {
                t.upstream = new.to_string();
            }
        }
    }
    for child in l.children_mut() {
        rename_at(child, old, new);
    }
}

/// The state of the merge checks: where nginx reports them and what was
/// reported already.
pub struct MergeChecks {
    /// Where the `http` block closes.
    at: Loc,
    /// Messages reported so far.
    reported: HashSet<String>,
    /// The `keys_zone` names of every `proxy_cache_path`.
    cache_zones: HashSet<String>,
    /// The TLS of the locations that proxy over TLS, made so far.
    pub tls: super::finish_proxy_ssl::Plans,
}

impl MergeChecks {
    /// Checks reported at `at`, knowing the cache zones declared.
    pub fn new(at: Loc, cache_zones: HashSet<String>) -> MergeChecks {
        MergeChecks {
            at,
            reported: HashSet::new(),
            cache_zones,
            tls: Default::default(),
        }
    }

    /// nginx's checks and normalisations of one merged level (a server or
    /// a location; nginx never merges the http level itself).
    pub fn level(&mut self, b: &mut Builder, conf: &mut LocConf) {
        if conf.proxy_next_upstream.contains(NextUpstream::OFF) {
            conf.proxy_next_upstream = NextUpstream::OFF;
        }
        if let Some(msg) = buffer_problem(conf) {
            if self.reported.insert(msg.to_string()) {
                b.error(msg, &self.at);
            }
        }
        if let Some(zone) = finish_cache::unknown_static_zone(conf, &self.cache_zones) {
            let msg = finish_cache::unknown_zone(zone);
            b.unknown_cache_zones.insert(zone.to_string());
            if self.reported.insert(msg.clone()) {
                b.error(msg, &self.at);
            }
        }
    }

    /// The proxy module's header tables of a merged level (`set`: what it
    /// wrote) under a parent whose tables are `parent`: nginx's messages
    /// where it builds them ([`super::proxy_hash::level`]), an `[emerg]`
    /// reported once. Returns the level's tables, for its children.
    pub fn header_tables(
        &mut self,
        b: &mut Builder,
        set: &super::inherit::LocSet,
        conf: &LocConf,
        parent: &mut Tables,
    ) -> Tables {
        let (tables, problems) = super::proxy_hash::level(set, conf, parent);
        for p in problems {
            match p {
                Ok(warning) => b.diags.push(ConfError::warn(warning, None)),
                Err(emerg) => {
                    if self.reported.insert(emerg.clone()) {
                        b.diags.push(ConfError::emerg(emerg, None));
                    }
                }
            }
        }
        tables
    }

    /// The secure_link module's merge of a level whose own settings are
    /// `set` ([`super::set_access::merge_secure_link`]).
    pub fn secure_link(
        &mut self,
        b: &mut Builder,
        set: &super::inherit::LocSet,
        conf: &mut LocConf,
    ) {
        if let Err(msg) = super::set_access::merge_secure_link(set, conf) {
            if self.reported.insert(msg.to_string()) {
                b.error(msg, &self.at);
            }
        }
    }

    /// [`Self::level`] for a location, its TLS to upstreams (see
    /// [`super::finish_proxy_ssl`]), plus nginx's default `proxy_redirect`:
    /// with nothing set and a `proxy_pass` without variables here, the rule
    /// derived from that `proxy_pass` (which nested locations inherit).
    pub fn location(&mut self, b: &mut Builder, l: &mut Location) {
        self.level(b, &mut l.conf);
        self.tls.location(b, l);
        if let (ProxyRedirect::Default, Some(pass)) = (&l.conf.proxy_redirect, &l.proxy_pass) {
            if let ProxyTarget::Static(t) = &pass.target {
                let rule = default_redirect(&pass.url.source, t, &l.matcher);
                l.conf.proxy_redirect = ProxyRedirect::Rules(vec![rule]);
            }
        }
    }
}

/// The first of nginx's buffer checks a merged level fails, in nginx's order.
pub fn buffer_problem(c: &LocConf) -> Option<&'static str> {
    let (count, size) = c.proxy_buffers;
    let unit = c.proxy_buffer_unit();
    if count < 2 {
        return Some("there must be at least 2 \"proxy_buffers\"");
    }
    let busy = c.busy_buffers_size();
    if busy < unit {
        return Some(
            "\"proxy_busy_buffers_size\" must be equal to or greater than the maximum of \
             the value of \"proxy_buffer_size\" and one of the \"proxy_buffers\"",
        );
    }
    if busy > u64::from(count - 1).saturating_mul(size) {
        return Some(
            "\"proxy_busy_buffers_size\" must be less than the size of all \
             \"proxy_buffers\" minus one buffer",
        );
    }
    if c.temp_file_write_size() < unit {
        return Some(
            "\"proxy_temp_file_write_size\" must be equal to or greater than the maximum \
             of the value of \"proxy_buffer_size\" and one of the \"proxy_buffers\"",
        );
    }
    let max_temp = c.max_temp_file_size();
    if max_temp != 0 && max_temp < unit {
        return Some(
            "\"proxy_max_temp_file_size\" must be equal to zero to disable temporary files \
             usage or must be equal to or greater than the maximum of the value of \
             \"proxy_buffer_size\" and one of the \"proxy_buffers\"",
        );
    }
    None
}

/// Every zone must have been given a size somewhere (nginx checks this at
/// start-up, with no file or line), but for a `proxy_cache` zone already
/// reported as unknown (nginx stops at that first error).
pub fn check_zones(b: &mut Builder) {
    let problems: Vec<String> = b
        .zones
        .without_size()
        .filter(|z| !b.unknown_cache_zones.contains(&z.name))
        .map(|z| format!("zero size shared memory zone \"{}\"", z.name))
        .collect();
    for p in problems {
        b.diags.push(ConfError::emerg(p, None));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(f: impl FnOnce(&mut LocConf)) -> LocConf {
        let mut c = LocConf::default();
        f(&mut c);
        c
    }

    #[test]
    fn nginx_defaults_pass_the_buffer_checks() {
        assert_eq!(buffer_problem(&LocConf::default()), None);
        let c = LocConf::default();
        assert_eq!(c.busy_buffers_size(), 8192);
        assert_eq!(c.temp_file_write_size(), 8192);
        assert_eq!(c.max_temp_file_size(), 1 << 30);
    }

    #[test]
    fn buffer_checks_in_nginx_order() {
        let p = |f: fn(&mut LocConf)| buffer_problem(&conf(f)).unwrap_or("");
        assert!(p(|c| c.proxy_buffers = (1, 4096)).starts_with("there must be at least 2"));
        assert!(
            p(|c| c.proxy_busy_buffers_size = Some(1024)).contains("must be equal to or greater")
        );
        // 16k buffer: the default busy size (32k) exceeds 7 × 4k.
        assert!(p(|c| c.proxy_buffer_size = 16384).contains("must be less than"));
        assert!(
            p(|c| c.proxy_temp_file_write_size = Some(1024))
                .starts_with("\"proxy_temp_file_write_size\"")
        );
        assert!(
            p(|c| c.proxy_max_temp_file_size = Some(1024))
                .starts_with("\"proxy_max_temp_file_size\"")
        );
        assert_eq!(
            buffer_problem(&conf(|c| c.proxy_max_temp_file_size = Some(0))),
            None
        );
    }
}
