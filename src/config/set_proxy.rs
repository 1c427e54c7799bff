//! Setters for the reverse proxy's directives (nginx's proxy module:
//! `proxy_pass`, `proxy_redirect`, the header lists, buffers, timeouts,
//! retries) and the request-body settings of the core module it relies on
//! (`client_body_*`), with nginx's words for every error.
//!
//! Plain values go through nginx's generic slots ([`super::slot`]); the
//! cross-checks nginx makes when merging levels (buffer sizes) are in
//! [`super::finish_proxy`].

use super::build::{Builder, Scope};
use super::inherit::LocSet;
use super::model::{
    BodyInFile, IGNORABLE_HEADERS, LocationMatch, NextUpstream, ProxyHttpVersion, ProxyPass,
    ProxyRedirect, ProxyTarget, ProxyUrl, RedirectFrom, RedirectRule,
};
use super::proxy_url::{Scheme, pass_url, proxy_vars};
use super::set_upstream;
use super::slot;
use super::syntax::Directive;
use super::template::Template;
use super::url;

/// The inherited settings of the directive's level.
pub(super) fn ls<'a>(scope: &'a mut Scope<'_>) -> &'a mut LocSet {
    scope
        .loc_set()
        .expect("the table allows this directive in http, server and location only")
}

/// `"NAME" directive is duplicate` when `slot` is already set: nginx checks
/// this before it reads the value.
pub(super) fn not_set<T>(slot: &Option<T>, d: &Directive) -> Result<(), String> {
    match slot {
        Some(_) => Err(format!("\"{}\" directive is duplicate", d.name)),
        None => Ok(()),
    }
}

/// Whether nginx lets this location's `proxy_pass` have a URI part: not in
/// a regex or named location (nginx's `clcf->regex`, `clcf->named`).
fn uri_allowed(m: &LocationMatch) -> bool {
    !matches!(m, LocationMatch::Regex { .. } | LocationMatch::Named(_))
}

/// The location's name as nginx keeps it for `proxy_pass` (`plcf->location`):
/// its URI, empty for a regex or named location.
fn location_name(m: &LocationMatch) -> &str {
    match m {
        LocationMatch::Exact(s) | LocationMatch::Prefix(s) | LocationMatch::PrefixNoRegex(s) => s,
        LocationMatch::Regex { .. } | LocationMatch::Named(_) => "",
    }
}

/// `proxy_pass URL;`
pub fn proxy_pass(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let Scope::Location(l) = scope else {
        unreachable!("the table allows proxy_pass in location only")
    };
    not_set(&l.proxy_pass, d)?;
    let written = d.arg(0);
    // nginx counts every `$` as a variable: such a URL is evaluated per
    // request, its scheme and host checked then.
    if written.contains('$') {
        let url = b.template(written, &d.loc)?;
        l.proxy_pass = Some(ProxyPass {
            url,
            target: ProxyTarget::Dynamic,
            loc: d.loc.clone(),
            tls: None,
        });
        return Ok(());
    }
    let Some(scheme) = Scheme::of(written, false) else {
        return Err("invalid URL prefix".into());
    };
    let rest = &written[scheme.prefix().len()..];
    let parsed = url::parse_url(rest, pass_url(scheme.default_port()))
        .map_err(|e| format!("{e} in upstream \"{rest}\""))?;
    if scheme.tls && parsed.unix {
        return Err("TLS to a unix socket (\"https://unix:\") is not supported yet".into());
    }
    let upstream = set_upstream::add_for_proxy_pass(b, &parsed, &d.loc)?;
    if !parsed.uri.is_empty() && (l.noname || !uri_allowed(&l.matcher)) {
        return Err(
            "\"proxy_pass\" cannot have URI part in location given by regular \
                    expression, or inside named location, or inside \"if\" statement, \
                    or inside \"limit_except\" block"
                .into(),
        );
    }
    let vars = proxy_vars(&parsed, scheme, written.len());
    l.proxy_pass = Some(ProxyPass {
        url: Template::literal(written),
        target: ProxyTarget::Static(ProxyUrl {
            upstream,
            host_header: vars.host_header.into(),
            port: vars.port.into(),
            key_start: vars.key_start,
            uri: (!parsed.uri.is_empty()).then_some(parsed.uri),
            unix: parsed.unix,
            tls: scheme.tls,
        }),
        loc: d.loc.clone(),
        tls: None,
    });
    Ok(())
}

