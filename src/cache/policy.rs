//! Whether a response may be cached and until when, and what a cached
//! location changes in the request it sends upstream, as nginx 1.22.1
//! decides (`ngx_http_upstream.c`: the `headers_in` handlers
//! `ngx_http_upstream_process_accel_expires`, `_cache_control`, `_expires`,
//! `_set_cookie`, `_vary`; `ngx_http_upstream_send_response`;
//! `ngx_http_upstream_cache`; `ngx_http_file_cache_valid`;
//! `ngx_http_proxy_cache_headers` in the proxy module).
//!
//! Owns: reading freshness from a response head, the `proxy_cache_valid`
//! fallback, the request-side rules (cached methods, `HEAD` fetched as
//! `GET`, the header defaults of a cached location, `Range`).
//! Must not: read configuration (settings come as plain values), touch the
//! zone or files, or evaluate `proxy_no_cache`/`proxy_cache_bypass`.
//!
//! nginx runs a handler per header field, in the order the upstream sent
//! them, on shared state. The precedence users know — `X-Accel-Expires` >
//! `Cache-Control` > `Expires` > `proxy_cache_valid` — comes out of that
//! order-dependent code, and so do its edges, which [`Freshness`]
//! reproduces:
//! - `X-Accel-Expires` always sets the time (`0` forbids caching, `@N` is
//!   an absolute time, anything else not a number is ignored); a
//!   `Cache-Control` field after it is skipped entirely, but one before it
//!   still forbids caching with `no-cache`/`no-store`/`private`;
//! - `Cache-Control` is searched for substrings, case-insensitively:
//!   `no-cache`, `no-store`, `private` anywhere forbid caching;
//!   `s-maxage=` wins over `max-age=`; a value not all digits, or 0,
//!   forbids caching; `stale-while-revalidate=N` sets both the updating
//!   and the error allowance, `stale-if-error=N` the error one;
//! - `Expires` counts only when nothing set a time before it; a date in
//!   the past or unparsable forbids caching;
//! - `Set-Cookie`, `Vary: *` or a `Vary` over 128 bytes forbid caching;
//!   so does `X-Accel-Redirect` (nginx redirects instead).
//!
//! Each rule but `X-Accel-Redirect` is lifted by naming the header in
//! `proxy_ignore_headers`.

use std::time::Duration;

use crate::http::date::{format_unix, parse_http_date};
use crate::upstream::head::ResponseHead;

use super::format::{EntryHeader, Refreshed, VARY_LEN};

/// The statuses `proxy_cache_valid time;` without codes stands for
/// (`ngx_http_file_cache_valid_set_slot`).
pub const DEFAULT_VALID_STATUSES: [u16; 3] = [200, 301, 302];
/// The code `any` stands for in a `proxy_cache_valid` list.
pub const ANY_STATUS: u16 = 0;

/// The headers `proxy_ignore_headers` names that matter to the cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IgnoreHeaders {
    /// `X-Accel-Expires`.
    pub x_accel_expires: bool,
    /// `X-Accel-Redirect`.
    pub x_accel_redirect: bool,
    /// `Expires`.
    pub expires: bool,
    /// `Cache-Control`.
    pub cache_control: bool,
    /// `Set-Cookie`.
    pub set_cookie: bool,
    /// `Vary`.
    pub vary: bool,
}

impl IgnoreHeaders {
    /// From `proxy_ignore_headers`' names (any case); the names that do not
    /// concern the cache are skipped.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> IgnoreHeaders {
        let has = |h: &str| names.iter().any(|n| n.as_ref().eq_ignore_ascii_case(h));
        IgnoreHeaders {
            x_accel_expires: has("X-Accel-Expires"),
            x_accel_redirect: has("X-Accel-Redirect"),
            expires: has("Expires"),
            cache_control: has("Cache-Control"),
            set_cookie: has("Set-Cookie"),
            vary: has("Vary"),
        }
    }
}

/// A location's caching settings, as plain values.
#[derive(Clone, Copy, Debug)]
pub struct Settings<'a> {
    /// `proxy_cache_valid`, in order: (codes, time), `any` as
    /// [`ANY_STATUS`], no codes for [`DEFAULT_VALID_STATUSES`].
    pub valid: &'a [(Vec<u16>, Duration)],
    /// `proxy_ignore_headers`.
    pub ignore: IgnoreHeaders,
}

