//! Setters for the SSI module's directives (`ssi`, `ssi_silent_errors`,
//! `ssi_ignore_recycled_buffers`, `ssi_last_modified`, `ssi_min_file_chunk`,
//! `ssi_value_length`, `ssi_types`), with nginx's slots and words.

use super::build::{Builder, Scope, set_flag};
use super::set_proxy::{ls, not_set};
use super::slot;
use super::syntax::Directive;
use super::type_list::{self, HTML};

/// `ssi on | off;`
pub fn ssi(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    set_flag(&mut ls(scope).ssi, d)
}

/// `ssi_silent_errors on | off;`
pub fn ssi_silent_errors(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_flag(&mut ls(scope).ssi_silent_errors, d)
}

/// `ssi_ignore_recycled_buffers on | off;`
pub fn ssi_ignore_recycled_buffers(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_flag(&mut ls(scope).ssi_ignore_recycled_buffers, d)
}

/// `ssi_last_modified on | off;`
pub fn ssi_last_modified(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_flag(&mut ls(scope).ssi_last_modified, d)
}

/// `ssi_min_file_chunk size;`
pub fn ssi_min_file_chunk(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.ssi_min_file_chunk, d)?;
    set.ssi_min_file_chunk = Some(slot::size(d, 0)?);
    Ok(())
}

/// `ssi_value_length length;`
pub fn ssi_value_length(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.ssi_value_length, d)?;
    set.ssi_value_length = Some(slot::size(d, 0)?);
    Ok(())
}

/// `ssi_types mime-type ...;` (each use adds to the level's list).
pub fn ssi_types(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    type_list::add(b, &mut ls(scope).ssi_types, d, HTML)
}

#[cfg(test)]
mod tests {
    use crate::config::inherit::LocConf;

    fn location(conf: &str) -> LocConf {
        let text = format!(
            "events {{}} http {{ server {{ listen 127.0.0.1:8080; {conf} location / {{ }} }} }}"
        );
        let loaded = crate::config::load_text(&text).expect("the configuration loads");
        loaded.config.http.expect("http").servers[0].locations[0]
            .conf
            .clone()
    }

    #[test]
    fn defaults_are_nginx_s() {
        let c = location("");
        assert!(!c.ssi && !c.ssi_silent_errors && !c.ssi_last_modified);
        assert_eq!(c.ssi_min_file_chunk, 1024);
        assert_eq!(c.ssi_value_length, 255);
        assert!(c.ssi_types.matches(Some("text/html")));
        assert!(!c.ssi_types.matches(Some("text/plain")));
    }

    #[test]
    fn types_accumulate_and_inherit() {
        let c = location("ssi on; ssi_types text/plain; ssi_types Text/XML;");
        assert!(c.ssi);
        for t in ["text/html", "text/plain", "text/xml"] {
            assert!(c.ssi_types.matches(Some(t)), "{t}");
        }
        let c = location("ssi_types *;");
        assert!(c.ssi_types.matches(None));
    }
}
