//! TLS for client connections (nginx's ssl module on the engine's side):
//! each server's rustls configuration, made once per generation from its
//! [`TlsPlan`] and the process's session caches and ticket keys; the
//! handshake ([`accept`]); what it negotiated, for the `$ssl_*` variables
//! ([`info`]); OCSP stapling's fetches ([`stapling`]) and the OCSP check
//! of client certificates ([`client_ocsp`]), asking responders with
//! [`ocsp_ask`] in the HTTP of [`ocsp_http`].
//!
//! What this module must not do: run a handshake's key operations on a
//! loop (they run in the `ssl` pool), read a file (the configuration
//! loader has read them), or make a handshake wait for a responder.

pub mod accept;
pub mod client_ocsp;
pub mod dynamic;
pub mod info;
pub mod ocsp_ask;
pub mod ocsp_http;
pub mod stapling;
pub mod vars;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rustls::server::ClientHello;
use rustls::sign::CertifiedKey;

use crate::config::model::{HttpConf, Server};
use crate::config::ssl_model::{Builtin, StapleSource, TicketPlan, TlsPlan};
use crate::tls::ocsp::cache::OcspCache;
use crate::tls::ocsp::staple::Staple;
use crate::tls::sessions::{SessionCache, Store};
use crate::tls::tickets::{Keys, ProcessKeys, Tickets};

use client_ocsp::ClientOcsp;
use stapling::Fetch;

/// What TLS state belongs to the process and outlives a reload: the
/// shared session caches by zone name, the ticket keys the process makes
/// when no `ssl_session_ticket_key` names any, and the OCSP staples
/// fetched from responders (nginx fetches them again after a reload;
/// nowait keeps those whose certificate, issuer, responder and checks did
/// not change).
#[derive(Debug, Default)]
pub struct TlsShared {
    caches: Mutex<HashMap<String, Arc<SessionCache>>>,
    keys: OnceLock<Option<Arc<ProcessKeys>>>,
    staples: Mutex<HashMap<[u8; 20], Arc<Staple>>>,
    /// The `ssl_ocsp_cache` zones by name.
    ocsp_caches: Mutex<HashMap<String, Arc<OcspCache>>>,
}

impl TlsShared {
    /// The shared cache of zone `name` with `bytes` bytes: the one a
    /// previous generation used when the size is the same, a new one
    /// otherwise (nginx keeps a zone across reloads only at its size).
    fn cache(&self, name: &str, bytes: u64) -> Arc<SessionCache> {
        let mut all = self.caches.lock().unwrap_or_else(|e| e.into_inner());
        let sessions = SessionCache::for_zone(bytes);
        match all.get(name) {
            Some(c) if c.capacity() == sessions.capacity() => c.clone(),
            _ => {
                all.insert(name.to_string(), sessions.clone());
                sessions
            }
        }
    }

    /// The `ssl_ocsp_cache` zone `name` of `bytes` bytes: a previous
    /// generation's at the same size, a new one otherwise.
    fn ocsp_cache(&self, name: &str, bytes: u64) -> Arc<OcspCache> {
        let mut all = self.ocsp_caches.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = OcspCache::for_zone(bytes);
        match all.get(name) {
            Some(c) if c.capacity() == fresh.capacity() => c.clone(),
            _ => {
                all.insert(name.to_string(), fresh.clone());
                fresh
            }
        }
    }

    fn process_keys(&self) -> Option<Arc<ProcessKeys>> {
        self.keys.get_or_init(ProcessKeys::new).clone()
    }

    /// The staple known by `key`: a previous generation's, or a new one.
    fn staple(&self, key: [u8; 20]) -> Arc<Staple> {
        let mut all = self.staples.lock().unwrap_or_else(|e| e.into_inner());
        all.entry(key)
            .or_insert_with(|| Arc::new(Staple::new()))
            .clone()
    }

    /// Forgets the staples no longer configured (a generation still
    /// draining keeps its own).
    fn keep_staples(&self, used: &[[u8; 20]]) {
        let mut all = self.staples.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|k, _| used.contains(k));
    }
}

