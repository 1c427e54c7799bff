//! An upstream's response head turned into the reply the client gets, as
//! nginx's `ngx_http_upstream_process_headers` and the proxy module do it:
//!
//! - the status line passes as the upstream wrote it (`200 Fine`);
//! - `Content-Length` becomes the reply's length; `Connection`,
//!   `Keep-Alive` and `Transfer-Encoding` describe the upstream connection
//!   and are not copied;
//! - `Date`, `Server`, `X-Pad` and `X-Accel-*` are hidden (nowait's own
//!   `Date` and `Server` go out), plus `proxy_hide_header`, minus
//!   `proxy_pass_header`;
//! - `Location` and `Refresh` are rewritten by `proxy_redirect`, and a
//!   rewritten `Location` that is a path is made absolute as nginx's
//!   header filter does (one no rule matched passes as it is);
//! - every other field is copied in the upstream's order.
//!
//! The `X-Accel-*` fields the upstream sends steer this response
//! (`X-Accel-Redirect`, `X-Accel-Buffering`, `X-Accel-Limit-Rate`,
//! `X-Accel-Charset`) unless `proxy_ignore_headers` names them.

use crate::config::inherit::LocConf;
use crate::config::model::{ProxyRedirect, RedirectFrom};
use crate::http::field_name::eq_ignore_case;
use crate::http::status::Status;
use crate::upstream::head::{FieldText, ResponseHead};

use super::super::upstream::accel::Accel;
use crate::server::core::reply::{Body, Reply};
use crate::server::core::request::Req;

/// The field names [`reply`] treats apart, found with one look at a name
/// ([`Known::of`]) instead of a comparison with each list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Known {
    /// Hidden by default (`ngx_http_proxy_hide_headers`): passed only when
    /// `proxy_pass_header` names it.
    Date,
    /// Hidden by default.
    Server,
    /// Hidden by default: `X-Pad` and the `X-Accel-*` fields.
    Hidden,
    /// `Content-Length`, `Connection`, `Keep-Alive`, `Transfer-Encoding`:
    /// they describe the upstream connection and its framing, never passed.
    Hop,
    /// `Content-Type`.
    ContentType,
    /// `Location`.
    Location,
    /// `Refresh`.
    Refresh,
}

/// Every name of [`Known`], by length: a name is compared with the few of
/// its length only.
const KNOWN: [(&str, Known); 15] = [
    ("Date", Known::Date),
    ("X-Pad", Known::Hidden),
    ("Server", Known::Server),
    ("Refresh", Known::Refresh),
    ("Location", Known::Location),
    ("Connection", Known::Hop),
    ("Keep-Alive", Known::Hop),
    ("Content-Type", Known::ContentType),
    ("Content-Length", Known::Hop),
    ("X-Accel-Expires", Known::Hidden),
    ("X-Accel-Charset", Known::Hidden),
    ("X-Accel-Redirect", Known::Hidden),
    ("X-Accel-Buffering", Known::Hidden),
    ("Transfer-Encoding", Known::Hop),
    ("X-Accel-Limit-Rate", Known::Hidden),
];

impl Known {
    /// What `name` is (ASCII case-insensitive), `None` for any other field.
    fn of(name: &[u8]) -> Option<Known> {
        // Lengths of the names of `KNOWN`: 4 to 18; most fields an
        // upstream sends have another length, or differ at once.
        if !(4..=18).contains(&name.len()) {
            return None;
        }
        KNOWN
            .iter()
            .filter(|(n, _)| n.len() == name.len())
            .find(|(n, _)| eq_ignore_case(n.as_bytes(), name))
            .map(|&(_, k)| k)
    }

    /// Whether nginx hides it by default (`ngx_http_proxy_hide_headers`).
    fn hidden_by_default(self) -> bool {
        matches!(self, Known::Date | Known::Server | Known::Hidden)
    }
}

fn ignored(conf: &LocConf, name: &str) -> bool {
    conf.proxy_ignore_headers
        .iter()
        .any(|h| h.eq_ignore_ascii_case(name))
}

/// Whether `name` is in `list` (ASCII case-insensitive).
fn listed(list: &[String], name: &[u8]) -> bool {
    list.iter().any(|h| h.as_bytes().eq_ignore_ascii_case(name))
}

/// Whether a field named `name` (which is `known`) is not passed on: one
/// of [`Known::Hop`], or hidden (by default or by `proxy_hide_header`) and
/// not `proxy_pass_header`. As in nginx's
/// `ngx_http_upstream_hide_headers_hash`, the pass list takes names off
/// the whole hide list, `proxy_hide_header`'s own names included, whatever
/// level each list comes from.
fn withheld(conf: &LocConf, name: &[u8], known: Option<Known>) -> bool {
    if known == Some(Known::Hop) {
        return true;
    }
    let hidden =
        known.is_some_and(Known::hidden_by_default) || listed(&conf.proxy_hide_header, name);
    hidden && !listed(&conf.proxy_pass_header, name)
}

