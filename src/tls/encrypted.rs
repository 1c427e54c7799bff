//! Encrypted private keys (`ssl_password_file`), decrypted as OpenSSL's
//! `PEM_read_bio_PrivateKey` does with each passphrase nginx hands it:
//! PKCS#8 `ENCRYPTED PRIVATE KEY` under PBES2 (PBKDF2 with HMAC-SHA1, -256,
//! -384 or -512; AES-128/192/256-CBC or DES-EDE3-CBC), and OpenSSL's
//! traditional PEM (`Proc-Type: 4,ENCRYPTED`, `DEK-Info:` AES-128/192/256-CBC
//! or DES-EDE3-CBC, the key made by `EVP_BytesToKey` with MD5).
//!
//! AES and PBKDF2 are aws-lc-rs's (the TLS provider's); Triple DES is the
//! `des` crate's block cipher in CBC, here.

use std::num::NonZeroU32;

use rustls::pki_types::{PrivateKeyDer, PrivatePkcs1KeyDer, PrivatePkcs8KeyDer, PrivateSec1KeyDer};

use super::der::Reader;

/// The DER item at the start of `b`, if its tag is `tag`: what follows
/// it, and its content.
fn der_item(b: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let t = Reader::new(b).read(tag)?;
    Some((b.get(t.raw.len()..)?, t.content))
}

/// What follows the DER item at the start of `b`.
fn der_skip(b: &[u8]) -> Option<&[u8]> {
    let t = Reader::new(b).any()?;
    b.get(t.raw.len()..)
}

/// Why no passphrase opened a key, for nginx's words.
#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    /// No passphrase was given (no `ssl_password_file`): OpenSSL would
    /// ask on a terminal, and nginx has none.
    NoPassphrase,
    /// None fit; `pkcs8`: the key is PKCS#8; `empty`: the last one tried
    /// was empty.
    BadDecrypt { pkcs8: bool, empty: bool },
    /// The key's encryption is one nowait cannot undo.
    Unsupported(String),
}

/// A cipher a key may be encrypted with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cipher {
    Aes(usize),
    DesEde3,
}

impl Cipher {
    fn key_len(self) -> usize {
        match self {
            Cipher::Aes(n) => n,
            Cipher::DesEde3 => 24,
        }
    }

    fn iv_len(self) -> usize {
        match self {
            Cipher::Aes(_) => 16,
            Cipher::DesEde3 => 8,
        }
    }

    /// CBC decryption with PKCS#7 padding removed; `None` when the
    /// padding is wrong (OpenSSL's "bad decrypt").
    fn decrypt(self, key: &[u8], iv: &[u8], data: &[u8]) -> Option<Vec<u8>> {
        match self {
            Cipher::Aes(n) => {
                use aws_lc_rs::cipher::{
                    AES_128, AES_192, AES_256, DecryptionContext, PaddedBlockDecryptingKey,
                    UnboundCipherKey,
                };
                let alg = match n {
                    16 => &AES_128,
                    24 => &AES_192,
                    _ => &AES_256,
                };
                let key = UnboundCipherKey::new(alg, key).ok()?;
                let key = PaddedBlockDecryptingKey::cbc_pkcs7(key).ok()?;
                let iv: [u8; 16] = iv.try_into().ok()?;
                let mut buf = data.to_vec();
                let plain = key
                    .decrypt(&mut buf, DecryptionContext::Iv128(iv.into()))
                    .ok()?;
                Some(plain.to_vec())
            }
            Cipher::DesEde3 => {
                use des::cipher::{BlockDecrypt, KeyInit, generic_array::GenericArray};
                if data.is_empty() || data.len() % 8 != 0 {
                    return None;
                }
                let tdes = des::TdesEde3::new_from_slice(key).ok()?;
                let mut prev: [u8; 8] = iv.try_into().ok()?;
                let mut out = Vec::with_capacity(data.len());
                for block in data.chunks(8) {
                    let mut b = GenericArray::clone_from_slice(block);
                    tdes.decrypt_block(&mut b);
                    for (i, x) in b.iter().enumerate() {
                        out.push(x ^ prev[i]);
                    }
                    prev.copy_from_slice(block);
                }
                let pad = usize::from(*out.last()?);
                if pad == 0
                    || pad > 8
                    || !out[out.len() - pad..]
                        .iter()
                        .all(|&p| usize::from(p) == pad)
                {
                    return None;
                }
                out.truncate(out.len() - pad);
                Some(out)
            }
        }
    }
}

