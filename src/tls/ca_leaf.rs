//! A client certificate that is itself a CA (`basicConstraints CA:TRUE`,
//! as nginx's tests make every certificate): OpenSSL takes it as the
//! client's own when its purpose allows (`check_purpose_ssl_client` looks
//! at the extended key usage, not at the CA flag), where webpki refuses
//! any CA as an end entity. Its chain is judged here as `X509_verify_cert`
//! judges it: each issuer found by name among the trusted CAs first, then
//! among those the client sent, a CA whose key verifies the certificate
//! below, every certificate within its validity, up to a self-issued
//! trusted root, with at most `depth` certificates between.

use rustls::pki_types::CertificateDer;

use super::x509::CertFields;

/// The longest chain followed (OpenSSL's default depth limit).
const MAX_CHAIN: usize = 100;

/// OpenSSL's verify code for `chain` (the client's CA certificate first)
/// against `cas` at `now`: 0 when it verifies.
pub fn code(
    chain: &[CertificateDer<'_>],
    cas: &[CertificateDer<'static>],
    depth: u64,
    now: i64,
) -> u32 {
    let trusted: Vec<CertFields<'_>> = cas
        .iter()
        .filter_map(|c| CertFields::parse(c.as_ref()))
        .collect();
    let sent: Vec<CertFields<'_>> = chain
        .iter()
        .skip(1)
        .filter_map(|c| CertFields::parse(c.as_ref()))
        .collect();
    let Some(leaf) = chain.first().and_then(|c| CertFields::parse(c.as_ref())) else {
        return 1;
    };
    let mut path = vec![leaf];
    let mut top_trusted = trusted.iter().any(|t| t.der == path[0].der);
    loop {
        let top = &path[path.len() - 1];
        if top.self_issued() {
            break;
        }
        if path.len() >= MAX_CHAIN {
            return 22;
        }
        let by_name = |c: &&CertFields<'_>| c.subject == top.issuer;
        let found = trusted
            .iter()
            .find(by_name)
            .map(|c| (c, true))
            .or_else(|| sent.iter().find(by_name).map(|c| (c, false)));
        let Some((issuer, from_store)) = found else {
            // X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT(_LOCALLY); a lone
            // certificate: "unable to verify the first certificate".
            return match (path.len(), top_trusted) {
                (1, _) => 21,
                (_, true) => 2,
                _ => 20,
            };
        };
        if path.iter().any(|p| p.der == issuer.der) {
            return 20;
        }
        path.push(issuer.clone());
        top_trusted = from_store;
    }
    if !top_trusted {
        return if path.len() == 1 { 18 } else { 19 };
    }
    // OpenSSL stops building at the depth, then finds no trusted issuer.
    if path.len().saturating_sub(2) as u64 > depth {
        return 20;
    }
    for i in (0..path.len()).rev() {
        let cert = &path[i];
        if let Some(issuer) = path.get(i + 1) {
            if issuer.is_ca() == Some(false) {
                return 24;
            }
            if !cert.signed_by(issuer) {
                return 7;
            }
        }
        if cert.not_before > now {
            return 9;
        }
        if cert.not_after < now {
            return 10;
        }
    }
    0
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
    fn a_ca_as_the_client_s_own_is_judged_by_its_chain() {
        let now = crate::tls::unix_now();
        let ca = certs("ca.crt");
        let leaf = certs("client-ca-leaf.crt");
        assert_eq!(code(&leaf, &ca, 1, now), 0);
        // No issuer for a lone certificate (OpenSSL's last error).
        assert_eq!(code(&leaf, &certs("rogue-ca.crt"), 1, now), 21);
        assert_eq!(code(&ca, &[], 1, now), 18);
        assert_eq!(code(&ca, &ca, 1, now), 0);
        // Sent with an intermediate it was not issued by: still the CA's.
        let mut with = leaf.clone();
        with.extend(certs("int.crt"));
        assert_eq!(code(&with, &ca, 0, now), 0);
        assert_eq!(code(&leaf, &ca, 1, now + 200 * 365 * 86400), 10);
    }

    #[test]
    fn the_client_verdict_on_a_ca_is_openssl_s() {
        use crate::tls::client_verify::{ClientCas, Verdict};
        let now = rustls::pki_types::UnixTime::now();
        let cas = |named: &[CertificateDer<'static>]| {
            ClientCas::new(&crate::tls::provider(), named, &[], None, 1).unwrap()
        };
        let ca = certs("ca.crt");
        assert_eq!(
            cas(&ca).verify(&certs("client-ca-leaf.crt"), now),
            Verdict::Success
        );
        // A trusted root as the client's own certificate (ssl_ocsp.t's
        // "ocsp one").
        assert_eq!(cas(&ca).verify(&ca, now), Verdict::Success);
        assert_eq!(cas(&[]).verify(&ca, now), Verdict::Failed(18));
    }
}