/// The reply for `head` (its body is the caller's), and what `X-Accel-*`
/// asked.
pub fn reply(r: &Req<'_>, conf: &LocConf, head: &ResponseHead) -> (Reply, Accel) {
    let mut reply = Reply::new(Status(head.status), Body::Empty);
    // The upstream's status line passes as written; one that is what
    // nowait would write for the code anyway is not copied.
    if !Status(head.status).is_standard_line(&head.status_line) {
        reply.status_line = Some(owned_lossy(&head.status_line));
    }
    reply.length_override = head.content_length.filter(|_| !head.chunked);
    reply.content = true;
    // Room for every field at once: most are passed on.
    reply.extra.reserve(head.headers.len());
    let mut accel = Accel::default();
    for (i, ((name, value), text)) in head.headers.iter_text().enumerate() {
        // Names are compared as bytes: only a field passed on is made text
        // (most responses carry framing and hidden fields the client never
        // sees).
        if name.len() > ACCEL.len() && eq_ignore_case(&name[..ACCEL.len()], ACCEL) {
            steer(conf, &borrowed_lossy(name), value, &mut accel, &mut reply);
        }
        let known = Known::of(name);
        if withheld(conf, name, known) {
            continue;
        }
        if known.is_none() {
            // Passed on as it came: the head's own text, shared, not
            // copied. The list was checked as text once; a field that is
            // not text (rare) is converted on its own.
            let field = match text {
                Some(_) => head.headers.shared_text(i),
                None => None,
            };
            reply.extra.push(
                field.unwrap_or_else(|| (owned_lossy(name).into(), owned_lossy(value).into())),
            );
            continue;
        }
        let owned_name = || -> FieldText {
            match head.headers.shared_text(i) {
                Some((n, _)) => n,
                None => owned_lossy(name).into(),
            }
        };
        let text = text.map_or_else(|| owned_lossy(value), |(_, v)| v.to_owned());
        if known == Some(Known::ContentType) {
            reply.set_upstream_content_type(text);
        } else if known == Some(Known::Server) {
            reply.server = Some(text);
        } else if known == Some(Known::Date) {
            reply.date = Some(text);
        } else if known == Some(Known::Location) && reply.location.is_none() {
            // Only a rewritten value becomes the response's own Location,
            // which the header filter makes absolute; one no rule matched
            // passes as the upstream wrote it
            // (`ngx_http_upstream_rewrite_location`).
            match rewrite_redirect(r, conf, &text, 0) {
                // The header filter makes a rewritten path absolute.
                Some(rewritten) => reply.location = Some(rewritten),
                // One no rule rewrote stays among the upstream's fields, as
                // it was written (nginx leaves `headers_out.location` unset
                // for a relative one).
                None if text.starts_with('/') => reply.extra.push((owned_name(), text.into())),
                None => reply.location = Some(text),
            }
        } else if known == Some(Known::Refresh) {
            let lower = text.to_ascii_lowercase();
            let value = match lower.find("url=") {
                Some(i) => rewrite_redirect(r, conf, &text, i + 4).unwrap_or(text),
                None => text,
            };
            reply.extra.push((owned_name(), value.into()));
        } else {
            reply.extra.push((owned_name(), text.into()));
        }
    }
    (reply, accel)
}

/// The prefix of the fields that steer a response.
const ACCEL: &[u8] = b"X-Accel-";

/// What an `X-Accel-*` field `name` with `value` asks of this response,
/// unless `proxy_ignore_headers` names it.
fn steer(conf: &LocConf, name: &str, value: &[u8], accel: &mut Accel, reply: &mut Reply) {
    if name.eq_ignore_ascii_case("X-Accel-Redirect") && !ignored(conf, "X-Accel-Redirect") {
        accel.redirect = Some(owned_lossy(value));
    } else if name.eq_ignore_ascii_case("X-Accel-Buffering") && !ignored(conf, "X-Accel-Buffering")
    {
        if value.eq_ignore_ascii_case(b"yes") {
            accel.buffering = Some(true);
        } else if value.eq_ignore_ascii_case(b"no") {
            accel.buffering = Some(false);
        }
    } else if name.eq_ignore_ascii_case("X-Accel-Limit-Rate")
        && !ignored(conf, "X-Accel-Limit-Rate")
    {
        accel.limit_rate = owned_lossy(value).trim().parse().ok();
    } else if name.eq_ignore_ascii_case("X-Accel-Charset") && !ignored(conf, "X-Accel-Charset") {
        // The charset filter sends the response in it
        // (`ngx_http_upstream_process_charset`).
        reply.override_charset = Some(owned_lossy(value));
    }
}

