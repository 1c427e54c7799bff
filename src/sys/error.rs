//! [`SysError`]: a failed system call with its name, its subject and errno,
//! displayed exactly as nginx logs it.
//!
//! ```text
//! open() "/x/y" failed (2: No such file or directory)
//! getpwnam("nobody") failed (no such user)
//! setgid(101) failed (1: Operation not permitted)
//! ```

use std::ffi::CStr;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A system call that failed: which call, on which path or argument, and why.
///
/// Built by callers from a wrapper's [`io::Error`] (see [`SysResultExt`]), so
/// the hot path carries a plain errno and only the error path allocates.
#[derive(Debug)]
pub struct SysError {
    /// The call's name without parentheses, e.g. `"openat2"`; the wrappers
    /// export it as a constant beside each function.
    pub call: &'static str,
    /// The path the call worked on, printed quoted after the call.
    pub path: Option<PathBuf>,
    /// An argument printed inside the parentheses instead, for calls that take
    /// no path (`getpwnam("nobody")`, `setgid(101)`). Includes its own quotes.
    pub arg: Option<String>,
    /// The error, errno preserved in [`io::Error::raw_os_error`].
    pub source: io::Error,
}

impl SysError {
    /// A failure of `call` with neither path nor argument: `fstat() failed (...)`.
    pub fn new(call: &'static str, source: io::Error) -> Self {
        SysError {
            call,
            path: None,
            arg: None,
            source,
        }
    }

    /// A failure of `call` on `path`: `open() "/x" failed (...)`.
    pub fn with_path(call: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        SysError {
            call,
            path: Some(path.into()),
            arg: None,
            source,
        }
    }

    /// A failure of `call(arg)`: `setgid(101) failed (...)`.
    pub fn with_arg(call: &'static str, arg: impl Into<String>, source: io::Error) -> Self {
        SysError {
            call,
            path: None,
            arg: Some(arg.into()),
            source,
        }
    }

    /// errno, if the failure came from the kernel or libc.
    pub fn errno(&self) -> Option<i32> {
        self.source.raw_os_error()
    }

    /// The path, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
}

impl fmt::Display for SysError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.call, self.arg.as_deref().unwrap_or(""))?;
        if let Some(path) = &self.path {
            write!(f, " \"{}\"", path.display())?;
        }
        f.write_str(" failed (")?;
        write_cause(f, &self.source)?;
        f.write_str(")")
    }
}

impl std::error::Error for SysError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Writes `errno: text` for kernel errors, or the message for the others.
fn write_cause(f: &mut fmt::Formatter<'_>, err: &io::Error) -> fmt::Result {
    match err.raw_os_error() {
        Some(errno) => write!(f, "{errno}: {}", strerror(errno)),
        None => write!(f, "{err}"),
    }
}

/// The C library's text for `errno`, without Rust's `" (os error N)"` suffix.
pub fn strerror(errno: i32) -> String {
    let mut buf = [0 as libc::c_char; 128];
    // SAFETY: `buf` is writable for `buf.len()` bytes; the XSI strerror_r (the
    // one libc binds) writes a NUL-terminated string within that length or
    // returns an error number and leaves `buf` untouched (still zeroed).
    let ret = unsafe { libc::strerror_r(errno, buf.as_mut_ptr(), buf.len()) };
    if ret != 0 {
        return format!("Unknown error {errno}");
    }
    // SAFETY: on success `buf` holds a NUL-terminated string; the last byte is
    // never written past, and was zero to begin with.
    let text = unsafe { CStr::from_ptr(buf.as_ptr()) };
    text.to_string_lossy().into_owned()
}

/// `errno: text` as nginx prints a system error, e.g. `2: No such file or directory`.
pub fn errno_text(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => {
            let s = e.to_string();
            let text = s.split(" (os error").next().unwrap_or(&s);
            format!("{n}: {text}")
        }
        None => e.to_string(),
    }
}

/// Attaches a call name (and path or argument) to an [`io::Result`].
pub trait SysResultExt<T> {
    /// `open_read(p).on_path(file::OPEN, p)?`
    fn on_path(self, call: &'static str, path: &Path) -> Result<T, SysError>;
    /// `setgid(g).on_arg(process::SETGID, g.to_string())?`
    fn on_arg(self, call: &'static str, arg: impl Into<String>) -> Result<T, SysError>;
    /// `fstat(fd).on_call(file::FSTAT)?`
    fn on_call(self, call: &'static str) -> Result<T, SysError>;
}

impl<T> SysResultExt<T> for io::Result<T> {
    fn on_path(self, call: &'static str, path: &Path) -> Result<T, SysError> {
        self.map_err(|e| SysError::with_path(call, path, e))
    }
    fn on_arg(self, call: &'static str, arg: impl Into<String>) -> Result<T, SysError> {
        self.map_err(|e| SysError::with_arg(call, arg, e))
    }
    fn on_call(self, call: &'static str) -> Result<T, SysError> {
        self.map_err(|e| SysError::new(call, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_matches_nginx_for_a_path() {
        let e = SysError::with_path("open", "/x/y", io::Error::from_raw_os_error(libc::ENOENT));
        assert_eq!(
            e.to_string(),
            "open() \"/x/y\" failed (2: No such file or directory)"
        );
    }

    #[test]
    fn display_matches_nginx_for_eagain() {
        let e = SysError::with_path("openat2", "/p", io::Error::from_raw_os_error(libc::EAGAIN));
        assert_eq!(
            e.to_string(),
            "openat2() \"/p\" failed (11: Resource temporarily unavailable)"
        );
    }

    #[test]
    fn display_with_argument_and_without_errno() {
        let e = SysError::with_arg("setgid", "101", io::Error::from_raw_os_error(libc::EPERM));
        assert_eq!(
            e.to_string(),
            "setgid(101) failed (1: Operation not permitted)"
        );
        let e = SysError::with_arg(
            "getpwnam",
            "\"nobody\"",
            io::Error::new(io::ErrorKind::NotFound, "no such user"),
        );
        assert_eq!(e.to_string(), "getpwnam(\"nobody\") failed (no such user)");
        let e = SysError::new("fstat", io::Error::from_raw_os_error(libc::EBADF));
        assert_eq!(e.to_string(), "fstat() failed (9: Bad file descriptor)");
    }

    #[test]
    fn extension_keeps_errno() {
        let r: io::Result<()> = Err(io::Error::from_raw_os_error(libc::EACCES));
        let e = r.on_path("open", Path::new("/root/x")).unwrap_err();
        assert_eq!(e.errno(), Some(libc::EACCES));
        assert_eq!(e.path(), Some(Path::new("/root/x")));
    }
}
