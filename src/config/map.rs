//! A `map` block as typed configuration, and the lookup nginx's
//! `ngx_http_map_find` makes in it: exact keys (compared without regard to
//! case), then, with `hostnames`, the longest matching leading wildcard
//! (`*.example.com`, `.example.com`) and the longest trailing one
//! (`www.example.*`), then the regular expressions in the order written.
//!
//! The table is pure data; evaluating the source string and the value's
//! variables, and setting the captures of a matching expression, is the
//! server's (`server::core::named`).

use std::collections::HashMap;
use std::sync::Arc;

use crate::config::regex::Regex;

use super::source::Loc;
use super::template::Template;

/// nginx's default `map_hash_max_size`.
pub const DEFAULT_HASH_MAX_SIZE: u64 = 2048;
/// nginx's default `map_hash_bucket_size`: the processor's cache line.
pub const CACHE_LINE: u64 = 64;

/// `map string $variable { … }`.
#[derive(Clone, Debug)]
pub struct Map {
    /// The string looked up.
    pub source: Template,
    /// The variable defined, lowercase, without `$`.
    pub var: Arc<str>,
    /// `hostnames`: wildcard keys, and a trailing dot of the string ignored.
    pub hostnames: bool,
    /// `volatile`: the value is not kept for the rest of the request.
    pub volatile: bool,
    /// Exact keys, lowercase → index in `values`.
    pub exact: HashMap<Vec<u8>, usize>,
    /// Leading wildcards as the suffix a name must end with (`.example.com`
    /// for `*.example.com`), longest first.
    pub head: Vec<(Vec<u8>, usize)>,
    /// Trailing wildcards as the prefix a name must start with
    /// (`www.example.` for `www.example.*`), longest first.
    pub tail: Vec<(Vec<u8>, usize)>,
    /// Regular expressions in order, with their value.
    pub regexes: Vec<(Regex, usize)>,
    /// The values; a value may hold variables (and captures of its regex).
    pub values: Vec<Template>,
    /// `default`'s value; none is an empty value.
    pub default: Option<usize>,
    /// Where the block starts.
    pub loc: Loc,
}

/// What a lookup found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// A key or a wildcard: the value's index.
    Key(usize),
    /// The regular expression at this index in `regexes` matched.
    Regex(usize),
    /// Nothing: the default applies.
    Default,
}

impl Map {
    /// An empty map of `source` into `$var`.
    pub fn new(source: Template, var: Arc<str>, loc: Loc) -> Map {
        Map {
            source,
            var,
            hostnames: false,
            volatile: false,
            exact: HashMap::new(),
            head: Vec::new(),
            tail: Vec::new(),
            regexes: Vec::new(),
            values: Vec::new(),
            default: None,
            loc,
        }
    }

    /// Looks `key` up among the keys and wildcards (`regex_matches` is
    /// asked for each expression in order when they do not match; it runs
    /// the expression, setting the request's captures as nginx does). An
    /// empty string is never matched against expressions, as in nginx.
    pub fn find(&self, key: &[u8], mut regex_matches: impl FnMut(&Regex) -> bool) -> Found {
        let lower = key.to_ascii_lowercase();
        if let Some(&v) = self.exact.get(&lower) {
            return Found::Key(v);
        }
        if let Some((_, v)) = self
            .head
            .iter()
            .find(|(suffix, _)| lower.len() > suffix.len() && lower.ends_with(suffix))
        {
            return Found::Key(*v);
        }
        if let Some((_, v)) = self
            .tail
            .iter()
            .find(|(prefix, _)| lower.len() > prefix.len() && lower.starts_with(prefix))
        {
            return Found::Key(*v);
        }
        if !key.is_empty() {
            if let Some(i) = self.regexes.iter().position(|(re, _)| regex_matches(re)) {
                return Found::Regex(i);
            }
        }
        Found::Default
    }

    /// The value a lookup result stands for; `None` is nginx's empty
    /// default.
    pub fn value(&self, found: Found) -> Option<&Template> {
        let i = match found {
            Found::Key(i) => i,
            Found::Regex(r) => self.regexes[r].1,
            Found::Default => self.default?,
        };
        self.values.get(i)
    }
}

/// A wildcard key of a `hostnames` map, as `ngx_hash_add_key` reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostKey {
    /// No wildcard: an exact name.
    Exact(Vec<u8>),
    /// `*.example.com`: any name below `example.com` (the suffix kept is
    /// `.example.com`).
    Head(Vec<u8>),
    /// `.example.com`: `example.com` itself and any name below it.
    Both(Vec<u8>),
    /// `www.example.*`: `www.example.` followed by anything.
    Tail(Vec<u8>),
}

