//! The proxy cache's part of finishing a load, as nginx's
//! `ngx_http_proxy_merge_loc_conf` does it: `proxy_cache` and `proxy_store`
//! exclude each other per level, `proxy_cache_use_stale off` stands alone,
//! `GET` and `HEAD` are always cached methods, and a `proxy_cache` zone must
//! be some `proxy_cache_path`'s `keys_zone`.
//!
//! nginx checks a zone name without variables when it merges a level and
//! reports it where the `http` block closes; one with variables only per
//! request (`cache "x" not found`, a 500). nowait checks the latter at load
//! time too, where it can: when every variable in the name comes from a
//! `split_clients` with fixed values (`proxy_cache cache_$disk`), each name
//! it can take must be a zone, as for `aio threads=pool_$disk`.

use std::collections::HashSet;

use super::build::Builder;
use super::cache_model::{ALWAYS_CACHED_METHODS, CACHE_METHODS, ProxyStore};
use super::finish::possible_values;
use super::inherit::{LocConf, LocSet};
use super::model::{HttpConf, NextUpstream};

/// `"proxy_cache" zone "NAME" is unknown`: nginx's words.
pub fn unknown_zone(name: &str) -> String {
    format!("\"proxy_cache\" zone \"{name}\" is unknown")
}

/// Resolves one level against its parent's resolved settings, with the
/// cache's rules: a level that turns `proxy_store` on has no cache (even an
/// inherited one), a level with a cache stores nothing; `off` stands alone
/// in `proxy_cache_use_stale`; `GET` and `HEAD` join the cached methods.
pub fn resolve(set: &LocSet, parent: &LocConf) -> LocConf {
    let mut c = set.resolve(parent);
    if matches!(set.proxy_store, Some(ProxyStore::On | ProxyStore::Path(_))) {
        c.proxy_cache = None;
    }
    if matches!(set.proxy_cache, Some(Some(_))) {
        c.proxy_store = ProxyStore::Off;
    }
    if c.proxy_cache_use_stale.contains(NextUpstream::OFF) {
        c.proxy_cache_use_stale = NextUpstream::OFF;
    }
    c.proxy_cache_methods = CACHE_METHODS
        .iter()
        .filter(|m| {
            ALWAYS_CACHED_METHODS.contains(m) || c.proxy_cache_methods.iter().any(|w| w == *m)
        })
        .map(|m| m.to_string())
        .collect();
    c
}

/// The zone a merged level's `proxy_cache` names when it has no variables
/// and no `proxy_cache_path` declares it (nginx's `cache_zone->data ==
/// NULL`); the caller reports it.
pub fn unknown_static_zone<'a>(c: &'a LocConf, zones: &HashSet<String>) -> Option<&'a str> {
    let t = c.proxy_cache.as_ref()?;
    (t.is_static() && !zones.contains(&t.source)).then_some(t.source.as_str())
}

/// The `keys_zone` names of every `proxy_cache_path`.
pub fn zone_names(h: &HttpConf) -> HashSet<String> {
    h.cache_paths.iter().map(|p| p.zone.clone()).collect()
}

/// Checks every `proxy_cache` name with variables whose values are known
/// at load time; reported where the directive is (nginx has no load-time
/// message for it: the words are those of a name without variables).
pub fn check_variable_zones(b: &mut Builder, h: &HttpConf) {
    let zones = zone_names(h);
    for (t, loc) in std::mem::take(&mut b.cache_zone_uses) {
        let Some(values) = possible_values(&t, Some(h)) else {
            continue; // chosen per request; an unknown name is a 500 then
        };
        let mut reported = HashSet::new();
        for v in values {
            // An empty value or `off` means "no cache" for the request.
            if v.is_empty() || v == "off" || zones.contains(&v) || !reported.insert(v.clone()) {
                continue;
            }
            b.error(unknown_zone(&v), &loc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load_text;
    use crate::config::model::Location;

    fn load(body: &str) -> Result<HttpConf, Vec<String>> {
        let text = format!("events {{}}\nhttp {{\n{body}\n}}\n");
        load_text(&text)
            .map(|l| l.config.http.unwrap())
            .map_err(|e| e.iter().map(|e| e.to_string()).collect())
    }

    fn location(h: &HttpConf, path: &[usize]) -> Location {
        let mut l = &h.servers[0].locations[path[0]];
        for &i in &path[1..] {
            l = &l.locations[i];
        }
        l.clone()
    }

    #[test]
    fn store_and_cache_exclude_each_other_per_level() {
        let h = load(
            "proxy_cache_path c keys_zone=z:1m;\nproxy_cache z;\n\
             server { location / { proxy_store on; location /in { } }\n\
             location /s { proxy_cache off; } }\n\
             server { proxy_store on; location / { proxy_cache z; } }",
        )
        .unwrap();
        let l = location(&h, &[0]);
        assert!(l.conf.proxy_cache.is_none());
        assert!(matches!(l.conf.proxy_store, ProxyStore::On));
        let inner = location(&h, &[0, 0]);
        assert!(inner.conf.proxy_cache.is_none());
        assert!(matches!(inner.conf.proxy_store, ProxyStore::On));
        assert_eq!(h.servers[0].conf.proxy_cache.as_ref().unwrap().source, "z");
        let s2 = &h.servers[1];
        assert!(s2.conf.proxy_cache.is_none());
        assert!(matches!(s2.locations[0].conf.proxy_store, ProxyStore::Off));
        assert!(s2.locations[0].conf.proxy_cache.is_some());
    }

    #[test]
    fn use_stale_off_stands_alone_and_methods_always_hold_get_and_head() {
        let h = load(
            "proxy_cache_use_stale error off;\nproxy_cache_methods POST;\n\
             server { location / { proxy_cache_use_stale updating http_500; } }",
        )
        .unwrap();
        let s = &h.servers[0].conf;
        assert_eq!(s.proxy_cache_use_stale, NextUpstream::OFF);
        assert_eq!(s.proxy_cache_methods, ["GET", "HEAD", "POST"]);
        let l = &h.servers[0].locations[0].conf;
        assert_eq!(
            l.proxy_cache_use_stale,
            NextUpstream::UPDATING.union(NextUpstream::HTTP_500)
        );
        assert_eq!(h.conf.proxy_cache_methods, ["GET", "HEAD", "POST"]);
        assert_eq!(LocConf::default().proxy_cache_methods, ["GET", "HEAD"]);
    }

    #[test]
    fn zones_with_variables_are_checked_when_their_values_are_known() {
        let split = "split_clients $uri $d { 50% 1; * 2; }\n";
        let ok = format!(
            "{split}proxy_cache_path a keys_zone=c1:1m;\nproxy_cache_path b keys_zone=c2:1m;\n\
             server {{ location / {{ proxy_cache c$d; }} }}"
        );
        assert!(load(&ok).is_ok());
        let e = load(&format!(
            "{split}proxy_cache_path a keys_zone=c1:1m;\nserver {{ location / {{ proxy_cache c$d; }} }}"
        ))
        .unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with("\"proxy_cache\" zone \"c2\" is unknown in ") && e[0].ends_with(":5"),
            "{e:?}"
        );
        // A request's own values cannot be known: left to run time.
        assert!(load("server { location / { proxy_cache c$host; } }").is_ok());
        // `off` and an empty value mean no cache.
        let off = format!(
            "{}server {{ location / {{ proxy_cache $d; }} }}",
            "split_clients $uri $d { 50% off; * \"\"; }\n"
        );
        assert!(load(&off).is_ok(), "{:?}", load(&off).err());
    }
}
