//! What nginx's `ngx_ssl_ocsp_verify` asks of a responder's answer before
//! stapling it, step for step with OpenSSL 3.0's functions, and their
//! failures in nginx's and OpenSSL's words:
//!
//! 1. it decodes and says `successful` (`d2i_OCSP_RESPONSE`,
//!    `OCSP_response_status`), and holds a basic response
//!    (`OCSP_response_get1_basic`);
//! 2. `OCSP_basic_verify`: the signer named by the responder id is found
//!    among the server's chain certificates, then among those the response
//!    carries, and its key verifies the signature. That is all with
//!    `ssl_stapling_verify off` (`OCSP_NOVERIFY`), and all for a signer
//!    from the server's chain with it on (`OCSP_TRUSTOTHER`). Otherwise the
//!    signer's certificate must chain to `ssl_trusted_certificate`, and the
//!    signer must be the certificate's issuer, or be issued by it with the
//!    OCSP signing usage ("root ca not trusted" otherwise: OpenSSL 3.0
//!    trusts no root for OCSP signing without auxiliary trust, which PEM
//!    `CERTIFICATE`s do not carry);
//! 3. `OCSP_resp_find_status`: it answers for this certificate;
//! 4. `OCSP_check_validity`: `thisUpdate` is not ahead of now, and
//!    `nextUpdate` not behind, by more than five minutes.
//!
//! The status itself (good, revoked) is the caller's to judge.

use rustls::pki_types::CertificateDer;

use super::CertId;
use super::response::{self, Basic, CertStatus, ResponderId, Single};
use crate::tls::x509::{self, CertFields};

/// How far `thisUpdate` may be ahead of the clock, and `nextUpdate`
/// behind it (nginx passes 300 s to `OCSP_check_validity`).
pub const VALIDITY_LEEWAY: i64 = 300;
/// The longest signer's chain followed to a trusted certificate.
const MAX_CHAIN: usize = 10;

/// What a response is checked against.
#[derive(Clone, Copy, Debug)]
pub struct Trust<'a> {
    /// The server's chain after its certificate (OpenSSL's extra chain
    /// certificates): trusted signers with `ssl_stapling_verify on`.
    pub chain: &'a [CertificateDer<'static>],
    /// `ssl_trusted_certificate`.
    pub trusted: &'a [CertificateDer<'static>],
    /// `ssl_stapling_verify` (`ssl_ocsp` always verifies).
    pub verify: bool,
    /// A signer found in `chain` is trusted without more
    /// (`OCSP_TRUSTOTHER`, which stapling sets; `ssl_ocsp` does not: its
    /// `chain` is the client's verified chain, whose signers must still
    /// chain to `trusted`).
    pub trust_other: bool,
}

/// A response that passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verified {
    /// The certificate's status.
    pub status: CertStatus,
    /// Until when it may be stapled: `nextUpdate`, or forever without one
    /// (nginx's `NGX_MAX_TIME_T_VALUE`).
    pub valid: i64,
}

/// Checks `bytes`, a responder's answer about `id`, at `now`; the error is
/// what nginx logs.
pub fn check(bytes: &[u8], id: &CertId, trust: &Trust<'_>, now: i64) -> Result<Verified, String> {
    let r = response::parse(bytes).map_err(|e| ssl_failed("d2i_OCSP_RESPONSE()", e.reason()))?;
    if r.status != response::SUCCESSFUL {
        return Err(format!(
            "OCSP response not successful ({}: {})",
            r.status,
            response::status_name(r.status)
        ));
    }
    let basic = r
        .basic()
        .map_err(|why| ssl_failed("OCSP_response_get1_basic()", Some(why)))?;
    let sent = parse_all(basic.certs.iter().copied())
        .ok_or_else(|| ssl_failed("OCSP_response_get1_basic()", Some("nested asn1 error")))?;
    basic_verify(&basic, &sent, trust, now)
        .map_err(|why| ssl_failed("OCSP_basic_verify()", Some(&why)))?;
    let single = basic
        .responses
        .iter()
        .find(|s| s.is(id))
        .ok_or("certificate status not found in the OCSP response")?;
    check_validity(single, now).map_err(|why| ssl_failed("OCSP_check_validity()", Some(why)))?;
    Ok(Verified {
        status: single.status,
        valid: single.next_update.unwrap_or(i64::MAX),
    })
}

