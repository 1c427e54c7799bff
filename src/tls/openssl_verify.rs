//! A chain verified as OpenSSL 3.0's `X509_verify_cert` verifies it, for
//! what webpki cannot judge: X.509 version 1 certificates (what `openssl
//! req -x509` and `openssl x509 -req` make without extensions, nginx's
//! test suite's certificates among them), version 1 CRLs, and a CA's
//! certificate presented as a peer's own, which OpenSSL takes when its
//! purpose allows.
//!
//! The steps are OpenSSL's, in its order, with nginx's verify callback
//! that lets verification go on after every error (so the result is the
//! last error met): building the chain from the peer's certificate
//! through the trusted store first, then the peer's other certificates,
//! at most `depth` intermediates (`build_chain`); the CA and purpose of
//! each certificate (`check_extensions`); the CRLs of every certificate up
//! to the root (`X509_V_FLAG_CRL_CHECK_ALL`, `check_revocation`); then the
//! signatures and times from the root down (`internal_verify`). Not done:
//! path length and name constraints, policies, AKID matching (webpki
//! judges the version 3 chains that have them).
//!
//! What this module must not do: read a file or wait.

use rustls::pki_types::CertificateDer;

use super::crl::Crl;
use super::x509::{CertFields, KU_CRL_SIGN};

/// `id-kp-serverAuth` (1.3.6.1.5.5.7.3.1).
const OID_SERVER_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01];
/// `id-kp-clientAuth` (1.3.6.1.5.5.7.3.2).
const OID_CLIENT_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02];
/// `digitalSignature`, `keyEncipherment` and `keyAgreement` in a key
/// usage's first byte.
const KU_DIGITAL_SIGNATURE: u8 = 0x80;
const KU_KEY_ENCIPHERMENT: u8 = 0x20;
const KU_KEY_AGREEMENT: u8 = 0x08;

/// `X509_V_ERR_*` codes this verifier reports.
pub mod code {
    pub const UNABLE_TO_GET_ISSUER_CERT: u32 = 2;
    pub const UNABLE_TO_GET_CRL: u32 = 3;
    pub const CERT_SIGNATURE_FAILURE: u32 = 7;
    pub const CRL_SIGNATURE_FAILURE: u32 = 8;
    pub const CERT_NOT_YET_VALID: u32 = 9;
    pub const CERT_HAS_EXPIRED: u32 = 10;
    pub const CRL_NOT_YET_VALID: u32 = 11;
    pub const CRL_HAS_EXPIRED: u32 = 12;
    pub const DEPTH_ZERO_SELF_SIGNED_CERT: u32 = 18;
    pub const SELF_SIGNED_CERT_IN_CHAIN: u32 = 19;
    pub const UNABLE_TO_GET_ISSUER_CERT_LOCALLY: u32 = 20;
    pub const UNABLE_TO_VERIFY_LEAF_SIGNATURE: u32 = 21;
    pub const CERT_CHAIN_TOO_LONG: u32 = 22;
    pub const CERT_REVOKED: u32 = 23;
    pub const INVALID_CA: u32 = 24;
    pub const INVALID_PURPOSE: u32 = 26;
    pub const UNABLE_TO_GET_CRL_ISSUER: u32 = 33;
    pub const KEYUSAGE_NO_CRL_SIGN: u32 = 35;
}

/// What the peer's certificate must be good for (`X509_STORE_CTX_set_default`
/// as libssl sets it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// A client's certificate, judged by a server (`"ssl_client"`).
    SslClient,
    /// A server's certificate, judged by a client (`"ssl_server"`).
    SslServer,
}

