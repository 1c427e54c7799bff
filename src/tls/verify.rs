//! An upstream's certificate checked as nginx checks it once the handshake
//! is over, with `proxy_ssl_verify on` (`ngx_http_upstream_ssl_handshake`):
//! first the chain against `proxy_ssl_trusted_certificate` (and the
//! revocation lists of `proxy_ssl_crl`, for every certificate of the chain
//! as OpenSSL's `X509_V_FLAG_CRL_CHECK_ALL`), with no more intermediate
//! certificates than `proxy_ssl_verify_depth`; a failure is OpenSSL's
//! verify result, code and text (`SSL_get_verify_result`,
//! `X509_verify_cert_error_string`), which nginx logs once its callback
//! has let verification run to the end: an intermediate certificate too
//! many is, as OpenSSL stops building the chain there, "unable to get
//! local issuer certificate"; a chain that ends in a trusted certificate
//! that is not self-signed is "unable to get issuer certificate" (OpenSSL
//! wants a root, without `X509_V_FLAG_PARTIAL_CHAIN`). Then the name, as `X509_check_host`
//! compares it: the certificate's DNS names, or its common name when it
//! has none; an address is a name like any other (OpenSSL does not look at
//! the certificate's IP addresses for it).
//!
//! The chain is webpki's to verify; what is nowait's is which OpenSSL code
//! a webpki error is, and the name comparison.
//!
//! What this module must not do: read a file (the configuration loader
//! hands over the bytes) or wait.

use std::path::Path;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, CertificateRevocationListDer, TrustAnchor, UnixTime};
use webpki::{
    CertRevocationList, EndEntityCert, ExpirationPolicy, KeyUsage, OwnedCertRevocationList,
    RevocationCheckDepth, RevocationOptionsBuilder, UnknownStatusPolicy,
};

use super::crl::Crl;
use super::der::{self, Reader};
use super::openssl_verify::{Purpose, Store};
use super::x509::CertFields;

/// What verifies an upstream's chain (nginx's `SSL_CTX` store with the
/// trusted certificates, the CRLs and the depth).
#[derive(Debug)]
pub struct Verifier {
    /// `proxy_ssl_trusted_certificate`'s certificates.
    anchors: Vec<TrustAnchor<'static>>,
    /// Whether each of `anchors` is self-signed (a root, where OpenSSL's
    /// chains must end).
    roots: Vec<bool>,
    /// `proxy_ssl_crl`'s lists (none: revocation is not checked).
    crls: Vec<CertRevocationList<'static>>,
    /// `proxy_ssl_verify_depth`: the most intermediate certificates.
    depth: u64,
    /// The signature algorithms the chain may use.
    algs: &'static [&'static dyn rustls::pki_types::SignatureVerificationAlgorithm],
    /// The same store for what webpki cannot judge (version 1
    /// certificates and CRLs, a CA's certificate as the server's own).
    openssl: Store,
    /// Whether webpki read every trusted certificate as version 3 and
    /// every CRL (else every chain is `openssl`'s).
    webpki_reads_all: bool,
}

/// A verify result other than `X509_V_OK`: OpenSSL's code and text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// `X509_V_ERR_*`.
    pub code: u32,
    /// `X509_verify_cert_error_string(code)` (OpenSSL 3.0's words).
    pub text: &'static str,
}

impl std::fmt::Display for VerifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.code, self.text)
    }
}