/// The rule `proxy_redirect default` stands for (nginx's merge and
/// `ngx_http_proxy_redirect`): the URL → the location's name when the URL
/// has a URI part, else the URL with `/` → `/`.
pub fn default_redirect(url: &str, target: &ProxyUrl, location: &LocationMatch) -> RedirectRule {
    let (from, to) = if target.uri.is_some() {
        (url.to_string(), location_name(location).to_string())
    } else {
        (format!("{url}/"), "/".to_string())
    };
    RedirectRule {
        from: RedirectFrom::Text(Template::literal(&from)),
        to: Template::literal(&to),
    }
}

/// `proxy_redirect default | off | redirect replacement;` — rules of one
/// level accumulate.
pub fn proxy_redirect(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let here = match &*scope {
        Scope::Location(l) => Some((l.proxy_pass.clone(), l.matcher.clone())),
        _ => None,
    };
    let current = &ls(scope).proxy_redirect;
    if matches!(current, Some(ProxyRedirect::Off)) {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let rule = if d.args.len() == 1 {
        match d.arg(0) {
            "off" => {
                if current.is_some() {
                    return Err(format!("\"{}\" directive is duplicate", d.name));
                }
                ls(scope).proxy_redirect = Some(ProxyRedirect::Off);
                return Ok(());
            }
            "default" => match here {
                Some((Some(pass), matcher)) => match &pass.target {
                    ProxyTarget::Static(t) => default_redirect(&pass.url.source, t, &matcher),
                    ProxyTarget::Dynamic => {
                        return Err("\"proxy_redirect default\" cannot be used with \
                                    \"proxy_pass\" directive with variables"
                            .into());
                    }
                },
                _ => {
                    return Err("\"proxy_redirect default\" should be placed after \
                                the \"proxy_pass\" directive"
                        .into());
                }
            },
            other => return Err(format!("invalid parameter \"{other}\"")),
        }
    } else {
        let from = redirect_from(b, d)?;
        RedirectRule {
            from,
            to: b.template(d.arg(1), &d.loc)?,
        }
    };
    match &mut ls(scope).proxy_redirect {
        Some(ProxyRedirect::Rules(rules)) => rules.push(rule),
        slot => *slot = Some(ProxyRedirect::Rules(vec![rule])),
    }
    Ok(())
}

/// The matching side of a rule: `~re`, `~*re` or text with variables.
fn redirect_from(b: &mut Builder, d: &Directive) -> Result<RedirectFrom, String> {
    let arg = d.arg(0);
    let Some(re) = arg.strip_prefix('~') else {
        return Ok(RedirectFrom::Text(b.template(arg, &d.loc)?));
    };
    let (source, case_insensitive) = match re.strip_prefix('*') {
        Some(r) => (r, true),
        None => (re, false),
    };
    // As every regular expression of the configuration: PCRE's syntax and
    // its words for an error.
    let compiled = super::regex::compile(source, case_insensitive)?;
    // Named captures become variables, as in nginx.
    for name in compiled.capture_names().into_iter().flatten() {
        b.defined_vars.insert(name.to_string());
    }
    Ok(RedirectFrom::Regex {
        re: compiled,
        case_insensitive,
        source: source.to_string(),
    })
}

/// `proxy_set_header field value;` — entries of one level accumulate.
pub fn proxy_set_header(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let value = b.template(d.arg(1), &d.loc)?;
    ls(scope)
        .proxy_set_header
        .get_or_insert_with(Vec::new)
        .push((d.arg(0).to_string(), value));
    Ok(())
}

/// `proxy_hide_header field;` — entries of one level accumulate.
pub fn proxy_hide_header(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    ls(scope)
        .proxy_hide_header
        .get_or_insert_with(Vec::new)
        .push(d.arg(0).to_string());
    Ok(())
}

/// `proxy_pass_header field;` — entries of one level accumulate.
pub fn proxy_pass_header(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    ls(scope)
        .proxy_pass_header
        .get_or_insert_with(Vec::new)
        .push(d.arg(0).to_string());
    Ok(())
}

/// `proxy_ignore_headers field ...;` — one of nginx's nine names; several
/// directives of one level add up.
pub fn proxy_ignore_headers(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let list = ls(scope).proxy_ignore_headers.clone().unwrap_or_default();
    let mut seen: Vec<usize> = list
        .iter()
        .filter_map(|h| IGNORABLE_HEADERS.iter().position(|n| n == h))
        .collect();
    slot::bitmask(b, d, &IGNORABLE_HEADERS, &mut seen)?;
    ls(scope).proxy_ignore_headers = Some(
        seen.iter()
            .map(|&i| IGNORABLE_HEADERS[i].to_string())
            .collect(),
    );
    Ok(())
}

/// `proxy_next_upstream error | timeout | … | off ...;` — several
/// directives of one level add up (`off` wins when merging).
pub fn proxy_next_upstream(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = next_upstream_bits(b, d, ls(scope).proxy_next_upstream)?;
    ls(scope).proxy_next_upstream = Some(set);
    Ok(())
}

/// The conditions of one `proxy_next_upstream`-style directive added to
/// those its level already wrote (`current`), as nginx's bitmask slot over
/// `ngx_http_proxy_next_upstream_masks` (also `proxy_cache_use_stale`'s).
pub(super) fn next_upstream_bits(
    b: &mut Builder,
    d: &Directive,
    current: Option<NextUpstream>,
) -> Result<NextUpstream, String> {
    let names: Vec<&str> = NextUpstream::NAMES.iter().map(|(n, _)| *n).collect();
    let current = current.unwrap_or_default();
    let mut seen: Vec<usize> = NextUpstream::NAMES
        .iter()
        .enumerate()
        .filter(|(_, (_, bit))| current.contains(*bit))
        .map(|(i, _)| i)
        .collect();
    slot::bitmask(b, d, &names, &mut seen)?;
    Ok(seen.iter().fold(NextUpstream::default(), |acc, &i| {
        acc.union(NextUpstream::NAMES[i].1)
    }))
}

/// `proxy_http_version 1.0 | 1.1;`
pub fn proxy_http_version(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.proxy_http_version, d)?;
    let v = slot::enumerated(
        d,
        &[
            ("1.0", ProxyHttpVersion::V10),
            ("1.1", ProxyHttpVersion::V11),
        ],
    )?;
    set.proxy_http_version = Some(v);
    Ok(())
}

