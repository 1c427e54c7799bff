//! File extension → MIME type lookup, the data of nginx's `types {}` blocks.
//!
//! Owns: the extension table and the extension rule (`ngx_http_set_exten`).
//! Must not: read configuration; the config layer feeds it pairs.
//!
//! Extensions are stored lowercased and looked up lowercased. nginx looks up
//! the extension as written and retries lowercased when it has capitals;
//! storing lowercase gives the same answers for the lowercase tables every
//! real `mime.types` uses.

use std::collections::HashMap;

/// nginx's built-in table, used when a configuration has no `types` block.
pub const NGINX_DEFAULT_TYPES: &[(&str, &[&str])] = &[
    ("text/html", &["html"]),
    ("image/gif", &["gif"]),
    ("image/jpeg", &["jpg"]),
];

/// nginx's `default_type` when none is configured.
pub const DEFAULT_TYPE: &str = "text/plain";

/// A table from file extension to MIME type.
#[derive(Clone, Debug, Default)]
pub struct MimeTypes {
    /// Lowercased extension (no dot) → MIME type.
    by_extension: HashMap<String, String>,
}

impl MimeTypes {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// A table built from `(type, [extensions])` pairs, as written in a
    /// `types {}` block. A repeated extension takes the later type, as in nginx.
    pub fn from_pairs<'a, I, E>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (&'a str, E)>,
        E: IntoIterator<Item = &'a str>,
    {
        let mut table = Self::new();
        for (mime, extensions) in pairs {
            for ext in extensions {
                table.insert(mime, ext);
            }
        }
        table
    }

    /// nginx's built-in table ([`NGINX_DEFAULT_TYPES`]).
    pub fn nginx_default() -> Self {
        Self::from_pairs(
            NGINX_DEFAULT_TYPES
                .iter()
                .map(|(m, e)| (*m, e.iter().copied())),
        )
    }

    /// Maps `extension` to `mime`. Returns the type it replaced, so the config
    /// layer can warn `duplicate extension "x", content type: ..., previous
    /// content type: ...` as nginx does.
    pub fn insert(&mut self, mime: &str, extension: &str) -> Option<String> {
        self.by_extension
            .insert(extension.to_ascii_lowercase(), mime.to_string())
    }

    /// The number of extensions known.
    pub fn len(&self) -> usize {
        self.by_extension.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.by_extension.is_empty()
    }

    /// The type for an extension (without the dot), case-insensitively.
    pub fn lookup(&self, extension: &str) -> Option<&str> {
        if let Some(mime) = self.by_extension.get(extension) {
            return Some(mime);
        }
        if extension.bytes().any(|b| b.is_ascii_uppercase()) {
            return self
                .by_extension
                .get(&extension.to_ascii_lowercase())
                .map(String::as_str);
        }
        None
    }

    /// The type for a URI path by its extension, or `default` (the
    /// `default_type`) when it has none or an unknown one.
    pub fn for_path<'a>(&'a self, path: &str, default: &'a str) -> &'a str {
        extension(path)
            .and_then(|ext| self.lookup(ext))
            .unwrap_or(default)
    }
}

/// The extension of a URI path as nginx's `ngx_http_set_exten` finds it:
/// what follows the last `.` of the last path segment. `/a/.htaccess` has
/// extension `htaccess`; `/a.b/c` has none; `/c.` has an empty one.
pub fn extension(path: &str) -> Option<&str> {
    for (i, c) in path.bytes().enumerate().rev() {
        match c {
            b'.' => return Some(&path[i + 1..]),
            b'/' => return None,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> MimeTypes {
        MimeTypes::from_pairs([
            ("text/html", vec!["html", "htm"]),
            ("text/plain", vec!["txt"]),
            ("image/jpeg", vec!["JPG", "jpeg"]),
        ])
    }

    #[test]
    fn looks_up_case_insensitively() {
        let t = table();
        assert_eq!(t.lookup("html"), Some("text/html"));
        assert_eq!(t.lookup("HTM"), Some("text/html"));
        assert_eq!(t.lookup("jpg"), Some("image/jpeg"));
        assert_eq!(t.lookup("png"), None);
        assert_eq!(t.len(), 5);
    }

    #[test]
    fn later_duplicate_wins_and_reports_previous() {
        let mut t = table();
        assert_eq!(t.insert("text/x", "txt"), Some("text/plain".to_string()));
        assert_eq!(t.lookup("txt"), Some("text/x"));
    }

    #[test]
    fn extension_rule_matches_nginx() {
        assert_eq!(extension("/a/b.tar.gz"), Some("gz"));
        assert_eq!(extension("/a/.htaccess"), Some("htaccess"));
        assert_eq!(extension("/a.d/file"), None);
        assert_eq!(extension("/file."), Some(""));
        assert_eq!(extension("/"), None);
        assert_eq!(extension(""), None);
    }

    #[test]
    fn for_path_falls_back_to_default() {
        let t = table();
        assert_eq!(t.for_path("/x/INDEX.HTML", DEFAULT_TYPE), "text/html");
        assert_eq!(
            t.for_path("/x/README", "application/octet-stream"),
            "application/octet-stream"
        );
        assert_eq!(t.for_path("/x/y.", DEFAULT_TYPE), DEFAULT_TYPE);
        assert_eq!(
            MimeTypes::nginx_default().for_path("/a.gif", DEFAULT_TYPE),
            "image/gif"
        );
    }
}
