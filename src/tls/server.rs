//! The rustls server configuration of one `server` block (nginx's
//! `SSL_CTX` of a server): its certificates, protocols, cipher suites,
//! key-exchange groups, record size, session cache and tickets, the
//! protocols it offers by ALPN, and the OCSP responses it staples.

use std::sync::{Arc, RwLock};

use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ProducesTickets, ResolvesServerCert, StoresServerSessions};
use rustls::sign::CertifiedKey;
use rustls::{ServerConfig, SignatureScheme, SupportedProtocolVersion};

use super::material::Pair;
use super::ocsp::staple::{Staple, Stapled};

/// What one server's TLS is made of, decided by the configuration.
pub struct Settings {
    /// `ssl_certificate`/`ssl_certificate_key` pairs, in order.
    pub pairs: Vec<Pair>,
    /// Each pair's staple (`ssl_stapling`), by pair; `None` staples
    /// nothing.
    pub staples: Vec<Option<Arc<Staple>>>,
    /// The protocol versions offered (TLS 1.2, 1.3).
    pub versions: Vec<&'static SupportedProtocolVersion>,
    /// The TLS 1.2 cipher suites, by IANA code, in `ssl_ciphers`' order.
    pub tls12_suites: Vec<u16>,
    /// The TLS 1.3 cipher suites, by IANA code, in order.
    pub tls13_suites: Vec<u16>,
    /// The key-exchange groups, by IANA code, in `ssl_ecdh_curve`'s order.
    pub groups: Vec<u16>,
    /// `ssl_prefer_server_ciphers`.
    pub prefer_server_ciphers: bool,
    /// `ssl_buffer_size`: the largest record sent.
    pub buffer_size: usize,
    /// Where sessions are stored by id (`ssl_session_cache`); `None`
    /// stores none.
    pub sessions: Option<Arc<dyn StoresServerSessions>>,
    /// Tickets (`ssl_session_tickets`); `None` issues none.
    pub tickets: Option<Arc<dyn ProducesTickets>>,
    /// ALPN protocols offered, in preference order.
    pub alpn: Vec<Vec<u8>>,
    /// `ssl_early_data`: TLS 1.3 0-RTT data accepted, up to
    /// [`EARLY_DATA_MAX`] bytes, and answered before the handshake ends.
    pub early_data: bool,
    /// The certificates are loaded per handshake (names with variables):
    /// the resolver takes the ones [`with_handshake_certs`] hands it.
    pub per_handshake: bool,
    /// Client certificates (`ssl_verify_client`): asked for and judged
    /// after the handshake; `None` asks for none.
    pub client_verifier: Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>,
}

/// The protocols nginx's http module agrees to by ALPN, in its order
/// (`NGX_HTTP_ALPN_PROTOS`, without HTTP/2).
pub const HTTP_ALPN: [&[u8]; 3] = [b"http/1.1", b"http/1.0", b"http/0.9"];

/// How much early data a client may send: nginx's
/// `SSL_CTX_set_max_early_data(…, NGX_SSL_BUFSIZE)`.
pub const EARLY_DATA_MAX: u32 = 16384;

/// The smallest record rustls will fragment to (its `max_fragment_size`
/// lower bound is 32; nginx accepts any size, and a 0 or tiny one means
/// "as small as the library goes").
const MIN_RECORD: usize = 32;
/// TLS's largest record payload (RFC 8446 §5.1); rustls adds its header.
const MAX_RECORD: usize = 16384;

