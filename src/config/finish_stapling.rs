//! `ssl_trusted_certificate` and `ssl_stapling` once a server's
//! certificates are loaded, as nginx's `ngx_ssl_trusted_certificate` and
//! `ngx_ssl_stapling` do it: each certificate gets the response of
//! `ssl_stapling_file`, or its issuer (from the chain, else the trusted
//! certificates) and its responder (`ssl_stapling_responder`, else the
//! certificate's Authority Information Access), the responder's host
//! resolved now. A certificate without either is stapled nothing, with
//! nginx's warning; a file that cannot be read is an error.

use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::build::Builder;
use super::error::ConfError;
use super::inherit::SrvConf;
use super::ssl_model::{ResponderPlan, StapleSource, StaplingPlan};
use super::url::{self, UrlOptions};
use crate::tls::material::Pair;
use crate::tls::ocsp::{self, CertId};
use crate::tls::x509::CertFields;

/// The scheme nginx accepts for responders (`http://`; no TLS to them).
const HTTP_PREFIX: &str = "http://";
/// A responder's port when its URL has none.
const DEFAULT_PORT: u16 = 80;

/// `ssl_trusted_certificate`'s certificates (empty without it); `None`
/// after an error, said in nginx's words.
pub fn trusted(b: &mut Builder, c: &SrvConf) -> Option<Arc<Vec<CertificateDer<'static>>>> {
    let Some(f) = &c.ssl_trusted_certificate else {
        return Some(Arc::new(Vec::new()));
    };
    let failed = |why: String| {
        format!(
            "SSL_CTX_load_verify_locations(\"{}\") failed ({why})",
            f.path.display()
        )
    };
    let pem = match b.data.read(&f.path) {
        Ok(pem) => pem,
        Err(e) => {
            b.diags.push(ConfError::emerg(
                super::finish_ssl::fopen_failed("SSL_CTX_load_verify_locations", &f.path, &e),
                None,
            ));
            return None;
        }
    };
    match read_trusted(&pem) {
        Ok(certs) => Some(Arc::new(certs)),
        Err(why) => {
            // OpenSSL 3.0's code for a file with neither.
            let why = match why.as_str() {
                "no certificate or crl found" => {
                    format!("error:05800088:x509 certificate routines::{why}")
                }
                _ => why,
            };
            b.diags
                .push(ConfError::emerg(failed(format!("SSL: {why}")), None));
            None
        }
    }
}

/// The certificates of a PEM file of trusted CAs (CRLs may be there too,
/// as `X509_load_cert_crl_file` reads them).
fn read_trusted(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let crls = rustls::pki_types::CertificateRevocationListDer::pem_slice_iter(pem).count();
    if certs.is_empty() && crls == 0 {
        return Err("no certificate or crl found".to_string());
    }
    Ok(certs)
}

/// Each pair's stapling (`names` are the certificates' files, by pair);
/// `None` after an error.
pub fn plans(
    b: &mut Builder,
    c: &SrvConf,
    pairs: &[Pair],
    names: &[String],
    trusted: &Arc<Vec<CertificateDer<'static>>>,
) -> Option<Vec<Option<StaplingPlan>>> {
    if !c.ssl_stapling {
        return Some(vec![None; pairs.len()]);
    }
    let mut out = Vec::with_capacity(pairs.len());
    // nginx keeps a server's certificates last first, and staples them in
    // that order: its warnings come in it.
    for (pair, name) in pairs.iter().zip(names).rev() {
        let source = match &c.ssl_stapling_file {
            Some(f) => Some(StapleSource::File(Arc::new(file(b, &f.path)?))),
            None => {
                responder(b, c, pair, name, trusted).map(|r| StapleSource::Responder(Arc::new(r)))
            }
        };
        out.push(source.map(|source| StaplingPlan {
            name: name.clone(),
            source,
        }));
    }
    out.reverse();
    Some(out)
}

/// `ngx_ssl_stapling_file`: the response in `path`, which must decode as
/// one (nothing more is checked: nginx staples it as it is).
fn file(b: &mut Builder, path: &std::path::Path) -> Option<Vec<u8>> {
    let der = match b.data.read(path) {
        Ok(der) => der,
        Err(e) => {
            use crate::tls::openssl_text;
            b.diags.push(ConfError::emerg(
                openssl_text::line(
                    &format!("BIO_new_file(\"{}\") failed", path.display()),
                    &openssl_text::fopen_failed_in(path, "rb", &e),
                ),
                None,
            ));
            return None;
        }
    };
    if let Err(e) = ocsp::response::parse(&der) {
        let why = e
            .reason()
            .map(|r| format!(" (SSL: {r})"))
            .unwrap_or_default();
        b.diags.push(ConfError::emerg(
            format!("d2i_OCSP_RESPONSE_bio(\"{}\") failed{why}", path.display()),
            None,
        ));
        return None;
    }
    Some(der)
}