/// Whether PEM bytes hold an encrypted key.
pub fn is_encrypted(pem: &[u8]) -> bool {
    let has = |needle: &[u8]| pem.windows(needle.len()).any(|w| w == needle);
    has(b"-----BEGIN ENCRYPTED PRIVATE KEY-----") || has(b"Proc-Type: 4,ENCRYPTED")
}

/// The key in `pem`, opened with the first of `passwords` that fits.
pub fn decrypt(pem: &[u8], passwords: &[Vec<u8>]) -> Result<PrivateKeyDer<'static>, Failure> {
    let text = String::from_utf8_lossy(pem);
    if let Some(body) = section(&text, "ENCRYPTED PRIVATE KEY") {
        let der = base64(&body.1)?;
        let (cipher, iv, kdf, data) = pbes2(&der)?;
        return try_each(passwords, true, |pass| {
            let key = kdf.derive(pass, cipher.key_len())?;
            let plain = cipher.decrypt(&key, &iv, data)?;
            // A wrong passphrase that still unpads leaves no PrivateKeyInfo.
            der_item(&plain, 0x30)?;
            Some(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(plain)))
        });
    }
    for label in ["RSA PRIVATE KEY", "EC PRIVATE KEY"] {
        let Some((headers, body)) = section(&text, label) else {
            continue;
        };
        let dek = headers
            .lines()
            .find_map(|l| l.strip_prefix("DEK-Info:"))
            .ok_or_else(|| Failure::Unsupported("no DEK-Info header".to_string()))?;
        let (name, iv_hex) = dek.trim().split_once(',').unwrap_or((dek.trim(), ""));
        let cipher = match name {
            "AES-128-CBC" => Cipher::Aes(16),
            "AES-192-CBC" => Cipher::Aes(24),
            "AES-256-CBC" => Cipher::Aes(32),
            "DES-EDE3-CBC" => Cipher::DesEde3,
            other => return Err(Failure::Unsupported(format!("the cipher \"{other}\""))),
        };
        let iv = hex(iv_hex.trim())
            .filter(|iv| iv.len() == cipher.iv_len())
            .ok_or_else(|| Failure::Unsupported("a bad DEK-Info IV".to_string()))?;
        let data = base64(&body)?;
        let rsa = label.starts_with("RSA");
        return try_each(passwords, false, |pass| {
            let key = bytes_to_key(pass, &iv[..8], cipher.key_len());
            let plain = cipher.decrypt(&key, &iv, &data)?;
            der_item(&plain, 0x30)?;
            Some(if rsa {
                PrivateKeyDer::Pkcs1(PrivatePkcs1KeyDer::from(plain))
            } else {
                PrivateKeyDer::Sec1(PrivateSec1KeyDer::from(plain))
            })
        });
    }
    Err(Failure::Unsupported("no encrypted key found".to_string()))
}

/// Tries `open` with each passphrase in turn, as nginx's
/// `ngx_ssl_load_certificate_key` loop does.
fn try_each(
    passwords: &[Vec<u8>],
    pkcs8: bool,
    mut open: impl FnMut(&[u8]) -> Option<PrivateKeyDer<'static>>,
) -> Result<PrivateKeyDer<'static>, Failure> {
    if passwords.is_empty() {
        return Err(Failure::NoPassphrase);
    }
    for p in passwords {
        if let Some(k) = open(p) {
            return Ok(k);
        }
    }
    let empty = passwords.last().is_some_and(Vec::is_empty);
    Err(Failure::BadDecrypt { pkcs8, empty })
}

/// The headers and base64 body of the PEM section `label`.
fn section(text: &str, label: &str) -> Option<(String, String)> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin)? + begin.len();
    let stop = start + text[start..].find(&end)?;
    let inner = &text[start..stop];
    let (headers, body) = if inner.contains(':') {
        match inner
            .split_once("\n\n")
            .or_else(|| inner.split_once("\r\n\r\n"))
        {
            Some((h, b)) => (h.to_string(), b.to_string()),
            None => (String::new(), inner.to_string()),
        }
    } else {
        (String::new(), inner.to_string())
    };
    Some((headers, body))
}