/// The configuration these settings make, or why it cannot be made.
pub fn build(provider: &CryptoProvider, s: Settings) -> Result<Arc<ServerConfig>, String> {
    let provider = super::restricted(provider, &s.tls12_suites, &s.tls13_suites, &s.groups)?;
    let choice = Choice::of(&s);
    let config = ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&s.versions)
        .map_err(|e| e.to_string())?;
    let config = match s.client_verifier {
        Some(v) => config.with_client_cert_verifier(v),
        None => config.with_no_client_auth(),
    };
    let resolver: Arc<dyn ResolvesServerCert> = if s.per_handshake {
        Arc::new(PerHandshake { choice })
    } else {
        Arc::new(ByClient {
            choice,
            plain: s.pairs.iter().map(|p| p.key.clone()).collect(),
            stapled: s
                .pairs
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    s.staples.get(i).cloned().flatten().map(|staple| Stapling {
                        plain: p.key.clone(),
                        staple,
                        memo: RwLock::new(None),
                    })
                })
                .collect(),
        })
    };
    let mut config = config.with_cert_resolver(resolver);
    config.ignore_client_order = s.prefer_server_ciphers;
    config.max_fragment_size = Some(s.buffer_size.clamp(MIN_RECORD, MAX_RECORD) + 5);
    config.alpn_protocols = s.alpn;
    if s.early_data {
        config.max_early_data_size = EARLY_DATA_MAX;
        // OpenSSL lets nginx answer early data before the client's
        // Finished (0.5-RTT data); so does this.
        config.send_half_rtt_data = true;
    }
    match s.sessions {
        Some(store) => config.session_storage = store,
        None => config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {}),
    }
    match s.tickets {
        Some(t) => config.ticketer = t,
        None => {
            config.ticketer = Arc::new(NoTickets);
        }
    }
    // OpenSSL sends two TLS 1.3 tickets after a handshake, and so does
    // rustls; with neither tickets nor a cache there is nothing to resume.
    if !config.ticketer.enabled() && !config.session_storage.can_cache() {
        config.send_tls13_tickets = 0;
    }
    Ok(Arc::new(config))
}

/// No tickets (`ssl_session_tickets off`).
#[derive(Debug)]
struct NoTickets;

