//! The `nowait_status` location's content handler: what it answers depends
//! on who asks. A scraper (and every client of before the page existed)
//! gets the Prometheus text; a browser (`Accept: text/html`) gets the live
//! page; the page's script gets the ring of per-second samples as JSON.
//! `?format=prometheus|html|json` chooses explicitly.
//!
//! The page is one HTML file with its script and styles, embedded in the
//! binary, so it works without internet and cannot drift from the server
//! that serves it. Its charts are SVG paths the script draws by hand: a
//! charting library from npm would be ten to a hundred times the size of
//! the page, a build step and a dependency to keep up, for seven line
//! charts.

use crate::http::status::Status;

use crate::server::core::reply::Reply;
use crate::server::core::request::Req;
use crate::server::core::site::Site;

/// The live page, served as is.
pub const PAGE: &str = include_str!("status_page.html");

/// The content type of the JSON samples.
pub const JSON_TYPE: &str = "application/json";
/// The content type of the page.
pub const HTML_TYPE: &str = "text/html; charset=utf-8";

/// What the status location answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The Prometheus text exposition (the default).
    Prometheus,
    /// The live page.
    Html,
    /// The per-second samples.
    Json,
}

/// The value of argument `name` in a query string.
fn arg<'a>(args: &'a str, name: &str) -> Option<&'a str> {
    args.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == name).then_some(v)
    })
}

/// The format a request asks for: `?format=` first, then whether `Accept`
/// names `text/html` (browsers do; Prometheus and curl do not), else the
/// Prometheus text.
pub fn format(args: Option<&str>, accept: Option<&[u8]>) -> Format {
    match args.and_then(|a| arg(a, "format")) {
        Some("json") => return Format::Json,
        Some("html") => return Format::Html,
        Some("prometheus") | Some("text") => return Format::Prometheus,
        _ => {}
    }
    let html = accept.is_some_and(|a| {
        String::from_utf8_lossy(a)
            .split(',')
            .any(|m| m.split(';').next().unwrap_or("").trim() == "text/html")
    });
    if html {
        Format::Html
    } else {
        Format::Prometheus
    }
}

/// The reply of the status location.
pub fn reply(site: &Site, r: &Req<'_>) -> Reply {
    let args = r.args();
    let args = args.as_deref();
    match format(args, r.head.header("accept")) {
        Format::Prometheus => {
            let text = crate::metrics::prometheus::render(
                &site.worker_metrics(),
                &crate::io::sample::sample(&site.pools),
                &site.upstream_samples(),
                &crate::server::upstream::cache::samples(site),
                &site.log_samples(),
            );
            Reply::text(Status::OK, text, crate::metrics::prometheus::CONTENT_TYPE)
        }
        Format::Html => Reply::text(Status::OK, PAGE.to_string(), HTML_TYPE),
        Format::Json => {
            let since = args
                .and_then(|a| arg(a, "since"))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            Reply::text(Status::OK, site.shared.ring_json(since), JSON_TYPE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrapers_and_old_clients_get_the_text() {
        assert_eq!(format(None, None), Format::Prometheus);
        let prom =
            b"application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(format(None, Some(prom)), Format::Prometheus);
        assert_eq!(format(None, Some(b"*/*")), Format::Prometheus);
    }

    #[test]
    fn browsers_get_the_page_and_the_query_decides_first() {
        let chrome = b"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
        assert_eq!(format(None, Some(chrome)), Format::Html);
        assert_eq!(
            format(Some("format=prometheus"), Some(chrome)),
            Format::Prometheus
        );
        assert_eq!(
            format(Some("x=1&format=json&since=5"), Some(chrome)),
            Format::Json
        );
        assert_eq!(format(Some("format=html"), None), Format::Html);
        assert_eq!(arg("format=json&since=5", "since"), Some("5"));
    }

    #[test]
    fn the_page_is_self_contained() {
        assert!(PAGE.starts_with("<!DOCTYPE html>"));
        assert!(PAGE.contains("?format=json"));
        for remote in ["http://", "https://", "//cdn", "src=\""] {
            let hits: Vec<_> = PAGE
                .match_indices(remote)
                .filter(|(i, _)| !PAGE[*i..].starts_with("http://www.w3.org/2000/svg"))
                .collect();
            assert!(
                hits.is_empty(),
                "the page loads nothing from elsewhere: {remote}"
            );
        }
    }
}
