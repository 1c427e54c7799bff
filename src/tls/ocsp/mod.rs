//! OCSP (RFC 6960) for stapling, as nginx's `ngx_event_openssl_stapling.c`
//! uses OpenSSL's: the request for one certificate, the response read and
//! checked as `OCSP_basic_verify`, `OCSP_resp_find_status` and
//! `OCSP_check_validity` check it, and the slot a staple lives in.
//!
//! - [`CertId`]: which certificate a request asks about (SHA-1 of the
//!   issuer's name and key, and the serial), and the DER `OCSPRequest`.
//! - [`response`]: an `OCSPResponse` read (what `d2i_OCSP_RESPONSE` and
//!   `OCSP_response_get1_basic` decode).
//! - [`verify`]: the checks, with OpenSSL's words for their failures.
//! - [`staple`]: a certificate's current staple and when to ask again,
//!   shared by the handshakes and the fetch that updates it.
//! - [`client`]: client certificates' OCSP (`ssl_ocsp`): the chain asked
//!   about and the outcome; [`cache`]: their statuses (`ssl_ocsp_cache`).
//!
//! What this module must not do: any I/O. The responder is asked over
//! HTTP by the server (`server::engine::tls::stapling`, `server::engine::tls::client_ocsp`).

pub mod cache;
pub mod client;
pub mod response;
pub mod staple;
pub mod verify;

use sha1::{Digest, Sha1};

use super::der;
use super::x509::CertFields;

/// `id-sha1` (1.3.14.3.2.26), the hash of the CertIDs nginx asks with
/// (`OCSP_cert_to_id` with no digest).
pub const OID_SHA1: &[u8] = &[0x2b, 0x0e, 0x03, 0x02, 0x1a];

/// Which certificate a request is about (RFC 6960 §4.1.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertId {
    /// SHA-1 of the issuer's subject name (its DER).
    pub name_hash: [u8; 20],
    /// SHA-1 of the issuer's public key (the `subjectPublicKey` bits).
    pub key_hash: [u8; 20],
    /// The certificate's serial number (the INTEGER's content).
    pub serial: Vec<u8>,
}

impl CertId {
    /// The id of `cert`, issued by `issuer` (`OCSP_cert_to_id`).
    pub fn new(cert: &CertFields<'_>, issuer: &CertFields<'_>) -> CertId {
        CertId {
            name_hash: sha1(issuer.subject),
            key_hash: sha1(issuer.public_key),
            serial: cert.serial.to_vec(),
        }
    }

    /// The CertID's DER.
    pub fn der(&self) -> Vec<u8> {
        let alg = der::item(
            der::SEQUENCE,
            &[der::item(der::OID, OID_SHA1), der::item(der::NULL, &[])].concat(),
        );
        der::item(
            der::SEQUENCE,
            &[
                alg,
                der::item(der::OCTET_STRING, &self.name_hash),
                der::item(der::OCTET_STRING, &self.key_hash),
                der::item(der::INTEGER, &self.serial),
            ]
            .concat(),
        )
    }

    /// The `OCSPRequest` asking about this certificate alone, unsigned and
    /// without a nonce, as nginx sends it.
    pub fn request(&self) -> Vec<u8> {
        let request = der::item(der::SEQUENCE, &self.der());
        let list = der::item(der::SEQUENCE, &request);
        let tbs = der::item(der::SEQUENCE, &list);
        der::item(der::SEQUENCE, &tbs)
    }
}

/// SHA-1 of `bytes`.
pub fn sha1(bytes: &[u8]) -> [u8; 20] {
    Sha1::digest(bytes).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;

    #[test]
    fn the_request_is_the_one_openssl_makes() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls");
        let leaf = CertificateDer::from_pem_file(dir.join("ocsp-leaf.crt")).unwrap();
        let ca = CertificateDer::from_pem_file(dir.join("ca.crt")).unwrap();
        let id = CertId::new(
            &CertFields::parse(leaf.as_ref()).unwrap(),
            &CertFields::parse(ca.as_ref()).unwrap(),
        );
        // `openssl ocsp -issuer ca.crt -cert ocsp-leaf.crt -no_nonce
        // -reqout`, byte for byte.
        assert_eq!(
            id.request(),
            std::fs::read(dir.join("ocsp-leaf.req")).unwrap()
        );
        let resp = std::fs::read(dir.join("ocsp-leaf.der")).unwrap();
        let r = response::parse(&resp).unwrap();
        let basic = r.basic().unwrap();
        assert!(basic.responses.iter().any(|s| s.is(&id)));
    }
}
