use super::*;
use crate::upstream::head::{HeadParse, parse_head};

const NOW: i64 = 1_700_000_000;
/// `NOW` as an HTTP date.
const NOW_DATE: &str = "Tue, 14 Nov 2023 22:13:20 GMT";

/// A response head with `status` and `fields` (each "Name: value").
fn head(status: u16, fields: &[&str]) -> ResponseHead {
    let mut text = format!("HTTP/1.1 {status} X\r\n");
    for f in fields {
        text.push_str(f);
        text.push_str("\r\n");
    }
    text.push_str("\r\n");
    match parse_head(text.as_bytes()) {
        Ok(HeadParse::Complete { head, .. }) => head,
        other => panic!("not a head: {other:?}"),
    }
}

fn settings<'a>(valid: &'a [(Vec<u16>, Duration)], ignore: &[&str]) -> Settings<'a> {
    Settings {
        valid,
        ignore: IgnoreHeaders::from_names(ignore),
    }
}

fn decide_with(
    status: u16,
    fields: &[&str],
    valid: &[(Vec<u16>, Duration)],
    ignore: &[&str],
) -> Result<Store, Uncacheable> {
    decide(&head(status, fields), &settings(valid, ignore), NOW)
}

fn valid_sec(fields: &[&str]) -> Result<i64, Uncacheable> {
    decide_with(200, fields, &[], &[]).map(|s| s.valid_sec)
}

const MIN10: Duration = Duration::from_secs(600);

#[test]
fn now_date_is_now() {
    assert_eq!(parse_http_date(NOW_DATE), Some(NOW));
}

#[test]
fn nothing_said_and_no_valid_list_is_not_cached() {
    assert_eq!(valid_sec(&[]), Err(Uncacheable::NoValidity));
}

#[test]
fn valid_list_without_codes_covers_200_301_302() {
    let v = [(vec![], MIN10)];
    for s in [200, 301, 302] {
        assert_eq!(
            decide_with(s, &[], &v, &[]).map(|s| s.valid_sec),
            Ok(NOW + 600),
            "{s}"
        );
    }
    assert_eq!(decide_with(404, &[], &v, &[]), Err(Uncacheable::NoValidity));
}

#[test]
fn valid_list_first_match_wins_and_any_matches_all() {
    let v = [
        (vec![404], Duration::from_secs(60)),
        (vec![ANY_STATUS], Duration::from_secs(5)),
        (vec![200], MIN10),
    ];
    assert_eq!(valid_for(&v, 404), Some(Duration::from_secs(60)));
    assert_eq!(valid_for(&v, 200), Some(Duration::from_secs(5)));
    assert_eq!(valid_for(&v, 500), Some(Duration::from_secs(5)));
    // A zero time is no time.
    assert_eq!(valid_for(&[(vec![200], Duration::ZERO)], 200), None);
}

#[test]
fn x_accel_expires_seconds_absolute_and_zero() {
    assert_eq!(valid_sec(&["X-Accel-Expires: 30"]), Ok(NOW + 30));
    assert_eq!(
        valid_sec(&["X-Accel-Expires: @1800000000"]),
        Ok(1_800_000_000)
    );
    assert_eq!(
        valid_sec(&["X-Accel-Expires: 0"]),
        Err(Uncacheable::XAccelExpiresZero)
    );
    // Not a number: ignored, so proxy_cache_valid decides.
    assert_eq!(
        valid_sec(&["X-Accel-Expires: soon"]),
        Err(Uncacheable::NoValidity)
    );
    assert_eq!(
        valid_sec(&["X-Accel-Expires: @"]),
        Err(Uncacheable::NoValidity)
    );
    assert_eq!(
        valid_sec(&["X-Accel-Expires: -5"]),
        Err(Uncacheable::NoValidity)
    );
    assert_eq!(
        valid_sec(&["X-Accel-Expires: 99999999999999999999"]),
        Err(Uncacheable::NoValidity)
    );
}

#[test]
fn x_accel_expires_beats_cache_control_and_expires() {
    assert_eq!(
        valid_sec(&["Cache-Control: max-age=100", "X-Accel-Expires: 30"]),
        Ok(NOW + 30)
    );
    assert_eq!(
        valid_sec(&["X-Accel-Expires: 30", "Cache-Control: max-age=100"]),
        Ok(NOW + 30)
    );
    // After X-Accel-Expires set a time, Cache-Control is not read at all.
    assert_eq!(
        valid_sec(&["X-Accel-Expires: 30", "Cache-Control: no-store"]),
        Ok(NOW + 30)
    );
    assert_eq!(
        valid_sec(&[
            "X-Accel-Expires: 30",
            "Expires: Thu, 01 Jan 1970 00:00:00 GMT"
        ]),
        Ok(NOW + 30)
    );
}

