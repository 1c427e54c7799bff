//! Certificates and keys from PEM bytes, checked as nginx checks them when
//! it loads them (`ngx_ssl_certificate`): a chain with at least one
//! certificate, a private key the crypto provider can sign with, and a key
//! that belongs to the certificate. Each failure is said in nginx's words,
//! naming the file.

use std::path::Path;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;

use super::{encrypted, openssl_text};

/// One `ssl_certificate` with its `ssl_certificate_key`, ready to serve.
#[derive(Clone, Debug)]
pub struct Pair {
    /// The chain and the signing key.
    pub key: Arc<CertifiedKey>,
    /// When the end-entity certificate stops being valid (seconds since
    /// the epoch), for the warning at start and the metrics; `None` when
    /// it could not be read.
    pub not_after: Option<i64>,
    /// The certificate's file, for the metrics and messages.
    pub path: std::path::PathBuf,
}

/// The chain in a PEM file: every `CERTIFICATE` section, in order (the
/// server's own first, then the intermediates), as nginx reads it with
/// `PEM_read_bio_X509_AUX` and `PEM_read_bio_X509`.
pub fn chain(pem_bytes: &[u8], path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let mut out = Vec::new();
    for item in CertificateDer::pem_slice_iter(pem_bytes) {
        match item {
            Ok(c) => out.push(c),
            Err(e) => {
                return Err(openssl_text::line(
                    &format!(
                        "cannot load certificate \"{}\": PEM_read_bio_X509_AUX() failed",
                        path.display()
                    ),
                    &[(pem_error(&e), None)],
                ));
            }
        }
    }
    if out.is_empty() {
        return Err(openssl_text::line(
            &format!(
                "cannot load certificate \"{}\": PEM_read_bio_X509_AUX() failed",
                path.display()
            ),
            &openssl_text::no_start_line("TRUSTED CERTIFICATE"),
        ));
    }
    Ok(out)
}

/// The private key in a PEM file (PKCS#8, PKCS#1 RSA or SEC1 EC), an
/// encrypted one opened with the first of `passwords` that fits
/// (`ssl_password_file`; `None`: no file).
pub fn key(
    pem_bytes: &[u8],
    path: &Path,
    passwords: Option<&[Vec<u8>]>,
) -> Result<PrivateKeyDer<'static>, String> {
    let fail = |queue: &[openssl_text::Entry]| {
        openssl_text::line(
            &format!(
                "cannot load certificate key \"{}\": PEM_read_bio_PrivateKey() failed",
                path.display()
            ),
            queue,
        )
    };
    if encrypted::is_encrypted(pem_bytes) {
        let pkcs8 = pem_bytes
            .windows(ENCRYPTED_PKCS8.len())
            .any(|w| w == ENCRYPTED_PKCS8);
        return encrypted::decrypt(pem_bytes, passwords.unwrap_or_default())
            .map_err(|f| fail(&[(decrypt_error(&f, pkcs8), None)]));
    }
    match PrivateKeyDer::from_pem_slice(pem_bytes) {
        Ok(k) => Ok(k),
        // OpenSSL 3.0's decoders find nothing they can read.
        Err(pem::Error::NoItemsFound) => Err(fail(&[(
            openssl_text::DECODER_UNSUPPORTED.to_string(),
            Some(openssl_text::NO_DATA_TO_DECODE.to_string()),
        )])),
        Err(e) => Err(fail(&[(pem_error(&e), None)])),
    }
}

/// Whether a PEM key is encrypted (PKCS#8 `ENCRYPTED PRIVATE KEY`, or
/// OpenSSL's traditional `Proc-Type: 4,ENCRYPTED` header).
pub fn encrypted(pem_bytes: &[u8]) -> bool {
    encrypted::is_encrypted(pem_bytes)
}

/// The PEM label of an encrypted PKCS#8 key.
const ENCRYPTED_PKCS8: &[u8] = b"-----BEGIN ENCRYPTED PRIVATE KEY-----";

/// OpenSSL 3.0's error queue for a key no passphrase opened, as nginx
/// prints it.
fn decrypt_error(f: &encrypted::Failure, pkcs8: bool) -> String {
    const NO_PASSWORD: &str = "error:1400006B:UI routines::processing error:while reading strings error:0480006D:PEM routines::problems getting password error:07880109:common libcrypto routines::interrupted or cancelled";
    match f {
        encrypted::Failure::NoPassphrase if pkcs8 => format!(
            "{NO_PASSWORD} error:07880109:common libcrypto routines::interrupted or cancelled error:1C80009F:Provider routines::unable to get passphrase {NO_PASSWORD} error:04800068:PEM routines::bad password read"
        ),
        encrypted::Failure::NoPassphrase => format!(
            "{NO_PASSWORD} error:07880109:common libcrypto routines::interrupted or cancelled error:04800068:PEM routines::bad password read"
        ),
        encrypted::Failure::BadDecrypt { pkcs8: true, empty } => {
            let why = if *empty {
                "empty password"
            } else {
                "maybe wrong password"
            };
            let one = format!(
                "error:1C800064:Provider routines::bad decrypt error:11800074:PKCS12 routines::pkcs12 cipherfinal error:{why}"
            );
            format!("{one} {one}")
        }
        encrypted::Failure::BadDecrypt { .. } => {
            "error:1C800064:Provider routines::bad decrypt error:04800065:PEM routines::bad decrypt"
                .to_string()
        }
        encrypted::Failure::Unsupported(why) => {
            format!("nowait cannot decrypt the key: {why}")
        }
    }
}

