//! Setters of the access module (`allow`, `deny`), `satisfy` and
//! `auth_delay`, and the
//! basic-authentication module (`auth_basic`, `auth_basic_user_file`), as
//! nginx's `ngx_http_access_rule` and `ngx_http_auth_basic_commands` read
//! them.

use super::access_model::{AccessMatch, AccessRule, CidrParse, Satisfy, parse_cidr};
use super::build::{Builder, Scope, set_once};
use super::inherit::LocSet;
use super::model::{LimitExcept, Location};
use super::slot;
use super::syntax::Directive;

fn ls<'a>(scope: &'a mut Scope<'_>) -> &'a mut LocSet {
    scope
        .loc_set()
        .expect("the table allows this directive in http, server and location only")
}

/// `allow address | CIDR | unix: | all;` and `deny …`.
pub fn allow_deny(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let v = d.arg(0);
    let matches = match v {
        "all" => AccessMatch::All,
        "unix:" => AccessMatch::Unix,
        _ => match parse_cidr(v) {
            Some(CidrParse::Exact(c)) => AccessMatch::Cidr(c),
            Some(CidrParse::LowBits(c)) => {
                b.warn(format!("low address bits of {v} are meaningless"), &d.loc);
                AccessMatch::Cidr(c)
            }
            None => return Err(format!("invalid parameter \"{v}\"")),
        },
    };
    ls(scope)
        .access_rules
        .get_or_insert_with(Vec::new)
        .push(AccessRule {
            deny: d.name.starts_with('d'),
            matches,
        });
    Ok(())
}

/// `valid_referers none | blocked | server_names | string ...;` — several at
/// one level add up (`ngx_http_valid_referers`).
pub fn valid_referers(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let set = ls(scope);
    let list = std::sync::Arc::make_mut(
        set.valid_referers
            .get_or_insert_with(Default::default)
            .get_or_insert_with(Default::default),
    );
    for w in &d.args {
        let v = w.value.as_str();
        match v {
            "" => return Err(format!("invalid referer \"{v}\"")),
            "none" => list.none = true,
            "blocked" => list.blocked = true,
            "server_names" => list.server_names = true,
            _ if v.starts_with('~') => {
                let re = &v[1..];
                if re.is_empty() {
                    return Err(format!("empty regex in \"{v}\""));
                }
                // Caseless, as nginx compiles these.
                list.regexes.push(super::regex::compile(re, true)?);
            }
            _ => match v.find('/') {
                Some(i) => list.add(&v[..i], Some(&v[i..]))?,
                None => list.add(v, None)?,
            },
        }
    }
    Ok(())
}

/// `referer_hash_max_size` and `referer_hash_bucket_size` (number slots):
/// the sizes of nginx's hash of referer names. nowait's list has no size
/// to tune; the values are checked as nginx checks them.
pub fn referer_hash_size(_: &mut Builder, _: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    slot::num(d, 0).map(|_| ())
}

/// `satisfy all | any;`
pub fn satisfy(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let v = slot::enumerated(d, &[("all", Satisfy::All), ("any", Satisfy::Any)])?;
    set_once(&mut ls(scope).satisfy, v, &d.name)
}

/// `auth_basic string | off;` (the realm may hold variables; a realm that
/// evaluates to `off` turns the check off, as nginx decides per request).
pub fn auth_basic(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let t = b.template(d.arg(0), &d.loc)?;
    set_once(&mut ls(scope).auth_basic, Some(t), &d.name)
}

/// `secure_link expression;`
pub fn secure_link(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let t = b.template(d.arg(0), &d.loc)?;
    set_once(&mut ls(scope).secure_link, Some(t), &d.name)
}

/// `secure_link_md5 expression;`
pub fn secure_link_md5(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let t = b.template(d.arg(0), &d.loc)?;
    set_once(&mut ls(scope).secure_link_md5, Some(t), &d.name)
}

/// `secure_link_secret word;`
pub fn secure_link_secret(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_once(
        &mut ls(scope).secure_link_secret,
        d.arg(0).to_owned(),
        &d.name,
    )
}

/// nginx's merge of the secure_link module's settings for a level whose
/// own are `set` (merged generically into `conf` already): a level that
/// writes `secure_link_secret` takes neither `secure_link` nor
/// `secure_link_md5` (and may not write them); a level with either of those
/// does not inherit the secret.
pub fn merge_secure_link(
    set: &LocSet,
    conf: &mut super::inherit::LocConf,
) -> Result<(), &'static str> {
    if set.secure_link_secret.is_some() {
        if set.secure_link.is_some() || set.secure_link_md5.is_some() {
            return Err(
                "\"secure_link_secret\" cannot be mixed with \"secure_link\" and \"secure_link_md5\"",
            );
        }
        conf.secure_link = None;
        conf.secure_link_md5 = None;
    } else if conf.secure_link.is_some() || conf.secure_link_md5.is_some() {
        conf.secure_link_secret.clear();
    }
    Ok(())
}