/// `FUNC failed (SSL: why)`, or `FUNC failed` when OpenSSL says nothing.
fn ssl_failed(func: &str, why: Option<&str>) -> String {
    match why {
        Some(why) => format!("{func} failed (SSL: {why})"),
        None => format!("{func} failed"),
    }
}

/// Every certificate of `ders`, or `None` if one is not a certificate.
fn parse_all<'a>(ders: impl Iterator<Item = &'a [u8]>) -> Option<Vec<CertFields<'a>>> {
    ders.map(CertFields::parse).collect()
}

/// `OCSP_basic_verify` with `OCSP_NOVERIFY` (verify off), with
/// `OCSP_TRUSTOTHER` (stapling's verify on) or with no flag (`ssl_ocsp`);
/// the error is OpenSSL's reason.
fn basic_verify(
    b: &Basic<'_>,
    sent: &[CertFields<'_>],
    trust: &Trust<'_>,
    now: i64,
) -> Result<(), String> {
    let chain = parse_all(trust.chain.iter().map(|c| c.as_ref())).unwrap_or_default();
    let trusted = parse_all(trust.trusted.iter().map(|c| c.as_ref())).unwrap_or_default();
    let (signer, from_chain) = match find_signer(&chain, &b.responder) {
        Some(s) => (s, true),
        None => (
            find_signer(sent, &b.responder).ok_or("signer certificate not found")?,
            false,
        ),
    };
    if !x509::verify_signature(signer, b.sig_alg, b.tbs, b.signature) {
        return Err("signature failure".to_string());
    }
    if !trust.verify || (from_chain && trust.trust_other) {
        return Ok(());
    }
    let untrusted: Vec<&CertFields<'_>> = sent.iter().chain(chain.iter()).collect();
    let path = signer_path(signer, &untrusted, &trusted, now)
        .map_err(|e| format!("certificate verify error:Verify error: {e}"))?;
    match check_issuer(b, &path) {
        Issuer::Accepted => Ok(()),
        Issuer::Refused(why) => Err(why.to_string()),
        // Not the issuer's, nor a delegate's: only a root explicitly
        // trusted for OCSP signing would do (`X509_check_trust(root,
        // NID_OCSP_sign, 0)`, which in OpenSSL 3.0 reads the auxiliary
        // trust of a `TRUSTED CERTIFICATE`, and finds a plain certificate
        // untrusted, self-signed or not).
        Issuer::Unrelated => Err("root ca not trusted".to_string()),
    }
}

/// `ocsp_find_signer_sk`: the certificate the responder id names.
fn find_signer<'c, 'a>(
    certs: &'c [CertFields<'a>],
    id: &ResponderId<'_>,
) -> Option<&'c CertFields<'a>> {
    match id {
        ResponderId::ByName(name) => certs.iter().find(|c| c.subject == *name),
        ResponderId::ByKey(hash) if hash.len() == 20 => {
            certs.iter().find(|c| super::sha1(c.public_key) == **hash)
        }
        ResponderId::ByKey(_) => None,
    }
}

