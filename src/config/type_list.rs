//! MIME type lists of the body filters (`ssi_types`, `sub_filter_types`,
//! `addition_types` …), as nginx's `ngx_http_types_slot` reads them and
//! `ngx_http_test_content_type` matches a response against them.
//!
//! A list always holds the module's default type (`text/html`) once the
//! directive is written at all; `*` makes it match every type, a response
//! without a `Content-Type` included. A type is compared lowercased and
//! without its parameters (`text/html; charset=utf-8` is `text/html`).

use super::build::Builder;
use super::syntax::Directive;

/// The type every list of nginx's html filters starts with
/// (`ngx_http_html_default_types`).
pub const HTML: &str = "text/html";

/// A list of MIME types a body filter applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeList {
    /// `*` was given: every response matches.
    pub any: bool,
    /// The types, lowercased, without duplicates.
    pub types: Vec<String>,
}

impl TypeList {
    /// The list a module uses when no level wrote the directive: `default` alone.
    pub fn default_of(default: &str) -> TypeList {
        TypeList {
            any: false,
            types: vec![default.to_string()],
        }
    }

    /// A list of `types` (lowercased): a module's defaults when it has
    /// several (`charset_types`).
    pub fn of(types: &[&str]) -> TypeList {
        TypeList {
            any: false,
            types: types.iter().map(|t| t.to_ascii_lowercase()).collect(),
        }
    }

    /// The `text/html` list of the html filters.
    pub fn html() -> TypeList {
        TypeList::default_of(HTML)
    }

    /// Whether a response of `content_type` (as sent, parameters
    /// included; `None` when it has none) is in the list.
    pub fn matches(&self, content_type: Option<&str>) -> bool {
        if self.any {
            return true;
        }
        let Some(ct) = content_type else {
            return false;
        };
        let bare = mime_of(ct);
        self.types.iter().any(|t| t.eq_ignore_ascii_case(bare))
    }
}

/// The MIME type of a `Content-Type` value without its parameters (what
/// nginx keeps as `content_type_len`).
pub fn mime_of(content_type: &str) -> &str {
    let end = content_type.find(';').unwrap_or(content_type.len());
    content_type[..end].trim_end_matches([' ', '\t'])
}

/// Applies one `*_types` directive to a level's list (`ngx_http_types_slot`):
/// the first use at a level starts from `default`; `*` makes it match
/// everything from then on; a type listed twice is warned about.
pub fn add(
    b: &mut Builder,
    slot: &mut Option<TypeList>,
    d: &Directive,
    default: &str,
) -> Result<(), String> {
    let list = slot.get_or_insert_with(|| TypeList::default_of(default));
    if list.any {
        return Ok(());
    }
    for w in &d.args {
        if w.value == "*" {
            list.any = true;
            list.types.clear();
            return Ok(());
        }
        let t = w.value.to_ascii_lowercase();
        if list.types.contains(&t) {
            b.warn(format!("duplicate MIME type \"{t}\""), &d.loc);
            continue;
        }
        list.types.push(t);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_ignores_case_and_parameters() {
        let l = TypeList {
            any: false,
            types: vec!["text/html".into(), "text/xml".into()],
        };
        assert!(l.matches(Some("text/html")));
        assert!(l.matches(Some("Text/HTML; charset=utf-8")));
        assert!(l.matches(Some("text/xml ;q")));
        assert!(!l.matches(Some("text/plain")));
        assert!(!l.matches(None));
        let any = TypeList {
            any: true,
            types: Vec::new(),
        };
        assert!(any.matches(None));
        assert!(any.matches(Some("image/png")));
        let several = TypeList::of(&["text/html", "Text/Foo"]);
        assert!(several.matches(Some("TEXT/html")));
        assert!(several.matches(Some("text/foo")));
        assert!(!several.matches(Some("text/plain")));
    }
}
