//! Access log lines: nginx's `log_format` variables expanded for a request,
//! or for a request rejected before its head could be parsed (400, 414, 408),
//! which nginx logs too. Lines go to the log writer threads; nothing here
//! waits on a disk.

use std::borrow::Cow;
use std::net::SocketAddr;

use crate::config::inherit::LocConf;
use crate::config::model::AccessLogs;
use crate::config::template::Part;

use super::request::{Req, Sent};
use super::site::Site;

/// Writes one line per `access_log` of `conf`, expanding variables with `var`.
fn write<'a>(site: &Site, conf: &LocConf, var: impl Fn(&str) -> Option<Cow<'a, str>>) {
    let AccessLogs::Logs(logs) = &conf.access_log else {
        return;
    };
    for l in logs {
        let (Some(format), Some(writer)) =
            (site.log_format(&l.format), site.access_writer(&l.target))
        else {
            continue;
        };
        let mut line = String::with_capacity(256);
        for p in &format.template.parts {
            match p {
                Part::Literal(s) => line.push_str(s),
                Part::Var(v) => match var(v) {
                    Some(val) if !val.is_empty() => line.push_str(&escape(&val)),
                    _ => line.push('-'),
                },
            }
        }
        writer.write_line(line.as_bytes());
    }
}

/// The lines of an answered request.
pub fn request(site: &Site, r: &Req<'_>, conf: &LocConf, sent: &Sent) {
    write(site, conf, |v| r.var(v, Some(sent)));
}

/// The lines of a request rejected while its head was read: what is known
/// is the client, the request line if it was complete, and what was sent.
pub fn rejected(site: &Site, conf: &LocConf, peer: SocketAddr, head: &[u8], sent: &Sent) {
    let line = head.iter().position(|&b| b == b'\n').map(|end| {
        String::from_utf8_lossy(head[..end].strip_suffix(b"\r").unwrap_or(&head[..end]))
            .into_owned()
    });
    write(site, conf, |v| {
        Some(match v {
            "remote_addr" => Cow::Owned(peer.ip().to_string()),
            "remote_port" => Cow::Owned(peer.port().to_string()),
            "request" => Cow::Owned(line.clone()?),
            "status" => Cow::Owned(format!("{:03}", sent.status)),
            "body_bytes_sent" => Cow::Owned(sent.body_bytes.to_string()),
            "bytes_sent" => Cow::Owned(sent.bytes.to_string()),
            "time_local" => Cow::Owned(crate::log::clock::with_now(|t| t.time_local.clone())),
            "time_iso8601" => Cow::Owned(crate::log::clock::with_now(|t| t.iso8601.clone())),
            _ => return None,
        })
    });
}

/// nginx's default log escaping: `"`, `\` and bytes outside printable ASCII
/// become `\xXX`.
fn escape(s: &str) -> Cow<'_, str> {
    if s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for b in s.bytes() {
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_like_nginx() {
        assert_eq!(escape("GET / HTTP/1.1"), "GET / HTTP/1.1");
        assert_eq!(escape("a\"b\\c"), "a\\x22b\\x5Cc");
        assert_eq!(escape("\u{e9}\t"), "\\xC3\\xA9\\x09");
    }
}
