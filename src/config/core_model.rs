//! The typed values of nginx's everyday core and headers directives:
//! `expires`, `add_trailer`, `server_tokens`, `if_modified_since`,
//! `keepalive_disable`, `lingering_close`, `disable_symlinks`,
//! `open_file_cache`, `try_files`, `limit_rate`, and the error logs of a
//! level. Only data: the setters (`set_core_http.rs`, `set_headers.rs`)
//! fill them in, the server reads them.

use std::time::Duration;

use super::model::ErrorLogConf;
use super::template::Template;

/// How `expires` sets `Expires` and `Cache-Control` (nginx's
/// `ngx_http_expires_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpiresKind {
    /// `expires off`: the headers are left alone.
    Off,
    /// `expires epoch`: `Thu, 01 Jan 1970 00:00:01 GMT`, `no-cache`.
    Epoch,
    /// `expires max`: `Thu, 31 Dec 2037 23:55:55 GMT`, ten years.
    Max,
    /// `expires TIME`: relative to the time of the request.
    Access,
    /// `expires modified TIME`: relative to `Last-Modified`.
    Modified,
    /// `expires @TIME`: the next time of day.
    Daily,
}

/// `expires [modified] time | epoch | max | off`.
#[derive(Clone, Debug)]
pub struct Expires {
    /// What kind (for a value with variables: `Access` or `Modified`,
    /// refined per request).
    pub kind: ExpiresKind,
    /// Seconds (negative: in the past); for `Daily`, seconds after midnight.
    pub time: i64,
    /// The value with variables, parsed per request as nginx does.
    pub value: Option<Template>,
}

impl Default for Expires {
    fn default() -> Self {
        Expires {
            kind: ExpiresKind::Off,
            time: 0,
            value: None,
        }
    }
}

/// The largest `expires @time` nginx accepts: under a day.
pub const DAY_SECS: i64 = 24 * 60 * 60;

/// Parses one `expires` value as `ngx_http_parse_expires`: `kind` is what
/// the directive's form said (`Access` or `Modified`); the result is the
/// kind and time, or nginx's reason. Shared by the loader and by values
/// with variables at request time.
pub fn parse_expires(value: &str, kind: ExpiresKind) -> Result<(ExpiresKind, i64), &'static str> {
    let mut kind = kind;
    if kind != ExpiresKind::Modified {
        match value {
            "epoch" => return Ok((ExpiresKind::Epoch, 0)),
            "max" => return Ok((ExpiresKind::Max, 0)),
            "off" => return Ok((ExpiresKind::Off, 0)),
            _ => {}
        }
    }
    let (rest, minus) = if let Some(rest) = value.strip_prefix('@') {
        if kind == ExpiresKind::Modified {
            return Err("daily time cannot be used with \"modified\" parameter");
        }
        kind = ExpiresKind::Daily;
        (rest, false)
    } else if let Some(rest) = value.strip_prefix('+') {
        (rest, false)
    } else if let Some(rest) = value.strip_prefix('-') {
        (rest, true)
    } else {
        (value, false)
    };
    let secs = super::value::time(rest, false)
        .ok_or("invalid value")?
        .as_secs() as i64;
    if kind == ExpiresKind::Daily && secs > DAY_SECS {
        return Err("daily time value must be less than 24 hours");
    }
    Ok((kind, if minus { -secs } else { secs }))
}

/// `server_tokens on | off | build` (nginx 1.22 takes these three).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerTokens {
    /// The name alone.
    Off,
    /// The name and version.
    On,
    /// The name, version and build.
    Build,
}

/// `keepalive_disable none | browser ...`: the browsers keep-alive is
/// turned off for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeepaliveDisable {
    /// Old MSIE (up to 6.0 without SV1), for POST requests.
    pub msie6: bool,
    /// Safari and Safari-like browsers on macOS and iOS.
    pub safari: bool,
}

/// `lingering_close off | on | always`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LingeringClose {
    /// Close at once.
    Off,
    /// Linger when the client may still be sending (nginx's heuristics).
    On,
    /// Always linger.
    Always,
}

/// `disable_symlinks off | on | if_not_owner`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymlinkPolicy {
    /// Symbolic links are followed.
    Off,
    /// Any symbolic link in the path refuses the file.
    On,
    /// A link whose owner differs from its target's refuses the file.
    IfNotOwner,
}

/// `disable_symlinks … [from=part]`.
#[derive(Clone, Debug)]
pub struct DisableSymlinks {
    /// What links are refused.
    pub policy: SymlinkPolicy,
    /// The leading part of the path not checked (`from=$document_root`).
    pub from: Option<Template>,
}

