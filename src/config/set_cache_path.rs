//! The setter of `proxy_cache_path`, nginx's `ngx_http_file_cache_set_slot`:
//! a directory, its keys zone and the pace of the loader and the manager,
//! each parameter checked in nginx's order and words. Parsed and validated
//! now; served with the cache engine.
//!
//! It only records the declaration: directories are made at start-up by
//! `process::paths`, zones are allocated by the cache engine.

use super::build::{Builder, Scope};
use super::cache_model::{
    CachePath, DEFAULT_CACHE_FILES, DEFAULT_CACHE_SLEEP, DEFAULT_CACHE_THRESHOLD, DEFAULT_INACTIVE,
    MIN_KEYS_ZONE_SIZE,
};
use super::dirs::DirUse;
use super::slot::{self, MAX_PATH_LEVELS};
use super::syntax::Directive;
use super::value;
use super::zones::ZoneUse;

/// nginx's bound on the characters of a cache path's levels (each level's
/// digits plus its `/`), summed over every `levels=` of the directive:
/// `10 + NGX_MAX_PATH_LEVEL`.
const MAX_LEVELS_LEN: usize = 10 + MAX_PATH_LEVELS;

/// `levels=` as nginx reads it: one slot per level, and the running length
/// that a repeated `levels=` keeps adding to (nginx overwrites the slots a
/// later `levels=` names and keeps the others).
#[derive(Default)]
struct Levels {
    /// Digits per level; 0 ends the list.
    slots: [u8; MAX_PATH_LEVELS],
    /// Characters the levels take in a file's path, summed over repeats.
    len: usize,
}

impl Levels {
    /// Reads the value of one `levels=` (`1:2`): each level is 1 or 2,
    /// separated by `:`, at most three.
    fn read(&mut self, spec: &str) -> Result<(), ()> {
        let b = spec.as_bytes();
        let mut i = 0;
        let mut n = 0;
        while n < MAX_PATH_LEVELS && i < b.len() {
            let digit @ b'1'..=b'2' = b[i] else {
                return Err(());
            };
            self.slots[n] = digit - b'0';
            self.len += usize::from(self.slots[n]) + 1;
            i += 1;
            if i == b.len() {
                break;
            }
            let colon = b[i] == b':';
            i += 1;
            if !(colon && n < MAX_PATH_LEVELS - 1 && i < b.len()) {
                return Err(());
            }
            n += 1;
        }
        if self.len < MAX_LEVELS_LEN {
            Ok(())
        } else {
            Err(())
        }
    }

    /// The levels in force.
    fn list(&self) -> Vec<u8> {
        self.slots.iter().copied().take_while(|&l| l != 0).collect()
    }
}

/// A `NAME=value` parameter's value (`ngx_strncmp(value, "NAME=", …)`).
fn param<'a>(word: &'a str, name: &str) -> Option<&'a str> {
    word.strip_prefix(name)?.strip_prefix('=')
}

