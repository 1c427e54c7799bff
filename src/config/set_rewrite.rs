//! Setters for the rewrite module (`ngx_http_rewrite_module.c`): `rewrite`,
//! `return`, `break`, `if`, `set`, `rewrite_log` and
//! `uninitialized_variable_warn`, with nginx's checks and messages. Each
//! instruction is appended to the script of the scope it is written in
//! (server, location, or an `if` block); see [`super::script`].

use std::sync::Arc;

use super::build::{Builder, Scope, set_flag};
use super::model::{
    Condition, FileTest, If, Location, Return, Rewrite, RewriteFlag, RewriteOp, SetTarget, SetVar,
};
use super::syntax::Directive;
use super::template::{Part, Template, Var};
use super::value;
use super::vars::Builtin;

/// Statuses whose `return` argument is a URL.
pub const REDIRECT_CODES: [u16; 5] = [301, 302, 303, 307, 308];

/// The largest status `return` accepts.
const MAX_RETURN_CODE: u64 = 999;

/// Prefixes that make a `rewrite` or a one-argument `return` a redirect.
const REDIRECT_PREFIXES: [&str; 3] = ["http://", "https://", "$scheme"];

/// What `set` may assign to among the built-in variables (nginx's
/// `NGX_HTTP_VAR_CHANGEABLE` ones); any other is `the duplicate "x"
/// variable`.
fn changeable(b: Builtin) -> Option<SetTarget> {
    match b {
        Builtin::Args => Some(SetTarget::Args),
        Builtin::LimitRate => Some(SetTarget::LimitRate),
        Builtin::ProxyHost | Builtin::ProxyPort => Some(SetTarget::Named(Arc::from(b.name()))),
        _ => None,
    }
}

fn script<'s>(scope: &'s mut Scope<'_>) -> &'s mut Vec<RewriteOp> {
    scope
        .script()
        .expect("the table allows rewrite instructions in server, location and if only")
}

/// `return code [text] | code URL | URL;`
pub fn return_(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let first = d.arg(0);
    let ret = match value::number(first) {
        Some(code) if code <= MAX_RETURN_CODE => Return {
            code: code as u16,
            text: match d.args.get(1) {
                Some(w) => Some(b.template(&w.value, &d.loc)?),
                None => None,
            },
        },
        _ if d.args.len() == 1 && REDIRECT_PREFIXES.iter().any(|p| first.starts_with(p)) => {
            Return {
                code: 302,
                text: Some(b.template(first, &d.loc)?),
            }
        }
        _ => return Err(format!("invalid return code \"{first}\"")),
    };
    script(scope).push(RewriteOp::Return(ret));
    Ok(())
}

/// `break;`
pub fn break_(_: &mut Builder, scope: &mut Scope<'_>, _: &Directive) -> Result<(), String> {
    script(scope).push(RewriteOp::Break);
    Ok(())
}

/// `rewrite regex replacement [last | break | redirect | permanent];`
pub fn rewrite(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let mut replacement = d.arg(1);
    if replacement.is_empty() {
        return Err("empty replacement".into());
    }
    let pattern = d.arg(0);
    let regex = super::regex::compile(pattern, false)?;
    b.define_captures(&regex);
    // The last "?" drops the original arguments.
    let add_args = match replacement.strip_suffix('?') {
        Some(rest) => {
            replacement = rest;
            false
        }
        None => true,
    };
    let mut flag = if REDIRECT_PREFIXES.iter().any(|p| replacement.starts_with(p)) {
        RewriteFlag::Redirect(302)
    } else {
        RewriteFlag::Continue
    };
    if let Some(w) = d.args.get(2) {
        flag = match (w.value.as_str(), flag) {
            ("redirect", _) => RewriteFlag::Redirect(302),
            ("permanent", _) => RewriteFlag::Redirect(301),
            // A redirect stays one whatever else the flag says.
            ("last" | "break", RewriteFlag::Redirect(code)) => RewriteFlag::Redirect(code),
            ("last", _) => RewriteFlag::Last,
            ("break", _) => RewriteFlag::Break,
            (other, _) => return Err(format!("invalid parameter \"{other}\"")),
        };
    }
    let whole = b.template(replacement, &d.loc)?;
    let args_in_text = whole
        .parts
        .iter()
        .any(|p| matches!(p, Part::Literal(s) if s.contains('?')));
    let (uri, args) = match flag {
        RewriteFlag::Redirect(_) => (whole, None),
        _ => split_args(whole),
    };
    script(scope).push(RewriteOp::Rewrite(Box::new(Rewrite {
        regex,
        pattern: pattern.to_string(),
        uri,
        args,
        flag,
        add_args,
        args_in_text,
    })));
    Ok(())
}

