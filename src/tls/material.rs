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

/// The private key in a PEM file (PKCS#8, PKCS#1 RSA or SEC1 EC).
pub fn key(pem_bytes: &[u8], path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let fail = |why: &str| {
        format!(
            "cannot load certificate key \"{}\": PEM_read_bio_PrivateKey() failed (SSL: {why})",
            path.display()
        )
    };
    if encrypted(pem_bytes) {
        return Err(fail(
            "the key is encrypted, and nowait reads only keys without a passphrase",
        ));
    }
    match PrivateKeyDer::from_pem_slice(pem_bytes) {
        Ok(k) => Ok(k),
        Err(pem::Error::NoItemsFound) => Err(fail("no start line: Expecting: ANY PRIVATE KEY")),
        Err(e) => Err(fail(&pem_error(&e))),
    }
}

/// Whether a PEM key is encrypted (PKCS#8 `ENCRYPTED PRIVATE KEY`, or
/// OpenSSL's traditional `Proc-Type: 4,ENCRYPTED` header).
fn encrypted(pem_bytes: &[u8]) -> bool {
    let has = |needle: &[u8]| pem_bytes.windows(needle.len()).any(|w| w == needle);
    has(b"-----BEGIN ENCRYPTED PRIVATE KEY-----") || has(b"Proc-Type: 4,ENCRYPTED")
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
) -> Result<Pair, String> {
    let certs = chain(cert_pem, cert_path)?;
    let der = key(key_pem, key_path)?;
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

/// The `notAfter` of a DER certificate, in seconds since the epoch: the
/// validity's second time (UTCTime or GeneralizedTime), found by walking
/// the TBS certificate's first fields.
pub fn not_after(cert: &CertificateDer<'_>) -> Option<i64> {
    let (_, cert_body) = der_item(cert.as_ref(), 0x30)?;
    let (_, tbs) = der_item(cert_body, 0x30)?;
    let mut rest = tbs;
    // [0] version (optional), serialNumber, signature, issuer, validity.
    if rest.first() == Some(&0xa0) {
        rest = der_skip(rest)?;
    }
    for _ in 0..3 {
        rest = der_skip(rest)?;
    }
    let (_, validity) = der_item(rest, 0x30)?;
    let after = der_skip(validity)?;
    let tag = *after.first()?;
    let (_, t) = der_item(after, tag)?;
    let text = std::str::from_utf8(t).ok()?;
    parse_time(tag, text)
}

/// What follows the DER item at the start of `b`, and its content, if its
/// tag is `tag`.
fn der_item(b: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    if *b.first()? != tag {
        return None;
    }
    let (len, head) = der_len(&b[1..])?;
    let start = 1 + head;
    let body = b.get(start..start + len)?;
    Some((&b[start + len..], body))
}

/// What follows the DER item at the start of `b`.
fn der_skip(b: &[u8]) -> Option<&[u8]> {
    b.first()?;
    let (len, head) = der_len(&b[1..])?;
    b.get(1 + head + len..)
}

/// A DER length and how many bytes it took.
fn der_len(b: &[u8]) -> Option<(usize, usize)> {
    let first = *b.first()?;
    if first < 0x80 {
        return Some((first as usize, 1));
    }
    let n = (first & 0x7f) as usize;
    if n == 0 || n > 4 {
        return None;
    }
    let mut len = 0usize;
    for &byte in b.get(1..1 + n)? {
        len = (len << 8) | byte as usize;
    }
    Some((len, 1 + n))
}

/// `YYMMDDHHMMSSZ` (UTCTime, tag 0x17) or `YYYYMMDDHHMMSSZ`
/// (GeneralizedTime, 0x18) as seconds since the epoch.
fn parse_time(tag: u8, t: &str) -> Option<i64> {
    let t = t.strip_suffix('Z')?;
    let (year, rest) = match tag {
        0x17 => {
            let yy: i64 = t.get(..2)?.parse().ok()?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, t.get(2..)?)
        }
        0x18 => (t.get(..4)?.parse().ok()?, t.get(4..)?),
        _ => return None,
    };
    let field = |i: usize| -> Option<i64> { rest.get(i..i + 2)?.parse().ok() };
    let (month, day, hour, min, sec) = (field(0)?, field(2)?, field(4)?, field(6)?, field(8)?);
    Some(days_from_civil(year, month, day)? * 86400 + hour * 3600 + min * 60 + sec)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> Option<i64> {
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146097 + doe - 719468)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_days_are_counted_from_the_epoch() {
        assert_eq!(days_from_civil(1970, 1, 1), Some(0));
        assert_eq!(days_from_civil(2000, 3, 1), Some(11017));
        assert_eq!(parse_time(0x17, "491231235959Z"), Some(2524607999));
        assert_eq!(parse_time(0x18, "20380119031408Z"), Some(2147483648));
        assert_eq!(parse_time(0x17, "5001010000Z"), None);
    }

    #[test]
    fn an_empty_file_has_no_certificate_in_nginx_words() {
        let e = chain(b"", Path::new("/x.pem")).unwrap_err();
        assert_eq!(
            e,
            "cannot load certificate \"/x.pem\": PEM_read_bio_X509_AUX() failed (SSL: no start line: Expecting: TRUSTED CERTIFICATE)"
        );
        let e = key(b"junk", Path::new("/x.key")).unwrap_err();
        assert!(
            e.starts_with(
                "cannot load certificate key \"/x.key\": PEM_read_bio_PrivateKey() failed"
            ),
            "{e}"
        );
    }
}
