//! The temporary-file directories a configuration names
//! (`client_body_temp_path`, later `proxy_temp_path`), created at start-up
//! and on reload as nginx's `ngx_create_paths` does: missing directories
//! are made with mode 0700 and given to the `user` the serving threads run
//! as, so that they can create files there and nobody else can read them.

use std::collections::BTreeSet;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::config::model::Config;

use super::identity::Identity;

/// Every temp directory the configuration uses, each once.
pub fn temp_paths(c: &Config) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    if let Some(h) = &c.http {
        for conf in h.loc_confs() {
            out.insert(conf.client_body_temp_path.path.clone());
        }
    }
    out
}

/// Creates every temp directory that is missing and makes it the serving
/// user's. The error is nginx's: `mkdir() "/x" failed (13: Permission denied)`.
pub fn create(c: &Config, identity: Option<&Identity>) -> Result<(), String> {
    for p in temp_paths(c) {
        create_one(&p, identity)?;
    }
    Ok(())
}

fn create_one(path: &Path, identity: Option<&Identity>) -> Result<(), String> {
    let fail = |call: &str, e: std::io::Error| {
        format!(
            "{call}() \"{}\" failed ({})",
            path.display(),
            crate::config::errno_text(&e)
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
