//! The autoindex module's content handler (`ngx_http_autoindex_handler`):
//! a GET or HEAD of a URI ending in `/` whose directory has no index file
//! is answered, under `autoindex on`, with a listing of the directory in
//! `autoindex_format`. The random index module reads the directory the
//! same way ([`random`], before the index files are looked for).
//!
//! The directory is read through the file layer ([`FileLayer::read_dir`]):
//! its open tried on the loop with `RESOLVE_CACHED`, its entries read and
//! `stat`ed where `aio` says, never blocking a loop under `aio threads`.
//! The page itself is made by [`crate::http::listing`]. As nginx sends it,
//! the listing has no `Content-Length` (chunked to HTTP/1.1 clients).

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use crate::body::source::Pieces;
use crate::config::filter_model::AutoindexFormat;
use crate::config::inherit::LocConf;
use crate::config::vars::{Family, Var};
use crate::http::listing::{self, Entry, HtmlOptions, MAX_CALLBACK_LEN};
use crate::http::status::Status;
use crate::io::file::{FileError, FileLayer};
use crate::log::Level;
use crate::sys::file::FileKind;

use crate::server::core::reply::{Body, Reply};
use crate::server::core::request::Req;
use crate::server::modules::filter;
use crate::server::modules::static_file::Served;

/// Lists the directory `dir` (the path of `uri`, which ends in `/`).
pub async fn serve(
    r: &Req<'_>,
    conf: &LocConf,
    uri: &str,
    dir: &Path,
    files: FileLayer<'_>,
) -> Served {
    let mut format = conf.autoindex_format;
    let mut callback = None;
    if format == AutoindexFormat::Jsonp {
        let name = Var::Family(Family::Arg, Arc::from("callback"));
        if let Some(cb) = r.var(&name, None).filter(|cb| !cb.is_empty()) {
            if !listing::valid_callback(&cb) {
                let why = if cb.len() > MAX_CALLBACK_LEN {
                    "too long"
                } else {
                    "invalid"
                };
                r.error_log().log(
                    Level::Info,
                    Some(r.conn_no),
                    format_args!(
                        "client sent {why} callback name: \"{}\"{}",
                        String::from_utf8_lossy(&cb),
                        r.log_context()
                    ),
                );
                return Served::Error(Status::BAD_REQUEST, None);
            }
            callback = Some(cb.into_owned());
        }
        if callback.is_none() {
            format = AutoindexFormat::Json;
        }
    }
    // nginx names the directory without its final slash.
    let shown = without_final_slash(dir);
    let found = match files.read_dir(shown, true).await {
        Ok(l) => l,
        Err(e) => return failed(r, e),
    };
    for skipped in &found.skipped {
        r.error_log().log(
            Level::Crit,
            Some(r.conn_no),
            format_args!("{skipped}{}", r.log_context()),
        );
    }
    let mut entries: Vec<Entry> = found
        .entries
        .into_iter()
        .map(|e| Entry {
            name: e.name,
            dir: e.meta.kind == FileKind::Directory,
            file: e.meta.kind == FileKind::Regular,
            mtime: e.meta.mtime_sec,
            size: e.meta.size,
        })
        .collect();
    listing::sort(&mut entries);
    let (content_type, charset, body) = match format {
        AutoindexFormat::Json | AutoindexFormat::Jsonp => {
            let ct = if callback.is_some() {
                "application/javascript"
            } else {
                "application/json"
            };
            (ct, None, listing::json(&entries, callback.as_deref()))
        }
        AutoindexFormat::Xml => ("text/xml", Some("utf-8"), listing::xml(&entries)),
        AutoindexFormat::Html => {
            let o = HtmlOptions {
                utf8: sent_in_utf8(r, conf),
                offset: if conf.autoindex_localtime {
                    local_offset()
                } else {
                    0
                },
                exact_size: conf.autoindex_exact_size,
            };
            (
                "text/html",
                None,
                listing::html(uri.as_bytes(), &entries, o),
            )
        }
    };
    let mut reply = Reply::new(
        Status::OK,
        Body::Stream(Box::new(Pieces::new(vec![Ok(Bytes::from(body))], None))),
    );
    reply.content_type = Some(content_type.into());
    reply.charset = charset.map(String::from);
    reply.content = true;
    Served::Reply(Box::new(reply))
}

/// Whether the charset filter will send a `text/html` 200 in UTF-8: the
/// HTML listing then counts names in characters (nginx's handler asks the
/// charset its header already carries).
fn sent_in_utf8(r: &Req<'_>, conf: &LocConf) -> bool {
    let mut probe = Reply::new(Status::OK, Body::Empty);
    probe.content_type = Some("text/html".into());
    filter::destination_name(r, conf, &probe).is_some_and(|c| c.eq_ignore_ascii_case("utf-8"))
}

/// The server's offset from UTC now, in seconds (nginx adds its cached
/// `gmtoff` to every time in the listing).
fn local_offset() -> i64 {
    crate::sys::time::LocalTime::now().map_or(0, |t| i64::from(t.gmtoff))
}

/// How a failed listing is answered, as nginx maps `opendir()` errors.
/// `random_index`: an internal redirect to a regular file of the directory
/// `dir` (a link to one counts; names starting with `.` do not), picked at
/// random; `None` when it has none, and the `index` directives run (nginx's
/// random index module, which runs before the index module).
pub async fn random(r: &Req<'_>, uri: &str, dir: &Path, files: FileLayer<'_>) -> Option<Served> {
    let shown = without_final_slash(dir);
    let found = match files.read_dir(shown, true).await {
        Ok(l) => l,
        Err(e) => return Some(failed(r, e)),
    };
    if let Some(e) = found.skipped.first() {
        // nginx stops at a `stat` that fails for another reason than a
        // missing target.
        r.error_log().log(
            Level::Crit,
            Some(r.conn_no),
            format_args!("{e}{}", r.log_context()),
        );
        return Some(Served::Error(Status::INTERNAL_SERVER_ERROR, None));
    }
    let names: Vec<Vec<u8>> = found
        .entries
        .into_iter()
        .filter(|e| e.meta.kind == FileKind::Regular)
        .map(|e| e.name)
        .collect();
    if names.is_empty() {
        return None;
    }
    let mut bytes = [0u8; 4];
    let _ = crate::sys::random::getrandom(&mut bytes);
    let pick = u32::from_ne_bytes(bytes) as usize % names.len();
    let name = String::from_utf8_lossy(&names[pick]);
    Some(Served::InternalRedirect(format!("{uri}{name}")))
}

/// `dir` without its final slash, as nginx names a directory in its logs.
fn without_final_slash(dir: &Path) -> &Path {
    match dir.to_str() {
        Some(s) if s.len() > 1 && s.ends_with('/') => Path::new(&s[..s.len() - 1]),
        _ => dir,
    }
}

fn failed(r: &Req<'_>, e: FileError) -> Served {
    if let FileError::Overflow(o) = &e {
        return Served::Overflow(o.to_string());
    }
    match e.errno() {
        Some(libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG) => {
            Served::Error(Status::NOT_FOUND, Some(e.to_string()))
        }
        Some(libc::EACCES) => Served::Error(Status::FORBIDDEN, Some(e.to_string())),
        _ => {
            r.error_log().log(
                Level::Crit,
                Some(r.conn_no),
                format_args!("{e}{}", r.log_context()),
            );
            Served::Error(Status::INTERNAL_SERVER_ERROR, None)
        }
    }
}