/// `X509_verify_cert` for the signer: its chain up to a self-signed
/// certificate of `trusted`, looking there first, then among `untrusted`;
/// each issuer a CA whose key verifies the certificate below, each within
/// its validity. The error is `X509_verify_cert_error_string`'s.
fn signer_path<'c, 'a>(
    signer: &'c CertFields<'a>,
    untrusted: &[&'c CertFields<'a>],
    trusted: &'c [CertFields<'a>],
    now: i64,
) -> Result<Vec<&'c CertFields<'a>>, &'static str> {
    let mut path = vec![signer];
    let mut top = signer;
    let mut top_trusted = trusted.iter().any(|t| t.der == signer.der);
    while !top.self_issued() {
        if path.len() > MAX_CHAIN {
            return Err("certificate chain too long");
        }
        let issuer = trusted
            .iter()
            .find(|t| t.subject == top.issuer)
            .map(|t| (t, true))
            .or_else(|| {
                untrusted
                    .iter()
                    .find(|u| u.subject == top.issuer && !path.iter().any(|p| p.der == u.der))
                    .map(|u| (*u, false))
            });
        let Some((issuer, from_store)) = issuer else {
            return Err(if top_trusted {
                "unable to get issuer certificate"
            } else {
                "unable to get local issuer certificate"
            });
        };
        path.push(issuer);
        top = issuer;
        top_trusted = from_store;
    }
    if !top_trusted {
        return Err(if path.len() == 1 {
            "self-signed certificate"
        } else {
            "self-signed certificate in certificate chain"
        });
    }
    // From the root down, as `internal_verify`.
    for i in (0..path.len()).rev() {
        let cert = path[i];
        if let Some(issuer) = path.get(i + 1) {
            if issuer.is_ca() == Some(false) {
                return Err("invalid CA certificate");
            }
            if !cert.signed_by(issuer) {
                return Err("certificate signature failure");
            }
        }
        if cert.not_before > now {
            return Err("certificate is not yet valid");
        }
        if cert.not_after < now {
            return Err("certificate has expired");
        }
    }
    Ok(path)
}

/// What `ocsp_check_issuer` makes of the signer's chain.
enum Issuer {
    /// The issuer signed, or a delegate it issued with the OCSP signing
    /// usage.
    Accepted,
    /// A fatal error.
    Refused(&'static str),
    /// Neither: the root's trust decides.
    Unrelated,
}

/// `ocsp_check_issuer`: whether the signer is the responses' issuer or
/// its delegate.
fn check_issuer(b: &Basic<'_>, path: &[&CertFields<'_>]) -> Issuer {
    let Some(first) = b.responses.first() else {
        return Issuer::Refused("response contains no revocation data");
    };
    // `ocsp_check_ids`: one issuer for all responses, or none is matched.
    if b.responses.iter().any(|s| !s.same_issuer(first)) {
        return Issuer::Unrelated;
    }
    let Some(&signer) = path.first() else {
        return Issuer::Refused("no certificates in requested chain");
    };
    if let Some(&sca) = path.get(1) {
        if is_issuer(sca, first) {
            return if signer.has_eku(x509::OID_KP_OCSP_SIGNING) {
                Issuer::Accepted
            } else {
                // `ocsp_check_delegated` fails, and the root may still
                // be trusted.
                Issuer::Unrelated
            };
        }
    }
    if is_issuer(signer, first) {
        Issuer::Accepted
    } else {
        Issuer::Unrelated
    }
}

/// `ocsp_match_issuerid`: whether `cert` is the issuer a response names.
fn is_issuer(cert: &CertFields<'_>, single: &Single<'_>) -> bool {
    single.sha1()
        && single.name_hash == super::sha1(cert.subject)
        && single.key_hash == super::sha1(cert.public_key)
}

/// `OCSP_check_validity(thisUpdate, nextUpdate, 300, -1)`.
fn check_validity(s: &Single<'_>, now: i64) -> Result<(), &'static str> {
    if s.this_update > now + VALIDITY_LEEWAY {
        return Err("status not yet valid");
    }
    if let Some(next) = s.next_update {
        if next < now - VALIDITY_LEEWAY {
            return Err("status expired");
        }
        if next < s.this_update {
            return Err("nextupdate before thisupdate");
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
