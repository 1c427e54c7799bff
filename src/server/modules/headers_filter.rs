//! nginx's headers filter (`ngx_http_headers_filter_module.c`): `expires`,
//! `add_header` and `add_trailer` applied to a reply, and the trailers made
//! when its body ends.
//!
//! Owns: which fields a location adds, replaces or removes, and when.
//! Must not: write bytes (`http::response` does) or decide the body.
//!
//! nginx's rules, kept here:
//! - without `always`, fields go only on 200, 201, 204, 206, 301, 302,
//!   303, 304, 307 and 308; `expires` too;
//! - `add_header Last-Modified`, `ETag` replace the reply's own (in place),
//!   and an empty value removes it; a `Last-Modified` set this way is the
//!   one `expires modified`, `If-Range` and the log see;
//! - `Cache-Control` and `Link` add a line each (an empty value adds none);
//! - any other field is added when its value is not empty;
//! - `expires` replaces the first `Cache-Control` and drops the others;
//! - trailers are expected (the body goes chunked) when some `add_trailer`
//!   applies; each is computed after the body, and one with an empty value
//!   is left out.

use crate::config::core_model::{ExpiresKind, parse_expires};
use crate::http::date::{format_unix, parse_http_date};

use crate::server::core::reply::{ADD_HEADER_STATUSES, Reply};
use crate::server::core::request::Req;
use crate::server::core::vars::Response;

/// `Expires` of `expires epoch`.
pub const EPOCH_EXPIRES: &str = "Thu, 01 Jan 1970 00:00:01 GMT";
/// `Expires` of `expires max`.
pub const MAX_EXPIRES: &str = "Thu, 31 Dec 2037 23:55:55 GMT";
/// `Cache-Control` of `expires max`: ten years.
pub const MAX_CACHE_CONTROL: &str = "max-age=315360000";

/// Seconds in a day, for `expires @time`.
const DAY: i64 = 24 * 60 * 60;

/// Whether fields without `always` apply to `status`.
fn safe(status: u16) -> bool {
    ADD_HEADER_STATUSES.contains(&status)
}

/// Applies `expires`, `add_header` and `add_trailer` of the request's
/// location to `reply`, once.
pub fn apply(reply: &mut Reply, r: &Req<'_>) {
    if reply.headers_done {
        return;
    }
    reply.headers_done = true;
    let conf = r.conf;
    let safe = safe(reply.status.0);
    if safe && conf.expires.kind != ExpiresKind::Off {
        set_expires(reply, r);
    }
    for h in &conf.add_headers {
        if !safe && !h.always {
            continue;
        }
        let value = r.expand_lossy(&h.value);
        set_header(reply, &h.name, value);
    }
    if conf.add_trailers.iter().any(|t| safe || t.always) {
        reply.trailers = true;
    }
}

/// One `add_header` field, with nginx's special names.
fn set_header(reply: &mut Reply, name: &str, value: String) {
    if name.eq_ignore_ascii_case("Last-Modified") {
        // A date that does not parse leaves no time to compare with, as
        // nginx's -1.
        reply.last_modified = parse_http_date(&value);
        replace_field(reply, "Last-Modified", value);
    } else if name.eq_ignore_ascii_case("ETag") {
        if reply.etag.is_some() {
            reply.etag = (!value.is_empty()).then_some(value);
        } else {
            replace_field(reply, "ETag", value);
        }
    } else if !value.is_empty() {
        reply.extra.push((name.to_string().into(), value.into()));
    }
}

/// nginx's `ngx_http_set_response_header`: the field replaces the reply's
/// own where it stands (or is added at the end); empty removes it.
fn replace_field(reply: &mut Reply, name: &str, value: String) {
    let at = reply
        .extra
        .iter()
        .position(|(n, _)| n.eq_ignore_ascii_case(name));
    match (at, value.is_empty()) {
        (Some(i), true) => {
            reply.extra.remove(i);
        }
        (Some(i), false) => reply.extra[i].1 = value.into(),
        (None, true) => {}
        (None, false) => reply.extra.push((name.to_string().into(), value.into())),
    }
}

/// The reply's `Last-Modified` time as nginx holds it
/// (`r->headers_out.last_modified_time`): a field an upstream or
/// `add_header` set, else the file's.
pub fn last_modified_time(reply: &Reply) -> Option<i64> {
    match reply
        .extra
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("Last-Modified"))
    {
        Some((_, v)) => parse_http_date(v),
        None => reply.last_modified,
    }
}

/// The reply's `ETag` as nginx holds it (`r->headers_out.etag`).
pub fn etag(reply: &Reply) -> Option<&str> {
    match &reply.etag {
        Some(e) => Some(e),
        None => reply
            .extra
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("ETag"))
            .map(|(_, v)| v.as_str()),
    }
}

