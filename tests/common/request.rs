//! Finds the request methods in a raw byte stream of (possibly pipelined,
//! possibly malformed) requests. Best effort by design: the result only
//! tells the response parser which responses answer `HEAD`, and a server
//! that rejects a malformed request closes the connection anyway.

/// The method of each request in `bytes`, in order. Requests are split at
/// the blank line ending each head (CRLF or bare LF), skipping a body whose
/// length a `Content-Length` header gives, or a chunked body.
pub fn request_methods(bytes: &[u8]) -> Vec<String> {
    let mut methods = Vec::new();
    let mut pos = 0;
    loop {
        // nginx, like RFC 9112 §2.2 allows, ignores empty lines before a
        // request line.
        while pos < bytes.len() && (bytes[pos] == b'\r' || bytes[pos] == b'\n') {
            pos += 1;
        }
        if pos >= bytes.len() {
            return methods;
        }
        let rest = &bytes[pos..];
        let method_len = rest
            .iter()
            .position(|&c| c == b' ' || c == b'\r' || c == b'\n')
            .unwrap_or(rest.len());
        methods.push(String::from_utf8_lossy(&rest[..method_len]).into_owned());
        let Some(head_len) = head_end(rest) else {
            return methods;
        };
        let head = String::from_utf8_lossy(&rest[..head_len]).to_ascii_lowercase();
        pos += head_len;
        if head.contains("\ntransfer-encoding:") && head.contains("chunked") {
            match chunked_len(&bytes[pos..]) {
                Some(n) => pos += n,
                None => return methods,
            }
        } else if let Some(n) = content_length(&head) {
            pos += n;
        }
    }
}

/// The length of the head at the start of `b`, its blank line included.
fn head_end(b: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(nl) = b[i..].iter().position(|&c| c == b'\n') {
        let next = i + nl + 1;
        match b.get(next) {
            Some(b'\n') => return Some(next + 1),
            Some(b'\r') if b.get(next + 1) == Some(&b'\n') => return Some(next + 2),
            _ => i = next,
        }
    }
    None
}

/// The first parseable `Content-Length` value in a lower-cased head.
fn content_length(head: &str) -> Option<usize> {
    head.lines()
        .filter_map(|l| l.strip_prefix("content-length:"))
        .find_map(|v| v.trim().parse().ok())
}

/// The length of the chunked body at the start of `b`, if it is complete.
fn chunked_len(b: &[u8]) -> Option<usize> {
    let mut pos = 0;
    loop {
        let nl = b[pos..].iter().position(|&c| c == b'\n')?;
        let size_line = String::from_utf8_lossy(&b[pos..pos + nl]);
        let hex = size_line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(hex, 16).ok()?;
        pos += nl + 1;
        if size == 0 {
            // Trailer section up to its blank line.
            loop {
                let nl = b[pos..].iter().position(|&c| c == b'\n')?;
                let blank = b[pos..pos + nl].iter().all(|&c| c == b'\r');
                pos += nl + 1;
                if blank {
                    return Some(pos);
                }
            }
        }
        pos = pos.checked_add(size)?.checked_add(2)?;
        if pos > b.len() {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_pipelined_methods_past_bodies() {
        let s = b"POST /a HTTP/1.1\r\nContent-Length: 4\r\n\r\nHEADHEAD / HTTP/1.1\r\n\r\n\
PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nGET \r\n0\r\n\r\nGET / HTTP/1.1\n\n";
        assert_eq!(request_methods(s), ["POST", "HEAD", "PUT", "GET"]);
    }
}
