//! Setters for the sub module's directives (`sub_filter`,
//! `sub_filter_once`, `sub_filter_last_modified`, `sub_filter_types`) and
//! the addition module's (`add_before_body`, `add_after_body`,
//! `addition_types`), with nginx's words.

use super::build::{Builder, Scope, set_flag};
use super::set_proxy::{ls, not_set};
use super::syntax::Directive;
use super::type_list::{self, HTML};

/// The most `sub_filter` pairs one level may have (nginx keeps their
/// indexes in a byte).
pub const MAX_SUB_FILTERS: usize = 255;

/// `sub_filter string replacement;` (each use adds a pair to the level's).
pub fn sub_filter(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    if d.arg(0).is_empty() {
        return Err("empty search pattern".into());
    }
    let set = ls(scope);
    let pairs = set.sub_filter.get_or_insert_with(Vec::new);
    if pairs.len() == MAX_SUB_FILTERS {
        return Err(format!(
            "number of search patterns exceeds {MAX_SUB_FILTERS}"
        ));
    }
    // nginx lowercases the string as written, variable names included.
    let matched = b.template(&d.arg(0).to_ascii_lowercase(), &d.loc)?;
    let replacement = b.template(d.arg(1), &d.loc)?;
    ls(scope)
        .sub_filter
        .get_or_insert_with(Vec::new)
        .push((matched, replacement));
    Ok(())
}

/// `sub_filter_once on | off;`
pub fn sub_filter_once(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_flag(&mut ls(scope).sub_filter_once, d)
}

/// `sub_filter_last_modified on | off;`
pub fn sub_filter_last_modified(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_flag(&mut ls(scope).sub_filter_last_modified, d)
}

/// `sub_filter_types mime-type ...;`
pub fn sub_filter_types(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    type_list::add(b, &mut ls(scope).sub_filter_types, d, HTML)
}

/// The value of `add_before_body`/`add_after_body` (`ngx_conf_set_str_slot`:
/// taken as written; an empty one turns the addition off).
fn addition_uri(d: &Directive) -> Option<String> {
    (!d.arg(0).is_empty()).then(|| d.arg(0).to_string())
}

/// `add_before_body uri;`
pub fn add_before_body(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.add_before_body, d)?;
    set.add_before_body = Some(addition_uri(d));
    Ok(())
}

/// `add_after_body uri;`
pub fn add_after_body(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.add_after_body, d)?;
    set.add_after_body = Some(addition_uri(d));
    Ok(())
}

/// `addition_types mime-type ...;`
pub fn addition_types(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    type_list::add(b, &mut ls(scope).addition_types, d, HTML)
}

#[cfg(test)]
mod tests {
    fn load(conf: &str) -> Result<crate::config::inherit::LocConf, Vec<String>> {
        let text = format!(
            "events {{}} http {{ server {{ listen 127.0.0.1:8080; {conf} location / {{ }} }} }}"
        );
        crate::config::load_text(&text)
            .map(|l| {
                l.config.http.expect("http").servers[0].locations[0]
                    .conf
                    .clone()
            })
            .map_err(|e| e.iter().map(|e| e.to_string()).collect())
    }

    #[test]
    fn sub_filter_pairs_are_lowercased_and_inherited() {
        let c = load("sub_filter FOO Bar; sub_filter $ARG_x y;").unwrap();
        assert_eq!(c.sub_filter.len(), 2);
        assert_eq!(c.sub_filter[0].0.source, "foo");
        assert_eq!(c.sub_filter[0].1.source, "Bar");
        assert_eq!(c.sub_filter[1].0.source, "$arg_x");
        assert!(c.sub_filter_once && !c.sub_filter_last_modified);
        let e = load("sub_filter '' x;").unwrap_err();
        assert!(e[0].contains("empty search pattern"), "{e:?}");
    }

    #[test]
    fn additions_take_uris_and_an_empty_one_is_off() {
        let c = load("add_before_body /b; add_after_body '';").unwrap();
        assert_eq!(c.add_before_body.as_deref(), Some("/b"));
        assert_eq!(c.add_after_body, None);
        let e = load("add_before_body /a; add_before_body /b;").unwrap_err();
        assert!(
            e[0].contains("\"add_before_body\" directive is duplicate"),
            "{e:?}"
        );
    }
}