/// The `proxy_cache_valid` time for `status` (`ngx_http_file_cache_valid`):
/// the first entry naming it or `any`; `None` when none does or the time
/// is 0.
pub fn valid_for(valid: &[(Vec<u16>, Duration)], status: u16) -> Option<Duration> {
    valid
        .iter()
        .find(|(codes, _)| {
            if codes.is_empty() {
                DEFAULT_VALID_STATUSES.contains(&status)
            } else {
                codes.iter().any(|&c| c == ANY_STATUS || c == status)
            }
        })
        .map(|&(_, time)| time)
        .filter(|t| t.as_secs() != 0)
}

/// Why a response is not stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Uncacheable {
    /// `X-Accel-Expires: 0`.
    XAccelExpiresZero,
    /// `X-Accel-Redirect`: nginx serves another URI instead.
    XAccelRedirect,
    /// `Cache-Control` with `no-cache`, `no-store` or `private`.
    CacheControlForbids,
    /// `Cache-Control` with a `max-age`, `s-maxage`,
    /// `stale-while-revalidate` or `stale-if-error` not all digits, or a
    /// zero age.
    CacheControlAge,
    /// `Expires` in the past, or not a date.
    Expired,
    /// `Set-Cookie`.
    SetCookie,
    /// `Vary: *`, or a `Vary` longer than 128 bytes.
    Vary,
    /// No header gave a time and `proxy_cache_valid` has none for the
    /// status.
    NoValidity,
}

impl Uncacheable {
    /// A short phrase for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Uncacheable::XAccelExpiresZero => "X-Accel-Expires is 0",
            Uncacheable::XAccelRedirect => "X-Accel-Redirect",
            Uncacheable::CacheControlForbids => "Cache-Control forbids caching",
            Uncacheable::CacheControlAge => "Cache-Control has a bad or zero age",
            Uncacheable::Expired => "Expires is past or invalid",
            Uncacheable::SetCookie => "Set-Cookie",
            Uncacheable::Vary => "Vary is * or too long",
            Uncacheable::NoValidity => "no validity time",
        }
    }
}

/// What the header handlers leave in nginx's `r->cache` and
/// `u->cacheable` after reading a head.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Freshness {
    /// The first rule that cleared `u->cacheable`; `None`: still cacheable.
    pub uncacheable: Option<Uncacheable>,
    /// Fresh until (Unix seconds); 0: no header said.
    pub valid_sec: i64,
    /// `stale-while-revalidate` seconds.
    pub updating_sec: i64,
    /// `stale-if-error` (or `stale-while-revalidate`) seconds.
    pub error_sec: i64,
    /// The last `Vary` value, unless ignored.
    pub vary: Option<Vec<u8>>,
    /// An `X-Accel-Expires` field was seen (ignored or not): nginx's
    /// `u->headers_in.x_accel_expires`, which makes a later
    /// `Cache-Control` stand aside once a time is set.
    x_accel_expires_seen: bool,
}

