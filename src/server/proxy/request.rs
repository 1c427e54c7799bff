//! The request line and header block nowait sends upstream, built as
//! nginx's `ngx_http_proxy_create_request` builds them.
//!
//! - The URI: the `proxy_pass` URI part replaces the location's prefix
//!   (`location /a/ { proxy_pass http://u/b/; }`: `/a/x` → `/b/x`); without
//!   a URI part the client's own request target goes as received, unless a
//!   rewrite or an internal redirect changed it, in which case the current
//!   URI goes, escaped as nginx escapes it.
//! - The headers: the location's `proxy_set_header` entries in order, then
//!   nginx's own defaults that no entry named (`Host: $proxy_host`,
//!   `Connection: close`, the body's length or `Transfer-Encoding:
//!   chunked`; `TE`, `Keep-Alive`, `Expect` and `Upgrade` empty, so not
//!   sent), then the client's headers except those named above. An entry
//!   whose value is empty is not sent.

use std::borrow::Cow;

use crate::config::inherit::LocConf;
use crate::config::model::{Location, LocationMatch, ProxyHttpVersion};
use crate::config::template::Template;
use crate::http::uri::escape_uri;

use super::super::upstream::protocol::BodyFraming;
use crate::server::core::request::Req;

/// nginx's default upstream headers, after the user's (`ngx_http_proxy_headers`).
const DEFAULT_HEADERS: [(&str, Default); 8] = [
    ("Host", Default::ProxyHost),
    ("Connection", Default::Close),
    ("Content-Length", Default::BodyLength),
    ("Transfer-Encoding", Default::Chunked),
    ("TE", Default::Empty),
    ("Keep-Alive", Default::Empty),
    ("Expect", Default::Empty),
    ("Upgrade", Default::Empty),
];

/// What a default header's value is.
#[derive(Clone, Copy)]
enum Default {
    ProxyHost,
    Close,
    BodyLength,
    Chunked,
    Empty,
}

/// The URI to send: see the module header. `uri_part` is the URI of the
/// `proxy_pass` URL (static or evaluated), if it has one; `dynamic` says
/// the URL had variables (its URI is then sent as it is).
pub fn request_target(
    r: &Req<'_>,
    location: Option<&Location>,
    uri_part: Option<&str>,
    dynamic: bool,
) -> Vec<u8> {
    let mut out = Vec::new();
    if dynamic {
        if let Some(u) = uri_part.filter(|u| !u.is_empty()) {
            out.extend_from_slice(u.as_bytes());
            return out;
        }
    }
    let uri_part = uri_part.unwrap_or("");
    if uri_part.is_empty() && r.valid_unparsed_uri() {
        out.extend_from_slice(&r.head.uri.request_uri);
        return out;
    }
    let prefix_len = match location.map(|l| &l.matcher) {
        Some(
            LocationMatch::Prefix(p) | LocationMatch::PrefixNoRegex(p) | LocationMatch::Exact(p),
        ) if r.valid_location && !uri_part.is_empty() => p.len().min(r.uri.len()),
        _ => 0,
    };
    if r.valid_location {
        out.extend_from_slice(uri_part.as_bytes());
    }
    let rest = &r.uri.as_bytes()[prefix_len..];
    if r.internal || r.quoted_uri() {
        escape_uri(rest, &mut out);
    } else {
        out.extend_from_slice(rest);
    }
    if let Some(args) = r.args() {
        out.push(b'?');
        out.extend_from_slice(args.as_bytes());
    }
    out
}

/// The request head: request line and header block, ending with the blank
/// line.
pub fn head(
    r: &Req<'_>,
    conf: &LocConf,
    method: &[u8],
    target: &[u8],
    body: BodyFraming,
    cache_defaults: Option<&[(&'static str, Vec<u8>)]>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(method);
    out.push(b' ');
    out.extend_from_slice(target);
    out.extend_from_slice(match conf.proxy_http_version {
        ProxyHttpVersion::V10 => b" HTTP/1.0\r\n",
        ProxyHttpVersion::V11 => b" HTTP/1.1\r\n",
    });
    // Which names the location's own entries, nginx's defaults and a
    // cached location's defaults claim: each claims a name once, the
    // earlier list first, and the client's fields of those names are not
    // passed on. Looked up in the lists themselves: nothing is allocated.
    let set = |name: &str| {
        conf.proxy_set_header
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    let defaulted = |name: &str| {
        DEFAULT_HEADERS
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    let cache_defaults = cache_defaults.unwrap_or_default();
    for (name, value) in &conf.proxy_set_header {
        push(&mut out, name, &r.expand(value));
    }
    for (name, default) in DEFAULT_HEADERS {
        if set(name) {
            continue;
        }
        let mut digits = [0u8; crate::http::decimal::U64_DIGITS];
        let value: &[u8] = match default {
            Default::ProxyHost => r
                .upstream
                .proxy_host
                .as_deref()
                .unwrap_or_default()
                .as_bytes(),
            Default::Close => b"close",
            Default::BodyLength => match body {
                BodyFraming::Length(n) => crate::http::decimal::decimal(n, &mut digits),
                _ => b"",
            },
            Default::Chunked => match body {
                BodyFraming::Chunked => b"chunked",
                _ => b"",
            },
            Default::Empty => b"",
        };
        push(&mut out, name, value);
    }
    // A cached location's own defaults (`ngx_http_proxy_cache_headers`):
    // the client's conditionals and ranges never reach the upstream.
    for (name, value) in cache_defaults {
        if set(name) || defaulted(name) {
            continue;
        }
        push(&mut out, name, value);
    }
    if conf.proxy_pass_request_headers {
        for (name, value) in r.head.headers.iter() {
            if set(name)
                || defaulted(name)
                || cache_defaults
                    .iter()
                    .any(|(n, _)| n.eq_ignore_ascii_case(name))
            {
                continue;
            }
            // The client's own fields go as received, an empty value
            // too (`ngx_http_proxy_create_request` copies them whole;
            // only `proxy_set_header` values that come out empty are
            // left out).
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// One header line; nothing for an empty value. CR and LF in a value
/// (from a variable) are dropped so that a value cannot end the head.
fn push(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    if value.is_empty() {
        return;
    }
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend(value.iter().copied().filter(|&b| b != b'\r' && b != b'\n'));
    out.extend_from_slice(b"\r\n");
}

/// The method to send: `proxy_method`, or the client's.
pub fn method<'r>(r: &'r Req<'_>, proxy_method: Option<&Template>) -> Cow<'r, [u8]> {
    match proxy_method {
        Some(t) => Cow::Owned(r.expand(t)),
        None => Cow::Borrowed(r.method().as_str().as_bytes()),
    }
}