impl Default for DisableSymlinks {
    fn default() -> Self {
        DisableSymlinks {
            policy: SymlinkPolicy::Off,
            from: None,
        }
    }
}

/// `open_file_cache max=N [inactive=time]`: the settings and the cache
/// itself, made when the directive is read so that the levels inheriting
/// it share one table, as nginx's do.
#[derive(Clone, Debug)]
pub struct OpenFileCache {
    /// The most entries kept.
    pub max: usize,
    /// Entries unused this long are dropped (default 60s).
    pub inactive: Duration,
    /// The table.
    pub cache: std::sync::Arc<crate::io::open_cache::OpenCache>,
}

/// nginx's default `inactive=` of `open_file_cache` and
/// `open_log_file_cache`.
pub const DEFAULT_CACHE_INACTIVE: Duration = Duration::from_secs(60);

/// One `try_files` candidate.
#[derive(Clone, Debug)]
pub struct TryFile {
    /// The name (`$uri`, `/x.html`), without the trailing `/` of a
    /// directory test.
    pub name: Template,
    /// Written with a trailing `/`: the candidate must be a directory.
    pub dir: bool,
}

/// What `try_files` does when no candidate exists.
#[derive(Clone, Debug)]
pub enum TryFallback {
    /// `=code`: finish with this status.
    Code(u16),
    /// `@name`: go to the named location.
    Named(String),
    /// A URI: an internal redirect (it may carry `?args`).
    Uri(Template),
}

/// `try_files file ... uri | =code`.
#[derive(Clone, Debug)]
pub struct TryFiles {
    /// The candidates tested in order.
    pub files: Vec<TryFile>,
    /// The last argument.
    pub fallback: TryFallback,
}

/// A size that may hold variables (`ngx_http_set_complex_value_size_slot`):
/// `limit_rate`, `limit_rate_after`.
#[derive(Clone, Debug)]
pub enum SizeValue {
    /// A size known at load time.
    Fixed(u64),
    /// Variables, parsed as a size per request (a bad one counts as 0).
    Var(Template),
}

impl Default for SizeValue {
    fn default() -> Self {
        SizeValue::Fixed(0)
    }
}

/// The `error_log` destinations of an http, server or location level; empty
/// means the main context's (`ngx_http_core_merge_loc_conf` falls back to
/// the cycle's log).
#[derive(Clone, Debug, Default)]
pub struct ErrorLogs {
    /// The destinations and thresholds written.
    pub confs: Vec<ErrorLogConf>,
    /// The open log, filled in when a site is made from the configuration.
    pub log: crate::log::ErrorLog,
}

/// `log_format … escape=`: how variable values are escaped in a line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogEscape {
    /// `"`, `\` and bytes outside printable ASCII as `\xXX`.
    #[default]
    Default,
    /// JSON string escapes (`\"`, `\\`, `\n`, `\u001B` …).
    Json,
    /// No escaping at all.
    None,
}

/// `open_log_file_cache max=N [inactive=time] [min_uses=N] [valid=time]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenLogFileCache {
    /// The most descriptors kept open.
    pub max: usize,
    /// Closed after this long unused (default 10s).
    pub inactive: Duration,
    /// Uses within `inactive` before a descriptor is kept (default 1).
    pub min_uses: u32,
    /// How long a kept descriptor is trusted before its file is checked
    /// again (default 60s).
    pub valid: Duration,
    /// Which directive this is: the levels inheriting it share one table.
    pub id: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expires_values_as_nginx_parses_them() {
        use ExpiresKind::*;
        assert_eq!(parse_expires("epoch", Access), Ok((Epoch, 0)));
        assert_eq!(parse_expires("max", Access), Ok((Max, 0)));
        assert_eq!(parse_expires("off", Access), Ok((Off, 0)));
        assert_eq!(parse_expires("2048", Access), Ok((Access, 2048)));
        assert_eq!(parse_expires("-2048", Access), Ok((Access, -2048)));
        assert_eq!(parse_expires("+1h", Access), Ok((Access, 3600)));
        assert_eq!(
            parse_expires("@15h30m33s", Access),
            Ok((Daily, 15 * 3600 + 30 * 60 + 33))
        );
        assert_eq!(parse_expires("2048", Modified), Ok((Modified, 2048)));
        // `modified` takes only times.
        assert_eq!(parse_expires("epoch", Modified), Err("invalid value"));
        assert_eq!(
            parse_expires("@1h", Modified),
            Err("daily time cannot be used with \"modified\" parameter")
        );
        assert_eq!(
            parse_expires("@25h", Access),
            Err("daily time value must be less than 24 hours")
        );
        assert_eq!(parse_expires("", Access), Err("invalid value"));
        assert_eq!(parse_expires("bad", Access), Err("invalid value"));
    }
}
