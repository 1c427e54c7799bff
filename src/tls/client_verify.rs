//! Client certificates (`ssl_verify_client`), verified as nginx has
//! OpenSSL verify them: asked for in every handshake of a server that
//! verifies, never required by the handshake itself (nginx's verify
//! callback always says yes), and judged afterwards against the CAs of
//! `ssl_client_certificate` and `ssl_trusted_certificate`, the CRLs of
//! `ssl_crl` and `ssl_verify_depth`. The verdict is kept with the
//! connection; the HTTP layer refuses a request (495, 496) from it.
//!
//! The verdict is said as OpenSSL says it: `X509_V_ERR_*` codes with
//! `X509_verify_cert_error_string`'s words. webpki reports the first
//! thing wrong with a path, OpenSSL the last it met (its callback lets it
//! go on): [`Verdict`] maps one to the other for the cases nginx's users
//! meet (unknown issuer, self-signed, expired, revoked, no CRL, wrong
//! purpose, too deep a chain). An upstream's certificate is checked by
//! `tls::verify`, which fails the connection instead.

use std::sync::Arc;

use rustls::DistinguishedName;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, TrustAnchor, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, SignatureScheme};

use super::crl::Crl;
use super::openssl_verify::{Purpose, Store};
use super::x509::CertFields;

/// OpenSSL's `X509_V_ERR_*` codes nowait reports, with
/// `X509_verify_cert_error_string`'s words (OpenSSL 3.0).
const REASONS: &[(u32, &str)] = &[
    (1, "unspecified certificate verification error"),
    (2, "unable to get issuer certificate"),
    (3, "unable to get certificate CRL"),
    (7, "certificate signature failure"),
    (8, "CRL signature failure"),
    (9, "certificate is not yet valid"),
    (10, "certificate has expired"),
    (11, "CRL is not yet valid"),
    (12, "CRL has expired"),
    (18, "self-signed certificate"),
    (19, "self-signed certificate in certificate chain"),
    (20, "unable to get local issuer certificate"),
    (21, "unable to verify the first certificate"),
    (22, "certificate chain too long"),
    (23, "certificate revoked"),
    (24, "invalid CA certificate"),
    (25, "path length constraint exceeded"),
    (26, "unsuitable certificate purpose"),
    (33, "unable to get CRL issuer certificate"),
    (35, "key usage does not include CRL signing"),
    (47, "permitted subtree violation"),
];

/// The codes `ssl_verify_client optional_no_ca` lets through
/// (`ngx_ssl_verify_error_optional`): a certificate whose issuer is
/// unknown.
const OPTIONAL_NO_CA: [u32; 5] = [18, 19, 2, 27, 21];

/// What the verification of a client's certificate found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It chains to a trusted CA, within the depth, unrevoked.
    Success,
    /// It does not: OpenSSL's `X509_V_ERR_*` code.
    Failed(u32),
}

impl Verdict {
    /// The code, 0 (`X509_V_OK`) for success.
    pub fn code(self) -> u32 {
        match self {
            Verdict::Success => 0,
            Verdict::Failed(c) => c,
        }
    }

    /// `X509_verify_cert_error_string`'s words for the code.
    pub fn reason(self) -> &'static str {
        match self {
            Verdict::Success => "ok",
            Verdict::Failed(c) => REASONS
                .iter()
                .find(|(n, _)| *n == c)
                .map_or("unspecified certificate verification error", |(_, r)| r),
        }
    }

    /// Whether `optional_no_ca` accepts it (`ngx_ssl_verify_error_optional`).
    pub fn optional_no_ca_accepts(self) -> bool {
        match self {
            Verdict::Success => true,
            Verdict::Failed(c) => OPTIONAL_NO_CA.contains(&c),
        }
    }
}

/// The CAs, CRLs and depth a server verifies client certificates with.
#[derive(Debug)]
pub struct ClientCas {
    /// Every CA of `ssl_client_certificate` and `ssl_trusted_certificate`.
    anchors: Vec<TrustAnchor<'static>>,
    /// The subjects of `ssl_client_certificate`'s CAs, sent in the
    /// CertificateRequest (`SSL_CTX_set_client_CA_list`).
    hints: Vec<DistinguishedName>,
    /// `ssl_crl`: `None` checks no revocation; an empty list (a file with
    /// certificates but no CRL, which OpenSSL accepts) finds none for any
    /// certificate.
    crls: Option<Vec<webpki::CertRevocationList<'static>>>,
    /// `ssl_verify_depth`: how many intermediate CAs a chain may have.
    depth: u64,
    /// The signature algorithms of the provider.
    algs: WebPkiSupportedAlgorithms,
    /// The same CAs and CRLs for what webpki cannot judge (version 1
    /// certificates and CRLs, a CA's certificate as the client's own).
    openssl: Arc<Store>,
    /// Whether webpki read every CA as version 3 and every CRL (else
    /// every chain is `openssl`'s).
    webpki_reads_all: bool,
}

