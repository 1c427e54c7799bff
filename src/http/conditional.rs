//! Conditional requests: nginx's not-modified filter
//! (`ngx_http_not_modified_filter_module.c`), deciding 200 / 304 / 412.
//!
//! Owns: evaluating `If-Unmodified-Since`, `If-Match`, `If-Modified-Since`
//! and `If-None-Match` against a file's mtime and ETag (RFC 9110 §13).
//! Must not: know about methods or statuses; call it only for a response
//! that would otherwise be 200, as nginx's filter runs only then (the method
//! is not looked at: static files answer 405 to anything but GET and HEAD
//! before this point).
//!
//! nginx departs from RFC 9110 §13.2.2 in ways kept here on purpose:
//! - an unparsable `If-Unmodified-Since` fails (412), it is not ignored;
//! - `If-Modified-Since` is compared for equality (`if_modified_since exact`,
//!   the default), not "not later than";
//! - `If-Modified-Since` is not ignored when `If-None-Match` is present:
//!   both must say "not modified" for a 304;
//! - tags are compared as raw text with nginx's list scan (no quoted-string
//!   parsing), weakly for `If-None-Match`, strongly for `If-Match`.

use crate::http::date::parse_http_date;

/// nginx's `if_modified_since` directive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IfModifiedSince {
    /// `off`: the header is ignored.
    Off,
    /// `exact` (the default): 304 only when the date equals the mtime.
    #[default]
    Exact,
    /// `before`: 304 when the date is the mtime or later.
    Before,
}

/// What the file offers to compare against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Validators<'a> {
    /// The `Last-Modified` time in Unix seconds, if the response has one.
    pub last_modified: Option<i64>,
    /// The `ETag` value with its quotes, if the response has one.
    pub etag: Option<&'a str>,
}

/// The request's conditional headers (from `RequestHead`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Conditions<'a> {
    /// `If-Modified-Since`.
    pub if_modified_since: Option<&'a str>,
    /// `If-Unmodified-Since`.
    pub if_unmodified_since: Option<&'a str>,
    /// `If-Match`.
    pub if_match: Option<&'a str>,
    /// `If-None-Match`.
    pub if_none_match: Option<&'a str>,
}

/// The filter's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Send the response as planned.
    Proceed,
    /// 304: keep `Last-Modified`, `ETag` and extra headers, drop
    /// `Content-Type`, `Content-Length`, `Accept-Ranges` and the body.
    NotModified,
    /// 412 with nginx's error page.
    PreconditionFailed,
}

/// Evaluates the conditions in nginx's order: `If-Unmodified-Since`,
/// `If-Match`, then `If-Modified-Since` and `If-None-Match` together.
pub fn evaluate(c: &Conditions<'_>, v: &Validators<'_>, mode: IfModifiedSince) -> Outcome {
    if let Some(iums) = c.if_unmodified_since {
        if !unmodified_since(iums, v.last_modified) {
            return Outcome::PreconditionFailed;
        }
    }
    if let Some(list) = c.if_match {
        if !etag_list_matches(list, v.etag, false) {
            return Outcome::PreconditionFailed;
        }
    }
    if c.if_modified_since.is_none() && c.if_none_match.is_none() {
        return Outcome::Proceed;
    }
    if let Some(ims) = c.if_modified_since {
        if modified_since(ims, v.last_modified, mode) {
            return Outcome::Proceed;
        }
    }
    if let Some(list) = c.if_none_match {
        if !etag_list_matches(list, v.etag, true) {
            return Outcome::Proceed;
        }
    }
    Outcome::NotModified
}

/// nginx's `ngx_http_test_if_unmodified`: true when the file was not
/// modified after the date. No mtime, or a bad date (nginx's -1), fails.
fn unmodified_since(value: &str, last_modified: Option<i64>) -> bool {
    let Some(mtime) = last_modified else {
        return false;
    };
    parse_http_date(value).unwrap_or(-1) >= mtime
}

