//! Setters for the proxy cache's per-location directives (`proxy_cache`,
//! `proxy_cache_key`, `proxy_cache_valid`, `proxy_cache_methods`, the
//! lock, stale and revalidation switches, `proxy_cache_bypass`,
//! `proxy_no_cache`) and for `proxy_store`, with nginx 1.22.1's words
//! (`ngx_http_proxy_module.c`, `ngx_http_file_cache_valid_set_slot`,
//! `ngx_conf_set_access_slot`). `proxy_cache_path` is in
//! [`super::set_cache_path`].
//!
//! They parse and validate now; serving them comes with the cache engine,
//! and until then starting with any of them fails (see
//! [`super::Config::not_implemented`]). The checks nginx makes when merging
//! levels (an unknown zone, `off` standing alone) are in
//! [`super::finish_cache`].

use super::build::{Builder, Scope};
use super::cache_model::{CACHE_METHODS, DEFAULT_VALID_STATUSES, ProxyStore, VALID_ANY};
use super::set_proxy::{ls, next_upstream_bits, not_set, slot_setters};
use super::slot;
use super::syntax::Directive;
use super::value;
use super::zones::ZoneUse;

/// The lowest and highest status `proxy_cache_valid` accepts.
const VALID_STATUS_RANGE: std::ops::RangeInclusive<u64> = 100..=599;

/// `proxy_cache zone | off;` — a name without variables declares (or
/// joins) the zone as nginx's `ngx_shared_memory_add` does, so that a zone
/// of another use is refused here; a name with variables is checked once
/// the configuration is known ([`super::finish_cache::check_variable_zones`]).
pub fn proxy_cache(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    not_set(&ls(scope).proxy_cache, d)?;
    if d.arg(0) == "off" {
        ls(scope).proxy_cache = Some(None);
        return Ok(());
    }
    if matches!(
        ls(scope).proxy_store,
        Some(ProxyStore::On | ProxyStore::Path(_))
    ) {
        return Err(format!(
            "\"{}\" directive is incompatible with \"proxy_store\"",
            d.name
        ));
    }
    let t = b.template(d.arg(0), &d.loc)?;
    if t.is_static() {
        b.zones.add(&t.source, 0, ZoneUse::ProxyCache)?;
    } else {
        b.cache_zone_uses.push((t.clone(), d.loc.clone()));
    }
    ls(scope).proxy_cache = Some(Some(t));
    Ok(())
}

/// `proxy_cache_key string;`
pub fn proxy_cache_key(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    not_set(&ls(scope).proxy_cache_key, d)?;
    let t = b.template(d.arg(0), &d.loc)?;
    let set = ls(scope);
    set.proxy_cache_key = Some(t);
    set.proxy_cache_key_is_default = Some(false);
    Ok(())
}

/// `proxy_cache_valid [code ...] time;` — the entries of one level add up
/// (nginx never calls this directive a duplicate).
pub fn proxy_cache_valid(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let n = d.args.len();
    let last = d.arg(n - 1);
    let time = value::time(last, false).ok_or_else(|| format!("invalid time value \"{last}\""))?;
    let codes = if n == 1 {
        DEFAULT_VALID_STATUSES.to_vec()
    } else {
        d.args[..n - 1]
            .iter()
            .map(|w| match w.value.as_str() {
                "any" => Ok(VALID_ANY),
                c => value::number(c)
                    .filter(|c| VALID_STATUS_RANGE.contains(c))
                    .and_then(|c| u16::try_from(c).ok())
                    .ok_or_else(|| format!("invalid status \"{c}\"")),
            })
            .collect::<Result<Vec<_>, _>>()?
    };
    ls(scope)
        .proxy_cache_valid
        .get_or_insert_with(Vec::new)
        .push((codes, time));
    Ok(())
}

/// `proxy_cache_methods GET | HEAD | POST ...;` — the methods one level
/// wrote, in nginx's order; `GET` and `HEAD` are added when merging, so
/// that writing them twice warns as in nginx, and writing them never does
/// otherwise.
pub fn proxy_cache_methods(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let written = ls(scope).proxy_cache_methods.clone().unwrap_or_default();
    let mut seen: Vec<usize> = CACHE_METHODS
        .iter()
        .enumerate()
        .filter(|(_, m)| written.iter().any(|w| w == *m))
        .map(|(i, _)| i)
        .collect();
    slot::bitmask(b, d, &CACHE_METHODS, &mut seen)?;
    seen.sort_unstable();
    ls(scope).proxy_cache_methods = Some(seen.iter().map(|&i| CACHE_METHODS[i].into()).collect());
    Ok(())
}

