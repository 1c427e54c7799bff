//! nginx's `ngx_crypt()`: the password schemes of `auth_basic_user_file`.
//! `$apr1$` (Apache's MD5), `{PLAIN}`, `{SHA}` and `{SSHA}` are computed
//! here as `ngx_crypt.c` does; anything else goes to the system's
//! `crypt_r()` (DES, `$1$`, `$5$`, `$6$`, bcrypt, yescrypt), as nginx's
//! `ngx_libc_crypt`. The caller compares the result with the stored hash.
//!
//! Keys and salts are C strings to nginx: they end at the first NUL.

use md5::{Digest, Md5};
use sha1::Sha1;

use super::base64;

const APR1: &[u8] = b"$apr1$";
const PLAIN: &[u8] = b"{PLAIN}";
const SSHA: &[u8] = b"{SSHA}";
const SHA: &[u8] = b"{SHA}";
/// The characters of the crypt base-64 alphabet (`ngx_crypt_to64`).
const ITOA64: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// An `$apr1$` salt's longest length.
const APR1_SALT_MAX: usize = 8;
/// The rounds of MD5 crypt.
const MD5_ROUNDS: usize = 1000;
/// A SHA-1 digest's length.
const SHA1_LEN: usize = 20;

/// `s` up to its first NUL.
fn c_str(s: &[u8]) -> &[u8] {
    &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())]
}

/// `key` hashed with the scheme and salt of `salt` (a stored hash); `Err`
/// when the system's `crypt_r()` failed.
pub fn crypt(key: &[u8], salt: &[u8]) -> std::io::Result<Vec<u8>> {
    let (key, salt) = (c_str(key), c_str(salt));
    if salt.starts_with(APR1) {
        Ok(apr1(key, salt))
    } else if salt.starts_with(PLAIN) {
        Ok([PLAIN, key].concat())
    } else if salt.starts_with(SSHA) {
        Ok(ssha(key, salt))
    } else if salt.starts_with(SHA) {
        let digest = Sha1::digest(key);
        Ok([SHA, base64::encode(&digest).as_bytes()].concat())
    } else {
        crate::sys::crypt::crypt(key, salt)
    }
}

fn to64(out: &mut Vec<u8>, mut v: u32, n: usize) {
    for _ in 0..n {
        out.push(ITOA64[(v & 0x3f) as usize]);
        v >>= 6;
    }
}

/// `ngx_crypt_apr1`: Poul-Henning Kamp's MD5 crypt with the `$apr1$` magic.
fn apr1(key: &[u8], salt: &[u8]) -> Vec<u8> {
    let rest = &salt[APR1.len()..];
    let salt_len = rest
        .iter()
        .take(APR1_SALT_MAX)
        .position(|&c| c == b'$')
        .unwrap_or(rest.len().min(APR1_SALT_MAX));
    let salt = &rest[..salt_len];

    let mut md5 = Md5::new();
    md5.update(key);
    md5.update(APR1);
    md5.update(salt);

    let mut alt = Md5::new();
    alt.update(key);
    alt.update(salt);
    alt.update(key);
    let mut fin: [u8; 16] = alt.finalize().into();

    let mut n = key.len();
    while n > 0 {
        md5.update(&fin[..n.min(16)]);
        n = n.saturating_sub(16);
    }
    fin = [0; 16];
    let mut i = key.len();
    while i != 0 {
        if i & 1 != 0 {
            md5.update(&fin[..1]);
        } else {
            md5.update(&key[..1]);
        }
        i >>= 1;
    }
    fin = md5.finalize().into();

    for i in 0..MD5_ROUNDS {
        let mut ctx = Md5::new();
        if i & 1 != 0 {
            ctx.update(key);
        } else {
            ctx.update(fin);
        }
        if i % 3 != 0 {
            ctx.update(salt);
        }
        if i % 7 != 0 {
            ctx.update(key);
        }
        if i & 1 != 0 {
            ctx.update(fin);
        } else {
            ctx.update(key);
        }
        fin = ctx.finalize().into();
    }

    let f = |i: usize| u32::from(fin[i]);
    let mut out = Vec::with_capacity(APR1.len() + salt.len() + 23);
    out.extend_from_slice(APR1);
    out.extend_from_slice(salt);
    out.push(b'$');
    to64(&mut out, (f(0) << 16) | (f(6) << 8) | f(12), 4);
    to64(&mut out, (f(1) << 16) | (f(7) << 8) | f(13), 4);
    to64(&mut out, (f(2) << 16) | (f(8) << 8) | f(14), 4);
    to64(&mut out, (f(3) << 16) | (f(9) << 8) | f(15), 4);
    to64(&mut out, (f(4) << 16) | (f(10) << 8) | f(5), 4);
    to64(&mut out, f(11), 2);
    out
}

/// `ngx_crypt_ssha`: `{SSHA}` base64(SHA1(key salt) salt); the salt is
/// what follows the first 20 bytes of the stored value, decoded (a value
/// that does not decode, or is shorter, has no salt).
fn ssha(key: &[u8], salt: &[u8]) -> Vec<u8> {
    let mut decoded = match base64::decode(&salt[SSHA.len()..]) {
        Some(d) if d.len() >= SHA1_LEN => d,
        _ => vec![0; SHA1_LEN],
    };
    let mut sha = Sha1::new();
    sha.update(key);
    sha.update(&decoded[SHA1_LEN..]);
    decoded[..SHA1_LEN].copy_from_slice(&sha.finalize());
    [SSHA, base64::encode(&decoded).as_bytes()].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hashes of nginx's own `auth_basic.t`, each for "password".
    #[test]
    fn the_schemes_of_nginx_s_tests() {
        let ok = |stored: &[u8]| crypt(b"password", stored).unwrap() == stored;
        assert!(ok(b"$apr1$salt$Xxd1irWT9ycqoYxGFn4cb."));
        assert!(ok(b"{PLAIN}password"));
        assert!(ok(b"{SSHA}yI6cZwQadOA1e+/f+T+H3eCQQhRzYWx0"));
        assert!(ok(b"{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g="));
        assert!(ok(b"sa3tHJ3/KuYvI"));
        assert!(ok(b"$1$salt$qJH7.N4xYta3aEG/dfqo/0"));
        let wrong = |stored: &[u8]| crypt(b"123", stored).unwrap() != stored;
        assert!(wrong(b"$apr1$salt$Xxd1irWT9ycqoYxGFn4cb."));
        assert!(wrong(b"{SSHA}yI6cZwQadOA1e+/f+T+H3eCQQhRzYWx0"));
    }

    #[test]
    fn broken_stored_values_match_nothing() {
        for stored in [
            &b"$apr1$"[..],
            b"{SSHA}_____wQadOA1e+/f+T+H3eCQQhRzYWx0",
            b"{SSHA}Zm9vCg==",
            b"{SHA}_____Mm5Pz8GgiULbPgzG37mj9g=",
            b"{SHA}Zm9vCg==",
        ] {
            assert_ne!(crypt(b"1", stored).unwrap(), stored);
        }
    }

    #[test]
    fn keys_end_at_a_nul() {
        assert_eq!(crypt(b"pass\0word", b"{PLAIN}").unwrap(), b"{PLAIN}pass");
    }
}