fn base64(body: &str) -> Result<Vec<u8>, Failure> {
    use base64::Engine;
    let compact: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(compact)
        .map_err(|_| Failure::Unsupported("bad base64".to_string()))
}

fn hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// OpenSSL's `EVP_BytesToKey` with MD5 and one round: what traditional
/// PEM encryption derives its key with.
fn bytes_to_key(pass: &[u8], salt: &[u8], len: usize) -> Vec<u8> {
    use md5::Digest;
    let mut out = Vec::new();
    let mut prev: Vec<u8> = Vec::new();
    while out.len() < len {
        let mut h = md5::Md5::new();
        h.update(&prev);
        h.update(pass);
        h.update(salt);
        prev = h.finalize().to_vec();
        out.extend_from_slice(&prev);
    }
    out.truncate(len);
    out
}

/// PBKDF2 as PBES2 names it.
struct Pbkdf2<'a> {
    salt: &'a [u8],
    iterations: NonZeroU32,
    prf: aws_lc_rs::pbkdf2::Algorithm,
}

impl Pbkdf2<'_> {
    fn derive(&self, pass: &[u8], len: usize) -> Option<Vec<u8>> {
        let mut out = vec![0u8; len];
        aws_lc_rs::pbkdf2::derive(self.prf, self.iterations, self.salt, pass, &mut out);
        Some(out)
    }
}

const OID_PBES2: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x05, 0x0d];
const OID_PBKDF2: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x05, 0x0c];
const OID_HMAC_SHA1: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x02, 0x07];
const OID_HMAC_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x02, 0x09];
const OID_HMAC_SHA384: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x02, 0x0a];
const OID_HMAC_SHA512: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x02, 0x0b];
const OID_AES128_CBC: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x01, 0x02];
const OID_AES192_CBC: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x01, 0x16];
const OID_AES256_CBC: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x01, 0x2a];
const OID_DES_EDE3_CBC: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x03, 0x07];

/// What PBES2 says of a key: its cipher, IV, key derivation, ciphertext.
type Pbes2<'a> = (Cipher, Vec<u8>, Pbkdf2<'a>, &'a [u8]);

/// The parameters and the ciphertext of a PKCS#8 `EncryptedPrivateKeyInfo`
/// under PBES2.
fn pbes2(der: &[u8]) -> Result<Pbes2<'_>, Failure> {
    let bad = || Failure::Unsupported("a malformed EncryptedPrivateKeyInfo".to_string());
    let (_, info) = der_item(der, 0x30).ok_or_else(bad)?;
    let (rest, alg) = der_item(info, 0x30).ok_or_else(bad)?;
    let (_, data) = der_item(rest, 0x04).ok_or_else(bad)?;
    let (params, oid) = der_item(alg, 0x06).ok_or_else(bad)?;
    if oid != OID_PBES2 {
        return Err(Failure::Unsupported(
            "an encryption other than PBES2".to_string(),
        ));
    }
    let (_, params) = der_item(params, 0x30).ok_or_else(bad)?;
    let (scheme, kdf) = der_item(params, 0x30).ok_or_else(bad)?;
    let (kdf_params, kdf_oid) = der_item(kdf, 0x06).ok_or_else(bad)?;
    if kdf_oid != OID_PBKDF2 {
        return Err(Failure::Unsupported(
            "a key derivation other than PBKDF2".to_string(),
        ));
    }
    let (_, p) = der_item(kdf_params, 0x30).ok_or_else(bad)?;
    let (p, salt) = der_item(p, 0x04).ok_or_else(bad)?;
    let (mut p, iterations) = der_item(p, 0x02).ok_or_else(bad)?;
    let iterations = iterations
        .iter()
        .try_fold(0u32, |acc, &b| {
            acc.checked_mul(256).map(|a| a | u32::from(b))
        })
        .and_then(NonZeroU32::new)
        .ok_or_else(bad)?;
    if p.first() == Some(&0x02) {
        p = der_skip(p).ok_or_else(bad)?; // keyLength
    }
    let prf = match p.first() {
        None => aws_lc_rs::pbkdf2::PBKDF2_HMAC_SHA1,
        Some(_) => {
            let (_, prf) = der_item(p, 0x30).ok_or_else(bad)?;
            let (_, prf_oid) = der_item(prf, 0x06).ok_or_else(bad)?;
            match prf_oid {
                o if o == OID_HMAC_SHA1 => aws_lc_rs::pbkdf2::PBKDF2_HMAC_SHA1,
                o if o == OID_HMAC_SHA256 => aws_lc_rs::pbkdf2::PBKDF2_HMAC_SHA256,
                o if o == OID_HMAC_SHA384 => aws_lc_rs::pbkdf2::PBKDF2_HMAC_SHA384,
                o if o == OID_HMAC_SHA512 => aws_lc_rs::pbkdf2::PBKDF2_HMAC_SHA512,
                _ => {
                    return Err(Failure::Unsupported(
                        "a PBKDF2 hash nowait lacks".to_string(),
                    ));
                }
            }
        }
    };
    let (_, scheme) = der_item(scheme, 0x30).ok_or_else(bad)?;
    let (iv, cipher_oid) = der_item(scheme, 0x06).ok_or_else(bad)?;
    let cipher = match cipher_oid {
        o if o == OID_AES128_CBC => Cipher::Aes(16),
        o if o == OID_AES192_CBC => Cipher::Aes(24),
        o if o == OID_AES256_CBC => Cipher::Aes(32),
        o if o == OID_DES_EDE3_CBC => Cipher::DesEde3,
        _ => return Err(Failure::Unsupported("a cipher nowait lacks".to_string())),
    };
    let (_, iv) = der_item(iv, 0x04).ok_or_else(bad)?;
    if iv.len() != cipher.iv_len() {
        return Err(bad());
    }
    Ok((
        cipher,
        iv.to_vec(),
        Pbkdf2 {
            salt,
            iterations,
            prf,
        },
        data,
    ))
}