/// `ngx_http_set_expires`.
fn set_expires(reply: &mut Reply, r: &Req<'_>) {
    let e = &r.conf.expires;
    let (kind, time) = match &e.value {
        None => (e.kind, e.time),
        Some(t) => {
            let text = r.expand_lossy(t);
            match parse_expires(&text, e.kind) {
                Ok((ExpiresKind::Off, _)) | Err(_) => return,
                Ok(v) => v,
            }
        }
    };
    let now = crate::http::date::unix_secs(crate::metrics::timed::wall_now());
    let (expires, cache_control) = match kind {
        ExpiresKind::Off => return,
        ExpiresKind::Epoch => (EPOCH_EXPIRES.to_string(), "no-cache".to_string()),
        ExpiresKind::Max => (MAX_EXPIRES.to_string(), MAX_CACHE_CONTROL.to_string()),
        _ if time == 0 && kind != ExpiresKind::Daily => (format_unix(now), "max-age=0".into()),
        _ => {
            let (at, max_age) = match (kind, last_modified_time(reply)) {
                (ExpiresKind::Daily, _) => {
                    let at = next_time_of_day(now, time);
                    (at, at - now)
                }
                (ExpiresKind::Access, _) | (_, None) => (now + time, time),
                (_, Some(lm)) => (lm + time, lm + time - now),
            };
            let cc = if e.time < 0 || max_age < 0 {
                "no-cache".to_string()
            } else {
                format!("max-age={max_age}")
            };
            (format_unix(at), cc)
        }
    };
    match reply
        .extra
        .iter_mut()
        .find(|(n, _)| n.eq_ignore_ascii_case("Expires"))
    {
        Some(f) => f.1 = expires.into(),
        None => reply.extra.push(("Expires".into(), expires.into())),
    }
    let mut seen = false;
    reply.extra.retain_mut(|(n, v)| {
        if !n.eq_ignore_ascii_case("Cache-Control") {
            return true;
        }
        if seen {
            return false;
        }
        seen = true;
        *v = cache_control.clone().into();
        true
    });
    if !seen {
        reply
            .extra
            .push(("Cache-Control".into(), cache_control.into()));
    }
}

/// `ngx_next_time`: the next moment (after `now`) the local clock shows
/// `secs` after midnight.
fn next_time_of_day(now: i64, secs: i64) -> i64 {
    let offset = crate::sys::time::LocalTime::from_epoch(now).map_or(0, |t| i64::from(t.gmtoff));
    let local = now + offset;
    let midnight = local - local.rem_euclid(DAY);
    let next = midnight + secs - offset;
    if next > now { next } else { next + DAY }
}

/// The trailers of a reply whose body has just ended: each `add_trailer`
/// that applies to its status, with its value now (variables such as
/// `$upstream_response_length` are final), leaving out empty ones. Each is
/// visible to the next as `$sent_trailer_*`.
pub fn trailers(r: &Req<'_>, reply: &Reply, resp: Response<'_>) -> Vec<(String, String)> {
    let safe = safe(reply.status.0);
    r.trailers.borrow_mut().clear();
    for t in &r.conf.add_trailers {
        if !safe && !t.always {
            continue;
        }
        let value = String::from_utf8_lossy(&r.expand_with(&t.value, Some(resp))).into_owned();
        if !value.is_empty() {
            r.trailers.borrow_mut().push((t.name.clone(), value));
        }
    }
    r.trailers.borrow().clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::status::Status;
    use crate::server::core::reply::Body;

    #[test]
    fn empty_values_remove_replaced_fields() {
        let mut reply = Reply::new(Status::OK, Body::Empty);
        reply.last_modified = Some(1000);
        reply.etag = Some("\"x\"".into());
        set_header(&mut reply, "last-modified", String::new());
        set_header(&mut reply, "ETag", String::new());
        assert_eq!(reply.last_modified, None);
        assert_eq!(reply.etag, None);
        assert!(reply.extra.is_empty());
        set_header(&mut reply, "X-Empty", String::new());
        assert!(reply.extra.is_empty());
    }

    #[test]
    fn a_set_last_modified_is_the_one_seen() {
        let mut reply = Reply::new(Status::OK, Body::Empty);
        reply.last_modified = Some(1000);
        set_header(
            &mut reply,
            "Last-Modified",
            "Mon, 28 Sep 1970 06:00:00 GMT".into(),
        );
        assert_eq!(last_modified_time(&reply), Some(23_349_600));
        assert_eq!(
            reply.extra,
            vec![(
                "Last-Modified".into(),
                "Mon, 28 Sep 1970 06:00:00 GMT".into()
            )]
        );
    }

    #[test]
    fn an_upstream_etag_is_replaced_in_place() {
        let mut reply = Reply::new(Status::OK, Body::Empty);
        reply.extra.push(("X-A".into(), "1".into()));
        reply.extra.push(("ETag".into(), "\"up\"".into()));
        reply.extra.push(("X-B".into(), "2".into()));
        set_header(&mut reply, "ETag", "\"mine\"".into());
        assert_eq!(reply.extra[1], ("ETag".into(), "\"mine\"".into()));
        assert_eq!(etag(&reply), Some("\"mine\""));
    }

    #[test]
    fn the_next_time_of_day_is_after_now() {
        let now = 1_800_000_000;
        let at = next_time_of_day(now, 15 * 3600 + 30 * 60 + 33);
        assert!(at > now && at - now <= DAY);
        let same = next_time_of_day(now, 0);
        assert!(same > now && same - now <= DAY);
    }
}
