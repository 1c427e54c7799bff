//! The fields of an X.509 certificate (RFC 5280 §4.1) that nginx's
//! stapling reads through OpenSSL: names, serial, validity, key, the
//! Authority Information Access's OCSP responders, the extended key usage
//! and basic constraints; and signatures checked with the crypto
//! provider's algorithms, as `X509_verify` and `OCSP_BASICRESP_verify`
//! check them.

use rustls::pki_types::SignatureVerificationAlgorithm;

use super::der::{self, Reader, Tlv};

/// `id-pe-authorityInfoAccess` (1.3.6.1.5.5.7.1.1).
const OID_AIA: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x01, 0x01];
/// `id-ad-ocsp` (1.3.6.1.5.5.7.48.1).
const OID_AD_OCSP: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01];
/// `id-ce-extKeyUsage` (2.5.29.37).
const OID_EKU: &[u8] = &[0x55, 0x1d, 0x25];
/// `id-kp-OCSPSigning` (1.3.6.1.5.5.7.3.9).
pub const OID_KP_OCSP_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x09];
/// `id-ce-keyUsage` (2.5.29.15).
const OID_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x0f];
/// `id-ce-subjectAltName` (2.5.29.17).
const OID_SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];
/// A `GeneralName`'s `dNSName` (`[2] IA5String`).
const GENERAL_NAME_DNS: u8 = der::context_primitive(2);
/// `keyCertSign`, bit 5 of the key usage's first byte.
pub const KU_KEY_CERT_SIGN: u8 = 0x04;
/// `cRLSign`, bit 6 of the key usage's first byte.
pub const KU_CRL_SIGN: u8 = 0x02;
/// `id-ce-basicConstraints` (2.5.29.19).
const OID_BASIC_CONSTRAINTS: &[u8] = &[0x55, 0x1d, 0x13];
/// `sha1WithRSAEncryption` (1.2.840.113549.1.1.5): not among rustls's
/// algorithms, still used by OCSP responders, and accepted by OpenSSL.
const OID_SHA1_WITH_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x05];
/// `rsaEncryption` (1.2.840.113549.1.1.1).
const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
/// An AlgorithmIdentifier's absent parameters, as RSA's are written.
const NULL_PARAMS: &[u8] = &[der::NULL, 0x00];
/// A `GeneralName`'s `uniformResourceIdentifier` (`[6] IA5String`).
const GENERAL_NAME_URI: u8 = der::context_primitive(6);

/// A certificate's fields, borrowed from its DER.
#[derive(Clone, Debug)]
pub struct CertFields<'a> {
    /// The whole certificate.
    pub der: &'a [u8],
    /// `version` as written: 0 for v1 (the field absent), 2 for v3.
    pub version: u8,
    /// `tbsCertificate`, as signed.
    pub tbs: &'a [u8],
    /// `signatureAlgorithm`'s content (the AlgorithmIdentifier without its
    /// SEQUENCE header, as rustls names algorithms).
    pub sig_alg: &'a [u8],
    /// `signatureValue`'s bytes.
    pub signature: &'a [u8],
    /// `serialNumber`'s content bytes.
    pub serial: &'a [u8],
    /// `issuer`, the whole Name item.
    pub issuer: &'a [u8],
    /// `subject`, the whole Name item.
    pub subject: &'a [u8],
    /// `notBefore`, seconds since the epoch.
    pub not_before: i64,
    /// `notAfter`, seconds since the epoch.
    pub not_after: i64,
    /// `subjectPublicKeyInfo`, the whole item (what a signing key's
    /// public half is compared with).
    pub spki: &'a [u8],
    /// `subjectPublicKeyInfo`'s algorithm (its content).
    pub key_alg: &'a [u8],
    /// `subjectPublicKey`'s bytes (what a key hash is made of).
    pub public_key: &'a [u8],
    /// The extensions' items (empty without any).
    extensions: &'a [u8],
}