/// `client_body_in_file_only on | clean | off;`
pub fn client_body_in_file_only(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.client_body_in_file_only, d)?;
    let v = slot::enumerated(
        d,
        &[
            ("off", BodyInFile::Off),
            ("on", BodyInFile::On),
            ("clean", BodyInFile::Clean),
        ],
    )?;
    set.client_body_in_file_only = Some(v);
    Ok(())
}

/// `proxy_buffers number size;`
pub fn proxy_buffers(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.proxy_buffers, d)?;
    set.proxy_buffers = Some(slot::bufs(d)?);
    Ok(())
}

/// `proxy_temp_path path [level1 [level2 [level3]]];`
pub fn proxy_temp_path(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    not_set(&ls(scope).proxy_temp_path, d)?;
    let p = slot::path(b, d)?;
    ls(scope).proxy_temp_path = Some(p);
    Ok(())
}

/// `proxy_set_body value;`
pub fn proxy_set_body(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    not_set(&ls(scope).proxy_set_body, d)?;
    let t = b.template(d.arg(0), &d.loc)?;
    ls(scope).proxy_set_body = Some(Some(t));
    Ok(())
}

/// `proxy_method method;`
pub fn proxy_method(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    not_set(&ls(scope).proxy_method, d)?;
    let t = b.template(d.arg(0), &d.loc)?;
    ls(scope).proxy_method = Some(Some(t));
    Ok(())
}

