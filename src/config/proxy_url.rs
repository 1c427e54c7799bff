//! What a `proxy_pass` URL means once parsed, the same for a URL written
//! without variables (read when loading) and one evaluated per request:
//! nginx's `ngx_http_proxy_set_vars` (`$proxy_host`, `$proxy_port`, where
//! the default cache key's first part ends) and the checks and fix-ups of
//! `ngx_http_proxy_eval` (the scheme, a URI that is only a query). A URL
//! is `http://` or `https://` (TLS to the upstream, port 443 by default).
//!
//! Owns no I/O: names are not resolved here (see [`super::url`]).

use super::url::{ParsedUrl, UrlOptions, parse_url};

/// The scheme of plain HTTP upstreams.
pub const HTTP_PREFIX: &str = "http://";
/// The scheme of upstreams spoken to over TLS.
pub const HTTPS_PREFIX: &str = "https://";
/// The port of an `http://` URL that names none.
pub const HTTP_DEFAULT_PORT: u16 = 80;
/// The port of an `https://` URL that names none.
pub const HTTPS_DEFAULT_PORT: u16 = 443;

/// How `proxy_pass` URLs of a scheme whose port is `default_port` are read
/// (nginx's `ngx_url_t` for them): a URI may follow the address, and names
/// are not resolved while parsing.
pub const fn pass_url(default_port: u16) -> UrlOptions {
    UrlOptions {
        default_port,
        uri_part: true,
        resolve: false,
    }
}

/// A `proxy_pass` URL's scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scheme {
    /// `https://`: the upstream is spoken to over TLS.
    pub tls: bool,
}

impl Scheme {
    /// The scheme's prefix as nginx compares it (`http://`, `https://`).
    pub fn prefix(self) -> &'static str {
        if self.tls { HTTPS_PREFIX } else { HTTP_PREFIX }
    }

    /// The port of a URL of this scheme that names none.
    pub fn default_port(self) -> u16 {
        if self.tls {
            HTTPS_DEFAULT_PORT
        } else {
            HTTP_DEFAULT_PORT
        }
    }

    /// The scheme `url` starts with (ASCII case-insensitively), if it is
    /// one nginx proxies to and more follows it (nginx's `proxy.len > 7 &&
    /// ngx_strncasecmp` of `ngx_http_proxy_eval`; a URL written without
    /// variables needs nothing after the scheme: `proxy_pass https://;`
    /// says "no host").
    pub fn of(url: &str, needs_more: bool) -> Option<Scheme> {
        [Scheme { tls: false }, Scheme { tls: true }]
            .into_iter()
            .find(|s| {
                let p = s.prefix();
                (url.len() > p.len() || (!needs_more && url.len() == p.len()))
                    && url.as_bytes()[..p.len()].eq_ignore_ascii_case(p.as_bytes())
            })
    }
}

/// The values nginx derives from a parsed `proxy_pass` URL
/// (`ngx_http_proxy_vars_t`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxyVars {
    /// `$proxy_host` and the default `Host`: the host, with `:port` as
    /// written unless no port was written or it is the default;
    /// `localhost` for a Unix socket.
    pub host_header: String,
    /// `$proxy_port`: the port as written (`08080`), `80` when none was
    /// written or it is the default; empty for a Unix socket.
    pub port: String,
    /// How many bytes of the URL as written begin the default cache key
    /// (nginx's `key_start`): the scheme and the host header's length
    /// (`http://h` of `http://h:80/x`), or the scheme, `unix:`, the path
    /// and the colon after it.
    pub key_start: usize,
}

/// nginx's `ngx_http_proxy_set_vars` for `u`, parsed from a URL of
/// `scheme`. `key_start` never runs past the URL's `url_len` bytes
/// (nginx's can, for a socket without a URI part, by one byte it does not
/// own).
pub fn proxy_vars(u: &ParsedUrl, scheme: Scheme, url_len: usize) -> ProxyVars {
    let scheme_len = scheme.prefix().len();
    if u.unix {
        return ProxyVars {
            host_header: "localhost".to_string(),
            port: String::new(),
            key_start: (scheme_len + "unix:".len() + u.host.len() + 1).min(url_len),
        };
    }
    let default_port = scheme.default_port();
    let (host_header, port) = match &u.port_text {
        Some(text) if !u.no_port && u.port != default_port => {
            (format!("{}:{text}", u.host), text.clone())
        }
        _ => (u.host.clone(), default_port.to_string()),
    };
    ProxyVars {
        key_start: (scheme_len + host_header.len()).min(url_len),
        host_header,
        port,
    }
}

/// A `proxy_pass` URL with variables, evaluated for one request.
#[derive(Clone, Debug)]
pub struct Evaluated {
    /// The address part, parsed; its `uri` as nginx sends it (a URI that
    /// is only a query gets a `/` before it).
    pub parsed: ParsedUrl,
    /// `$proxy_host`, `$proxy_port` and the cache key's first part.
    pub vars: ProxyVars,
    /// The scheme (`https://`: TLS).
    pub scheme: Scheme,
}