/// OpenSSL's verify results nowait reports, by code.
mod x509 {
    use super::VerifyError;
    const fn e(code: u32, text: &'static str) -> VerifyError {
        VerifyError { code, text }
    }
    pub const UNSPECIFIED: VerifyError = e(1, "unspecified certificate verification error");
    pub const UNABLE_TO_GET_ISSUER_CERT: VerifyError = e(2, "unable to get issuer certificate");
    pub const UNABLE_TO_GET_CRL: VerifyError = e(3, "unable to get certificate CRL");
    pub const CERT_SIGNATURE_FAILURE: VerifyError = e(7, "certificate signature failure");
    pub const CRL_SIGNATURE_FAILURE: VerifyError = e(8, "CRL signature failure");
    pub const CERT_NOT_YET_VALID: VerifyError = e(9, "certificate is not yet valid");
    pub const CERT_HAS_EXPIRED: VerifyError = e(10, "certificate has expired");
    pub const CRL_HAS_EXPIRED: VerifyError = e(12, "CRL has expired");
    pub const DEPTH_ZERO_SELF_SIGNED_CERT: VerifyError = e(18, "self-signed certificate");
    pub const SELF_SIGNED_CERT_IN_CHAIN: VerifyError =
        e(19, "self-signed certificate in certificate chain");
    pub const UNABLE_TO_GET_ISSUER_CERT_LOCALLY: VerifyError =
        e(20, "unable to get local issuer certificate");
    pub const UNABLE_TO_VERIFY_LEAF_SIGNATURE: VerifyError =
        e(21, "unable to verify the first certificate");
    pub const CERT_CHAIN_TOO_LONG: VerifyError = e(22, "certificate chain too long");
    pub const CERT_REVOKED: VerifyError = e(23, "certificate revoked");
    pub const INVALID_CA: VerifyError = e(24, "invalid CA certificate");
    pub const PATH_LENGTH_EXCEEDED: VerifyError = e(25, "path length constraint exceeded");
    pub const INVALID_PURPOSE: VerifyError = e(26, "unsupported certificate purpose");
    pub const PERMITTED_VIOLATION: VerifyError = e(47, "permitted subtree violation");
    pub const CRL_NOT_YET_VALID: VerifyError = e(11, "CRL is not yet valid");
    pub const UNABLE_TO_GET_CRL_ISSUER: VerifyError = e(33, "unable to get CRL issuer certificate");
    pub const KEYUSAGE_NO_CRL_SIGN: VerifyError = e(35, "key usage does not include CRL signing");

    /// The result with OpenSSL's `code`.
    pub fn by_code(code: u32) -> VerifyError {
        [
            UNABLE_TO_GET_ISSUER_CERT,
            UNABLE_TO_GET_CRL,
            CERT_SIGNATURE_FAILURE,
            CRL_SIGNATURE_FAILURE,
            CERT_NOT_YET_VALID,
            CERT_HAS_EXPIRED,
            CRL_NOT_YET_VALID,
            CRL_HAS_EXPIRED,
            DEPTH_ZERO_SELF_SIGNED_CERT,
            SELF_SIGNED_CERT_IN_CHAIN,
            UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
            UNABLE_TO_VERIFY_LEAF_SIGNATURE,
            CERT_CHAIN_TOO_LONG,
            CERT_REVOKED,
            INVALID_CA,
            PATH_LENGTH_EXCEEDED,
            INVALID_PURPOSE,
            UNABLE_TO_GET_CRL_ISSUER,
            KEYUSAGE_NO_CRL_SIGN,
            PERMITTED_VIOLATION,
        ]
        .into_iter()
        .find(|e| e.code == code)
        .unwrap_or(UNSPECIFIED)
    }
}

impl Verifier {
    /// A verifier trusting the certificates of `ca_pem` (read from
    /// `ca_path`), checking revocation against the CRLs of `crl`, if any,
    /// and allowing `depth` intermediate certificates. Errors are nginx's
    /// (`SSL_CTX_load_verify_locations("…") failed …`).
    pub fn new(
        provider: &rustls::crypto::CryptoProvider,
        ca_pem: &[u8],
        ca_path: &Path,
        crl: Option<(&[u8], &Path)>,
        depth: u64,
    ) -> Result<Verifier, String> {
        let load_failed = |why: &str| {
            format!(
                "SSL_CTX_load_verify_locations(\"{}\") failed (SSL: {why})",
                ca_path.display()
            )
        };
        let mut anchors = Vec::new();
        let mut roots = Vec::new();
        let mut trusted = Vec::new();
        let mut webpki_reads_all = true;
        for item in CertificateDer::pem_slice_iter(ca_pem) {
            let der = item.map_err(|e| load_failed(&format!("PEM lib: {e}")))?;
            let version = CertFields::parse(&der).map(|f| f.version);
            match webpki::anchor_from_trusted_cert(&der) {
                Ok(anchor) if version == Some(2) => {
                    roots.push(self_signed(&der));
                    anchors.push(anchor.to_owned());
                }
                Err(e) if version.is_none() => {
                    return Err(load_failed(&format!("bad certificate: {e}")));
                }
                _ => webpki_reads_all = false,
            }
            trusted.push(der.to_vec());
        }
        if trusted.is_empty() {
            return Err(load_failed("no certificate or crl found"));
        }
        let mut crls = Vec::new();
        let mut own_crls = Vec::new();
        if let Some((pem, path)) = crl {
            let failed = |why: String| {
                format!(
                    "X509_LOOKUP_load_file(\"{}\") failed (SSL: {why})",
                    path.display()
                )
            };
            for item in CertificateRevocationListDer::pem_slice_iter(pem) {
                let der = item.map_err(|e| failed(format!("PEM lib: {e}")))?;
                let own = Crl::parse(der.as_ref())
                    .ok_or_else(|| failed("bad CRL: not a certificate list".to_string()))?;
                match OwnedCertRevocationList::from_der(der.as_ref()) {
                    Ok(owned) => crls.push(CertRevocationList::Owned(owned)),
                    Err(_) => webpki_reads_all = false,
                }
                own_crls.push(own);
            }
            if own_crls.is_empty() {
                return Err(failed("no certificate or crl found".to_string()));
            }
        }
        Ok(Verifier {
            anchors,
            roots,
            crls,
            depth,
            algs: provider.signature_verification_algorithms.all,
            openssl: Store {
                trusted,
                crls: crl.map(|_| own_crls),
                depth,
                purpose: Purpose::SslServer,
            },
            webpki_reads_all,
        })
    }