/// `proxy_cache_use_stale error | timeout | … | updating | off ...;` —
/// several directives of one level add up (`off` wins when merging).
pub fn proxy_cache_use_stale(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = next_upstream_bits(b, d, ls(scope).proxy_cache_use_stale)?;
    ls(scope).proxy_cache_use_stale = Some(set);
    Ok(())
}

/// `proxy_cache_bypass string ...;` — a level's strings add up.
pub fn proxy_cache_bypass(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    for w in &d.args {
        let t = b.template(&w.value, &d.loc)?;
        ls(scope)
            .proxy_cache_bypass
            .get_or_insert_with(Vec::new)
            .push(t);
    }
    Ok(())
}

/// `proxy_no_cache string ...;` — a level's strings add up.
pub fn proxy_no_cache(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    for w in &d.args {
        let t = b.template(&w.value, &d.loc)?;
        ls(scope)
            .proxy_no_cache
            .get_or_insert_with(Vec::new)
            .push(t);
    }
    Ok(())
}

/// `proxy_cache_max_range_offset number;` (nginx's offset slot).
pub fn proxy_cache_max_range_offset(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    not_set(&ls(scope).proxy_cache_max_range_offset, d)?;
    let v = slot::size(d, 0)?;
    ls(scope).proxy_cache_max_range_offset = Some(Some(v));
    Ok(())
}

/// `proxy_store on | off | string;`
pub fn proxy_store(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    not_set(&ls(scope).proxy_store, d)?;
    let v = match d.arg(0) {
        "off" => ProxyStore::Off,
        _ if matches!(ls(scope).proxy_cache, Some(Some(_))) => {
            return Err(format!(
                "\"{}\" directive is incompatible with \"proxy_cache\"",
                d.name
            ));
        }
        "on" => ProxyStore::On,
        s => ProxyStore::Path(b.template(s, &d.loc)?),
    };
    ls(scope).proxy_store = Some(v);
    Ok(())
}

/// `proxy_store_access users:permissions ...;` (`ngx_conf_set_access_slot`):
/// `user:`, `group:` or `all:` with `rw` or `r`; the user keeps `rw` unless
/// a `user:` word says otherwise.
pub fn proxy_store_access(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    not_set(&ls(scope).proxy_store_access, d)?;
    ls(scope).proxy_store_access = Some(access_mode(d)?);
    Ok(())
}

/// The mode bits of an access slot's words.
fn access_mode(d: &Directive) -> Result<u32, String> {
    let mut mode = 0;
    let mut user = 0o600;
    for w in &d.args {
        let w = w.value.as_str();
        let invalid = || format!("invalid value \"{w}\"");
        let (shift, right) = if let Some(r) = w.strip_prefix("user:") {
            user = 0;
            (6, r)
        } else if let Some(r) = w.strip_prefix("group:") {
            (3, r)
        } else if let Some(r) = w.strip_prefix("all:") {
            (0, r)
        } else {
            return Err(invalid());
        };
        let bits = match right {
            "rw" => 6,
            "r" => 4,
            _ => return Err(invalid()),
        };
        mode |= bits << shift;
    }
    Ok(mode | user)
}

