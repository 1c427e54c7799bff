//! Setters for the map module (`ngx_http_map_module.c`): `map` blocks and
//! the sizes of their hashes, with nginx's checks and messages. The block's
//! entries are read as nginx's `ngx_http_map` reads them: `default`,
//! `hostnames`, `volatile`, `~regex` and `~*regex` keys, a leading `\`
//! escaping a key, and conflicting keys refused. (`include` inside the
//! block is expanded by the syntax reader, as everywhere.)

use std::collections::HashSet;
use std::sync::Arc;

use super::build::{Builder, Scope, set_once};
use super::error::ConfError;
use super::map::{self, CACHE_LINE, DEFAULT_HASH_MAX_SIZE, HostKey, Map};
use super::syntax::Directive;
use super::vars::{Builtin, Var};

/// Keys already taken in one map, for nginx's `conflicting parameter`.
#[derive(Default)]
struct Taken {
    /// Exact names, and the names `.example.com` keys also stand for.
    exact: HashSet<Vec<u8>>,
    /// Leading wildcards by the name after `*.` or `.`.
    head: HashSet<Vec<u8>>,
    /// Trailing wildcards by their prefix.
    tail: HashSet<Vec<u8>>,
    /// The keys of nginx's exact hash (not the names `.example.com` keys
    /// stand for, which nginx keeps with the wildcards).
    hashed: Vec<Vec<u8>>,
}

/// `map string $variable { ... }`
pub fn map(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let Scope::Http(h) = scope else {
        unreachable!("the table allows map in http only")
    };
    let max_size = *h.map_hash_max_size.get_or_insert(DEFAULT_HASH_MAX_SIZE);
    let bucket_size = *h.map_hash_bucket_size.get_or_insert(CACHE_LINE);
    let source = b.template(d.arg(0), &d.loc)?;
    let written = d.arg(1);
    let Some(name) = written.strip_prefix('$') else {
        return Err(format!("invalid variable name \"{written}\""));
    };
    if name.is_empty() {
        return Err("invalid variable name \"$\"".into());
    }
    let name = name.to_ascii_lowercase();
    if let Var::Builtin(builtin) = Var::from_name(&name) {
        if !matches!(
            builtin,
            Builtin::Args | Builtin::LimitRate | Builtin::ProxyHost | Builtin::ProxyPort
        ) {
            return Err(format!("the duplicate \"{name}\" variable"));
        }
    }
    b.define(&name);
    let mut m = Map::new(source, Arc::from(name.as_str()), d.loc.clone());
    let mut taken = Taken::default();
    for e in d.block.as_deref().unwrap_or_default() {
        if let Err(msg) = entry(b, &mut m, &mut taken, e) {
            b.error(msg, &e.loc);
        }
    }
    m.head.sort_by_key(|(s, _)| std::cmp::Reverse(s.len()));
    m.tail.sort_by_key(|(s, _)| std::cmp::Reverse(s.len()));
    let keys: Vec<&[u8]> = taken.hashed.iter().map(Vec::as_slice).collect();
    match map::check_hash(&keys, max_size, bucket_size, "map_hash") {
        Ok(None) => {}
        Ok(Some(warning)) => b.diags.push(ConfError::warn(warning, None)),
        Err(msg) => b.diags.push(ConfError::emerg(msg, None)),
    }
    h.maps.push(m);
    Ok(())
}

/// One entry of a `map` block.
fn entry(b: &mut Builder, m: &mut Map, taken: &mut Taken, e: &Directive) -> Result<(), String> {
    if e.block.is_some() {
        return Err("unexpected \"{\"".into());
    }
    if e.args.is_empty() {
        match e.name.as_str() {
            "hostnames" => {
                m.hostnames = true;
                return Ok(());
            }
            "volatile" => {
                m.volatile = true;
                return Ok(());
            }
            _ => {}
        }
    }
    if e.args.len() != 1 {
        return Err("invalid number of the map parameters".into());
    }
    let value = b.template(e.arg(0), &e.loc)?;
    let index = m.values.len();
    m.values.push(value);
    let key = e.name.as_str();
    if key == "default" {
        if m.default.is_some() {
            return Err("duplicate default map parameter".into());
        }
        m.default = Some(index);
        return Ok(());
    }
    if let Some(re) = key.strip_prefix('~') {
        let (pattern, caseless) = match re.strip_prefix('*') {
            Some(p) => (p, true),
            None => (re, false),
        };
        let regex = super::regex::compile(pattern, caseless)?;
        b.define_captures(&regex);
        m.regexes.push((regex, index));
        return Ok(());
    }
    let key = key.strip_prefix('\\').unwrap_or(key).as_bytes();
    let conflict = || {
        format!(
            "conflicting parameter \"{}\"",
            String::from_utf8_lossy(&key.to_ascii_lowercase())
        )
    };
    if !m.hostnames {
        let lower = key.to_ascii_lowercase();
        if !taken.exact.insert(lower.clone()) {
            return Err(conflict());
        }
        taken.hashed.push(lower.clone());
        m.exact.insert(lower, index);
        return Ok(());
    }
    let Some(host) = map::host_key(key) else {
        return Err(format!(
            "invalid hostname or wildcard \"{}\"",
            String::from_utf8_lossy(key)
        ));
    };
    match host {
        HostKey::Exact(name) => {
            if !taken.exact.insert(name.clone()) {
                return Err(conflict());
            }
            taken.hashed.push(name.clone());
            m.exact.insert(name, index);
        }
        HostKey::Both(name) => {
            if !taken.exact.insert(name.clone()) || !taken.head.insert(name.clone()) {
                return Err(conflict());
            }
            // `.example.com`: the name itself, then anything below it.
            let mut suffix = b".".to_vec();
            suffix.extend_from_slice(&name);
            m.head.push((suffix, index));
            m.exact.insert(name, index);
        }
        HostKey::Head(suffix) => {
            if !taken.head.insert(suffix[1..].to_vec()) {
                return Err(conflict());
            }
            m.head.push((suffix, index));
        }
        HostKey::Tail(prefix) => {
            if !taken.tail.insert(prefix.clone()) {
                return Err(conflict());
            }
            m.tail.push((prefix, index));
        }
    }
    Ok(())
}

/// `map_hash_max_size size;`
pub fn map_hash_max_size(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let Scope::Http(h) = scope else {
        unreachable!("the table allows map_hash_max_size in http only")
    };
    let v = super::slot::num(d, 0)?;
    set_once(&mut h.map_hash_max_size, v, &d.name)
}

/// `map_hash_bucket_size size;` (rounded up to the cache line, as nginx).
pub fn map_hash_bucket_size(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let Scope::Http(h) = scope else {
        unreachable!("the table allows map_hash_bucket_size in http only")
    };
    let v = super::slot::num(d, 0)?;
    set_once(
        &mut h.map_hash_bucket_size,
        v.div_ceil(CACHE_LINE) * CACHE_LINE,
        &d.name,
    )
}
