//! The proxy's TLS to upstreams (`proxy_pass https://…`): each
//! location's rustls client configuration, made once per generation from
//! its plan ([`UpstreamTlsPlan`]); per request, the name its connections
//! are for (`proxy_ssl_name`, else the upstream group's host, as nginx's
//! `u->ssl_name`); per new connection, the handshake and the check of the
//! certificate (`proxy_ssl_verify`), in [`crate::upstream::tls`], their
//! key operations in the `ssl` pool.
//!
//! A certificate named with variables (`proxy_ssl_certificate
//! $arg_cert.crt;`) is evaluated per request, as nginx's
//! `ngx_http_upstream_ssl_certificate` does (an empty name sends none),
//! and loaded for a new connection in the `ssl` pool, never on the loop,
//! then kept while its files are unchanged (`server::tls::dynamic`).
//!
//! A connection kept alive keeps its TLS: the keep-alive cache keys it
//! with the settings and the name it was made with ([`TlsKey`]), so that
//! it serves only requests that would have made the same connection.

use std::sync::Arc;
use std::time::Instant;

use crate::config::model::HttpConf;
use crate::config::ssl_model::{Protocols, UpstreamTlsPlan};
use crate::tls::client::{Settings, UpstreamTls};
use crate::upstream::conn::Conn;
use crate::upstream::keepalive::TlsKey;
use crate::upstream::tls::{self as utls, HandshakeError};

use crate::server::core::request::Req;
use crate::server::core::site::Site;
use crate::server::engine::tls::dynamic::{Named, Source};

/// Every location's client configuration, by plan id.
pub fn configs(http: &HttpConf) -> Result<Vec<Arc<UpstreamTls>>, String> {
    let provider = crate::tls::provider();
    http.upstream_tls
        .iter()
        .map(|plan| {
            let mut versions = Vec::new();
            if plan.protocols.has(Protocols::TLSV1_3) {
                versions.push(&rustls::version::TLS13);
            }
            if plan.protocols.has(Protocols::TLSV1_2) {
                versions.push(&rustls::version::TLS12);
            }
            let settings = Settings {
                versions,
                tls12_suites: plan.tls12_suites.clone(),
                tls13_suites: plan.tls13_suites.clone(),
                groups: plan.groups.clone(),
                certificate: plan.certificate.as_ref().map(|p| p.key.clone()),
                session_reuse: plan.session_reuse,
            };
            UpstreamTls::new(&provider, settings).map(Arc::new)
        })
        .collect()
}

/// The TLS of one request's connections.
pub struct TlsTarget {
    /// The location's plan.
    plan: Arc<UpstreamTlsPlan>,
    /// Its client configuration.
    client: Arc<UpstreamTls>,
    /// The name, without its port (verified with `proxy_ssl_verify on`).
    name: String,
    /// Whether the name is sent (SNI).
    sni: bool,
    /// The certificate and key this request names, when their names
    /// have variables and the certificate's is not empty.
    certificate: Option<(Source, Source)>,
    /// What a kept-alive connection must have been made with.
    pub key: Arc<TlsKey>,
}

