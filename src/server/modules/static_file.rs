//! Serving a URI from the file system, as nginx's static and index modules
//! do: map the URI to a path under `root` or `alias`, try the `index` files
//! for a URI ending in `/` (then `autoindex`), redirect a directory named
//! without its slash, refuse what is not a regular file, send a `.gz`
//! file beside the requested one (`gzip_static`), and answer conditionals.
//! Ranges are cut later, by the range filter.
//!
//! Every file system call goes through [`FileLayer`], so `aio` decides where
//! it runs; this module only decides what to call.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::config::filter_model::GzipStatic;
use crate::config::inherit::LocConf;
use crate::config::model::{Location, Root};
use crate::http::conditional::{self, Conditions, Outcome, Validators};
use crate::http::etag::file_etag;
use crate::http::range::ByteRange;
use crate::http::request::Method;
use crate::http::status::Status;
use crate::io::file::{FileError, FileLayer, OpenFile, Opened};
use crate::io::open_cache;
use crate::log::Level;
use crate::server::core::reply::ContentType;
use crate::sys::file::FileKind;

use crate::server::core::reply::{Body, Reply};
use crate::server::core::request::Req;

/// What the static handler decided.
pub enum Served {
    /// A reply to send.
    Reply(Box<Reply>),
    /// Serve this URI instead (an `index` file was found).
    InternalRedirect(String),
    /// Fail with this status; the error is logged with the request context.
    Error(Status, Option<String>),
    /// A pool's queue was full: this is its message.
    Overflow(String),
}

/// Maps the URI to a file path under the location's `root` or `alias`.
pub fn map_path(r: &Req<'_>, conf: &LocConf, location: Option<&Location>, uri: &str) -> PathBuf {
    let _ = location;
    let (path, _) = map_uri(r, conf, uri.as_bytes());
    PathBuf::from(OsStr::from_bytes(&path))
}

/// nginx's `ngx_http_map_uri_to_path`: the path for `uri` and how many of
/// its leading bytes are the root (the document root, or the alias that
/// replaces the location's name; under a regex location's alias, the whole
/// file unless `try_files` added the URI to it).
pub fn map_uri(r: &Req<'_>, conf: &LocConf, uri: &[u8]) -> (Vec<u8>, usize) {
    let mut path: Vec<u8> = Vec::new();
    let cut = match &conf.root {
        Root::Root(t) => {
            path.extend_from_slice(&r.expand(t));
            0
        }
        Root::Alias(t) => {
            path.extend_from_slice(&r.expand(t));
            match conf.alias_len {
                Some(usize::MAX) if !r.add_uri_to_alias => uri.len(),
                Some(usize::MAX) | None => 0,
                Some(n) => n.min(uri.len()),
            }
        }
    };
    let root = path.len();
    path.extend_from_slice(&uri[cut..]);
    (path, root)
}

/// Status and log message for a failed open, as nginx maps errno.
fn open_failure(e: &FileError) -> (Status, Option<String>) {
    match e.errno() {
        Some(libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG) => {
            (Status::NOT_FOUND, Some(e.to_string()))
        }
        Some(libc::EACCES | libc::EPERM | libc::ELOOP) => (Status::FORBIDDEN, Some(e.to_string())),
        _ => match e {
            FileError::Overflow(_) | FileError::Lost(..) => {
                (Status::INTERNAL_SERVER_ERROR, Some(e.to_string()))
            }
            FileError::Sys(_) => (Status::INTERNAL_SERVER_ERROR, Some(e.to_string())),
        },
    }
}

/// How a URI is fetched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fetch {
    /// As the client asked.
    Request,
    /// After an internal redirect that turns the method into GET (a HEAD
    /// stays a HEAD): `X-Accel-Redirect`.
    AsGet,
    /// An `error_page`: as GET, without ranges or conditionals.
    ErrorPage,
}

