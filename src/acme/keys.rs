//! Keys the ACME client makes and uses: the account key that signs its
//! requests (JWS, RFC 7515/7518) and the certificate keys it generates
//! (nginx-acme's `ecdsa:256` default, `ecdsa:384`, `ecdsa:521`,
//! `rsa:2048` … `rsa:4096`), with aws-lc-rs, the provider rustls already
//! builds with. Keys are kept as PKCS#8 PEM, as nginx-acme writes them.

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self, EcdsaKeyPair, EcdsaSigningAlgorithm, KeyPair as _, RsaKeyPair};

use crate::config::acme_model::KeyKind;

/// A private key able to sign.
pub enum Key {
    /// ECDSA: the key for fixed-size signatures (JWS's `r || s`) and the
    /// same key for DER signatures (a CSR's).
    Ecdsa {
        /// 256, 384 or 521.
        bits: u32,
        /// Signs as JWS wants.
        fixed: EcdsaKeyPair,
        /// Signs as X.509 wants.
        asn1: EcdsaKeyPair,
    },
    /// RSA, signing with PKCS#1 v1.5 and SHA-256 (RS256).
    Rsa(RsaKeyPair),
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Key::Ecdsa { bits, .. } => write!(f, "Key::Ecdsa({bits})"),
            Key::Rsa(_) => f.write_str("Key::Rsa"),
        }
    }
}

fn ec_algs(
    bits: u32,
) -> Option<(
    &'static EcdsaSigningAlgorithm,
    &'static EcdsaSigningAlgorithm,
)> {
    Some(match bits {
        256 => (
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
        ),
        384 => (
            &signature::ECDSA_P384_SHA384_FIXED_SIGNING,
            &signature::ECDSA_P384_SHA384_ASN1_SIGNING,
        ),
        521 => (
            &signature::ECDSA_P521_SHA512_FIXED_SIGNING,
            &signature::ECDSA_P521_SHA512_ASN1_SIGNING,
        ),
        _ => return None,
    })
}

/// The signature algorithms' OIDs (DER content).
const OID_ECDSA_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
const OID_ECDSA_SHA384: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03];
const OID_ECDSA_SHA512: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x04];
const OID_SHA256_WITH_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b];

impl Key {
    /// A new key of `kind`; the error says what failed.
    pub fn generate(kind: KeyKind) -> Result<Key, String> {
        let fail = |_| "key generation error".to_string();
        match kind {
            KeyKind::Ecdsa(bits) => {
                let (fixed, _) = ec_algs(bits).ok_or("cannot generate this key")?;
                let k = EcdsaKeyPair::generate(fixed).map_err(fail)?;
                let der = k.to_pkcs8v1().map_err(fail)?;
                Key::from_pkcs8(der.as_ref())
            }
            KeyKind::Rsa(bits) => {
                let size = match bits {
                    2048 => aws_lc_rs::rsa::KeySize::Rsa2048,
                    3072 => aws_lc_rs::rsa::KeySize::Rsa3072,
                    4096 => aws_lc_rs::rsa::KeySize::Rsa4096,
                    _ => return Err("cannot generate this key".to_string()),
                };
                Ok(Key::Rsa(RsaKeyPair::generate(size).map_err(fail)?))
            }
        }
    }

    /// The key in a PKCS#8 DER document (ECDSA on P-256/384/521 or RSA).
    pub fn from_pkcs8(der: &[u8]) -> Result<Key, String> {
        for bits in [256, 384, 521] {
            let Some((fixed, asn1)) = ec_algs(bits) else {
                continue;
            };
            if let Ok(f) = EcdsaKeyPair::from_pkcs8(fixed, der) {
                let a = EcdsaKeyPair::from_pkcs8(asn1, der).map_err(|e| e.to_string())?;
                return Ok(Key::Ecdsa {
                    bits,
                    fixed: f,
                    asn1: a,
                });
            }
        }
        RsaKeyPair::from_pkcs8(der)
            .map(Key::Rsa)
            .map_err(|e| format!("unsupported key ({e})"))
    }

