//! Certificate revocation lists (RFC 5280 §5) as OpenSSL reads them for
//! `ssl_crl` and `proxy_ssl_crl`: version 1 lists (what `openssl ca
//! -gencrl` writes without `crl_extensions`, and webpki refuses) as well
//! as version 2 ones. What is kept is what OpenSSL's CRL check looks at:
//! the issuer's name, the update times, the revoked serial numbers, and
//! the signature with what it covers.
//!
//! What this module must not do: read a file (the configuration loader
//! hands over the DER).

use super::der::{self, Reader};
use super::x509::{self, CertFields};

/// One CRL, owned (it lives as long as the configuration).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Crl {
    /// `tbsCertList`, as signed.
    tbs: Vec<u8>,
    /// `signatureAlgorithm`'s content.
    sig_alg: Vec<u8>,
    /// `signatureValue`'s bytes.
    signature: Vec<u8>,
    /// `issuer`, the whole Name item (compared with a certificate's
    /// issuer as `X509_NAME_cmp` does, byte for byte in DER).
    pub issuer: Vec<u8>,
    /// `thisUpdate`, seconds since the epoch.
    pub this_update: i64,
    /// `nextUpdate`, when given.
    pub next_update: Option<i64>,
    /// The revoked certificates' serial numbers (INTEGER contents).
    revoked: Vec<Vec<u8>>,
}

impl Crl {
    /// The CRL `der`; `None` when it is not one.
    pub fn parse(der: &[u8]) -> Option<Crl> {
        let list = der::single(der, der::SEQUENCE)?;
        let mut l = Reader::new(list.content);
        let tbs = l.read(der::SEQUENCE)?;
        let sig_alg = l.read(der::SEQUENCE)?.content;
        let signature = der::bit_string_bytes(&l.read(der::BIT_STRING)?)?;
        let mut t = Reader::new(tbs.content);
        // version: absent (v1) or 1 (v2).
        t.optional(der::INTEGER);
        t.read(der::SEQUENCE)?;
        let issuer = t.read(der::SEQUENCE)?.raw;
        let this_update = der::time(&t.any()?)?;
        let next_update = match t.peek_tag() {
            Some(der::UTC_TIME | der::GENERALIZED_TIME) => Some(der::time(&t.any()?)?),
            _ => None,
        };
        let mut revoked = Vec::new();
        if let Some(mut entries) = t.nested(der::SEQUENCE) {
            while let Some(mut entry) = entries.nested(der::SEQUENCE) {
                revoked.push(entry.read(der::INTEGER)?.content.to_vec());
            }
        }
        Some(Crl {
            tbs: tbs.raw.to_vec(),
            sig_alg: sig_alg.to_vec(),
            signature: signature.to_vec(),
            issuer: issuer.to_vec(),
            this_update,
            next_update,
            revoked,
        })
    }

    /// Whether `issuer`'s key signed it (`X509_CRL_verify`).
    pub fn signed_by(&self, issuer: &CertFields<'_>) -> bool {
        x509::verify_signature(issuer, &self.sig_alg, &self.tbs, &self.signature)
    }

    /// Whether it lists the certificate with serial number `serial` (an
    /// INTEGER's content).
    pub fn revokes(&self, serial: &[u8]) -> bool {
        self.revoked.iter().any(|s| s == serial)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, CertificateRevocationListDer};

    fn fixture(name: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/tls")
            .join(name)
    }

    #[test]
    fn a_version_1_list_is_read_and_its_issuer_signed_it() {
        let der = CertificateRevocationListDer::from_pem_file(fixture("v1/root.crl")).unwrap();
        // webpki refuses it: this reader is why such lists load at all.
        assert!(webpki::OwnedCertRevocationList::from_der(der.as_ref()).is_err());
        let crl = Crl::parse(der.as_ref()).unwrap();
        let root = CertificateDer::from_pem_file(fixture("v1/root.crt")).unwrap();
        let int = CertificateDer::from_pem_file(fixture("v1/int.crt")).unwrap();
        let (root, int) = (
            CertFields::parse(&root).unwrap(),
            CertFields::parse(&int).unwrap(),
        );
        assert_eq!(crl.issuer, root.subject);
        assert!(crl.signed_by(&root));
        assert!(!crl.signed_by(&int));
        let leaf = CertificateDer::from_pem_file(fixture("v1/leaf.crt")).unwrap();
        assert!(crl.revokes(CertFields::parse(&leaf).unwrap().serial));
        assert!(!crl.revokes(int.serial));
        assert!(!crl.revokes(root.serial));
        assert!(crl.next_update.is_some_and(|n| n > crl.this_update));
    }

    #[test]
    fn a_version_2_list_is_read_too() {
        let der = CertificateRevocationListDer::from_pem_file(fixture("ca.crl")).unwrap();
        let crl = Crl::parse(der.as_ref()).unwrap();
        let revoked = CertificateDer::from_pem_file(fixture("revoked.crt")).unwrap();
        assert!(crl.revokes(CertFields::parse(&revoked).unwrap().serial));
        assert!(Crl::parse(&der.as_ref()[1..]).is_none());
    }
}