/// `auth_basic_user_file file;` (may hold variables; a relative value is
/// taken from the configuration's folder, nginx's `conf_prefix`).
pub fn auth_basic_user_file(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let t = b.template(d.arg(0), &d.loc)?;
    set_once(&mut ls(scope).auth_basic_user_file, Some(t), &d.name)
}

/// The methods `limit_except` knows (nginx's `ngx_methods_names`).
const METHODS: [&str; 14] = [
    "GET",
    "HEAD",
    "POST",
    "PUT",
    "DELETE",
    "MKCOL",
    "COPY",
    "MOVE",
    "OPTIONS",
    "PROPFIND",
    "PROPPATCH",
    "LOCK",
    "UNLOCK",
    "PATCH",
];

/// `limit_except method ... { ... }`: the block's settings (access rules,
/// `auth_basic`, `proxy_pass`, `access_log`) serve every other method.
pub fn limit_except(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let Scope::Location(l) = scope else {
        unreachable!("the table allows limit_except in location only")
    };
    if l.limit_except.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let mut methods = Vec::new();
    for w in &d.args {
        let Some(m) = METHODS.iter().find(|m| m.eq_ignore_ascii_case(&w.value)) else {
            return Err(format!("invalid method \"{}\"", w.value));
        };
        methods.push(m.to_string());
    }
    if methods.iter().any(|m| m == "GET") && !methods.iter().any(|m| m == "HEAD") {
        methods.push("HEAD".into());
    }
    // nginx's noname location: it shares the enclosing location's name.
    let mut inner = Location::new(l.matcher.clone(), d.loc.clone());
    inner.noname = true;
    inner.lmt = true;
    b.walk(
        &mut Scope::Location(&mut inner),
        d.block.as_deref().unwrap_or_default(),
    );
    l.limit_except = Some(Box::new(LimitExcept {
        methods,
        location: inner,
    }));
    Ok(())
}

/// `auth_delay time;`
pub fn auth_delay(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let set = ls(scope);
    if set.auth_delay.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    set.auth_delay = Some(slot::msec(d, 0)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::access_model::{AccessMatch, Satisfy};
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
            Ok(l) => l.warnings.iter().map(|w| w.message.clone()).collect(),
            Err(e) => e.into_iter().map(|e| e.message).collect(),
        }
    }

    #[test]
    fn rules_of_a_level_replace_the_parent_s() {
        let h = http(
            "allow 10.0.0.0/8; deny all;\n\
             server { location /a { } location /b { allow unix:; } }",
        );
        let s = &h.servers[0];
        assert_eq!(s.locations[0].conf.access_rules.len(), 2);
        assert!(!s.locations[0].conf.access_rules[0].deny);
        assert_eq!(s.locations[1].conf.access_rules.len(), 1);
        assert_eq!(
            s.locations[1].conf.access_rules[0].matches,
            AccessMatch::Unix
        );
    }

    #[test]
    fn bad_rules_and_values_are_nginx_s_errors() {
        assert_eq!(
            errors("server { allow 10.0.0.1/33; }"),
            vec!["invalid parameter \"10.0.0.1/33\""]
        );
        assert_eq!(
            errors("server { deny 10.1.0.0/8; }"),
            vec!["low address bits of 10.1.0.0/8 are meaningless"]
        );
        assert_eq!(errors("satisfy some;"), vec!["invalid value \"some\""]);
        assert_eq!(
            errors("auth_basic a; auth_basic b;"),
            vec!["\"auth_basic\" directive is duplicate"]
        );
    }

    #[test]
    fn limit_except_serves_the_other_methods() {
        let h = http("server { location /x { allow 10.0.0.1; limit_except get { deny all; } } }");
        let l = &h.servers[0].locations[0];
        let e = l.limit_except.as_deref().unwrap();
        assert_eq!(e.methods, ["GET", "HEAD"]);
        assert!(std::ptr::eq(l.for_method("HEAD"), l));
        let other = l.for_method("POST");
        assert!(other.lmt && other.noname);
        // The block inherits from its location, then sets its own rules.
        assert_eq!(other.conf.access_rules.len(), 1);
        assert!(other.conf.access_rules[0].deny);
        assert_eq!(
            errors("server { location / { limit_except FOO { } } }"),
            vec!["invalid method \"FOO\""]
        );
        assert_eq!(
            errors("server { location / { limit_except GET { root /x; } } }"),
            vec!["\"root\" directive is not allowed here"]
        );
    }

    #[test]
    fn satisfy_and_auth_basic_inherit() {
        let h = http("satisfy any; auth_basic \"x $host\"; server { }");
        assert_eq!(h.servers[0].conf.satisfy, Satisfy::Any);
        assert!(h.servers[0].conf.auth_basic.is_some());
        assert!(h.servers[0].conf.auth_basic_user_file.is_none());
    }
}
