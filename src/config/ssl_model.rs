//! The typed values of nginx's ssl module (`ngx_http_ssl_module`) as the
//! configuration writes them: protocols, client verification, the session
//! cache. What they are loaded into (certificates, keys, ticket keys) is
//! `crate::tls::material`; the rustls configuration made of both is built
//! per generation by the server.

use std::path::PathBuf;

use super::source::Loc;
use super::template::Template;

/// The protocols `ssl_protocols` names, as nginx's bitmask
/// (`NGX_SSL_SSLv2` …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Protocols(pub u8);

impl Protocols {
    /// `SSLv2`.
    pub const SSLV2: u8 = 1;
    /// `SSLv3`.
    pub const SSLV3: u8 = 1 << 1;
    /// `TLSv1`.
    pub const TLSV1: u8 = 1 << 2;
    /// `TLSv1.1`.
    pub const TLSV1_1: u8 = 1 << 3;
    /// `TLSv1.2`.
    pub const TLSV1_2: u8 = 1 << 4;
    /// `TLSv1.3`.
    pub const TLSV1_3: u8 = 1 << 5;
    /// The names `ssl_protocols` takes, in bit order.
    pub const NAMES: [&'static str; 6] =
        ["SSLv2", "SSLv3", "TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"];
    /// nginx 1.22's default: `TLSv1 TLSv1.1 TLSv1.2` (TLSv1.3 joined the
    /// default in 1.23.4), of which nowait speaks TLSv1.2.
    pub const DEFAULT: Protocols = Protocols(Self::TLSV1 | Self::TLSV1_1 | Self::TLSV1_2);

    /// Whether `bit` is set.
    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }

    /// The protocols nowait speaks of these (rustls has TLS 1.2 and 1.3
    /// only).
    pub fn usable(self) -> Protocols {
        Protocols(self.0 & (Self::TLSV1_2 | Self::TLSV1_3))
    }

    /// The names set, in nginx's order.
    pub fn names(self) -> Vec<&'static str> {
        Self::NAMES
            .iter()
            .enumerate()
            .filter(|(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, n)| *n)
            .collect()
    }
}

/// `ssl_verify_client` (nginx's `verify` values 0–3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum VerifyClient {
    /// `off`: no certificate is asked for.
    #[default]
    Off,
    /// `on`: a certificate is required and must verify.
    On,
    /// `optional`: asked for; one that is sent must verify.
    Optional,
    /// `optional_no_ca`: asked for, not verified against a CA (the
    /// application checks it; `$ssl_client_verify` says FAILED).
    OptionalNoCa,
}

/// `ssl_ocsp` (nginx's `ocsp` values 0–2): which certificates of a
/// client's chain are asked about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OcspCheck {
    /// `off`: none.
    #[default]
    Off,
    /// `on`: every certificate but the root.
    On,
    /// `leaf`: the client's own certificate alone.
    Leaf,
}

/// `ssl_ocsp_cache shared:NAME:SIZE`: the zone where the statuses of
/// client certificates are kept, shared by every worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OcspCacheZone {
    /// The zone's name.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
}

/// A server's OCSP for client certificates (nginx's
/// `ngx_ssl_ocsp_conf_t`), once `ssl_ocsp` is on.
#[derive(Clone, Debug)]
pub struct ClientOcspPlan {
    /// `ssl_ocsp leaf`: the client's certificate alone is asked about.
    pub leaf_only: bool,
    /// `ssl_ocsp_responder`, when set: asked about every certificate,
    /// instead of the one each names (its Authority Information Access).
    pub responder: Option<ResponderUrl>,
    /// `ssl_ocsp_cache`.
    pub cache: Option<OcspCacheZone>,
    /// The certificates the answers' signers must chain to: those of
    /// `ssl_client_certificate` and `ssl_trusted_certificate` (the
    /// `SSL_CTX`'s store, which nginx hands `OCSP_basic_verify`), and
    /// where a client's chain finds its root.
    pub cas: Vec<rustls::pki_types::CertificateDer<'static>>,
}

