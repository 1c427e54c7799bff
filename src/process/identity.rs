//! The `user` directive: who worker and pool threads serve as.
//!
//! nginx's master process keeps root and its workers switch to `user`
//! (default `nobody`). nowait started as root leaves root to a helper
//! process and becomes `user` for the whole process (see
//! [`super::privsep`]); the per-thread hook here ([`thread_init`]) is what
//! remains for the case without a helper (`user root`), where it keeps the
//! credentials as they are.

use std::sync::Arc;

use crate::config::model::MainConf;
use crate::sys::process::{drop_thread_privileges, geteuid, getgrnam, getgrouplist, getpwnam};

/// The credentials serving threads take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The user's id.
    pub uid: u32,
    /// The group's id.
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
}

/// Resolves `user` when running as root; `Ok(None)` keeps the current
/// identity (not root, or the embedded configuration). The warning, if any,
/// is nginx's for a `user` directive that cannot apply.
pub fn resolve(main: &MainConf) -> Result<(Option<Identity>, Option<String>), String> {
    let Some((user, group)) = &main.user else {
        return Ok((None, None));
    };
    if geteuid() != 0 {
        let warn = main.user_loc.as_ref().map(|loc| {
            format!("the \"user\" directive makes sense only if the master process runs with super-user privileges, ignored in {loc}")
        });
        return Ok((None, warn));
    }
    let pw = getpwnam(user).map_err(|e| {
        // nginx: `getpwnam("x") failed in FILE:LINE` for a user that does
        // not exist (no errno to show), the errno for a lookup that failed.
        let why = match e.kind() {
            std::io::ErrorKind::NotFound => String::new(),
            _ => format!(" ({})", crate::sys::error::errno_text(&e)),
        };
        let at = main
            .user_loc
            .as_ref()
            .map(|loc| format!(" in {loc}"))
            .unwrap_or_default();
        format!("getpwnam(\"{user}\") failed{why}{at}")
    })?;
    let gid = match group {
        Some(g) => getgrnam(g).map_err(|e| {
            format!(
                "getgrnam(\"{g}\") failed ({})",
                crate::sys::error::errno_text(&e)
            )
        })?,
        // nginx uses the group named like the user; nowait falls back to
        // the user's primary group when there is none (Debian has no
        // "nobody" group, only "nogroup").
        None => getgrnam(user).unwrap_or(pw.gid),
    };
    let groups = getgrouplist(user, gid).map_err(|e| {
        format!(
            "getgrouplist(\"{user}\") failed ({})",
            crate::sys::error::errno_text(&e)
        )
    })?;
    Ok((
        Some(Identity {
            uid: pw.uid,
            gid,
            groups,
        }),
        None,
    ))
}

/// The start-of-thread hook that drops privileges (or does nothing).
pub fn thread_init(id: Option<Identity>) -> Arc<dyn Fn() + Send + Sync> {
    Arc::new(move || {
        if let Some(id) = &id {
            if let Err(e) = drop_thread_privileges(id.uid, id.gid, &id.groups) {
                // Serving as root instead is not an option.
                crate::log::write_startup_message(crate::log::Level::Emerg, format_args!("{e}"));
                std::process::abort();
            }
        }
    })
}