/// Splits an internal rewrite's replacement at its first literal `?`: the
/// URI before it, the arguments after it (nginx's `sc.compile_args`).
fn split_args(t: Template) -> (Template, Option<Template>) {
    let Some(at) = t
        .parts
        .iter()
        .position(|p| matches!(p, Part::Literal(s) if s.contains('?')))
    else {
        return (t, None);
    };
    let mut uri = t.parts;
    let mut args = uri.split_off(at);
    if let Part::Literal(s) = args.remove(0) {
        let (before, after) = s.split_once('?').unwrap_or((&s, ""));
        if !before.is_empty() {
            uri.push(Part::Literal(before.to_string()));
        }
        if !after.is_empty() {
            args.insert(0, Part::Literal(after.to_string()));
        }
    }
    let source = t.source;
    let (uri_source, args_source) = source.split_once('?').unwrap_or((&source, ""));
    (
        Template {
            parts: uri,
            source: uri_source.to_string(),
        },
        Some(Template {
            parts: args,
            source: args_source.to_string(),
        }),
    )
}

/// `set $variable value;` (`ngx_http_rewrite_set`).
pub fn set(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let written = d.arg(0);
    let Some(name) = written.strip_prefix('$') else {
        return Err(format!("invalid variable name \"{written}\""));
    };
    if name.is_empty() {
        return Err("invalid variable name \"$\"".into());
    }
    let written = name;
    let name = name.to_ascii_lowercase();
    let var = Var::from_name(&name);
    if matches!(var, Var::Builtin(_) | Var::Family(..)) {
        b.sets_builtins = true;
    }
    let target = match var {
        Var::Builtin(builtin) => match changeable(builtin) {
            Some(target) => target,
            None => return Err(format!("the duplicate \"{written}\" variable")),
        },
        // A family member (`$http_x`, `$arg_x` …) or a name of the
        // configuration's own: stored per request.
        Var::Family(..) | Var::Capture(_) | Var::Named(_) => {
            b.define(&name);
            b.set_vars.insert(name.clone());
            SetTarget::Named(Arc::from(name.as_str()))
        }
    };
    let value = b.template(d.arg(1), &d.loc)?;
    script(scope).push(RewriteOp::Set(SetVar { target, value }));
    Ok(())
}

/// `rewrite_log on | off;`
pub fn rewrite_log(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let set = scope
        .loc_set()
        .expect("the table allows rewrite_log where settings are inherited");
    set_flag(&mut set.rewrite_log, d)
}

/// `uninitialized_variable_warn on | off;`
pub fn uninitialized_variable_warn(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = scope
        .loc_set()
        .expect("the table allows uninitialized_variable_warn where settings are inherited");
    set_flag(&mut set.uninitialized_variable_warn, d)
}

/// `if (condition) { ... }`
pub fn if_(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let cond = condition(b, d)?;
    let body = d.block.as_deref().unwrap_or_default();
    let op = match scope {
        Scope::Server(_) => {
            let mut script = Vec::new();
            let mut settings = Default::default();
            b.walk(&mut Scope::ServerIf(&mut script, &mut settings), body);
            If {
                cond,
                script,
                location: None,
            }
        }
        Scope::Location(parent) => {
            // nginx's noname location: it shares the enclosing location's
            // name (for `alias` and `proxy_pass`) and inherits its settings.
            let mut inner = Location::new(parent.matcher.clone(), d.loc.clone());
            inner.noname = true;
            b.walk(&mut Scope::Location(&mut inner), body);
            If {
                cond,
                script: std::mem::take(&mut inner.rewrite),
                location: Some(inner),
            }
        }
        _ => unreachable!("the table allows if in server and location only"),
    };
    script(scope).push(RewriteOp::If(Box::new(op)));
    Ok(())
}