/// nginx's `ngx_http_test_if_modified`: true when the full response must be
/// sent. A bad date counts as -1, which never equals an mtime.
fn modified_since(value: &str, last_modified: Option<i64>, mode: IfModifiedSince) -> bool {
    let Some(mtime) = last_modified else {
        return true;
    };
    if mode == IfModifiedSince::Off {
        return true;
    }
    let ims = parse_http_date(value).unwrap_or(-1);
    if ims == mtime {
        return false;
    }
    mode == IfModifiedSince::Exact || ims < mtime
}

/// nginx's `ngx_http_test_if_match`: `*` matches anything (even without an
/// ETag); otherwise the list is scanned for an element that starts with the
/// ETag and is followed only by spaces or tabs up to `,` or the end. With
/// `weak`, a `W/` prefix is ignored on both sides.
pub fn etag_list_matches(list: &str, etag: Option<&str>, weak: bool) -> bool {
    if list == "*" {
        return true;
    }
    let Some(etag) = etag else { return false };
    let mut etag = etag.as_bytes();
    if weak && etag.len() > 2 && etag.starts_with(b"W/") {
        etag = &etag[2..];
    }
    let list = list.as_bytes();
    let mut i = 0;
    while i < list.len() {
        if weak && list.len() - i > 2 && list[i..].starts_with(b"W/") {
            i += 2;
        }
        if etag.len() > list.len() - i {
            return false;
        }
        if list[i..].starts_with(etag) {
            let mut j = i + etag.len();
            while j < list.len() && matches!(list[j], b' ' | b'\t') {
                j += 1;
            }
            if j == list.len() || list[j] == b',' {
                return true;
            }
        }
        // Skip to the next element.
        while i < list.len() && list[i] != b',' {
            i += 1;
        }
        while i < list.len() && matches!(list[i], b' ' | b'\t' | b',') {
            i += 1;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const LM: i64 = 1_795_312_304; // Sun, 22 Nov 2026 01:51:44 GMT
    const LM_TEXT: &str = "Sun, 22 Nov 2026 01:51:44 GMT";
    const LATER: &str = "Sun, 22 Nov 2026 01:51:45 GMT";
    const EARLIER: &str = "Sun, 22 Nov 2026 01:51:43 GMT";
    const ETAG: &str = "\"6b024ab0-1a\"";

    fn v() -> Validators<'static> {
        Validators {
            last_modified: Some(LM),
            etag: Some(ETAG),
        }
    }

    fn eval(c: Conditions<'_>) -> Outcome {
        evaluate(&c, &v(), IfModifiedSince::Exact)
    }

    #[test]
    fn no_conditions_proceed() {
        assert_eq!(eval(Conditions::default()), Outcome::Proceed);
    }

    #[test]
    fn if_modified_since_exact() {
        let c = |d| Conditions {
            if_modified_since: Some(d),
            ..Default::default()
        };
        assert_eq!(eval(c(LM_TEXT)), Outcome::NotModified);
        assert_eq!(
            eval(c("Sunday, 22-Nov-26 01:51:44 GMT")),
            Outcome::NotModified
        );
        assert_eq!(eval(c("Sun Nov 22 01:51:44 2026")), Outcome::NotModified);
        // exact: a later date is not enough.
        assert_eq!(eval(c(LATER)), Outcome::Proceed);
        assert_eq!(eval(c(EARLIER)), Outcome::Proceed);
        assert_eq!(eval(c("garbage")), Outcome::Proceed);
    }

    #[test]
    fn if_modified_since_modes() {
        let c = |d| Conditions {
            if_modified_since: Some(d),
            ..Default::default()
        };
        assert_eq!(
            evaluate(&c(LATER), &v(), IfModifiedSince::Before),
            Outcome::NotModified
        );
        assert_eq!(
            evaluate(&c(EARLIER), &v(), IfModifiedSince::Before),
            Outcome::Proceed
        );
        assert_eq!(
            evaluate(&c(LM_TEXT), &v(), IfModifiedSince::Off),
            Outcome::Proceed
        );
        let no_mtime = Validators {
            last_modified: None,
            etag: Some(ETAG),
        };
        assert_eq!(
            evaluate(&c(LM_TEXT), &no_mtime, IfModifiedSince::Exact),
            Outcome::Proceed
        );
    }

    #[test]
    fn if_unmodified_since() {
        let c = |d| Conditions {
            if_unmodified_since: Some(d),
            ..Default::default()
        };
        assert_eq!(eval(c(LM_TEXT)), Outcome::Proceed);
        assert_eq!(eval(c(LATER)), Outcome::Proceed);
        assert_eq!(eval(c(EARLIER)), Outcome::PreconditionFailed);
        // nginx: a bad date fails the precondition (observed: 412).
        assert_eq!(eval(c("garbage")), Outcome::PreconditionFailed);
        let no_mtime = Validators {
            last_modified: None,
            etag: None,
        };
        assert_eq!(
            evaluate(&c(LATER), &no_mtime, IfModifiedSince::Exact),
            Outcome::PreconditionFailed
        );
    }

    #[test]
    fn if_match_is_strong() {
        let c = |l| Conditions {
            if_match: Some(l),
            ..Default::default()
        };
        assert_eq!(eval(c(ETAG)), Outcome::Proceed);
        assert_eq!(eval(c("*")), Outcome::Proceed);
        assert_eq!(eval(c("\"a\", \"6b024ab0-1a\"")), Outcome::Proceed);
        assert_eq!(eval(c("W/\"6b024ab0-1a\"")), Outcome::PreconditionFailed);
        assert_eq!(eval(c("\"x\"")), Outcome::PreconditionFailed);
        let no_etag = Validators {
            last_modified: Some(LM),
            etag: None,
        };
        let star = Conditions {
            if_match: Some("*"),
            ..Default::default()
        };
        assert_eq!(
            evaluate(&star, &no_etag, IfModifiedSince::Exact),
            Outcome::Proceed
        );
        let tag = Conditions {
            if_match: Some(ETAG),
            ..Default::default()
        };
        assert_eq!(
            evaluate(&tag, &no_etag, IfModifiedSince::Exact),
            Outcome::PreconditionFailed
        );
    }

    #[test]
    fn if_none_match_is_weak() {
        let c = |l| Conditions {
            if_none_match: Some(l),
            ..Default::default()
        };
        assert_eq!(eval(c(ETAG)), Outcome::NotModified);
        assert_eq!(eval(c("W/\"6b024ab0-1a\"")), Outcome::NotModified);
        assert_eq!(eval(c("\"x\" ,\t\"6b024ab0-1a\"  ")), Outcome::NotModified);
        assert_eq!(eval(c("*")), Outcome::NotModified);
        assert_eq!(eval(c("\"x\"")), Outcome::Proceed);
        assert_eq!(eval(c("\"6b024ab0-1a\"x")), Outcome::Proceed);
        assert_eq!(eval(c("\"6b024ab0-1")), Outcome::Proceed);
        assert_eq!(eval(c("")), Outcome::Proceed);
    }

    #[test]
    fn both_ims_and_inm_must_agree() {
        // nginx: matching ETag but IMS one second later (exact) → 200.
        let c = Conditions {
            if_none_match: Some(ETAG),
            if_modified_since: Some(LATER),
            ..Default::default()
        };
        assert_eq!(eval(c), Outcome::Proceed);
        let c = Conditions {
            if_none_match: Some(ETAG),
            if_modified_since: Some(LM_TEXT),
            ..Default::default()
        };
        assert_eq!(eval(c), Outcome::NotModified);
        let c = Conditions {
            if_none_match: Some("\"x\""),
            if_modified_since: Some(LM_TEXT),
            ..Default::default()
        };
        assert_eq!(eval(c), Outcome::Proceed);
    }

    #[test]
    fn preconditions_come_first() {
        let c = Conditions {
            if_match: Some("\"x\""),
            if_none_match: Some(ETAG),
            ..Default::default()
        };
        assert_eq!(eval(c), Outcome::PreconditionFailed);
    }

    #[test]
    fn weak_etag_on_the_server_side() {
        let weak = Validators {
            last_modified: None,
            etag: Some("W/\"abc\""),
        };
        assert!(etag_list_matches("\"abc\"", weak.etag, true));
        assert!(!etag_list_matches("\"abc\"", weak.etag, false));
        assert!(etag_list_matches("W/\"abc\"", weak.etag, false));
    }
}
