//! The ACME client's HTTP: one request per connection (`Connection:
//! close`), over TLS with rustls when the URL is `https://`, with blocking
//! sockets and timeouts. It runs only on an issuer's own thread, never on
//! a loop. The server's certificate is checked against the issuer's
//! `ssl_trusted_certificate` or the system's CA bundle, unless
//! `ssl_verify off`.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

/// How long connecting, and each read or write, may take.
pub const IO_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest response head accepted.
const MAX_HEAD: usize = 16 * 1024;
/// The largest response body accepted (a certificate chain is a few KB).
const MAX_BODY: usize = 1 << 20;
/// The system's CA bundle, as OpenSSL's default on Debian (and
/// `SSL_CERT_FILE` overrides it, as for OpenSSL).
pub const SYSTEM_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";
/// Sent in every request (RFC 8555 §6.1 asks for one).
pub const USER_AGENT: &str = concat!("nowait/", env!("CARGO_PKG_VERSION"), " (acme)");

/// An answer.
#[derive(Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The header fields, names lowercase, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of the field `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of the field `name` (lowercase).
    pub fn headers_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A URL's parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    /// `https`.
    pub tls: bool,
    /// The host (without brackets).
    pub host: String,
    /// The port.
    pub port: u16,
    /// Path and query (`/` at least).
    pub path: String,
}

impl Url {
    /// `http(s)://host[:port][/path]`; the error says what is wrong.
    pub fn parse(u: &str) -> Result<Url, String> {
        let (tls, rest) = if let Some(r) = u.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = u.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(format!("invalid uri: unsupported scheme in \"{u}\""));
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let default = if tls { 443 } else { 80 };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or("invalid uri: bad host")?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().map_err(|_| "invalid uri: bad port")?,
                None => default,
            };
            (h.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (
                    h.to_string(),
                    p.parse().map_err(|_| "invalid uri: bad port")?,
                ),
                None => (authority.to_string(), default),
            }
        };
        if host.is_empty() {
            return Err("invalid uri: no host".to_string());
        }
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_string()
        };
        Ok(Url {
            tls,
            host,
            port,
            path,
        })
    }

    /// `host[:port]` for the `Host` field.
    fn authority(&self) -> String {
        let h = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == if self.tls { 443 } else { 80 } {
            h
        } else {
            format!("{h}:{}", self.port)
        }
    }
}

/// An issuer's HTTP client: its TLS configuration.
#[derive(Clone)]
pub struct Client {
    tls: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Client")
    }
}