impl<'a> CertFields<'a> {
    /// The fields of the certificate `der`; `None` when it is not one.
    pub fn parse(der: &'a [u8]) -> Option<CertFields<'a>> {
        let cert = der::single(der, der::SEQUENCE)?;
        let mut c = Reader::new(cert.content);
        let tbs = c.read(der::SEQUENCE)?;
        let sig_alg = c.read(der::SEQUENCE)?.content;
        let signature = der::bit_string_bytes(&c.read(der::BIT_STRING)?)?;
        let mut t = Reader::new(tbs.content);
        let version = match t.optional(der::context(0)) {
            Some(v) => *der::single(v.content, der::INTEGER)?.content.last()?,
            None => 0,
        };
        let serial = t.read(der::INTEGER)?.content;
        t.read(der::SEQUENCE)?;
        let issuer = t.read(der::SEQUENCE)?.raw;
        let mut validity = t.nested(der::SEQUENCE)?;
        let not_before = der::time(&validity.any()?)?;
        let not_after = der::time(&validity.any()?)?;
        let subject = t.read(der::SEQUENCE)?.raw;
        let spki_item = t.read(der::SEQUENCE)?;
        let mut spki = Reader::new(spki_item.content);
        let key_alg = spki.read(der::SEQUENCE)?.content;
        let public_key = der::bit_string_bytes(&spki.read(der::BIT_STRING)?)?;
        t.optional(der::context_primitive(1));
        t.optional(der::context_primitive(2));
        let extensions = match t.optional(der::context(3)) {
            Some(e) => der::single(e.content, der::SEQUENCE)?.content,
            None => &[],
        };
        Some(CertFields {
            der,
            version,
            tbs: tbs.raw,
            sig_alg,
            signature,
            serial,
            issuer,
            subject,
            not_before,
            not_after,
            spki: spki_item.raw,
            key_alg,
            public_key,
            extensions,
        })
    }

    /// The value (the OCTET STRING's content) of the extension `oid`.
    pub fn extension(&self, oid: &[u8]) -> Option<&'a [u8]> {
        let mut r = Reader::new(self.extensions);
        while let Some(ext) = r.read(der::SEQUENCE) {
            let mut e = Reader::new(ext.content);
            if e.read(der::OID)?.content != oid {
                continue;
            }
            e.optional(der::BOOLEAN);
            return Some(e.read(der::OCTET_STRING)?.content);
        }
        None
    }

    /// The OCSP responders its Authority Information Access names, in
    /// order (OpenSSL's `X509_get1_ocsp`: URIs only).
    pub fn ocsp_urls(&self) -> Vec<String> {
        let mut out = Vec::new();
        let Some(aia) = self.extension(OID_AIA) else {
            return out;
        };
        let Some(mut list) = der::single(aia, der::SEQUENCE).map(|t| Reader::new(t.content)) else {
            return out;
        };
        while let Some(desc) = list.read(der::SEQUENCE) {
            let mut d = Reader::new(desc.content);
            let method = d.read(der::OID);
            let location = d.any();
            if let (
                Some(m),
                Some(Tlv {
                    tag: GENERAL_NAME_URI,
                    content,
                    ..
                }),
            ) = (method, location)
            {
                if m.content == OID_AD_OCSP {
                    out.push(String::from_utf8_lossy(content).into_owned());
                }
            }
        }
        out
    }

    /// Whether the extended key usage names `oid` (OpenSSL's
    /// `X509_get_extended_key_usage`: false without the extension).
    pub fn has_eku(&self, oid: &[u8]) -> bool {
        let Some(eku) = self.extension(OID_EKU) else {
            return false;
        };
        let Some(mut r) = der::single(eku, der::SEQUENCE).map(|t| Reader::new(t.content)) else {
            return false;
        };
        while let Some(id) = r.read(der::OID) {
            if id.content == oid {
                return true;
            }
        }
        false
    }

    /// Whether the extended key usage allows `oid` (OpenSSL's
    /// `xku_reject` passes): true without the extension, or when it names
    /// `oid` or any usage.
    pub fn eku_allows(&self, oid: &[u8]) -> bool {
        /// `anyExtendedKeyUsage` (2.5.29.37.0).
        const ANY: &[u8] = &[0x55, 0x1d, 0x25, 0x00];
        self.extension(OID_EKU).is_none() || self.has_eku(oid) || self.has_eku(ANY)
    }

    /// What basic constraints say of being a CA: `Some(true)` for `cA`,
    /// `Some(false)` for an end entity, `None` without the extension.
    pub fn is_ca(&self) -> Option<bool> {
        let bc = self.extension(OID_BASIC_CONSTRAINTS)?;
        let mut r = Reader::new(der::single(bc, der::SEQUENCE)?.content);
        Some(
            r.optional(der::BOOLEAN)
                .is_some_and(|b| b.content.first().is_some_and(|&v| v != 0)),
        )
    }

    /// The first byte of the key usage's bits (`keyCertSign`,
    /// `cRLSign`, ...); `None` without the extension.
    pub fn key_usage(&self) -> Option<u8> {
        let bits = der::single(self.extension(OID_KEY_USAGE)?, der::BIT_STRING)?;
        Some(bits.content.get(1).copied().unwrap_or(0))
    }

