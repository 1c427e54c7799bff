//! What rustls's `ClientHello` does not tell about a client's hello, read
//! from its bytes as they came off the socket: the server name exactly as
//! sent (`$ssl_server_name`; rustls gives it lower-cased, and drops an IP
//! address, which OpenSSL hands over), whether it offers TLS 1.3,
//! whether it asks for a TLS 1.2 session ticket (RFC 5077's
//! `session_ticket` extension), which decides, as in OpenSSL, whether a
//! new TLS 1.2 session gets an id (`$ssl_session_id`), and whether it
//! wants the certificate's OCSP status (`status_request`, RFC 6066 §8):
//! OpenSSL calls nginx's status callback only for such a client, and the
//! callback is what starts a fetch from the responder; rustls staples
//! what it is given, so the server reads the hello's bytes itself.
//!
//! The bytes are the records read before rustls accepted the hello:
//! handshake records (RFC 8446 §5.1) whose fragments, joined, start with
//! the ClientHello (§4.1.2). Anything that does not parse tells nothing.

/// A TLS record's header: type, version, length.
const RECORD_HEADER: usize = 5;
/// The record type of handshake messages.
const HANDSHAKE: u8 = 0x16;
/// The handshake type of a ClientHello.
const CLIENT_HELLO: u8 = 1;
/// The `server_name` extension (RFC 6066 §3).
const SERVER_NAME: u16 = 0x0000;
/// The `session_ticket` extension (RFC 5077 §3.2).
const SESSION_TICKET: u16 = 0x0023;
/// The `supported_versions` extension (RFC 8446 §4.2.1).
const SUPPORTED_VERSIONS: u16 = 0x002b;
/// TLS 1.3's version code.
const TLS13: u16 = 0x0304;
/// The `status_request` extension (RFC 6066 §8).
const STATUS_REQUEST: u16 = 5;
/// `status_type` `ocsp`.
const STATUS_TYPE_OCSP: u8 = 1;
/// The longest ClientHello read (a handshake message may span records;
/// a bigger hello tells nothing).
pub const MAX_HELLO: usize = 16384 + RECORD_HEADER;

/// What a ClientHello's bytes tell.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hello {
    /// The `host_name` of its `server_name` extension, as sent.
    pub server_name: Option<String>,
    /// Whether it asks for a TLS 1.2 session ticket.
    pub wants_ticket: bool,
    /// Whether it offers TLS 1.3 (`supported_versions`).
    pub offers_tls13: bool,
    /// Its `legacy_session_id`: in TLS 1.2, the session it offers to
    /// resume (the id OpenSSL then reports, by cache or by ticket).
    pub session_id: Vec<u8>,
    /// Whether it asks for the certificate's OCSP status.
    pub asks_status: bool,
}

/// The handshake messages carried by the handshake records at the start
/// of `records`, joined.
fn handshake_bytes(mut records: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while records.len() >= RECORD_HEADER && records[0] == HANDSHAKE {
        let len = usize::from(u16::from_be_bytes([records[3], records[4]]));
        let Some(fragment) = records.get(RECORD_HEADER..RECORD_HEADER + len) else {
            out.extend_from_slice(&records[RECORD_HEADER..]);
            break;
        };
        out.extend_from_slice(fragment);
        records = &records[RECORD_HEADER + len..];
    }
    out
}

/// A cursor over a message's fields.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<usize> {
        Some(usize::from(self.take(1)?[0]))
    }
    fn u16(&mut self) -> Option<usize> {
        let b = self.take(2)?;
        Some(usize::from(u16::from_be_bytes([b[0], b[1]])))
    }
    /// A field with a length prefix of `width` bytes.
    fn vec(&mut self, width: usize) -> Option<&'a [u8]> {
        let n = match width {
            1 => self.u8()?,
            _ => self.u16()?,
        };
        self.take(n)
    }
}

/// Extensions, each with its body, in order.
type Extensions = Vec<(u16, Vec<u8>)>;

/// The session id and the extensions of the ClientHello in `records`;
/// `None` when the bytes hold no whole ClientHello.
fn parse(records: &[u8]) -> Option<(Vec<u8>, Extensions)> {
    let msg = handshake_bytes(records);
    let mut r = Reader(&msg);
    if r.u8()? != usize::from(CLIENT_HELLO) {
        return None;
    }
    let len = r.take(3)?;
    let len = (usize::from(len[0]) << 16) | (usize::from(len[1]) << 8) | usize::from(len[2]);
    let mut r = Reader(r.take(len)?);
    r.take(2 + 32)?; // legacy_version, random
    let session_id = r.vec(1)?.to_vec();
    r.vec(2)?; // cipher_suites
    r.vec(1)?; // legacy_compression_methods
    let mut exts = Reader(r.vec(2)?);
    let mut out = Vec::new();
    while !exts.0.is_empty() {
        let t = u16::try_from(exts.u16()?).ok()?;
        out.push((t, exts.vec(2)?.to_vec()));
    }
    Some((session_id, out))
}

/// The extensions of the ClientHello in `records`, in order, each with
/// its body; `None` when the bytes hold no whole ClientHello.
pub fn extensions(records: &[u8]) -> Option<Extensions> {
    parse(records).map(|(_, e)| e)
}