/// The condition of an `if`, read as `ngx_http_rewrite_if_condition` reads
/// its words (the parentheses may stand alone or touch the first and last
/// words).
fn condition(b: &mut Builder, d: &Directive) -> Result<Condition, String> {
    // nginx's indexes: value[0] is the directive's name.
    let mut value: Vec<String> = std::iter::once(d.name.clone())
        .chain(d.args.iter().map(|w| w.value.clone()))
        .collect();
    let invalid = |w: &str| format!("invalid condition \"{w}\"");
    let mut last = value.len() - 1;
    if !value[1].starts_with('(') {
        return Err(invalid(&value[1]));
    }
    let cur = if value[1].len() == 1 {
        2
    } else {
        value[1].remove(0);
        1
    };
    if !value[last].ends_with(')') {
        return Err(invalid(&value[last]));
    }
    if value[last].len() == 1 {
        last -= 1;
    } else {
        value[last].pop();
    }
    let Some(word) = value.get(cur) else {
        return Err(invalid(""));
    };
    if word.len() > 1 && word.starts_with('$') {
        if cur != last && cur + 2 != last {
            return Err(invalid(word));
        }
        let var = variable(&word[1..]);
        let cond = if cur == last {
            Condition::Var(var.clone())
        } else {
            let op = value[cur + 1].as_str();
            let operand = value[last].as_str();
            match op {
                "=" | "!=" => Condition::Compare {
                    var: var.clone(),
                    value: b.template(operand, &d.loc)?,
                    equal: op == "=",
                },
                "~" | "~*" | "!~" | "!~*" => {
                    let regex = super::regex::compile(operand, op.ends_with('*'))?;
                    b.define_captures(&regex);
                    Condition::Match {
                        var: var.clone(),
                        regex,
                        pattern: operand.to_string(),
                        negative: op.starts_with('!'),
                    }
                }
                _ => return Err(format!("unexpected \"{op}\" in condition")),
            }
        };
        // Checked once every definition is known, as any other use (only
        // once the condition is whole: nginx stops at its first error).
        if let Var::Named(n) = &var {
            b.var_uses.push((n.to_string(), d.loc.clone()));
        }
        return Ok(cond);
    }
    let test = match word.as_bytes() {
        [b'-', t] => Some((*t, false)),
        [b'!', b'-', t] => Some((*t, true)),
        _ => None,
    };
    let Some((t, negative)) = test else {
        return Err(invalid(word));
    };
    if cur + 1 != last {
        return Err(invalid(word));
    }
    let test = match t {
        b'f' => FileTest::Plain,
        b'd' => FileTest::Dir,
        b'e' => FileTest::Exists,
        b'x' => FileTest::Exec,
        _ => return Err(invalid(word)),
    };
    Ok(Condition::File {
        path: b.template(&value[last], &d.loc)?,
        test,
        negative,
    })
}

