//! User and group identity of the process.

/// The effective user id (`geteuid()`), e.g. to pick nginx's default listen
/// port (80 as root, 8000 otherwise) and to decide whether to drop privileges.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid() has no preconditions, touches no memory and cannot fail.
    unsafe { libc::geteuid() }
}