/// An OCSP responder's URL, parsed (`http://` only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponderUrl {
    /// The host as written (the `Host` header, and what a `resolver`
    /// looks up).
    pub host: String,
    /// Its port (80 unless the URL says).
    pub port: u16,
    /// The URL's path (`/` when empty), the request's prefix.
    pub uri: String,
    /// The host's addresses found at load (none for a name left to the
    /// `resolver`).
    pub addrs: Vec<std::net::SocketAddr>,
}

/// `ssl_session_cache`: where sessions are kept for resumption by session
/// id (nginx's `builtin_session_cache` and `shm_zone`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SessionCache {
    /// What the builtin cache is.
    pub builtin: Builtin,
    /// `shared:name:size`.
    pub shared: Option<SharedSessionCache>,
}

impl SessionCache {
    /// Whether sessions are stored at all: `off` and `none` store none
    /// (nginx returns before looking at a shared zone), and neither does
    /// nginx's default, `none`.
    pub fn stores(&self) -> bool {
        matches!(self.builtin, Builtin::Sessions(_) | Builtin::NoBuiltin)
    }
}

/// The builtin part of `ssl_session_cache`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Builtin {
    /// Not written: nginx's default, `none`.
    #[default]
    Unset,
    /// `off`: no session cache, and clients are told so.
    Off,
    /// `none`: no session is stored, though clients may think so.
    None,
    /// A shared zone only (`shared:` without `builtin`).
    NoBuiltin,
    /// `builtin[:size]`: this many sessions.
    Sessions(u64),
}

/// `ssl_session_cache shared:NAME:SIZE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedSessionCache {
    /// The zone's name.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
}

/// nginx's `builtin` cache size when none is given (`NGX_SSL_DFLT_BUILTIN_SCACHE`).
pub const DEFAULT_BUILTIN_SESSIONS: u64 = 20480;

/// nginx's `ssl_buffer_size` default (`NGX_SSL_BUFSIZE`).
pub const DEFAULT_BUFFER_SIZE: u64 = 16384;

/// nginx's `ssl_ciphers` default (`NGX_DEFAULT_CIPHERS`).
pub const DEFAULT_CIPHERS: &str = "HIGH:!aNULL:!MD5";

/// nginx's `proxy_ssl_ciphers` default.
pub const DEFAULT_PROXY_CIPHERS: &str = "DEFAULT";

/// The passphrases of a password file (`ssl_password_file`,
/// `proxy_ssl_password_file`), in the file's order; never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Passwords(pub Vec<Vec<u8>>);

impl std::fmt::Debug for Passwords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Passwords({} hidden)", self.0.len())
    }
}

/// nginx's `ssl_ecdh_curve` default (`NGX_DEFAULT_ECDH_CURVE`).
pub const DEFAULT_ECDH_CURVE: &str = "auto";

/// A file a directive names, with where it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedFile {
    /// The path, resolved against the prefix.
    pub path: PathBuf,
    /// The directive's place, for errors about the file.
    pub loc: Loc,
}

/// `ssl_certificate` or `ssl_certificate_key`: a file, or a name made of
/// variables and loaded per handshake.
#[derive(Clone, Debug)]
pub struct CertName {
    /// The name as written (a `data:` value is the PEM itself).
    pub name: Template,
    /// The literal path, resolved against the prefix, when it has no
    /// variables.
    pub path: Option<PathBuf>,
    /// Where it was written.
    pub loc: Loc,
}

impl CertName {
    /// Whether the name is the variable `v` alone.
    pub fn is_only(&self, v: super::vars::Builtin) -> bool {
        use super::template::{Part, Var};
        matches!(self.name.parts.as_slice(), [Part::Var(Var::Builtin(b))] if *b == v)
    }

