//! Setters for the everyday directives of nginx's http core module
//! (`ngx_http_core_commands`) that are not about files or bodies:
//! redirects, keep-alive, lingering close, error logs, `try_files`,
//! `internal`, `limit_rate`, symbolic links, the open file cache, and the
//! sizes that only shape nginx's own pools and hashes (accepted, checked,
//! and documented as such). Each checks its arguments with nginx's words.

use std::time::Duration;

use super::build::{Builder, Scope, set_flag, set_once};
use super::core_model::{
    DEFAULT_CACHE_INACTIVE, DisableSymlinks, KeepaliveDisable, LingeringClose, OpenFileCache,
    ServerTokens, SizeValue, SymlinkPolicy, TryFallback, TryFile, TryFiles,
};
use super::inherit::{IfModifiedSince, LocSet, SrvSet};
use super::model::{ErrorLogConf, LogLevel, LogTarget};
use super::slot;
use super::syntax::Directive;
use super::value;

fn ls<'a>(scope: &'a mut Scope<'_>) -> &'a mut LocSet {
    scope
        .loc_set()
        .expect("the table allows this directive in http, server and location only")
}

fn ss<'a>(scope: &'a mut Scope<'_>) -> &'a mut SrvSet {
    scope
        .srv_set()
        .expect("the table allows this directive in http and server only")
}

macro_rules! flag {
    ($fn_name:ident, $field:ident) => {
        #[doc = concat!("`", stringify!($fn_name), " on | off;`")]
        pub fn $fn_name(
            _: &mut Builder,
            scope: &mut Scope<'_>,
            d: &Directive,
        ) -> Result<(), String> {
            set_flag(&mut ls(scope).$field, d)
        }
    };
}

macro_rules! msec {
    ($fn_name:ident, $field:ident) => {
        #[doc = concat!("`", stringify!($fn_name), " time;` (milliseconds slot)")]
        pub fn $fn_name(
            _: &mut Builder,
            scope: &mut Scope<'_>,
            d: &Directive,
        ) -> Result<(), String> {
            let v = slot::msec(d, 0)?;
            set_once(&mut ls(scope).$field, v, &d.name)
        }
    };
}

macro_rules! size {
    ($fn_name:ident, $set:ident, $field:ident) => {
        #[doc = concat!("`", stringify!($fn_name), " size;` (size slot)")]
        pub fn $fn_name(
            _: &mut Builder,
            scope: &mut Scope<'_>,
            d: &Directive,
        ) -> Result<(), String> {
            let v = slot::size(d, 0)?;
            set_once(&mut $set(scope).$field, v, &d.name)
        }
    };
}

macro_rules! num {
    ($fn_name:ident, $field:ident) => {
        #[doc = concat!("`", stringify!($fn_name), " number;` (number slot)")]
        pub fn $fn_name(
            _: &mut Builder,
            scope: &mut Scope<'_>,
            d: &Directive,
        ) -> Result<(), String> {
            let v = slot::num(d, 0)?;
            set_once(&mut ls(scope).$field, v, &d.name)
        }
    };
}

flag!(etag, etag);
flag!(chunked_transfer_encoding, chunked_transfer_encoding);
flag!(log_not_found, log_not_found);
flag!(log_subrequest, log_subrequest);
flag!(absolute_redirect, absolute_redirect);
flag!(server_name_in_redirect, server_name_in_redirect);
flag!(port_in_redirect, port_in_redirect);
flag!(msie_padding, msie_padding);
flag!(msie_refresh, msie_refresh);
flag!(reset_timedout_connection, reset_timedout_connection);
flag!(open_file_cache_errors, open_file_cache_errors);
flag!(open_file_cache_events, open_file_cache_events);
flag!(recursive_error_pages, recursive_error_pages);
msec!(keepalive_time, keepalive_time);
msec!(lingering_time, lingering_time);
msec!(lingering_timeout, lingering_timeout);
size!(read_ahead, ls, read_ahead);
size!(connection_pool_size, ss, connection_pool_size);
size!(request_pool_size, ss, request_pool_size);
num!(types_hash_max_size, types_hash_max_size);
num!(types_hash_bucket_size, types_hash_bucket_size);

/// `send_lowat size;`: Linux has no `SO_SNDLOWAT` to set; nginx warns
/// and ignores it there, and so does nowait.
pub fn send_lowat(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let v = slot::size(d, 0)?;
    b.warn(format!("\"{}\" is not supported, ignored", d.name), &d.loc);
    set_once(&mut ls(scope).send_lowat, v, &d.name)
}