#[test]
fn cache_control_before_x_accel_expires_still_forbids() {
    assert_eq!(
        valid_sec(&["Cache-Control: private", "X-Accel-Expires: 30"]),
        Err(Uncacheable::CacheControlForbids)
    );
}

#[test]
fn ignored_x_accel_expires_still_silences_a_later_cache_control_once_a_time_is_set() {
    // Expires sets a time; the ignored X-Accel-Expires marks itself seen;
    // the Cache-Control after them is then skipped (nginx's test is on the
    // field's presence).
    let d = decide_with(
        200,
        &[
            "Expires: Tue, 14 Nov 2023 23:13:20 GMT",
            "X-Accel-Expires: 5",
            "Cache-Control: no-store",
        ],
        &[],
        &["X-Accel-Expires"],
    );
    assert_eq!(d.map(|s| s.valid_sec), Ok(NOW + 3600));
}

#[test]
fn cache_control_forbidding_words_are_substrings() {
    for v in [
        "no-cache",
        "No-Store",
        "private",
        "max-age=5, private=\"x\"",
        "x-no-cache-y",
    ] {
        assert_eq!(
            valid_sec(&[&format!("Cache-Control: {v}")]),
            Err(Uncacheable::CacheControlForbids),
            "{v}"
        );
    }
    assert_eq!(
        decide_with(200, &["Cache-Control: no-cache"], &[], &["Cache-Control"]),
        Err(Uncacheable::NoValidity)
    );
}

#[test]
fn s_maxage_beats_max_age() {
    assert_eq!(
        valid_sec(&["Cache-Control: max-age=10, s-maxage=20"]),
        Ok(NOW + 20)
    );
    assert_eq!(
        valid_sec(&["Cache-Control: public, max-age=10"]),
        Ok(NOW + 10)
    );
    assert_eq!(valid_sec(&["Cache-Control: MAX-AGE=7;x"]), Ok(NOW + 7));
}

#[test]
fn bad_or_zero_ages_forbid() {
    for v in [
        "max-age=0",
        "max-age=",
        "max-age=1x",
        "max-age=\"5\"",
        "s-maxage=-1",
    ] {
        assert_eq!(
            valid_sec(&[&format!("Cache-Control: {v}")]),
            Err(Uncacheable::CacheControlAge),
            "{v}"
        );
    }
}

#[test]
fn stale_allowances() {
    let s = decide_with(
        200,
        &["Cache-Control: max-age=10, stale-while-revalidate=7"],
        &[],
        &[],
    )
    .expect("cached");
    assert_eq!((s.updating_sec, s.error_sec), (7, 7));
    let s = decide_with(
        200,
        &["Cache-Control: max-age=10, stale-if-error=9, stale-while-revalidate=7"],
        &[],
        &[],
    )
    .expect("cached");
    assert_eq!((s.updating_sec, s.error_sec), (7, 9));
    assert_eq!(
        valid_sec(&["Cache-Control: max-age=10, stale-if-error=x"]),
        Err(Uncacheable::CacheControlAge)
    );
    // Without a max-age the allowances still count; the time comes from
    // proxy_cache_valid.
    let s = decide_with(
        200,
        &["Cache-Control: stale-if-error=3"],
        &[(vec![], MIN10)],
        &[],
    )
    .expect("cached");
    assert_eq!(
        (s.valid_sec, s.updating_sec, s.error_sec),
        (NOW + 600, 0, 3)
    );
}

#[test]
fn expires_counts_when_nothing_else_did() {
    assert_eq!(
        valid_sec(&["Expires: Tue, 14 Nov 2023 23:13:20 GMT"]),
        Ok(NOW + 3600)
    );
    assert_eq!(valid_sec(&[&format!("Expires: {NOW_DATE}")]), Ok(NOW));
    assert_eq!(
        valid_sec(&["Expires: Tue, 14 Nov 2023 21:13:20 GMT"]),
        Err(Uncacheable::Expired)
    );
    assert_eq!(valid_sec(&["Expires: 0"]), Err(Uncacheable::Expired));
    // Cache-Control's time first: Expires stands aside, even a past one.
    assert_eq!(
        valid_sec(&["Cache-Control: max-age=5", "Expires: 0"]),
        Ok(NOW + 5)
    );
    // Expires first, then Cache-Control overrides the time.
    assert_eq!(
        valid_sec(&[
            "Expires: Tue, 14 Nov 2023 23:13:20 GMT",
            "Cache-Control: max-age=5"
        ]),
        Ok(NOW + 5)
    );
    assert_eq!(
        decide_with(200, &["Expires: 0"], &[(vec![], MIN10)], &["Expires"]).map(|s| s.valid_sec),
        Ok(NOW + 600)
    );
}