/// Setters for directives that are one value of a generic slot of
/// [`LocSet`] (here and in `set_cache`): `KIND fn_name => field;`, KIND one
/// of `flag size size_or_default msec num num_u32`.
macro_rules! slot_setters {
    ($( $kind:ident $fn_name:ident => $field:ident; )*) => {$(
        #[doc = concat!("`", stringify!($fn_name), "` (", stringify!($kind), ").")]
        pub fn $fn_name(
            _: &mut $crate::config::build::Builder,
            scope: &mut $crate::config::build::Scope<'_>,
            d: &$crate::config::syntax::Directive,
        ) -> Result<(), String> {
            slot_setters!(@set $kind, $crate::config::set_proxy::ls(scope).$field, d)
        }
    )*};
    (@set flag, $slot:expr, $d:ident) => { $crate::config::build::set_flag(&mut $slot, $d) };
    (@set size, $slot:expr, $d:ident) => {{
        $crate::config::set_proxy::not_set(&$slot, $d)?;
        $slot = Some($crate::config::slot::size($d, 0)?);
        Ok(())
    }};
    (@set size_or_default, $slot:expr, $d:ident) => {{
        $crate::config::set_proxy::not_set(&$slot, $d)?;
        $slot = Some(Some($crate::config::slot::size($d, 0)?));
        Ok(())
    }};
    (@set msec, $slot:expr, $d:ident) => {{
        $crate::config::set_proxy::not_set(&$slot, $d)?;
        $slot = Some($crate::config::slot::msec($d, 0)?);
        Ok(())
    }};
    (@set num, $slot:expr, $d:ident) => {{
        $crate::config::set_proxy::not_set(&$slot, $d)?;
        $slot = Some($crate::config::slot::num($d, 0)?);
        Ok(())
    }};
    (@set num_u32, $slot:expr, $d:ident) => {{
        $crate::config::set_proxy::not_set(&$slot, $d)?;
        $slot = Some($crate::config::slot::num_u32($d, 0)?);
        Ok(())
    }};
}
pub(super) use slot_setters;

