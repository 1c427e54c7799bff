//! Access log lines: nginx's `log_format` variables expanded for a request,
//! or for a request rejected before its head could be parsed (400, 414, 408),
//! which nginx logs too. Lines go to the log writer threads; nothing here
//! waits on a disk.

use std::borrow::Cow;

use crate::config::core_model::LogEscape;
use crate::config::inherit::LocConf;
use crate::config::model::{AccessLogs, AccessTarget, LogFormat};
use crate::config::template::Part;
use crate::config::vars::{Builtin, Var};
use crate::log::dynamic::{CacheSpec, Job};

use crate::server::core::request::{Req, Sent};
use crate::server::core::site::Site;
use crate::server::core::vars::Response;
use crate::server::engine::client_addr::ClientAddr;

/// One line of `format`, variables expanded with `var` and escaped as the
/// format says: a variable that is not found is `-` under the default
/// escaping and nothing under `json` and `none` (nginx's
/// `ngx_http_log_variable` and its two siblings).
fn line<'a>(format: &LogFormat, var: &impl Fn(&Var) -> Option<Cow<'a, [u8]>>) -> Vec<u8> {
    let mut line = Vec::with_capacity(256);
    for p in &format.template.parts {
        match p {
            Part::Literal(s) => line.extend_from_slice(s.as_bytes()),
            Part::Var(v) => match (var(v), format.escape) {
                (Some(val), LogEscape::Default) => escape(&val, &mut line),
                (Some(val), LogEscape::Json) => escape_json(&val, &mut line),
                (Some(val), LogEscape::None) => line.extend_from_slice(&val),
                (None, LogEscape::Default) => line.push(b'-'),
                (None, _) => {}
            },
        }
    }
    line
}

/// Writes one line per `access_log` of `conf` whose fixed file is open,
/// expanding variables with `var` (the lines of rejected requests).
fn write<'a>(site: &Site, conf: &LocConf, var: impl Fn(&Var) -> Option<Cow<'a, [u8]>>) {
    let AccessLogs::Logs(logs) = &conf.access_log else {
        return;
    };
    for l in logs {
        let AccessTarget::Fixed(t) = &l.target else {
            continue;
        };
        let (Some(format), Some(writer)) = (site.log_format(&l.format), site.access_writer(t))
        else {
            continue;
        };
        writer.write_line(&line(format, &var));
    }
}

/// The lines of an answered request: one per `access_log` of `conf` whose
/// `if=` holds, to its file, or — for a name with variables — to the
/// dynamic log writer with the file's name.
pub fn request(site: &Site, r: &Req<'_>, conf: &LocConf, resp: Response<'_>) -> Written {
    let mut tickets = Written::default();
    let AccessLogs::Logs(logs) = &conf.access_log else {
        return tickets;
    };
    let var = |v: &Var| r.var(v, Some(resp));
    for l in logs {
        if let Some(cond) = &l.condition {
            // Evaluated with the response, as nginx's
            // `ngx_http_log_handler` evaluates it once the request is
            // over: `if=$status` and maps of it see what the line shows.
            let v = r.expand_with(cond, Some(resp));
            if v.is_empty() || v == b"0" {
                continue;
            }
        }
        let Some(format) = site.log_format(&l.format) else {
            continue;
        };
        match &l.target {
            AccessTarget::Fixed(t) => {
                if let Some(w) = site.access_writer(t) {
                    if let Some(seq) = w.write_line_seq(&line(format, &var)) {
                        tickets.fixed.push((w.clone(), seq));
                    }
                }
            }
            AccessTarget::Variable(name) => {
                let Some(dynamic) = &site.dynamic_logs else {
                    continue;
                };
                let path: std::path::PathBuf =
                    <std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(
                        r.expand_with(name, Some(resp)),
                    )
                    .into();
                let root = std::path::PathBuf::from(r.document_root());
                let root_links =
                    crate::server::core::file_rules::links(r, conf, r.document_root().as_bytes());
                let links = crate::server::core::file_rules::links(
                    r,
                    conf,
                    path.as_os_str().as_encoded_bytes(),
                );
                let seq = dynamic.send(Job {
                    path,
                    root: Some((root, root_links)),
                    links,
                    cache: conf.open_log_file_cache.map(|c| CacheSpec {
                        id: c.id,
                        max: c.max,
                        inactive: c.inactive,
                        min_uses: c.min_uses,
                        valid: c.valid,
                    }),
                    line: line(format, &var),
                    log: r.error_log().clone(),
                    conn: r.conn_no,
                    context: r.log_context().to_string(),
                });
                if let Some(seq) = seq {
                    // Lines are handled in order: the last one's number
                    // covers the others.
                    tickets.dynamic = Some((dynamic.progress().clone(), seq));
                }
            }
        }
    }
    tickets
}

