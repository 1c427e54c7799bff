//! Setters of nginx's headers filter module (`ngx_http_headers_filter_module`):
//! `expires` and `add_trailer` (`add_header` shares its parsing, in
//! `set_http.rs`).

use super::build::{Builder, Scope, set_once};
use super::core_model::{Expires, ExpiresKind, parse_expires};
use super::inherit::LocSet;
use super::syntax::Directive;

fn ls<'a>(scope: &'a mut Scope<'_>) -> &'a mut LocSet {
    scope
        .loc_set()
        .expect("the table allows this directive in http, server and location only")
}

/// `expires [modified] time | epoch | max | off;` (`ngx_http_headers_expires`):
/// a value with variables is parsed per request.
pub fn expires(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    if ls(scope).expires.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let (kind, raw) = if d.args.len() == 1 {
        (ExpiresKind::Access, d.arg(0))
    } else if d.arg(0) == "modified" {
        (ExpiresKind::Modified, d.arg(1))
    } else {
        return Err(format!("\"{}\" directive invalid value", d.name));
    };
    let t = b.template(raw, &d.loc)?;
    let e = if t.is_static() {
        let (kind, time) =
            parse_expires(raw, kind).map_err(|why| format!("\"{}\" directive {why}", d.name))?;
        Expires {
            kind,
            time,
            value: None,
        }
    } else {
        Expires {
            kind,
            time: 0,
            value: Some(t),
        }
    };
    set_once(&mut ls(scope).expires, e, &d.name)
}

/// `add_trailer name value [always];`: all of a level's entries replace
/// the parent's.
pub fn add_trailer(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let h = super::set_http::header_entry(b, d)?;
    ls(scope).add_trailers.get_or_insert_with(Vec::new).push(h);
    Ok(())
}
