//! The configuration nowait runs when given none and none exists at the
//! default path: serve one directory on 127.0.0.1:8080 in the foreground,
//! logging to standard error, as the invoking user, without a pid file.

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
         {MIME_TYPES}\n\
         default_type application/octet-stream;\n\
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
    )
}
