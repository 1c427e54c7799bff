//! Landlock (Linux ≥ 5.13): the raw calls that confine the calling thread,
//! and the threads and processes it starts afterwards, to a set of file
//! hierarchies, each with its own rights.
//!
//! Three system calls: `landlock_create_ruleset`, `landlock_add_rule`
//! (`LANDLOCK_RULE_PATH_BENEATH`) and `landlock_restrict_self`. Only the
//! file-system rights up to ABI 5 are handled; a right a newer kernel adds
//! stays unrestricted (Landlock never restricts what a ruleset does not
//! name), and an older kernel gets the rights it knows.
//!
//! What this module must not do: choose the paths (see
//! `process::confine`).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use super::error::{SysError, SysResultExt};
use super::{c_path, cvt};

/// `LANDLOCK_ACCESS_FS_EXECUTE`.
const EXECUTE: u64 = 1 << 0;
/// `LANDLOCK_ACCESS_FS_WRITE_FILE`.
const WRITE_FILE: u64 = 1 << 1;
/// `LANDLOCK_ACCESS_FS_READ_FILE`.
const READ_FILE: u64 = 1 << 2;
/// `LANDLOCK_ACCESS_FS_READ_DIR`.
const READ_DIR: u64 = 1 << 3;
/// Every right of ABI 1 (execute … make symlink).
const ABI1_ALL: u64 = (1 << 13) - 1;
/// `LANDLOCK_ACCESS_FS_REFER` (ABI 2).
const REFER: u64 = 1 << 13;
/// `LANDLOCK_ACCESS_FS_TRUNCATE` (ABI 3).
const TRUNCATE: u64 = 1 << 14;
/// `LANDLOCK_ACCESS_FS_IOCTL_DEV` (ABI 5).
const IOCTL_DEV: u64 = 1 << 15;

/// The rights that apply to a file (the others only to directories).
const FILE_RIGHTS: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;

/// `LANDLOCK_CREATE_RULESET_VERSION`.
const CREATE_RULESET_VERSION: u32 = 1;
/// `LANDLOCK_RULE_PATH_BENEATH`.
const RULE_PATH_BENEATH: libc::c_int = 1;

/// Log name of `landlock_create_ruleset`.
pub const CREATE_RULESET: &str = "landlock_create_ruleset";
/// Log name of `landlock_add_rule`.
pub const ADD_RULE: &str = "landlock_add_rule";
/// Log name of `landlock_restrict_self`.
pub const RESTRICT_SELF: &str = "landlock_restrict_self";

/// What a hierarchy may be used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// Read files and list directories.
    Read,
    /// Everything but executing: create, write, rename, remove.
    Write,
}

/// `struct landlock_ruleset_attr` (the fields of ABI 1–4; `scoped` of ABI
/// 6 left out, so the kernel reads the shorter size).
#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
}

/// `struct landlock_path_beneath_attr` (packed in the kernel's header).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The Landlock ABI version the kernel offers; `None` when it has none
/// (too old, or disabled at boot).
pub fn abi_version() -> Option<u32> {
    // SAFETY: a null attribute with size 0 and the VERSION flag only asks
    // for the version.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    (r > 0).then_some(r as u32)
}

/// The file-system rights the kernel of `abi` knows, as nowait handles
/// them.
fn handled(abi: u32) -> u64 {
    let mut all = ABI1_ALL;
    if abi >= 2 {
        all |= REFER;
    }
    if abi >= 3 {
        all |= TRUNCATE;
    }
    if abi >= 5 {
        all |= IOCTL_DEV;
    }
    all
}

/// The rights a rule of `access` grants, within `handled`.
fn rights(access: Access, handled: u64) -> u64 {
    match access {
        Access::Read => READ_FILE | READ_DIR,
        Access::Write => handled & !EXECUTE,
    }
}