/// A server's TLS in one generation: its rustls configuration, and what a
/// handshake needs to start a staple's fetch.
#[derive(Debug)]
pub struct ServerTls {
    /// The rustls configuration.
    pub config: Arc<rustls::ServerConfig>,
    /// The certificates, as the resolver picks among them.
    keys: Vec<Arc<CertifiedKey>>,
    /// Each certificate's fetch, when a responder staples it.
    fetches: Vec<Option<Arc<Fetch>>>,
    /// `ssl_ocsp`: the OCSP check of verified client certificates.
    pub ocsp: Option<Arc<ClientOcsp>>,
    /// What the configuration decided (client verification, early data,
    /// certificate names with variables).
    pub plan: Arc<TlsPlan>,
    /// The server's index in the http block.
    pub index: usize,
    /// The pairs loaded per handshake, when the names have variables.
    pub loaded: Option<Arc<dynamic::Loaded>>,
    /// Whether a new TLS 1.2 session that gets no ticket has an id
    /// (`$ssl_session_id`): OpenSSL gives one unless nginx turned its
    /// session cache off (`ssl_session_cache off`; `none` pretends to
    /// cache and so gives ids).
    pub tls12_ids: bool,
    /// How the certificate of a handshake is picked.
    choice: crate::tls::server::Choice,
    /// Under `ssl_prefer_server_ciphers`, the configuration once per key
    /// exchange group, each offering that group alone, in the server's
    /// order: OpenSSL's choice of a TLS 1.2 group (see
    /// [`ServerTls::for_groups`]). Empty otherwise.
    by_group: Vec<(u16, Arc<rustls::ServerConfig>)>,
}

impl ServerTls {
    /// The fetch of the certificate `hello` gets.
    pub fn fetch_for(&self, hello: &ClientHello<'_>) -> Option<&Arc<Fetch>> {
        let i = self.choice.pick(&self.keys, hello);
        self.fetches.get(i)?.as_ref()
    }

    /// Whether the server speaks TLS 1.3.
    pub fn speaks_tls13(&self) -> bool {
        self.choice.tls13
    }

    /// The configuration for a TLS 1.2 handshake whose client offers the
    /// groups `offered`: under `ssl_prefer_server_ciphers` OpenSSL takes
    /// the server's first group the client has, where rustls takes the
    /// client's first; the configuration with that group alone makes
    /// rustls agree.
    pub fn for_groups(&self, offered: &[rustls::NamedGroup]) -> Arc<rustls::ServerConfig> {
        self.by_group
            .iter()
            .find(|(code, _)| offered.iter().any(|g| u16::from(*g) == *code))
            .map_or_else(|| self.config.clone(), |(_, c)| c.clone())
    }

    /// Whether one of the certificates can sign with a scheme the client
    /// accepts (`hello.signature_schemes()`, which rustls has reduced to
    /// those the offered suites can use). Certificates loaded per
    /// handshake are not known yet: rustls judges them.
    pub fn can_sign(&self, hello: &ClientHello<'_>) -> bool {
        self.loaded.is_some()
            || self
                .keys
                .iter()
                .any(|k| k.key.choose_scheme(hello.signature_schemes()).is_some())
    }
}

/// The TLS of every server of `http` that has any, by server index.
pub fn configs(http: &HttpConf, shared: &TlsShared) -> Result<Vec<Option<ServerTls>>, String> {
    let provider = crate::tls::provider();
    let served = http
        .servers
        .iter()
        .filter_map(|s| Some((s, s.tls.as_ref()?)))
        .flat_map(|(s, plan)| {
            plan.pairs.iter().filter_map(move |p| {
                Some((
                    s.name().to_string(),
                    p.path.display().to_string(),
                    p.not_after?,
                ))
            })
        })
        .collect();
    crate::metrics::tls::set_certificates(served);
    let mut used = Vec::new();
    let out = http
        .servers
        .iter()
        .enumerate()
        .map(|(index, s)| match &s.tls {
            Some(plan) if !plan.pairs.is_empty() || !plan.dynamic_certs.is_empty() => {
                server_tls(&provider, s, index, plan, shared, &mut used).map(Some)
            }
            _ => Ok(None),
        })
        .collect::<Result<Vec<_>, String>>()?;
    shared.keep_staples(&used);
    Ok(out)
}