/// `ngx_ssl_stapling_issuer` and `ngx_ssl_stapling_responder`: the
/// responder to ask about `pair`'s certificate, or `None` (warned) when
/// its issuer or its responder cannot be found.
fn responder(
    b: &mut Builder,
    c: &SrvConf,
    pair: &Pair,
    name: &str,
    trusted: &Arc<Vec<CertificateDer<'static>>>,
) -> Option<ResponderPlan> {
    let ignored = |b: &mut Builder, why: String| {
        b.diags.push(ConfError::warn(
            format!("\"ssl_stapling\" ignored, {why}"),
            None,
        ));
    };
    let chain = pair.key.cert.get(1..).unwrap_or_default().to_vec();
    let leaf = pair
        .key
        .cert
        .first()
        .and_then(|c| CertFields::parse(c.as_ref()))?;
    let issuer = chain
        .iter()
        .chain(trusted.iter())
        .filter_map(|c| CertFields::parse(c.as_ref()))
        .find(|i| leaf.issued_by(i));
    let Some(issuer) = issuer else {
        ignored(
            b,
            format!("issuer certificate not found for certificate \"{name}\""),
        );
        return None;
    };
    let url = match c
        .ssl_stapling_responder
        .as_deref()
        .filter(|u| !u.is_empty())
    {
        Some(u) => u.to_string(),
        None => match leaf.ocsp_urls().into_iter().next() {
            Some(u) => u,
            None => {
                ignored(
                    b,
                    format!("no OCSP responder URL in the certificate \"{name}\""),
                );
                return None;
            }
        },
    };
    let rest = match url.get(..HTTP_PREFIX.len()) {
        Some(p) if url.len() > HTTP_PREFIX.len() && p.eq_ignore_ascii_case(HTTP_PREFIX) => {
            &url[HTTP_PREFIX.len()..]
        }
        _ => {
            ignored(
                b,
                format!(
                    "invalid URL prefix in OCSP responder \"{url}\" in the certificate \"{name}\""
                ),
            );
            return None;
        }
    };
    let opts = UrlOptions {
        default_port: DEFAULT_PORT,
        uri_part: true,
        resolve: true,
    };
    let parsed = match url::parse_url(rest, opts) {
        Ok(p) => p,
        Err(e) => {
            ignored(
                b,
                format!("{e} in OCSP responder \"{rest}\" in the certificate \"{name}\""),
            );
            return None;
        }
    };
    let mut addrs = Vec::new();
    for a in &parsed.addrs {
        match a {
            super::model::UpstreamAddr::Inet(a) => addrs.push(*a),
            super::model::UpstreamAddr::Unix(_) => {
                ignored(
                    b,
                    format!(
                        "a unix domain socket as OCSP responder \"{rest}\" in the certificate \"{name}\" is not supported by nowait"
                    ),
                );
                return None;
            }
        }
    }
    let uri = if parsed.uri.is_empty() {
        "/".to_string()
    } else {
        parsed.uri.clone()
    };
    let verify = c.ssl_stapling_verify;
    let cache_key = cache_key(&pair.key.cert, issuer.der, &url, verify, trusted);
    Some(ResponderPlan {
        host: parsed.host,
        port: parsed.port,
        uri,
        addrs,
        id: CertId::new(&leaf, &issuer),
        chain,
        trusted: trusted.clone(),
        verify,
        cache_key,
    })
}

/// What the process's cache knows a staple by (see
/// [`ResponderPlan::cache_key`]): SHA-1 over each part, length first.
fn cache_key(
    chain: &[CertificateDer<'static>],
    issuer: &[u8],
    url: &str,
    verify: bool,
    trusted: &[CertificateDer<'static>],
) -> [u8; 20] {
    let mut all = Vec::new();
    let mut part = |bytes: &[u8]| {
        all.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
        all.extend_from_slice(bytes);
    };
    for c in chain {
        part(c.as_ref());
    }
    part(issuer);
    part(url.as_bytes());
    part(&[u8::from(verify)]);
    for c in trusted {
        part(c.as_ref());
    }
    ocsp::sha1(&all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trusted_file_needs_a_certificate_or_a_crl() {
        assert_eq!(
            read_trusted(b"").unwrap_err(),
            "no certificate or crl found"
        );
        assert_eq!(
            read_trusted(b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
                .unwrap_err(),
            "no certificate or crl found"
        );
        let ca = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls/ocsp-chain.crt"),
        )
        .unwrap();
        assert_eq!(read_trusted(&ca).unwrap().len(), 2);
    }
}