#[test]
fn headers_win_over_proxy_cache_valid() {
    let v = [(vec![ANY_STATUS], MIN10)];
    assert_eq!(
        decide_with(200, &["Cache-Control: max-age=5"], &v, &[]).map(|s| s.valid_sec),
        Ok(NOW + 5)
    );
}

#[test]
fn set_cookie_forbids_unless_ignored() {
    let v = [(vec![], MIN10)];
    assert_eq!(
        decide_with(200, &["Set-Cookie: a=b"], &v, &[]),
        Err(Uncacheable::SetCookie)
    );
    assert!(decide_with(200, &["Set-Cookie: a=b"], &v, &["set-cookie"]).is_ok());
}

#[test]
fn vary_star_and_long_vary_forbid() {
    let v = [(vec![], MIN10)];
    assert_eq!(
        decide_with(200, &["Vary: *"], &v, &[]),
        Err(Uncacheable::Vary)
    );
    let long = format!("Vary: {}", "a".repeat(129));
    assert_eq!(decide_with(200, &[&long], &v, &[]), Err(Uncacheable::Vary));
    let max = format!("Vary: {}", "a".repeat(128));
    assert!(decide_with(200, &[&max], &v, &[]).is_ok());
    // Only a lone star: nginx compares the whole value.
    assert_eq!(
        decide_with(200, &["Vary: *, Accept"], &v, &[]).map(|s| s.vary),
        Ok(b"*, Accept".to_vec())
    );
    // The last Vary is the one stored.
    assert_eq!(
        decide_with(200, &["Vary: A", "Vary: B"], &v, &[]).map(|s| s.vary),
        Ok(b"B".to_vec())
    );
    let ignored = decide_with(200, &["Vary: *"], &v, &["Vary"]).expect("cached");
    assert!(ignored.vary.is_empty());
}

#[test]
fn x_accel_redirect_is_not_cached_unless_ignored() {
    let v = [(vec![], MIN10)];
    assert_eq!(
        decide_with(200, &["X-Accel-Redirect: /x"], &v, &[]),
        Err(Uncacheable::XAccelRedirect)
    );
    assert!(decide_with(200, &["X-Accel-Redirect: /x"], &v, &["X-Accel-Redirect"]).is_ok());
}

#[test]
fn validators_only_for_200_and_206() {
    let v = [(vec![ANY_STATUS], MIN10)];
    let fields = [
        "ETag: \"a\"",
        "ETag: \"b\"",
        "Last-Modified: Tue, 14 Nov 2023 21:13:20 GMT",
        "Last-Modified: Tue, 14 Nov 2023 20:13:20 GMT",
    ];
    let s = decide_with(200, &fields, &v, &[]).expect("cached");
    assert_eq!(s.etag, b"\"a\"");
    assert_eq!(s.last_modified, NOW - 7200);
    assert_eq!(s.date, NOW);
    let s = decide_with(206, &fields, &v, &[]).expect("cached");
    assert_eq!(s.etag, b"\"a\"");
    let s = decide_with(404, &fields, &v, &[]).expect("cached");
    assert!(s.etag.is_empty());
    assert_eq!(s.last_modified, -1);
    let s = decide_with(200, &["Last-Modified: yesterday"], &v, &[]).expect("cached");
    assert_eq!(s.last_modified, -1);
}

#[test]
fn store_fills_a_header() {
    let k = super::super::key::CacheKey::new(b"k");
    let mut h = EntryHeader::for_entry(&k, 10).expect("fits");
    let s = decide_with(
        200,
        &["ETag: \"e\"", "Vary: X", "Cache-Control: max-age=9"],
        &[],
        &[],
    )
    .expect("cached");
    s.fill(&mut h);
    assert_eq!(
        (h.valid_sec, h.date, h.etag.as_slice(), h.vary.as_slice()),
        (NOW + 9, NOW, &b"\"e\""[..], &b"X"[..])
    );
}