impl ClientCas {
    /// CAs from the DER certificates of `ssl_client_certificate`
    /// (`named`, whose subjects are sent) and `ssl_trusted_certificate`
    /// (`unnamed`), CRLs from `ssl_crl`'s DER CRLs.
    pub fn new(
        provider: &rustls::crypto::CryptoProvider,
        named: &[CertificateDer<'static>],
        unnamed: &[CertificateDer<'static>],
        crls: Option<&[Vec<u8>]>,
        depth: u64,
    ) -> Result<ClientCas, String> {
        let mut anchors = Vec::new();
        let mut hints: Vec<DistinguishedName> = Vec::new();
        let mut trusted = Vec::new();
        let mut webpki_reads_all = true;
        for (i, cert) in named.iter().chain(unnamed).enumerate() {
            let fields = CertFields::parse(cert);
            match webpki::anchor_from_trusted_cert(cert) {
                Ok(anchor) if fields.as_ref().is_some_and(|f| f.version == 2) => {
                    anchors.push(anchor.to_owned());
                }
                Err(e) if fields.is_none() => {
                    return Err(format!("a CA certificate cannot be used ({e})"));
                }
                _ => webpki_reads_all = false,
            }
            // SSL_load_client_CA_file names each subject once.
            if let Some(f) = fields.filter(|_| i < named.len()) {
                let name = DistinguishedName::from(f.subject.to_vec());
                if !hints.iter().any(|h| h.as_ref() == name.as_ref()) {
                    hints.push(name);
                }
            }
            trusted.push(cert.to_vec());
        }
        let (crls, own_crls) = match crls {
            None => (None, None),
            Some(list) => {
                let mut theirs = Vec::new();
                let mut own = Vec::new();
                for der in list {
                    own.push(Crl::parse(der).ok_or("a CRL cannot be read")?);
                    match webpki::OwnedCertRevocationList::from_der(der) {
                        Ok(crl) => theirs.push(webpki::CertRevocationList::from(crl)),
                        Err(_) => webpki_reads_all = false,
                    }
                }
                (Some(theirs), Some(own))
            }
        };
        Ok(ClientCas {
            anchors,
            hints,
            crls,
            depth,
            algs: provider.signature_verification_algorithms,
            openssl: Arc::new(Store {
                trusted,
                crls: own_crls,
                depth,
                purpose: Purpose::SslClient,
            }),
            webpki_reads_all,
        })
    }

    /// The subjects of `ssl_client_certificate`'s CAs, as they are named
    /// to clients (and hashed into the session context, as nginx's
    /// `ngx_ssl_session_id_context` does with the client CA list).
    pub fn hints(&self) -> &[DistinguishedName] {
        &self.hints
    }

    /// The verdict on `chain` (the client's certificate first) at `now`.
    pub fn verify(&self, chain: &[CertificateDer<'_>], now: UnixTime) -> Verdict {
        let Some(ee_der) = chain.first() else {
            return Verdict::Failed(1);
        };
        let version_3 =
            |c: &CertificateDer<'_>| CertFields::parse(c).is_some_and(|f| f.version == 2);
        if !self.webpki_reads_all || !chain.iter().all(version_3) {
            return self.by_openssl(chain, now);
        }
        let Ok(ee) = webpki::EndEntityCert::try_from(ee_der) else {
            return Verdict::Failed(1);
        };
        let crl_refs: Vec<&webpki::CertRevocationList<'_>> = self.crls.iter().flatten().collect();
        let revocation = match &self.crls {
            None => None,
            // A CRL file with no CRL in it: no certificate's CRL is found.
            Some(list) if list.is_empty() => return self.no_crl(chain, now),
            Some(_) => webpki::RevocationOptionsBuilder::new(&crl_refs)
                .ok()
                .map(|b| {
                    b.with_depth(webpki::RevocationCheckDepth::Chain)
                        .with_status_policy(webpki::UnknownStatusPolicy::Deny)
                        .with_expiration_policy(webpki::ExpirationPolicy::Enforce)
                        .build()
                }),
        };
        let intermediates = &chain[1..];
        let result = ee.verify_for_usage(
            self.algs.all,
            &self.anchors,
            intermediates,
            now,
            webpki::KeyUsage::client_auth(),
            revocation,
            None,
        );
        match result {
            Ok(path) => {
                // OpenSSL stops building the chain at the depth, and then
                // finds no trusted issuer.
                if path.intermediate_certificates().count() as u64 > self.depth {
                    return Verdict::Failed(20);
                }
                Verdict::Success
            }
            // OpenSSL takes a CA's certificate as a client's own when its
            // purpose allows, and then judges its chain.
            Err(webpki::Error::CaUsedAsEndEntity) => self.by_openssl(chain, now),
            Err(e) => Verdict::Failed(self.code(&e, chain)),
        }
    }

    /// The verdict of OpenSSL's own steps, for what webpki cannot judge.
    fn by_openssl(&self, chain: &[CertificateDer<'_>], now: UnixTime) -> Verdict {
        let now = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
        match self.openssl.verify(chain, now) {
            0 => Verdict::Success,
            code => Verdict::Failed(code),
        }
    }

    /// The verdict when CRLs are checked and none is known: what the
    /// chain would be without revocation, else "unable to get
    /// certificate CRL".
    fn no_crl(&self, chain: &[CertificateDer<'_>], now: UnixTime) -> Verdict {
        let unchecked = ClientCas {
            anchors: self.anchors.clone(),
            hints: Vec::new(),
            crls: None,
            depth: self.depth,
            algs: self.algs,
            openssl: self.openssl.clone(),
            webpki_reads_all: self.webpki_reads_all,
        };
        match unchecked.verify(chain, now) {
            Verdict::Success => Verdict::Failed(3),
            // Time and signature errors come after the CRL check.
            Verdict::Failed(c @ (7 | 9 | 10 | 21)) => Verdict::Failed(c),
            Verdict::Failed(_) => Verdict::Failed(3),
        }
    }

    /// OpenSSL's code for what webpki found wrong.
    fn code(&self, e: &webpki::Error, chain: &[CertificateDer<'_>]) -> u32 {
        use webpki::Error as E;
        match e {
            E::UnknownIssuer => self.unknown_issuer(chain),
            E::CertExpired { .. } => 10,
            E::CertNotValidYet { .. } => 9,
            E::CertRevoked => 23,
            E::UnknownRevocationStatus => 3,
            E::CrlExpired { .. } => 12,
            // OpenSSL skips a CRL whose authority key is not the issuer's
            // (a stale CRL of a re-keyed CA), and then has none.
            E::InvalidCrlSignatureForPublicKey => 3,
            E::IssuerNotCrlSigner => 35,
            E::MaximumPathDepthExceeded => 22,
            E::PathLenConstraintViolated => 25,
            E::NameConstraintViolation => 47,
            E::EndEntityUsedAsCa => 24,
            E::RequiredEkuNotFoundContext(_) | E::EmptyEkuExtension => 26,
            E::InvalidSignatureForPublicKey
            | E::UnsupportedSignatureAlgorithmContext(_)
            | E::UnsupportedSignatureAlgorithmForPublicKeyContext(_)
            | E::SignatureAlgorithmMismatch => 7,
            _ => 1,
        }
    }

    /// What OpenSSL says of a chain that reaches no trusted CA, the last
    /// of the errors it meets: building the chain (a self-signed
    /// certificate, 18; one in the chain, 19; else 20), then the CRL
    /// check (3, when CRLs are checked), then the signatures (a lone
    /// certificate whose issuer is missing, 21).
    fn unknown_issuer(&self, chain: &[CertificateDer<'_>]) -> u32 {
        let Some(ee) = CertFields::parse(&chain[0]) else {
            return 1;
        };
        let (mut len, mut top_self) = (1, ee.self_issued());
        let mut issuer = ee.issuer;
        while !top_self {
            let next = chain[1..]
                .iter()
                .filter_map(|c| CertFields::parse(c))
                .find(|f| f.subject == issuer);
            match next {
                Some(f) if len <= chain.len() => {
                    len += 1;
                    top_self = f.self_issued();
                    issuer = f.issuer;
                }
                _ => break,
            }
        }
        if len == 1 && !top_self {
            return 21;
        }
        if self.crls.is_some() {
            return 3;
        }
        match (top_self, len) {
            (true, 1) => 18,
            (true, _) => 19,
            _ => 20,
        }
    }
}

/// The rustls side of client verification: asks for a certificate,
/// names `ssl_client_certificate`'s CAs, takes whatever the client sends
/// (the verdict is [`ClientCas::verify`]'s, after the handshake), and
/// checks that the client holds the certificate's key.
#[derive(Debug)]
pub struct AskClient {
    /// The CAs (for their names) and the signature algorithms.
    pub cas: Arc<ClientCas>,
}

impl ClientCertVerifier for AskClient {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        // nginx's SSL_VERIFY_PEER without SSL_VERIFY_FAIL_IF_NO_PEER_CERT:
        // a client without a certificate is refused per request (496).
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.cas.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        // OpenSSL's verify callback in nginx always returns 1: the chain
        // is judged once the handshake is over.
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        super::peer_key::verify_tls12(message, cert, dss, &self.cas.algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        super::peer_key::verify_tls13(message, cert, dss, &self.cas.algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.cas.algs.supported_schemes()
    }
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

    fn crl(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/tls")
            .join(name);
        rustls::pki_types::CertificateRevocationListDer::from_pem_file(&path)
            .unwrap()
            .as_ref()
            .to_vec()
    }

    fn cas(crls: Option<&[Vec<u8>]>, depth: u64) -> ClientCas {
        ClientCas::new(&crate::tls::provider(), &certs("ca.crt"), &[], crls, depth).unwrap()
    }

    #[test]
    fn verdicts_are_openssl_s_for_the_fixtures() {
        let now = UnixTime::now();
        let plain = cas(None, 1);
        let v = |name: &str| plain.verify(&certs(name), now);
        assert_eq!(v("client.crt"), Verdict::Success);
        assert_eq!(v("client-self.crt"), Verdict::Failed(18));
        assert_eq!(v("client-ca2.crt"), Verdict::Failed(21));
        assert_eq!(v("client-expired.crt"), Verdict::Failed(10));
        assert_eq!(v("client-int.crt"), Verdict::Failed(21));
        assert_eq!(v("client-int-chain.crt"), Verdict::Success);
        assert_eq!(v("localhost-rsa.crt"), Verdict::Failed(26));
        assert_eq!(
            cas(None, 0).verify(&certs("client-int-chain.crt"), now),
            Verdict::Failed(20)
        );
        let ca_crl = [crl("client-ca.crl")];
        let checked = cas(Some(&ca_crl), 1);
        assert_eq!(checked.verify(&certs("client.crt"), now), Verdict::Success);
        assert_eq!(
            checked.verify(&certs("client-revoked.crt"), now),
            Verdict::Failed(23)
        );
        assert_eq!(
            checked.verify(&certs("client-self.crt"), now),
            Verdict::Failed(3)
        );
        assert_eq!(
            checked.verify(&certs("client-int-chain.crt"), now),
            Verdict::Failed(3)
        );
        let both = [crl("client-ca.crl"), crl("int.crl")];
        let deeper = cas(Some(&both), 2);
        assert_eq!(
            deeper.verify(&certs("client-int-chain.crt"), now),
            Verdict::Success
        );
        assert_eq!(
            cas(Some(&[]), 1).verify(&certs("client.crt"), now),
            Verdict::Failed(3)
        );
    }

    #[test]
    fn version_1_cas_crls_and_a_ca_as_the_client_s_own_are_openssl_s() {
        let now = UnixTime::now();
        let root = certs("v1/root.crt");
        let v = |crls: Option<&[Vec<u8>]>, chain: &str| {
            ClientCas::new(&crate::tls::provider(), &root, &[], crls, 1)
                .unwrap()
                .verify(&certs(chain), now)
        };
        assert_eq!(v(None, "v1/leaf.crt"), Verdict::Success);
        assert_eq!(v(None, "v1/root.crt"), Verdict::Success);
        assert_eq!(v(None, "v1/self.crt"), Verdict::Failed(18));
        let revoking = [crl("v1/root.crl")];
        assert_eq!(v(Some(&revoking), "v1/leaf.crt"), Verdict::Failed(23));
        let empty = [crl("v1/root-empty.crl")];
        assert_eq!(v(Some(&empty), "v1/leaf.crt"), Verdict::Success);
        // A version 3 CA as the client's certificate, under a version 3 CA.
        let cas = ClientCas::new(&crate::tls::provider(), &certs("ca.crt"), &[], None, 1).unwrap();
        assert_eq!(cas.verify(&certs("ca.crt"), now), Verdict::Success);
    }

    #[test]
    fn a_ca_named_twice_is_named_once() {
        let mut twice = certs("ca.crt");
        twice.extend(certs("ca.crt"));
        twice.extend(certs("v1/root.crt"));
        let cas = ClientCas::new(&crate::tls::provider(), &twice, &[], None, 1).unwrap();
        assert_eq!(cas.hints().len(), 2);
    }

    #[test]
    fn reasons_are_openssl_words() {
        assert_eq!(
            Verdict::Failed(20).reason(),
            "unable to get local issuer certificate"
        );
        assert_eq!(Verdict::Failed(10).reason(), "certificate has expired");
        assert_eq!(
            Verdict::Failed(999).reason(),
            "unspecified certificate verification error"
        );
        assert!(Verdict::Failed(21).optional_no_ca_accepts());
        assert!(!Verdict::Failed(20).optional_no_ca_accepts());
        assert!(!Verdict::Failed(10).optional_no_ca_accepts());
    }
}
