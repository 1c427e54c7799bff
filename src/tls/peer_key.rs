//! The handshake's signatures checked with the key of the peer's
//! certificate, whatever the certificate's version. rustls's checks parse
//! the certificate with webpki, which refuses X.509 version 1 (what
//! `openssl req -x509` makes without extensions, and OpenSSL accepts): for
//! such a certificate the key is taken from its subjectPublicKeyInfo and
//! the signature checked with the same algorithms.
//!
//! What this module must not do: judge the certificate itself (that is
//! `verify`'s and `client_verify`'s, after the handshake).

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, SubjectPublicKeyInfoDer};
use rustls::{CertificateError, DigitallySignedStruct, Error};

use super::x509::CertFields;

/// Whether webpki cannot read `cert` and its key is taken from its fields
/// instead: a certificate that is not version 3.
fn by_fields<'a>(cert: &'a CertificateDer<'_>) -> Option<CertFields<'a>> {
    CertFields::parse(cert).filter(|f| f.version != 2)
}

/// A TLS 1.2 handshake signature (`ServerKeyExchange`,
/// `CertificateVerify`) made with `cert`'s key.
pub fn verify_tls12(
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
    algs: &WebPkiSupportedAlgorithms,
) -> Result<HandshakeSignatureValid, Error> {
    let Some(fields) = by_fields(cert) else {
        return rustls::crypto::verify_tls12_signature(message, cert, dss, algs);
    };
    let spki = SubjectPublicKeyInfoDer::from(fields.spki);
    let key = webpki::RawPublicKeyEntity::try_from(&spki)
        .map_err(|_| Error::InvalidCertificate(CertificateError::BadEncoding))?;
    let candidates = algs
        .mapping
        .iter()
        .find(|(scheme, _)| *scheme == dss.scheme)
        .map(|(_, algs)| *algs)
        .ok_or(Error::PeerMisbehaved(
            rustls::PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme,
        ))?;
    candidates
        .iter()
        .find(|alg| {
            key.verify_signature(**alg, message, dss.signature())
                .is_ok()
        })
        .map(|_| HandshakeSignatureValid::assertion())
        .ok_or(Error::InvalidCertificate(CertificateError::BadSignature))
}

/// A TLS 1.3 `CertificateVerify` signature made with `cert`'s key.
pub fn verify_tls13(
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
    algs: &WebPkiSupportedAlgorithms,
) -> Result<HandshakeSignatureValid, Error> {
    let Some(fields) = by_fields(cert) else {
        return rustls::crypto::verify_tls13_signature(message, cert, dss, algs);
    };
    let spki = SubjectPublicKeyInfoDer::from(fields.spki);
    rustls::crypto::verify_tls13_signature_with_raw_key(message, &spki, dss, algs)
}

/// Whether the certificate can be read at all: by webpki, or, for a
/// version 1 certificate, by its fields.
pub fn readable(cert: &CertificateDer<'_>) -> bool {
    by_fields(cert).is_some() || webpki::EndEntityCert::try_from(cert).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::SignatureScheme;
    use rustls::pki_types::PrivateKeyDer;
    use rustls::pki_types::pem::PemObject;

    fn fixture(name: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/tls")
            .join(name)
    }

    /// A signature by the version 1 certificate's key, as a peer makes it.
    fn signed(message: &[u8], scheme: SignatureScheme) -> DigitallySignedStruct {
        let key = PrivateKeyDer::from_pem_file(fixture("v1/self.key")).unwrap();
        let key = crate::tls::provider()
            .key_provider
            .load_private_key(key)
            .unwrap();
        let signer = key.choose_scheme(&[scheme]).unwrap();
        let sig = signer.sign(message).unwrap();
        // DigitallySignedStruct has no public constructor: read one as it
        // comes in a handshake (scheme, length, signature).
        let mut wire = u16::from(scheme).to_be_bytes().to_vec();
        wire.extend_from_slice(&(sig.len() as u16).to_be_bytes());
        wire.extend_from_slice(&sig);
        use rustls::internal::msgs::codec::{Codec, Reader};
        DigitallySignedStruct::read(&mut Reader::init(&wire)).unwrap()
    }

    #[test]
    fn a_version_1_certificate_s_key_checks_handshake_signatures() {
        let cert = CertificateDer::from_pem_file(fixture("v1/self.crt")).unwrap();
        assert!(webpki::EndEntityCert::try_from(&cert).is_err());
        assert!(readable(&cert));
        let algs = crate::tls::provider().signature_verification_algorithms;
        let msg = b"handshake transcript";
        let dss = signed(msg, SignatureScheme::RSA_PSS_SHA256);
        assert!(verify_tls13(msg, &cert, &dss, &algs).is_ok());
        assert!(verify_tls12(msg, &cert, &dss, &algs).is_ok());
        assert!(verify_tls13(b"another transcript", &cert, &dss, &algs).is_err());
        let dss = signed(msg, SignatureScheme::RSA_PKCS1_SHA256);
        assert!(verify_tls12(msg, &cert, &dss, &algs).is_ok());
        assert!(verify_tls12(b"another", &cert, &dss, &algs).is_err());
    }
}