/// A password file line nginx refuses (`too long line in "…"`).
#[derive(Debug, PartialEq, Eq)]
pub struct LineTooLong;

/// The passphrases of an `ssl_password_file` (`ngx_ssl_read_password_file`):
/// one a line, a CR before the LF dropped, empty lines skipped; a file
/// with none holds one empty passphrase.
pub fn passwords(file: &[u8]) -> Result<Vec<Vec<u8>>, LineTooLong> {
    /// nginx's `NGX_SSL_PASSWORD_BUFFER_SIZE`: a line this long is refused.
    const LINE_MAX: usize = 4096;
    let mut out = Vec::new();
    for line in file.split(|&b| b == b'\n') {
        if line.len() >= LINE_MAX {
            return Err(LineTooLong);
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if !line.is_empty() {
            out.push(line.to_vec());
        }
    }
    if out.is_empty() {
        out.push(Vec::new());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_files_are_read_as_nginx_reads_them() {
        assert_eq!(
            passwords(b"a\r\n\nb").unwrap(),
            vec![b"a".to_vec(), b"b".to_vec()]
        );
        assert_eq!(passwords(b"").unwrap(), vec![Vec::<u8>::new()]);
        assert_eq!(passwords(b"\r\n\n").unwrap(), vec![Vec::<u8>::new()]);
        assert!(passwords(&[b'x'; 5000]).is_err());
    }

    #[test]
    fn bytes_to_key_is_openssl_s() {
        // `openssl enc -aes-256-cbc -P -md md5 -S 0001020304050607 -pass pass:x`
        let k = bytes_to_key(b"x", &[0, 1, 2, 3, 4, 5, 6, 7], 32);
        let hex: String = k.iter().map(|b| format!("{b:02X}")).collect();
        assert_eq!(
            hex,
            "28479356FFC4A6CDFE5897323D0BB606180696E578859A6AB28A000F4A9A05C6"
        );
    }

    #[test]
    fn without_passphrases_nothing_is_tried() {
        let pem = b"-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00000000000000000000000000000000\n\nAAAAAAAAAAAAAAAAAAAAAA==\n-----END EC PRIVATE KEY-----\n";
        assert!(is_encrypted(pem));
        assert_eq!(decrypt(pem, &[]).unwrap_err(), Failure::NoPassphrase);
        assert_eq!(
            decrypt(pem, &[b"x".to_vec()]).unwrap_err(),
            Failure::BadDecrypt {
                pkcs8: false,
                empty: false
            }
        );
    }
}