/// Reads a key of a `hostnames` map (lowercased); `None` is nginx's
/// `invalid hostname or wildcard`: more than one `*`, `..`, a NUL byte, or
/// a `*` anywhere but `*.` at the start or `.*` at the end.
pub fn host_key(key: &[u8]) -> Option<HostKey> {
    let stars = key.iter().filter(|&&c| c == b'*').count();
    if stars > 1 || key.windows(2).any(|w| w == b"..") || key.contains(&0) {
        return None;
    }
    let lower = key.to_ascii_lowercase();
    if lower.len() > 1 && lower[0] == b'.' {
        return Some(HostKey::Both(lower[1..].to_vec()));
    }
    if lower.len() > 2 {
        if lower.starts_with(b"*.") {
            return Some(HostKey::Head(lower[1..].to_vec()));
        }
        if lower.ends_with(b".*") {
            return Some(HostKey::Tail(lower[..lower.len() - 1].to_vec()));
        }
    }
    if stars > 0 {
        return None;
    }
    Some(HostKey::Exact(lower))
}

/// nginx's element size in a hash bucket (`NGX_HASH_ELT_SIZE`): a pointer,
/// then the key's length (2 bytes) and the key, rounded to a pointer.
fn hash_elt_size(key_len: usize) -> u64 {
    let ptr = std::mem::size_of::<usize>() as u64;
    ptr + (key_len as u64 + 2).div_ceil(ptr) * ptr
}

/// Checks that `keys` fit in nginx's hash with these sizes, as
/// `ngx_hash_init` does (`name` is the hash's name, `map_hash`). `Err` is
/// nginx's error; `Ok(Some(_))` its warning when no table size up to
/// `max_size` fits every bucket (nginx then builds the largest one anyway).
pub fn check_hash(
    keys: &[&[u8]],
    max_size: u64,
    bucket_size: u64,
    name: &str,
) -> Result<Option<String>, String> {
    let slots: Vec<Option<&[u8]>> = keys.iter().copied().map(Some).collect();
    check_hash_slots(&slots, max_size, bucket_size, name)
}

/// [`check_hash`] for keys some of which were taken out after the list
/// was made (`None`, nginx's `key.data = NULL`): they are placed nowhere
/// but still count towards the first table size tried, as in nginx.
pub fn check_hash_slots(
    slots: &[Option<&[u8]>],
    max_size: u64,
    bucket_size: u64,
    name: &str,
) -> Result<Option<String>, String> {
    let keys: Vec<&[u8]> = slots.iter().flatten().copied().collect();
    let ptr = std::mem::size_of::<usize>() as u64;
    if max_size == 0 {
        return Err(format!(
            "could not build {name}, you should increase {name}_max_size: {max_size}"
        ));
    }
    if bucket_size > 65536 - CACHE_LINE {
        return Err(format!(
            "could not build {name}, too large {name}_bucket_size: {bucket_size}"
        ));
    }
    if keys
        .iter()
        .any(|k| bucket_size < hash_elt_size(k.len()) + ptr)
    {
        return Err(format!(
            "could not build {name}, you should increase {name}_bucket_size: {bucket_size}"
        ));
    }
    if keys.is_empty() {
        // Nothing to place: any size fits (nginx's search ends at once).
        return Ok(None);
    }
    // ngx_hash_init: the smallest table size whose buckets all fit (every
    // key fits a bucket, checked above, so `bucket >= 2 * ptr`).
    let bucket = bucket_size - ptr;
    let n = slots.len() as u64;
    let mut start = (n / (bucket / (2 * ptr))).max(1);
    if max_size > 10000 && n > 0 && max_size / n < 100 {
        start = max_size - 1000;
    }
    let hashes: Vec<u64> = keys.iter().map(|k| hash_key_lc(k) as u64).collect();
    // The bytes taken in each bucket a key falls in: only those, so that
    // a large `max_size` costs no memory.
    let mut test: HashMap<u64, u64> = HashMap::with_capacity(keys.len());
    'size: for size in start..=max_size {
        test.clear();
        for (k, h) in keys.iter().zip(&hashes) {
            let taken = test.entry(h % size).or_insert(0);
            *taken += hash_elt_size(k.len());
            if *taken > bucket {
                continue 'size;
            }
        }
        return Ok(None);
    }
    Ok(Some(format!(
        "could not build optimal {name}, you should increase either {name}_max_size: {max_size} or {name}_bucket_size: {bucket_size}; ignoring {name}_bucket_size"
    )))
}

