//! Typed values of the static-serving modules' directives: `autoindex_format`,
//! the default MIME types of `gzip_types` and `charset_types` (the lists
//! are `type_list::TypeList`s), `gzip_proxied`,
//! `gzip_http_version`, `gzip_static`, and `charset`'s value.
//!
//! Owns: what each value means and its default, as nginx 1.22.1 declares
//! them. Must not: parse directives (the `set_*` files do) or look at
//! requests (the filters in `server/filter/` do).

use super::template::Template;

/// `autoindex_format html | xml | json | jsonp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoindexFormat {
    /// An HTML page (the default).
    Html,
    /// A JSON array.
    Json,
    /// A JSON array wrapped in the `callback` argument's function call.
    Jsonp,
    /// An XML `<list>`.
    Xml,
}

/// `gzip_types`' default: `text/html` (nginx's `ngx_http_html_default_types`),
/// which every `gzip_types` list contains too.
pub const GZIP_DEFAULT_TYPES: [&str; 1] = ["text/html"];

/// `charset_types`' default (`ngx_http_charset_default_types`); a written
/// `charset_types` list always contains the first of them, `text/html`.
pub const CHARSET_DEFAULT_TYPES: [&str; 6] = [
    "text/html",
    "text/xml",
    "text/plain",
    "text/vnd.wap.wml",
    "application/javascript",
    "application/rss+xml",
];

/// `gzip_proxied`: when a request that came through a proxy (`Via`) may
/// get a compressed answer, as nginx's bit mask.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GzipProxied(pub u16);

impl GzipProxied {
    /// `off`: never (the default).
    pub const OFF: GzipProxied = GzipProxied(0x0002);
    /// `expired`: when the response's `Expires` is in the past.
    pub const EXPIRED: GzipProxied = GzipProxied(0x0004);
    /// `no-cache`: when `Cache-Control` has `no-cache`.
    pub const NO_CACHE: GzipProxied = GzipProxied(0x0008);
    /// `no-store`: when `Cache-Control` has `no-store`.
    pub const NO_STORE: GzipProxied = GzipProxied(0x0010);
    /// `private`: when `Cache-Control` has `private`.
    pub const PRIVATE: GzipProxied = GzipProxied(0x0020);
    /// `no_last_modified`: when the response has no `Last-Modified`.
    pub const NO_LAST_MODIFIED: GzipProxied = GzipProxied(0x0040);
    /// `no_etag`: when the response has no `ETag`.
    pub const NO_ETAG: GzipProxied = GzipProxied(0x0080);
    /// `auth`: when the request has `Authorization`.
    pub const AUTH: GzipProxied = GzipProxied(0x0100);
    /// `any`: always.
    pub const ANY: GzipProxied = GzipProxied(0x0200);

    /// The words `gzip_proxied` takes, with their bits, in nginx's order.
    pub const NAMES: [(&'static str, GzipProxied); 9] = [
        ("off", GzipProxied::OFF),
        ("expired", GzipProxied::EXPIRED),
        ("no-cache", GzipProxied::NO_CACHE),
        ("no-store", GzipProxied::NO_STORE),
        ("private", GzipProxied::PRIVATE),
        ("no_last_modified", GzipProxied::NO_LAST_MODIFIED),
        ("no_etag", GzipProxied::NO_ETAG),
        ("auth", GzipProxied::AUTH),
        ("any", GzipProxied::ANY),
    ];

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: GzipProxied) -> bool {
        self.0 & other.0 == other.0
    }
}

/// `gzip_http_version 1.0 | 1.1`: the lowest request version compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GzipHttpVersion {
    /// HTTP/1.0 and later.
    V10,
    /// HTTP/1.1 and later (the default).
    V11,
}

/// `gzip_static off | on | always`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GzipStatic {
    /// No `.gz` files are looked for (the default).
    Off,
    /// A `.gz` file beside the requested one is sent to clients that
    /// accept gzip.
    On,
    /// The `.gz` file is sent to every client (see `gunzip`).
    Always,
}

/// nginx's default `gzip_buffers` and `gunzip_buffers`: 128k in pages.
pub const DEFAULT_GZIP_BUFFERS: (u32, u64) = (32, 4096);

/// zlib's largest window (`MAX_WBITS`): `gzip_window 32k`, the default.
pub const MAX_WINDOW_BITS: u8 = 15;

/// zlib's `MAX_MEM_LEVEL - 1` (`gzip_hash 64k`): nginx's default memory level.
pub const DEFAULT_MEM_LEVEL: u8 = 8;

/// `charset` or `source_charset`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CharsetSpec {
    /// `charset off` (the default of both).
    Off,
    /// A charset by name.
    Name(String),
    /// `$variable`: the name is the variable's value per request.
    Var(Template),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxied_bits() {
        let p = GzipProxied(GzipProxied::EXPIRED.0 | GzipProxied::AUTH.0);
        assert!(p.contains(GzipProxied::AUTH));
        assert!(!p.contains(GzipProxied::ANY));
        assert!(GzipHttpVersion::V10 < GzipHttpVersion::V11);
    }
}
