//! The process's environment, replaced while one thread runs (`env`).
//!
//! Changing the environment while another thread may read it (`getenv` in
//! the C library: `localtime_r`'s time zone, name resolution) is a data
//! race, so [`replace`] refuses unless the calling thread is the process's
//! only one.

use std::ffi::OsString;
use std::io;
use std::path::Path;

use super::error::SysError;

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
/// made, and `localtime_r` does not read it again). Called before the
/// process starts a thread; fails, changing nothing, when `/proc` shows
/// another thread running (without `/proc`, the caller's word is taken).
pub fn replace(vars: &[(OsString, OsString)]) -> Result<(), SysError> {
    let threads = match std::fs::read_dir(TASKS) {
        Ok(tasks) => tasks.count(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => 1,
        Err(e) => {
            return Err(SysError::with_path(
                OPENDIR,
                Path::new(TASKS).to_path_buf(),
                e,
            ));
        }
    };
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
        // SAFETY: this thread is the process's only one (counted above, or
        // the caller's contract without `/proc`), and only it could start
        // another, so nothing reads or writes the environment meanwhile;
        // `vars_os` gave a name without `=` or NUL.
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
