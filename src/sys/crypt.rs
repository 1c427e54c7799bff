//! `crypt_r()` of the system's libcrypt: the password hashes nginx's
//! `auth_basic` falls back to for every scheme it does not compute itself
//! (`ngx_libc_crypt`): DES, `$1$` MD5, `$5$`/`$6$` SHA-2, bcrypt, yescrypt
//! — whatever this system's libcrypt knows, as for nginx on it.

use std::ffi::{CStr, CString, c_char};

/// The name failures are logged under.
pub const CRYPT_R: &str = "crypt_r";

/// `sizeof(struct crypt_data)` in libxcrypt (and glibc's is smaller).
const CRYPT_DATA_SIZE: usize = 32768;

#[link(name = "crypt")]
unsafe extern "C" {
    fn crypt_r(phrase: *const c_char, setting: *const c_char, data: *mut u8) -> *mut c_char;
}

/// A C string of `s` up to its first NUL, as C code would see it.
fn c_string(s: &[u8]) -> CString {
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    CString::new(&s[..end]).unwrap_or_default()
}

/// Hashes `key` with the scheme and salt `setting` names. `Err` carries
/// errno when libcrypt returns nothing (libxcrypt returns a failure token
/// such as `*0` for a setting it cannot use instead, which matches no
/// stored hash).
pub fn crypt(key: &[u8], setting: &[u8]) -> std::io::Result<Vec<u8>> {
    let (key, setting) = (c_string(key), c_string(setting));
    // `crypt_data` must start zeroed (`initialized = 0`); it is 32 KiB,
    // so it lives on the heap.
    let mut data = vec![0u8; CRYPT_DATA_SIZE];
    // SAFETY: both strings are NUL-terminated and outlive the call; `data`
    // is a zeroed buffer of `sizeof(struct crypt_data)` that crypt_r may
    // use as scratch. The result points into `data` (or is NULL) and is
    // copied out before `data` is dropped.
    let out = unsafe { crypt_r(key.as_ptr(), setting.as_ptr(), data.as_mut_ptr()) };
    if out.is_null() {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a non-NULL result is a NUL-terminated string inside `data`.
    let hashed = unsafe { CStr::from_ptr(out) }.to_bytes().to_vec();
    Ok(hashed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn des_and_md5_crypt_as_libc() {
        // perl -e 'print crypt("password", "salt")'
        assert_eq!(crypt(b"password", b"salt").unwrap(), b"sa3tHJ3/KuYvI");
        // perl -e 'print crypt("password", q{$1$salt$})'
        assert_eq!(
            crypt(b"password", b"$1$salt$").unwrap(),
            b"$1$salt$qJH7.N4xYta3aEG/dfqo/0"
        );
        // A setting libcrypt cannot use is a failure token, not a hash.
        let broken = crypt(b"1", b"$1$").map(|h| h != b"$1$");
        assert!(broken.unwrap_or(true));
    }
}
