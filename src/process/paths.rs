//! The directories a configuration writes to (`client_body_temp_path`,
//! `proxy_temp_path`, `proxy_cache_path`), created at start-up and on
//! reload as nginx's `ngx_create_paths` does: missing directories are made
//! with mode 0700 and given to the `user` the serving threads run as, so
//! that they can create files there and nobody else can read them. Only the
//! directory itself is made, not its parents; level subdirectories are made
//! when a file first needs them.
//!
//! nginx makes its proxy temp directory even when nothing proxies; nowait
//! makes it only when some location has `proxy_pass`, so that a static
//! server (the embedded configuration, a read-only prefix) needs nothing
//! it never writes to.

use std::collections::BTreeSet;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::config::model::{Config, Location};

use super::identity::Identity;

/// Every temp directory the configuration uses, each once.
pub fn temp_paths(c: &Config) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    if let Some(h) = &c.http {
        let proxies = h.servers.iter().any(|s| proxies(&s.locations));
        for conf in h.loc_confs() {
            out.insert(conf.client_body_temp_path.path.clone());
            if proxies {
                out.insert(conf.proxy_temp_path.path.clone());
            }
        }
    }
    out
}

/// Every `proxy_cache_path` directory, each once: made whether or not a
/// location uses the cache, as nginx makes them.
pub fn cache_paths(c: &Config) -> BTreeSet<PathBuf> {
    c.http
        .iter()
        .flat_map(|h| h.cache_paths.iter().map(|p| p.path.clone()))
        .collect()
}

/// Every `acme_issuer`'s `state_path` (nginx's ACME module), each once:
/// made as nginx-acme's paths are, and written by the issuers' threads.
pub fn acme_state_paths(c: &Config) -> BTreeSet<PathBuf> {
    c.http
        .iter()
        .flat_map(|h| h.acme.issuers.iter().filter_map(|i| i.state_path.clone()))
        .collect()
}

/// Whether any of these locations, or one nested in them, has `proxy_pass`.
fn proxies(locations: &[Location]) -> bool {
    locations
        .iter()
        .any(|l| l.proxy_pass.is_some() || l.children().any(|c| proxies(std::slice::from_ref(c))))
}

/// Creates every temp and cache directory that is missing and makes it the
/// serving user's. The error is nginx's: `mkdir() "/x" failed (13:
/// Permission denied)`.
pub fn create(c: &Config, identity: Option<&Identity>) -> Result<(), String> {
    for p in temp_paths(c)
        .union(&cache_paths(c))
        .chain(acme_state_paths(c).iter())
    {
        create_one(p, identity)?;
    }
    Ok(())
}

fn create_one(path: &Path, identity: Option<&Identity>) -> Result<(), String> {
    let fail = |call: &str, e: std::io::Error| {
        format!(
            "{call}() \"{}\" failed ({})",
            path.display(),
            crate::sys::error::errno_text(&e)
        )
    };
    match std::fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(fail("mkdir", e)),
    }
    let Some(id) = identity else {
        return Ok(());
    };
    let meta = std::fs::metadata(path).map_err(|e| fail("stat", e))?;
    use std::os::unix::fs::MetadataExt;
    if meta.uid() != id.uid {
        std::os::unix::fs::chown(path, Some(id.uid), None).map_err(|e| fail("chown", e))?;
        // nginx also makes sure the owner can write and search it.
        let mode = meta.permissions().mode() | 0o700;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .map_err(|e| fail("chmod", e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The proxy's temp directory is made only where something proxies.
    #[test]
    fn the_proxy_temp_path_only_when_proxying() {
        let names = |body: &str| -> Vec<String> {
            let text = format!("events {{}}\nhttp {{\nserver {{\n{body}\n}}\n}}\n");
            let l = crate::config::load_text(&text).unwrap();
            temp_paths(&l.config)
                .iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(names("location / { }"), ["client_body_temp"]);
        assert_eq!(
            names("location / { location /in { proxy_pass http://127.0.0.1:1; } }"),
            ["client_body_temp", "proxy_temp"]
        );
    }

    /// Each `proxy_cache_path` directory is made, once, without its levels.
    #[test]
    fn cache_directories_are_made() {
        let text = "events {}\nhttp {\nproxy_cache_path c1 levels=1:2 keys_zone=a:1m;\n\
                    proxy_cache_path /abs/c2/ keys_zone=b:1m;\nserver { }\n}\n";
        let l = crate::config::load_text(text).unwrap();
        let paths: Vec<PathBuf> = cache_paths(&l.config).into_iter().collect();
        assert_eq!(paths.len(), 2, "{paths:?}");
        assert_eq!(paths[0], PathBuf::from("/abs/c2"));
        assert!(
            paths[1].is_absolute() && paths[1].ends_with("c1"),
            "{paths:?}"
        );
    }

    #[test]
    fn a_missing_directory_is_made_private() {
        let dir = std::env::temp_dir().join(format!("nowait-paths-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("client_body_temp");
        create_one(&p, None).unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        // Existing: fine.
        create_one(&p, None).unwrap();
        // A parent that does not exist: nginx's message.
        let e = create_one(&dir.join("no/such"), None).unwrap_err();
        assert!(e.starts_with("mkdir() \""), "{e}");
        assert!(e.ends_with("failed (2: No such file or directory)"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
