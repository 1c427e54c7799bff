//! Setters of nginx's log module (`ngx_http_log_module`): `log_format`,
//! `access_log` with its `buffer=`, `flush=`, `gzip` and `if=` parameters,
//! and `open_log_file_cache`; each checks its arguments with nginx's words
//! (`ngx_http_log_set_format`, `ngx_http_log_set_log`,
//! `ngx_http_log_open_file_cache`).

use std::time::Duration;

use super::build::{Builder, Scope};
use super::core_model::{LogEscape, OpenLogFileCache};
use super::inherit::LocSet;
use super::model::{AccessLog, AccessLogs, AccessTarget, LogFormat, LogTarget};
use super::syntax::Directive;
use super::value;

/// The buffer a `gzip` access log gets when no `buffer=` is given (nginx's).
pub const DEFAULT_GZIP_BUFFER: u64 = 64 * 1024;
/// The compression level of a bare `gzip` (zlib's `Z_BEST_SPEED`).
pub const DEFAULT_GZIP_LEVEL: u32 = 1;
/// `open_log_file_cache`'s defaults: `inactive=10s`, `valid=60s`.
pub const DEFAULT_LOG_CACHE_INACTIVE: Duration = Duration::from_secs(10);
/// See [`DEFAULT_LOG_CACHE_INACTIVE`].
pub const DEFAULT_LOG_CACHE_VALID: Duration = Duration::from_secs(60);

fn ls<'a>(scope: &'a mut Scope<'_>) -> &'a mut LocSet {
    scope
        .loc_set()
        .expect("the table allows this directive in http, server and location only")
}

/// `log_format name [escape=default|json|none] string ...;`
pub fn log_format(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let Scope::Http(h) = scope else {
        unreachable!("the table allows log_format in http only")
    };
    let name = d.arg(0).to_string();
    if h.log_formats.contains_key(&name) {
        return Err(format!("duplicate \"log_format\" name \"{name}\""));
    }
    let mut rest = &d.args[1..];
    let mut escape = LogEscape::Default;
    if let Some(mode) = rest.first().and_then(|w| w.value.strip_prefix("escape=")) {
        escape = match mode {
            "default" => LogEscape::Default,
            "json" => LogEscape::Json,
            "none" => LogEscape::None,
            _ => return Err(format!("unknown log format escaping \"{mode}\"")),
        };
        rest = &rest[1..];
    }
    if rest.is_empty() {
        return Err(format!(
            "invalid number of arguments in \"{}\" directive",
            d.name
        ));
    }
    let text: String = rest.iter().map(|w| w.value.as_str()).collect();
    let template = b.template(&text, &d.loc)?;
    h.log_formats.insert(
        name.clone(),
        LogFormat {
            name,
            template,
            escape,
        },
    );
    Ok(())
}