/// Why an evaluated URL cannot be used: nginx's words, without the
/// request's log context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EvalError {
    /// The URL does not start with a scheme nginx proxies to (`invalid
    /// URL prefix in "…"`).
    Prefix(String),
    /// The address part does not parse (`invalid port in upstream "…"`).
    Url(String),
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvalError::Prefix(m) | EvalError::Url(m) => f.write_str(m),
        }
    }
}

/// nginx's `ngx_http_proxy_eval` for the evaluated `url`, short of the
/// look-up of its host: the scheme, the address, the URI, the variables.
pub fn evaluate(url: &str) -> Result<Evaluated, EvalError> {
    let Some(scheme) = Scheme::of(url, true) else {
        return Err(EvalError::Prefix(format!(
            "invalid URL prefix in \"{url}\""
        )));
    };
    let rest = &url[scheme.prefix().len()..];
    let mut parsed = parse_url(rest, pass_url(scheme.default_port()))
        .map_err(|e| EvalError::Url(format!("{e} in upstream \"{rest}\"")))?;
    let vars = proxy_vars(&parsed, scheme, url.len());
    // A request line needs a path: `http://h$suffix` with `$suffix` set to
    // `?x=1` sends `/?x=1` (only an evaluated URL gets this; a static
    // `http://h?x=1` replaces the location's prefix with `?x=1`).
    if parsed.uri.starts_with('?') {
        parsed.uri.insert(0, '/');
    }
    Ok(Evaluated {
        parsed,
        vars,
        scheme,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(url: &str) -> ProxyVars {
        evaluate(url).unwrap().vars
    }

    #[test]
    fn host_port_and_key_as_nginx_sets_them() {
        let v = vars("http://127.0.0.1:8080/x");
        assert_eq!(
            (v.host_header.as_str(), v.port.as_str()),
            ("127.0.0.1:8080", "8080")
        );
        assert_eq!(
            &"http://127.0.0.1:8080/x"[..v.key_start],
            "http://127.0.0.1:8080"
        );
        // The port as written, leading zeros and all.
        let v = vars("http://h:08080");
        assert_eq!(
            (v.host_header.as_str(), v.port.as_str()),
            ("h:08080", "08080")
        );
        // The default port, written or not, is left out of the host and
        // of the key.
        for url in ["http://h:80/x", "http://h/x", "HTTP://h?q"] {
            let v = vars(url);
            assert_eq!(
                (v.host_header.as_str(), v.port.as_str()),
                ("h", "80"),
                "{url}"
            );
            assert_eq!(v.key_start, "http://h".len(), "{url}");
        }
        let v = vars("http://unix:/tmp/s:/u");
        assert_eq!((v.host_header.as_str(), v.port.as_str()), ("localhost", ""));
        assert_eq!(
            &"http://unix:/tmp/s:/u"[..v.key_start],
            "http://unix:/tmp/s:"
        );
        assert_eq!(
            vars("http://unix:/tmp/s").key_start,
            "http://unix:/tmp/s".len()
        );
    }

    #[test]
    fn https_urls_default_to_port_443() {
        let e = evaluate("HTTPS://h/x").unwrap();
        assert!(e.scheme.tls);
        assert_eq!((e.parsed.port, e.vars.port.as_str()), (443, "443"));
        assert_eq!(
            (e.vars.host_header.as_str(), e.vars.key_start),
            ("h", "https://h".len())
        );
        let v = vars("https://h:443/x");
        assert_eq!((v.host_header.as_str(), v.port.as_str()), ("h", "443"));
        let v = vars("https://h:80/x");
        assert_eq!((v.host_header.as_str(), v.port.as_str()), ("h:80", "80"));
        assert!(!evaluate("http://h").unwrap().scheme.tls);
    }

    #[test]
    fn a_uri_that_is_only_a_query_gets_a_slash() {
        let uri = |url| evaluate(url).unwrap().parsed.uri;
        assert_eq!(uri("http://127.0.0.1:8000?x=1"), "/?x=1");
        assert_eq!(uri("http://h?"), "/?");
        assert_eq!(uri("http://unix:/tmp/s:?a"), "/?a");
        assert_eq!(uri("http://h/p?x=1"), "/p?x=1");
        assert_eq!(uri("http://h"), "");
        assert_eq!(uri("http://unix:/tmp/s:"), "");
    }

    #[test]
    fn nginx_errors() {
        let err = |url| evaluate(url).unwrap_err().to_string();
        assert_eq!(err(""), "invalid URL prefix in \"\"");
        // The scheme alone is not a URL (`proxy.len > 7`).
        assert_eq!(err("http://"), "invalid URL prefix in \"http://\"");
        assert_eq!(err("ftp://h"), "invalid URL prefix in \"ftp://h\"");
        assert_eq!(err("https://"), "invalid URL prefix in \"https://\"");
        assert_eq!(err("http:///x"), "no host in upstream \"/x\"");
        assert_eq!(err("http://h:0"), "invalid port in upstream \"h:0\"");
    }
}
