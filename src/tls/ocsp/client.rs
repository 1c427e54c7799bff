//! OCSP for client certificates (`ssl_ocsp`), the parts that do no I/O:
//! the verified chain the certificates asked about come from (OpenSSL's
//! `SSL_get0_verified_chain`), which of them are asked about
//! (`ngx_ssl_ocsp_validate_next`), and the outcome as
//! `ngx_ssl_ocsp_get_status` says it to `$ssl_client_verify` and the log.
//! The asking is the server's (`server::engine::tls::client_ocsp`).

use rustls::pki_types::CertificateDer;

use super::response::CertStatus;
use crate::tls::x509::CertFields;

/// The longest chain followed from a client's certificate to its root
/// (OpenSSL's default verify depth, 100, is far beyond what nginx's
/// `ssl_verify_depth` lets through).
const MAX_CHAIN: usize = 100;

/// What the OCSP check of a verified client certificate found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every certificate asked about is good.
    Good,
    /// A responder could not be asked, or its answer did not pass.
    RequestFailed,
    /// A certificate is revoked.
    Revoked,
    /// A responder does not know a certificate.
    Unknown,
}

impl Outcome {
    /// The outcome of a status.
    pub fn of(status: CertStatus) -> Outcome {
        match status {
            CertStatus::Good => Outcome::Good,
            CertStatus::Revoked => Outcome::Revoked,
            CertStatus::Unknown => Outcome::Unknown,
        }
    }

    /// `ngx_ssl_ocsp_get_status`'s words when the certificate is refused.
    pub fn failure(self) -> Option<&'static str> {
        match self {
            Outcome::Good => None,
            Outcome::RequestFailed => Some("certificate status request failed"),
            Outcome::Revoked => Some("certificate revoked"),
            Outcome::Unknown => Some("certificate status unknown"),
        }
    }
}

/// The chain a verified client certificate was verified by: its own
/// first, each next its issuer (sought among the trusted `cas` first, as
/// OpenSSL's `X509_V_FLAG_TRUSTED_FIRST`, then among those the client
/// sent), up to a self-issued root.
pub fn verified_chain(
    sent: &[CertificateDer<'_>],
    cas: &[CertificateDer<'static>],
) -> Vec<CertificateDer<'static>> {
    let Some(leaf) = sent.first() else {
        return Vec::new();
    };
    let pool: Vec<(&CertificateDer<'_>, CertFields<'_>)> = cas
        .iter()
        .chain(sent.iter().skip(1))
        .filter_map(|c| Some((c, CertFields::parse(c.as_ref())?)))
        .collect();
    let mut chain = vec![leaf.clone().into_owned()];
    let Some(mut top) = CertFields::parse(leaf.as_ref()) else {
        return chain;
    };
    while !top.self_issued() && chain.len() < MAX_CHAIN {
        let next = pool
            .iter()
            .find(|(der, f)| top.issued_by(f) && !chain.iter().any(|c| c == *der));
        let Some((der, f)) = next else {
            break;
        };
        chain.push((*der).clone().into_owned());
        top = f.clone();
    }
    chain
}

/// How many of a chain of `len` certificates are asked about, from the
/// client's own: all but the root, or the client's alone under `ssl_ocsp
/// leaf` (none for a self-signed certificate).
pub fn asked(len: usize, leaf_only: bool) -> usize {
    let all = len.saturating_sub(1);
    if leaf_only { all.min(1) } else { all }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::pem::PemObject;

    fn certs(name: &str) -> Vec<CertificateDer<'static>> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/tls")
            .join(name);
        CertificateDer::pem_file_iter(&path)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn the_chain_runs_from_the_client_to_a_trusted_root() {
        let ca = certs("ca.crt");
        let sent = certs("client-int-chain.crt");
        let chain = verified_chain(&sent, &ca);
        assert_eq!(chain.len(), sent.len() + 1, "the root from the CAs");
        assert_eq!(chain[..sent.len()], sent[..]);
        assert_eq!(chain.last(), ca.first());
        let lone = verified_chain(&certs("client.crt"), &ca);
        assert_eq!(lone.len(), 2);
        let root = verified_chain(&certs("client-self.crt"), &[]);
        assert_eq!(root.len(), 1);
    }

    #[test]
    fn every_certificate_but_the_root_or_the_leaf_alone_is_asked_about() {
        assert_eq!(asked(3, false), 2);
        assert_eq!(asked(3, true), 1);
        assert_eq!(asked(1, false), 0);
        assert_eq!(asked(1, true), 0);
        assert_eq!(asked(0, true), 0);
    }

    #[test]
    fn outcomes_are_said_as_nginx() {
        assert_eq!(Outcome::Good.failure(), None);
        assert_eq!(
            Outcome::of(CertStatus::Revoked).failure(),
            Some("certificate revoked")
        );
        assert_eq!(
            Outcome::of(CertStatus::Unknown).failure(),
            Some("certificate status unknown")
        );
        assert_eq!(
            Outcome::RequestFailed.failure(),
            Some("certificate status request failed")
        );
    }
}
