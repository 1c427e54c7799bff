//! Setters for the proxy cache's directives (`proxy_cache_path`,
//! `proxy_cache`, `proxy_cache_key`, `proxy_cache_valid`). They parse and
//! validate now; serving them comes with the caching-proxy release, and
//! until then starting with any of them fails (see
//! [`super::Config::not_implemented`]).

use std::time::Duration;

use super::build::{Builder, Scope, invalid, set_once};
use super::dirs::DirUse;
use super::model::CachePath;
use super::syntax::Directive;
use super::value;
use super::zones::ZoneUse;

/// nginx's `proxy_cache_path` default for `inactive=`.
pub const DEFAULT_INACTIVE: Duration = Duration::from_secs(600);

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
    b.dirs.add(&path, &levels, DirUse::Cache, &d.loc)?;
    if b.zones.add(&zone, zone_size, ZoneUse::ProxyCache)? {
        return Err(format!("duplicate zone \"{zone}\""));
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