/// `ignore_invalid_headers on | off;`
pub fn ignore_invalid_headers(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_flag(&mut ss(scope).ignore_invalid_headers, d)
}

/// `underscores_in_headers on | off;`
pub fn underscores_in_headers(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_flag(&mut ss(scope).underscores_in_headers, d)
}

/// `variables_hash_max_size size;` and `variables_hash_bucket_size size;`:
/// numbers that size nginx's variables hash; checked and kept for `-T`
/// readers, nothing else (nowait finds variables when loading).
pub fn variables_hash(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let Scope::Http(h) = scope else {
        unreachable!("the table allows variables_hash_* in http only")
    };
    let v = slot::num(d, 0)?;
    let slot = if d.name == "variables_hash_max_size" {
        &mut h.variables_hash_max_size
    } else {
        &mut h.variables_hash_bucket_size
    };
    let _ = b;
    set_once(slot, v, &d.name)
}

/// `server_tokens on | off | build;` (the enum slot of nginx 1.22; its
/// commercial `string` form is not part of it).
pub fn server_tokens(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let v = slot::enumerated(
        d,
        &[
            ("off", ServerTokens::Off),
            ("on", ServerTokens::On),
            ("build", ServerTokens::Build),
        ],
    )?;
    set_once(&mut ls(scope).server_tokens, v, &d.name)
}

/// `if_modified_since off | exact | before;`
pub fn if_modified_since(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let v = slot::enumerated(
        d,
        &[
            ("off", IfModifiedSince::Off),
            ("exact", IfModifiedSince::Exact),
            ("before", IfModifiedSince::Before),
        ],
    )?;
    set_once(&mut ls(scope).if_modified_since, v, &d.name)
}

/// `lingering_close off | on | always;`
pub fn lingering_close(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let v = slot::enumerated(
        d,
        &[
            ("off", LingeringClose::Off),
            ("on", LingeringClose::On),
            ("always", LingeringClose::Always),
        ],
    )?;
    set_once(&mut ls(scope).lingering_close, v, &d.name)
}

/// `keepalive_disable none | browser ...;` (a bitmask slot: two
/// directives at one level add up, as nginx's do).
pub fn keepalive_disable(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    const NAMES: [&str; 3] = ["none", "msie6", "safari"];
    let set = ls(scope);
    let mut seen = Vec::new();
    let current = set.keepalive_disable.get_or_insert(KeepaliveDisable {
        msie6: false,
        safari: false,
    });
    if current.msie6 {
        seen.push(1);
    }
    if current.safari {
        seen.push(2);
    }
    slot::bitmask(b, d, &NAMES, &mut seen)?;
    current.msie6 = seen.contains(&1);
    current.safari = seen.contains(&2);
    Ok(())
}

/// `keepalive_timeout timeout [header_timeout];` (nginx's
/// `ngx_http_core_keepalive`: the second is whole seconds).
pub fn keepalive_timeout(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = ls(scope);
    if set.keepalive_timeout.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    // `ngx_http_core_keepalive_timeout`: the slots' words for either value.
    let timeout = slot::msec(d, 0)?;
    if d.args.len() == 2 {
        let header = value::time(d.arg(1), false).ok_or_else(|| slot::invalid_value(d))?;
        set.keepalive_header = Some(header.as_secs());
    }
    set.keepalive_timeout = Some(timeout);
    Ok(())
}

/// `limit_rate rate;` and `limit_rate_after size;`: a size, or variables
/// read as one per request.
pub fn limit_rate(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let v = size_value(b, d)?;
    let set = ls(scope);
    let slot = if d.name == "limit_rate" {
        &mut set.limit_rate
    } else {
        &mut set.limit_rate_after
    };
    set_once(slot, v, &d.name)
}

/// A size argument that may hold variables
/// (`ngx_http_set_complex_value_size_slot`).
fn size_value(b: &mut Builder, d: &Directive) -> Result<SizeValue, String> {
    let t = b.template(d.arg(0), &d.loc)?;
    if !t.is_static() {
        return Ok(SizeValue::Var(t));
    }
    size_plain(d.arg(0))
        .map(SizeValue::Fixed)
        .ok_or_else(|| slot::invalid_value(d))
}