/// Serves `uri` from the file system, fetched as `fetch` says.
pub async fn serve(
    r: &Req<'_>,
    conf: &LocConf,
    location: Option<&Location>,
    uri: &str,
    files: FileLayer<'_>,
    fetch: Fetch,
) -> Served {
    let error_page = fetch == Fetch::ErrorPage;
    let method = match &r.head.method {
        Method::Head => &Method::Head,
        _ if fetch != Fetch::Request => &Method::Get,
        m => m,
    };
    if !matches!(method, Method::Get | Method::Head | Method::Post) {
        return Served::Error(Status::NOT_ALLOWED, None);
    }
    let path = map_path(r, conf, location, uri);
    if uri.ends_with('/') {
        return index(r, conf, uri, path, files, method).await;
    }
    let mut vary = false;
    if conf.gzip_static != GzipStatic::Off && matches!(method, Method::Get | Method::Head) {
        match gzip_static(r, conf, &path, files).await {
            Precompressed::File(file, v) => {
                let mut reply = file_reply(r, conf, uri, file, error_page);
                reply.allow_ranges = false;
                reply.gzip_vary = v;
                if reply.status.0 == 200 {
                    reply.extra.push(("Content-Encoding".into(), "gzip".into()));
                }
                return Served::Reply(Box::new(reply));
            }
            Precompressed::Declined(v) => vary = v,
            Precompressed::Failed(served) => return served,
        }
    }
    let lookup = crate::server::core::file_rules::lookup(r, conf, path.as_os_str().as_bytes());
    let file = match open_cache::open(files, &path, &lookup).await {
        Ok(Opened::Regular(f)) => f,
        Ok(Opened::Other(meta)) if meta.kind == FileKind::Directory => {
            return Served::Reply(Box::new(directory_redirect(r, conf, uri)));
        }
        Ok(Opened::Other(_)) => {
            return Served::Error(
                Status::NOT_FOUND,
                Some(format!("\"{}\" is not a regular file", path.display())),
            );
        }
        Err(e) => return failed(e, r, conf),
    };
    if *method == Method::Post {
        return Served::Error(Status::NOT_ALLOWED, None);
    }
    read_ahead(r, conf, &file);
    let mut reply = file_reply(r, conf, uri, file, error_page);
    reply.gzip_vary |= vary;
    Served::Reply(Box::new(reply))
}

/// What `gzip_static` found beside a file.
enum Precompressed {
    /// The `.gz` file to send, and whether `Vary` applies.
    File(OpenFile, bool),
    /// None to send; whether `Vary` applies all the same.
    Declined(bool),
    /// The request fails.
    Failed(Served),
}

/// `gzip_static` (`ngx_http_gzip_static_handler`): the file `path.gz`,
/// opened through the file layer, for a client that accepts gzip (`on`)
/// or any client (`always`).
async fn gzip_static(
    r: &Req<'_>,
    conf: &LocConf,
    path: &std::path::Path,
    files: FileLayer<'_>,
) -> Precompressed {
    let ok = conf.gzip_static == GzipStatic::Always
        || crate::server::modules::filter::gzip_ok(r, conf, None);
    if !conf.gzip_vary && !ok {
        return Precompressed::Declined(false);
    }
    let mut gz = path.as_os_str().to_os_string();
    gz.push(".gz");
    let gz = PathBuf::from(gz);
    let opened = match files.open(&gz).await {
        Ok(o) => o,
        Err(e) => {
            let level = match e.errno() {
                Some(libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG) => None,
                Some(libc::EACCES | libc::ELOOP) => Some(Level::Error),
                _ => Some(Level::Crit),
            };
            if let FileError::Overflow(o) = &e {
                return Precompressed::Failed(Served::Overflow(o.to_string()));
            }
            if let Some(level) = level {
                r.error_log().log(
                    level,
                    Some(r.conn_no),
                    format_args!("{e}{}", r.log_context()),
                );
            }
            return Precompressed::Declined(false);
        }
    };
    let vary = conf.gzip_static == GzipStatic::On;
    if !ok {
        return Precompressed::Declined(vary);
    }
    match opened {
        Opened::Regular(f) => {
            read_ahead(r, conf, &f);
            Precompressed::File(f, vary)
        }
        Opened::Other(meta) if meta.kind == FileKind::Directory => Precompressed::Declined(vary),
        Opened::Other(_) => {
            r.error_log().log(
                Level::Crit,
                Some(r.conn_no),
                format_args!(
                    "\"{}\" is not a regular file{}",
                    gz.display(),
                    r.log_context()
                ),
            );
            Precompressed::Failed(Served::Error(Status::NOT_FOUND, None))
        }
    }
}

