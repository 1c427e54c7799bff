//! OCSP for client certificates (`ssl_ocsp`), as nginx's
//! `ngx_ssl_ocsp_validate` runs it once a handshake is over and the
//! client's certificate verified: each certificate of the verified chain
//! but the root (the client's alone under `ssl_ocsp leaf`) is asked about
//! in turn — its status taken from `ssl_ocsp_cache` when kept there, else
//! from `ssl_ocsp_responder` or the responder its Authority Information
//! Access names — until one is not good or cannot be had. The answers are
//! checked as `OCSP_basic_verify` with no flag checks them: the signer
//! must chain to `ssl_client_certificate` or `ssl_trusted_certificate`.
//!
//! The connection waits for the outcome before its first request is read,
//! as nginx's does (`c->ssl->in_ocsp`); its loop does not: the asking is
//! awaited on non-blocking sockets (`ocsp_ask`).

use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::CertificateDer;

use super::ocsp_ask::{self, Target};
use crate::config::ssl_model::{ClientOcspPlan, ResponderUrl};
use crate::log::{ErrorLog, Level};
use crate::tls::ocsp::CertId;
use crate::tls::ocsp::cache::{self, OcspCache};
use crate::tls::ocsp::client::{self, Outcome};
use crate::tls::ocsp::response::CertStatus;
use crate::tls::ocsp::verify::{self, Trust};
use crate::tls::unix_now;
use crate::tls::x509::CertFields;
use crate::upstream::resolve::Resolver;

/// A server's OCSP for client certificates in one generation.
#[derive(Debug)]
pub struct ClientOcsp {
    /// What the configuration says.
    pub plan: Arc<ClientOcspPlan>,
    /// `ssl_ocsp_cache`'s zone, the process's (kept across reloads at the
    /// same size).
    pub cache: Option<Arc<OcspCache>>,
    /// The server's `resolver`, if it has one.
    pub resolver: Option<Arc<Resolver>>,
    /// `resolver_timeout`.
    pub resolver_timeout: Duration,
}

/// The outcome for the verified client chain `sent` (as the client sent
/// it); what fails is logged on `log`, a connection's messages ending in
/// `tail`.
pub async fn validate(
    o: &ClientOcsp,
    sent: &[CertificateDer<'static>],
    log: &ErrorLog,
    conn_no: u64,
    tail: &str,
) -> Outcome {
    let chain = client::verified_chain(sent, &o.plan.cas);
    for i in 0..client::asked(chain.len(), o.plan.leaf_only) {
        let (Some(cert), Some(issuer)) = (
            CertFields::parse(chain[i].as_ref()),
            CertFields::parse(chain[i + 1].as_ref()),
        ) else {
            return Outcome::RequestFailed;
        };
        let named;
        let url = match &o.plan.responder {
            Some(r) => r,
            None => match responder_of(&cert) {
                Ok(r) => {
                    named = r;
                    &named
                }
                Err(e) => {
                    log.log(Level::Error, Some(conn_no), format_args!("{e}{tail}"));
                    return Outcome::RequestFailed;
                }
            },
        };
        let id = CertId::new(&cert, &issuer);
        let now = unix_now();
        let key = match &o.cache {
            None => None,
            Some(c) => match cache::key(&id) {
                None => return Outcome::RequestFailed,
                Some(k) => {
                    match c.lookup(&k, now) {
                        Some(CertStatus::Good) => continue,
                        Some(status) => return Outcome::of(status),
                        None => {}
                    }
                    Some(k)
                }
            },
        };
        let target = Target {
            host: &url.host,
            port: url.port,
            uri: &url.uri,
            addrs: &url.addrs,
            resolver: o.resolver.as_ref(),
            resolver_timeout: o.resolver_timeout,
            name: None,
        };
        let Some((peer, body)) = ocsp_ask::ask(&target, &id.request(), log).await else {
            return Outcome::RequestFailed;
        };
        let trust = Trust {
            chain: &chain,
            trusted: &o.plan.cas,
            verify: true,
            trust_other: false,
        };
        let now = unix_now();
        let v = match verify::check(&body, &id, &trust, now) {
            Ok(v) => v,
            Err(msg) => {
                log.log(
                    Level::Error,
                    None,
                    format_args!("{msg}{}", target.context(Some(peer))),
                );
                return Outcome::RequestFailed;
            }
        };
        if let (Some(c), Some(k)) = (&o.cache, key) {
            c.store(k, v.status, v.valid, now);
        }
        if v.status != CertStatus::Good {
            return Outcome::of(v.status);
        }
    }
    Outcome::Good
}

/// The responder `cert` names (`ngx_ssl_ocsp_responder`: the first OCSP
/// URL of its Authority Information Access, its host left to the
/// `resolver`), or what nginx logs when it names none that can be asked.
fn responder_of(cert: &CertFields<'_>) -> Result<ResponderUrl, String> {
    use crate::config::finish_ocsp::{parse, strip_http};
    let Some(url) = cert.ocsp_urls().into_iter().next() else {
        return Err("no OCSP responder URL in certificate".to_string());
    };
    let rest = strip_http(&url)
        .ok_or_else(|| format!("invalid URL prefix in OCSP responder \"{url}\" in certificate"))?;
    let r = parse(rest, false)
        .map_err(|e| format!("{e} in OCSP responder \"{rest}\" in certificate"))?;
    if r.host.is_empty() {
        return Err("empty host in OCSP responder in certificate".to_string());
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::pem::PemObject;

    fn fields_of(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/tls")
            .join(name);
        CertificateDer::from_pem_file(path)
            .unwrap()
            .as_ref()
            .to_vec()
    }

    #[test]
    fn a_certificate_names_its_responder_or_says_it_does_not() {
        let der = fields_of("ocsp-leaf.crt");
        let r = responder_of(&CertFields::parse(&der).unwrap()).unwrap();
        assert_eq!((r.host.as_str(), r.port), ("127.84.7.3", 19347));
        let der = fields_of("client.crt");
        assert_eq!(
            responder_of(&CertFields::parse(&der).unwrap()).unwrap_err(),
            "no OCSP responder URL in certificate"
        );
    }
}