impl ProducesTickets for NoTickets {
    fn enabled(&self) -> bool {
        false
    }
    fn lifetime(&self) -> u32 {
        0
    }
    fn encrypt(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn decrypt(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
}

/// The signature schemes OpenSSL 3.0 prefers as a server, in its order
/// (`tls12_sigalgs`): what decides between an RSA and an ECDSA
/// certificate under `ssl_prefer_server_ciphers` in TLS 1.3.
const SERVER_SCHEMES: [SignatureScheme; 9] = [
    SignatureScheme::ECDSA_NISTP256_SHA256,
    SignatureScheme::ECDSA_NISTP384_SHA384,
    SignatureScheme::ECDSA_NISTP521_SHA512,
    SignatureScheme::ED25519,
    SignatureScheme::RSA_PSS_SHA256,
    SignatureScheme::RSA_PSS_SHA384,
    SignatureScheme::RSA_PSS_SHA512,
    SignatureScheme::RSA_PKCS1_SHA256,
    SignatureScheme::RSA_PKCS1_SHA384,
];

/// The TLS 1.2 suites authenticated by an ECDSA certificate (the others
/// nowait has are RSA's).
const ECDSA_SUITES: [u16; 3] = [0xc02b, 0xc02c, 0xcca9];

/// How a server picks its certificate as OpenSSL picks among a server's
/// RSA and ECDSA certificates. In TLS 1.2 the cipher suite comes first
/// (the client's first that the server has, or the server's first that
/// the client offers under `ssl_prefer_server_ciphers`) and the
/// certificate is the one that suite authenticates with; in TLS 1.3 the
/// signature scheme does (the client's order, or the server's). The first
/// certificate when none fits.
#[derive(Clone, Debug)]
pub struct Choice {
    /// Whether the server speaks TLS 1.3 (then a client that offers a
    /// TLS 1.3 suite gets TLS 1.3).
    pub tls13: bool,
    /// The server's TLS 1.2 suites, in its order.
    pub tls12_suites: Vec<u16>,
    /// `ssl_prefer_server_ciphers`.
    pub prefer_server: bool,
}

impl Choice {
    /// The choice of a server made of `s`.
    fn of(s: &Settings) -> Choice {
        Choice {
            tls13: s
                .versions
                .iter()
                .any(|v| v.version == rustls::ProtocolVersion::TLSv1_3),
            tls12_suites: s.tls12_suites.clone(),
            prefer_server: s.prefer_server_ciphers,
        }
    }

    /// The index in `keys` of the certificate `hello` gets.
    pub fn pick(&self, keys: &[Arc<CertifiedKey>], hello: &ClientHello<'_>) -> usize {
        if keys.len() > 1 {
            let tls13 = self.tls13
                && hello
                    .cipher_suites()
                    .iter()
                    .any(|c| u16::from(*c) >> 8 == 0x13);
            let chosen = if tls13 {
                self.by_scheme(keys, hello)
            } else {
                self.by_suite(keys, hello)
            };
            if let Some(i) = chosen {
                return i;
            }
        }
        0
    }

    /// TLS 1.2's choice: by the suite.
    fn by_suite(&self, keys: &[Arc<CertifiedKey>], hello: &ClientHello<'_>) -> Option<usize> {
        let offered: Vec<u16> = hello
            .cipher_suites()
            .iter()
            .map(|&c| u16::from(c))
            .collect();
        let order: Vec<u16> = if self.prefer_server {
            self.tls12_suites
                .iter()
                .copied()
                .filter(|c| offered.contains(c))
                .collect()
        } else {
            offered
                .iter()
                .copied()
                .filter(|c| self.tls12_suites.contains(c))
                .collect()
        };
        order.into_iter().find_map(|suite| {
            let ecdsa = ECDSA_SUITES.contains(&suite);
            keys.iter().position(|k| {
                let alg = k.key.algorithm();
                (alg == rustls::SignatureAlgorithm::ECDSA) == ecdsa
                    && (ecdsa || alg == rustls::SignatureAlgorithm::RSA)
                    && k.key.choose_scheme(hello.signature_schemes()).is_some()
            })
        })
    }

    /// TLS 1.3's choice: by the signature scheme.
    fn by_scheme(&self, keys: &[Arc<CertifiedKey>], hello: &ClientHello<'_>) -> Option<usize> {
        let signing = |scheme: SignatureScheme| {
            keys.iter()
                .position(|k| k.key.choose_scheme(&[scheme]).is_some())
        };
        let offered = hello.signature_schemes();
        if self.prefer_server {
            SERVER_SCHEMES
                .iter()
                .filter(|s| offered.contains(s))
                .find_map(|&s| signing(s))
        } else {
            offered.iter().find_map(|&s| signing(s))
        }
    }
}

/// Picks each handshake's certificate ([`Choice`]) and gives it with its
/// staple while one is valid.
#[derive(Debug)]
struct ByClient {
    /// How the certificate is picked.
    choice: Choice,
    /// The certificates, without staples.
    plain: Vec<Arc<CertifiedKey>>,
    /// Each one's stapling, when `ssl_stapling` gives it one.
    stapled: Vec<Option<Stapling>>,
}

/// A certificate's staple, and the certificate with it attached for the
/// response it was made for (made once per response, not per handshake).
#[derive(Debug)]
struct Stapling {
    plain: Arc<CertifiedKey>,
    staple: Arc<Staple>,
    memo: RwLock<Option<(Arc<Stapled>, Arc<CertifiedKey>)>>,
}

impl Stapling {
    /// The certificate with the current staple, or without when there is
    /// none valid now (`ngx_ssl_certificate_status_callback`).
    fn key(&self) -> Arc<CertifiedKey> {
        let Some(current) = self.staple.current(super::unix_now()) else {
            return self.plain.clone();
        };
        if let Some((made_for, key)) = self.memo.read().unwrap_or_else(|e| e.into_inner()).as_ref()
        {
            if Arc::ptr_eq(made_for, &current) {
                return key.clone();
            }
        }
        let mut key = CertifiedKey::clone(&self.plain);
        key.ocsp = Some(current.der.clone());
        let key = Arc::new(key);
        *self.memo.write().unwrap_or_else(|e| e.into_inner()) = Some((current, key.clone()));
        key
    }
}

impl ResolvesServerCert for ByClient {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let i = self.choice.pick(&self.plain, &hello);
        match self.stapled.get(i) {
            Some(Some(s)) => Some(s.key()),
            _ => self.plain.get(i).cloned(),
        }
    }
}

thread_local! {
    /// The certificates loaded for the handshake whose ClientHello is
    /// being answered on this thread (names with variables).
    static HANDSHAKE_CERTS: std::cell::RefCell<Vec<Arc<CertifiedKey>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` (the ClientHello's answer, `Accepted::into_connection`) with
/// `certs` as the certificates a per-handshake configuration offers: the
/// resolver runs inside `f`, on this thread, and has no other way to know
/// the connection it answers.
pub fn with_handshake_certs<R>(certs: Vec<Arc<CertifiedKey>>, f: impl FnOnce() -> R) -> R {
    HANDSHAKE_CERTS.with(|c| *c.borrow_mut() = certs);
    let r = f();
    HANDSHAKE_CERTS.with(|c| c.borrow_mut().clear());
    r
}

/// The resolver of a server whose certificates are loaded per handshake
/// (no staple: nginx staples no certificate named with variables).
#[derive(Debug)]
struct PerHandshake {
    /// How the certificate is picked.
    choice: Choice,
}

impl ResolvesServerCert for PerHandshake {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        HANDSHAKE_CERTS.with(|c| {
            let keys = c.borrow();
            keys.get(self.choice.pick(&keys, &hello)).cloned()
        })
    }
}