/// A pair from the certificate's and the key's PEM bytes: the provider
/// must be able to sign with the key, and the key must be the
/// certificate's (`SSL_CTX_use_PrivateKey`'s "key values mismatch").
pub fn pair(
    provider: &CryptoProvider,
    cert_pem: &[u8],
    cert_path: &Path,
    key_pem: &[u8],
    key_path: &Path,
    passwords: Option<&[Vec<u8>]>,
) -> Result<Pair, String> {
    let certs = chain(cert_pem, cert_path)?;
    let der = key(key_pem, key_path, passwords)?;
    let signing = provider.key_provider.load_private_key(der).map_err(|e| {
        format!(
            "SSL_CTX_use_PrivateKey(\"{}\") failed (SSL: {e})",
            key_path.display()
        )
    })?;
    let not_after = not_after(&certs[0]);
    // The key must be the certificate's. Compared here on the certificate's
    // SubjectPublicKeyInfo rather than with `CertifiedKey::keys_match`,
    // which parses the certificate with webpki and so refuses what OpenSSL
    // serves: X.509 v1 certificates (`openssl req -x509` without
    // extensions makes them; nginx's own test suite does).
    let Some(cert_spki) = spki(&certs[0]) else {
        return Err(format!(
            "cannot load certificate \"{}\": PEM_read_bio_X509_AUX() failed (SSL: the certificate cannot be read: its DER is malformed)",
            cert_path.display()
        ));
    };
    if signing
        .public_key()
        .is_some_and(|k| k.as_ref() != cert_spki)
    {
        return Err(openssl_text::line(
            &format!("SSL_CTX_use_PrivateKey(\"{}\") failed", key_path.display()),
            &[(openssl_text::KEY_VALUES_MISMATCH.to_string(), None)],
        ));
    }
    let key = CertifiedKey::new(certs, signing);
    Ok(Pair {
        key: Arc::new(key),
        not_after,
        path: cert_path.to_path_buf(),
    })
}

/// The OpenSSL security level's least finite-field group (level 2:
/// 112-bit security, a 2048-bit prime), below which OpenSSL refuses
/// `ssl_dhparam`'s parameters.
const MIN_DH_BITS: usize = 2048;

/// `ssl_dhparam`'s file checked as nginx 1.22 loads it
/// (`PEM_read_bio_DHparams`, then `SSL_CTX_set_tmp_dh`): a `DH
/// PARAMETERS` section whose prime is at least [`MIN_DH_BITS`] long. The
/// parameters themselves are not used (rustls has no finite-field DHE).
pub fn dhparam(pem_bytes: &[u8], path: &Path) -> Result<(), String> {
    let text = String::from_utf8_lossy(pem_bytes);
    let body = ["DH PARAMETERS", "X9.42 DH PARAMETERS"]
        .iter()
        .find_map(|kind| {
            let begin = format!("-----BEGIN {kind}-----");
            let end = format!("-----END {kind}-----");
            let start = text.find(&begin)? + begin.len();
            let stop = text[start..].find(&end)? + start;
            Some(text[start..stop].split_whitespace().collect::<String>())
        });
    let Some(body) = body else {
        return Err(openssl_text::line(
            &format!("PEM_read_bio_DHparams(\"{}\") failed", path.display()),
            &openssl_text::no_start_line("DH PARAMETERS"),
        ));
    };
    use base64::Engine as _;
    let bits = base64::engine::general_purpose::STANDARD
        .decode(body.as_bytes())
        .ok()
        .and_then(|der| prime_bits(&der));
    match bits {
        None => Err(openssl_text::line(
            &format!("PEM_read_bio_DHparams(\"{}\") failed", path.display()),
            &[(openssl_text::PEM_BAD_BASE64.to_string(), None)],
        )),
        Some(n) if n < MIN_DH_BITS => Err(openssl_text::line(
            &format!("SSL_CTX_set_tmp_dh(\"{}\") failed", path.display()),
            &[(openssl_text::DH_KEY_TOO_SMALL.to_string(), None)],
        )),
        Some(_) => Ok(()),
    }
}