    /// Whether this certificate name and `key` are nginx-acme's pair,
    /// `ssl_certificate $acme_certificate; ssl_certificate_key
    /// $acme_certificate_key;`.
    pub fn is_acme_pair(&self, key: &CertName) -> bool {
        use super::vars::Builtin;
        self.is_only(Builtin::AcmeCertificate) && key.is_only(Builtin::AcmeCertificateKey)
    }
}

/// What a server's TLS is, once its settings are merged and its files
/// read: everything the server needs to make its rustls configuration but
/// the process's session caches and ticket keys, which outlive the
/// configuration.
#[derive(Clone, Debug)]
pub struct TlsPlan {
    /// The certificates and their keys, in the order written.
    pub pairs: Vec<crate::tls::material::Pair>,
    /// Certificate names with variables: loaded per handshake.
    pub dynamic_certs: Vec<(CertName, CertName)>,
    /// The server's `acme_certificate` order (its id), when one of
    /// `dynamic_certs` is `$acme_certificate` and `$acme_certificate_key`
    /// ([`CertName::is_acme_pair`]): that pair is the certificate the
    /// order holds at each handshake, taken parsed from the ACME store
    /// rather than evaluated to its PEM and parsed again.
    pub acme: Option<String>,
    /// The protocols offered (those of `ssl_protocols` nowait speaks).
    pub protocols: Protocols,
    /// TLS 1.2 cipher suites by IANA code, in `ssl_ciphers`' order.
    pub tls12_suites: Vec<u16>,
    /// TLS 1.3 cipher suites by IANA code (`ssl_conf_command
    /// Ciphersuites`, else all of them in OpenSSL's order).
    pub tls13_suites: Vec<u16>,
    /// Key-exchange groups by IANA code, in order.
    pub groups: Vec<u16>,
    /// `ssl_prefer_server_ciphers`.
    pub prefer_server_ciphers: bool,
    /// `ssl_buffer_size`.
    pub buffer_size: u64,
    /// `ssl_session_cache`.
    pub session_cache: SessionCache,
    /// `ssl_session_timeout`.
    pub session_timeout: std::time::Duration,
    /// `ssl_session_tickets` and its keys.
    pub tickets: TicketPlan,
    /// `ssl_reject_handshake`.
    pub reject_handshake: bool,
    /// Each pair's OCSP stapling (`ssl_stapling`), by pair: `None` for a
    /// certificate stapled nothing (stapling off, or ignored as nginx
    /// ignores it, said at load).
    pub stapling: Vec<Option<StaplingPlan>>,
    /// `ssl_verify_client`.
    pub verify: VerifyClient,
    /// The CAs, CRLs and depth client certificates are verified with;
    /// `None` when no certificate is asked for (`ssl_verify_client off`).
    pub client_cas: Option<std::sync::Arc<crate::tls::client_verify::ClientCas>>,
    /// `ssl_ocsp`: client certificates asked about once verified.
    pub ocsp: Option<std::sync::Arc<ClientOcspPlan>>,
    /// `ssl_early_data`.
    pub early_data: bool,
    /// The passphrases of `ssl_password_file`, kept for certificate keys
    /// loaded per handshake.
    pub passwords: Option<std::sync::Arc<Vec<Vec<u8>>>>,
}

/// How one certificate's OCSP staple is had (`ssl_stapling on`).
#[derive(Clone, Debug)]
pub struct StaplingPlan {
    /// The certificate's file, as nginx names it in its messages.
    pub name: String,
    /// Where the staple comes from.
    pub source: StapleSource,
}

/// Where a staple comes from.
#[derive(Clone, Debug)]
pub enum StapleSource {
    /// `ssl_stapling_file`: the response's DER, stapled as read.
    File(std::sync::Arc<Vec<u8>>),
    /// The responder, asked when a handshake wants a staple.
    Responder(std::sync::Arc<ResponderPlan>),
}

