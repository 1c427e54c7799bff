//! The checks against answers `openssl ocsp` made (tests/tls/make-ocsp.sh),
//! with the outcomes nginx 1.22 on OpenSSL 3.0 has for them.

use super::*;
use rustls::pki_types::pem::PemObject;

fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls")
}

fn cert(name: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_file(dir().join(name)).expect("a certificate fixture")
}

fn answer(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(name)).expect("an answer fixture")
}

/// The leaf's CertID.
fn leaf_id() -> CertId {
    let (leaf, ca) = (cert("ocsp-leaf.crt"), cert("ca.crt"));
    CertId::new(
        &CertFields::parse(leaf.as_ref()).unwrap(),
        &CertFields::parse(ca.as_ref()).unwrap(),
    )
}

/// A clock the answers are valid at.
fn now() -> i64 {
    let single_this_update = {
        let bytes = answer("ocsp-good.der");
        let r = response::parse(&bytes).unwrap();
        r.basic().unwrap().responses[0].this_update
    };
    single_this_update + 60
}

fn run(
    file: &str,
    chain: &[CertificateDer<'static>],
    trusted: &[CertificateDer<'static>],
    verify: bool,
) -> Result<Verified, String> {
    check(
        &answer(file),
        &leaf_id(),
        &Trust {
            chain,
            trusted,
            verify,
            trust_other: true,
        },
        now(),
    )
}

#[test]
fn a_good_answer_from_the_issuer_passes_with_and_without_verify() {
    let ca = [cert("ca.crt")];
    let v = run("ocsp-good.der", &[], &[], false).unwrap();
    assert_eq!(v.status, CertStatus::Good);
    assert!(
        v.valid > now() + 86400 * 365 * 99,
        "nextUpdate in a century"
    );
    assert_eq!(
        run("ocsp-good.der", &[], &ca, true).unwrap().status,
        CertStatus::Good
    );
    // The issuer in the server's chain is trusted as a signer.
    assert_eq!(
        run("ocsp-good.der", &ca, &[], true).unwrap().status,
        CertStatus::Good
    );
    // Without nextUpdate the answer is good forever.
    assert_eq!(
        run("ocsp-leaf.der", &[], &[], false).unwrap().valid,
        i64::MAX
    );
}

#[test]
fn verify_on_needs_the_issuer_trusted() {
    // The CA the answer carries is self-signed and trusted by nothing.
    assert_eq!(
        run("ocsp-good.der", &[], &[], true).unwrap_err(),
        "OCSP_basic_verify() failed (SSL: certificate verify error:Verify error: self-signed certificate)"
    );
}

#[test]
fn a_delegated_responder_passes_when_its_issuer_is_trusted() {
    let ca = [cert("ca.crt")];
    assert_eq!(
        run("ocsp-delegated.der", &[], &ca, true).unwrap().status,
        CertStatus::Good
    );
    // nginx's outcome with the CA in the chain file and nothing trusted.
    assert_eq!(
        run("ocsp-delegated.der", &ca, &[], true).unwrap_err(),
        "OCSP_basic_verify() failed (SSL: certificate verify error:Verify error: self-signed certificate in certificate chain)"
    );
    assert_eq!(
        run("ocsp-delegated.der", &[], &[], false).unwrap().status,
        CertStatus::Good
    );
}

#[test]
fn a_rogue_signer_passes_only_without_verify() {
    let ca = [cert("ca.crt")];
    assert_eq!(
        run("ocsp-rogue.der", &[], &ca, false).unwrap().status,
        CertStatus::Good
    );
    assert_eq!(
        run("ocsp-rogue.der", &[], &ca, true).unwrap_err(),
        "OCSP_basic_verify() failed (SSL: certificate verify error:Verify error: self-signed certificate)"
    );
    // Trusting the rogue CA does not make it a signer for the leaf's CA:
    // `openssl ocsp -respin ocsp-rogue.der -CAfile rogue-ca.crt` says
    // "root ca not trusted" too (ssl_stapling.t, "verify - root not
    // trusted").
    let rogue = [cert("rogue-ca.crt")];
    assert_eq!(
        run("ocsp-rogue.der", &[], &rogue, true).unwrap_err(),
        "OCSP_basic_verify() failed (SSL: root ca not trusted)"
    );
}

#[test]
fn a_revoked_status_is_read() {
    assert_eq!(
        run("ocsp-revoked.der", &[], &[], false).unwrap().status,
        CertStatus::Revoked
    );
}

#[test]
fn a_tampered_signature_fails() {
    let mut bytes = answer("ocsp-good.der");
    // The signature is near the end, before the CA's certificate: flip a
    // byte of the signed data instead, which the signature covers.
    let at = bytes
        .windows(3)
        .position(|w| w == [0x18, 0x0f, b'2'])
        .expect("a GeneralizedTime");
    bytes[at + 5] ^= 1;
    let e = check(
        &bytes,
        &leaf_id(),
        &Trust {
            chain: &[],
            trusted: &[],
            verify: false,
            trust_other: true,
        },
        now(),
    )
    .unwrap_err();
    assert_eq!(e, "OCSP_basic_verify() failed (SSL: signature failure)");
}

#[test]
fn an_answer_about_another_certificate_is_not_found() {
    let (other, ca) = (cert("localhost-rsa.crt"), cert("ca.crt"));
    let id = CertId::new(
        &CertFields::parse(other.as_ref()).unwrap(),
        &CertFields::parse(ca.as_ref()).unwrap(),
    );
    let e = check(
        &answer("ocsp-good.der"),
        &id,
        &Trust {
            chain: &[],
            trusted: &[],
            verify: false,
            trust_other: true,
        },
        now(),
    )
    .unwrap_err();
    assert_eq!(e, "certificate status not found in the OCSP response");
}

#[test]
fn times_are_checked_with_five_minutes_of_leeway() {
    let bytes = answer("ocsp-good.der");
    let r = response::parse(&bytes).unwrap();
    let single = &r.basic().unwrap().responses[0];
    let (this, next) = (single.this_update, single.next_update.unwrap());
    let at = |t: i64| {
        check(
            &bytes,
            &leaf_id(),
            &Trust {
                chain: &[],
                trusted: &[],
                verify: false,
                trust_other: true,
            },
            t,
        )
    };
    assert!(at(this - VALIDITY_LEEWAY).is_ok());
    assert_eq!(
        at(this - VALIDITY_LEEWAY - 1).unwrap_err(),
        "OCSP_check_validity() failed (SSL: status not yet valid)"
    );
    assert!(at(next + VALIDITY_LEEWAY).is_ok());
    assert_eq!(
        at(next + VALIDITY_LEEWAY + 1).unwrap_err(),
        "OCSP_check_validity() failed (SSL: status expired)"
    );
}

#[test]
fn what_is_no_answer_fails_in_nginx_words() {
    let t = Trust {
        chain: &[],
        trusted: &[],
        verify: false,
        trust_other: true,
    };
    assert_eq!(
        check(b"", &leaf_id(), &t, now()).unwrap_err(),
        "d2i_OCSP_RESPONSE() failed"
    );
    assert_eq!(
        check(b"<html>", &leaf_id(), &t, now()).unwrap_err(),
        "d2i_OCSP_RESPONSE() failed (SSL: wrong tag)"
    );
    assert_eq!(
        check(&[0x30, 0x03, 0x0a, 0x01, 0x06], &leaf_id(), &t, now()).unwrap_err(),
        "OCSP response not successful (6: unauthorized)"
    );
}

#[test]
fn without_trust_other_a_signer_in_the_chain_must_chain_to_the_trusted() {
    // `ssl_ocsp`: the client's verified chain holds the issuer, which
    // signs for it only when `ssl_client_certificate` or
    // `ssl_trusted_certificate` trusts it.
    let ca = [cert("ca.crt")];
    let client = |trusted: &[CertificateDer<'static>]| {
        check(
            &answer("ocsp-good.der"),
            &leaf_id(),
            &Trust {
                chain: &ca,
                trusted,
                verify: true,
                trust_other: false,
            },
            now(),
        )
    };
    assert_eq!(
        client(&[]).unwrap_err(),
        "OCSP_basic_verify() failed (SSL: certificate verify error:Verify error: self-signed certificate)"
    );
    assert_eq!(client(&ca).unwrap().status, CertStatus::Good);
}
