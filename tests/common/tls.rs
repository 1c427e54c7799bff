//! A TLS client for the tests: rustls over a blocking socket, trusting the
//! test CA (`tests/tls/ca.crt`), with the knobs the tests turn (protocol
//! versions, signature schemes, session resumption, ALPN), and the
//! fixtures' paths.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme, StreamOwned};

use super::response::{Response, parse_first};

/// The folder of the TLS fixtures (made by `tests/tls/make-certs.sh`).
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/tls")
}

/// A fixture file's path, as text for a configuration.
pub fn fixture(name: &str) -> String {
    fixtures().join(name).to_string_lossy().into_owned()
}

/// What a client offers.
#[derive(Clone)]
pub struct Options {
    /// The protocol versions offered.
    pub versions: Vec<&'static rustls::SupportedProtocolVersion>,
    /// The signature schemes offered (`None`: rustls's own list).
    pub schemes: Option<Vec<SignatureScheme>>,
    /// ALPN protocols offered.
    pub alpn: Vec<Vec<u8>>,
    /// Keep sessions for resumption (shared by clients made from one
    /// [`client`] call).
    pub resume: bool,
    /// Offer tickets (TLS 1.2 session tickets; TLS 1.3 always uses them).
    pub tickets: bool,
    /// A client certificate to present: its PEM chain's and key's paths.
    pub client_cert: Option<(String, String)>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            versions: vec![&rustls::version::TLS13, &rustls::version::TLS12],
            schemes: None,
            alpn: Vec::new(),
            resume: false,
            tickets: true,
            client_cert: None,
        }
    }
}

/// A client configuration trusting the test CA.
pub fn client(opts: &Options) -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    let ca = CertificateDer::from_pem_file(fixtures().join("ca.crt")).expect("the test CA");
    roots.add(ca).expect("the test CA is a CA");
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&opts.versions)
        .expect("the versions");
    let mut config = match (&opts.schemes, &opts.client_cert) {
        (None, Some((cert, key))) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .expect("the client certificate")
                .collect::<Result<Vec<_>, _>>()
                .expect("the client certificate");
            let key = rustls::pki_types::PrivateKeyDer::from_pem_file(key).expect("its key");
            builder
                .with_root_certificates(roots)
                .with_client_auth_cert(chain, key)
                .expect("a client certificate and key")
        }
        (None, None) => builder.with_root_certificates(roots).with_no_client_auth(),
        (Some(schemes), _) => {
            let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .expect("a verifier");
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Schemes {
                    inner,
                    schemes: schemes.clone(),
                }))
                .with_no_client_auth()
        }
    };
    config.alpn_protocols = opts.alpn.clone();
    if !opts.resume {
        config.resumption = rustls::client::Resumption::disabled();
    } else if !opts.tickets {
        config.resumption = rustls::client::Resumption::in_memory_sessions(32)
            .tls12_resumption(rustls::client::Tls12Resumption::SessionIdOnly);
    }
    Arc::new(config)
}

/// A verifier that offers only some signature schemes (to see which
/// certificate a server picks for them).
#[derive(Debug)]
struct Schemes {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    schemes: Vec<SignatureScheme>,
}

impl ServerCertVerifier for Schemes {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.schemes.clone()
    }
}

/// A TLS connection to `port` naming `sni`.
pub type Stream = StreamOwned<ClientConnection, TcpStream>;

/// Connects and completes the handshake.
pub fn connect(port: u16, sni: &str, config: &Arc<ClientConfig>) -> std::io::Result<Stream> {
    let sock = TcpStream::connect(("127.0.0.1", port))?;
    sock.set_read_timeout(Some(Duration::from_secs(10)))?;
    let name = ServerName::try_from(sni.to_string()).map_err(std::io::Error::other)?;
    let conn = ClientConnection::new(config.clone(), name).map_err(std::io::Error::other)?;
    let mut s = StreamOwned::new(conn, sock);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock)?;
    }
    Ok(s)
}

/// Sends `GET path` (closing) and reads the whole response.
pub fn get_on(s: &mut Stream, host: &str, path: &str) -> Response {
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut got = Vec::new();
    match s.read_to_end(&mut got) {
        Ok(_) => {}
        // A close without close_notify still ends the response.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {}
        Err(e) => panic!("read: {e} after {} bytes", got.len()),
    }
    parse_first(&got, false, true).expect("a response").0
}

/// Sends `GET path` on a kept-alive connection and reads one response.
pub fn get_keepalive(s: &mut Stream, host: &str, path: &str) -> Response {
    write!(s, "GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n").expect("write");
    let mut got = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        if let Ok((r, _)) = parse_first(&got, false, false) {
            return r;
        }
        let n = s.read(&mut buf).expect("read");
        assert!(n > 0, "closed after {} bytes", got.len());
        got.extend_from_slice(&buf[..n]);
    }
}

