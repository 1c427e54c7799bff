//! `ssl_ocsp`, `ssl_ocsp_responder` and `ssl_ocsp_cache` once a server's
//! settings are merged, as `ngx_http_ssl_merge_srv_conf` and nginx's
//! `ngx_ssl_ocsp` check them: refused with `ssl_verify_client
//! optional_no_ca`, the responder's URL `http://` and parsed (its host
//! resolved now, as `ngx_parse_url` does), and the CAs the answers'
//! signers chain to read from `ssl_client_certificate` and
//! `ssl_trusted_certificate`.

use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::build::Builder;
use super::error::ConfError;
use super::inherit::SrvConf;
use super::ssl_model::{ClientOcspPlan, OcspCheck, ResponderUrl, VerifyClient};
use super::url::{self, UrlOptions};

/// The scheme nginx accepts for responders (`http://`; no TLS to them).
pub const HTTP_PREFIX: &str = "http://";
/// A responder's port when its URL has none.
pub const DEFAULT_PORT: u16 = 80;

/// The server's OCSP for client certificates: `Some(None)` when
/// `ssl_ocsp` is off, `None` after an error (said in nginx's words).
pub fn plan(
    b: &mut Builder,
    c: &SrvConf,
    trusted: &[CertificateDer<'static>],
) -> Option<Option<Arc<ClientOcspPlan>>> {
    if c.ssl_ocsp == OcspCheck::Off {
        return Some(None);
    }
    if c.ssl_verify_client == VerifyClient::OptionalNoCa {
        b.diags.push(ConfError::emerg(
            "\"ssl_ocsp\" is incompatible with \"ssl_verify_client optional_no_ca\"",
            None,
        ));
        return None;
    }
    let responder = match c.ssl_ocsp_responder.as_deref().filter(|u| !u.is_empty()) {
        None => None,
        Some(u) => match configured_responder(u) {
            Ok(r) => Some(r),
            Err(e) => {
                b.diags.push(ConfError::emerg(e, None));
                return None;
            }
        },
    };
    // `ssl_client_certificate` was read and checked with the client CAs;
    // its certificates are read again here for their DER.
    let mut cas = Vec::new();
    if let Some(f) = &c.ssl_client_certificate {
        if let Ok(pem) = b.data.read(&f.path) {
            cas.extend(CertificateDer::pem_slice_iter(&pem).filter_map(Result::ok));
        }
    }
    cas.extend(trusted.iter().cloned());
    Some(Some(Arc::new(ClientOcspPlan {
        leaf_only: c.ssl_ocsp == OcspCheck::Leaf,
        responder,
        cache: c.ssl_ocsp_cache.clone(),
        cas,
    })))
}

/// `ssl_ocsp_responder`'s URL, in `ngx_ssl_ocsp`'s words when it is bad.
fn configured_responder(u: &str) -> Result<ResponderUrl, String> {
    let rest = strip_http(u).ok_or_else(|| {
        format!("invalid URL prefix in OCSP responder \"{u}\" in \"ssl_ocsp_responder\"")
    })?;
    parse(rest, true)
        .map_err(|e| format!("{e} in OCSP responder \"{rest}\" in \"ssl_ocsp_responder\""))
}

/// What follows `http://` (any case) in `url`, when something does.
pub fn strip_http(url: &str) -> Option<&str> {
    match url.get(..HTTP_PREFIX.len()) {
        Some(p) if url.len() > HTTP_PREFIX.len() && p.eq_ignore_ascii_case(HTTP_PREFIX) => {
            Some(&url[HTTP_PREFIX.len()..])
        }
        _ => None,
    }
}

/// A responder's URL after `http://` (`ngx_parse_url` with a URI part
/// and port 80); a host name is resolved only when `resolve` says
/// (`ssl_ocsp_responder`'s is, a certificate's is left to the
/// `resolver`). The error is `ngx_parse_url`'s.
pub fn parse(rest: &str, resolve: bool) -> Result<ResponderUrl, String> {
    let opts = UrlOptions {
        default_port: DEFAULT_PORT,
        uri_part: true,
        resolve,
    };
    let parsed = url::parse_url(rest, opts).map_err(str::to_string)?;
    let mut addrs = Vec::new();
    for a in &parsed.addrs {
        match a {
            super::model::UpstreamAddr::Inet(a) => addrs.push(*a),
            super::model::UpstreamAddr::Unix(_) => {
                return Err(
                    "a unix domain socket as OCSP responder is not supported by nowait".to_string(),
                );
            }
        }
    }
    let uri = if parsed.uri.is_empty() {
        "/".to_string()
    } else {
        parsed.uri.clone()
    };
    Ok(ResponderUrl {
        host: parsed.host,
        port: parsed.port,
        uri,
        addrs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_responder_url_is_http_and_parsed_as_nginx() {
        let r = configured_responder("http://127.0.0.1:8081/test").unwrap();
        assert_eq!(
            (r.host.as_str(), r.port, r.uri.as_str()),
            ("127.0.0.1", 8081, "/test")
        );
        assert_eq!(r.addrs, vec!["127.0.0.1:8081".parse().unwrap()]);
        let r = configured_responder("HTTP://127.0.0.1").unwrap();
        assert_eq!((r.port, r.uri.as_str()), (80, "/"));
        assert_eq!(
            configured_responder("https://127.0.0.1/").unwrap_err(),
            "invalid URL prefix in OCSP responder \"https://127.0.0.1/\" in \"ssl_ocsp_responder\""
        );
        assert_eq!(strip_http("http://"), None);
        // A name in a certificate waits for the resolver.
        let r = parse("localhost:8081", false).unwrap();
        assert_eq!((r.host.as_str(), r.addrs.len()), ("localhost", 0));
    }
}
