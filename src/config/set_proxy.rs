//! Setters for the caching-proxy directives of the brief's multi-disk
//! configuration. They parse and validate now; serving them comes with the
//! caching-proxy release, and until then starting with any of them fails
//! (see [`super::Config::not_implemented`]).

use std::time::Duration;

use super::build::{Builder, Scope, invalid, set_once};
use super::model::{CachePath, SplitClients, Upstream};
use super::syntax::Directive;
use super::value;

/// nginx's `proxy_cache_path` default for `inactive=`.
pub const DEFAULT_INACTIVE: Duration = Duration::from_secs(600);

/// `upstream name { server ...; }`
pub fn upstream(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let Scope::Http(h) = scope else {
        unreachable!("the table allows upstream in http only")
    };
    let name = d.arg(0).to_string();
    if h.upstreams.iter().any(|u| u.name == name) {
        return Err(format!("duplicate upstream \"{name}\""));
    }
    let mut u = Upstream {
        name,
        servers: Vec::new(),
        loc: d.loc.clone(),
    };
    b.walk(
        &mut Scope::Upstream(&mut u),
        d.block.as_deref().unwrap_or_default(),
    );
    if u.servers.is_empty() {
        b.error("no servers are inside upstream", &d.loc);
    }
    h.upstreams.push(u);
    Ok(())
}

/// `server address [weight=N] [max_fails=N] [fail_timeout=T] [backup] [down];`
pub fn upstream_server(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let Scope::Upstream(u) = scope else {
        unreachable!("the table allows this server in upstream only")
    };
    let addr = d.arg(0);
    let ok_addr = match addr.rsplit_once(':') {
        Some((h, p)) => !h.is_empty() && matches!(value::number(p), Some(1..=65535)),
        None => !addr.is_empty(),
    };
    if !ok_addr {
        return Err(format!("invalid address \"{addr}\" in upstream server"));
    }
    for w in &d.args[1..] {
        let p = w.value.as_str();
        let ok = match p.split_once('=') {
            Some(("weight", n)) => matches!(value::number(n), Some(1..)),
            Some(("max_fails", n)) | Some(("max_conns", n)) => value::number(n).is_some(),
            Some(("fail_timeout", t)) => value::time(t, false).is_some(),
            None => matches!(p, "backup" | "down"),
            _ => false,
        };
        if !ok {
            return Err(format!("invalid parameter \"{p}\""));
        }
    }
    u.servers.push(addr.to_string());
    Ok(())
}

/// `split_clients string $variable { percent value; ... * value; }`
pub fn split_clients(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let key = b.template(d.arg(0), &d.loc)?;
    let var = d
        .arg(1)
        .strip_prefix('$')
        .filter(|v| !v.is_empty())
        .ok_or_else(|| format!("invalid variable name \"{}\"", d.arg(1)))?
        .to_string();
    let mut parts = Vec::new();
    let mut sum: u32 = 0;
    for e in d.block.as_deref().unwrap_or_default() {
        if e.args.len() != 1 || e.block.is_some() {
            b.error(
                "invalid number of arguments in \"split_clients\" entry",
                &e.loc,
            );
            continue;
        }
        let share = if e.name == "*" {
            10_000u32.saturating_sub(sum)
        } else {
            match value::percent(&e.name) {
                Some(p) if p > 0 => p,
                _ => {
                    b.error(format!("invalid percent value \"{}\"", e.name), &e.loc);
                    continue;
                }
            }
        };
        sum += share;
        parts.push((share, e.arg(0).to_string()));
    }
    if sum > 10_000 {
        return Err("percent total is greater than 100%".into());
    }
    b.defined_vars.insert(var.clone());
    let Scope::Http(h) = scope else {
        unreachable!("the table allows split_clients in http only")
    };
    h.split_clients.push(SplitClients {
        key,
        var,
        parts,
        loc: d.loc.clone(),
    });
    Ok(())
}

/// `proxy_pass URL;`
pub fn proxy_pass(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let url = d.arg(0);
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with('$')) {
        return Err(format!("invalid URL prefix in \"{url}\""));
    }
    let t = b.template(url, &d.loc)?;
    let Scope::Location(l) = scope else {
        unreachable!("the table allows proxy_pass in location only")
    };
    set_once(&mut l.proxy_pass, t, &d.name)
}