/// `proxy_cache_path path [levels=levels] [use_temp_path=on|off]
/// keys_zone=name:size [inactive=time] [max_size=size] [min_free=size]
/// [manager_files=number] [manager_sleep=time] [manager_threshold=time]
/// [loader_files=number] [loader_sleep=time] [loader_threshold=time];`
///
/// nginx Plus's `purger=` and its companions are unknown to nginx 1.22
/// (`invalid parameter "purger=on"`), and so to nowait.
pub fn proxy_cache_path(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let mut p = d.arg(0);
    if p.len() > 1 {
        p = p.strip_suffix('/').unwrap_or(p);
    }
    let path = b.full_path(p);
    let mut levels = Levels::default();
    let mut zone: Option<(String, u64)> = None;
    let mut c = CachePath {
        path,
        levels: Vec::new(),
        zone: String::new(),
        zone_size: 0,
        max_size: None,
        inactive: DEFAULT_INACTIVE,
        use_temp_path: true,
        min_free: None,
        manager_files: DEFAULT_CACHE_FILES,
        manager_sleep: DEFAULT_CACHE_SLEEP,
        manager_threshold: DEFAULT_CACHE_THRESHOLD,
        loader_files: DEFAULT_CACHE_FILES,
        loader_sleep: DEFAULT_CACHE_SLEEP,
        loader_threshold: DEFAULT_CACHE_THRESHOLD,
        loc: d.loc.clone(),
    };
    for w in &d.args[1..] {
        let w = w.value.as_str();
        let bad = |what: &str| format!("invalid {what} value \"{w}\"");
        let ms = |v: &str, what: &str| slot::msec_value(v).ok_or_else(|| bad(what));
        let files = |v: &str, what: &str| {
            value::number(v)
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
                .ok_or_else(|| bad(what))
        };
        if let Some(v) = param(w, "levels") {
            levels
                .read(v)
                .map_err(|()| format!("invalid \"levels\" \"{w}\""))?;
        } else if let Some(v) = param(w, "use_temp_path") {
            c.use_temp_path = match v {
                "on" => true,
                "off" => false,
                _ => {
                    return Err(format!(
                        "invalid use_temp_path value \"{w}\", it must be \"on\" or \"off\""
                    ));
                }
            };
        } else if let Some(v) = param(w, "keys_zone") {
            let (name, size) = v
                .split_once(':')
                .ok_or_else(|| format!("invalid keys zone size \"{w}\""))?;
            let size =
                value::size(size).ok_or_else(|| format!("invalid keys zone size \"{w}\""))?;
            if size < MIN_KEYS_ZONE_SIZE {
                return Err(format!("keys zone \"{w}\" is too small"));
            }
            zone = Some((name.to_string(), size));
        } else if let Some(v) = param(w, "inactive") {
            c.inactive = value::time(v, false).ok_or_else(|| bad("inactive"))?;
        } else if let Some(v) = param(w, "max_size") {
            c.max_size = Some(value::size(v).ok_or_else(|| bad("max_size"))?);
        } else if let Some(v) = param(w, "min_free") {
            c.min_free = Some(value::size(v).ok_or_else(|| bad("min_free"))?).filter(|&m| m > 0);
        } else if let Some(v) = param(w, "loader_files") {
            c.loader_files = files(v, "loader_files")?;
        } else if let Some(v) = param(w, "loader_sleep") {
            c.loader_sleep = ms(v, "loader_sleep")?;
        } else if let Some(v) = param(w, "loader_threshold") {
            c.loader_threshold = ms(v, "loader_threshold")?;
        } else if let Some(v) = param(w, "manager_files") {
            c.manager_files = files(v, "manager_files")?;
        } else if let Some(v) = param(w, "manager_sleep") {
            c.manager_sleep = ms(v, "manager_sleep")?;
        } else if let Some(v) = param(w, "manager_threshold") {
            c.manager_threshold = ms(v, "manager_threshold")?;
        } else {
            return Err(format!("invalid parameter \"{w}\""));
        }
    }
    let Some((name, size)) = zone.filter(|(name, _)| !name.is_empty()) else {
        return Err(format!("\"{}\" must have \"keys_zone\" parameter", d.name));
    };
    c.levels = levels.list();
    let Scope::Http(h) = scope else {
        unreachable!("the table allows proxy_cache_path in http only")
    };
    b.dirs.add(&c.path, &c.levels, DirUse::Cache, &d.loc)?;
    b.zones.add(&name, size, ZoneUse::ProxyCache)?;
    // A zone `proxy_cache` named first exists without a cache (nginx's
    // `shm_zone->data` is still empty): only a second declaration is a
    // duplicate.
    if h.cache_paths.iter().any(|p| p.zone == name) {
        return Err(format!("duplicate zone \"{name}\""));
    }
    c.zone = name;
    c.zone_size = size;
    h.cache_paths.push(c);
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::config::load_text;

    fn levels(specs: &[&str]) -> Result<Vec<u8>, ()> {
        let mut l = Levels::default();
        for s in specs {
            l.read(s)?;
        }
        Ok(l.list())
    }

    #[test]
    fn levels_as_nginx_reads_them() {
        assert_eq!(levels(&["1:2"]), Ok(vec![1, 2]));
        assert_eq!(levels(&["2:2:2"]), Ok(vec![2, 2, 2]));
        assert_eq!(levels(&[""]), Ok(vec![]));
        for bad in ["3", "0", "1:", "1:2:", "12", "1:2:2:1", "1;2", ":1"] {
            assert_eq!(levels(&[bad]), Err(()), "{bad}");
        }
        // A second levels= overwrites the slots it names and adds its
        // length to the first one's.
        assert_eq!(levels(&["1:2:2", "2"]), Ok(vec![2, 2, 2]));
        assert_eq!(levels(&["2:2:2", "2:2:2"]), Err(()));
    }

    fn paths(body: &str) -> Vec<CachePath> {
        let text = format!("events {{}}\nhttp {{\n{body}\n}}\n");
        let l = load_text(&text).unwrap_or_else(|e| panic!("{e:?}"));
        l.config.http.unwrap().cache_paths
    }

    #[test]
    fn defaults_as_nginx() {
        let p = &paths("proxy_cache_path /c/ keys_zone=z:1m;")[0];
        assert_eq!(p.path, PathBuf::from("/c"));
        assert!(p.levels.is_empty());
        assert_eq!((p.zone.as_str(), p.zone_size), ("z", 1 << 20));
        assert_eq!(p.max_size, None);
        assert_eq!(p.min_free, None);
        assert_eq!(p.inactive, Duration::from_secs(600));
        assert!(p.use_temp_path);
        assert_eq!(
            (p.manager_files, p.manager_sleep, p.manager_threshold),
            (100, Duration::from_millis(50), Duration::from_millis(200))
        );
        assert_eq!(
            (p.loader_files, p.loader_sleep, p.loader_threshold),
            (100, Duration::from_millis(50), Duration::from_millis(200))
        );
    }

    #[test]
    fn every_parameter() {
        let p = &paths(
            "proxy_cache_path /c levels=1:2:2 use_temp_path=off keys_zone=z:8k inactive=1d \
             max_size=2g min_free=1m manager_files=7 manager_sleep=1s manager_threshold=2s \
             loader_files=99999999999 loader_sleep=5ms loader_threshold=1m;",
        )[0];
        assert_eq!(p.levels, [1, 2, 2]);
        assert!(!p.use_temp_path);
        assert_eq!(p.zone_size, 8192);
        assert_eq!(p.inactive, Duration::from_secs(86400));
        assert_eq!(p.max_size, Some(2 << 30));
        assert_eq!(p.min_free, Some(1 << 20));
        assert_eq!(
            (p.manager_files, p.manager_sleep, p.manager_threshold),
            (7, Duration::from_secs(1), Duration::from_secs(2))
        );
        assert_eq!(
            (p.loader_files, p.loader_sleep, p.loader_threshold),
            (u32::MAX, Duration::from_millis(5), Duration::from_secs(60))
        );
        // min_free=0 is nginx's "no minimum".
        assert_eq!(
            paths("proxy_cache_path /c keys_zone=z:1m min_free=0;")[0].min_free,
            None
        );
    }
}