    /// Verifies the chain an upstream sent (its own certificate first) at
    /// `now`: `Ok`, or what `SSL_get_verify_result` would say.
    pub fn verify(&self, chain: &[CertificateDer<'_>], now: UnixTime) -> Result<(), VerifyError> {
        let Some(leaf) = chain.first() else {
            return Err(x509::UNSPECIFIED);
        };
        let version_3 =
            |c: &CertificateDer<'_>| CertFields::parse(c).is_some_and(|f| f.version == 2);
        if !self.webpki_reads_all || !chain.iter().all(version_3) {
            return self.by_openssl(chain, now);
        }
        let ee = EndEntityCert::try_from(leaf).map_err(|_| x509::UNSPECIFIED)?;
        let crl_refs: Vec<&CertRevocationList<'_>> = self.crls.iter().collect();
        let revocation = RevocationOptionsBuilder::new(&crl_refs).ok().map(|b| {
            b.with_depth(RevocationCheckDepth::Chain)
                .with_status_policy(UnknownStatusPolicy::Deny)
                .with_expiration_policy(ExpirationPolicy::Enforce)
                .build()
        });
        // What OpenSSL would say of a path webpki found: too long, or not
        // ending in a root. Such a path is no path, as for OpenSSL.
        let refused = std::cell::Cell::new(None);
        let as_openssl = |path: &webpki::VerifiedPath<'_>| {
            let root = self
                .anchors
                .iter()
                .position(|a| std::ptr::eq(a, path.anchor()))
                .is_some_and(|i| self.roots[i]);
            if path.intermediate_certificates().count() as u64 > self.depth {
                refused.set(Some(x509::UNABLE_TO_GET_ISSUER_CERT_LOCALLY));
            } else if !root {
                refused.set(Some(x509::UNABLE_TO_GET_ISSUER_CERT));
            } else {
                return Ok(());
            }
            Err(webpki::Error::UnknownIssuer)
        };
        let verified = ee.verify_for_usage(
            self.algs,
            &self.anchors,
            &chain[1..],
            now,
            KeyUsage::server_auth(),
            revocation,
            Some(&as_openssl),
        );
        match verified {
            Ok(_) => Ok(()),
            Err(webpki::Error::UnknownIssuer) if refused.get().is_some() => {
                Err(refused.get().unwrap_or(x509::UNSPECIFIED))
            }
            // OpenSSL takes a CA's certificate as a server's own.
            Err(webpki::Error::CaUsedAsEndEntity) => self.by_openssl(chain, now),
            Err(e) => Err(openssl_error(&e, chain)),
        }
    }
}