/// Files no larger than this get no read-ahead advice (nginx's
/// `NGX_MIN_READ_AHEAD`).
const MIN_READ_AHEAD: u64 = 128 * 1024;

/// `read_ahead`: as nginx on Linux (`ngx_read_ahead`), a file larger than
/// [`MIN_READ_AHEAD`] sent under a non-zero `read_ahead` is advised
/// `POSIX_FADV_SEQUENTIAL`, which doubles the kernel's read-ahead window for
/// it; the size itself means nothing on Linux. The call only sets a flag
/// on the open file: it does no I/O, so it runs on the loop.
fn read_ahead(r: &Req<'_>, conf: &LocConf, file: &OpenFile) {
    if conf.read_ahead == 0 || file.meta.size <= MIN_READ_AHEAD {
        return;
    }
    if let Err(e) = crate::sys::file::fadvise(&*file.fd, 0, 0, crate::sys::file::Advice::Sequential)
    {
        r.error_log().log(
            Level::Alert,
            Some(r.conn_no),
            format_args!(
                "posix_fadvise(POSIX_FADV_SEQUENTIAL) \"{}\" failed ({}){}",
                file.path.display(),
                crate::sys::error::errno_text(&e),
                r.log_context()
            ),
        );
    }
}

/// The outcome of a failed file operation; "not found" goes unlogged
/// under `log_not_found off`.
fn failed(e: FileError, r: &Req<'_>, conf: &LocConf) -> Served {
    let _ = r;
    if let FileError::Overflow(o) = &e {
        return Served::Overflow(o.to_string());
    }
    let (status, mut msg) = open_failure(&e);
    if status == Status::NOT_FOUND && !conf.log_not_found {
        msg = None;
    }
    Served::Error(status, msg)
}

/// `index`: the first index file that exists is served by an internal
/// redirect; without one, `autoindex` lists a GET or HEAD's directory.
async fn index(
    r: &Req<'_>,
    conf: &LocConf,
    uri: &str,
    dir: PathBuf,
    files: FileLayer<'_>,
    method: &Method,
) -> Served {
    if conf.random_index {
        if let Some(served) = crate::server::modules::autoindex::random(r, uri, &dir, files).await {
            return served;
        }
    }
    for name in &conf.index {
        let name = r.expand_lossy(name);
        if name.starts_with('/') {
            return Served::InternalRedirect(name);
        }
        let candidate = dir.join(&name);
        let lookup =
            crate::server::core::file_rules::lookup(r, conf, candidate.as_os_str().as_bytes());
        match open_cache::stat(files, &candidate, &lookup).await {
            Ok(m) if m.kind != FileKind::Directory => {
                return Served::InternalRedirect(format!("{uri}{name}"));
            }
            Ok(_) => continue,
            Err(e) if matches!(e.errno(), Some(libc::ENOENT)) => continue,
            Err(e) => return failed(e, r, conf),
        }
    }
    let lookup = crate::server::core::file_rules::lookup(r, conf, dir.as_os_str().as_bytes());
    match open_cache::stat(files, &dir, &lookup).await {
        Ok(m)
            if m.kind == FileKind::Directory
                && conf.autoindex
                && matches!(method, Method::Get | Method::Head) =>
        {
            crate::server::modules::autoindex::serve(r, conf, uri, &dir, files).await
        }
        Ok(m) if m.kind == FileKind::Directory => Served::Error(
            Status::FORBIDDEN,
            Some(format!(
                "directory index of \"{}\" is forbidden",
                dir.display()
            )),
        ),
        Ok(_) => Served::Error(Status::NOT_FOUND, None),
        Err(e) => failed(e, r, conf),
    }
}