/// The OCSP responder of one certificate and what its answers are checked
/// against (`ngx_ssl_stapling_t`'s fields).
#[derive(Clone, Debug)]
pub struct ResponderPlan {
    /// The responder's host as written in its URL (the `Host` header, and
    /// what a `resolver` looks up).
    pub host: String,
    /// Its port (80 unless the URL says).
    pub port: u16,
    /// The URL's path (`/` when empty), the request's prefix.
    pub uri: String,
    /// The host's addresses found at load, tried in turn.
    pub addrs: Vec<std::net::SocketAddr>,
    /// Which certificate is asked about.
    pub id: crate::tls::ocsp::CertId,
    /// The server's chain after the certificate (trusted signers with
    /// `ssl_stapling_verify on`).
    pub chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    /// `ssl_trusted_certificate`'s certificates.
    pub trusted: std::sync::Arc<Vec<rustls::pki_types::CertificateDer<'static>>>,
    /// `ssl_stapling_verify`.
    pub verify: bool,
    /// What the process's cache of staples knows this staple by: the
    /// certificate, its issuer, the responder and the checks (a reload
    /// that changes none of them keeps the staple).
    pub cache_key: [u8; 20],
}

/// Where a server's session tickets come from.
#[derive(Clone, Debug)]
pub enum TicketPlan {
    /// `ssl_session_tickets off`.
    Off,
    /// The keys of `ssl_session_ticket_key` files.
    Files(std::sync::Arc<Vec<crate::tls::tickets::TicketKey>>),
    /// Keys the process makes (no key files).
    Process,
}

/// A location's TLS to its upstreams once its `proxy_ssl_*` settings are
/// merged and their files read (what nginx's `ngx_http_proxy_set_ssl`
/// puts in the location's `SSL_CTX`, and the per-request settings read
/// with it): everything the server needs to make the location's rustls
/// client configuration, and to check and name each connection.
#[derive(Debug)]
pub struct UpstreamTlsPlan {
    /// Its place among the http block's plans
    /// ([`super::model::HttpConf::upstream_tls`]), where a generation
    /// keeps the configuration made of it.
    pub id: usize,
    /// The protocols offered (those of `proxy_ssl_protocols` nowait
    /// speaks).
    pub protocols: Protocols,
    /// TLS 1.2 cipher suites by IANA code, in `proxy_ssl_ciphers`' order.
    pub tls12_suites: Vec<u16>,
    /// TLS 1.3 cipher suites by IANA code (`proxy_ssl_conf_command
    /// Ciphersuites`, else all of them in OpenSSL's order).
    pub tls13_suites: Vec<u16>,
    /// Key-exchange groups by IANA code, in order (OpenSSL's default
    /// list, of those nowait has).
    pub groups: Vec<u16>,
    /// `proxy_ssl_certificate` and `proxy_ssl_certificate_key`.
    pub certificate: Option<crate::tls::material::Pair>,
    /// The same when their names have variables: evaluated per request
    /// (an empty certificate name sends none), loaded off the loops and
    /// kept (`server::engine::tls::dynamic`).
    pub dynamic_certificate: Option<(CertName, CertName)>,
    /// `proxy_ssl_password_file`'s passphrases, for keys loaded per
    /// request.
    pub passwords: Option<std::sync::Arc<Vec<Vec<u8>>>>,
    /// `proxy_ssl_verify on`: what judges the upstream's certificate
    /// (`proxy_ssl_trusted_certificate`, `proxy_ssl_crl`,
    /// `proxy_ssl_verify_depth`).
    pub verifier: Option<std::sync::Arc<crate::tls::verify::Verifier>>,
    /// `proxy_ssl_server_name`.
    pub server_name: bool,
    /// `proxy_ssl_name` (`None`: the upstream group's host).
    pub name: Option<Template>,
    /// `proxy_ssl_session_reuse`.
    pub session_reuse: bool,
    /// A digest of everything above but the name, which the keep-alive
    /// cache keys connections by (with the name each was made for): a
    /// connection is reused only with the TLS it was made with, across
    /// locations and reloads that configure the same.
    pub fingerprint: [u8; 16],
}
