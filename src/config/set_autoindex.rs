//! Setters of the autoindex module's directives (`autoindex`,
//! `autoindex_format`, `autoindex_localtime`, `autoindex_exact_size`), as
//! `ngx_http_autoindex_commands` declares them: flags and an enum; and of
//! `max_ranges`, the core directive the range filter reads.

use super::build::{Builder, Scope, set_flag};
use super::filter_model::AutoindexFormat;
use super::set_proxy::{ls, not_set};
use super::slot;
use super::syntax::Directive;

/// `autoindex on | off;`
pub fn autoindex(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    set_flag(&mut ls(scope).autoindex, d)
}

/// `random_index on | off;` (location only, as nginx).
pub fn random_index(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    set_flag(&mut ls(scope).random_index, d)
}

/// `autoindex_format html | xml | json | jsonp;`
pub fn autoindex_format(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.autoindex_format, d)?;
    set.autoindex_format = Some(slot::enumerated(
        d,
        &[
            ("html", AutoindexFormat::Html),
            ("json", AutoindexFormat::Json),
            ("jsonp", AutoindexFormat::Jsonp),
            ("xml", AutoindexFormat::Xml),
        ],
    )?);
    Ok(())
}

/// `autoindex_localtime on | off;`
pub fn autoindex_localtime(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_flag(&mut ls(scope).autoindex_localtime, d)
}

/// `autoindex_exact_size on | off;`
pub fn autoindex_exact_size(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_flag(&mut ls(scope).autoindex_exact_size, d)
}

/// `max_ranges number;`
pub fn max_ranges(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.max_ranges, d)?;
    set.max_ranges = Some(Some(slot::num(d, 0)?));
    Ok(())
}
