//! The cache key, as nginx 1.22.1 hashes and names it
//! (`ngx_http_file_cache_create_key`, `ngx_http_file_cache_name`,
//! `ngx_create_hashed_filename`, `ngx_http_file_cache_vary`).
//!
//! Owns: a key's MD5 (the entry's identity and file name) and CRC32 (the
//! collision check stored in the file), the 32-hex-digit file name, its path
//! under `levels`, and the hash of a `Vary` variant.
//! Must not: evaluate `proxy_cache_key` (the caller hands the evaluated
//! bytes), touch a file, or know the zone.
//!
//! nginx keeps the key as a list of parts (`c->keys`) and feeds each to MD5
//! and CRC32 in turn, which is the same as hashing their concatenation; the
//! `KEY:` line of the file holds the concatenation too. `proxy_cache_key`
//! makes one part; without it the proxy module makes two: the `proxy_pass`
//! URL's `scheme://host[:port]` as written (`http://unix:/path:` for a
//! socket) and the URI sent upstream (`ngx_http_proxy_create_key`).
//!
//! A response with `Vary` is stored under the key's own MD5 the first time
//! (or when the request matches it). A later request whose `Vary` headers
//! differ finds that file, sees the variant differ and looks again under
//! the variant hash itself (`ngx_http_file_cache_reopen`): that second file
//! has the variant's hex as its name, but the same `KEY:` line and CRC32 as
//! the first, and its header's `variant` equals its own name's MD5. If the
//! response fetched for such a lookup has no `Vary`, or one giving another
//! variant, nginx stores it under the key's own MD5 instead, replacing the
//! first file (`ngx_http_file_cache_update_variant`).

use md5::{Digest, Md5 as Md5Hasher};

/// Bytes in an MD5 (nginx's `NGX_HTTP_CACHE_KEY_LEN`).
pub const KEY_LEN: usize = 16;
/// Hex digits in a cache file's name.
pub const NAME_LEN: usize = 2 * KEY_LEN;
/// Most directory levels under a cache path (`NGX_MAX_PATH_LEVEL`).
pub const MAX_LEVELS: usize = 3;
/// Request headers whose values nginx normalizes before hashing a variant:
/// tokens split at spaces and commas, joined with single commas
/// (`ngx_http_file_cache_vary_header`).
const NORMALIZED: [&str; 3] = ["Accept-Charset", "Accept-Encoding", "Accept-Language"];

/// An MD5 digest: a key's identity, a file's name, a variant.
pub type Md5 = [u8; KEY_LEN];

/// An evaluated cache key with its two hashes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheKey {
    /// The key's bytes: every part, concatenated (the file's `KEY:` line).
    text: Vec<u8>,
    /// MD5 of `text`: the entry's identity and file name (nginx's `c->main`).
    md5: Md5,
    /// CRC32 (IEEE) of `text`, stored in the file to catch MD5 collisions.
    crc32: u32,
}

impl CacheKey {
    /// The key made of one part, as `proxy_cache_key` makes it.
    pub fn new(text: &[u8]) -> CacheKey {
        CacheKey::from_parts([text])
    }

    /// The key made of several parts (nginx's `c->keys`, hashed part after
    /// part by `ngx_http_file_cache_create_key`).
    pub fn from_parts<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> CacheKey {
        let mut text = Vec::new();
        let mut md5 = Md5Hasher::new();
        let mut crc = crc32fast::Hasher::new();
        for part in parts {
            md5.update(part);
            crc.update(part);
            text.extend_from_slice(part);
        }
        CacheKey {
            text,
            md5: md5.finalize().into(),
            crc32: crc.finalize(),
        }
    }

    /// The key's bytes, as the file's `KEY:` line holds them.
    pub fn text(&self) -> &[u8] {
        &self.text
    }

    /// The key's MD5: the name of the file that holds its main entry.
    pub fn md5(&self) -> &Md5 {
        &self.md5
    }

    /// The key's CRC32, as nginx's `ngx_crc32_update` computes it.
    pub fn crc32(&self) -> u32 {
        self.crc32
    }
}

