//! The referer module (`valid_referers`, `$invalid_referer`), as nginx's
//! `ngx_http_referer_module` reads the list and judges a `Referer`.

use super::regex::Regex;

/// What `valid_referers` lists at one level.
#[derive(Clone, Debug, Default)]
pub struct ValidReferers {
    /// `none`: a request without `Referer` is valid.
    pub none: bool,
    /// `blocked`: a `Referer` that does not start with `http://` or
    /// `https://` (a proxy or firewall blanked it) is valid.
    pub blocked: bool,
    /// `server_names`: the server's own names are valid hosts.
    pub server_names: bool,
    /// Host names, lowercased, each with the URI prefix it requires.
    pub exact: Vec<(String, Option<String>)>,
    /// `*.example.com` (kept as `.example.com`): any name ending so.
    pub head: Vec<(String, Option<String>)>,
    /// `www.example.*` (kept as `www.example.`): any name starting so.
    pub tail: Vec<(String, Option<String>)>,
    /// `~regex`, caseless, matched against the `Referer` without its
    /// scheme.
    pub regexes: Vec<Regex>,
}

/// The longest host nginx looks up (`buf[256]`): a longer one is invalid.
const MAX_HOST: usize = 256;

impl ValidReferers {
    /// Adds one host entry as `ngx_http_add_referer` does (`ngx_hash_add_key`
    /// with wildcards): `name` with an optional URI prefix.
    pub fn add(&mut self, name: &str, uri: Option<&str>) -> Result<(), String> {
        let lower = name.to_ascii_lowercase();
        let uri = uri.map(str::to_string);
        // nginx names it as its hash keeps it: lowercased.
        let shown = lower.clone();
        let conflict = || format!("conflicting parameter \"{shown}\"");
        let invalid = || format!("invalid hostname or wildcard \"{name}\"");
        let push = |list: &mut Vec<(String, Option<String>)>, key: String| {
            if list.iter().any(|(k, _)| *k == key) {
                return Err(conflict());
            }
            list.push((key, uri.clone()));
            Ok(())
        };
        if let Some(rest) = lower.strip_prefix("*.") {
            if rest.is_empty() || rest.contains('*') {
                return Err(invalid());
            }
            return push(&mut self.head, format!(".{rest}"));
        }
        if let Some(rest) = lower.strip_suffix(".*") {
            if rest.is_empty() || rest.contains('*') {
                return Err(invalid());
            }
            return push(&mut self.tail, format!("{rest}."));
        }
        if lower.contains('*') {
            return Err(invalid());
        }
        if let Some(rest) = lower.strip_prefix('.') {
            // `.example.com`: the name itself and every name under it.
            if rest.is_empty() {
                return Err(invalid());
            }
            push(&mut self.exact, rest.to_string())?;
            return push(&mut self.head, lower.clone());
        }
        push(&mut self.exact, lower.clone())
    }

    /// Whether `referer` (the request's first `Referer`, if any) is valid
    /// here; with `server_names` on, the server's names (`~regex` ones
    /// compiled in `regexes`) are valid hosts too. `$invalid_referer` is
    /// empty for a valid one and `1` otherwise.
    pub fn valid(&self, referer: Option<&str>, names: &[String], regexes: &[Regex]) -> bool {
        let Some(referer) = referer else {
            return self.none;
        };
        let rest = ["http://", "https://"].iter().find_map(|scheme| {
            let head = referer.get(..scheme.len())?;
            head.eq_ignore_ascii_case(scheme)
                .then(|| &referer[scheme.len()..])
        });
        // nginx wants at least `http://i.ru` before it looks at the scheme.
        let rest = match rest {
            Some(r) if referer.len() >= "http://i.ru".len() => r,
            _ => return self.blocked,
        };
        let host_end = rest.find(['/', ':']).unwrap_or(rest.len());
        if host_end > MAX_HOST || rest[..host_end].len() > MAX_HOST {
            return false;
        }
        let host = rest[..host_end].to_ascii_lowercase();
        let path = rest[host_end..]
            .find('/')
            .map_or("", |i| &rest[host_end + i..]);
        let found = self
            .exact
            .iter()
            .find(|(k, _)| *k == host)
            .or_else(|| {
                self.head
                    .iter()
                    .filter(|(k, _)| host.len() > k.len() && host.ends_with(k.as_str()))
                    .max_by_key(|(k, _)| k.len())
            })
            .or_else(|| {
                self.tail
                    .iter()
                    .filter(|(k, _)| host.len() > k.len() && host.starts_with(k.as_str()))
                    .max_by_key(|(k, _)| k.len())
            });
        if let Some((_, uri)) = found {
            return uri.as_deref().is_none_or(|u| path.starts_with(u));
        }
        if self.server_names
            && (names.iter().any(|n| server_name_matches(n, &host))
                || regexes.iter().any(|re| re.is_match(&host)))
        {
            return true;
        }
        self.regexes.iter().any(|re| re.is_match(rest))
    }
}

