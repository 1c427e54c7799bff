//! Arguments that may hold variables (`$uri`, `${host}`): parsed once at load
//! time into literal and variable parts, evaluated per request later.
//!
//! Variable names are checked when the whole configuration is known (a
//! `split_clients` may define a variable after its first use, as in nginx),
//! with nginx's message `unknown "name" variable`.

use std::fmt;

/// One piece of a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Text copied as is.
    Literal(String),
    /// A variable's name, without `$` or braces.
    Var(String),
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
    /// Parses `s`. A `$` followed by a name (`[A-Za-z0-9_]+`) or `{name}` is a
    /// variable; a lone `$` is literal, as in nginx's script compiler for
    /// `$` at the end. An unclosed `${` is an error.
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
            parts.push(Part::Var(name.to_string()));
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

    /// The variable names it uses.
    pub fn vars(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(v) => Some(v.as_str()),
            Part::Literal(_) => None,
        })
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// The built-in variables nowait knows by name.
pub const BUILTIN_VARIABLES: &[&str] = &[
    "args",
    "body_bytes_sent",
    "bytes_sent",
    "connection",
    "connection_requests",
    "content_length",
    "content_type",
    "document_root",
    "document_uri",
    "host",
    "hostname",
    "is_args",
    "msec",
    "nginx_version",
    "pid",
    "proxy_add_x_forwarded_for",
    "proxy_host",
    "proxy_internal_body_length",
    "proxy_internal_chunked",
    "proxy_port",
    "query_string",
    "realpath_root",
    "remote_addr",
    "remote_port",
    "remote_user",
    "request",
    "request_filename",
    "request_length",
    "request_method",
    "request_time",
    "request_uri",
    "scheme",
    "server_addr",
    "server_name",
    "server_port",
    "server_protocol",
    "status",
    "time_iso8601",
    "time_local",
    "upstream_addr",
    "upstream_bytes_received",
    "upstream_bytes_sent",
    "upstream_cache_status",
    "upstream_connect_time",
    "upstream_header_time",
    "upstream_response_length",
    "upstream_response_time",
    "upstream_status",
    "uri",
];

/// Prefixes of variable families (`$http_user_agent`, `$arg_id`, …).
pub const VARIABLE_PREFIXES: &[&str] = &[
    "http_",
    "arg_",
    "cookie_",
    "sent_http_",
    "upstream_http_",
    "upstream_cookie_",
    "upstream_trailer_",
];

/// Whether `name` is a built-in variable, a member of a family, or a regex
/// capture (`$1`…`$9`).
pub fn is_builtin(name: &str) -> bool {
    BUILTIN_VARIABLES.contains(&name)
        || VARIABLE_PREFIXES
            .iter()
            .any(|p| name.len() > p.len() && name.starts_with(p))
        || (name.len() == 1 && name.as_bytes()[0].is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts() {
        let t = Template::parse("pool_$disk").unwrap();
        assert_eq!(
            t.parts,
            vec![Part::Literal("pool_".into()), Part::Var("disk".into())]
        );
        let t = Template::parse("${host}x$uri/").unwrap();
        assert_eq!(
            t.parts,
            vec![
                Part::Var("host".into()),
                Part::Literal("x".into()),
                Part::Var("uri".into()),
                Part::Literal("/".into())
            ]
        );
        assert!(Template::parse("plain").unwrap().is_static());
        assert!(Template::parse("a$").unwrap().is_static());
        assert!(Template::parse("${x").is_err());
        assert!(Template::parse("${}").is_err());
    }

    #[test]
    fn builtins() {
        assert!(is_builtin("request_uri"));
        assert!(is_builtin("http_user_agent"));
        assert!(is_builtin("1"));
        assert!(!is_builtin("http_"));
        assert!(!is_builtin("disk"));
    }
}