/// The file name for `md5`: 32 lowercase hex digits (`ngx_hex_dump`).
pub fn file_name(md5: &Md5) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(NAME_LEN);
    for b in md5 {
        s.push(HEX[usize::from(b >> 4)] as char);
        s.push(HEX[usize::from(b & 0xf)] as char);
    }
    s
}

/// The MD5 a file name stands for, as the cache loader reads it back
/// (`ngx_http_file_cache_add_file`): the last 32 characters, hex digits of
/// either case; `None` for anything else.
pub fn md5_from_name(name: &str) -> Option<Md5> {
    let hex = name.as_bytes().get(name.len().checked_sub(NAME_LEN)?..)?;
    let mut md5 = [0u8; KEY_LEN];
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        let digits = std::str::from_utf8(pair).ok()?;
        md5[i] = u8::from_str_radix(digits, 16).ok()?;
    }
    Some(md5)
}

/// Why a `levels=` list cannot name a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LevelsError {
    /// More than [`MAX_LEVELS`] levels.
    TooMany(usize),
    /// A level that is not 1 or 2 hex digits.
    BadWidth(u8),
}

impl std::fmt::Display for LevelsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LevelsError::TooMany(n) => write!(f, "{n} cache levels, at most {MAX_LEVELS}"),
            LevelsError::BadWidth(w) => write!(f, "a cache level of {w} digits, not 1 or 2"),
        }
    }
}

impl std::error::Error for LevelsError {}

/// The path of the file for `md5` relative to the cache directory under
/// `levels` (each 1 or 2; `levels=1:2` is `[1, 2]`): one directory per
/// level, named by digits taken from the END of the file name
/// (`ngx_create_hashed_filename`), so `1:2` puts
/// `b81084b41c0d805db64b5521fbe066c9` in `9/6c/`.
pub fn relative_path(levels: &[u8], md5: &Md5) -> Result<String, LevelsError> {
    if levels.len() > MAX_LEVELS {
        return Err(LevelsError::TooMany(levels.len()));
    }
    let name = file_name(md5);
    let mut path = String::with_capacity(NAME_LEN + 3 * MAX_LEVELS);
    let mut end = NAME_LEN;
    for &level in levels {
        if !(1..=2).contains(&level) {
            return Err(LevelsError::BadWidth(level));
        }
        end -= usize::from(level);
        path.push_str(&name[end..end + usize::from(level)]);
        path.push('/');
    }
    path.push_str(&name);
    Ok(path)
}

/// The variant hash of a request for an entry whose response said
/// `Vary: vary` (`ngx_http_file_cache_vary`): MD5 over the key's MD5, then
/// for each name in `vary` (lowercased, split at spaces and commas) the
/// name, `:`, the request's values of that header and CRLF.
///
/// Values of a header sent several times are joined with `,`; those of
/// `Accept-Charset`, `Accept-Encoding` and `Accept-Language` are first split
/// at spaces and commas and their tokens joined with `,` (so `gzip, br`
/// and `gzip,br` are one variant; `ngx_http_file_cache_vary_header`). A
/// header the request lacks contributes nothing between `:` and CRLF.
pub fn variant<'a, N, V>(
    main: &Md5,
    vary: &[u8],
    request_headers: impl IntoIterator<Item = (&'a N, &'a V)> + Clone,
) -> Md5
where
    N: AsRef<[u8]> + ?Sized + 'a,
    V: AsRef<[u8]> + ?Sized + 'a,
{
    let mut md5 = Md5Hasher::new();
    md5.update(main);
    let vary = vary.to_ascii_lowercase();
    for name in tokens(&vary) {
        md5.update(name);
        md5.update(b":");
        hash_values(&mut md5, name, request_headers.clone());
        md5.update(b"\r\n");
    }
    md5.finalize().into()
}

/// Feeds the request's values of the header `name` to `md5`.
fn hash_values<'a, N, V>(
    md5: &mut Md5Hasher,
    name: &[u8],
    request_headers: impl IntoIterator<Item = (&'a N, &'a V)>,
) where
    N: AsRef<[u8]> + ?Sized + 'a,
    V: AsRef<[u8]> + ?Sized + 'a,
{
    let normalize = NORMALIZED
        .iter()
        .any(|n| n.as_bytes().eq_ignore_ascii_case(name));
    let mut multiple = false;
    for (n, v) in request_headers {
        if !n.as_ref().eq_ignore_ascii_case(name) {
            continue;
        }
        if !normalize {
            if multiple {
                md5.update(b",");
            }
            md5.update(v.as_ref());
            multiple = true;
            continue;
        }
        for token in tokens(v.as_ref()) {
            if multiple {
                md5.update(b",");
            }
            md5.update(token);
            multiple = true;
        }
    }
}

