//! Entity tags in nginx's form, `"<mtime hex>-<size hex>"`.
//!
//! Owns: building the strong ETag nginx's `ngx_http_set_etag` gives a file.
//! Must not: compare tags; matching rules live in `conditional` and `range`.

/// The ETag nginx sends for a file: `"` mtime in lowercase hex `-` size in
/// lowercase hex `"`, no leading zeros (`"6b024ab0-1a"`). A negative mtime
/// (before 1970) is written as 0.
pub fn file_etag(mtime_secs: i64, size: u64) -> String {
    format!("\"{:x}-{:x}\"", mtime_secs.max(0), size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_nginx() {
        // Observed from nginx 1.22.1 for a 26-byte file.
        assert_eq!(file_etag(0x6b02_4ab0, 26), "\"6b024ab0-1a\"");
        assert_eq!(file_etag(0, 0), "\"0-0\"");
        assert_eq!(file_etag(-1, 16), "\"0-10\"");
        assert_eq!(
            file_etag(i64::MAX, u64::MAX),
            "\"7fffffffffffffff-ffffffffffffffff\""
        );
    }
}