/// `access_log path [format [buffer=size] [gzip[=level]] [flush=time]
/// [if=condition]] | off;` — several at one level all apply.
pub fn access_log(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let path = d.arg(0);
    if path == "off" {
        if let Some(extra) = d.args.get(1) {
            return Err(format!("invalid parameter \"{}\"", extra.value));
        }
        // nginx's `llcf->off`: a level with `off` logs nothing, whatever
        // else it names, and `off` may be said again.
        ls(scope).access_log = Some(AccessLogs::Off);
        return Ok(());
    }
    if path.starts_with("syslog:") {
        return Err("syslog access logs are not implemented yet".into());
    }
    let format = d
        .args
        .get(1)
        .map_or("combined", |w| w.value.as_str())
        .to_string();
    b.log_format_uses.push((format.clone(), d.loc.clone()));
    let target = if path == "stderr" {
        AccessTarget::Fixed(LogTarget::Stderr)
    } else {
        let t = b.template(path, &d.loc)?;
        if t.is_static() {
            AccessTarget::Fixed(LogTarget::File(b.full_path(path)))
        } else {
            let full = if path.starts_with('/') {
                path.to_string()
            } else {
                format!("{}/{path}", b.prefix.display())
            };
            AccessTarget::Variable(b.template(&full, &d.loc)?)
        }
    };
    let mut log = AccessLog {
        target,
        format,
        condition: None,
        buffer: None,
        flush: None,
        gzip: None,
    };
    for w in d.args.iter().skip(2) {
        let v = w.value.as_str();
        if let Some(s) = v.strip_prefix("buffer=") {
            match super::set_core_http::size_plain(s) {
                Some(n) if n > 0 => log.buffer = Some(n),
                _ => return Err(format!("invalid buffer size \"{s}\"")),
            }
        } else if let Some(s) = v.strip_prefix("flush=") {
            match super::slot::msec_value(s) {
                Some(t) if !t.is_zero() => log.flush = Some(t),
                _ => return Err(format!("invalid flush time \"{s}\"")),
            }
        } else if v == "gzip" || v.starts_with("gzip=") {
            log.buffer.get_or_insert(DEFAULT_GZIP_BUFFER);
            log.gzip = Some(match v.strip_prefix("gzip=") {
                None => DEFAULT_GZIP_LEVEL,
                Some(l) => match value::number(l) {
                    Some(n @ 1..=9) => n as u32,
                    _ => return Err(format!("invalid compression level \"{l}\"")),
                },
            });
        } else if let Some(s) = v.strip_prefix("if=") {
            log.condition = Some(b.template(s, &d.loc)?);
        } else {
            return Err(format!("invalid parameter \"{v}\""));
        }
    }
    if log.flush.is_some() && log.buffer.is_none() {
        return Err(format!("no buffer is defined for access_log \"{path}\""));
    }
    if log.buffer.is_some() {
        if matches!(log.target, AccessTarget::Variable(_)) {
            return Err("buffered logs cannot have variables in name".into());
        }
        if let AccessTarget::Fixed(LogTarget::File(p)) = &log.target {
            let params = (log.buffer, log.flush, log.gzip);
            match b.buffered_logs.iter().find(|(q, _)| q == p) {
                Some((_, seen)) if *seen != params => {
                    return Err(format!(
                        "access_log \"{path}\" already defined with conflicting parameters"
                    ));
                }
                Some(_) => {}
                None => b.buffered_logs.push((p.clone(), params)),
            }
        }
    }
    let set = ls(scope);
    match &mut set.access_log {
        Some(AccessLogs::Logs(v)) => v.push(log),
        // Read and checked, but `off` at this level wins (as in nginx).
        Some(AccessLogs::Off) => {}
        None => set.access_log = Some(AccessLogs::Logs(vec![log])),
    }
    Ok(())
}

/// `open_log_file_cache max=N [inactive=time] [min_uses=N] [valid=time] | off;`
pub fn open_log_file_cache(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    if ls(scope).open_log_file_cache.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let mut c = OpenLogFileCache {
        max: 0,
        inactive: DEFAULT_LOG_CACHE_INACTIVE,
        min_uses: 1,
        valid: DEFAULT_LOG_CACHE_VALID,
        id: 0,
    };
    let mut off = false;
    for w in &d.args {
        let v = w.value.as_str();
        let bad = || format!("invalid \"open_log_file_cache\" parameter \"{v}\"");
        if let Some(n) = v.strip_prefix("max=") {
            c.max = value::number(n).ok_or_else(bad)? as usize;
        } else if let Some(t) = v.strip_prefix("inactive=") {
            c.inactive = value::time(t, false).ok_or_else(bad)?;
        } else if let Some(n) = v.strip_prefix("min_uses=") {
            c.min_uses = u32::try_from(value::number(n).ok_or_else(bad)?).unwrap_or(u32::MAX);
        } else if let Some(t) = v.strip_prefix("valid=") {
            c.valid = value::time(t, false).ok_or_else(bad)?;
        } else if v == "off" {
            off = true;
        } else {
            return Err(bad());
        }
    }
    if off {
        ls(scope).open_log_file_cache = Some(None);
        return Ok(());
    }
    if c.max == 0 {
        return Err("\"open_log_file_cache\" must have \"max\" parameter".into());
    }
    c.id = next_cache_id();
    ls(scope).open_log_file_cache = Some(Some(c));
    Ok(())
}

/// A number for each `open_log_file_cache` directive read: the levels that
/// inherit one share its table in the log writer, as nginx's share theirs.
fn next_cache_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