/// Whether `host` (lowercased) is the server name `name` (kept lowercased):
/// exact, `*.x`, `x.*` or `.x` (`x` and every name under it). Regular
/// expressions are matched by the caller.
fn server_name_matches(name: &str, host: &str) -> bool {
    if let Some(suffix) = name.strip_prefix('*') {
        host.len() > suffix.len() && host.ends_with(suffix)
    } else if let Some(prefix) = name.strip_suffix('*') {
        host.len() > prefix.len() && host.starts_with(prefix)
    } else if let Some(domain) = name.strip_prefix('.') {
        host == domain || (host.len() > name.len() && host.ends_with(name))
    } else {
        !name.starts_with('~') && name == host
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[&str]) -> ValidReferers {
        let mut v = ValidReferers::default();
        for e in entries {
            match *e {
                "none" => v.none = true,
                "blocked" => v.blocked = true,
                "server_names" => v.server_names = true,
                e if e.starts_with('~') => v
                    .regexes
                    .push(crate::config::regex::compile(&e[1..], true).unwrap()),
                e => {
                    let (name, uri) = match e.find('/') {
                        Some(i) => (&e[..i], Some(&e[i..])),
                        None => (e, None),
                    };
                    v.add(name, uri).unwrap();
                }
            }
        }
        v
    }

    fn valid(v: &ValidReferers, referer: Option<&str>) -> bool {
        let names = [
            "site.test".to_string(),
            "*.site.test".into(),
            ".dot.test".into(),
        ];
        let regexes = [crate::config::regex::compile(r"^re\d\.test$", false).unwrap()];
        v.valid(referer, &names, &regexes)
    }

    #[test]
    fn none_and_blocked() {
        let v = list(&["example.com"]);
        assert!(!valid(&v, None));
        assert!(!valid(&v, Some("something")));
        let v = list(&["none", "blocked", "example.com"]);
        assert!(valid(&v, None));
        assert!(valid(&v, Some("something")));
        // Too short to be looked at: blocked.
        assert!(valid(&v, Some("http://a.b")));
        assert!(!valid(&v, Some("http://other.com/")));
    }

    #[test]
    fn names_wildcards_and_uri_parts() {
        let v = list(&[
            "example.com",
            "*.example.org",
            "www.example.*",
            ".example.net",
            "gallery.test/pictures/",
        ]);
        for ok in [
            "http://example.com/",
            "HTTPS://EXAMPLE.COM:8080/x",
            "http://a.b.example.org/",
            "http://www.example.de/page",
            "http://example.net",
            "http://x.example.net/",
            "http://gallery.test/pictures/1.jpg",
        ] {
            assert!(valid(&v, Some(ok)), "{ok}");
        }
        for bad in [
            "http://example.org/",
            "http://notexample.com/",
            "http://gallery.test/other/",
            "ftp://example.com/",
        ] {
            assert!(!valid(&v, Some(bad)), "{bad}");
        }
    }

    #[test]
    fn server_names_and_regexes() {
        let v = list(&["server_names", "~\\.google\\."]);
        assert!(valid(&v, Some("http://site.test/")));
        assert!(valid(&v, Some("http://a.site.test/")));
        assert!(valid(&v, Some("http://dot.test/")));
        assert!(valid(&v, Some("http://x.dot.test/")));
        assert!(valid(&v, Some("http://re7.test/")));
        assert!(!valid(&v, Some("http://rex.test/")));
        assert!(!valid(&v, Some("http://site.test.evil/")));
        assert!(valid(&v, Some("https://www.google.de/search")));
        assert!(!valid(&v, Some("http://evil.test/")));
    }

    #[test]
    fn bad_entries_in_nginx_words() {
        let mut v = ValidReferers::default();
        assert_eq!(
            v.add("a*b", None).unwrap_err(),
            "invalid hostname or wildcard \"a*b\""
        );
        v.add("x.com", None).unwrap();
        assert_eq!(
            v.add("X.com", None).unwrap_err(),
            "conflicting parameter \"x.com\""
        );
    }
}