/// `301` to the same URI with a slash, escaped as nginx's static handler
/// writes it (the header filter makes it absolute).
fn directory_redirect(r: &Req<'_>, conf: &LocConf, uri: &str) -> Reply {
    let _ = conf;
    let mut out = Vec::with_capacity(uri.len() + 8);
    crate::http::uri::escape_uri(uri.as_bytes(), &mut out);
    out.push(b'/');
    let mut location = String::from_utf8_lossy(&out).into_owned();
    if let Some(args) = r.args() {
        if !args.is_empty() {
            location.push('?');
            location.push_str(&args);
        }
    }
    let mut reply = Reply::special(Status::MOVED_PERMANENTLY);
    reply.location = Some(location);
    reply
}

/// `http://host[:port]` + `path`, as the header filter writes a relative
/// `Location` (see [`crate::server::core::redirect::absolute`]).
pub fn absolute_url(r: &Req<'_>, path: &str) -> String {
    crate::server::core::redirect::absolute(r, r.conf, path)
}

/// A `200`, `206`, `304`, `412` or `416` for an open regular file.
fn file_reply(r: &Req<'_>, conf: &LocConf, uri: &str, file: OpenFile, error_page: bool) -> Reply {
    let mut reply = file_reply_inner(r, conf, uri, file, error_page);
    reply.content = true;
    reply
}

fn file_reply_inner(
    r: &Req<'_>,
    conf: &LocConf,
    uri: &str,
    file: OpenFile,
    error_page: bool,
) -> Reply {
    let size = file.meta.size;
    let mtime = file.meta.mtime_sec;
    let etag = conf.etag.then(|| file_etag(mtime, size));
    let content_type = content_type(conf, uri);
    let h = r.head;
    let whole = ByteRange {
        start: 0,
        end: size,
    };
    if !error_page {
        // nginx's not-modified filter runs first of the header filters,
        // on the handler's own validators.
        let conditions = Conditions {
            if_modified_since: h.if_modified_since.as_deref(),
            if_unmodified_since: h.if_unmodified_since.as_deref(),
            if_match: h.if_match.as_deref(),
            if_none_match: h.if_none_match.as_deref(),
        };
        let validators = Validators {
            last_modified: Some(mtime),
            etag: etag.as_deref(),
        };
        match conditional::evaluate(&conditions, &validators, conf.if_modified_since) {
            Outcome::Proceed => {}
            Outcome::NotModified => {
                let mut reply = Reply::new(Status::NOT_MODIFIED, Body::Empty);
                reply.last_modified = Some(mtime);
                reply.etag = etag;
                return reply;
            }
            Outcome::PreconditionFailed => {
                let mut reply = Reply::special(Status::PRECONDITION_FAILED);
                // nginx closes after a 412 although its head says keep-alive.
                reply.close = true;
                return reply;
            }
        }
    }
    let mut reply = Reply::new(Status::OK, Body::File { file, range: whole });
    reply.content_type = Some(content_type);
    // The range filter answers `Range` later, after the headers filter
    // (no ranges for an error page: its status is not 200 by then).
    reply.allow_ranges = !error_page;
    reply.last_modified = Some(mtime);
    reply.etag = etag;
    reply
}

/// The MIME type for a URI's extension, or `default_type`.
pub fn content_type(conf: &LocConf, uri: &str) -> ContentType {
    // The last path segment's extension, found by bytes ('/' and '.' are
    // ASCII, so the cuts are character boundaries).
    let b = uri.as_bytes();
    let name = b.iter().rposition(|&c| c == b'/').map_or(0, |i| i + 1);
    let dot = b[name..].iter().rposition(|&c| c == b'.');
    match dot.map(|d| &uri[name + d + 1..]) {
        Some(ext) if !ext.is_empty() => {
            let found = if ext.bytes().any(|b| b.is_ascii_uppercase()) {
                conf.types.by_ext.get(&ext.to_ascii_lowercase())
            } else {
                conf.types.by_ext.get(ext)
            };
            ContentType::Shared(found.unwrap_or(&conf.default_type).clone())
        }
        _ => ContentType::Shared(conf.default_type.clone()),
    }
}