/// The trusted certificates, CRLs, depth and purpose of one verification
/// (OpenSSL's `X509_STORE` and `X509_VERIFY_PARAM`).
#[derive(Debug)]
pub struct Store {
    /// The trusted certificates' DER.
    pub trusted: Vec<Vec<u8>>,
    /// The CRLs; `None` checks no revocation.
    pub crls: Option<Vec<Crl>>,
    /// The verify depth: how many intermediate certificates a chain may
    /// have.
    pub depth: u64,
    /// What the peer's certificate is for.
    pub purpose: Purpose,
}

/// One certificate of the chain being built.
#[derive(Clone)]
struct Link<'a> {
    cert: CertFields<'a>,
    /// Whether it came from the trusted store.
    trusted: bool,
}

impl Store {
    /// The verify result for `chain` (the peer's certificate first) at
    /// `now` (seconds since the epoch): 0 (`X509_V_OK`) or the last
    /// `X509_V_ERR_*` met.
    pub fn verify(&self, chain: &[CertificateDer<'_>], now: i64) -> u32 {
        let Some(leaf) = chain.first().and_then(|c| CertFields::parse(c)) else {
            return 1;
        };
        let untrusted: Vec<CertFields<'_>> = chain[1..]
            .iter()
            .filter_map(|c| CertFields::parse(c))
            .collect();
        let trusted: Vec<CertFields<'_>> = self
            .trusted
            .iter()
            .filter_map(|c| CertFields::parse(c))
            .collect();
        let mut error = 0;
        let path = self.build(leaf, &untrusted, &trusted, now, &mut error);
        self.check_extensions(&path, &mut error);
        if let Some(crls) = &self.crls {
            check_revocation(&path, crls, now, &mut error);
        }
        internal_verify(&path, now, &mut error);
        error
    }

    /// OpenSSL's `build_chain` with `X509_V_FLAG_TRUSTED_FIRST`: an
    /// issuer from the trusted store when there is one, else from the
    /// peer's certificates, until a trusted self-signed certificate ends
    /// the chain or `depth` is reached; what stopped it short is an error.
    fn build<'a>(
        &self,
        leaf: CertFields<'a>,
        untrusted: &[CertFields<'a>],
        trusted: &[CertFields<'a>],
        now: i64,
        error: &mut u32,
    ) -> Vec<Link<'a>> {
        let max_depth = usize::try_from(self.depth)
            .unwrap_or(usize::MAX / 2)
            .min(usize::MAX / 2)
            + 1;
        let mut chain = vec![Link {
            cert: leaf,
            trusted: false,
        }];
        let mut used = vec![false; untrusted.len()];
        let mut search_untrusted = true;
        let mut is_trusted = false;
        loop {
            let num = chain.len();
            let curr = chain[num - 1].cert.clone();
            let found = if num > max_depth {
                None
            } else {
                best_issuer(trusted.iter().enumerate(), &curr, now)
            };
            if let Some(i) = found {
                let issuer = trusted[i].clone();
                let mut ok = true;
                if !curr.self_signed() {
                    chain.push(Link {
                        cert: issuer,
                        trusted: true,
                    });
                } else if curr.der != issuer.der {
                    // A self-signed mimic of a trusted certificate.
                    ok = false;
                } else {
                    chain[num - 1].trusted = true;
                }
                if ok {
                    search_untrusted = false;
                    is_trusted = trusted_top(&chain);
                    if is_trusted {
                        break;
                    }
                    if !chain[chain.len() - 1].cert.self_signed() {
                        continue;
                    }
                }
            }
            if !search_untrusted {
                break;
            }
            let found = if curr.self_signed() || num > max_depth {
                None
            } else {
                let in_chain = |c: &CertFields<'_>| chain.iter().any(|l| l.cert.der == c.der);
                best_issuer(
                    untrusted
                        .iter()
                        .enumerate()
                        .filter(|(i, c)| !used[*i] && !in_chain(c)),
                    &curr,
                    now,
                )
            };
            match found {
                Some(i) => {
                    used[i] = true;
                    chain.push(Link {
                        cert: untrusted[i].clone(),
                        trusted: false,
                    });
                }
                None => search_untrusted = false,
            }
        }
        if !is_trusted {
            let num = chain.len();
            let top = &chain[num - 1];
            *error = if num > max_depth {
                code::CERT_CHAIN_TOO_LONG
            } else if top.cert.self_signed() {
                if num == 1 {
                    code::DEPTH_ZERO_SELF_SIGNED_CERT
                } else {
                    code::SELF_SIGNED_CERT_IN_CHAIN
                }
            } else if top.trusted {
                code::UNABLE_TO_GET_ISSUER_CERT
            } else {
                code::UNABLE_TO_GET_ISSUER_CERT_LOCALLY
            };
        }
        chain
    }

    /// OpenSSL's `check_extensions` and `check_purpose`: every
    /// certificate above the peer's must be a CA (a version 1 root counts
    /// at the top), and each must suit the purpose.
    fn check_extensions(&self, chain: &[Link<'_>], error: &mut u32) {
        let num = chain.len();
        for (i, link) in chain.iter().enumerate() {
            let ca = check_ca(&link.cert);
            if i > 0 && (ca == 0 || (i + 1 < num && ca != 1)) {
                *error = code::INVALID_CA;
            }
            let fits = if i == 0 {
                leaf_purpose(&link.cert, self.purpose)
            } else {
                ca_purpose(&link.cert, self.purpose)
            };
            if !fits {
                *error = code::INVALID_PURPOSE;
            }
        }
    }
}

/// The first of `candidates` that issued `cert` by name and is valid at
/// `now`, else the one of them expiring last (`get0_best_issuer_sk`,
/// `X509_STORE_CTX_get1_issuer`).
fn best_issuer<'a, 'b>(
    candidates: impl Iterator<Item = (usize, &'b CertFields<'a>)>,
    cert: &CertFields<'_>,
    now: i64,
) -> Option<usize>
where
    'a: 'b,
{
    let mut best: Option<(usize, i64)> = None;
    for (i, c) in candidates {
        if c.subject != cert.issuer {
            continue;
        }
        if c.not_before <= now && now <= c.not_after {
            return Some(i);
        }
        if best.is_none_or(|(_, after)| c.not_after > after) {
            best = Some((i, c.not_after));
        }
    }
    best.map(|(i, _)| i)
}

/// `check_trust` without aux trust settings: the chain is trusted when a
/// certificate from the store in it is self-signed (`trust_compat`).
fn trusted_top(chain: &[Link<'_>]) -> bool {
    chain.iter().any(|l| l.trusted && l.cert.self_signed())
}

/// `X509_check_ca`: 1 for a CA by basic constraints, 3 for a version 1
/// self-signed root, 4 for a key allowed to sign certificates without
/// basic constraints, 0 for none of these.
fn check_ca(c: &CertFields<'_>) -> u8 {
    use super::x509::KU_KEY_CERT_SIGN;
    if c.key_usage().is_some_and(|ku| ku & KU_KEY_CERT_SIGN == 0) {
        return 0;
    }
    match c.is_ca() {
        Some(true) => 1,
        Some(false) => 0,
        None if c.version == 0 && c.self_signed() => 3,
        None if c.key_usage().is_some() => 4,
        None => 0,
    }
}

/// `check_purpose_ssl_client` / `_server` for the peer's certificate:
/// the extended key usage and the key usage allow it.
fn leaf_purpose(c: &CertFields<'_>, purpose: Purpose) -> bool {
    let (eku, ku_mask) = match purpose {
        Purpose::SslClient => (OID_CLIENT_AUTH, KU_DIGITAL_SIGNATURE | KU_KEY_AGREEMENT),
        Purpose::SslServer => (
            OID_SERVER_AUTH,
            KU_DIGITAL_SIGNATURE | KU_KEY_ENCIPHERMENT | KU_KEY_AGREEMENT,
        ),
    };
    c.eku_allows(eku) && c.key_usage().is_none_or(|ku| ku & ku_mask != 0)
}

/// The same for a CA of the chain (`check_ssl_ca`): the extended key
/// usage allows the purpose and it is a CA.
fn ca_purpose(c: &CertFields<'_>, purpose: Purpose) -> bool {
    let eku = match purpose {
        Purpose::SslClient => OID_CLIENT_AUTH,
        Purpose::SslServer => OID_SERVER_AUTH,
    };
    c.eku_allows(eku) && check_ca(c) != 0
}

/// OpenSSL's `check_revocation` with `X509_V_FLAG_CRL_CHECK_ALL`: every
/// certificate of the chain, the root's too, needs a CRL of its issuer,
/// valid, signed by that issuer, and not listing it.
fn check_revocation(chain: &[Link<'_>], crls: &[Crl], now: i64, error: &mut u32) {
    let num = chain.len();
    for (i, link) in chain.iter().enumerate() {
        let x = &link.cert;
        // The CRL's issuer is the next certificate up, or the top one
        // itself when it issued itself.
        let up = &chain[(i + 1).min(num - 1)].cert;
        let time_ok =
            |c: &Crl| c.this_update <= now && c.next_update.is_none_or(|next| now <= next);
        let score = |c: &Crl| (time_ok(c) as u8) * 2 + (c.issuer == up.subject) as u8;
        let mut best: Option<&Crl> = None;
        for c in crls.iter().filter(|c| c.issuer == x.issuer) {
            best = match best {
                Some(b)
                    if score(b) > score(c)
                        || (score(b) == score(c) && b.this_update >= c.this_update) =>
                {
                    Some(b)
                }
                _ => Some(c),
            };
        }
        let Some(crl) = best else {
            *error = code::UNABLE_TO_GET_CRL;
            continue;
        };
        let issuer = if i + 1 < num || x.self_issued() {
            Some(up)
        } else {
            *error = code::UNABLE_TO_GET_CRL_ISSUER;
            None
        };
        if let Some(issuer) = issuer {
            if issuer.key_usage().is_some_and(|ku| ku & KU_CRL_SIGN == 0) {
                *error = code::KEYUSAGE_NO_CRL_SIGN;
            }
        }
        if crl.this_update > now {
            *error = code::CRL_NOT_YET_VALID;
        } else if crl.next_update.is_some_and(|next| next < now) {
            *error = code::CRL_HAS_EXPIRED;
        }
        if let Some(issuer) = issuer {
            if !crl.signed_by(issuer) {
                *error = code::CRL_SIGNATURE_FAILURE;
            }
        }
        if crl.revokes(x.serial) {
            *error = code::CERT_REVOKED;
        }
    }
}

/// OpenSSL's `internal_verify`: from the top down, each certificate's
/// signature by the one above (a self-issued top's own is not checked)
/// and its validity times; a lone certificate whose issuer is unknown
/// cannot have its signature checked.
fn internal_verify(chain: &[Link<'_>], now: i64, error: &mut u32) {
    let mut n = chain.len() - 1;
    let mut xi = n;
    let mut xs = n;
    if !chain[n].cert.self_issued() {
        if n == 0 {
            *error = code::UNABLE_TO_VERIFY_LEAF_SIGNATURE;
        } else {
            n -= 1;
            xs = n;
        }
    }
    loop {
        if xs != xi && !chain[xs].cert.signed_by(&chain[xi].cert) {
            *error = code::CERT_SIGNATURE_FAILURE;
        }
        let c = &chain[xs].cert;
        if c.not_before > now {
            *error = code::CERT_NOT_YET_VALID;
        } else if c.not_after <= now {
            *error = code::CERT_HAS_EXPIRED;
        }
        if n == 0 {
            break;
        }
        n -= 1;
        xi = xs;
        xs = n;
    }
}

#[cfg(test)]
mod tests;
