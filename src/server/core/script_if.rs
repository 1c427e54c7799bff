//! The conditions of `if`, evaluated as nginx's script codes do
//! (`ngx_http_script_var_code`, `…_equal_code`, `…_not_equal_code`,
//! `…_regex_start_code` with `test`, `…_file_code`).
//!
//! Everything but a file test is decided here, at once. A file test only
//! says which path to look at ([`Eval::Stat`]); the caller asks the file
//! layer (which answers on the loop when it can and through the pool when
//! it cannot) and hands the answer to [`file_truth`]. This module never
//! touches the file system itself.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::config::model::{Condition, FileTest};
use crate::http::status::Status;
use crate::io::file::FileError;
use crate::log::Level;
use crate::sys::error::SysError;
use crate::sys::file::{FileKind, FileMeta};

use crate::server::core::phases::OVERFLOW_STATUS;
use crate::server::core::reply::Reply;
use crate::server::core::request::Req;

/// What evaluating a condition gave.
pub enum Eval {
    /// Its truth.
    Known(bool),
    /// A file test: stat this path, then ask [`file_truth`].
    Stat(PathBuf),
}

/// Evaluates `cond` for `r`. `log`: `rewrite_log` is on (a regular
/// expression's match or miss is logged at `notice`).
pub fn eval(r: &Req<'_>, cond: &Condition, log: bool) -> Eval {
    let value = |v| r.var(v, None).map(|c| c.into_owned()).unwrap_or_default();
    Eval::Known(match cond {
        Condition::Var(v) => {
            let v = value(v);
            !v.is_empty() && v != b"0"
        }
        Condition::Compare {
            var,
            value: with,
            equal,
        } => (value(var) == r.expand(with)) == *equal,
        Condition::Match {
            var,
            regex,
            pattern,
            negative,
        } => {
            let subject = value(var);
            let subject = String::from_utf8_lossy(&subject);
            let matched = r.regex_exec(regex, &subject);
            if !matched {
                // nginx's `r->ncaptures = 0`: a failed test forgets the captures.
                *r.captures.borrow_mut() = None;
            }
            if log {
                log_match(r, pattern, &subject, matched);
            }
            matched != *negative
        }
        Condition::File { path, .. } => {
            let p = r.expand(path);
            return Eval::Stat(PathBuf::from(std::ffi::OsStr::from_bytes(&p)));
        }
    })
}

/// `rewrite_log`'s line for a regular expression tried on `subject`.
pub fn log_match(r: &Req<'_>, pattern: &str, subject: &str, matched: bool) {
    let how = if matched { "matches" } else { "does not match" };
    r.error_log().log(
        Level::Notice,
        Some(r.conn_no),
        format_args!("\"{pattern}\" {how} \"{subject}\"{}", r.log_context()),
    );
}

/// The truth of a file test given what `stat()` of `path` answered. A
/// failure other than "no such file" is logged at `crit` as nginx does and
/// counts as a missing file; a full pool queue is the reply to send.
pub fn file_truth(
    r: &Req<'_>,
    test: FileTest,
    negative: bool,
    path: &Path,
    stat: Result<FileMeta, FileError>,
) -> Result<bool, Box<Reply>> {
    let meta = match stat {
        Ok(m) => m,
        Err(FileError::Overflow(o)) => {
            r.site
                .error_log
                .log(Level::Error, Some(r.conn_no), format_args!("{o}"));
            return Err(Box::new(Reply::special(OVERFLOW_STATUS)));
        }
        Err(e @ FileError::Lost(..)) => {
            r.error_log().log(
                Level::Alert,
                Some(r.conn_no),
                format_args!("{e}{}", r.log_context()),
            );
            return Err(Box::new(Reply::special(Status::INTERNAL_SERVER_ERROR)));
        }
        Err(FileError::Sys(e)) => {
            let errno = e.errno();
            if !matches!(
                errno,
                Some(libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG)
            ) {
                let source = match errno {
                    Some(n) => std::io::Error::from_raw_os_error(n),
                    None => e.source,
                };
                let why = SysError::with_path(crate::sys::file::STAT, path, source);
                r.error_log().log(
                    Level::Crit,
                    Some(r.conn_no),
                    format_args!("{why}{}", r.log_context()),
                );
            }
            return Ok(negative);
        }
    };
    let is_file = meta.kind == FileKind::Regular;
    let is_dir = meta.kind == FileKind::Directory;
    let holds = match test {
        FileTest::Plain => is_file,
        FileTest::Dir => is_dir,
        FileTest::Exists => is_file || is_dir,
        // nginx's ngx_is_exec(): the owner's execute bit, whatever the file.
        FileTest::Exec => meta.mode & libc::S_IXUSR == libc::S_IXUSR,
    };
    Ok(holds != negative)
}