slot_setters! {
    flag proxy_cache_convert_head => proxy_cache_convert_head;
    flag proxy_cache_background_update => proxy_cache_background_update;
    flag proxy_cache_revalidate => proxy_cache_revalidate;
    flag proxy_cache_lock => proxy_cache_lock;
    msec proxy_cache_lock_timeout => proxy_cache_lock_timeout;
    msec proxy_cache_lock_age => proxy_cache_lock_age;
    num proxy_cache_min_uses => proxy_cache_min_uses;
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::config::inherit::LocConf;
    use crate::config::load_text;
    use crate::config::model::{HttpConf, NextUpstream, ProxyStore};

    fn http(body: &str) -> HttpConf {
        let text = format!("events {{}}\nhttp {{\n{body}\n}}\n");
        let l = load_text(&text).unwrap_or_else(|e| panic!("{e:?}"));
        l.config.http.unwrap()
    }

    fn location(body: &str) -> LocConf {
        let h = http(&format!("server {{ location / {{ {body} }} }}"));
        h.servers[0].locations[0].conf.clone()
    }

    #[test]
    fn nginx_defaults() {
        let c = location("");
        assert!(c.proxy_cache.is_none());
        assert_eq!(c.proxy_cache_key.source, "$scheme$proxy_host$request_uri");
        assert!(c.proxy_cache_key_is_default);
        assert!(c.proxy_cache_valid.is_empty());
        assert_eq!(c.proxy_cache_methods, ["GET", "HEAD"]);
        assert!(c.proxy_cache_convert_head);
        assert_eq!(c.proxy_cache_min_uses, 1);
        assert!(c.proxy_cache_bypass.is_empty() && c.proxy_no_cache.is_empty());
        assert_eq!(c.proxy_cache_use_stale, NextUpstream::OFF);
        assert!(!c.proxy_cache_background_update);
        assert!(!c.proxy_cache_revalidate);
        assert!(!c.proxy_cache_lock);
        assert_eq!(c.proxy_cache_lock_timeout, Duration::from_secs(5));
        assert_eq!(c.proxy_cache_lock_age, Duration::from_secs(5));
        assert_eq!(c.proxy_cache_max_range_offset, None);
        assert!(matches!(c.proxy_store, ProxyStore::Off));
        assert_eq!(c.proxy_store_access, 0o600);
    }

    #[test]
    fn values_of_every_directive() {
        let c = location(
            "proxy_cache_key $host$uri; proxy_cache_methods POST;\n\
             proxy_cache_convert_head off; proxy_cache_min_uses 3;\n\
             proxy_cache_bypass $arg_a $arg_b; proxy_cache_bypass $arg_c;\n\
             proxy_no_cache $arg_d; proxy_cache_use_stale error;\n\
             proxy_cache_use_stale updating; proxy_cache_background_update on;\n\
             proxy_cache_revalidate on; proxy_cache_lock on; proxy_cache_lock_timeout 1500ms;\n\
             proxy_cache_lock_age 1m; proxy_cache_max_range_offset 1k;\n\
             proxy_store /data$uri; proxy_store_access group:rw all:r;",
        );
        assert_eq!(c.proxy_cache_key.source, "$host$uri");
        assert!(!c.proxy_cache_key_is_default);
        assert_eq!(c.proxy_cache_methods, ["GET", "HEAD", "POST"]);
        assert!(!c.proxy_cache_convert_head);
        assert_eq!(c.proxy_cache_min_uses, 3);
        let sources = |v: &[crate::config::template::Template]| -> Vec<String> {
            v.iter().map(|t| t.source.clone()).collect()
        };
        assert_eq!(
            sources(&c.proxy_cache_bypass),
            ["$arg_a", "$arg_b", "$arg_c"]
        );
        assert_eq!(sources(&c.proxy_no_cache), ["$arg_d"]);
        assert_eq!(
            c.proxy_cache_use_stale,
            NextUpstream::ERROR.union(NextUpstream::UPDATING)
        );
        assert!(c.proxy_cache_background_update && c.proxy_cache_revalidate);
        assert!(c.proxy_cache_lock);
        assert_eq!(c.proxy_cache_lock_timeout, Duration::from_millis(1500));
        assert_eq!(c.proxy_cache_lock_age, Duration::from_secs(60));
        assert_eq!(c.proxy_cache_max_range_offset, Some(1024));
        assert!(matches!(&c.proxy_store, ProxyStore::Path(t) if t.source == "/data$uri"));
        assert_eq!(c.proxy_store_access, 0o664);
        assert_eq!(
            location("proxy_store_access user:r;").proxy_store_access,
            0o400
        );
        assert_eq!(
            location("proxy_store_access all:rw;").proxy_store_access,
            0o606
        );
    }

    #[test]
    fn valid_times_add_up_per_level_and_replace_the_parents() {
        let h = http(
            "proxy_cache_valid 1h;\n\
             server { location / { proxy_cache_valid 404 any 1m; proxy_cache_valid 200 5s; }\n\
             location /in { } }",
        );
        let s = &h.servers[0];
        assert_eq!(
            s.conf.proxy_cache_valid,
            [(vec![200, 301, 302], Duration::from_secs(3600))]
        );
        assert_eq!(
            s.locations[0].conf.proxy_cache_valid,
            [
                (vec![404, 0], Duration::from_secs(60)),
                (vec![200], Duration::from_secs(5))
            ]
        );
        assert_eq!(
            s.locations[1].conf.proxy_cache_valid,
            s.conf.proxy_cache_valid
        );
    }

    #[test]
    fn the_cache_key_and_lists_are_inherited_until_a_level_writes_its_own() {
        let h = http(
            "proxy_cache_key $uri; proxy_no_cache $arg_x;\n\
             server { location / { } location /b { proxy_no_cache $arg_y; } }",
        );
        let l = &h.servers[0].locations;
        assert_eq!(l[0].conf.proxy_cache_key.source, "$uri");
        assert!(!l[0].conf.proxy_cache_key_is_default);
        assert_eq!(l[0].conf.proxy_no_cache[0].source, "$arg_x");
        assert_eq!(l[1].conf.proxy_no_cache.len(), 1);
        assert_eq!(l[1].conf.proxy_no_cache[0].source, "$arg_y");
    }
}
