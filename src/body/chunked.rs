//! `Transfer-Encoding: chunked` framing of a response body (RFC 9112 §7.1),
//! as nginx's chunked filter writes it: `SIZE-IN-HEX CRLF data CRLF` per
//! piece, `0 CRLF CRLF` at the end; an empty piece writes nothing (a zero
//! size would end the body).

/// The end of a chunked body with no trailers.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// The line before a piece of `len` bytes (`len` > 0).
pub fn chunk_head(len: usize, out: &mut Vec<u8>) {
    use std::io::Write;
    let _ = write!(out, "{len:x}\r\n");
}

/// What follows each piece.
pub const CHUNK_END: &[u8] = b"\r\n";

/// The last chunk followed by `trailers` (name, value) and the final CRLF.
pub fn last_chunk_with_trailers(trailers: &[(String, String)], out: &mut Vec<u8>) {
    out.extend_from_slice(b"0\r\n");
    for (n, v) in trailers {
        out.extend_from_slice(n.as_bytes());
        out.extend_from_slice(b": ");
        out.extend(v.bytes().filter(|&b| b != b'\r' && b != b'\n'));
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_as_nginx() {
        let mut out = Vec::new();
        chunk_head(26, &mut out);
        assert_eq!(out, b"1a\r\n");
        let mut out = Vec::new();
        last_chunk_with_trailers(&[("X-T".into(), "a\r\nb".into())], &mut out);
        assert_eq!(out, b"0\r\nX-T: ab\r\n\r\n");
    }
}
