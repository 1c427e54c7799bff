//! `split_clients string $variable { percent value; … }`: a variable whose
//! value is chosen by hashing a string, as nginx's split_clients module.
//!
//! One deliberate difference: an entry must have exactly one value. nginx
//! ignores words after the first and, for an entry without a value, reads
//! past its arguments; nowait says `invalid number of arguments in
//! "split_clients" entry`.

use super::build::{Builder, Scope};
use super::model::SplitClients;
use super::syntax::Directive;
use super::value;
use super::vars::Builtin;

/// The built-in variables a configuration may define again (nginx's
/// `NGX_HTTP_VAR_CHANGEABLE` ones); defining another is an error.
pub const CHANGEABLE_VARIABLES: [&str; 4] = ["args", "limit_rate", "proxy_host", "proxy_port"];

/// `split_clients string $variable { percent value; ... * value; }`
pub fn split_clients(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let key = b.template(d.arg(0), &d.loc)?;
    let var = d
        .arg(1)
        .strip_prefix('$')
        .filter(|v| !v.is_empty())
        .ok_or_else(|| format!("invalid variable name \"{}\"", d.arg(1)))?
        .to_string();
    if Builtin::from_name(&var.to_ascii_lowercase()).is_some()
        && !CHANGEABLE_VARIABLES.contains(&var.to_ascii_lowercase().as_str())
    {
        return Err(format!("the duplicate \"{var}\" variable"));
    }
    // nginx keeps variable names lowercase.
    let var = var.to_ascii_lowercase();
    let mut parts = Vec::new();
    let mut sum: u32 = 0;
    for e in d.block.as_deref().unwrap_or_default() {
        if e.block.is_some() {
            b.error("unexpected \"{\"", &e.loc);
            continue;
        }
        if e.args.len() != 1 {
            b.error(
                "invalid number of arguments in \"split_clients\" entry",
                &e.loc,
            );
            continue;
        }
        // `*` is stored as 0 (it takes whatever hash reaches it) and fills
        // the total up to 100%, as in nginx.
        let (share, counts) = if e.name == "*" {
            (0, 10_000u32.saturating_sub(sum))
        } else {
            match value::percent(&e.name) {
                Some(p) if p > 0 => (p, p),
                _ => {
                    b.error(format!("invalid percent value \"{}\"", e.name), &e.loc);
                    continue;
                }
            }
        };
        sum = sum.saturating_add(counts);
        parts.push((share, e.arg(0).to_string()));
    }
    if sum > 10_000 {
        return Err("percent total is greater than 100%".into());
    }
    b.defined_vars.insert(var.clone());
    let Scope::Http(h) = scope else {
        unreachable!("the table allows split_clients in http only")
    };
    h.split_clients.push(SplitClients {
        key,
        var,
        parts,
        loc: d.loc.clone(),
    });
    Ok(())
}