    /// The DNS names of its subject alternative names.
    pub fn dns_names(&self) -> Vec<&'a [u8]> {
        let mut out = Vec::new();
        let Some(san) = self.extension(OID_SUBJECT_ALT_NAME) else {
            return out;
        };
        let Some(mut names) = der::single(san, der::SEQUENCE).map(|t| Reader::new(t.content))
        else {
            return out;
        };
        while let Some(name) = names.any() {
            if name.tag == GENERAL_NAME_DNS {
                out.push(name.content);
            }
        }
        out
    }

    /// Whether OpenSSL takes it as self-signed (`EXFLAG_SS`): its own
    /// issuer, and allowed to sign certificates when its key usage says.
    pub fn self_signed(&self) -> bool {
        self.self_issued() && self.key_usage().is_none_or(|ku| ku & KU_KEY_CERT_SIGN != 0)
    }

    /// Whether its subject is its issuer.
    pub fn self_issued(&self) -> bool {
        self.subject == self.issuer
    }

    /// Whether `issuer` issued it: the names match and `issuer`'s key
    /// verifies its signature.
    pub fn issued_by(&self, issuer: &CertFields<'_>) -> bool {
        self.issuer == issuer.subject && self.signed_by(issuer)
    }

    /// Whether `signer`'s key verifies its signature.
    pub fn signed_by(&self, signer: &CertFields<'_>) -> bool {
        verify_signature(signer, self.sig_alg, self.tbs, self.signature)
    }
}

/// Whether `signer`'s key made `signature` over `message` with the
/// algorithm `sig_alg` (an AlgorithmIdentifier's content): the provider's
/// algorithms for that key and signature algorithm, and RSA with SHA-1.
pub fn verify_signature(
    signer: &CertFields<'_>,
    sig_alg: &[u8],
    message: &[u8],
    signature: &[u8],
) -> bool {
    let sig_oid = Reader::new(sig_alg).read(der::OID).map(|o| o.content);
    if sig_oid == Some(OID_SHA1_WITH_RSA) {
        let is_rsa = Reader::new(signer.key_alg)
            .read(der::OID)
            .map(|o| o.content)
            == Some(OID_RSA);
        return is_rsa
            && aws_lc_rs::signature::UnparsedPublicKey::new(
                &aws_lc_rs::signature::RSA_PKCS1_1024_8192_SHA1_FOR_LEGACY_USE_ONLY,
                signer.public_key,
            )
            .verify(message, signature)
            .is_ok();
    }
    algorithms().iter().any(|alg| {
        bare(alg.public_key_alg_id().as_ref()) == bare(signer.key_alg)
            && bare(alg.signature_alg_id().as_ref()) == bare(sig_alg)
            && alg
                .verify_signature(signer.public_key, message, signature)
                .is_ok()
    })
}

/// An AlgorithmIdentifier's content without NULL parameters: absent and
/// NULL parameters mean the same (RFC 4055 §2.1).
fn bare(alg: &[u8]) -> &[u8] {
    alg.strip_suffix(NULL_PARAMS).unwrap_or(alg)
}

/// The provider's signature verification algorithms.
fn algorithms() -> &'static [&'static dyn SignatureVerificationAlgorithm] {
    super::provider().signature_verification_algorithms.all
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;

    fn fixture(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/tls")
            .join(name);
        CertificateDer::from_pem_file(&path)
            .expect("a fixture")
            .as_ref()
            .to_vec()
    }

    #[test]
    fn a_leaf_names_its_ocsp_responder_and_its_issuer_signed_it() {
        let (leaf, ca, rsa) = (
            fixture("ocsp-leaf.crt"),
            fixture("ca.crt"),
            fixture("localhost-rsa.crt"),
        );
        let (leaf, ca, rsa) = (
            CertFields::parse(&leaf).unwrap(),
            CertFields::parse(&ca).unwrap(),
            CertFields::parse(&rsa).unwrap(),
        );
        assert_eq!(leaf.ocsp_urls(), ["http://127.84.7.3:19347/"]);
        assert!(rsa.ocsp_urls().is_empty());
        assert!(leaf.issued_by(&ca));
        assert!(rsa.issued_by(&ca));
        assert!(ca.issued_by(&ca));
        assert!(!ca.issued_by(&leaf));
        assert_eq!(ca.is_ca(), Some(true));
        assert_eq!(leaf.is_ca(), Some(false));
        assert!(leaf.not_before < leaf.not_after);
    }

    #[test]
    fn a_delegated_responder_has_the_ocsp_signing_usage() {
        let r = fixture("ocsp-responder.crt");
        let r = CertFields::parse(&r).unwrap();
        assert!(r.has_eku(OID_KP_OCSP_SIGNING));
        let leaf = fixture("ocsp-leaf.crt");
        assert!(
            !CertFields::parse(&leaf)
                .unwrap()
                .has_eku(OID_KP_OCSP_SIGNING)
        );
    }

    #[test]
    fn an_rsa_ca_verifies_its_own_signature() {
        let rogue = fixture("rogue-ca.crt");
        let rogue = CertFields::parse(&rogue).unwrap();
        assert!(rogue.issued_by(&rogue));
        assert!(rogue.self_issued());
    }
}
