//! What a ClientHello asks that rustls does not tell: whether the client
//! wants the certificate's OCSP status (`status_request`, RFC 6066 §8).
//! OpenSSL calls nginx's status callback only for such a client, and the
//! callback is what starts a fetch from the responder; rustls staples
//! what it is given, so the server reads the hello's bytes itself.

/// A TLS record's header: type, version, length.
const RECORD_HEADER: usize = 5;
/// The handshake record type.
const HANDSHAKE: u8 = 22;
/// The ClientHello handshake type.
const CLIENT_HELLO: u8 = 1;
/// The `status_request` extension.
const STATUS_REQUEST: u16 = 5;
/// `status_type` `ocsp`.
const STATUS_TYPE_OCSP: u8 = 1;
/// The longest ClientHello read (a handshake message may span records;
/// a bigger hello is judged as not asking).
pub const MAX_HELLO: usize = 16384 + RECORD_HEADER;

/// Whether the records in `bytes` (as read from the socket before the
/// handshake) hold a ClientHello asking for the OCSP status.
pub fn asks_status(bytes: &[u8]) -> bool {
    let mut message = Vec::new();
    let mut rest = bytes;
    while rest.len() >= RECORD_HEADER && rest[0] == HANDSHAKE {
        let len = usize::from(u16::from_be_bytes([rest[3], rest[4]]));
        let Some(fragment) = rest.get(RECORD_HEADER..RECORD_HEADER + len) else {
            break;
        };
        message.extend_from_slice(fragment);
        rest = &rest[RECORD_HEADER + len..];
    }
    client_hello_asks(&message).unwrap_or(false)
}

/// Reads `n` bytes off the front of `b`.
fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, tail) = (b.get(..n)?, b.get(n..)?);
    *b = tail;
    Some(head)
}

/// A length-prefixed field of `width` bytes of length.
fn vector<'a>(b: &mut &'a [u8], width: usize) -> Option<&'a [u8]> {
    let len = take(b, width)?
        .iter()
        .fold(0usize, |n, &x| (n << 8) | usize::from(x));
    take(b, len)
}

fn client_hello_asks(mut m: &[u8]) -> Option<bool> {
    if *take(&mut m, 1)?.first()? != CLIENT_HELLO {
        return None;
    }
    let mut body = vector(&mut m, 3)?;
    take(&mut body, 2 + 32)?; // legacy_version, random
    vector(&mut body, 1)?; // legacy_session_id
    vector(&mut body, 2)?; // cipher_suites
    vector(&mut body, 1)?; // legacy_compression_methods
    if body.is_empty() {
        return Some(false);
    }
    let mut exts = vector(&mut body, 2)?;
    while !exts.is_empty() {
        let kind = u16::from_be_bytes(take(&mut exts, 2)?.try_into().ok()?);
        let data = vector(&mut exts, 2)?;
        if kind == STATUS_REQUEST {
            return Some(data.first() == Some(&STATUS_TYPE_OCSP));
        }
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ClientHello with these extensions, in one record or split in two.
    fn hello(exts: &[(u16, &[u8])], split: bool) -> Vec<u8> {
        let mut ext_bytes = Vec::new();
        for (kind, data) in exts {
            ext_bytes.extend_from_slice(&kind.to_be_bytes());
            ext_bytes.extend_from_slice(&(data.len() as u16).to_be_bytes());
            ext_bytes.extend_from_slice(data);
        }
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7; 32]);
        body.extend_from_slice(&[0, 0, 2, 0x13, 0x01, 1, 0]);
        body.extend_from_slice(&(ext_bytes.len() as u16).to_be_bytes());
        body.extend_from_slice(&ext_bytes);
        let mut msg = vec![CLIENT_HELLO, 0, 0, body.len() as u8];
        msg.extend_from_slice(&body);
        let record = |frag: &[u8]| {
            let mut r = vec![HANDSHAKE, 3, 1];
            r.extend_from_slice(&(frag.len() as u16).to_be_bytes());
            r.extend_from_slice(frag);
            r
        };
        if split {
            let (a, b) = msg.split_at(20);
            [record(a), record(b)].concat()
        } else {
            record(&msg)
        }
    }

    #[test]
    fn a_status_request_is_seen_in_one_record_or_two() {
        let ask: &[(u16, &[u8])] = &[(0, b"\x00\x00"), (STATUS_REQUEST, &[1, 0, 0, 0, 0])];
        assert!(asks_status(&hello(ask, false)));
        assert!(asks_status(&hello(ask, true)));
        assert!(!asks_status(&hello(&[(0, b"\x00\x00")], false)));
        assert!(!asks_status(&hello(&[(STATUS_REQUEST, &[2])], false)));
    }

    #[test]
    fn a_truncated_hello_or_plain_bytes_ask_nothing() {
        let h = hello(&[(STATUS_REQUEST, &[1, 0, 0, 0, 0])], false);
        assert!(!asks_status(&h[..h.len() - 3]));
        assert!(!asks_status(b"GET / HTTP/1.1\r\n"));
        assert!(!asks_status(b""));
    }
}