slot_setters! {
    flag proxy_pass_request_headers => proxy_pass_request_headers;
    flag proxy_pass_request_body => proxy_pass_request_body;
    flag proxy_intercept_errors => proxy_intercept_errors;
    flag proxy_buffering => proxy_buffering;
    flag proxy_request_buffering => proxy_request_buffering;
    flag proxy_force_ranges => proxy_force_ranges;
    flag proxy_socket_keepalive => proxy_socket_keepalive;
    flag proxy_ignore_client_abort => proxy_ignore_client_abort;
    flag client_body_in_single_buffer => client_body_in_single_buffer;
    size proxy_buffer_size => proxy_buffer_size;
    size proxy_limit_rate => proxy_limit_rate;
    size client_body_buffer_size => client_body_buffer_size;
    size_or_default proxy_busy_buffers_size => proxy_busy_buffers_size;
    size_or_default proxy_max_temp_file_size => proxy_max_temp_file_size;
    size_or_default proxy_temp_file_write_size => proxy_temp_file_write_size;
    msec proxy_connect_timeout => proxy_connect_timeout;
    msec proxy_read_timeout => proxy_read_timeout;
    msec proxy_send_timeout => proxy_send_timeout;
    msec proxy_next_upstream_timeout => proxy_next_upstream_timeout;
    msec client_body_timeout => client_body_timeout;
    num_u32 proxy_next_upstream_tries => proxy_next_upstream_tries;
    num proxy_headers_hash_max_size => proxy_headers_hash_max_size;
    num proxy_headers_hash_bucket_size => proxy_headers_hash_bucket_size;
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::config::inherit::LocConf;
    use crate::config::load_text;
    use crate::config::model::{
        BodyInFile, HttpConf, Location, NextUpstream, ProxyHttpVersion, ProxyRedirect, ProxyTarget,
        ProxyUrl, RedirectFrom,
    };

    fn http(body: &str) -> HttpConf {
        let text = format!("events {{}}\nhttp {{\n{body}\n}}\n");
        let l = load_text(&text).unwrap_or_else(|e| panic!("{e:?}"));
        l.config.http.unwrap()
    }

    fn errors(body: &str) -> Vec<String> {
        let text = format!("events {{}}\nhttp {{\n{body}\n}}\n");
        match load_text(&text) {
            Ok(_) => Vec::new(),
            Err(e) => e
                .into_iter()
                .filter(|e| e.level.stops())
                .map(|e| e.message)
                .collect(),
        }
    }

    /// The locations of the first server.
    fn locations(body: &str) -> Vec<Location> {
        http(&format!("server {{\n{body}\n}}")).servers[0]
            .locations
            .clone()
    }

    fn url(l: &Location) -> ProxyUrl {
        match &l.proxy_pass.as_ref().unwrap().target {
            ProxyTarget::Static(u) => u.clone(),
            ProxyTarget::Dynamic => panic!("dynamic"),
        }
    }

    fn rules(c: &LocConf) -> Vec<(String, String)> {
        match &c.proxy_redirect {
            ProxyRedirect::Rules(r) => r
                .iter()
                .map(|r| {
                    let from = match &r.from {
                        RedirectFrom::Text(t) => t.source.clone(),
                        RedirectFrom::Regex { source, .. } => format!("~{source}"),
                    };
                    (from, r.to.source.clone())
                })
                .collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn proxy_host_and_uri_as_nginx_computes_them() {
        let l = locations(
            "location /a { proxy_pass http://127.0.0.1:8080/x/; }\n\
             location /b { proxy_pass http://localhost; }\n\
             location /c { proxy_pass http://127.0.0.2:80; }\n\
             location /d { proxy_pass http://localhost:08080?q; }\n\
             location /e { proxy_pass http://unix:/tmp/s.sock:/u; }\n\
             location /f { proxy_pass http://[::1]:81; }",
        );
        let want = [
            ("127.0.0.1:8080", "8080", Some("/x/"), false),
            ("localhost", "80", None, false),
            ("127.0.0.2", "80", None, false),
            ("localhost:08080", "08080", Some("?q"), false),
            ("localhost", "", Some("/u"), true),
            ("[::1]:81", "81", None, false),
        ];
        for (l, (host, port, uri, unix)) in l.iter().zip(want) {
            let u = url(l);
            assert_eq!(&*u.host_header, host);
            assert_eq!(&*u.port, port, "{host}");
            assert_eq!(u.uri.as_deref(), uri, "{host}");
            assert_eq!(u.unix, unix, "{host}");
        }
        assert_eq!(url(&l[4]).upstream, "unix:/tmp/s.sock");
    }

    #[test]
    fn a_url_with_variables_is_dynamic() {
        let l = locations("location / { proxy_pass $scheme://$host$request_uri; }");
        let p = l[0].proxy_pass.as_ref().unwrap();
        assert!(matches!(p.target, ProxyTarget::Dynamic));
        assert_eq!(p.url.source, "$scheme://$host$request_uri");
        // nginx checks the scheme of such a URL per request only.
        assert!(errors("server { location / { proxy_pass ftp://$host; } }").is_empty());
    }

    #[test]
    fn https_urls_go_to_port_443_over_tls() {
        let l = locations(
            "location / { proxy_pass HTTPS://127.0.0.1/x; }\n\
             location /p { proxy_pass https://127.0.0.1:8443; }\n\
             location /h { proxy_pass http://127.0.0.1; }",
        );
        let u = url(&l[0]);
        assert_eq!(
            (u.upstream.as_str(), &*u.host_header, &*u.port, u.tls),
            ("127.0.0.1:443", "127.0.0.1", "443", true)
        );
        assert_eq!(u.key_start, "https://127.0.0.1".len());
        assert!(l[0].proxy_pass.as_ref().unwrap().tls.is_some());
        let u = url(&l[1]);
        assert_eq!((&*u.host_header, &*u.port), ("127.0.0.1:8443", "8443"));
        assert!(!url(&l[2]).tls);
        assert!(l[2].proxy_pass.as_ref().unwrap().tls.is_none());
        assert_eq!(
            errors("server { location / { proxy_pass https://; } }"),
            vec!["no host in upstream \"\""]
        );
    }

    #[test]
    fn default_redirects() {
        let l = locations(
            "location /one/ { proxy_pass http://127.0.0.1:1/two/; }\n\
             location /a { proxy_pass http://127.0.0.1:1; }\n\
             location /b { proxy_pass http://127.0.0.1:1/x/;\n\
                 location /b/c { proxy_pass http://127.0.0.1:2; } }\n\
             location /d { proxy_pass $host; }\n\
             location /e { proxy_pass http://127.0.0.1:1/; proxy_redirect off; }\n\
             location /f { proxy_pass http://127.0.0.1:1/; proxy_redirect default;\n\
                 proxy_redirect ~*^http://x(?<rest>.*)$ http://y$rest; }",
        );
        assert_eq!(
            rules(&l[0].conf),
            [("http://127.0.0.1:1/two/".into(), "/one/".into())]
        );
        assert_eq!(
            rules(&l[1].conf),
            [("http://127.0.0.1:1/".into(), "/".into())]
        );
        // A nested location inherits its parent's derived rule, as in nginx.
        assert_eq!(
            rules(&l[2].locations[0].conf),
            [("http://127.0.0.1:1/x/".into(), "/b".into())]
        );
        assert!(matches!(l[3].conf.proxy_redirect, ProxyRedirect::Default));
        assert!(matches!(l[4].conf.proxy_redirect, ProxyRedirect::Off));
        assert_eq!(
            rules(&l[5].conf),
            [
                ("http://127.0.0.1:1/".into(), "/f".into()),
                ("~^http://x(?<rest>.*)$".into(), "http://y$rest".into())
            ]
        );
        match &rules_of(&l[5].conf)[1] {
            RedirectFrom::Regex {
                re,
                case_insensitive,
                ..
            } => {
                assert!(case_insensitive);
                assert!(re.is_match("HTTP://X/a"));
            }
            f => panic!("{f:?}"),
        }
    }

    fn rules_of(c: &LocConf) -> Vec<RedirectFrom> {
        match &c.proxy_redirect {
            ProxyRedirect::Rules(r) => r.iter().map(|r| r.from.clone()).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn nginx_defaults() {
        let c = LocConf::default();
        assert!(c.proxy_set_header.is_empty());
        assert!(c.proxy_pass_request_headers && c.proxy_pass_request_body);
        assert_eq!(c.proxy_http_version, ProxyHttpVersion::V10);
        assert!(c.proxy_buffering && c.proxy_request_buffering);
        assert_eq!(c.proxy_buffer_size, 4096);
        assert_eq!(c.proxy_buffers, (8, 4096));
        assert_eq!(c.proxy_temp_path.levels, vec![1, 2]);
        assert_eq!(c.proxy_connect_timeout, Duration::from_secs(60));
        assert_eq!(c.proxy_read_timeout, Duration::from_secs(60));
        assert_eq!(c.proxy_send_timeout, Duration::from_secs(60));
        assert_eq!(
            c.proxy_next_upstream,
            NextUpstream::ERROR.union(NextUpstream::TIMEOUT)
        );
        assert_eq!(c.proxy_next_upstream_tries, 0);
        assert_eq!(c.proxy_next_upstream_timeout, Duration::ZERO);
        assert_eq!(c.client_body_buffer_size, 8192);
        assert_eq!(c.client_body_in_file_only, BodyInFile::Off);
        assert_eq!(c.client_body_timeout, Duration::from_secs(60));
        assert_eq!(
            (
                c.proxy_headers_hash_max_size,
                c.proxy_headers_hash_bucket_size
            ),
            (512, 64)
        );
    }

    #[test]
    fn the_temp_path_default_is_under_the_prefix() {
        let h = http("server { }");
        let p = &h.servers[0].conf.proxy_temp_path;
        assert!(
            p.path.is_absolute() && p.path.ends_with("proxy_temp"),
            "{p:?}"
        );
    }

    #[test]
    fn header_lists_replace_the_parents_per_level() {
        let h = http(
            "proxy_set_header A 1; proxy_set_header B $host;\n\
             proxy_hide_header X-A; proxy_pass_header Server;\n\
             server {\n\
             location /own { proxy_set_header C 3; proxy_hide_header X-B; proxy_hide_header X-C; }\n\
             location /inherit { }\n\
             }",
        );
        let own = &h.servers[0].locations[0];
        let names: Vec<&str> = own
            .conf
            .proxy_set_header
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(names, ["C"]);
        assert!(own.set.proxy_set_header.is_some());
        assert_eq!(own.conf.proxy_hide_header, ["X-B", "X-C"]);
        // proxy_pass_header is inherited on its own, as in nginx.
        assert_eq!(own.conf.proxy_pass_header, ["Server"]);
        let inherit = &h.servers[0].locations[1];
        assert!(inherit.set.proxy_set_header.is_none());
        assert_eq!(inherit.conf.proxy_set_header.len(), 2);
        assert_eq!(inherit.conf.proxy_set_header[1].1.source, "$host");
    }

    #[test]
    fn bit_sets_add_up_within_a_level() {
        let l = locations(
            "location /a { proxy_next_upstream error; proxy_next_upstream HTTP_502 non_idempotent; }\n\
             location /b { proxy_next_upstream error off; }\n\
             location /c { proxy_ignore_headers vary X-Accel-Expires; proxy_ignore_headers Set-Cookie; }",
        );
        let n = l[0].conf.proxy_next_upstream;
        assert!(n.contains(NextUpstream::ERROR) && n.contains(NextUpstream::HTTP_502));
        assert!(n.contains(NextUpstream::NON_IDEMPOTENT) && !n.contains(NextUpstream::TIMEOUT));
        assert_eq!(l[1].conf.proxy_next_upstream, NextUpstream::OFF);
        assert_eq!(
            l[2].conf.proxy_ignore_headers,
            ["Vary", "X-Accel-Expires", "Set-Cookie"]
        );
    }

    #[test]
    fn values_of_every_slot() {
        let l = locations(
            "location / {\n\
             proxy_http_version 1.1; proxy_buffers 16 8k; proxy_buffer_size 8k;\n\
             proxy_busy_buffers_size 16k; proxy_max_temp_file_size 0;\n\
             proxy_temp_file_write_size 32k; proxy_temp_path tmp 1 2 2;\n\
             proxy_connect_timeout 500ms; proxy_read_timeout 1m; proxy_send_timeout 2s;\n\
             proxy_limit_rate 100k; proxy_next_upstream_tries 3; proxy_next_upstream_timeout 10s;\n\
             proxy_buffering off; proxy_method POST; proxy_set_body $arg_x;\n\
             client_body_buffer_size 16k; client_body_in_file_only CLEAN;\n\
             client_body_in_single_buffer on; client_body_timeout 5s;\n\
             }",
        );
        let c = &l[0].conf;
        assert_eq!(c.proxy_http_version, ProxyHttpVersion::V11);
        assert_eq!(c.proxy_buffers, (16, 8192));
        assert_eq!(c.busy_buffers_size(), 16384);
        assert_eq!(c.max_temp_file_size(), 0);
        assert_eq!(c.temp_file_write_size(), 32768);
        assert!(c.proxy_temp_path.path.ends_with("tmp"));
        assert_eq!(c.proxy_temp_path.levels, vec![1, 2, 2]);
        assert_eq!(c.proxy_connect_timeout, Duration::from_millis(500));
        assert_eq!(c.proxy_read_timeout, Duration::from_secs(60));
        assert_eq!(c.proxy_limit_rate, 102400);
        assert_eq!(c.proxy_next_upstream_tries, 3);
        assert!(!c.proxy_buffering);
        assert_eq!(c.proxy_method.as_ref().unwrap().source, "POST");
        assert_eq!(c.proxy_set_body.as_ref().unwrap().source, "$arg_x");
        assert_eq!(c.client_body_buffer_size, 16384);
        assert_eq!(c.client_body_in_file_only, BodyInFile::Clean);
        assert!(c.client_body_in_single_buffer);
        assert_eq!(c.client_body_timeout, Duration::from_secs(5));
    }

    /// nginx checks a repeat before the value: the repeat is the error.
    #[test]
    fn a_repeat_is_a_duplicate_whatever_its_value() {
        for (d, good) in [
            ("proxy_buffering", "on"),
            ("proxy_buffer_size", "8k"),
            ("proxy_read_timeout", "1s"),
            ("proxy_http_version", "1.1"),
        ] {
            assert_eq!(
                errors(&format!(
                    "server {{ location / {{ {d} {good}; {d} bad; }} }}"
                )),
                vec![format!("\"{d}\" directive is duplicate")],
            );
        }
    }

    #[test]
    fn merge_problems_are_reported_once() {
        let e = errors(
            "proxy_buffers 1 4k;\n\
             server { listen 127.0.0.1:1; location /a { } location /b { } }\n\
             server { listen 127.0.0.1:2; }",
        );
        assert_eq!(e, vec!["there must be at least 2 \"proxy_buffers\""]);
    }
}
