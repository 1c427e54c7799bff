//! Landlock for the serving process: what the configuration names, and
//! nothing else, as seen at start-up.
//!
//! Read-only: every `root` and `alias` (up to its first variable),
//! `auth_basic_user_file`, and what the C library reads to resolve names
//! and times (`/etc/hosts`, `/etc/resolv.conf`, `/etc/nsswitch.conf`,
//! `/etc/localtime`, the zoneinfo and library folders). Read-write: the
//! temp paths (`client_body_temp_path`, `proxy_temp_path`), every
//! `proxy_cache_path`, the folders of access logs named with variables,
//! and `proxy_store` targets (the location's root for `proxy_store on`).
//! Logs named without variables are opened by the privileged helper and
//! need no rule; neither does the configuration, which a reload gets from
//! the helper.
//!
//! Landlock only tightens: a reload cannot widen the set. A reload whose
//! configuration names a path outside it is applied, with a warning for
//! each such path (requests for it fail as a file the user may not read);
//! serving it needs a restart. See docs/security.md.
//!
//! What this module must not do: make a system call (see
//! `crate::sys::landlock`).

use std::path::{Path, PathBuf};

use crate::config::model::{AccessLogs, AccessTarget, Config, Root};
use crate::config::template::{Part, Template};
use crate::sys::landlock::Access;

/// What the C library reads at run time (name resolution for upstreams,
/// time zones, the NSS modules it loads).
const SYSTEM_READ: &[&str] = &[
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/localtime",
    "/etc/services",
    "/etc/protocols",
    "/usr/share/zoneinfo",
    "/lib",
    "/lib64",
    "/usr/lib",
    "/usr/lib64",
];

/// The folder a template's fixed beginning names: `/srv/$host/www` →
/// `/srv`; `/srv/site` → `/srv/site`; a template that starts with a
/// variable → `/`. A relative one is taken from `prefix`.
fn fixed_dir(t: &Template, prefix: &Path) -> PathBuf {
    let mut lit = String::new();
    let mut whole = true;
    for p in &t.parts {
        match p {
            Part::Literal(s) => lit.push_str(s),
            Part::Var(_) => {
                whole = false;
                break;
            }
        }
    }
    if !whole {
        lit.truncate(lit.rfind('/').map_or(0, |i| i + 1));
    }
    let p = PathBuf::from(if lit.is_empty() && !whole { "/" } else { &lit });
    let p = if p.is_absolute() { p } else { prefix.join(p) };
    if whole { p } else { p.components().collect() }
}

/// Every rule the configuration asks for, each path once (the widest
/// access wins).
pub fn rules(c: &Config) -> Vec<(PathBuf, Access)> {
    let mut out: std::collections::BTreeMap<PathBuf, Access> = SYSTEM_READ
        .iter()
        .map(|p| (PathBuf::from(p), Access::Read))
        .collect();
    let mut add = |p: PathBuf, a: Access| {
        let e = out.entry(p).or_insert(a);
        *e = (*e).max(a);
    };
    add(
        PathBuf::from(format!("/proc/{}", std::process::id())),
        Access::Read,
    );
    // Test builds only: where fault injection leaves its marks.
    if let Some(d) = crate::io::fault::marks_dir() {
        add(d, Access::Write);
    }
    for p in super::paths::temp_paths(c)
        .into_iter()
        .chain(super::paths::cache_paths(c))
        .chain(super::paths::acme_state_paths(c))
    {
        add(p, Access::Write);
    }
    // Certificates, keys, ticket keys: a reload without the privileged
    // helper reads them again.
    for (p, _) in &c.data_files {
        add(p.clone(), Access::Read);
    }
    if let Some(h) = &c.http {
        // Certificates named with variables are read per handshake (the
        // servers') or per request (`proxy_ssl_certificate`): the
        // directory before the first variable.
        let per_handshake = h
            .servers
            .iter()
            .filter_map(|s| s.tls.as_ref())
            .flat_map(|t| t.dynamic_certs.iter())
            .chain(
                h.upstream_tls
                    .iter()
                    .filter_map(|t| t.dynamic_certificate.as_ref()),
            )
            .flat_map(|(cert, key)| [cert, key]);
        for n in per_handshake {
            if !n.name.to_string().starts_with("data:") {
                add(fixed_dir(&n.name, c.conf_prefix()), Access::Read);
            }
        }
        for conf in h.loc_confs() {
            let root = match &conf.root {
                Root::Root(t) | Root::Alias(t) => fixed_dir(t, &c.prefix),
            };
            let store = &conf.proxy_store;
            use crate::config::cache_model::ProxyStore;
            match store {
                ProxyStore::Off => add(root, Access::Read),
                ProxyStore::On => add(root, Access::Write),
                ProxyStore::Path(t) => {
                    add(root, Access::Read);
                    add(fixed_dir(t, &c.prefix), Access::Write);
                }
            }
            if let Some(t) = &conf.auth_basic_user_file {
                add(fixed_dir(t, &c.prefix), Access::Read);
            }
            if let AccessLogs::Logs(list) = &conf.access_log {
                for l in list {
                    if let AccessTarget::Variable(t) = &l.target {
                        add(fixed_dir(t, &c.prefix), Access::Write);
                    }
                }
            }
        }
    }
    out.into_iter().collect()
}

