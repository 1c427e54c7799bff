//! Serving a URI from the file system, as nginx's static and index modules
//! do: map the URI to a path under `root` or `alias`, try the `index` files
//! for a URI ending in `/`, redirect a directory named without its slash,
//! refuse what is not a regular file, and answer conditionals and ranges.
//!
//! Every file system call goes through [`FileLayer`], so `aio` decides where
//! it runs; this module only decides what to call.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::config::inherit::LocConf;
use crate::config::model::{Location, LocationMatch, Root};
use crate::http::conditional::{self, Conditions, IfModifiedSince, Outcome, Validators};
use crate::http::etag::file_etag;
use crate::http::range::{self, ByteRange, Multipart, RangeSpec};
use crate::http::request::Method;
use crate::http::status::Status;
use crate::io::file::{FileError, FileLayer, OpenFile, Opened};
use crate::sys::file::FileKind;

use super::reply::{Body, Reply};
use super::request::Req;

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
    let mut path: Vec<u8> = Vec::new();
    match &conf.root {
        Root::Root(t) => {
            path.extend_from_slice(&r.expand(t));
            path.extend_from_slice(uri.as_bytes());
        }
        Root::Alias(t) => {
            path.extend_from_slice(&r.expand(t));
            let prefix_len = match location.map(|l| &l.matcher) {
                Some(
                    LocationMatch::Prefix(p)
                    | LocationMatch::PrefixNoRegex(p)
                    | LocationMatch::Exact(p),
                ) => p.len().min(uri.len()),
                // A regex alias names the whole file (captures are expanded in it).
                _ => uri.len(),
            };
            path.extend_from_slice(&uri.as_bytes()[prefix_len..]);
        }
    }
    PathBuf::from(OsStr::from_bytes(&path))
}