impl Freshness {
    /// Reads `fields` (name, value) in order at time `now`.
    pub fn read<'a>(
        fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
        ignore: IgnoreHeaders,
        now: i64,
    ) -> Freshness {
        let mut f = Freshness::default();
        f.read_more(fields, ignore, now);
        f
    }

    /// Runs the handlers of `fields` on this state, as nginx does when it
    /// parses a second head for the same request (the cached one, after a
    /// `304`): the times carry over, the `X-Accel-Expires` mark does not.
    fn read_more<'a>(
        &mut self,
        fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
        ignore: IgnoreHeaders,
        now: i64,
    ) {
        self.x_accel_expires_seen = false;
        for (name, value) in fields {
            self.field(name, value, ignore, now);
        }
    }

    /// Clears cacheability, keeping the first reason.
    fn forbid(&mut self, why: Uncacheable) {
        self.uncacheable.get_or_insert(why);
    }

    /// One field through its handler.
    fn field(&mut self, name: &[u8], value: &[u8], ignore: IgnoreHeaders, now: i64) {
        let is = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
        if is("X-Accel-Expires") {
            self.x_accel_expires(value, ignore, now);
        } else if is("Cache-Control") {
            self.cache_control(value, ignore, now);
        } else if is("Expires") {
            // `ngx_http_upstream_process_expires`.
            if ignore.expires || self.valid_sec != 0 {
                return;
            }
            match http_time(value) {
                Some(t) if t >= now => self.valid_sec = t,
                _ => self.forbid(Uncacheable::Expired),
            }
        } else if is("Set-Cookie") {
            // `ngx_http_upstream_process_set_cookie`.
            if !ignore.set_cookie {
                self.forbid(Uncacheable::SetCookie);
            }
        } else if is("Vary") {
            // `ngx_http_upstream_process_vary`.
            if ignore.vary {
                return;
            }
            if value.len() > VARY_LEN || value == b"*" {
                self.forbid(Uncacheable::Vary);
            }
            self.vary = Some(value.to_vec());
        }
    }

    /// `ngx_http_upstream_process_accel_expires`.
    fn x_accel_expires(&mut self, value: &[u8], ignore: IgnoreHeaders, now: i64) {
        self.x_accel_expires_seen = true;
        if ignore.x_accel_expires {
            return;
        }
        if let Some(abs) = value.strip_prefix(b"@") {
            if let Some(t) = atoi(abs) {
                self.valid_sec = t;
            }
            return;
        }
        match atoi(value) {
            Some(0) => self.forbid(Uncacheable::XAccelExpiresZero),
            // C's signed overflow, which in practice wraps.
            Some(n) => self.valid_sec = now.wrapping_add(n),
            None => {}
        }
    }

    /// `ngx_http_upstream_process_cache_control`.
    fn cache_control(&mut self, value: &[u8], ignore: IgnoreHeaders, now: i64) {
        if ignore.cache_control || (self.valid_sec != 0 && self.x_accel_expires_seen) {
            return;
        }
        if find_ci(value, b"no-cache").is_some()
            || find_ci(value, b"no-store").is_some()
            || find_ci(value, b"private").is_some()
        {
            self.forbid(Uncacheable::CacheControlForbids);
            return;
        }
        let age = find_ci(value, b"s-maxage=")
            .map(|p| p + 9)
            .or_else(|| find_ci(value, b"max-age=").map(|p| p + 8));
        if let Some(at) = age {
            match directive_number(&value[at..]) {
                Some(n) if n != 0 => self.valid_sec = now.wrapping_add(n),
                _ => return self.forbid(Uncacheable::CacheControlAge),
            }
        }
        if let Some(p) = find_ci(value, b"stale-while-revalidate=") {
            let Some(n) = directive_number(&value[p + 23..]) else {
                return self.forbid(Uncacheable::CacheControlAge);
            };
            self.updating_sec = n;
            self.error_sec = n;
        }
        if let Some(p) = find_ci(value, b"stale-if-error=") {
            let Some(n) = directive_number(&value[p + 15..]) else {
                return self.forbid(Uncacheable::CacheControlAge);
            };
            self.error_sec = n;
        }
    }
}

/// nginx's `ngx_atoi`: one or more digits, no sign, at most `i64::MAX`.
fn atoi(v: &[u8]) -> Option<i64> {
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    v.iter().try_fold(0i64, |n, &d| {
        n.checked_mul(10)?.checked_add(i64::from(d - b'0'))
    })
}

/// The digits of a `Cache-Control` directive's value up to `,`, `;`, space
/// or the end; `None` at any other byte. No digits is 0. nginx does not
/// guard against overflow (it wraps in practice; so does this).
fn directive_number(v: &[u8]) -> Option<i64> {
    let mut n = 0i64;
    for &c in v {
        match c {
            b',' | b';' | b' ' => break,
            b'0'..=b'9' => n = n.wrapping_mul(10).wrapping_add(i64::from(c - b'0')),
            _ => return None,
        }
    }
    Some(n)
}

/// nginx's `ngx_strlcasestrn`: where `needle` (lowercase) first occurs in
/// `hay`, ASCII case-insensitively.
fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

/// nginx's `ngx_parse_http_time` on a header value.
fn http_time(v: &[u8]) -> Option<i64> {
    std::str::from_utf8(v).ok().and_then(parse_http_date)
}