impl Verifier {
    /// The verdict of OpenSSL's own steps, for what webpki cannot judge.
    fn by_openssl(&self, chain: &[CertificateDer<'_>], now: UnixTime) -> Result<(), VerifyError> {
        let now = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
        match self.openssl.verify(chain, now) {
            0 => Ok(()),
            code => Err(x509::by_code(code)),
        }
    }
}

/// The verify result OpenSSL reaches for what webpki found, with nginx's
/// callback that lets verification go on after an error (so the result is
/// the last error OpenSSL met): an issuer missing under a lone certificate
/// is first 20, then 21 when the leaf's signature cannot be checked.
fn openssl_error(e: &webpki::Error, chain: &[CertificateDer<'_>]) -> VerifyError {
    use webpki::Error as E;
    match e {
        E::UnknownIssuer => {
            let self_signed = chain.last().is_some_and(self_signed);
            match (self_signed, chain.len()) {
                (true, 1) => x509::DEPTH_ZERO_SELF_SIGNED_CERT,
                (true, _) => x509::SELF_SIGNED_CERT_IN_CHAIN,
                (false, 1) => x509::UNABLE_TO_VERIFY_LEAF_SIGNATURE,
                (false, _) => x509::UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
            }
        }
        E::CertExpired { .. } => x509::CERT_HAS_EXPIRED,
        E::CertNotValidYet { .. } | E::InvalidCertValidity => x509::CERT_NOT_YET_VALID,
        E::CertRevoked => x509::CERT_REVOKED,
        E::UnknownRevocationStatus => x509::UNABLE_TO_GET_CRL,
        E::CrlExpired { .. } => x509::CRL_HAS_EXPIRED,
        E::InvalidCrlSignatureForPublicKey => x509::CRL_SIGNATURE_FAILURE,
        E::InvalidSignatureForPublicKey
        | E::UnsupportedSignatureAlgorithmContext(_)
        | E::UnsupportedSignatureAlgorithmForPublicKeyContext(_)
        | E::SignatureAlgorithmMismatch => x509::CERT_SIGNATURE_FAILURE,
        E::MaximumPathDepthExceeded => x509::CERT_CHAIN_TOO_LONG,
        E::PathLenConstraintViolated => x509::PATH_LENGTH_EXCEEDED,
        E::EndEntityUsedAsCa => x509::INVALID_CA,
        E::NameConstraintViolation => x509::PERMITTED_VIOLATION,
        #[allow(deprecated)]
        E::RequiredEkuNotFound | E::RequiredEkuNotFoundContext(_) | E::CaUsedAsEndEntity => {
            x509::INVALID_PURPOSE
        }
        _ => x509::UNSPECIFIED,
    }
}

/// Whether a certificate names itself as its issuer.
fn self_signed(cert: &CertificateDer<'_>) -> bool {
    EndEntityCert::try_from(cert).is_ok_and(|c| c.issuer() == c.subject())
}

/// Whether the certificate `cert` is for `name`, as OpenSSL's
/// `X509_check_host(cert, name, len, 0, NULL)`: a DNS name of its subject
/// alternative names, or, when it has none, a common name of its subject;
/// compared without case, a wildcard standing for part or all of the
/// leftmost label. An empty name matches nothing (`ngx_ssl_check_host`).
pub fn check_host(cert: &CertificateDer<'_>, name: &str) -> bool {
    if name.is_empty() || name.contains('\0') {
        return false;
    }
    let Ok(ee) = EndEntityCert::try_from(cert) else {
        // A certificate webpki cannot read (version 1): its fields.
        let Some(f) = CertFields::parse(cert) else {
            return false;
        };
        let dns = f.dns_names();
        if !dns.is_empty() {
            return dns
                .iter()
                .any(|p| std::str::from_utf8(p).is_ok_and(|p| name_matches(p, name)));
        }
        return common_names(der::single(f.subject, der::SEQUENCE).map_or(&[], |n| n.content))
            .iter()
            .any(|cn| name_matches(cn, name));
    };
    let dns: Vec<&str> = ee.valid_dns_names().collect();
    if !dns.is_empty() {
        return dns.iter().any(|p| name_matches(p, name));
    }
    common_names(ee.subject())
        .iter()
        .any(|cn| name_matches(cn, name))
}

/// The common names (2.5.4.3) in the content of a DER `Name`.
fn common_names(name: &[u8]) -> Vec<String> {
    const CN: [u8; 3] = [0x55, 0x04, 0x03];
    /// UTF8String, PrintableString, T61String, IA5String: the 8-bit
    /// string types.
    const TEXT: [u8; 4] = [0x0c, 0x13, 0x14, 0x16];
    let mut out = Vec::new();
    // Name ::= SEQUENCE OF RelativeDistinguishedName (SET OF
    // AttributeTypeAndValue).
    let mut rdns = Reader::new(name);
    while let Some(mut rdn) = rdns.nested(der::SET) {
        while let Some(mut atv) = rdn.nested(der::SEQUENCE) {
            let is_cn = atv.read(der::OID).is_some_and(|oid| oid.content == CN);
            match atv.any() {
                Some(v) if is_cn && TEXT.contains(&v.tag) => {
                    out.push(String::from_utf8_lossy(v.content).into_owned());
                }
                _ => {}
            }
        }
    }
    out
}

/// `X509_check_host`'s comparison of a certificate's name `pattern` with
/// `name`: equal without case, or a wildcard match.
fn name_matches(pattern: &str, name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    if pattern.eq_ignore_ascii_case(name) {
        return true;
    }
    wildcard_matches(pattern, name)
}

/// OpenSSL's `wildcard_match` with its default flags (partial wildcards
/// allowed): one `*` in the leftmost label of a pattern with at least two
/// labels after it, not in an IDNA label unless it is the whole label; it
/// stands for letters, digits and `-` of one label.
fn wildcard_matches(pattern: &str, name: &str) -> bool {
    let p = pattern.as_bytes();
    let Some(star) = p.iter().position(|&c| c == b'*') else {
        return false;
    };
    let first_label_end = p.iter().position(|&c| c == b'.').unwrap_or(p.len());
    if star > first_label_end || p[star + 1..].contains(&b'*') {
        return false;
    }
    if p[first_label_end..].iter().filter(|&&c| c == b'.').count() < 2 {
        return false;
    }
    let whole_label = star == 0 && first_label_end == 1;
    if !whole_label && p[..first_label_end].len() >= 4 && p[..4].eq_ignore_ascii_case(b"xn--") {
        return false;
    }
    let (prefix, suffix) = (&p[..star], &p[star + 1..]);
    let n = name.as_bytes();
    if n.len() < prefix.len() + suffix.len() {
        return false;
    }
    if !n[..prefix.len()].eq_ignore_ascii_case(prefix)
        || !n[n.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
    {
        return false;
    }
    let middle = &n[prefix.len()..n.len() - suffix.len()];
    // A whole-label wildcard stands for at least one character.
    if whole_label && middle.is_empty() {
        return false;
    }
    middle
        .iter()
        .all(|&c| c.is_ascii_alphanumeric() || c == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_as_openssl_matches_them() {
        assert!(name_matches("*.example.com", "www.example.com"));
        assert!(name_matches("*.Example.COM", "WWW.example.com"));
        assert!(!name_matches("*.example.com", "example.com"));
        assert!(!name_matches("*.example.com", "a.b.example.com"));
        assert!(!name_matches("*.com", "example.com"));
        assert!(name_matches("w*.example.com", "www.example.com"));
        assert!(name_matches("w*.example.com", "w.example.com"));
        assert!(!name_matches("w*.example.com", "xww.example.com"));
        assert!(!name_matches("xn--*.example.com", "xn--a.example.com"));
        assert!(!name_matches("www.*.com", "www.example.com"));
        assert!(name_matches("localhost", "LOCALHOST"));
        assert!(name_matches("localhost", "localhost."));
    }

    fn fixture(name: &str) -> CertificateDer<'static> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/tls")
            .join(name);
        CertificateDer::from_pem_file(path).unwrap()
    }

    #[test]
    fn names_are_dns_names_never_addresses() {
        let c = fixture("localhost-rsa.crt");
        assert!(check_host(&c, "localhost"));
        // The certificate has 127.0.0.1 as an address: X509_check_host
        // does not look there.
        assert!(!check_host(&c, "127.0.0.1"));
        assert!(!check_host(&c, ""));
        let e = fixture("example.crt");
        assert!(check_host(&e, "www.example.com"));
        assert!(!check_host(&e, "other.test"));
    }

    #[test]
    fn a_common_name_counts_only_without_dns_names() {
        // The test CA has no subject alternative names: its CN is its name.
        let ca = fixture("ca.crt");
        assert!(check_host(&ca, "nowait test CA"));
        let c = fixture("localhost-rsa.crt");
        let cn = common_names(EndEntityCert::try_from(&c).unwrap().subject());
        assert_eq!(cn, vec!["localhost".to_string()]);
    }

    fn verifier(ca: &str, depth: u64) -> Verifier {
        verifier_crl(ca, None, depth)
    }

    fn verifier_crl(ca: &str, crl: Option<&str>, depth: u64) -> Verifier {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls");
        let pem = std::fs::read(dir.join(ca)).unwrap();
        let crl = crl.map(|c| (std::fs::read(dir.join(c)).unwrap(), dir.join(c)));
        let crl = crl.as_ref().map(|(b, p)| (&b[..], p.as_path()));
        Verifier::new(&crate::tls::provider(), &pem, &dir.join(ca), crl, depth).unwrap()
    }

    fn chain(name: &str) -> Vec<CertificateDer<'static>> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/tls")
            .join(name);
        CertificateDer::pem_file_iter(path)
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    /// What nginx 1.22 with OpenSSL 3.0 logs for each (checked against
    /// Debian's nginx: `tests/proxy_tls.rs` runs the same chains through
    /// both).
    #[test]
    fn depth_roots_and_revocation_as_openssl_reports_them() {
        let now = UnixTime::now();
        let text = |r: Result<(), VerifyError>| r.map_err(|e| e.to_string());
        // One intermediate: depth 1 allows it, depth 0 does not.
        assert_eq!(
            text(verifier("ca.crt", 1).verify(&chain("chain.crt"), now)),
            Ok(())
        );
        assert_eq!(
            text(verifier("ca.crt", 0).verify(&chain("chain.crt"), now)),
            Err("20:unable to get local issuer certificate".into())
        );
        // Depth 0 still allows a certificate the trusted one issued.
        assert_eq!(
            text(verifier("ca.crt", 0).verify(&chain("localhost-ec.crt"), now)),
            Ok(())
        );
        // Trusting the intermediate alone is not enough for OpenSSL.
        assert_eq!(
            text(verifier("int-ca.crt", 1).verify(&chain("chain.crt"), now)),
            Err("2:unable to get issuer certificate".into())
        );
        // An unknown issuer above an intermediate.
        assert_eq!(
            text(verifier("localhost-rsa.crt", 1).verify(&chain("chain.crt"), now)),
            Err("20:unable to get local issuer certificate".into())
        );
        let crl = verifier_crl("ca.crt", Some("ca.crl"), 1);
        assert_eq!(
            text(crl.verify(&chain("revoked.crt"), now)),
            Err("23:certificate revoked".into())
        );
        assert_eq!(text(crl.verify(&chain("localhost-ec.crt"), now)), Ok(()));
        // Every certificate of the chain needs its issuer's list.
        assert_eq!(
            text(crl.verify(&chain("chain.crt"), now)),
            Err("3:unable to get certificate CRL".into())
        );
        assert_eq!(
            text(verifier("ca.crt", 1).verify(&chain("revoked.crt"), now)),
            Ok(())
        );
    }

    #[test]
    fn chains_verify_or_say_openssl_s_result() {
        let now = UnixTime::now();
        let ok = verifier("ca.crt", 1);
        assert_eq!(ok.verify(&[fixture("localhost-rsa.crt")], now), Ok(()));
        assert_eq!(
            ok.verify(&[fixture("expired.crt")], now),
            Err(x509::CERT_HAS_EXPIRED)
        );
        // A lone certificate no trusted one issued: 21, as nginx logs it.
        let wrong = verifier("localhost-ec.crt", 1);
        assert_eq!(
            wrong
                .verify(&[fixture("localhost-rsa.crt")], now)
                .unwrap_err()
                .to_string(),
            "21:unable to verify the first certificate"
        );
    }

    #[test]
    fn version_1_certificates_and_crls_are_judged_as_openssl_judges_them() {
        let now = UnixTime::now();
        let text = |r: Result<(), VerifyError>| r.map_err(|e| e.to_string());
        let plain = verifier("v1/root.crt", 1);
        assert_eq!(text(plain.verify(&chain("v1/leaf.crt"), now)), Ok(()));
        assert_eq!(
            text(plain.verify(&chain("v1/self.crt"), now)),
            Err("18:self-signed certificate".into())
        );
        let crl = verifier_crl("v1/root.crt", Some("v1/root.crl"), 1);
        assert_eq!(
            text(crl.verify(&chain("v1/leaf.crt"), now)),
            Err("23:certificate revoked".into())
        );
        // The names of a version 1 certificate are its common names.
        assert!(check_host(&fixture("v1/leaf.crt"), "localhost"));
        assert!(!check_host(&fixture("v1/leaf.crt"), "example.com"));
    }

    #[test]
    fn a_file_without_certificates_is_nginx_s_error() {
        let e =
            Verifier::new(&crate::tls::provider(), b"", Path::new("/x.crt"), None, 1).unwrap_err();
        assert_eq!(
            e,
            "SSL_CTX_load_verify_locations(\"/x.crt\") failed (SSL: no certificate or crl found)"
        );
    }
}