#[test]
fn revalidation_takes_the_304s_time_first() {
    let cached = head(200, &["Cache-Control: max-age=100"]);
    let nm = head(304, &["Cache-Control: max-age=5, stale-if-error=2"]);
    let r = revalidated(&nm, &cached, &settings(&[], &[]), NOW).expect("refreshed");
    assert_eq!(
        r,
        Refreshed {
            valid_sec: NOW + 5,
            updating_sec: 0,
            error_sec: 2,
            date: NOW
        }
    );
}

#[test]
fn revalidation_falls_back_to_the_stored_head_then_the_valid_list() {
    let cached = head(200, &["Cache-Control: max-age=100"]);
    let nm = head(304, &["ETag: \"x\""]);
    let r = revalidated(&nm, &cached, &settings(&[], &[]), NOW).expect("refreshed");
    assert_eq!(r.valid_sec, NOW + 100);
    // The 304's stale allowance stays under the stored head's time.
    let nm = head(304, &["Cache-Control: stale-while-revalidate=4"]);
    let r = revalidated(&nm, &cached, &settings(&[], &[]), NOW).expect("refreshed");
    assert_eq!(
        (r.valid_sec, r.updating_sec, r.error_sec),
        (NOW + 100, 4, 4)
    );
    let plain = head(301, &[]);
    let v = [(vec![], MIN10)];
    let r = revalidated(&head(304, &[]), &plain, &settings(&v, &[]), NOW).expect("refreshed");
    assert_eq!(r.valid_sec, NOW + 600);
    assert_eq!(
        revalidated(&head(304, &[]), &plain, &settings(&[], &[]), NOW),
        None
    );
    // A 304 that forbids caching still refreshes: nginx does not look.
    let nm = head(304, &["Cache-Control: no-store", "X-Accel-Expires: 50"]);
    let r = revalidated(&nm, &plain, &settings(&[], &[]), NOW).expect("refreshed");
    assert_eq!(r.valid_sec, NOW + 50);
}

#[test]
fn methods_and_head_conversion() {
    let m = CacheMethods::default();
    assert_eq!(cache_method(b"GET", m, true), Some(SendMethod::AsReceived));
    assert_eq!(cache_method(b"HEAD", m, true), Some(SendMethod::Get));
    assert_eq!(
        cache_method(b"HEAD", m, false),
        Some(SendMethod::AsReceived)
    );
    assert_eq!(cache_method(b"POST", m, true), None);
    assert_eq!(
        cache_method(b"POST", CacheMethods { post: true }, true),
        Some(SendMethod::AsReceived)
    );
    assert_eq!(
        cache_method(b"PUT", CacheMethods { post: true }, true),
        None
    );
    assert_eq!(cache_method(b"get", m, true), None);
}

#[test]
fn cached_locations_drop_conditionals_and_ranges() {
    let d = upstream_header_defaults(None);
    let names: Vec<&str> = d.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "If-Modified-Since",
            "If-Unmodified-Since",
            "If-None-Match",
            "If-Match",
            "Range",
            "If-Range"
        ]
    );
    assert!(d.iter().all(|(_, v)| v.is_empty()));
}

#[test]
fn revalidation_sends_the_entrys_validators() {
    let d = upstream_header_defaults(Some(Revalidate {
        last_modified: NOW,
        etag: b"\"e\"",
    }));
    assert_eq!(d[0], ("If-Modified-Since", NOW_DATE.as_bytes().to_vec()));
    assert_eq!(d[2], ("If-None-Match", b"\"e\"".to_vec()));
    let d = upstream_header_defaults(Some(Revalidate {
        last_modified: -1,
        etag: b"",
    }));
    assert!(d.iter().all(|(_, v)| v.is_empty()));
}

#[test]
fn range_offsets_limit_fills() {
    assert!(range_allows_fill(None, Some(0)));
    assert!(range_allows_fill(Some(b"bytes=0-1"), None));
    assert!(!range_allows_fill(Some(b"bytes=0-1"), Some(0)));
    assert!(range_allows_fill(Some(b"bytes=99-"), Some(100)));
    assert!(!range_allows_fill(Some(b"bytes=100-"), Some(100)));
    assert!(!range_allows_fill(Some(b"bytes= -5"), Some(100)));
    assert!(range_allows_fill(Some(b"items=500-"), Some(100)));
    assert!(range_allows_fill(Some(b"BYTES=5-"), Some(100)));
    assert!(range_allows_fill(Some(b"bytes=x"), Some(100)));
}