/// The variable of a condition (`ngx_http_rewrite_variable`): any name.
/// `$1` is a name here, not a capture, as in nginx (which refuses it as
/// unknown).
fn variable(name: &str) -> Var {
    if name.bytes().all(|c| c.is_ascii_digit()) {
        Var::Named(Arc::from(name))
    } else {
        Var::from_name(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load_text;
    use crate::config::model::{Handler, HttpConf, LocationMatch};

    fn http(server_body: &str) -> HttpConf {
        let text =
            format!("events {{}}\nhttp {{ server {{ listen 127.0.0.1:1; {server_body} }} }}\n");
        match load_text(&text) {
            Ok(l) => l.config.http.unwrap(),
            Err(e) => panic!("{e:?}"),
        }
    }

    fn error(server_body: &str) -> String {
        let text =
            format!("events {{}}\nhttp {{ server {{ listen 127.0.0.1:1; {server_body} }} }}\n");
        match load_text(&text) {
            Ok(_) => panic!("accepted: {server_body}"),
            Err(e) => e[0].to_string(),
        }
    }

    fn rewrite(op: &RewriteOp) -> &Rewrite {
        match op {
            RewriteOp::Rewrite(r) => r,
            other => panic!("not a rewrite: {other:?}"),
        }
    }

    #[test]
    fn replacement_split_at_the_first_literal_question_mark() {
        let h = http("rewrite ^(.*)$ /a$1?x=$1&y=? last; rewrite ^ /b?c redirect; rewrite ^ /c?;");
        let script = &h.servers[0].rewrite;
        let r = rewrite(&script[0]);
        assert_eq!(r.uri.source, "/a$1");
        assert_eq!(r.args.as_ref().map(|a| a.source.as_str()), Some("x=$1&y="));
        assert_eq!(r.flag, RewriteFlag::Last);
        assert!(!r.add_args);
        // A redirect keeps its `?` in the text and joins old arguments with `&`.
        let r = rewrite(&script[1]);
        assert_eq!(r.uri.source, "/b?c");
        assert!(r.args.is_none() && r.args_in_text && r.add_args);
        assert_eq!(r.flag, RewriteFlag::Redirect(302));
        let r = rewrite(&script[2]);
        assert_eq!(r.uri.source, "/c");
        assert!(r.args.is_none() && !r.add_args && !r.args_in_text);
        assert_eq!(r.flag, RewriteFlag::Continue);
    }

    #[test]
    fn redirect_prefixes_win_over_last_and_break() {
        let h = http(
            "rewrite ^ http://x/ last; rewrite ^ $scheme://x/ break; rewrite ^ https://x/ permanent;",
        );
        let flags: Vec<RewriteFlag> = h.servers[0]
            .rewrite
            .iter()
            .map(|op| rewrite(op).flag)
            .collect();
        assert_eq!(
            flags,
            [
                RewriteFlag::Redirect(302),
                RewriteFlag::Redirect(302),
                RewriteFlag::Redirect(301)
            ]
        );
    }

    #[test]
    fn conditions_read_as_nginx() {
        let h = http(
            "location / { set $a 1; if ($a) { } if ( $a = \"b c\" ) { } if ($a !~* ^x) { } if (!-d /tmp) { } }",
        );
        let conds: Vec<&Condition> = h.servers[0].locations[0]
            .rewrite
            .iter()
            .filter_map(|op| match op {
                RewriteOp::If(i) => Some(&i.cond),
                _ => None,
            })
            .collect();
        assert!(matches!(conds[0], Condition::Var(Var::Named(n)) if &**n == "a"));
        assert!(
            matches!(conds[1], Condition::Compare { value, equal: true, .. } if value.source == "b c")
        );
        assert!(matches!(
            conds[2],
            Condition::Match { negative: true, regex, .. } if regex.is_match("XY")
        ));
        assert!(matches!(
            conds[3],
            Condition::File {
                test: FileTest::Dir,
                negative: true,
                ..
            }
        ));
    }

    #[test]
    fn if_blocks_own_a_location_merged_from_theirs() {
        let h = http(
            "location /a/ { root /r; sendfile on; nowait_status; if ($arg_x) { root /i; return 204; } }",
        );
        let outer = &h.servers[0].locations[0];
        let RewriteOp::If(i) = &outer.rewrite[0] else {
            panic!("an if")
        };
        let inner = i.location.as_ref().expect("a location");
        assert!(inner.noname);
        assert!(matches!(&inner.matcher, LocationMatch::Prefix(p) if p == "/a/"));
        assert!(inner.conf.sendfile, "inherited");
        assert!(
            matches!(&inner.conf.root, crate::config::model::Root::Root(t) if t.source == "/i")
        );
        // The block's instructions are the `if`'s script, not its location's.
        assert!(matches!(i.script[..], [RewriteOp::Return(_)]));
        assert!(inner.rewrite.is_empty());
        // No content directive of its own: the enclosing location's handler.
        assert_eq!(inner.handler, Handler::Status);
    }

    #[test]
    fn set_targets() {
        let h =
            http("set $args a; set $LIMIT_RATE 1k; set $http_x 1; set $Mine 2; set $proxy_host p;");
        let targets: Vec<&SetTarget> = h.servers[0]
            .rewrite
            .iter()
            .map(|op| match op {
                RewriteOp::Set(s) => &s.target,
                _ => panic!("a set"),
            })
            .collect();
        assert_eq!(*targets[0], SetTarget::Args);
        assert_eq!(*targets[1], SetTarget::LimitRate);
        assert_eq!(*targets[2], SetTarget::Named(Arc::from("http_x")));
        assert_eq!(*targets[3], SetTarget::Named(Arc::from("mine")));
        assert_eq!(*targets[4], SetTarget::Named(Arc::from("proxy_host")));
        assert!(h.sets_builtins);
        assert!(error("set $request_uri x;").contains("the duplicate \"request_uri\" variable"));
    }

    #[test]
    fn server_if_holds_instructions_only() {
        let h = http("if ($arg_a) { set $x 1; rewrite ^ /y last; }");
        let RewriteOp::If(i) = &h.servers[0].rewrite[0] else {
            panic!("an if")
        };
        assert!(i.location.is_none());
        assert_eq!(i.script.len(), 2);
        assert!(
            error("if ($arg_a) { sendfile on; }")
                .contains("\"sendfile\" directive is not allowed here")
        );
    }
}