/// The paths `next` names that `applied` does not cover with the access
/// it needs: what a reload cannot serve until a restart.
pub fn uncovered(applied: &[(PathBuf, Access)], next: &Config) -> Vec<PathBuf> {
    rules(next)
        .into_iter()
        .filter(|(p, a)| {
            !SYSTEM_READ.iter().any(|s| Path::new(s) == p)
                && !p.starts_with("/proc")
                && !covers(applied, p, *a)
        })
        .map(|(p, _)| p)
        .collect()
}

/// Whether a rule of `applied` grants `access` beneath `path`.
fn covers(applied: &[(PathBuf, Access)], path: &Path, access: Access) -> bool {
    applied
        .iter()
        .any(|(q, b)| path.starts_with(q) && *b >= access)
}

/// The rules applied at start-up, for [`uncovered_now`].
static APPLIED: std::sync::OnceLock<Vec<(PathBuf, Access)>> = std::sync::OnceLock::new();

/// Confines this process (call it while only this thread runs) to
/// [`rules`]`(c)`: the ABI applied, `None` without Landlock.
pub fn apply(c: &Config) -> Result<Option<u32>, String> {
    let rules = rules(c);
    let abi = crate::sys::landlock::restrict_self(&rules).map_err(|e| e.to_string())?;
    if abi.is_some() {
        let _ = APPLIED.set(rules);
    }
    Ok(abi)
}

/// [`uncovered`] against the rules [`apply`] applied; empty when it did
/// not.
pub fn uncovered_now(next: &Config) -> Vec<PathBuf> {
    APPLIED
        .get()
        .map(|applied| uncovered(applied, next))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_confines_to_its_fixed_folder() {
        let p = Path::new("/prefix");
        let t = |s: &str| Template::parse(s).unwrap();
        assert_eq!(fixed_dir(&t("/srv/site"), p), PathBuf::from("/srv/site"));
        assert_eq!(fixed_dir(&t("/srv/$host/www"), p), PathBuf::from("/srv"));
        assert_eq!(fixed_dir(&t("/srv/a$host"), p), PathBuf::from("/srv"));
        assert_eq!(fixed_dir(&t("$document_root/x"), p), PathBuf::from("/"));
        assert_eq!(fixed_dir(&t("html"), p), PathBuf::from("/prefix/html"));
        assert_eq!(
            fixed_dir(&t("logs/$host.log"), p),
            PathBuf::from("/prefix/logs")
        );
    }

    #[test]
    fn certificates_named_with_variables_are_readable_below_their_fixed_folder() {
        let text = "events {} http { server { listen 127.0.0.1:18443 ssl;
            ssl_certificate /srv/certs/$ssl_server_name.crt;
            ssl_certificate_key keys/$ssl_server_name.key; } }";
        let loaded = crate::config::load_text(text).expect("a configuration");
        let rules = rules(&loaded.config);
        let prefix = &loaded.config.prefix;
        assert!(
            rules.contains(&(PathBuf::from("/srv/certs"), Access::Read)),
            "{rules:?}"
        );
        assert!(
            rules.contains(&(prefix.join("keys"), Access::Read)),
            "{rules:?}"
        );
    }

    #[test]
    fn upstream_certificates_named_with_variables_are_readable_too() {
        let text = "events {} http { server { listen 127.0.0.1:18080;
            location / { proxy_pass https://127.0.0.1:18443;
            proxy_ssl_certificate /srv/up/$arg_cert.crt;
            proxy_ssl_certificate_key /srv/upkeys/$arg_cert.key; } } }";
        let loaded = crate::config::load_text(text).expect("a configuration");
        let rules = rules(&loaded.config);
        for dir in ["/srv/up", "/srv/upkeys"] {
            assert!(
                rules.contains(&(PathBuf::from(dir), Access::Read)),
                "{rules:?}"
            );
        }
    }

    #[test]
    fn a_rule_covers_what_is_beneath_it_with_no_more_access() {
        let applied = vec![
            (PathBuf::from("/srv"), Access::Read),
            (PathBuf::from("/var/cache/x"), Access::Write),
        ];
        assert!(covers(&applied, Path::new("/srv/site"), Access::Read));
        assert!(!covers(&applied, Path::new("/srv/site"), Access::Write));
        assert!(!covers(&applied, Path::new("/srv2"), Access::Read));
        assert!(covers(&applied, Path::new("/var/cache/x/1"), Access::Read));
    }
}