/// A size as `ngx_parse_size`: digits with `k` or `m` in either case.
pub fn size_plain(s: &str) -> Option<u64> {
    if s.ends_with(['g', 'G']) {
        return None;
    }
    value::size(s)
}

/// `internal;`: the location serves internal redirects only.
pub fn internal(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let Scope::Location(l) = scope else {
        unreachable!("the table allows internal in location only")
    };
    if l.internal {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    l.internal = true;
    Ok(())
}

/// `error_log file | stderr [level];` in http, server or location: the
/// log of requests served there. Several at one level all apply.
pub fn error_log(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let conf = error_log_conf(b, d)?;
    ls(scope)
        .error_log
        .get_or_insert_with(Default::default)
        .confs
        .push(conf);
    Ok(())
}

/// The destination and level of an `error_log` directive.
pub fn error_log_conf(b: &Builder, d: &Directive) -> Result<ErrorLogConf, String> {
    let target = match d.arg(0) {
        "stderr" => LogTarget::Stderr,
        p if p.starts_with("syslog:") || p.starts_with("memory:") => {
            return Err(format!(
                "\"{}\" error logs are not implemented yet",
                p.split(':').next().unwrap_or(p)
            ));
        }
        p => LogTarget::File(b.full_path(p)),
    };
    let level = match d.args.get(1) {
        None => LogLevel::Error,
        Some(w) => LogLevel::from_name(&w.value)
            .ok_or_else(|| format!("invalid log level \"{}\"", w.value))?,
    };
    if let Some(extra) = d.args.get(2) {
        return Err(format!("invalid log level \"{}\"", extra.value));
    }
    Ok(ErrorLogConf { target, level })
}

/// `disable_symlinks off | on | if_not_owner [from=part];`
/// (`ngx_http_disable_symlinks`).
pub fn disable_symlinks(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    if ls(scope).disable_symlinks.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let mut policy = None;
    let mut from = None;
    let mut from_seen = false;
    for w in &d.args {
        match w.value.as_str() {
            "off" => policy = Some(SymlinkPolicy::Off),
            "on" => policy = Some(SymlinkPolicy::On),
            "if_not_owner" => policy = Some(SymlinkPolicy::IfNotOwner),
            v if v.starts_with("from=") => {
                from_seen = true;
                from = Some(b.template(&v["from=".len()..], &d.loc)?);
            }
            v => return Err(format!("invalid parameter \"{v}\"")),
        }
    }
    let Some(policy) = policy else {
        return Err(format!(
            "\"{}\" must have \"off\", \"on\" or \"if_not_owner\" parameter",
            d.name
        ));
    };
    if d.args.len() == 2 {
        if !from_seen {
            return Err(format!(
                "duplicate parameters \"{} {}\"",
                d.arg(0),
                d.arg(1)
            ));
        }
        if policy == SymlinkPolicy::Off {
            return Err("\"from=\" cannot be used with \"off\" parameter".into());
        }
    } else {
        from = None;
    }
    ls(scope).disable_symlinks = Some(DisableSymlinks { policy, from });
    Ok(())
}

/// `open_file_cache off | max=N [inactive=time];`
pub fn open_file_cache(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    if ls(scope).open_file_cache.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let mut max = 0usize;
    let mut inactive = DEFAULT_CACHE_INACTIVE;
    let mut off = false;
    for w in &d.args {
        let v = w.value.as_str();
        let bad = || format!("invalid \"open_file_cache\" parameter \"{v}\"");
        if let Some(n) = v.strip_prefix("max=") {
            // `ngx_http_core_open_file_cache`: a positive number.
            max = value::number(n).filter(|&n| n > 0).ok_or_else(bad)? as usize;
        } else if let Some(t) = v.strip_prefix("inactive=") {
            inactive = value::time(t, false).ok_or_else(bad)?;
        } else if v == "off" {
            off = true;
        } else {
            return Err(bad());
        }
    }
    if off {
        ls(scope).open_file_cache = Some(None);
        return Ok(());
    }
    if max == 0 {
        return Err("\"open_file_cache\" must have the \"max\" parameter".into());
    }
    let cache = std::sync::Arc::new(crate::io::open_cache::OpenCache::new(max, inactive));
    ls(scope).open_file_cache = Some(Some(OpenFileCache {
        max,
        inactive,
        cache,
    }));
    Ok(())
}

/// `open_file_cache_valid time;` (a seconds slot).
pub fn open_file_cache_valid(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let v = value::time(d.arg(0), false).ok_or_else(|| slot::invalid_value(d))?;
    set_once(&mut ls(scope).open_file_cache_valid, v, &d.name)
}

/// `open_file_cache_min_uses number;`
pub fn open_file_cache_min_uses(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let v = slot::num_u32(d, 0)?;
    set_once(&mut ls(scope).open_file_cache_min_uses, v, &d.name)
}

/// `try_files file ... uri | =code;` in a server or a location (not
/// inherited: nginx's try_files module has no merge).
pub fn try_files(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let n = d.args.len();
    let mut files = Vec::with_capacity(n - 1);
    for (i, w) in d.args[..n - 1].iter().enumerate() {
        let mut name = w.value.as_str();
        let dir = name.ends_with('/') && i + 1 < n;
        if dir {
            name = &name[..name.len() - 1];
        }
        files.push(TryFile {
            name: b.template(name, &d.loc)?,
            dir,
        });
    }
    let last = d.arg(n - 1);
    let fallback = if let Some(code) = last.strip_prefix('=') {
        match value::number(code) {
            Some(c) if c <= 999 => TryFallback::Code(c as u16),
            _ => return Err(format!("invalid code \"{last}\"")),
        }
    } else if last.starts_with('@') {
        TryFallback::Named(last.to_string())
    } else {
        TryFallback::Uri(b.template(last, &d.loc)?)
    };
    let tf = TryFiles { files, fallback };
    let slot = match scope {
        Scope::Server(s) => &mut s.try_files,
        Scope::Location(l) => &mut l.try_files,
        _ => unreachable!("the table allows try_files in server and location only"),
    };
    set_once(slot, tf, &d.name)
}

msec!(resolver_timeout, resolver_timeout);

/// `resolver address ... [valid=time] [ipv6=on|off];`
/// (`ngx_resolver_create`): names of servers are resolved now, each
/// address asked in turn at request time.
pub fn resolver(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    if ls(scope).resolver.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let mut servers = Vec::new();
    // nginx 1.22 knows `valid=` and `ipv6=` (its `ipv4=` came in 1.23.1).
    let (mut valid, mut ipv6) = (None, true);
    for w in &d.args {
        let v = w.value.as_str();
        let bad = || format!("invalid parameter: {v}");
        if let Some(t) = v.strip_prefix("valid=") {
            valid = Some(value::time(t, false).ok_or_else(bad)?);
        } else if let Some(f) = v.strip_prefix("ipv6=") {
            ipv6 = match f {
                "on" => true,
                "off" => false,
                _ => return Err(bad()),
            };
        } else {
            let opts = super::url::UrlOptions {
                default_port: crate::upstream::resolve::DNS_PORT,
                uri_part: false,
                resolve: true,
            };
            let u =
                super::url::parse_url(v, opts).map_err(|e| format!("{e} in resolver \"{v}\""))?;
            for a in u.addrs {
                match a {
                    super::model::UpstreamAddr::Inet(a) => servers.push(a),
                    super::model::UpstreamAddr::Unix(_) => return Err(bad()),
                }
            }
        }
    }
    if servers.is_empty() {
        return Err("no name servers defined".into());
    }
    let r = crate::upstream::resolve::Resolver::new(servers, valid, true, ipv6);
    ls(scope).resolver = Some(Some(std::sync::Arc::new(r)));
    Ok(())
}

/// `worker_shutdown_timeout time;` (main).
pub fn worker_shutdown_timeout(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let Scope::Main(m) = scope else {
        unreachable!("the table allows worker_shutdown_timeout in main only")
    };
    let v: Duration = slot::msec(d, 0)?;
    set_once(&mut m.worker_shutdown_timeout, v, &d.name)
}

/// `worker_rlimit_nofile number;` (main).
pub fn worker_rlimit_nofile(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let Scope::Main(m) = scope else {
        unreachable!("the table allows worker_rlimit_nofile in main only")
    };
    let v = slot::num(d, 0)?;
    set_once(&mut m.worker_rlimit_nofile, v, &d.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_ngx_parse_size() {
        assert_eq!(size_plain("12k"), Some(12 * 1024));
        assert_eq!(size_plain("1M"), Some(1 << 20));
        assert_eq!(size_plain("256"), Some(256));
        assert_eq!(size_plain("1g"), None);
        assert_eq!(size_plain(""), None);
        assert_eq!(size_plain("k"), None);
    }
}
