//! Arguments that may hold variables (`$uri`, `${host}`, `$1`): parsed
//! once at load time into literal and variable parts ([`Var`]), evaluated
//! per request later.
//!
//! Names the configuration defines itself are checked when the whole
//! configuration is known (a `split_clients` may define a variable after its
//! first use, as in nginx), with nginx's message `unknown "name" variable`.

use std::fmt;

pub use super::vars::Var;

/// One piece of a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Text copied as is.
    Literal(String),
    /// A variable.
    Var(Var),
}

/// An argument split into literal text and variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    /// The parts in order.
    pub parts: Vec<Part>,
    /// The argument as written, for dumps and messages.
    pub source: String,
}

impl Template {
    /// Parses `s` as nginx's script compiler does (`ngx_http_script_compile`):
    /// `$1`…`$9` is a capture (one digit: `$12` is capture 1 then `2`); a
    /// `$` followed by a name (`[A-Za-z0-9_]+`) or `{name}` is a variable; a
    /// lone `$` is literal (nowait keeps it where nginx would refuse a `$`
    /// at the very end). An unclosed `${` is an error.
    pub fn parse(s: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] != b'$' {
                let ch = s[i..].chars().next().unwrap_or('\u{fffd}');
                lit.push(ch);
                i += ch.len_utf8().max(1);
                continue;
            }
            if let Some(d @ b'1'..=b'9') = b.get(i + 1) {
                if !lit.is_empty() {
                    parts.push(Part::Literal(std::mem::take(&mut lit)));
                }
                parts.push(Part::Var(Var::Capture(d - b'0')));
                i += 2;
                continue;
            }
            let (name, next) = if b.get(i + 1) == Some(&b'{') {
                let Some(close) = s[i + 2..].find('}') else {
                    return Err(format!(
                        "the closing bracket in \"{}\" variable is missing",
                        &s[i + 2..]
                    ));
                };
                (&s[i + 2..i + 2 + close], i + 3 + close)
            } else {
                let end = s[i + 1..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .map_or(s.len(), |n| i + 1 + n);
                (&s[i + 1..end], end)
            };
            if name.is_empty() {
                if next == i + 1 {
                    lit.push('$');
                    i += 1;
                    continue;
                }
                return Err(format!("invalid variable name in \"{s}\""));
            }
            if !lit.is_empty() {
                parts.push(Part::Literal(std::mem::take(&mut lit)));
            }
            parts.push(Part::Var(Var::from_name(name)));
            i = next;
        }
        if !lit.is_empty() {
            parts.push(Part::Literal(lit));
        }
        Ok(Template {
            parts,
            source: s.to_string(),
        })
    }

    /// A template of fixed text (no variables are looked for).
    pub fn literal(s: &str) -> Template {
        Template {
            parts: vec![Part::Literal(s.to_string())],
            source: s.to_string(),
        }
    }

    /// Whether the template has no variables (its value is fixed).
    pub fn is_static(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Literal(_)))
    }

    /// The variables it uses.
    pub fn vars(&self) -> impl Iterator<Item = &Var> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(v) => Some(v),
            Part::Literal(_) => None,
        })
    }

    /// Whether it uses the built-in `b`.
    pub fn uses(&self, b: super::vars::Builtin) -> bool {
        self.vars().any(|v| *v == Var::Builtin(b))
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts() {
        let t = Template::parse("pool_$disk").unwrap();
        assert_eq!(
            t.parts,
            vec![
                Part::Literal("pool_".into()),
                Part::Var(Var::from_name("disk"))
            ]
        );
        let t = Template::parse("${host}x$uri/").unwrap();
        assert_eq!(
            t.parts,
            vec![
                Part::Var(Var::from_name("host")),
                Part::Literal("x".into()),
                Part::Var(Var::from_name("uri")),
                Part::Literal("/".into())
            ]
        );
        assert!(Template::parse("plain").unwrap().is_static());
        assert!(Template::parse("a$").unwrap().is_static());
        assert!(Template::parse("${x").is_err());
        assert!(Template::parse("${}").is_err());
    }

    /// nginx's rule: a capture is one digit, `$0` is not one.
    #[test]
    fn captures() {
        let t = Template::parse("/d/$12x").unwrap();
        assert_eq!(
            t.parts,
            vec![
                Part::Literal("/d/".into()),
                Part::Var(Var::Capture(1)),
                Part::Literal("2x".into())
            ]
        );
        assert_eq!(
            Template::parse("${1}").unwrap().parts,
            vec![Part::Var(Var::Named("1".into()))]
        );
    }
}
