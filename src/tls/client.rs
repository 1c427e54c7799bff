//! The rustls client configuration of a location that proxies over TLS
//! (nginx's `SSL_CTX` made by `ngx_http_proxy_set_ssl` from the
//! `proxy_ssl_*` settings): the protocols and cipher suites offered, the
//! client certificate, and whether sessions are kept for resumption
//! (`proxy_ssl_session_reuse`). Whether the server name is sent
//! (`proxy_ssl_server_name`) is each connection's: a connection that sends
//! none is made for the peer's address, which rustls never sends.
//!
//! The handshake checks only what TLS itself needs (the server's
//! signature over the handshake, with the key of the certificate it sent);
//! the certificate is judged afterwards, as nginx does it
//! (`proxy_ssl_verify`, [`super::verify`]), so that a failure is said in
//! OpenSSL's verify result words, and nothing is verified at all with
//! `proxy_ssl_verify off`.
//!
//! Sessions are kept per upstream server, as nginx keeps one per peer
//! (`ngx_http_upstream_ssl_save_session`): each peer gets its own copy of
//! the configuration with a session store of its own, made the first time
//! it is needed.
//!
//! What this module must not do: read a file or wait.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ClientSessionMemoryCache, ResolvesClientCert, Resumption};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme, SupportedProtocolVersion};

/// Server names (SNI, or the address when none is sent) a peer's session
/// store keeps sessions for: one name per request is usual, a
/// `proxy_ssl_name` with variables may make several.
const NAMES_PER_PEER: usize = 16;
/// The most certificates loaded per request (`proxy_ssl_certificate` with
/// variables) a location keeps a configuration for; when full it starts
/// again.
const CERT_CONFIGS: usize = 1024;
/// The most peers with a session store of their own per location; beyond
/// them (a `proxy_pass` with variables resolving ever new addresses) a
/// connection resumes through the location's shared store.
const PEER_STORES: usize = 1024;

/// What a location's TLS to its upstreams is made of.
pub struct Settings {
    /// The protocol versions offered (TLS 1.2, 1.3).
    pub versions: Vec<&'static SupportedProtocolVersion>,
    /// The TLS 1.2 cipher suites by IANA code, in `proxy_ssl_ciphers`' order.
    pub tls12_suites: Vec<u16>,
    /// The TLS 1.3 cipher suites by IANA code, in order.
    pub tls13_suites: Vec<u16>,
    /// The key-exchange groups by IANA code, in order.
    pub groups: Vec<u16>,
    /// `proxy_ssl_certificate` with its key, sent when a server asks.
    pub certificate: Option<Arc<CertifiedKey>>,
    /// `proxy_ssl_session_reuse`.
    pub session_reuse: bool,
}

/// A certificate loaded per request, and the configuration sending it.
type CertConfig = (Arc<CertifiedKey>, Arc<ClientConfig>);

/// A location's client configuration, and its peers' copies.
pub struct UpstreamTls {
    /// The configuration (its session store shared by the peers beyond
    /// [`PEER_STORES`]).
    base: Arc<ClientConfig>,
    /// Each peer's copy with its own session store, by the peer's name
    /// (`None` without `proxy_ssl_session_reuse`: nothing is stored).
    peers: Option<Mutex<HashMap<String, Arc<ClientConfig>>>>,
    /// The copies sending a certificate loaded per request, by the pair's
    /// address (the pair is held with its copy, so the address names it
    /// alone), each with a session store of its own: a session made with
    /// one certificate is never resumed with another.
    by_cert: Mutex<HashMap<usize, CertConfig>>,
}

impl std::fmt::Debug for UpstreamTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamTls")
            .field("session_reuse", &self.peers.is_some())
            .finish()
    }
}

impl UpstreamTls {
    /// The configuration these settings make, or why it cannot be made.
    pub fn new(provider: &CryptoProvider, s: Settings) -> Result<UpstreamTls, String> {
        let provider = Arc::new(super::restricted(
            provider,
            &s.tls12_suites,
            &s.tls13_suites,
            &s.groups,
        )?);
        let verifier = Arc::new(Unverified {
            algs: provider.signature_verification_algorithms,
        });
        let builder = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&s.versions)
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let mut config = match s.certificate {
            Some(key) => builder.with_client_cert_resolver(Arc::new(Always(key))),
            None => builder.with_no_client_auth(),
        };
        // nginx 1.22 offers no ALPN to upstreams.
        config.alpn_protocols = Vec::new();
        config.resumption = if s.session_reuse {
            Resumption::store(Arc::new(ClientSessionMemoryCache::new(NAMES_PER_PEER)))
        } else {
            Resumption::disabled()
        };
        Ok(UpstreamTls {
            base: Arc::new(config),
            peers: s.session_reuse.then(|| Mutex::new(HashMap::new())),
            by_cert: Mutex::new(HashMap::new()),
        })
    }

    /// The configuration sending `key`, a certificate loaded for one
    /// request (`proxy_ssl_certificate` with variables).
    pub fn config_with(&self, key: &Arc<CertifiedKey>) -> Arc<ClientConfig> {
        let id = Arc::as_ptr(key) as usize;
        let mut all = self.by_cert.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, c)) = all.get(&id) {
            return c.clone();
        }
        if all.len() >= CERT_CONFIGS {
            all.clear();
        }
        let mut own = (*self.base).clone();
        own.client_auth_cert_resolver = Arc::new(Always(key.clone()));
        if self.peers.is_some() {
            own.resumption =
                Resumption::store(Arc::new(ClientSessionMemoryCache::new(NAMES_PER_PEER)));
        }
        let own = Arc::new(own);
        all.insert(id, (key.clone(), own.clone()));
        own
    }

    /// The configuration for a connection to the peer named `peer`: its
    /// own copy, with its own sessions, when sessions are reused.
    pub fn config_for(&self, peer: &str) -> Arc<ClientConfig> {
        let Some(peers) = &self.peers else {
            return self.base.clone();
        };
        let mut peers = peers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = peers.get(peer) {
            return c.clone();
        }
        if peers.len() >= PEER_STORES {
            return self.base.clone();
        }
        let mut own = (*self.base).clone();
        own.resumption = Resumption::store(Arc::new(ClientSessionMemoryCache::new(NAMES_PER_PEER)));
        let own = Arc::new(own);
        peers.insert(peer.to_string(), own.clone());
        own
    }
}

/// The server's certificate taken as it comes during the handshake (nginx
/// judges it afterwards, if at all): it must parse, and the handshake's
/// signatures must be made with its key.
#[derive(Debug)]
struct Unverified {
    algs: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if !super::peer_key::readable(end_entity) {
            return Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::BadEncoding,
            ));
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        super::peer_key::verify_tls12(message, cert, dss, &self.algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        super::peer_key::verify_tls13(message, cert, dss, &self.algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

/// `proxy_ssl_certificate`: sent whenever a server asks for one, whatever
/// authorities it names, as OpenSSL sends the certificate it was given.
#[derive(Debug)]
struct Always(Arc<CertifiedKey>);

impl ResolvesClientCert for Always {
    fn resolve(&self, _: &[&[u8]], _: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}