    /// The key in PEM (PKCS#8, SEC1 EC or PKCS#1 RSA), as an account key
    /// file may hold it.
    pub fn from_pem(pem: &[u8], path: &std::path::Path) -> Result<Key, String> {
        use rustls::pki_types::PrivateKeyDer;
        match crate::tls::material::key(pem, path, None)? {
            PrivateKeyDer::Pkcs8(d) => Key::from_pkcs8(d.secret_pkcs8_der()),
            PrivateKeyDer::Pkcs1(d) => RsaKeyPair::from_der(d.secret_pkcs1_der())
                .map(Key::Rsa)
                .map_err(|e| e.to_string()),
            PrivateKeyDer::Sec1(d) => {
                for bits in [256, 384, 521] {
                    let Some((fixed, asn1)) = ec_algs(bits) else {
                        continue;
                    };
                    let der = d.secret_sec1_der();
                    if let (Ok(f), Ok(a)) = (
                        EcdsaKeyPair::from_private_key_der(fixed, der),
                        EcdsaKeyPair::from_private_key_der(asn1, der),
                    ) {
                        return Ok(Key::Ecdsa {
                            bits,
                            fixed: f,
                            asn1: a,
                        });
                    }
                }
                Err("unsupported curve".to_string())
            }
            _ => Err("unsupported key".to_string()),
        }
    }

    /// PKCS#8 DER.
    pub fn pkcs8(&self) -> Result<Vec<u8>, String> {
        let fail = |_| "cannot encode the key".to_string();
        match self {
            Key::Ecdsa { fixed, .. } => Ok(fixed.to_pkcs8v1().map_err(fail)?.as_ref().to_vec()),
            Key::Rsa(k) => {
                let der: aws_lc_rs::encoding::Pkcs8V1Der<'_> = k.as_der().map_err(fail)?;
                Ok(der.as_ref().to_vec())
            }
        }
    }