/// One server's TLS; the keys of the staples it uses are added to `used`.
fn server_tls(
    provider: &rustls::crypto::CryptoProvider,
    s: &Server,
    index: usize,
    plan: &Arc<TlsPlan>,
    shared: &TlsShared,
    used: &mut Vec<[u8; 20]>,
) -> Result<ServerTls, String> {
    let mut staples = Vec::with_capacity(plan.pairs.len());
    let mut fetches = Vec::with_capacity(plan.pairs.len());
    for i in 0..plan.pairs.len() {
        let (staple, fetch) = match plan.stapling.get(i).and_then(Option::as_ref) {
            None => (None, None),
            Some(p) => match &p.source {
                StapleSource::File(der) => (Some(Arc::new(Staple::fixed(der.to_vec()))), None),
                StapleSource::Responder(r) => {
                    used.push(r.cache_key);
                    let staple = shared.staple(r.cache_key);
                    let fetch = Fetch::new(
                        staple.clone(),
                        r.clone(),
                        p.name.clone(),
                        s.conf.resolver.clone(),
                        s.conf.resolver_timeout,
                    );
                    (Some(staple), Some(Arc::new(fetch)))
                }
            },
        };
        staples.push(staple);
        fetches.push(fetch);
    }
    let settings = settings(plan, shared, staples);
    let config = crate::tls::server::build(provider, settings(&plan.groups))?;
    let by_group = if plan.prefer_server_ciphers && plan.groups.len() > 1 {
        plan.groups
            .iter()
            .map(|&g| Ok((g, crate::tls::server::build(provider, settings(&[g]))?)))
            .collect::<Result<Vec<_>, String>>()?
    } else {
        Vec::new()
    };
    let ocsp = plan.ocsp.as_ref().map(|o| {
        Arc::new(ClientOcsp {
            plan: o.clone(),
            cache: o.cache.as_ref().map(|z| shared.ocsp_cache(&z.name, z.size)),
            resolver: s.conf.resolver.clone(),
            resolver_timeout: s.conf.resolver_timeout,
        })
    });
    Ok(ServerTls {
        config,
        keys: plan.pairs.iter().map(|p| p.key.clone()).collect(),
        fetches,
        ocsp,
        plan: plan.clone(),
        index,
        loaded: (!plan.dynamic_certs.is_empty())
            .then(|| Arc::new(dynamic::Loaded::served_by(s.name()))),
        tls12_ids: plan.session_cache.builtin != Builtin::Off,
        choice: crate::tls::server::Choice {
            tls13: speaks_tls13(plan),
            tls12_suites: plan.tls12_suites.clone(),
            prefer_server: plan.prefer_server_ciphers,
        },
        by_group,
    })
}

/// Whether a server of `plan` speaks TLS 1.3: no TLS 1.3 suite left
/// (`ssl_conf_command Ciphersuites ""`) is no TLS 1.3, as with OpenSSL.
fn speaks_tls13(plan: &TlsPlan) -> bool {
    use crate::config::ssl_model::Protocols;
    plan.protocols.has(Protocols::TLSV1_3) && !plan.tls13_suites.is_empty()
}

/// The identity sessions are bound to, as nginx's
/// `ngx_ssl_session_id_context`: the server's certificates (the names as
/// written when they are loaded per handshake) and the CAs it names to
/// clients (`ssl_client_certificate`), after the module's name. A session
/// made under one server resumes only under a server with the same.
fn session_context(plan: &TlsPlan) -> [u8; 32] {
    let mut ctx = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
    ctx.update(b"HTTP");
    for p in &plan.pairs {
        if let Some(cert) = p.key.cert.first() {
            ctx.update(cert.as_ref());
        }
    }
    if plan.pairs.is_empty() {
        for (cert, _) in &plan.dynamic_certs {
            ctx.update(cert.name.to_string().as_bytes());
        }
    }
    if let Some(cas) = &plan.client_cas {
        for name in cas.hints() {
            ctx.update(name.as_ref());
        }
    }
    let mut out = [0u8; 32];
    out.copy_from_slice(ctx.finish().as_ref());
    out
}

