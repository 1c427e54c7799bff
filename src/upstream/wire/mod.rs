//! The wire formats nginx speaks to application servers, as pure,
//! I/O-free codecs the upstream engine's protocol plug-ins call: they
//! encode a request into bytes and read a response from bytes given in
//! pieces, and own no socket, buffer policy or configuration.
//!
//! - [`fastcgi`]: FastCGI 1.0 records (`ngx_http_fastcgi_module`).
//! - [`uwsgi`]: the uwsgi request packet (`ngx_http_uwsgi_module`).
//! - [`scgi`]: the SCGI request netstring (`ngx_http_scgi_module`).
//! - [`memcached`]: `get`, the `VALUE`/`END` line and the value's trailer
//!   (`ngx_http_memcached_module`).
//!
//! Here too: [`header_param_name`], the `HTTP_*` name the first three give
//! a request header.

pub mod fastcgi;
pub mod memcached;
pub mod scgi;
pub mod uwsgi;

/// The prefix of a request header's parameter name.
pub const HEADER_PARAM_PREFIX: &[u8] = b"HTTP_";

/// Appends the parameter name FastCGI, uwsgi and SCGI give a request
/// header: `HTTP_`, then the name with `a`-`z` upper-cased and `-` made
/// `_`, every other byte as it is (the loop of
/// `ngx_http_fastcgi_create_request` and its uwsgi and SCGI twins).
pub fn header_param_name(out: &mut Vec<u8>, header: &[u8]) {
    out.reserve(HEADER_PARAM_PREFIX.len() + header.len());
    out.extend_from_slice(HEADER_PARAM_PREFIX);
    out.extend(header.iter().map(|&b| match b {
        b'a'..=b'z' => b.to_ascii_uppercase(),
        b'-' => b'_',
        _ => b,
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_names_become_http_params_as_nginx_makes_them() {
        let mut out = Vec::new();
        header_param_name(&mut out, b"Content-Type");
        assert_eq!(out, b"HTTP_CONTENT_TYPE");
        out.clear();
        // Underscores, digits and bytes above ASCII stay as they are.
        header_param_name(&mut out, b"x_a-1\xe9");
        assert_eq!(out, b"HTTP_X_A_1\xe9");
    }
}