/// The lines of a subrequest that is over, under `log_subrequest on`
/// (nginx's `ngx_http_log_request` on it): its location's logs, its own
/// `$uri`, `$args`, `$status`, `$request_time` and response fields, the
/// main request's `$request` and `$request_uri`; no `$request_length`
/// (0) nor `$request_completion`; `$bytes_sent` and `$body_bytes_sent`
/// are what the connection has written for the main request so far
/// (`sent`: nginx's `c->sent`, a subrequest sending no head of its own).
/// Nothing waits for these lines: the main request's, written after them
/// to the same files, are the ones a closing connection waits for.
pub fn subrequest(
    sr: &Req<'_>,
    conf: &LocConf,
    reply: &crate::server::core::reply::Reply,
    sent: u64,
) {
    let sent = Sent {
        status: reply.status.0,
        body_bytes: sent,
        bytes: sent,
        complete: false,
    };
    let resp = Response {
        sent: &sent,
        reply,
        keep_alive: false,
        keep_alive_header: None,
    };
    let _ = request(sr.site, sr, conf, resp);
}

/// The lines a request's log lines are, in their writers: awaited before
/// the connection closes (see [`crate::log::LogWriter::written`] and
/// [`crate::log::dynamic::Progress::written`]).
#[derive(Default)]
pub struct Written {
    /// Lines of fixed files (and error-log lines), by writer.
    pub fixed: Vec<(std::sync::Arc<crate::log::LogWriter>, u64)>,
    /// The last line handed to the thread of logs with variables.
    pub dynamic: Option<(std::sync::Arc<crate::log::dynamic::Progress>, u64)>,
}

/// The longest a closing connection waits for its log lines to be written:
/// a stalled disk delays the close no more than this.
pub const CLOSE_WAIT_FOR_LOG: std::time::Duration = std::time::Duration::from_millis(200);

/// Waits (at most [`CLOSE_WAIT_FOR_LOG`]) until `lines` are written.
pub async fn written(lines: Written) {
    if lines.fixed.is_empty() && lines.dynamic.is_none() {
        return;
    }
    let all = async {
        for (w, seq) in &lines.fixed {
            w.written(*seq).await;
        }
        if let Some((p, seq)) = &lines.dynamic {
            p.written(*seq).await;
        }
    };
    let _ = tokio::time::timeout(CLOSE_WAIT_FOR_LOG, all).await;
}

/// The lines of a request rejected while its head was read: what is known
/// is the client, the request line if it was complete, and what was sent.
pub fn rejected(site: &Site, conf: &LocConf, peer: &ClientAddr, head: &[u8], sent: &Sent) {
    // nginx's `$request`: from the request's start (past the empty lines
    // before it) to its line's end, or to the buffer's end when the line
    // has not ended; empty when only empty lines came.
    let line = (!head.is_empty()).then(|| {
        let rest = match head.iter().position(|b| !matches!(b, b'\r' | b'\n')) {
            Some(start) => &head[start..],
            None => &[][..],
        };
        let end = rest
            .iter()
            .position(|b| matches!(b, b'\r' | b'\n'))
            .unwrap_or(rest.len());
        String::from_utf8_lossy(&rest[..end]).into_owned()
    });
    write(site, conf, |v| {
        let Var::Builtin(b) = v else {
            return None;
        };
        let text = match b {
            // nginx has an empty URI for a request line it could read.
            Builtin::Uri | Builtin::DocumentUri if line.is_some() => String::new(),
            Builtin::RemoteAddr => peer.to_string(),
            // None for a unix-domain client.
            Builtin::RemotePort => match peer.port() {
                0 => String::new(),
                port => port.to_string(),
            },
            Builtin::Request => line.clone()?,
            Builtin::Status => format!("{:03}", crate::http::status::Status(sent.status).wire().0),
            Builtin::BodyBytesSent => sent.body_bytes.to_string(),
            Builtin::BytesSent => sent.bytes.to_string(),
            Builtin::TimeLocal => crate::log::clock::with_now(|t| t.time_local.clone()),
            Builtin::TimeIso8601 => crate::log::clock::with_now(|t| t.iso8601.clone()),
            _ => return None,
        };
        Some(Cow::Owned(text.into_bytes()))
    });
}

/// nginx's default log escaping: `"`, `\\` and bytes outside printable ASCII
/// become `\\xXX`.
fn escape(s: &[u8], out: &mut Vec<u8>) {
    for &b in s {
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
            out.push(b);
        } else {
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            out.extend_from_slice(&[b'\\', b'x', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
        }
    }
}

/// nginx's JSON escaping (`ngx_escape_json`): `"` and `\\` with a
/// backslash, control characters as `\\n`, `\\t` … or `\\u00XX`; other
/// bytes as they are.
fn escape_json(s: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in s {
        match b {
            b'"' | b'\\' => out.extend_from_slice(&[b'\\', b]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0..=0x1f => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                b'0' + (b >> 4),
                HEX[(b & 15) as usize],
            ]),
            _ => out.push(b),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn json_escapes_like_nginx() {
        let mut out = Vec::new();
        super::escape_json(b"/escape/\"1 \x1b\x1c \"2\n\\\x7f", &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "/escape/\\\"1 \\u001B\\u001C \\\"2\\n\\\\\x7f"
        );
    }

    fn escape(s: &str) -> String {
        let mut out = Vec::new();
        super::escape(s.as_bytes(), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escapes_like_nginx() {
        assert_eq!(escape("GET / HTTP/1.1"), "GET / HTTP/1.1");
        assert_eq!(escape("a\"b\\c"), "a\\x22b\\x5Cc");
        assert_eq!(escape("\u{e9}\t"), "\\xC3\\xA9\\x09");
    }
}