/// nginx's `ngx_hash_key_lc`: `key = key * 31 + lowercase(byte)`, in an
/// `ngx_uint_t`, a machine word (on a 64-bit machine a name of seven bytes
/// or more lands elsewhere than a 32-bit sum would put it).
fn hash_key_lc(k: &[u8]) -> usize {
    k.iter().fold(0usize, |h, &c| {
        h.wrapping_mul(31)
            .wrapping_add(usize::from(c.to_ascii_lowercase()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_keys_as_nginx_reads_them() {
        assert_eq!(
            host_key(b"*.Example.com"),
            Some(HostKey::Head(b".example.com".to_vec()))
        );
        assert_eq!(
            host_key(b".example.com"),
            Some(HostKey::Both(b"example.com".to_vec()))
        );
        assert_eq!(
            host_key(b"www.example.*"),
            Some(HostKey::Tail(b"www.example.".to_vec()))
        );
        assert_eq!(
            host_key(b"example.com"),
            Some(HostKey::Exact(b"example.com".to_vec()))
        );
        assert_eq!(host_key(b"a*.example.com"), None);
        assert_eq!(host_key(b"*.*.com"), None);
        assert_eq!(host_key(b"a..b"), None);
    }

    #[test]
    fn hash_sizes_as_ngx_hash_init() {
        let long = [b'a'; 47];
        assert_eq!(check_hash(&[b"short"], 2048, 64, "map_hash"), Ok(None));
        assert_eq!(
            check_hash(&[&long[..]], 2048, 64, "map_hash").unwrap_err(),
            "could not build map_hash, you should increase map_hash_bucket_size: 64"
        );
        assert!(check_hash(&[&long[..46]], 2048, 64, "map_hash").is_ok());
        let keys: Vec<Vec<u8>> = (0..100).map(|i| format!("key{i}").into_bytes()).collect();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        assert_eq!(check_hash(&refs, 2048, 64, "map_hash"), Ok(None));
        let warned = check_hash(&refs, 1, 64, "map_hash").unwrap().unwrap();
        // Found by fuzzing: no key and a bucket smaller than a pointer
        // underflowed the bucket's room.
        assert_eq!(check_hash(&[], 2048, 1, "map_hash"), Ok(None));
        assert!(
            warned.starts_with("could not build optimal map_hash, you should increase either map_hash_max_size: 1 or"),
            "{warned}"
        );
    }
}

#[cfg(test)]
mod lookup_tests {
    use super::*;
    use crate::config::load_text;

    fn map(body: &str) -> Map {
        let text = format!(
            "events {{}}\nhttp {{ map $uri $m {{ {body} }} server {{ listen 127.0.0.1:1; }} }}\n"
        );
        match load_text(&text) {
            Ok(l) => l.config.http.unwrap().maps.remove(0),
            Err(e) => panic!("{e:?}"),
        }
    }

    fn value(m: &Map, key: &str) -> Option<String> {
        let found = m.find(key.as_bytes(), |re| re.is_match(key));
        m.value(found).map(|t| t.source.clone())
    }

    #[test]
    fn exact_keys_ignore_case_and_regexes_keep_order() {
        let m = map("default d; Foo exact; ~^f r1; ~*^F r2; \\~x esc;");
        assert_eq!(value(&m, "FOO").as_deref(), Some("exact"));
        assert_eq!(value(&m, "fa").as_deref(), Some("r1"));
        assert_eq!(value(&m, "Fa").as_deref(), Some("r2"));
        assert_eq!(value(&m, "~x").as_deref(), Some("esc"));
        assert_eq!(value(&m, "zzz").as_deref(), Some("d"));
        // An empty string never meets the expressions.
        let m = map("~^ any;");
        assert_eq!(value(&m, ""), None);
    }

    #[test]
    fn hostnames_wildcards_most_specific_first() {
        let m = map(
            "hostnames; *.example.com head; *.a.example.com deeper; www.example.* tail; .dot.org dot; example.com exact;",
        );
        assert_eq!(value(&m, "x.example.com").as_deref(), Some("head"));
        assert_eq!(value(&m, "x.a.example.com").as_deref(), Some("deeper"));
        assert_eq!(value(&m, "example.com").as_deref(), Some("exact"));
        assert_eq!(value(&m, "www.example.org").as_deref(), Some("tail"));
        assert_eq!(value(&m, "www.example").as_deref(), None);
        assert_eq!(value(&m, "dot.org").as_deref(), Some("dot"));
        assert_eq!(value(&m, "a.b.dot.org").as_deref(), Some("dot"));
        // Without `hostnames`, a wildcard is a plain key.
        let m = map("*.example.com star;");
        assert_eq!(value(&m, "*.example.com").as_deref(), Some("star"));
        assert_eq!(value(&m, "x.example.com"), None);
    }
}
