//! The secure_link module's variables, as nginx's
//! `ngx_http_secure_link_module.c` computes them.
//!
//! - `$secure_link`: with `secure_link_secret` (the old form), the link of
//!   a request URI `/prefix/HASH/link` whose HASH is the hex MD5 of the link
//!   and the secret; else, with `secure_link` and `secure_link_md5`, `1`
//!   when the base64url hash in `secure_link`'s value (before an optional
//!   `,expires`) is the MD5 of `secure_link_md5`'s value, `0` when it is but
//!   the expiry time has passed; not found otherwise.
//! - `$secure_link_expires`: the expiry time given, when it is a positive
//!   number.
//!
//! One difference: nginx sets `$secure_link_expires` as a side effect of
//! reading `$secure_link` (it is not found before); nowait computes it on
//! its own.

use std::borrow::Cow;

use md5::{Digest, Md5};

use super::base64;
use crate::server::core::request::Req;

/// nginx's hash text is at most this long (`val.len > 24`: not found).
const MAX_HASH_TEXT: usize = 24;

/// `$secure_link`.
pub fn value<'s>(r: &'s Req<'_>) -> Option<Cow<'s, [u8]>> {
    let conf = r.conf;
    if !conf.secure_link_secret.is_empty() {
        let link = old_style(&r.head.uri.request_uri, conf.secure_link_secret.as_bytes())?;
        return Some(Cow::Owned(link.to_vec()));
    }
    let (link, md5) = (conf.secure_link.as_ref()?, conf.secure_link_md5.as_ref()?);
    let link = r.expand(link);
    let (hash, expires) = split(&link)?;
    if hash.len() > MAX_HASH_TEXT {
        return None;
    }
    let hash = base64::decode_url(hash)?;
    if hash.len() != 16 || Md5::digest(r.expand(md5)).as_slice() != hash.as_slice() {
        return None;
    }
    let now = crate::metrics::timed::wall_now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let expired = expires.is_some_and(|e| e < now);
    Some(Cow::Borrowed(if expired { b"0" } else { b"1" }))
}

/// `$secure_link_expires`.
pub fn expires<'s>(r: &'s Req<'_>) -> Option<Cow<'s, [u8]>> {
    let conf = r.conf;
    if !conf.secure_link_secret.is_empty() || conf.secure_link_md5.is_none() {
        return None;
    }
    let link = r.expand(conf.secure_link.as_ref()?);
    let comma = memchr::memchr(b',', &link)?;
    split(&link)?;
    Some(Cow::Owned(link[comma + 1..].to_vec()))
}

/// `secure_link`'s value as the hash text and the expiry time: `None` (not
/// found) for a time after a comma that is not a positive number
/// (`ngx_atotm`).
fn split(link: &[u8]) -> Option<(&[u8], Option<u64>)> {
    match memchr::memchr(b',', link) {
        None => Some((link, None)),
        Some(i) => {
            let t = atotm(&link[i + 1..]).filter(|&t| t > 0)?;
            Some((&link[..i], Some(t)))
        }
    }
}

/// `ngx_atotm`: decimal digits only, at least one, within a `time_t`.
fn atotm(s: &[u8]) -> Option<u64> {
    crate::http::decimal::parse_signed_max(s)
}

/// The old form (`secure_link_secret`): in `/prefix/HASH/link` (the request
/// URI as sent), the link when HASH is the hex MD5 of the link then
/// `secret` (`ngx_http_secure_link_old_variable`).
fn old_style<'u>(uri: &'u [u8], secret: &[u8]) -> Option<&'u [u8]> {
    let rest = uri.get(1..)?;
    let start = memchr::memchr(b'/', rest)? + 1;
    let hash_len = memchr::memchr(b'/', &rest[start..])?;
    let hash = &rest[start..start + hash_len];
    let link = &rest[start + hash_len + 1..];
    if hash.len() != 32 || link.is_empty() {
        return None;
    }
    let mut md5 = Md5::new();
    md5.update(link);
    md5.update(secret);
    let want = md5.finalize();
    let same = hash
        .chunks(2)
        .zip(want.iter())
        .all(|(hex, &byte)| hex_byte(hex) == Some(byte));
    same.then_some(link)
}

/// Two hex digits, either case (`ngx_hextoi`).
fn hex_byte(hex: &[u8]) -> Option<u8> {
    let digit = |c: u8| (c as char).to_digit(16);
    Some((digit(hex[0])? * 16 + digit(hex[1])?) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md5_hex(s: &[u8]) -> String {
        Md5::digest(s).iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn the_old_form_checks_the_hash_of_the_link_and_the_secret() {
        let hash = md5_hex(b"test.htmlsecret");
        let uri = format!("/p/{hash}/test.html");
        assert_eq!(
            old_style(uri.as_bytes(), b"secret"),
            Some(&b"test.html"[..])
        );
        let upper = format!("/p/{}/test.html", hash.to_uppercase());
        assert_eq!(
            old_style(upper.as_bytes(), b"secret"),
            Some(&b"test.html"[..])
        );
        assert_eq!(old_style(uri.as_bytes(), b"other"), None);
        assert_eq!(old_style(b"/p/foo/test.html", b"secret"), None, "short");
        let corrupt = format!("/p/{}/test.html", "x".repeat(32));
        assert_eq!(old_style(corrupt.as_bytes(), b"secret"), None);
        assert_eq!(old_style(b"/p%2f", b"secret"), None);
        assert_eq!(old_style(b"/p/test.html", b"secret"), None);
        let no_link = format!("/p/{hash}/");
        assert_eq!(old_style(no_link.as_bytes(), b"secret"), None);
    }

    #[test]
    fn expiry_times_as_ngx_atotm() {
        assert_eq!(split(b"abc"), Some((&b"abc"[..], None)));
        assert_eq!(split(b"abc,123"), Some((&b"abc"[..], Some(123))));
        assert_eq!(split(b"abc,0"), None, "not positive");
        assert_eq!(split(b"abc,"), None);
        assert_eq!(split(b"abc,12x"), None);
        assert_eq!(split(b"abc,99999999999999999999"), None, "past time_t");
    }
}
