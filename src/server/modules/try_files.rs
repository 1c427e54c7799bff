//! The precontent phase: `try_files`, as nginx's
//! `ngx_http_try_files_handler` runs it.
//!
//! Each candidate is placed after the location's root (or alias) and
//! looked up — through the file layer and the location's open file cache
//! and `disable_symlinks` rule, never a blocking call on the loop: the
//! first that exists, as a file or (written with a trailing `/`) as a
//! directory, becomes the request's URI and the content handler serves it;
//! when none does, the last argument decides: `=code` answers, `@name`
//! enters the named location, a URI redirects internally (its `?args`
//! becoming the request's).
//!
//! Must not: serve anything itself.

use crate::config::model::{TryFallback, TryFiles};
use crate::io::file::{FileError, FileLayer};
use crate::io::open_cache;
use crate::log::Level;
use crate::sys::file::FileKind;

use crate::server::core::reply::Reply;
use crate::server::core::request::Req;
use crate::server::modules::static_file::map_uri;

/// What `try_files` concluded.
pub enum Tried {
    /// No `try_files`, or a candidate exists (the URI may have changed):
    /// the content handler runs.
    Declined,
    /// `=code`, or a failure (a full pool).
    Reply(Box<Reply>),
    /// None exists: redirect internally to this URI.
    Uri(String),
    /// None exists: go to this named location.
    Named(String),
}

/// The `try_files` in force: the location's, or the server's for a request
/// no location matched (not inherited, as in nginx).
fn current<'a>(r: &Req<'a>) -> Option<&'a TryFiles> {
    match r.location {
        Some(l) => l.try_files.as_ref(),
        None => r.server.try_files.as_ref(),
    }
}

/// Whether the request stands where `try_files` applies.
pub fn applies(r: &Req<'_>) -> bool {
    current(r).is_some()
}

/// Runs `try_files` for `r`.
pub async fn run(r: &mut Req<'_>, files: FileLayer<'_>) -> Tried {
    let Some(tf) = current(r) else {
        return Tried::Declined;
    };
    let conf = r.conf;
    let alias = conf.alias_len;
    let uri = r.uri.as_bytes().to_vec();
    // The root part of the path (`ngx_http_map_uri_to_path`, whose URI part
    // each candidate replaces).
    let (path, root) = map_uri(r, conf, &uri);
    let root_path = path[..root].to_vec();
    for cand in &tf.files {
        let mut name = r.expand(&cand.name);
        if let Some(n) = alias.filter(|&n| n != usize::MAX) {
            // A name with variables that starts with the location's name
            // loses it: the alias stands for it.
            if !cand.name.is_static() && name.len() >= n && name[..n] == uri[..n.min(uri.len())] {
                name.drain(..n);
            }
        }
        let mut full = root_path.clone();
        full.extend_from_slice(&name);
        let path = std::path::PathBuf::from(
            <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&full),
        );
        let lookup = crate::server::core::file_rules::lookup(r, conf, &full);
        let meta = match open_cache::stat(files, &path, &lookup).await {
            Ok(m) => m,
            Err(FileError::Overflow(o)) => {
                r.error_log()
                    .log(Level::Error, Some(r.conn_no), format_args!("{o}"));
                return Tried::Reply(Box::new(Reply::special(
                    crate::server::core::phases::OVERFLOW_STATUS,
                )));
            }
            Err(e) => {
                if !matches!(
                    e.errno(),
                    Some(libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG)
                ) {
                    r.error_log().log(
                        Level::Crit,
                        Some(r.conn_no),
                        format_args!("{e}{}", r.log_context()),
                    );
                }
                continue;
            }
        };
        if (meta.kind == FileKind::Directory) != cand.dir {
            continue;
        }
        let found = String::from_utf8_lossy(&name).into_owned();
        match alias {
            None => r.uri = found.into(),
            Some(usize::MAX) => {
                if !cand.dir {
                    r.uri = found.into();
                    r.add_uri_to_alias = true;
                }
            }
            Some(n) => {
                let head = String::from_utf8_lossy(&uri[..n.min(uri.len())]).into_owned();
                r.uri = format!("{head}{found}").into();
            }
        }
        return Tried::Declined;
    }
    match &tf.fallback {
        TryFallback::Code(c) => {
            Tried::Reply(Box::new(Reply::special(crate::http::status::Status(*c))))
        }
        TryFallback::Named(n) => Tried::Named(n.clone()),
        TryFallback::Uri(t) => {
            let mut name = r.expand(t);
            if let Some(n) = alias.filter(|&n| n != usize::MAX) {
                if !t.is_static() && name.len() >= n && name[..n] == uri[..n.min(uri.len())] {
                    name.drain(..n);
                }
            }
            Tried::Uri(String::from_utf8_lossy(&name).into_owned())
        }
    }
}
