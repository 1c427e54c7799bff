//! The process's environment, replaced while one thread runs (`env`).
//!
//! Changing the environment while another thread may read it (`getenv` in
//! the C library: `localtime_r`'s time zone, name resolution) is a data
//! race, so [`replace`] refuses unless the calling thread is the process's
//! only one.

use std::ffi::OsString;
use std::io;
use std::path::Path;

use super::error::{SysError, SysResultExt};

/// Log name of [`replace`].
pub const SETENV: &str = "setenv";
/// Log name of the listing of the process's threads.
pub const OPENDIR: &str = "opendir";

/// Where the process's threads are listed.
const TASKS: &str = "/proc/self/task";

unsafe extern "C" {
    /// `tzset(3)`: the C library reads its time zone from `TZ`.
    fn tzset();
}

/// Makes the environment exactly `vars` (names are not repeated, none is
/// empty or holds `=` or NUL, no value holds NUL), once the C library has
/// read the time zone from the environment the process started with
/// (`tzset`): the local times of the logs stay in that zone, as nginx's
/// do (its master reads the zone before its workers' environment is
/// made, and `localtime_r` does not read it again). Fails, changing
/// nothing, when another thread runs.
pub fn replace(vars: &[(OsString, OsString)]) -> Result<(), SysError> {
    let threads = std::fs::read_dir(TASKS)
        .on_path(OPENDIR, Path::new(TASKS))?
        .count();
    if threads != 1 {
        return Err(SysError::new(
            SETENV,
            io::Error::other(format!("{threads} threads run, the environment needs one")),
        ));
    }
    // SAFETY: `tzset` takes no argument and only reads the environment,
    // which no other thread touches (see below).
    unsafe { tzset() };
    let inherited: Vec<OsString> = std::env::vars_os().map(|(name, _)| name).collect();
    for name in inherited {
        // SAFETY: this thread is the process's only one (counted above),
        // and only it could start another, so nothing reads or writes the
        // environment meanwhile; `vars_os` gave a name without `=` or NUL.
        unsafe { std::env::remove_var(&name) };
    }
    for (name, value) in vars {
        // SAFETY: as above; the caller gives names and values `set_var`
        // takes (see the function's contract).
        unsafe { std::env::set_var(name, value) };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_while_another_thread_runs() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || rx.recv());
        let before: Vec<_> = std::env::vars_os().collect();
        let e = replace(&[]).expect_err("two threads run");
        assert_eq!(e.call, SETENV);
        assert!(e.to_string().contains("threads run"), "{e}");
        assert_eq!(
            std::env::vars_os().collect::<Vec<_>>(),
            before,
            "nothing changed"
        );
        drop(tx);
        let _ = other.join();
    }
}
