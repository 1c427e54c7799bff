//! The SCGI request head as nginx 1.22.1 writes it
//! (`ngx_http_scgi_create_request`): a netstring (`LEN:` … `,`) of
//! NUL-terminated names and values, `CONTENT_LENGTH` first with the body's
//! length, then the parameters in order. nginx adds no `SCGI 1` itself:
//! it comes from `scgi_params` as any other `scgi_param`. The body follows
//! the netstring unframed, and the response is a CGI/HTTP head read by the
//! HTTP head parser, so nothing here reads. Pure and I/O-free.

/// The name of the first header, whose value is the body's length.
pub const CONTENT_LENGTH: &[u8] = b"CONTENT_LENGTH";

/// Appends the netstring for a body of `content_length` bytes and
/// `params` (`scgi_param` and the request's headers as `HTTP_*`, as the
/// caller evaluated them). The body goes after it as it is. A netstring
/// has no length limit, so nothing fails.
pub fn request(out: &mut Vec<u8>, content_length: u64, params: &[(&[u8], &[u8])]) {
    let cl = content_length.to_string();
    let len = CONTENT_LENGTH.len()
        + 1
        + cl.len()
        + 1
        + params
            .iter()
            .map(|(k, v)| k.len() + 1 + v.len() + 1)
            .sum::<usize>();
    let prefix = format!("{len}:");
    out.reserve(prefix.len() + len + 1);
    out.extend_from_slice(prefix.as_bytes());
    put(out, CONTENT_LENGTH, cl.as_bytes());
    for (k, v) in params {
        put(out, k, v);
    }
    out.push(b',');
}

/// Appends one name and value, each ending with NUL.
fn put(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.push(0);
    out.extend_from_slice(value);
    out.push(0);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What nginx sent for the request in tests/fixtures/wire/README.md.
    const NGINX_POST: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/wire/scgi_post.bin"
    ));

    #[test]
    fn request_matches_nginx_byte_for_byte() {
        let ps: [(&[u8], &[u8]); 6] = [
            (b"REQUEST_METHOD", b"POST"),
            (b"X", b"y"),
            (b"HTTP_HOST", b"h"),
            (b"HTTP_USER_AGENT", b"t"),
            (b"HTTP_CONTENT_LENGTH", b"3"),
            (b"HTTP_CONTENT_TYPE", b"application/x-www-form-urlencoded"),
        ];
        let mut out = Vec::new();
        request(&mut out, 3, &ps);
        out.extend_from_slice(b"abc");
        assert_eq!(out, NGINX_POST);
    }

    #[test]
    fn no_body_and_no_params_still_send_content_length() {
        let mut out = Vec::new();
        request(&mut out, 0, &[(b"SCGI", b"1")]);
        assert_eq!(out, b"24:CONTENT_LENGTH\x000\x00SCGI\x001\x00,");
    }
}
