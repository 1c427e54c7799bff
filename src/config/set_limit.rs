//! Setters of the rate modules: `limit_req_zone`, `limit_req` and
//! `limit_req_*` (`ngx_http_limit_req_module.c`), `limit_conn_zone`,
//! `limit_conn` and `limit_conn_*` (`ngx_http_limit_conn_module.c`), with
//! nginx's messages.

use super::access_model::{LimitConn, LimitReq, LimitZone, MAX_LIMIT_CONN, NODELAY};
use super::build::{Builder, Scope, set_flag, set_once};
use super::inherit::LocSet;
use super::slot;
use super::syntax::Directive;
use super::value;
use super::zones::ZoneUse;
use crate::log::Level;

/// The smallest zone nginx accepts: eight pages.
pub const MIN_LIMIT_ZONE_SIZE: u64 = 8 * 4096;

/// The levels `limit_req_log_level` and `limit_conn_log_level` accept.
const LOG_LEVELS: [(&str, Level); 4] = [
    ("info", Level::Info),
    ("notice", Level::Notice),
    ("warn", Level::Warn),
    ("error", Level::Error),
];

/// The statuses `limit_req_status` and `limit_conn_status` accept.
const STATUS_BOUNDS: (u64, u64) = (400, 599);

fn ls<'a>(scope: &'a mut Scope<'_>) -> &'a mut LocSet {
    scope
        .loc_set()
        .expect("the table allows this directive in http, server and location only")
}

/// `ngx_atoi`: a positive decimal number, else `None`.
fn positive(s: &str) -> Option<u64> {
    value::number(s).filter(|&n| n > 0 && n <= i64::MAX as u64)
}

/// Reads `zone=NAME:SIZE` and the key of a zone directive; `rate` reads
/// `limit_req_zone`'s `rate=` (absent for `limit_conn_zone`).
fn zone(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive, req: bool) -> Result<(), String> {
    let Scope::Http(h) = scope else {
        unreachable!("the table allows zone directives in http only")
    };
    let key = b.template(d.arg(0), &d.loc)?;
    let (mut name, mut size, mut rate, mut scale) = (None, 0, 1, 1);
    for w in &d.args[1..] {
        let v = w.value.as_str();
        if let Some(rest) = v.strip_prefix("zone=") {
            let Some((n, s)) = rest.split_once(':') else {
                return Err(format!("invalid zone size \"{v}\""));
            };
            size = value::size(s).ok_or_else(|| format!("invalid zone size \"{v}\""))?;
            if size < MIN_LIMIT_ZONE_SIZE {
                return Err(format!("zone \"{v}\" is too small"));
            }
            name = Some(n.to_string());
        } else if req && v.starts_with("rate=") {
            let mut digits = &v[5..];
            if let Some(d) = digits.strip_suffix("r/s") {
                (digits, scale) = (d, 1);
            } else if let Some(d) = digits.strip_suffix("r/m") {
                (digits, scale) = (d, 60);
            }
            rate = positive(digits).ok_or_else(|| format!("invalid rate \"{v}\""))?;
        } else {
            return Err(format!("invalid parameter \"{v}\""));
        }
    }
    let Some(name) = name.filter(|n| !n.is_empty()) else {
        return Err(format!("\"{}\" must have \"zone\" parameter", d.name));
    };
    let used_for = if req {
        ZoneUse::LimitReq
    } else {
        ZoneUse::LimitConn
    };
    b.zones.add(&name, size, used_for)?;
    let list = if req {
        &mut h.limit_req_zones
    } else {
        &mut h.limit_conn_zones
    };
    if let Some(z) = list.iter().find(|z| z.name == name) {
        return Err(format!(
            "{} \"{name}\" is already bound to key \"{}\"",
            d.name, z.key_source
        ));
    }
    list.push(LimitZone {
        name,
        key,
        key_source: d.arg(0).to_string(),
        size,
        rate: if req {
            rate.saturating_mul(1000) / scale
        } else {
            0
        },
    });
    Ok(())
}

