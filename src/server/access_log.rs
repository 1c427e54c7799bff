//! Access log lines: nginx's `log_format` variables expanded for a request,
//! or for a request rejected before its head could be parsed (400, 414, 408),
//! which nginx logs too. Lines go to the log writer threads; nothing here
//! waits on a disk.

use std::borrow::Cow;
use std::net::SocketAddr;

use crate::config::inherit::LocConf;
use crate::config::model::AccessLogs;
use crate::config::template::Part;
use crate::config::vars::{Builtin, Var};

use super::request::{Req, Sent};
use super::site::Site;
use super::vars::Response;

/// Writes one line per `access_log` of `conf`, expanding variables with `var`.
fn write<'a>(site: &Site, conf: &LocConf, var: impl Fn(&Var) -> Option<Cow<'a, [u8]>>) {
    let AccessLogs::Logs(logs) = &conf.access_log else {
        return;
    };
    for l in logs {
        let (Some(format), Some(writer)) =
            (site.log_format(&l.format), site.access_writer(&l.target))
        else {
            continue;
        };
        let mut line = Vec::with_capacity(256);
        for p in &format.template.parts {
            match p {
                Part::Literal(s) => line.extend_from_slice(s.as_bytes()),
                Part::Var(v) => match var(v) {
                    Some(val) if !val.is_empty() => escape(&val, &mut line),
                    _ => line.push(b'-'),
                },
            }
        }
        writer.write_line(&line);
    }
}

/// The lines of an answered request.
pub fn request(site: &Site, r: &Req<'_>, conf: &LocConf, resp: Response<'_>) {
    write(site, conf, |v| r.var(v, Some(resp)));
}

/// The lines of a request rejected while its head was read: what is known
/// is the client, the request line if it was complete, and what was sent.
pub fn rejected(site: &Site, conf: &LocConf, peer: SocketAddr, head: &[u8], sent: &Sent) {
    let line = head.iter().position(|&b| b == b'\n').map(|end| {
        String::from_utf8_lossy(head[..end].strip_suffix(b"\r").unwrap_or(&head[..end]))
            .into_owned()
    });
    write(site, conf, |v| {
        let Var::Builtin(b) = v else {
            return None;
        };
        let text = match b {
            Builtin::RemoteAddr => peer.ip().to_string(),
            Builtin::RemotePort => peer.port().to_string(),
            Builtin::Request => line.clone()?,
            Builtin::Status => format!("{:03}", sent.status),
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

#[cfg(test)]
mod tests {
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