    /// PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    pub fn pem(&self) -> Result<Vec<u8>, String> {
        Ok(pem("PRIVATE KEY", &self.pkcs8()?).into_bytes())
    }

    /// The JWS `alg` of this key.
    pub fn jws_alg(&self) -> &'static str {
        match self {
            Key::Ecdsa { bits: 256, .. } => "ES256",
            Key::Ecdsa { bits: 384, .. } => "ES384",
            Key::Ecdsa { .. } => "ES512",
            Key::Rsa(_) => "RS256",
        }
    }

    /// The public key as a JWK (RFC 7517), its members in the order RFC
    /// 7638's thumbprint needs (lexicographic), without spaces.
    pub fn jwk(&self) -> String {
        match self {
            Key::Ecdsa { bits, fixed, .. } => {
                // The uncompressed point: 0x04 || x || y.
                let point = fixed.public_key().as_ref();
                let half = (point.len() - 1) / 2;
                let crv = match bits {
                    256 => "P-256",
                    384 => "P-384",
                    _ => "P-521",
                };
                format!(
                    r#"{{"crv":"{crv}","kty":"EC","x":"{}","y":"{}"}}"#,
                    b64url(&point[1..1 + half]),
                    b64url(&point[1 + half..])
                )
            }
            Key::Rsa(k) => {
                // RSAPublicKey ::= SEQUENCE { modulus INTEGER,
                // publicExponent INTEGER } (RFC 8017 A.1.1).
                let der = k.public_key().as_ref();
                let mut seq = crate::tls::der::Reader::new(der)
                    .nested(0x30)
                    .unwrap_or_else(|| crate::tls::der::Reader::new(&[]));
                let strip = |b: &[u8]| {
                    let zeros = b.iter().take_while(|&&x| x == 0).count();
                    b64url(&b[zeros.min(b.len().saturating_sub(1))..])
                };
                let n = seq.read(0x02).map(|t| strip(t.content)).unwrap_or_default();
                let e = seq.read(0x02).map(|t| strip(t.content)).unwrap_or_default();
                format!(r#"{{"e":"{e}","kty":"RSA","n":"{n}"}}"#)
            }
        }
    }

    /// RFC 7638's thumbprint: base64url(SHA-256(JWK)).
    pub fn thumbprint(&self) -> String {
        let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, self.jwk().as_bytes());
        b64url(d.as_ref())
    }

    /// A JWS signature of `msg` (ECDSA's fixed `r || s`, or RSA's).
    pub fn sign_jws(&self, msg: &[u8]) -> Result<Vec<u8>, String> {
        let rng = SystemRandom::new();
        match self {
            Key::Ecdsa { fixed, .. } => fixed
                .sign(&rng, msg)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| "cannot sign request body".to_string()),
            Key::Rsa(k) => rsa_sign(k, msg),
        }
    }

    /// An X.509 signature of `msg` with its AlgorithmIdentifier (DER).
    pub fn sign_x509(&self, msg: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
        use crate::tls::der::item;
        let rng = SystemRandom::new();
        match self {
            Key::Ecdsa { bits, asn1, .. } => {
                let oid = match bits {
                    256 => OID_ECDSA_SHA256,
                    384 => OID_ECDSA_SHA384,
                    _ => OID_ECDSA_SHA512,
                };
                let sig = asn1
                    .sign(&rng, msg)
                    .map_err(|_| "cannot sign the request".to_string())?;
                Ok((item(0x30, &item(0x06, oid)), sig.as_ref().to_vec()))
            }
            Key::Rsa(k) => {
                let alg = [item(0x06, OID_SHA256_WITH_RSA), vec![0x05, 0x00]].concat();
                Ok((item(0x30, &alg), rsa_sign(k, msg)?))
            }
        }
    }

    /// The SubjectPublicKeyInfo (DER).
    pub fn spki(&self) -> Result<Vec<u8>, String> {
        let fail = |_| "cannot encode the public key".to_string();
        match self {
            Key::Ecdsa { fixed, .. } => {
                let der: aws_lc_rs::encoding::PublicKeyX509Der<'_> =
                    fixed.public_key().as_der().map_err(fail)?;
                Ok(der.as_ref().to_vec())
            }
            Key::Rsa(k) => {
                let der: aws_lc_rs::encoding::PublicKeyX509Der<'_> =
                    k.public_key().as_der().map_err(fail)?;
                Ok(der.as_ref().to_vec())
            }
        }
    }
}

fn rsa_sign(k: &RsaKeyPair, msg: &[u8]) -> Result<Vec<u8>, String> {
    let mut sig = vec![0u8; k.public_modulus_len()];
    k.sign(
        &signature::RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        msg,
        &mut sig,
    )
    .map_err(|_| "cannot sign request body".to_string())?;
    Ok(sig)
}

/// base64url without padding (RFC 7515 §2).
pub fn b64url(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

/// A PEM section of `der`, 64 characters a line.
pub fn pem(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_survives_its_pem() {
        for kind in [
            KeyKind::Ecdsa(256),
            KeyKind::Ecdsa(384),
            KeyKind::Ecdsa(521),
        ] {
            let k = Key::generate(kind).unwrap();
            let pem = k.pem().unwrap();
            let again = Key::from_pem(&pem, std::path::Path::new("k.pem")).unwrap();
            assert_eq!(k.jwk(), again.jwk());
            assert!(k.jwk().starts_with(r#"{"crv":"P-"#));
        }
        let spki = Key::generate(KeyKind::Ecdsa(256)).unwrap().spki().unwrap();
        let mut r = crate::tls::der::Reader::new(&spki);
        let mut seq = r.nested(0x30).unwrap();
        let mut alg = seq.nested(0x30).unwrap();
        // id-ecPublicKey
        assert_eq!(
            alg.read(0x06).unwrap().content,
            [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01]
        );
    }

    #[test]
    fn rfc7638_thumbprint() {
        // RFC 7638 §3.1's example key.
        let jwk = r#"{"e":"AQAB","kty":"RSA","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"}"#;
        let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, jwk.as_bytes());
        assert_eq!(
            b64url(d.as_ref()),
            "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
        );
    }
}
