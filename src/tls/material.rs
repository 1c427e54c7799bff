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

use super::encrypted;

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
                return Err(format!(
                    "cannot load certificate \"{}\": PEM_read_bio_X509_AUX() failed (SSL: {})",
                    path.display(),
                    pem_error(&e)
                ));
            }
        }
    }
    if out.is_empty() {
        return Err(format!(
            "cannot load certificate \"{}\": PEM_read_bio_X509_AUX() failed (SSL: no start line: Expecting: TRUSTED CERTIFICATE)",
            path.display()
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
    let fail = |why: &str| {
        format!(
            "cannot load certificate key \"{}\": PEM_read_bio_PrivateKey() failed (SSL: {why})",
            path.display()
        )
    };
    if encrypted::is_encrypted(pem_bytes) {
        let pkcs8 = pem_bytes
            .windows(ENCRYPTED_PKCS8.len())
            .any(|w| w == ENCRYPTED_PKCS8);
        return encrypted::decrypt(pem_bytes, passwords.unwrap_or_default())
            .map_err(|f| fail(&decrypt_error(&f, pkcs8)));
    }
    match PrivateKeyDer::from_pem_slice(pem_bytes) {
        Ok(k) => Ok(k),
        Err(pem::Error::NoItemsFound) => Err(fail("no start line: Expecting: ANY PRIVATE KEY")),
        Err(e) => Err(fail(&pem_error(&e))),
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
    let key = CertifiedKey::new(certs, signing);
    key.keys_match().map_err(|e| {
        let why = match e {
            rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
                "key values mismatch".to_string()
            }
            other => other.to_string(),
        };
        format!(
            "SSL_CTX_use_PrivateKey(\"{}\") failed (SSL: {why})",
            key_path.display()
        )
    })?;
    Ok(Pair {
        key: Arc::new(key),
        not_after,
        path: cert_path.to_path_buf(),
    })
}

/// What a PEM parse error says, as OpenSSL would put it.
fn pem_error(e: &pem::Error) -> String {
    match e {
        pem::Error::MissingSectionEnd { .. } => "bad end line".to_string(),
        pem::Error::IllegalSectionStart { .. } => "bad base64 decode".to_string(),
        pem::Error::Base64Decode(_) => "bad base64 decode".to_string(),
        other => other.to_string(),
    }
}

/// The `notAfter` of a DER certificate, in seconds since the epoch.
pub fn not_after(cert: &CertificateDer<'_>) -> Option<i64> {
    super::x509::CertFields::parse(cert.as_ref()).map(|c| c.not_after)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_file_has_no_certificate_in_nginx_words() {
        let e = chain(b"", Path::new("/x.pem")).unwrap_err();
        assert_eq!(
            e,
            "cannot load certificate \"/x.pem\": PEM_read_bio_X509_AUX() failed (SSL: no start line: Expecting: TRUSTED CERTIFICATE)"
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