/// `bytes` as text, each invalid UTF-8 sequence replaced by U+FFFD; valid
/// text (nearly every header) skips `from_utf8_lossy`'s chunk walk.
fn owned_lossy(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// [`owned_lossy`] without the copy when `bytes` are valid.
fn borrowed_lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// `proxy_redirect` applied to `value` from byte `prefix` on (0 for
/// `Location`, after `url=` for `Refresh`): the first rule that matches
/// replaces the matched part (a text rule: a prefix, compared exactly, as
/// nginx's `ngx_rstrncmp`; a regex: the whole rest, with its captures).
/// `None` when no rule matched.
pub fn rewrite_redirect(r: &Req<'_>, conf: &LocConf, value: &str, prefix: usize) -> Option<String> {
    let ProxyRedirect::Rules(rules) = &conf.proxy_redirect else {
        return None;
    };
    let rest = value.get(prefix..)?;
    for rule in rules {
        match &rule.from {
            RedirectFrom::Text(t) => {
                let pattern = r.expand_lossy(t);
                if let Some(tail) = rest.strip_prefix(pattern.as_str()) {
                    let to = r.expand_lossy(&rule.to);
                    return Some(format!("{}{to}{tail}", &value[..prefix]));
                }
            }
            RedirectFrom::Regex { re, .. } => {
                // As `ngx_http_regex_exec`: the captures become the
                // request's, for the replacement.
                if !r.regex_exec(re, rest) {
                    continue;
                }
                let to = r.expand_lossy(&rule.to);
                return Some(format!("{}{to}", &value[..prefix]));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_in_any_case_and_only_them() {
        for (name, known) in KNOWN {
            assert_eq!(Known::of(name.as_bytes()), Some(known), "{name}");
            let lower = name.to_ascii_lowercase();
            assert_eq!(Known::of(lower.as_bytes()), Some(known), "{lower}");
            let upper = name.to_ascii_uppercase();
            assert_eq!(Known::of(upper.as_bytes()), Some(known), "{upper}");
            // One byte more or less, or another last byte: another field.
            assert_eq!(Known::of(&name.as_bytes()[1..]), None);
            assert_eq!(Known::of(format!("{name}s").as_bytes()), None);
            let mut other = name.as_bytes().to_vec();
            *other.last_mut().unwrap() = b'_';
            assert_eq!(Known::of(&other), None);
        }
        for name in [
            "",
            "X",
            "ETag",
            "X-Accel-Foo",
            "Last-Modified",
            "Accept-Ranges",
        ] {
            assert_eq!(Known::of(name.as_bytes()), None, "{name}");
        }
    }

    #[test]
    fn nginx_hides_and_drops_the_same_fields() {
        // `ngx_http_proxy_hide_headers`, and the fields that describe the
        // upstream connection.
        let hidden = [
            "Date",
            "Server",
            "X-Pad",
            "X-Accel-Expires",
            "X-Accel-Redirect",
            "X-Accel-Limit-Rate",
            "X-Accel-Buffering",
            "X-Accel-Charset",
        ];
        let hop = [
            "Content-Length",
            "Connection",
            "Keep-Alive",
            "Transfer-Encoding",
        ];
        let conf = LocConf::default();
        for name in hidden.iter().chain(&hop) {
            assert!(
                withheld(&conf, name.as_bytes(), Known::of(name.as_bytes())),
                "{name}"
            );
        }
        for name in ["Content-Type", "Location", "Refresh", "ETag", "X-Accel-Foo"] {
            assert!(
                !withheld(&conf, name.as_bytes(), Known::of(name.as_bytes())),
                "{name}"
            );
        }
        let conf = LocConf {
            proxy_pass_header: vec!["server".into(), "connection".into()],
            proxy_hide_header: vec!["ETag".into()],
            ..LocConf::default()
        };
        // `proxy_pass_header` passes a hidden field, never a hop-by-hop one.
        assert!(!withheld(&conf, b"Server", Some(Known::Server)));
        assert!(withheld(&conf, b"Date", Some(Known::Date)));
        assert!(withheld(&conf, b"Connection", Some(Known::Hop)));
        assert!(withheld(&conf, b"etag", None));
        // It takes a name off `proxy_hide_header`'s list too, a default
        // one named again included.
        let conf = LocConf {
            proxy_pass_header: vec!["x-foo".into(), "Date".into()],
            proxy_hide_header: vec!["X-Foo".into(), "date".into(), "X-Bar".into()],
            ..LocConf::default()
        };
        assert!(!withheld(&conf, b"X-Foo", None));
        assert!(!withheld(&conf, b"Date", Some(Known::Date)));
        assert!(withheld(&conf, b"X-Bar", None));
        assert!(withheld(&conf, b"Server", Some(Known::Server)));
    }
}