/// nginx's split of a `Vary` value or a normalized header: runs of bytes
/// other than space and comma, up to the first empty one (which, as the
/// separators are skipped first, only the end of the value makes).
fn tokens(s: &[u8]) -> impl Iterator<Item = &[u8]> {
    s.split(|&b| b == b' ' || b == b',')
        .filter(|t| !t.is_empty())
}

/// What a stored entry's variant says about a request
/// (`ngx_http_file_cache_read`, `ngx_http_file_cache_reopen`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VariantCheck {
    /// The entry has no `Vary`, or the request's variant is the stored one:
    /// the entry answers it.
    Matches,
    /// The request is another variant: look up the file named after this
    /// hash instead (a miss there fetches and stores that variant there).
    /// If this lookup already was under a variant hash, nginx gives up
    /// with "has incorrect vary hash" and treats it as a miss.
    Other(Md5),
}

/// Checks a request against an entry read from disk whose header holds
/// `vary` and `variant`; `main` is the key's own MD5 (not the variant's,
/// even when the entry was found under a variant hash).
pub fn check_variant<'a, N, V>(
    main: &Md5,
    vary: &[u8],
    stored_variant: &Md5,
    request_headers: impl IntoIterator<Item = (&'a N, &'a V)> + Clone,
) -> VariantCheck
where
    N: AsRef<[u8]> + ?Sized + 'a,
    V: AsRef<[u8]> + ?Sized + 'a,
{
    if vary.is_empty() {
        return VariantCheck::Matches;
    }
    let v = variant(main, vary, request_headers);
    if &v == stored_variant {
        VariantCheck::Matches
    } else {
        VariantCheck::Other(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Request headers as a test writes them.
    fn hdrs<'a>(
        list: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = (&'a str, &'a str)> + Clone {
        list.iter().copied()
    }

    fn md5_of(parts: &[&[u8]]) -> Md5 {
        let mut m = Md5Hasher::new();
        for p in parts {
            m.update(p);
        }
        m.finalize().into()
    }

    #[test]
    fn md5_and_crc32_of_a_known_key() {
        let k = CacheKey::new(b"httplocalhost/");
        // `printf %s httplocalhost/ | md5sum`; zlib's `crc32`.
        assert_eq!(file_name(k.md5()), "f7fbc9561a3975ce1ecff55583e50465");
        assert_eq!(k.crc32(), 0xf5bc_1f6a);
        assert_eq!(k.text(), b"httplocalhost/");
    }

    #[test]
    fn parts_hash_as_their_concatenation() {
        let whole = CacheKey::new(b"http://127.0.0.1:8081/a?b");
        let parts = CacheKey::from_parts([&b"http://127.0.0.1:8081"[..], b"/a?b"]);
        assert_eq!(whole, parts);
    }

    #[test]
    fn empty_md5_is_the_rfc_1321_value() {
        assert_eq!(
            file_name(CacheKey::new(b"").md5()),
            "d41d8cd98f00b204e9800998ecf8427e"
        );
        assert_eq!(
            file_name(CacheKey::new(b"abc").md5()),
            "900150983cd24fb0d6963f7d28e17f72"
        );
        assert_eq!(CacheKey::new(b"123456789").crc32(), 0xcbf4_3926);
    }

    #[test]
    fn levels_take_digits_from_the_end() {
        let md5 = md5_from_name("b81084b41c0d805db64b5521fbe066c9").expect("hex");
        assert_eq!(
            relative_path(&[1, 2], &md5).as_deref(),
            Ok("9/6c/b81084b41c0d805db64b5521fbe066c9")
        );
        assert_eq!(
            relative_path(&[2], &md5).as_deref(),
            Ok("c9/b81084b41c0d805db64b5521fbe066c9")
        );
        assert_eq!(
            relative_path(&[2, 2, 1], &md5).as_deref(),
            Ok("c9/66/0/b81084b41c0d805db64b5521fbe066c9")
        );
        assert_eq!(
            relative_path(&[], &md5).as_deref(),
            Ok("b81084b41c0d805db64b5521fbe066c9")
        );
        assert_eq!(
            relative_path(&[1, 1, 1, 1], &md5),
            Err(LevelsError::TooMany(4))
        );
        assert_eq!(relative_path(&[3], &md5), Err(LevelsError::BadWidth(3)));
    }

    #[test]
    fn names_round_trip_and_bad_names_are_refused() {
        let k = CacheKey::new(b"x");
        assert_eq!(md5_from_name(&file_name(k.md5())), Some(*k.md5()));
        assert_eq!(
            md5_from_name("/c/9/6c/B81084B41C0D805DB64B5521FBE066C9"),
            md5_from_name("b81084b41c0d805db64b5521fbe066c9")
        );
        assert_eq!(md5_from_name("b81084b41c0d805db64b5521fbe066c"), None);
        assert_eq!(md5_from_name("g81084b41c0d805db64b5521fbe066c9"), None);
    }

    #[test]
    fn variant_is_md5_of_main_names_and_values() {
        let main = *CacheKey::new(b"k").md5();
        let got = variant(
            &main,
            b"Accept-Encoding, X-A",
            hdrs(&[("accept-encoding", "gzip"), ("X-A", "1")]),
        );
        let want = md5_of(&[&main, b"accept-encoding:gzip\r\n", b"x-a:1\r\n"]);
        assert_eq!(got, want);
    }

    #[test]
    fn variant_of_a_missing_header_hashes_the_name_alone() {
        let main = *CacheKey::new(b"k").md5();
        let got = variant(&main, b"Cookie", hdrs(&[]));
        assert_eq!(got, md5_of(&[&main, b"cookie:\r\n"]));
    }

    #[test]
    fn repeated_headers_join_with_commas_values_kept_as_sent() {
        let main = *CacheKey::new(b"k").md5();
        let got = variant(
            &main,
            b"x-a",
            hdrs(&[("X-A", "1, 2"), ("Host", "h"), ("x-a", "3")]),
        );
        assert_eq!(got, md5_of(&[&main, b"x-a:1, 2,3\r\n"]));
    }

    #[test]
    fn accept_headers_are_normalized() {
        let main = *CacheKey::new(b"k").md5();
        let a = variant(
            &main,
            b"Accept-Encoding",
            hdrs(&[("Accept-Encoding", " gzip,  br ,")]),
        );
        let b = variant(
            &main,
            b"Accept-Encoding",
            hdrs(&[("Accept-Encoding", "gzip"), ("Accept-Encoding", "br")]),
        );
        assert_eq!(a, b);
        assert_eq!(a, md5_of(&[&main, b"accept-encoding:gzip,br\r\n"]));
        // Tabs are not separators.
        let c = variant(
            &main,
            b"accept-language",
            hdrs(&[("Accept-Language", "en\tfr")]),
        );
        assert_eq!(c, md5_of(&[&main, b"accept-language:en\tfr\r\n"]));
    }

    #[test]
    fn vary_names_split_at_spaces_and_commas() {
        let main = *CacheKey::new(b"k").md5();
        let a = variant(&main, b" ,X-A,,  X-B ", hdrs(&[("x-b", "2")]));
        assert_eq!(a, md5_of(&[&main, b"x-a:\r\n", b"x-b:2\r\n"]));
    }

    #[test]
    fn check_variant_says_where_to_look() {
        let main = *CacheKey::new(b"k").md5();
        let stored = variant(&main, b"X-A", hdrs(&[("X-A", "1")]));
        assert_eq!(
            check_variant(&main, b"X-A", &stored, hdrs(&[("x-a", "1")])),
            VariantCheck::Matches
        );
        let other = variant(&main, b"X-A", hdrs(&[("X-A", "2")]));
        assert_eq!(
            check_variant(&main, b"X-A", &stored, hdrs(&[("X-A", "2")])),
            VariantCheck::Other(other)
        );
        assert_eq!(
            check_variant(&main, b"", &[0; KEY_LEN], hdrs(&[("X-A", "2")])),
            VariantCheck::Matches
        );
    }
}