impl Client {
    /// A client trusting `trusted` (PEM; `None`: the system's bundle),
    /// or anything with `verify` off.
    pub fn new(trusted: Option<&[u8]>, verify: bool) -> Result<Client, String> {
        let provider = Arc::new(crate::tls::provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?;
        let config = if verify {
            let mut roots = rustls::RootCertStore::empty();
            let system;
            let pem = match trusted {
                Some(p) => p,
                None => {
                    let path = std::env::var_os("SSL_CERT_FILE")
                        .map(std::path::PathBuf::from)
                        .unwrap_or_else(|| SYSTEM_CA_BUNDLE.into());
                    system = std::fs::read(&path).unwrap_or_default();
                    &system
                }
            };
            use rustls::pki_types::CertificateDer;
            use rustls::pki_types::pem::PemObject;
            for c in CertificateDer::pem_slice_iter(pem).flatten() {
                let _ = roots.add(c);
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        } else {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
                .with_no_client_auth()
        };
        Ok(Client {
            tls: Arc::new(config),
        })
    }

    /// Sends `method url` with `body` (and its type), reads the answer.
    pub fn request(
        &self,
        method: &str,
        url: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Result<Response, String> {
        let u = Url::parse(url)?;
        let addrs = (u.host.as_str(), u.port)
            .to_socket_addrs()
            .map_err(|e| format!("name resolution error: {e}"))?;
        let mut last = None;
        let mut tcp = None;
        for a in addrs {
            match TcpStream::connect_timeout(&a, IO_TIMEOUT) {
                Ok(s) => {
                    tcp = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let tcp = match (tcp, last) {
            (Some(t), _) => t,
            (None, Some(e)) => return Err(format!("connection error: {e}")),
            (None, None) => {
                return Err(format!("name resolution error: no address for {}", u.host));
            }
        };
        let io = |e: std::io::Error| format!("connection error: {e}");
        tcp.set_read_timeout(Some(IO_TIMEOUT)).map_err(io)?;
        tcp.set_write_timeout(Some(IO_TIMEOUT)).map_err(io)?;
        let _ = tcp.set_nodelay(true);
        let mut head = format!(
            "{method} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: {USER_AGENT}\r\nAccept: */*\r\nConnection: close\r\n",
            u.path,
            u.authority()
        );
        if let Some(t) = content_type {
            head.push_str(&format!("Content-Type: {t}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        let request = [head.as_bytes(), body].concat();
        if u.tls {
            let name = rustls::pki_types::ServerName::try_from(u.host.clone())
                .map_err(|e| format!("invalid uri: {e}"))?;
            let conn = rustls::ClientConnection::new(self.tls.clone(), name)
                .map_err(|e| format!("request error: {e}"))?;
            let mut s = rustls::StreamOwned::new(conn, tcp);
            s.write_all(&request).map_err(io)?;
            s.flush().map_err(io)?;
            read_response(&mut s)
        } else {
            let mut s = tcp;
            s.write_all(&request).map_err(io)?;
            read_response(&mut s)
        }
    }
}

/// Reads a response: the head, then the body by its framing (chunked,
/// `Content-Length`, or to the end of the connection).
fn read_response(s: &mut impl Read) -> Result<Response, String> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 8192];
    let (status, headers, head_len) = loop {
        let n = read_some(s, &mut chunk)?;
        if n == 0 {
            return Err("request error: connection closed before message completed".to_string());
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut fields = [httparse::EMPTY_HEADER; 64];
        let mut r = httparse::Response::new(&mut fields);
        match r.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                let headers = r
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_ascii_lowercase(),
                            String::from_utf8_lossy(h.value).trim().to_string(),
                        )
                    })
                    .collect::<Vec<_>>();
                break (r.code.unwrap_or(0), headers, len);
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => continue,
            Ok(httparse::Status::Partial) => {
                return Err("request error: response head too large".to_string());
            }
            Err(e) => return Err(format!("request error: {e}")),
        }
    };
    let mut rest = buf.split_off(head_len);
    let find = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let chunked =
        find("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let length = find("content-length").and_then(|v| v.parse::<usize>().ok());
    let body = if chunked {
        loop {
            if let Some(b) = dechunk(&rest)? {
                break b;
            }
            let n = read_some(s, &mut chunk)?;
            if n == 0 {
                return Err("response body read error: unexpected end of chunked body".to_string());
            }
            rest.extend_from_slice(&chunk[..n]);
            if rest.len() > MAX_BODY {
                return Err("response body read error: body too large".to_string());
            }
        }
    } else {
        let want = length.unwrap_or(MAX_BODY);
        if want > MAX_BODY {
            return Err("response body read error: body too large".to_string());
        }
        while rest.len() < want {
            let n = read_some(s, &mut chunk)?;
            if n == 0 {
                if length.is_some() {
                    return Err("response body read error: unexpected end of body".to_string());
                }
                break;
            }
            rest.extend_from_slice(&chunk[..n]);
        }
        rest.truncate(want);
        rest
    };
    Ok(Response {
        status,
        headers,
        body,
    })
}

/// One read; a TLS peer that closes without `close_notify` is the end.
fn read_some(s: &mut impl Read, buf: &mut [u8]) -> Result<usize, String> {
    match s.read(buf) {
        Ok(n) => Ok(n),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(0),
        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(0),
        Err(e) => Err(format!("connection error: {e}")),
    }
}

/// The body of a complete chunked message in `b`, `None` when more is
/// needed.
fn dechunk(b: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let Some(eol) = b[at..].windows(2).position(|w| w == b"\r\n") else {
            return Ok(None);
        };
        let line = String::from_utf8_lossy(&b[at..at + eol]);
        let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| "response body read error: invalid chunk size".to_string())?;
        at += eol + 2;
        if size == 0 {
            return Ok(Some(out));
        }
        if b.len() < at + size + 2 {
            return Ok(None);
        }
        out.extend_from_slice(&b[at..at + size]);
        at += size + 2;
    }
}

/// `ssl_verify off`: any certificate is taken (the signatures of the
/// handshake are still checked).
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_split() {
        let u = Url::parse("https://acme.test:14000/dir?x").unwrap();
        assert_eq!(
            (u.tls, u.host.as_str(), u.port, u.path.as_str()),
            (true, "acme.test", 14000, "/dir?x")
        );
        let u = Url::parse("http://[::1]/").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 80));
        assert!(Url::parse("ftp://x/").is_err());
    }

    #[test]
    fn a_chunked_body_is_whole_only_at_its_last_chunk() {
        assert_eq!(dechunk(b"3\r\nabc\r\n").unwrap(), None);
        assert_eq!(
            dechunk(b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n").unwrap(),
            Some(b"abcde".to_vec())
        );
    }

    #[test]
    fn a_response_is_read_by_its_length() {
        let raw = b"HTTP/1.1 201 Created\r\nLocation: /acct/1\r\nContent-Length: 2\r\n\r\n{}junk";
        let r = read_response(&mut &raw[..]).unwrap();
        assert_eq!(r.status, 201);
        assert_eq!(r.header("location"), Some("/acct/1"));
        assert_eq!(r.body, b"{}");
    }
}
