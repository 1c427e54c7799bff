//! The uwsgi request packet as nginx 1.22.1 writes it
//! (`ngx_http_uwsgi_create_request`): a 4-byte header (`uwsgi_modifier1`,
//! the 16-bit little-endian length of what follows, `uwsgi_modifier2`),
//! then each parameter as a 16-bit little-endian name length, the name, a
//! 16-bit little-endian value length and the value. The request body
//! follows unframed, and the response is plain HTTP (or CGI) read by the
//! HTTP head parser, so nothing here reads. Pure and I/O-free.

use std::fmt;

/// The length of the packet header.
pub const HEADER_LEN: usize = 4;
/// The most parameter bytes one packet holds (its 16-bit length).
pub const MAX_PARAMS_LEN: usize = 0xffff;
/// The bytes of a name or value length.
const LEN_SIZE: usize = 2;

/// Why a request could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodeError {
    /// The parameters do not fit the 16-bit length (`[alert]` in nginx),
    /// carrying their encoded length.
    TooBig(usize),
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::TooBig(n) => write!(f, "uwsgi request is too big: {n}"),
        }
    }
}

impl std::error::Error for EncodeError {}

/// Appends the packet: the header with `modifier1` and `modifier2`
/// (`uwsgi_modifier1`, `uwsgi_modifier2`, 0 by default) and `params`
/// (`uwsgi_param` and the request's headers as `HTTP_*`, as the caller
/// evaluated them). The body, if any, goes after it as it is.
pub fn request(
    out: &mut Vec<u8>,
    modifier1: u8,
    modifier2: u8,
    params: &[(&[u8], &[u8])],
) -> Result<(), EncodeError> {
    let len: usize = params
        .iter()
        .map(|(k, v)| 2 * LEN_SIZE + k.len() + v.len())
        .sum();
    let total = u16::try_from(len).map_err(|_| EncodeError::TooBig(len))?;
    out.reserve(HEADER_LEN + len);
    let [lo, hi] = total.to_le_bytes();
    out.extend_from_slice(&[modifier1, lo, hi, modifier2]);
    for (k, v) in params {
        // Each is shorter than the total, which fits 16 bits.
        out.extend_from_slice(&(k.len() as u16).to_le_bytes());
        out.extend_from_slice(k);
        out.extend_from_slice(&(v.len() as u16).to_le_bytes());
        out.extend_from_slice(v);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What nginx sent for the request in tests/fixtures/wire/README.md.
    const NGINX_POST: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/wire/uwsgi_post.bin"
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
        request(&mut out, 5, 7, &ps).unwrap();
        out.extend_from_slice(b"abc");
        assert_eq!(out, NGINX_POST);
    }

    #[test]
    fn too_big_is_refused_in_nginx_words() {
        let v = vec![b'v'; MAX_PARAMS_LEN - 4];
        let mut out = Vec::new();
        let e = request(&mut out, 0, 0, &[(b"K", &v)]).unwrap_err();
        assert_eq!(e.to_string(), "uwsgi request is too big: 65536");
        assert!(out.is_empty());
        request(&mut out, 0, 0, &[(b"", &v)]).unwrap();
        assert_eq!(&out[..4], &[0, 0xff, 0xff, 0]);
        assert_eq!(out.len(), HEADER_LEN + MAX_PARAMS_LEN);
    }

    #[test]
    fn no_params_is_a_bare_header() {
        let mut out = Vec::new();
        request(&mut out, 0, 0, &[]).unwrap();
        assert_eq!(out, [0, 0, 0, 0]);
    }
}
