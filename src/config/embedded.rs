//! The configuration nowait runs when given none and none exists at the
//! default path: serve one directory on 127.0.0.1:8080 in the foreground,
//! logging to standard error, as the invoking user, without a pid file —
//! as a file browser: a directory without `index.html` is listed
//! (`autoindex on`), text is sent as UTF-8 (`charset utf-8`), and the
//! types people keep in folders (Markdown, source code, configuration
//! files, modern images, audio and fonts) get types a browser shows or
//! plays rather than downloads.

/// nginx's MIME types, compiled in for the embedded configuration.
pub const MIME_TYPES: &str = include_str!("../../conf/mime.types");

/// The default address of the embedded configuration.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// Where the embedded configuration keeps request bodies too large for
/// memory: a directory of the invoking user's under the system's temporary
/// folder, since the prefix may not exist or be writable.
pub fn body_temp_path() -> String {
    std::env::temp_dir()
        .join(format!(
            "nowait-client_body_temp-{}",
            crate::sys::process::geteuid()
        ))
        .to_string_lossy()
        .into_owned()
}

/// What the embedded configuration adds to nginx's types, or changes:
/// text people keep in folders is shown, not downloaded (`.ts` is
/// TypeScript here far more often than an MPEG transport stream).
pub const FOLDER_TYPES: &[(&str, &[&str])] = &[
    ("text/markdown", &["md", "markdown"]),
    ("application/javascript", &["mjs", "cjs"]),
    ("application/json", &["map", "jsonld"]),
    ("application/manifest+json", &["webmanifest"]),
    ("text/csv", &["csv"]),
    ("text/tab-separated-values", &["tsv"]),
    (
        "text/plain",
        &[
            "ts",
            "tsx",
            "mts",
            "cts",
            "jsx",
            "toml",
            "yaml",
            "yml",
            "ini",
            "cfg",
            "conf",
            "log",
            "lock",
            "rs",
            "py",
            "rb",
            "go",
            "c",
            "h",
            "cc",
            "cpp",
            "hpp",
            "java",
            "kt",
            "swift",
            "sh",
            "bash",
            "zsh",
            "sql",
            "pl",
            "pm",
            "lua",
            "php",
            "diff",
            "patch",
            "properties",
            "gradle",
            "cmake",
            "mk",
            "dockerfile",
            "gitignore",
            "env",
            "srt",
            "vtt",
        ],
    ),
    ("audio/flac", &["flac"]),
    ("audio/wav", &["wav"]),
    ("audio/aac", &["aac"]),
    ("audio/ogg", &["opus", "oga"]),
    ("video/ogg", &["ogv"]),
    ("font/ttf", &["ttf"]),
    ("font/otf", &["otf"]),
    ("image/heic", &["heic"]),
    ("image/jxl", &["jxl"]),
    ("application/gzip", &["gz", "tgz"]),
    ("application/x-tar", &["tar"]),
    ("application/x-xz", &["xz"]),
    ("application/zstd", &["zst"]),
    ("application/epub+zip", &["epub"]),
];

/// The types whose responses the embedded configuration marks UTF-8.
pub const FOLDER_CHARSET_TYPES: &str = "text/plain text/css text/markdown text/csv \
     text/tab-separated-values text/xml application/javascript application/json \
     application/manifest+json application/xml application/rss+xml application/atom+xml \
     image/svg+xml";

/// nginx's `types` block with [`FOLDER_TYPES`] merged in: an extension
/// they name leaves its line in nginx's list, so no extension is mapped
/// twice (which nginx would warn about at every start).
pub fn folder_types() -> String {
    let ours: std::collections::HashSet<&str> = FOLDER_TYPES
        .iter()
        .flat_map(|(_, exts)| exts.iter().copied())
        .collect();
    let mut out = String::from("types {\n");
    for line in MIME_TYPES.lines() {
        let words: Vec<&str> = line
            .split_whitespace()
            .map(|w| w.trim_end_matches(';'))
            .filter(|w| !w.is_empty())
            .collect();
        let [mime, exts @ ..] = words.as_slice() else {
            continue;
        };
        if *mime == "types" || *mime == "{" || *mime == "}" {
            continue;
        }
        let kept: Vec<&str> = exts.iter().copied().filter(|e| !ours.contains(e)).collect();
        if !kept.is_empty() {
            out.push_str(&format!("    {mime} {};\n", kept.join(" ")));
        }
    }
    for (mime, exts) in FOLDER_TYPES {
        out.push_str(&format!("    {mime} {};\n", exts.join(" ")));
    }
    out.push_str("}\n");
    out
}

/// The embedded configuration serving `root` on `listen`.
pub fn text(root: &str, listen: &str) -> String {
    let q = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    format!(
        "# nowait's embedded configuration (no configuration file was found)\n\
         daemon off;\n\
         worker_processes auto;\n\
         error_log stderr notice;\n\
         events {{ }}\n\
         http {{\n\
         {types}\
         default_type application/octet-stream;\n\
         autoindex on;\n\
         charset utf-8;\n\
         charset_types {charset_types};\n\
         access_log stderr;\n\
         sendfile on;\n\
         client_body_temp_path \"{body_temp}\";\n\
         server {{\n\
         listen \"{listen}\";\n\
         root \"{root}\";\n\
         location / {{ }}\n\
         }}\n\
         }}\n",
        listen = q(listen),
        root = q(root),
        body_temp = q(&body_temp_path()),
        types = folder_types(),
        charset_types = FOLDER_CHARSET_TYPES,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_types_replace_nginx_s_without_duplicates() {
        let t = folder_types();
        assert!(t.contains("    text/markdown md markdown;\n"));
        assert!(!t.contains("video/mp2t ts;"), "ts is TypeScript here");
        assert!(t.contains("    image/webp webp;\n"));
        let mut seen = std::collections::HashSet::new();
        for line in t.lines().filter(|l| l.ends_with(';')) {
            for ext in line.trim_end_matches(';').split_whitespace().skip(1) {
                assert!(seen.insert(ext.to_string()), "{ext} twice");
            }
        }
        for ext in ["svg", "wasm", "avif", "json", "yaml", "toml", "mjs", "webp"] {
            assert!(seen.contains(ext), "{ext}");
        }
    }
}