/// The TLS of `r`'s connections through a location planned `plan`, to a
/// group whose host is `host` (the name unless `proxy_ssl_name` says
/// another). `None` when the generation has no configuration for it (it
/// always has one: the plans and the configurations are made together).
pub fn target(
    site: &Site,
    r: &Req<'_>,
    plan: &Arc<UpstreamTlsPlan>,
    host: &str,
) -> Option<TlsTarget> {
    let client = site.upstream_tls.get(plan.id)?.clone();
    let written = match &plan.name {
        Some(t) => String::from_utf8_lossy(&r.expand(t)).into_owned(),
        None => host.to_string(),
    };
    let (name, sni) = utls::ssl_name(&written, plan.server_name);
    let certificate = plan.dynamic_certificate.as_ref().and_then(|(c, k)| {
        let cert = r.expand(&c.name);
        if cert.is_empty() {
            return None;
        }
        let prefix = site.config.conf_prefix();
        Some((
            Source::of(&cert, prefix),
            Source::of(&r.expand(&k.name), prefix),
        ))
    });
    // A connection made with one certificate serves only requests naming
    // the same.
    let settings = match &certificate {
        None => plan.fingerprint,
        Some((c, k)) => {
            use md5::{Digest, Md5};
            let mut d = Md5::new();
            d.update(plan.fingerprint);
            d.update(format!("{c:?}\0{k:?}").as_bytes());
            d.finalize().into()
        }
    };
    let key = Arc::new(TlsKey {
        settings,
        name: if sni || plan.verifier.is_some() {
            name.clone()
        } else {
            // Neither sent nor verified: the name makes no other
            // connection.
            String::new()
        },
    });
    Some(TlsTarget {
        plan: plan.clone(),
        client,
        name,
        sni,
        certificate,
        key,
    })
}

/// Why TLS to an upstream could not begin or failed.
pub enum TlsFailure {
    /// The handshake failed: the upstream's fault (`error`, `timeout`).
    Handshake(HandshakeError),
    /// The client certificate this request names could not be loaded
    /// (`cannot load certificate …`): the request's own fault, a 500 that
    /// no next server can help, as in `ngx_http_upstream_ssl_init_connection`.
    Certificate(String),
}

/// The handshake over `conn`, a new connection to the peer named `peer`,
/// before `deadline`, then the check `proxy_ssl_verify` asks for; their
/// key operations in the `ssl` pool.
pub async fn connect(
    site: &Site,
    conn: Conn,
    t: &TlsTarget,
    peer: &str,
    deadline: Instant,
) -> Result<Conn, TlsFailure> {
    let Conn::Tcp(tcp) = conn else {
        // `https://unix:…`: nginx speaks TLS over the socket too; rustls
        // is driven here over TCP only.
        return Err(TlsFailure::Handshake(HandshakeError {
            message: "SSL over a unix socket is not supported yet".to_string(),
            level: crate::log::Level::Error,
            timed_out: false,
        }));
    };
    let config = match &t.certificate {
        None => t.client.config_for(peer),
        Some(names) => t.client.config_with(
            &load(site, t, names)
                .await
                .map_err(TlsFailure::Certificate)?,
        ),
    };
    let h = utls::Handshake {
        config,
        name: t.name.clone(),
        sni: t.sni,
        verifier: t.plan.verifier.clone(),
    };
    let pool = site.pools.get(crate::config::finish_ssl::HANDSHAKE_POOL);
    let stream = utls::handshake(tcp, h, pool, deadline)
        .await
        .map_err(TlsFailure::Handshake)?;
    Ok(Conn::Tls(Box::new(stream)))
}

/// The pair `names` name for `t`'s location: kept, or read and checked in
/// the `ssl` pool (which a location proxying over TLS always has, and
/// where server certificates named with variables are read too). What
/// fails is nginx's `cannot load certificate …`.
async fn load(
    site: &Site,
    t: &TlsTarget,
    names: &(Source, Source),
) -> Result<Arc<rustls::sign::CertifiedKey>, String> {
    let loaded = site
        .upstream_certs
        .get(t.plan.id)
        .cloned()
        .ok_or("no certificate store for the location")?;
    let pool = site
        .pools
        .get(crate::config::finish_ssl::HANDSHAKE_POOL)
        .cloned()
        .ok_or("no \"ssl\" thread pool")?;
    let named = vec![Named::Load(names.0.clone(), names.1.clone())];
    let passwords = t.plan.passwords.clone();
    let done = pool
        .submit(move || {
            let passwords = passwords.as_ref().map(|p| p.as_slice());
            loaded.load(&named, &crate::tls::provider(), passwords)
        })
        .map_err(|e| e.to_string())?;
    let mut keys = done.await.map_err(|e| e.to_string())??;
    keys.pop()
        .ok_or_else(|| "no certificate loaded".to_string())
}
