//! The verify results `openssl verify` (OpenSSL 3.0) gives for the
//! version 1 fixtures (`tests/tls/make-v1.sh`), with nginx's callback
//! that goes on after errors where the command stops.

use super::*;
use rustls::pki_types::CertificateRevocationListDer;
use rustls::pki_types::pem::PemObject;

fn path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/tls/v1")
        .join(name)
}

fn certs(names: &[&str]) -> Vec<CertificateDer<'static>> {
    names
        .iter()
        .map(|n| CertificateDer::from_pem_file(path(n)).unwrap())
        .collect()
}

fn store(trusted: &[&str], crls: Option<&[&str]>, depth: u64, purpose: Purpose) -> Store {
    Store {
        trusted: certs(trusted).iter().map(|c| c.to_vec()).collect(),
        crls: crls.map(|list| {
            list.iter()
                .map(|n| {
                    let der = CertificateRevocationListDer::from_pem_file(path(n)).unwrap();
                    Crl::parse(der.as_ref()).unwrap()
                })
                .collect()
        }),
        depth,
        purpose,
    }
}

fn now() -> i64 {
    crate::tls::unix_now()
}

#[test]
fn version_1_chains_verify_as_openssl_verifies_them() {
    let s = store(&["root.crt"], None, 1, Purpose::SslServer);
    assert_eq!(s.verify(&certs(&["leaf.crt"]), now()), 0);
    assert_eq!(s.verify(&certs(&["end.crt", "int.crt"]), now()), 0);
    assert_eq!(s.verify(&certs(&["self.crt"]), now()), 18);
    // The issuer missing: 20, then the signature cannot be checked: 21.
    assert_eq!(s.verify(&certs(&["end.crt"]), now()), 21);
    let trusting_self = store(&["self.crt"], None, 1, Purpose::SslServer);
    assert_eq!(trusting_self.verify(&certs(&["self.crt"]), now()), 0);
    assert_eq!(trusting_self.verify(&certs(&["leaf.crt"]), now()), 21);
    let shallow = store(&["root.crt"], None, 0, Purpose::SslServer);
    assert_eq!(shallow.verify(&certs(&["leaf.crt"]), now()), 0);
    assert_eq!(shallow.verify(&certs(&["end.crt", "int.crt"]), now()), 22);
}

#[test]
fn a_ca_is_taken_as_a_client_s_own_certificate() {
    let s = store(&["root.crt"], None, 1, Purpose::SslClient);
    assert_eq!(s.verify(&certs(&["root.crt"]), now()), 0);
    assert_eq!(s.verify(&certs(&["int.crt"]), now()), 0);
}

#[test]
fn times_are_checked_from_the_root_down() {
    let s = store(&["root.crt"], None, 1, Purpose::SslServer);
    let leaf = certs(&["leaf.crt"]);
    let f = CertFields::parse(&leaf[0]).unwrap();
    assert_eq!(s.verify(&leaf, f.not_after + 1), 10);
    assert_eq!(s.verify(&leaf, f.not_before - 1), 9);
}

#[test]
fn every_certificate_up_to_the_root_needs_its_issuer_s_crl() {
    let revoking = store(&["root.crt"], Some(&["root.crl"]), 1, Purpose::SslServer);
    assert_eq!(revoking.verify(&certs(&["leaf.crt"]), now()), 23);
    let empty = store(
        &["root.crt"],
        Some(&["root-empty.crl"]),
        1,
        Purpose::SslServer,
    );
    assert_eq!(empty.verify(&certs(&["leaf.crt"]), now()), 0);
    // int's certificates have no CRL of int's.
    assert_eq!(empty.verify(&certs(&["end.crt", "int.crt"]), now()), 3);
    let both = store(
        &["root.crt"],
        Some(&["root-empty.crl", "int.crl"]),
        1,
        Purpose::SslServer,
    );
    assert_eq!(both.verify(&certs(&["end.crt", "int.crt"]), now()), 0);
    // The root's own list is wanted too (X509_V_FLAG_CRL_CHECK_ALL).
    let int_only = store(&["root.crt"], Some(&["int.crl"]), 1, Purpose::SslServer);
    assert_eq!(int_only.verify(&certs(&["end.crt", "int.crt"]), now()), 3);
}