/// `limit_req_zone key zone=name:size rate=rate;`
pub fn limit_req_zone(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    zone(b, scope, d, true)
}

/// `limit_conn_zone key zone=name:size;`
pub fn limit_conn_zone(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    zone(b, scope, d, false)
}

/// `limit_req zone=name [burst=number] [nodelay | delay=number];`
pub fn limit_req(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let (mut zone, mut burst, mut delay) = (None, 0, 0);
    for w in &d.args {
        let v = w.value.as_str();
        if let Some(name) = v.strip_prefix("zone=") {
            b.zones.add(name, 0, ZoneUse::LimitReq)?;
            zone = Some(name.to_string());
        } else if let Some(n) = v.strip_prefix("burst=") {
            burst = positive(n).ok_or_else(|| format!("invalid burst value \"{v}\""))?;
        } else if let Some(n) = v.strip_prefix("delay=") {
            delay = positive(n).ok_or_else(|| format!("invalid delay value \"{v}\""))?;
        } else if v == "nodelay" {
            delay = NODELAY;
        } else {
            return Err(format!("invalid parameter \"{v}\""));
        }
    }
    let Some(zone) = zone else {
        return Err(format!("\"{}\" must have \"zone\" parameter", d.name));
    };
    let list = ls(scope).limit_req.get_or_insert_with(Vec::new);
    if list.iter().any(|l| l.zone == zone) {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    list.push(LimitReq {
        zone,
        burst: burst.saturating_mul(1000),
        delay: delay.saturating_mul(1000),
    });
    Ok(())
}

/// `limit_conn zone number;`
pub fn limit_conn(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let zone = d.arg(0).to_string();
    b.zones.add(&zone, 0, ZoneUse::LimitConn)?;
    let list = ls(scope).limit_conn.get_or_insert_with(Vec::new);
    if list.iter().any(|l| l.zone == zone) {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let n = positive(d.arg(1))
        .ok_or_else(|| format!("invalid number of connections \"{}\"", d.arg(1)))?;
    if n > MAX_LIMIT_CONN {
        return Err("connection limit must be less 65536".into());
    }
    list.push(LimitConn {
        zone,
        conn: n as u32,
    });
    Ok(())
}

/// `limit_req_status` and `limit_conn_status`: a number slot bounded to
/// 400–599.
fn status(d: &Directive) -> Result<u16, String> {
    let n = slot::num(d, 0)?;
    let (lo, hi) = STATUS_BOUNDS;
    if !(lo..=hi).contains(&n) {
        return Err(format!("value must be between {lo} and {hi}"));
    }
    Ok(n as u16)
}

/// `limit_req_status code;`
pub fn limit_req_status(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = ls(scope);
    if set.limit_req_status.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    set.limit_req_status = Some(status(d)?);
    Ok(())
}

/// `limit_conn_status code;`
pub fn limit_conn_status(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = ls(scope);
    if set.limit_conn_status.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    set.limit_conn_status = Some(status(d)?);
    Ok(())
}

/// `limit_req_log_level info | notice | warn | error;`
pub fn limit_req_log_level(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = ls(scope);
    if set.limit_req_log_level.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let level = slot::enumerated(d, &LOG_LEVELS)?;
    set_once(&mut set.limit_req_log_level, level, &d.name)
}

/// `limit_conn_log_level info | notice | warn | error;`
pub fn limit_conn_log_level(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = ls(scope);
    if set.limit_conn_log_level.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let level = slot::enumerated(d, &LOG_LEVELS)?;
    set_once(&mut set.limit_conn_log_level, level, &d.name)
}

/// `limit_req_dry_run on | off;`
pub fn limit_req_dry_run(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_flag(&mut ls(scope).limit_req_dry_run, d)
}

/// `limit_conn_dry_run on | off;`
pub fn limit_conn_dry_run(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_flag(&mut ls(scope).limit_conn_dry_run, d)
}

#[cfg(test)]
mod tests {
    use crate::config::load_text;
    use crate::config::model::HttpConf;

    fn http(body: &str) -> HttpConf {
        let text = format!("events {{}}\nhttp {{\n{body}\n}}\n");
        load_text(&text)
            .unwrap_or_else(|e| panic!("{e:?}"))
            .config
            .http
            .unwrap()
    }

    fn errors(body: &str) -> Vec<String> {
        let text = format!("events {{}}\nhttp {{\n{body}\n}}\n");
        match load_text(&text) {
            Ok(_) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.message).collect(),
        }
    }

    #[test]
    fn zones_and_limits_parse() {
        let h = http(
            "limit_req_zone $binary_remote_addr zone=one:1m rate=30r/m;\n\
             limit_conn_zone $binary_remote_addr zone=c:32k;\n\
             server { limit_req zone=one burst=5 nodelay; limit_conn c 2;\n\
                      location / { limit_req zone=one delay=2; } }",
        );
        assert_eq!(h.limit_req_zones[0].rate, 500, "30 r/m is 0.5 r/s");
        assert_eq!(h.limit_req_zones[0].size, 1 << 20);
        let s = &h.servers[0];
        assert_eq!(s.conf.limit_req[0].burst, 5000);
        assert_eq!(s.conf.limit_req[0].delay, super::NODELAY * 1000);
        assert_eq!(s.conf.limit_conn[0].conn, 2);
        assert_eq!(s.locations[0].conf.limit_req[0].delay, 2000);
        assert_eq!(s.locations[0].conf.limit_conn[0].zone, "c");
        assert_eq!(s.conf.limit_req_status, 503);
    }

    #[test]
    fn errors_are_nginx_s() {
        assert_eq!(
            errors("limit_req_zone $uri zone=one:1k rate=1r/s;"),
            vec!["zone \"zone=one:1k\" is too small"]
        );
        assert_eq!(
            errors("limit_req_zone $uri zone=one rate=1r/s;"),
            vec!["invalid zone size \"zone=one\""]
        );
        assert_eq!(
            errors("limit_req_zone $uri zone=one:1m rate=0r/s;"),
            vec!["invalid rate \"rate=0r/s\""]
        );
        assert_eq!(
            errors("limit_req_zone $uri rate=1r/s x;"),
            vec!["invalid parameter \"x\""]
        );
        assert_eq!(
            errors(
                "limit_req_zone $uri zone=one:1m rate=1r/s; limit_req_zone $host zone=one:1m rate=1r/s;"
            ),
            vec!["limit_req_zone \"one\" is already bound to key \"$uri\""]
        );
        assert_eq!(
            errors("limit_req burst=1;"),
            vec!["\"limit_req\" must have \"zone\" parameter"]
        );
        assert_eq!(
            errors("limit_req zone=z;"),
            vec!["zero size shared memory zone \"z\""]
        );
        assert_eq!(
            errors("limit_req_zone $uri zone=z:1m rate=1r/s; limit_req zone=z; limit_req zone=z;"),
            vec!["\"limit_req\" directive is duplicate"]
        );
        assert_eq!(
            errors("limit_conn_zone $uri zone=z:1m; limit_req zone=z;"),
            vec!["the shared memory zone \"z\" is already declared for a different use"]
        );
        assert_eq!(
            errors("limit_conn_zone $uri zone=z:1m; limit_conn z 65536;"),
            vec!["connection limit must be less 65536"]
        );
        assert_eq!(
            errors("limit_conn_zone $uri zone=z:1m; limit_conn z x;"),
            vec!["invalid number of connections \"x\""]
        );
        assert_eq!(
            errors("limit_req_status 600;"),
            vec!["value must be between 400 and 599"]
        );
        assert_eq!(
            errors("limit_conn_log_level debug;"),
            vec!["invalid value \"debug\""]
        );
    }
}