/// Status and log message for a failed open, as nginx maps errno.
fn open_failure(e: &FileError) -> (Status, Option<String>) {
    match e.errno() {
        Some(libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG) => {
            (Status::NOT_FOUND, Some(e.to_string()))
        }
        Some(libc::EACCES | libc::EPERM | libc::ELOOP) => (Status::FORBIDDEN, Some(e.to_string())),
        _ => match e {
            FileError::Overflow(_) | FileError::Lost(_) => {
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
        return index(r, conf, uri, path, files).await;
    }
    let file = match files.open(&path).await {
        Ok(Opened::Regular(f)) => f,
        Ok(Opened::Other(meta)) if meta.kind == FileKind::Directory => {
            return Served::Reply(Box::new(directory_redirect(r, uri)));
        }
        Ok(Opened::Other(_)) => {
            return Served::Error(
                Status::NOT_FOUND,
                Some(format!("\"{}\" is not a regular file", path.display())),
            );
        }
        Err(e) => return failed(e),
    };
    if *method == Method::Post {
        return Served::Error(Status::NOT_ALLOWED, None);
    }
    Served::Reply(Box::new(file_reply(r, conf, uri, file, error_page)))
}

/// The outcome of a failed file operation.
fn failed(e: FileError) -> Served {
    if let FileError::Overflow(o) = &e {
        return Served::Overflow(o.to_string());
    }
    let (status, msg) = open_failure(&e);
    Served::Error(status, msg)
}

/// `index`: the first index file that exists is served by an internal redirect.
async fn index(
    r: &Req<'_>,
    conf: &LocConf,
    uri: &str,
    dir: PathBuf,
    files: FileLayer<'_>,
) -> Served {
    for name in &conf.index {
        let name = r.expand_lossy(name);
        if name.starts_with('/') {
            return Served::InternalRedirect(name);
        }
        let candidate = dir.join(&name);
        match files.stat(&candidate).await {
            Ok(m) if m.kind != FileKind::Directory => {
                return Served::InternalRedirect(format!("{uri}{name}"));
            }
            Ok(_) => continue,
            Err(e) if matches!(e.errno(), Some(libc::ENOENT)) => continue,
            Err(e) => return failed(e),
        }
    }
    match files.stat(&dir).await {
        Ok(m) if m.kind == FileKind::Directory => Served::Error(
            Status::FORBIDDEN,
            Some(format!(
                "directory index of \"{}\" is forbidden",
                dir.display()
            )),
        ),
        Ok(_) => Served::Error(Status::NOT_FOUND, None),
        Err(e) => failed(e),
    }
}

/// `301` to the same URI with a slash, absolute as nginx writes it.
fn directory_redirect(r: &Req<'_>, uri: &str) -> Reply {
    let mut location = absolute_url(
        r,
        &crate::http::uri::percent_encode_path(format!("{uri}/").as_bytes()),
    );
    if let Some(args) = r.args() {
        location.push('?');
        location.push_str(&args);
    }
    let mut reply = Reply::special(Status::MOVED_PERMANENTLY);
    reply.location = Some(location);
    reply
}

/// `http://host[:port]` + `path`, nginx's `absolute_redirect on` with
/// `port_in_redirect on`.
pub fn absolute_url(r: &Req<'_>, path: &str) -> String {
    // nginx's `server_name_in_redirect off`: the request's host, else our
    // own address.
    let host = match &r.head.host {
        Some(h) => h.clone(),
        None => r.local.ip().to_string(),
    };
    let port = r.local.port();
    let host = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host
    };
    if port == 80 {
        format!("http://{host}{path}")
    } else {
        format!("http://{host}:{port}{path}")
    }
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
    let etag = file_etag(mtime, size);
    let content_type = content_type(conf, uri);
    let h = r.head;
    if error_page {
        // No conditionals, no ranges: the page answers an error.
        let mut reply = Reply::new(
            Status::OK,
            Body::File {
                file,
                range: ByteRange {
                    start: 0,
                    end: size,
                },
            },
        );
        reply.content_type = Some(content_type);
        return with_validators(reply, mtime, etag);
    }
    let conditions = Conditions {
        if_modified_since: h.if_modified_since.as_deref(),
        if_unmodified_since: h.if_unmodified_since.as_deref(),
        if_match: h.if_match.as_deref(),
        if_none_match: h.if_none_match.as_deref(),
    };
    let validators = Validators {
        last_modified: Some(mtime),
        etag: Some(&etag),
    };
    match conditional::evaluate(&conditions, &validators, IfModifiedSince::Exact) {
        Outcome::Proceed => {}
        Outcome::NotModified => {
            let mut reply = Reply::new(Status::NOT_MODIFIED, Body::Empty);
            reply.last_modified = Some(mtime);
            reply.etag = Some(etag);
            return reply;
        }
        Outcome::PreconditionFailed => {
            let mut reply = Reply::special(Status::PRECONDITION_FAILED);
            // nginx closes after a 412 although its head says keep-alive.
            reply.close = true;
            return reply;
        }
    }
    let mut spec = match &h.range {
        // A body filter (SSI) changes the body: nginx's range filter then
        // sees no length and sends it whole.
        Some(_) if super::filter::changes_file(r, &content_type) => RangeSpec::Full,
        Some(range_header) if size > 0 => range::parse_range(range_header, size),
        _ => RangeSpec::Full,
    };
    if let (Some(if_range), RangeSpec::Satisfiable(_) | RangeSpec::Unsatisfiable) =
        (&h.if_range, &spec)
    {
        if !range::if_range_matches(if_range, Some(&etag), Some(mtime)) {
            spec = RangeSpec::Full;
        }
    }
    let mut reply = match spec {
        RangeSpec::Full => {
            let mut reply = Reply::new(
                Status::OK,
                Body::File {
                    file,
                    range: ByteRange {
                        start: 0,
                        end: size,
                    },
                },
            );
            reply.accept_ranges = true;
            reply
        }
        RangeSpec::Unsatisfiable => {
            // nginx sends no validators with a 416.
            let mut reply = Reply::special(Status::RANGE_NOT_SATISFIABLE);
            reply.content_range = Some(range::unsatisfiable_content_range(size));
            return reply;
        }
        RangeSpec::Satisfiable(ranges) if ranges.len() == 1 => {
            let mut reply = Reply::new(
                Status::PARTIAL_CONTENT,
                Body::File {
                    file,
                    range: ranges[0],
                },
            );
            reply.content_range = Some(ranges[0].content_range(size));
            reply
        }
        RangeSpec::Satisfiable(ranges) => {
            let boundary = next_boundary();
            let parts = Multipart::new(&ranges, Some(&content_type), size, boundary);
            let ct = parts.content_type().to_string();
            let mut reply = Reply::new(Status::PARTIAL_CONTENT, Body::Multipart { file, parts });
            reply.content_type = Some(ct);
            return with_validators(reply, mtime, etag);
        }
    };
    reply.content_type = Some(content_type);
    with_validators(reply, mtime, etag)
}

fn with_validators(mut reply: Reply, mtime: i64, etag: String) -> Reply {
    reply.last_modified = Some(mtime);
    reply.etag = Some(etag);
    reply
}

/// The MIME type for a URI's extension, or `default_type`.
pub fn content_type(conf: &LocConf, uri: &str) -> String {
    let name = uri.rsplit('/').next().unwrap_or(uri);
    match name.rsplit_once('.') {
        Some((_, ext)) if !ext.is_empty() => {
            let lower = ext.to_ascii_lowercase();
            conf.types
                .by_ext
                .get(&lower)
                .cloned()
                .unwrap_or_else(|| conf.default_type.clone())
        }
        _ => conf.default_type.clone(),
    }
}

/// nginx numbers multipart boundaries with a per-process counter.
fn next_boundary() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