/// The bit length of the prime of DER `DHParameter` (`SEQUENCE { prime
/// INTEGER, base INTEGER, … }`).
fn prime_bits(der: &[u8]) -> Option<usize> {
    let params = super::der::Reader::new(der).read(super::der::SEQUENCE)?;
    let prime = super::der::Reader::new(params.content)
        .read(super::der::INTEGER)?
        .content;
    let digits = match prime.iter().position(|&b| b != 0) {
        Some(i) => &prime[i..],
        None => return Some(0),
    };
    Some(digits.len() * 8 - digits[0].leading_zeros() as usize)
}

/// What a PEM parse error says, as OpenSSL would put it.
fn pem_error(e: &pem::Error) -> String {
    match e {
        pem::Error::MissingSectionEnd { .. } => openssl_text::PEM_BAD_END_LINE.to_string(),
        pem::Error::IllegalSectionStart { .. } | pem::Error::Base64Decode(_) => {
            openssl_text::PEM_BAD_BASE64.to_string()
        }
        other => other.to_string(),
    }
}

/// The `notAfter` of a DER certificate, in seconds since the epoch.
pub fn not_after(cert: &CertificateDer<'_>) -> Option<i64> {
    super::x509::CertFields::parse(cert.as_ref()).map(|c| c.not_after)
}

/// The DER `SubjectPublicKeyInfo` of a certificate (tag, length and
/// content), of any version: X.509 v1 has no `[0]` version field.
pub fn spki<'a>(cert: &'a CertificateDer<'_>) -> Option<&'a [u8]> {
    super::x509::CertFields::parse(cert.as_ref()).map(|c| c.spki)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: an X.509 v1 certificate (`openssl req -x509` with no
    /// extensions, as nginx's test suite makes them) was refused with
    /// "UnsupportedCertVersion": its key was matched through webpki's
    /// parser, which takes v3 only. OpenSSL serves v1 certificates.
    #[test]
    fn a_v1_certificate_is_served_with_its_key() {
        let provider = crate::tls::provider();
        let cert = include_bytes!("testdata/v1.crt");
        let key = include_bytes!("testdata/v1.key");
        let p = pair(
            &provider,
            cert,
            Path::new("/v1.crt"),
            key,
            Path::new("/v1.key"),
            None,
        );
        assert!(p.is_ok(), "{:?}", p.err());
        let other = include_bytes!("../../tests/tls/other.key");
        let e = pair(
            &provider,
            cert,
            Path::new("/v1.crt"),
            other,
            Path::new("/o.key"),
            None,
        )
        .unwrap_err();
        assert_eq!(
            e,
            "SSL_CTX_use_PrivateKey(\"/o.key\") failed (SSL: error:05800074:x509 certificate routines::key values mismatch)"
        );
    }

    #[test]
    fn dh_parameters_are_read_and_their_size_checked_as_openssl_does() {
        // `openssl dhparam 512`, small enough to refuse.
        let small = b"-----BEGIN DH PARAMETERS-----\n\
            MEYCQQC6O2tK5xfAE8MychWh3JeIjmW8fk34X9ceTBjr6y5SswGoypTycuT80sFw\n\
            ehiCOZCzyGKS2zyz3s2XhzoabAaXAgEC\n-----END DH PARAMETERS-----\n";
        assert_eq!(prime_bits(&base64_der(small)), Some(512));
        assert_eq!(
            dhparam(small, Path::new("/dh.pem")).unwrap_err(),
            "SSL_CTX_set_tmp_dh(\"/dh.pem\") failed (SSL: error:0A00018A:SSL routines::dh key too small)"
        );
        assert_eq!(
            dhparam(b"", Path::new("/dh.pem")).unwrap_err(),
            "PEM_read_bio_DHparams(\"/dh.pem\") failed (SSL: error:0480006C:PEM routines::no start line:Expecting: DH PARAMETERS)"
        );
        // A 2048-bit prime is enough.
        let mut big = vec![0x30, 0x82, 0x01, 0x08, 0x02, 0x82, 0x01, 0x01, 0x00];
        big.extend_from_slice(&[0xff; 256]);
        big.extend_from_slice(&[0x02, 0x01, 0x02]);
        assert_eq!(prime_bits(&big), Some(2048));
    }

    fn base64_der(pem: &[u8]) -> Vec<u8> {
        let text = String::from_utf8_lossy(pem);
        let body: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(body.as_bytes())
            .unwrap()
    }

    #[test]
    fn an_empty_file_has_no_certificate_in_nginx_words() {
        let e = chain(b"", Path::new("/x.pem")).unwrap_err();
        assert_eq!(
            e,
            "cannot load certificate \"/x.pem\": PEM_read_bio_X509_AUX() failed (SSL: error:0480006C:PEM routines::no start line:Expecting: TRUSTED CERTIFICATE)"
        );
        let e = key(b"junk", Path::new("/x.key"), None).unwrap_err();
        assert!(
            e.starts_with(
                "cannot load certificate key \"/x.key\": PEM_read_bio_PrivateKey() failed"
            ),
            "{e}"
        );
    }
}