/// The settings of a server's rustls configuration, given the groups it
/// offers; the session store and tickets are made once and shared by
/// every configuration the settings make.
fn settings<'p>(
    plan: &'p TlsPlan,
    shared: &TlsShared,
    staples: Vec<Option<Arc<Staple>>>,
) -> impl Fn(&[u16]) -> crate::tls::server::Settings + 'p {
    let mut versions = Vec::new();
    if speaks_tls13(plan) {
        versions.push(&rustls::version::TLS13);
    }
    if plan
        .protocols
        .has(crate::config::ssl_model::Protocols::TLSV1_2)
    {
        versions.push(&rustls::version::TLS12);
    }
    let context = session_context(plan);
    let sessions: Option<Arc<dyn rustls::server::StoresServerSessions>> =
        match (&plan.session_cache.builtin, &plan.session_cache.shared) {
            (Builtin::Unset | Builtin::Off | Builtin::None, _) => None,
            (_, Some(z)) => Some(Arc::new(Store::new(
                shared.cache(&z.name, z.size),
                plan.session_timeout,
                context,
            ))),
            (Builtin::Sessions(n), None) => Some(Arc::new(Store::new(
                SessionCache::new(*n),
                plan.session_timeout,
                context,
            ))),
            (Builtin::NoBuiltin, None) => None,
        };
    // rustls takes early data only on sessions the server keeps (RFC 8446
    // §8.1's single-use tickets): with `ssl_early_data on`, tickets are
    // ids in the session cache (the builtin one when none is set).
    let sessions = match (&sessions, plan.early_data) {
        (None, true) => Some(Arc::new(Store::new(
            SessionCache::new(crate::config::ssl_model::DEFAULT_BUILTIN_SESSIONS),
            plan.session_timeout,
            context,
        )) as Arc<dyn rustls::server::StoresServerSessions>),
        _ => sessions,
    };
    let tickets: Option<Arc<dyn rustls::server::ProducesTickets>> = match &plan.tickets {
        _ if plan.early_data => None,
        TicketPlan::Off => None,
        TicketPlan::Files(keys) => Some(Arc::new(Tickets::new(
            Keys::Files(keys.clone()),
            plan.session_timeout,
            context,
        ))),
        TicketPlan::Process => shared.process_keys().map(|k| {
            Arc::new(Tickets::new(
                Keys::Process(k),
                plan.session_timeout,
                context,
            )) as _
        }),
    };
    let client_verifier: Option<Arc<dyn rustls::server::danger::ClientCertVerifier>> = plan
        .client_cas
        .as_ref()
        .map(|cas| Arc::new(crate::tls::client_verify::AskClient { cas: cas.clone() }) as _);
    move |groups: &[u16]| crate::tls::server::Settings {
        pairs: plan.pairs.clone(),
        staples: staples.clone(),
        versions: versions.clone(),
        tls12_suites: plan.tls12_suites.clone(),
        tls13_suites: plan.tls13_suites.clone(),
        groups: groups.to_vec(),
        prefer_server_ciphers: plan.prefer_server_ciphers,
        buffer_size: usize::try_from(plan.buffer_size).unwrap_or(usize::MAX),
        sessions: sessions.clone(),
        tickets: tickets.clone(),
        alpn: crate::tls::server::HTTP_ALPN
            .iter()
            .map(|p| p.to_vec())
            .collect(),
        early_data: plan.early_data,
        per_handshake: !plan.dynamic_certs.is_empty(),
        client_verifier: client_verifier.clone(),
    }
}