/// `proxy_cache_path path [levels=1:2] keys_zone=name:size [use_temp_path=on|off] [inactive=time] [max_size=size];`
pub fn proxy_cache_path(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let path = b.full_path(d.arg(0));
    let mut levels = Vec::new();
    let mut zone = None;
    let mut max_size = None;
    let mut inactive = DEFAULT_INACTIVE;
    let mut use_temp_path = true;
    for w in &d.args[1..] {
        let p = w.value.as_str();
        let (key, val) = p.split_once('=').unwrap_or((p, ""));
        match key {
            "levels" => {
                levels = val
                    .split(':')
                    .map(|l| match l {
                        "1" => Ok(1u8),
                        "2" => Ok(2u8),
                        _ => Err(format!("invalid \"levels\" \"{val}\"")),
                    })
                    .collect::<Result<_, _>>()?;
                if levels.is_empty() || levels.len() > 3 {
                    return Err(format!("invalid \"levels\" \"{val}\""));
                }
            }
            "keys_zone" => {
                let (name, size) = val
                    .split_once(':')
                    .ok_or_else(|| format!("invalid keys zone size \"{p}\""))?;
                let size = value::size(size)
                    .filter(|&s| s >= 8192)
                    .ok_or_else(|| format!("invalid keys zone size \"{p}\""))?;
                if name.is_empty() {
                    return Err(format!("invalid keys zone name \"{p}\""));
                }
                zone = Some((name.to_string(), size));
            }
            "max_size" => {
                max_size = Some(
                    value::size(val).ok_or_else(|| format!("invalid max_size value \"{p}\""))?,
                )
            }
            "inactive" => {
                inactive = value::time(val, false)
                    .ok_or_else(|| format!("invalid inactive value \"{p}\""))?
            }
            "use_temp_path" => {
                use_temp_path = value::flag(val).ok_or_else(|| {
                    format!("invalid use_temp_path value \"{val}\", it must be \"on\" or \"off\"")
                })?;
            }
            "min_free" | "manager_files" | "manager_sleep" | "manager_threshold"
            | "loader_files" | "loader_sleep" | "loader_threshold" | "purger" | "purger_files"
            | "purger_sleep" | "purger_threshold" => {
                return Err(format!(
                    "the \"{key}\" parameter of \"proxy_cache_path\" is not implemented yet"
                ));
            }
            _ => return Err(format!("invalid parameter \"{p}\"")),
        }
    }
    let Some((zone, zone_size)) = zone else {
        return Err(format!("\"{}\" must have \"keys_zone\" parameter", d.name));
    };
    let Scope::Http(h) = scope else {
        unreachable!("the table allows proxy_cache_path in http only")
    };
    if h.cache_paths.iter().any(|c| c.zone == zone) {
        return Err(format!("duplicate zone \"{zone}\""));
    }
    if h.cache_paths.iter().any(|c| c.path == path) {
        return Err(format!("duplicate cache path \"{}\"", path.display()));
    }
    h.cache_paths.push(CachePath {
        path,
        levels,
        zone,
        zone_size,
        max_size,
        inactive,
        use_temp_path,
        loc: d.loc.clone(),
    });
    Ok(())
}

/// `proxy_cache zone | off;`
pub fn proxy_cache(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let v = match d.arg(0) {
        "off" => None,
        z => Some(b.template(z, &d.loc)?),
    };
    let set = scope.loc_set().expect("http, server or location");
    set_once(&mut set.proxy_cache, v, &d.name)
}

/// `proxy_cache_key string;`
pub fn proxy_cache_key(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let t = b.template(d.arg(0), &d.loc)?;
    let set = scope.loc_set().expect("http, server or location");
    set_once(&mut set.proxy_cache_key, Some(t), &d.name)
}

/// `proxy_cache_valid [code ...] time;`
pub fn proxy_cache_valid(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let n = d.args.len();
    let time = value::time(d.arg(n - 1), false).ok_or_else(|| invalid(d, d.arg(n - 1)))?;
    let mut codes = Vec::new();
    for w in &d.args[..n - 1] {
        match w.value.as_str() {
            "any" => codes.push(0),
            c => match value::number(c) {
                Some(c) if (100..=599).contains(&c) => codes.push(c as u16),
                _ => return Err(format!("invalid status \"{c}\"")),
            },
        }
    }
    let set = scope.loc_set().expect("http, server or location");
    set.proxy_cache_valid
        .get_or_insert_with(Vec::new)
        .push((codes, time));
    Ok(())
}