/// One closing `GET` on a new connection.
pub fn get(port: u16, sni: &str, path: &str) -> Response {
    let config = client(&Options::default());
    let mut s = connect(port, sni, &config).expect("the handshake");
    get_on(&mut s, sni, path)
}

/// The subject of the certificate the server sent, as DER bytes' text
/// (enough to tell the fixtures apart: their common names).
pub fn peer_names(s: &Stream) -> String {
    let certs = s.conn.peer_certificates().unwrap_or_default();
    let der = certs
        .first()
        .map(|c| c.as_ref().to_vec())
        .unwrap_or_default();
    String::from_utf8_lossy(&der).into_owned()
}

/// A verifier that keeps the OCSP response the server stapled (rustls
/// asks for one in every ClientHello) and otherwise verifies as usual.
#[derive(Debug)]
struct KeepStaple {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    seen: Arc<std::sync::Mutex<Option<Vec<u8>>>>,
}

impl ServerCertVerifier for KeepStaple {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if !ocsp.is_empty() {
            *self.seen.lock().unwrap() = Some(ocsp.to_vec());
        }
        self.inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// One handshake with `port` naming `sni` over `version`: the OCSP
/// response the server stapled, if any, and the connection (to go on
/// with a request).
pub fn handshake_staple(
    port: u16,
    sni: &str,
    version: &'static rustls::SupportedProtocolVersion,
) -> (Option<Vec<u8>>, Stream) {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    let ca = CertificateDer::from_pem_file(fixtures().join("ca.crt")).expect("the test CA");
    roots.add(ca).expect("the test CA is a CA");
    let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .expect("a verifier");
    let seen = Arc::new(std::sync::Mutex::new(None));
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[version])
        .expect("the version")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(KeepStaple {
            inner,
            seen: seen.clone(),
        }))
        .with_no_client_auth();
    config.resumption = rustls::client::Resumption::disabled();
    let s = connect(port, sni, &Arc::new(config)).expect("the handshake");
    let staple = seen.lock().unwrap().take();
    (staple, s)
}

/// What a TLS origin (a scripted upstream behind TLS) serves.
#[derive(Clone)]
pub struct Origin {
    /// The fixture its certificate and key come from (`NAME.crt`,
    /// `NAME.key`).
    pub cert: &'static str,
    /// The protocol versions it speaks.
    pub versions: Vec<&'static rustls::SupportedProtocolVersion>,
    /// Asks clients for a certificate issued by the test CA (a client may
    /// send none).
    pub client_auth: bool,
}

impl Default for Origin {
    fn default() -> Origin {
        Origin {
            cert: "localhost-ec",
            versions: vec![&rustls::version::TLS13, &rustls::version::TLS12],
            client_auth: false,
        }
    }
}

/// An origin's one certificate, whatever the client asks.
#[derive(Debug)]
struct OriginCert(Arc<rustls::sign::CertifiedKey>);

impl rustls::server::ResolvesServerCert for OriginCert {
    fn resolve(
        &self,
        _: rustls::server::ClientHello<'_>,
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// A server configuration for an origin: its certificate chain, a session
/// cache (resumption by session ID in TLS 1.2, by ticket in TLS 1.3).
pub fn origin(o: &Origin) -> Arc<rustls::ServerConfig> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(fixtures().join(format!("{}.crt", o.cert)))
            .expect("the origin's certificate")
            .map(|c| c.expect("a certificate"))
            .collect();
    let key =
        rustls::pki_types::PrivateKeyDer::from_pem_file(fixtures().join(format!("{}.key", o.cert)))
            .expect("the origin's key");
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&o.versions)
        .expect("the versions");
    let builder = if o.client_auth {
        let mut roots = rustls::RootCertStore::empty();
        let ca = CertificateDer::from_pem_file(fixtures().join("ca.crt")).expect("the test CA");
        roots.add(ca).expect("the test CA is a CA");
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .expect("a client verifier");
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    // Not `with_single_cert`, whose key check parses the certificate with
    // webpki and refuses X.509 v1 ones, which origins may serve.
    let signing = rustls::crypto::aws_lc_rs::default_provider()
        .key_provider
        .load_private_key(key)
        .expect("the origin's key");
    let certified = Arc::new(rustls::sign::CertifiedKey::new(chain, signing));
    let mut config = builder.with_cert_resolver(Arc::new(OriginCert(certified)));
    config.session_storage = rustls::server::ServerSessionMemoryCache::new(64);
    Arc::new(config)
}