/// What to store for a cacheable response: the header fields the policy
/// decides (`ngx_http_upstream_send_response`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Store {
    /// Fresh until.
    pub valid_sec: i64,
    /// `stale-while-revalidate` seconds.
    pub updating_sec: i64,
    /// `stale-if-error` seconds.
    pub error_sec: i64,
    /// Now: when it was stored.
    pub date: i64,
    /// `Last-Modified` (the last one) for 200 and 206; -1 otherwise or
    /// when absent or not a date.
    pub last_modified: i64,
    /// `ETag` (the first one) for 200 and 206; empty otherwise.
    pub etag: Vec<u8>,
    /// `Vary` (the last one); empty if none. When not empty the fill also
    /// stores the request's [`super::key::variant`].
    pub vary: Vec<u8>,
}

impl Store {
    /// Copies the decided fields into `h` (made by
    /// [`EntryHeader::for_entry`]); the variant is the caller's.
    pub fn fill(&self, h: &mut EntryHeader) {
        h.valid_sec = self.valid_sec;
        h.updating_sec = self.updating_sec;
        h.error_sec = self.error_sec;
        h.date = self.date;
        h.last_modified = self.last_modified;
        h.etag.clone_from(&self.etag);
        h.vary.clone_from(&self.vary);
    }
}

/// Whether `head` may be stored at `now` and with what validity. The
/// caller checks `proxy_no_cache` first and may still not store (a body
/// that ends early, a lost fill lock).
pub fn decide(
    head: &ResponseHead,
    settings: &Settings<'_>,
    now: i64,
) -> Result<Store, Uncacheable> {
    let f = Freshness::read(head.headers.iter(), settings.ignore, now);
    if let Some(why) = f.uncacheable {
        return Err(why);
    }
    if !settings.ignore.x_accel_redirect && head.header("X-Accel-Redirect").is_some() {
        return Err(Uncacheable::XAccelRedirect);
    }
    let valid_sec = if f.valid_sec != 0 {
        f.valid_sec
    } else {
        let time = valid_for(settings.valid, head.status).ok_or(Uncacheable::NoValidity)?;
        now.wrapping_add(secs(time))
    };
    let validators = head.status == 200 || head.status == 206;
    let last_modified = if validators {
        head.headers_named("Last-Modified")
            .last()
            .and_then(http_time)
            .unwrap_or(-1)
    } else {
        -1
    };
    let etag = if validators {
        head.header("ETag").map(<[u8]>::to_vec).unwrap_or_default()
    } else {
        Vec::new()
    };
    Ok(Store {
        valid_sec,
        updating_sec: f.updating_sec,
        error_sec: f.error_sec,
        date: now,
        last_modified,
        etag,
        vary: f.vary.unwrap_or_default(),
    })
}

/// A `Duration`'s whole seconds as nginx's `time_t`.
fn secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

/// The new validity of an entry a `304` revalidated (the "http upstream
/// not modified" branch of `ngx_http_upstream_test_next`): the `304`'s own
/// headers if they give a time; else the stored head's, read again on top
/// of what the `304` left; else `proxy_cache_valid` for the stored status.
/// `None`: no time, and nginx leaves the file as it is (the response is
/// still served, as `REVALIDATED`). The `304` is applied even if its
/// headers forbid caching: nginx does not check.
pub fn revalidated(
    not_modified: &ResponseHead,
    cached: &ResponseHead,
    settings: &Settings<'_>,
    now: i64,
) -> Option<Refreshed> {
    let mut f = Freshness::read(not_modified.headers.iter(), settings.ignore, now);
    let (mut valid, mut updating, mut error) = (f.valid_sec, f.updating_sec, f.error_sec);
    if valid == 0 {
        f.read_more(cached.headers.iter(), settings.ignore, now);
        (valid, updating, error) = (f.valid_sec, f.updating_sec, f.error_sec);
    }
    if valid == 0 {
        valid = now.wrapping_add(secs(valid_for(settings.valid, cached.status)?));
    }
    (valid != 0).then_some(Refreshed {
        valid_sec: valid,
        updating_sec: updating,
        error_sec: error,
        date: now,
    })
}

