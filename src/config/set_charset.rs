//! Setters of the charset module (`ngx_http_charset_filter_commands`):
//! `charset`, `source_charset`, `override_charset`, `charset_types` and
//! `charset_map` blocks, and the check nginx makes once the configuration
//! is read: every pair of charsets some level recodes between has a map
//! (`ngx_http_charset_postconfiguration`).

use std::sync::Arc;

use super::build::{Builder, Scope, set_flag};
use super::filter_model::{CHARSET_DEFAULT_TYPES, CharsetSpec};
use super::inherit::LocConf;
use super::model::HttpConf;
use super::set_proxy::{ls, not_set};
use super::syntax::Directive;
use super::type_list;
use crate::http::charset::{Map, MapBuilder, MapError};

/// `charset charset | off;`
pub fn charset(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    not_set(&ls(scope).charset, d)?;
    let spec = if d.arg(0) == "off" {
        CharsetSpec::Off
    } else {
        charset_value(b, d)?
    };
    ls(scope).charset = Some(spec);
    Ok(())
}

/// `source_charset charset;` (`off` is a name here, as in nginx).
pub fn source_charset(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    not_set(&ls(scope).source_charset, d)?;
    let spec = charset_value(b, d)?;
    ls(scope).source_charset = Some(spec);
    Ok(())
}

/// A charset's name, or a `$variable` that gives it per request.
fn charset_value(b: &mut Builder, d: &Directive) -> Result<CharsetSpec, String> {
    let v = d.arg(0);
    if v.starts_with('$') {
        return Ok(CharsetSpec::Var(b.template(v, &d.loc)?));
    }
    Ok(CharsetSpec::Name(v.to_string()))
}

/// `override_charset on | off;`
pub fn override_charset(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_flag(&mut ls(scope).override_charset, d)
}

/// `charset_types mime-type ...;`
pub fn charset_types(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    type_list::add(b, &mut ls(scope).charset_types, d, CHARSET_DEFAULT_TYPES[0])
}

/// `charset_map charset1 charset2 { byte byte; ... }`: an 8-bit table, or
/// one to UTF-8 when `charset2` is `utf-8` (`ngx_http_charset_map_block`).
pub fn charset_map(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let Scope::Http(h) = scope else {
        unreachable!("the table allows charset_map in http only")
    };
    let (left, right) = (d.arg(0), d.arg(1));
    let src = h.charsets.add(left);
    let dst = h.charsets.add(right);
    if src == dst {
        return Err(format!(
            "\"charset_map\" between the same charsets \"{left}\" and \"{right}\""
        ));
    }
    if h.charsets.has_map(src, dst) {
        return Err(format!(
            "duplicate \"charset_map\" between \"{left}\" and \"{right}\""
        ));
    }
    let mut map = MapBuilder::new(right.eq_ignore_ascii_case("utf-8"));
    for entry in d.block.as_deref().unwrap_or_default() {
        if entry.block.is_some() {
            b.error("unexpected \"{\"", &entry.loc);
            continue;
        }
        if entry.args.len() != 1 {
            b.error("invalid parameters number", &entry.loc);
            continue;
        }
        if let Err(e) = map.entry(&entry.name, entry.arg(0)) {
            let word = match e {
                MapError::Source => &entry.name,
                MapError::Destination => entry.arg(0),
            };
            b.error(format!("invalid value \"{word}\""), &entry.loc);
        }
    }
    let (forward, backward) = map.finish();
    h.charsets.maps.push(Map {
        src,
        dst,
        forward: Arc::new(forward),
        backward: Arc::new(backward),
    });
    Ok(())
}

/// nginx's check after reading the configuration: each level whose
/// `charset` and `source_charset` name two different charsets needs a
/// `charset_map` between them (`no "charset_map" between the charsets
/// "A" and "B"`, reported once per pair, without a file and line).
pub fn check_recodes(b: &mut Builder, h: &mut HttpConf) {
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for c in h.loc_confs() {
        if let Some(pair) = static_recode(c) {
            let src = h.charsets.find(&pair.0);
            let dst = h.charsets.find(&pair.1);
            let (src, dst) = match (src, dst) {
                (Some(s), Some(d)) => (s, d),
                _ => (usize::MAX, usize::MAX),
            };
            if src != usize::MAX && (src == dst || pairs.contains(&(src, dst))) {
                continue;
            }
            if src == usize::MAX || !h.charsets.has_map(src, dst) {
                b.diags.push(super::ConfError::emerg(
                    format!(
                        "no \"charset_map\" between the charsets \"{}\" and \"{}\"",
                        pair.1, pair.0
                    ),
                    None,
                ));
                return;
            }
            pairs.push((src, dst));
        }
    }
}

/// The (charset, source_charset) names of a level that recodes between two
/// named charsets.
fn static_recode(c: &LocConf) -> Option<(String, String)> {
    match (&c.charset, &c.source_charset) {
        (CharsetSpec::Name(dst), CharsetSpec::Name(src)) if !dst.eq_ignore_ascii_case(src) => {
            Some((dst.clone(), src.clone()))
        }
        _ => None,
    }
}