/// What the ClientHello in `records` tells (nothing when it does not
/// parse).
pub fn read(records: &[u8]) -> Hello {
    let Some((session_id, exts)) = parse(records) else {
        return Hello::default();
    };
    let mut hello = Hello {
        session_id,
        ..Hello::default()
    };
    for (t, body) in exts {
        match t {
            SESSION_TICKET => hello.wants_ticket = true,
            STATUS_REQUEST => hello.asks_status = body.first() == Some(&STATUS_TYPE_OCSP),
            SERVER_NAME => hello.server_name = host_name(&body),
            SUPPORTED_VERSIONS => {
                if let Some(list) = Reader(&body).vec(1) {
                    hello.offers_tls13 = list
                        .chunks_exact(2)
                        .any(|v| u16::from_be_bytes([v[0], v[1]]) == TLS13);
                }
            }
            _ => {}
        }
    }
    hello
}

/// Whether the records in `bytes` (as read from the socket before the
/// handshake) hold a ClientHello asking for the OCSP status.
pub fn asks_status(bytes: &[u8]) -> bool {
    read(bytes).asks_status
}

/// The `host_name` entry of a `server_name` extension's body.
fn host_name(body: &[u8]) -> Option<String> {
    let mut list = Reader(Reader(body).vec(2)?);
    while !list.0.is_empty() {
        let kind = list.u8()?;
        let name = list.vec(2)?;
        if kind == 0 {
            return Some(String::from_utf8_lossy(name).into_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ClientHello with `exts` (type, body), split into records of at
    /// most `max` bytes.
    fn hello(exts: &[(u16, &[u8])], max: usize) -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7; 32]);
        body.extend_from_slice(&[32]);
        body.extend_from_slice(&[9; 32]);
        body.extend_from_slice(&[0, 2, 0x13, 0x01, 1, 0]);
        let mut e = Vec::new();
        for (t, b) in exts {
            e.extend_from_slice(&t.to_be_bytes());
            e.extend_from_slice(&(b.len() as u16).to_be_bytes());
            e.extend_from_slice(b);
        }
        body.extend_from_slice(&(e.len() as u16).to_be_bytes());
        body.extend_from_slice(&e);
        let mut msg = vec![CLIENT_HELLO, 0, (body.len() >> 8) as u8, body.len() as u8];
        msg.extend_from_slice(&body);
        let mut out = Vec::new();
        for chunk in msg.chunks(max) {
            out.extend_from_slice(&[HANDSHAKE, 3, 1, 0, chunk.len() as u8]);
            out.extend_from_slice(chunk);
        }
        out
    }

    /// A `server_name` extension's body naming `name`.
    fn sni(name: &str) -> Vec<u8> {
        let n = name.len() as u16;
        let mut b = (n + 3).to_be_bytes().to_vec();
        b.push(0);
        b.extend_from_slice(&n.to_be_bytes());
        b.extend_from_slice(name.as_bytes());
        b
    }

    #[test]
    fn a_hello_is_read_across_records() {
        let name = sni("WWW.Example.com");
        let h = hello(
            &[
                (0, &name),
                (SESSION_TICKET, b""),
                (0x002b, b"\x04\x03\x04\x03\x03"),
            ],
            40,
        );
        let types: Vec<u16> = extensions(&h)
            .unwrap()
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        assert_eq!(types, vec![0, SESSION_TICKET, 0x002b]);
        assert_eq!(
            read(&h),
            Hello {
                server_name: Some("WWW.Example.com".into()),
                wants_ticket: true,
                offers_tls13: true,
                session_id: vec![9; 32],
                asks_status: false,
            }
        );
        let h = hello(&[(0, &sni("127.0.0.1")), (0x002b, b"\x02\x03\x03")], 200);
        assert_eq!(read(&h).server_name.as_deref(), Some("127.0.0.1"));
        assert!(!read(&h).wants_ticket && !read(&h).offers_tls13);
    }

    #[test]
    fn a_cut_hello_tells_nothing() {
        let h = hello(&[(SESSION_TICKET, b"")], 200);
        assert_eq!(read(&h[..h.len() - 3]), Hello::default());
        assert_eq!(read(b"GET / HTTP/1.1\r\n"), Hello::default());
        assert_eq!(read(&[]), Hello::default());
    }

    #[test]
    fn a_status_request_is_seen_in_one_record_or_two() {
        let ask: &[(u16, &[u8])] = &[(0, b"\x00\x00"), (STATUS_REQUEST, &[1, 0, 0, 0, 0])];
        assert!(asks_status(&hello(ask, 200)));
        assert!(asks_status(&hello(ask, 20)));
        assert!(!asks_status(&hello(&[(0, b"\x00\x00")], 200)));
        assert!(!asks_status(&hello(&[(STATUS_REQUEST, &[2])], 200)));
    }

    #[test]
    fn a_truncated_hello_or_plain_bytes_ask_nothing() {
        let h = hello(&[(STATUS_REQUEST, &[1, 0, 0, 0, 0])], 200);
        assert!(!asks_status(&h[..h.len() - 3]));
        assert!(!asks_status(b"GET / HTTP/1.1\r\n"));
        assert!(!asks_status(b""));
    }
}