/// Confines the calling thread (and whatever it starts later) to `rules`:
/// each path and what beneath it may be done. A path that does not exist is
/// skipped. The caller must have set `PR_SET_NO_NEW_PRIVS`. Returns the ABI
/// applied, `None` when the kernel has no Landlock.
pub fn restrict_self(rules: &[(std::path::PathBuf, Access)]) -> Result<Option<u32>, SysError> {
    let Some(abi) = abi_version() else {
        return Ok(None);
    };
    let handled = handled(abi);
    let attr = RulesetAttr {
        handled_access_fs: handled,
        handled_access_net: 0,
    };
    // SAFETY: `attr` is a live struct of the size passed.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            std::mem::size_of::<RulesetAttr>(),
            0u32,
        )
    };
    let fd = cvt(fd as libc::c_int).on_call(CREATE_RULESET)?;
    // SAFETY: the call returned a new descriptor we own.
    let ruleset = unsafe { OwnedFd::from_raw_fd(fd) };
    for (path, access) in rules {
        let Some(dir) = open_path(path)? else {
            continue;
        };
        let mut allowed = rights(*access, handled);
        if !is_dir(&dir) {
            // Directory rights on a file are refused (EINVAL).
            allowed &= FILE_RIGHTS
        }
        let beneath = PathBeneathAttr {
            allowed_access: allowed,
            parent_fd: dir.as_raw_fd(),
        };
        // SAFETY: `beneath` is a live struct; both descriptors are open.
        let r = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset.as_raw_fd(),
                RULE_PATH_BENEATH,
                &beneath as *const PathBeneathAttr,
                0u32,
            )
        };
        cvt(r as libc::c_int).on_path(ADD_RULE, path)?;
    }
    // SAFETY: an open ruleset descriptor and no flags.
    let r = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) };
    cvt(r as libc::c_int).on_call(RESTRICT_SELF)?;
    Ok(Some(abi))
}

/// `open(path, O_PATH)`; `None` when it does not exist or this process
/// may not reach it (`EACCES`: a folder only root may search, as a prefix
/// made by `mktemp -d`). Such a path needs no rule: without one it stays as
/// unreachable as it already is, and requests for it fail as nginx's do
/// when its workers' user cannot reach a path (403, or 500 for a temp file).
fn open_path(path: &Path) -> Result<Option<OwnedFd>, SysError> {
    let c = c_path(path).on_path("open", path)?;
    // SAFETY: `c` is NUL-terminated and outlives the call.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        if matches!(
            e.raw_os_error(),
            Some(libc::ENOENT | libc::ENOTDIR | libc::EACCES)
        ) {
            return Ok(None);
        }
        return Err(SysError::with_path("open", path, e));
    }
    // SAFETY: a new descriptor we own.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Whether `fd` (an `O_PATH` descriptor) is a directory.
fn is_dir(fd: &OwnedFd) -> bool {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is large enough for the kernel to fill.
    let r = unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) };
    // SAFETY: filled when the call succeeded.
    r == 0 && unsafe { st.assume_init() }.st_mode & libc::S_IFMT == libc::S_IFDIR
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rights_match_the_abi() {
        assert_eq!(handled(1), ABI1_ALL);
        assert_eq!(handled(3), ABI1_ALL | REFER | TRUNCATE);
        assert_eq!(handled(7) & IOCTL_DEV, IOCTL_DEV);
        assert_eq!(rights(Access::Read, handled(7)), READ_FILE | READ_DIR);
        assert_eq!(rights(Access::Write, handled(7)) & EXECUTE, 0);
    }

    #[test]
    fn a_confined_thread_reads_only_beneath_its_rules() {
        crate::require_or_skip!(
            abi_version().is_some(),
            "this kernel has no Landlock (landlock_create_ruleset says so)"
        );
        let dir = std::env::temp_dir().join(format!("nowait-landlock-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("in")).unwrap();
        std::fs::write(dir.join("in/a"), "a").unwrap();
        std::fs::write(dir.join("out"), "b").unwrap();
        let d = dir.clone();
        // A thread of its own: the confinement stays with it.
        let got = std::thread::spawn(move || {
            crate::sys::privsep::set_no_new_privs().unwrap();
            restrict_self(&[(d.join("in"), Access::Read)]).unwrap();
            (
                std::fs::read_to_string(d.join("in/a")).ok(),
                std::fs::read_to_string(d.join("out")).map_err(|e| e.raw_os_error()),
                std::fs::write(d.join("in/new"), "x").is_ok(),
            )
        })
        .join()
        .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(got, (Some("a".into()), Err(Some(libc::EACCES)), false));
    }
}
