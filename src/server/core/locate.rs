//! `location` matching with nginx's precedence
//! (`ngx_http_core_find_location`): an exact `=` match wins at once; else the
//! longest matching prefix is remembered and its nested locations searched;
//! unless that prefix is `^~`, the regexes of the level are then tried in
//! order, the first match winning. With no match at all, the server's own
//! settings apply.

use crate::config::model::{Location, LocationMatch};

/// What the search found.
#[derive(Clone, Copy, Debug)]
pub enum Found<'a> {
    /// The request stands in this location.
    In(&'a Location),
    /// No location: the server's own settings apply.
    None,
    /// The URI is this location's name without its trailing `/`, and the
    /// location passes requests upstream: answer 301 to the name (nginx's
    /// `auto_redirect`).
    Redirect(&'a Location),
}

/// Finds the location for `uri` among `locations` (one level and, through
/// recursion, its nested levels).
pub fn find<'a>(locations: &'a [Location], uri: &str) -> Option<&'a Location> {
    match find_or_redirect(locations, uri) {
        Found::In(l) => Some(l),
        Found::None | Found::Redirect(_) => None,
    }
}

/// [`find`], telling also when nginx's `auto_redirect` answers: a
/// location named `uri/` whose handler is the proxy, when no location is
/// named `uri` itself at that level (an exact or a prefix one would be
/// found first); the regexes of the level are then not tried.
pub fn find_or_redirect<'a>(locations: &'a [Location], uri: &str) -> Found<'a> {
    match find_level(locations, uri) {
        (Some(l), _, true) => Found::Redirect(l),
        (Some(l), _, false) => Found::In(l),
        (None, ..) => Found::None,
    }
}

/// The location whose name is `uri` with a `/` added, when it redirects
/// there automatically.
fn auto_redirect<'a>(locations: &'a [Location], uri: &str) -> Option<&'a Location> {
    locations.iter().find(|l| match &l.matcher {
        LocationMatch::Exact(s) | LocationMatch::Prefix(s) | LocationMatch::PrefixNoRegex(s) => {
            l.handler == crate::config::model::Handler::Proxy
                && s.len() == uri.len() + 1
                && s.ends_with('/')
                && s.starts_with(uri)
        }
        _ => false,
    })
}

/// Returns the match, whether it is final (exact, or found by a regex),
/// and whether it is an automatic redirect.
fn find_level<'a>(locations: &'a [Location], uri: &str) -> (Option<&'a Location>, bool, bool) {
    let named_uri = locations.iter().any(|l| {
        matches!(&l.matcher,
            LocationMatch::Exact(s) | LocationMatch::Prefix(s) | LocationMatch::PrefixNoRegex(s)
                if s == uri)
    });
    if !named_uri {
        if let Some(l) = auto_redirect(locations, uri) {
            return (Some(l), true, true);
        }
    }
    let mut best: Option<&Location> = None;
    let mut best_len = 0;
    for l in locations {
        match &l.matcher {
            LocationMatch::Exact(s) if s == uri => return (Some(l), true, false),
            LocationMatch::Prefix(p) | LocationMatch::PrefixNoRegex(p)
                if uri.starts_with(p.as_str()) && (best.is_none() || p.len() > best_len) =>
            {
                best = Some(l);
                best_len = p.len();
            }
            _ => {}
        }
    }
    let mut noregex = false;
    if let Some(b) = best {
        noregex = matches!(b.matcher, LocationMatch::PrefixNoRegex(_));
        if !b.locations.is_empty() {
            let (nested, done, redirect) = find_level(&b.locations, uri);
            if done {
                return (nested, true, redirect);
            }
            if nested.is_some() {
                best = nested;
            }
        }
    }
    if !noregex {
        for l in locations {
            if let LocationMatch::Regex { re, .. } = &l.matcher {
                if re.is_match(uri) {
                    if !l.locations.is_empty() {
                        // A redirect found below a regex location is not
                        // one (nginx turns its NGX_DONE into NGX_OK there).
                        if let (Some(n), ..) = find_level(&l.locations, uri) {
                            return (Some(n), true, false);
                        }
                    }
                    return (Some(l), true, false);
                }
            }
        }
    }
    (best, false, false)
}

/// Finds a named location (`@name`) among the server's locations.
pub fn find_named<'a>(locations: &'a [Location], name: &str) -> Option<&'a Location> {
    locations
        .iter()
        .find(|l| matches!(&l.matcher, LocationMatch::Named(n) if n == name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LoadOptions, load};

    fn server_locations(body: &str) -> Vec<Location> {
        let dir = std::env::temp_dir().join(format!(
            "nowait-locate-{}-{}",
            std::process::id(),
            body.len()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("t.conf");
        std::fs::write(
            &file,
            format!("events {{}} http {{ server {{ listen 127.0.0.1:1; {body} }} }}"),
        )
        .unwrap();
        let l = load(&LoadOptions {
            prefix: dir.clone(),
            conf_file: Some(file),
            globals: None,
            error_log: None,
            embedded_root: dir.clone(),
            embedded_listen: String::new(),
        })
        .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        l.config.http.unwrap().servers.remove(0).locations
    }

    fn name(l: Option<&Location>) -> String {
        l.map_or("none".into(), |l| l.matcher.describe())
    }

    #[test]
    fn nginx_precedence() {
        let locs = server_locations(
            "location = / {} location / {} location /documents/ {} location ^~ /images/ {} \
             location ~* \\.(gif|jpg|jpeg)$ {}",
        );
        assert_eq!(name(find(&locs, "/")), "= /");
        assert_eq!(name(find(&locs, "/index.html")), "/");
        assert_eq!(name(find(&locs, "/documents/document.html")), "/documents/");
        assert_eq!(name(find(&locs, "/images/1.gif")), "^~ /images/");
        assert_eq!(
            name(find(&locs, "/documents/1.jpg")),
            "~* \\.(gif|jpg|jpeg)$"
        );
    }

    #[test]
    fn nested_and_no_match() {
        let locs = server_locations(
            "location /a/ { location /a/b/ {} location ~ \\.txt$ {} } location ~ ^/a/b {}",
        );
        // A regex of the outer level beats the longest prefix, as in nginx.
        assert_eq!(name(find(&locs, "/a/b/c")), "~ ^/a/b");
        assert_eq!(name(find(&locs, "/a/c")), "/a/");
        assert_eq!(name(find(&locs, "/a/x.txt")), "~ \\.txt$");
        assert_eq!(name(find(&locs, "/zzz")), "none");
        assert_eq!(name(find(&locs, "/a/b/c.txt")), "~ \\.txt$");
    }
}