/// `proxy_cache_methods`: GET and HEAD always (nginx adds them to any
/// list), POST when named.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheMethods {
    /// `POST` is listed.
    pub post: bool,
}

/// The method a cached request is sent upstream with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendMethod {
    /// The client's (or `proxy_method`'s).
    AsReceived,
    /// `GET`: a `HEAD` under `proxy_cache_convert_head on` (the default),
    /// so that the stored entry has the body a later `GET` needs. The key
    /// is unchanged: with the default key a `HEAD` and a `GET` share it.
    Get,
}

/// Whether a request with `method` uses the cache, and with what method it
/// goes upstream (`ngx_http_upstream_cache`); `None`: it does not (no
/// `$upstream_cache_status`).
pub fn cache_method(
    method: &[u8],
    methods: CacheMethods,
    convert_head: bool,
) -> Option<SendMethod> {
    match method {
        b"GET" => Some(SendMethod::AsReceived),
        b"HEAD" if convert_head => Some(SendMethod::Get),
        b"HEAD" => Some(SendMethod::AsReceived),
        b"POST" if methods.post => Some(SendMethod::AsReceived),
        _ => None,
    }
}

/// What a stored entry offers for a conditional revalidation
/// (`proxy_cache_revalidate on`, entry expired: nginx's
/// `$upstream_cache_last_modified` and `$upstream_cache_etag`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Revalidate<'a> {
    /// The entry's `last_modified`; -1 for none.
    pub last_modified: i64,
    /// The entry's `etag`; empty for none.
    pub etag: &'a [u8],
}

/// The header defaults a cached location adds after the proxy's own
/// (`Host`, `Connection`, … `Upgrade`), in nginx's order
/// (`ngx_http_proxy_cache_headers`). As with those, a `proxy_set_header`
/// of the same name wins, an empty value is not sent, and the client's
/// header of that name is not passed: so `Range`, `If-Range`, `If-Match`,
/// `If-Unmodified-Since` and the client's own `If-Modified-Since` and
/// `If-None-Match` never reach the upstream. They apply when the request
/// uses the cache and is still cacheable (not when `proxy_cache_min_uses`
/// or a `Range` beyond `proxy_cache_max_range_offset` made it a plain
/// proxied request); `revalidate` is `Some` only to revalidate an expired
/// entry under `proxy_cache_revalidate on`.
pub fn upstream_header_defaults(
    revalidate: Option<Revalidate<'_>>,
) -> [(&'static str, Vec<u8>); 6] {
    let (ims, inm) = match revalidate {
        Some(r) => (
            if r.last_modified == -1 {
                Vec::new()
            } else {
                format_unix(r.last_modified).into_bytes()
            },
            r.etag.to_vec(),
        ),
        None => (Vec::new(), Vec::new()),
    };
    [
        ("If-Modified-Since", ims),
        ("If-Unmodified-Since", Vec::new()),
        ("If-None-Match", inm),
        ("If-Match", Vec::new()),
        ("Range", Vec::new()),
        ("If-Range", Vec::new()),
    ]
}

/// Whether a request with `range` may still fill the cache under
/// `proxy_cache_max_range_offset` (`None`: unset, nginx's default)
/// (`ngx_http_upstream_cache_check_range`). When it may not, nginx proxies
/// it as it is, `Range` included, and stores nothing.
pub fn range_allows_fill(range: Option<&[u8]>, max_range_offset: Option<u64>) -> bool {
    let (Some(h), Some(max)) = (range, max_range_offset) else {
        return true;
    };
    if max == 0 {
        return false;
    }
    if h.len() < 7 || !h[..6].eq_ignore_ascii_case(b"bytes=") {
        return true;
    }
    let rest = &h[6..];
    let rest = &rest[rest.iter().take_while(|&&c| c == b' ').count()..];
    if rest.first() == Some(&b'-') {
        return false;
    }
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    // nginx's `ngx_atoof` of no digits is an error (-1): below any limit.
    let offset = std::str::from_utf8(&rest[..digits])
        .ok()
        .and_then(|d| d.parse::<u64>().ok())
        .filter(|&o| o <= i64::MAX as u64);
    match offset {
        Some(o) => o < max,
        None => true,
    }
}

#[cfg(test)]
mod tests;
