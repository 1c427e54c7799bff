//! TLS for client connections (nginx's ssl module on the engine's side):
//! each server's rustls configuration, made once per generation from its
//! [`TlsPlan`] and the process's session caches and ticket keys; the
//! handshake ([`accept`]); what it negotiated, for the `$ssl_*` variables
//! ([`info`]); OCSP stapling's fetches ([`stapling`], speaking HTTP to the
//! responder with [`ocsp_http`]).
//!
//! What this module must not do: run a handshake's key operations on a
//! loop (they run in the `ssl` pool), read a file (the configuration
//! loader has read them), or make a handshake wait for a responder.

pub mod accept;
pub mod dynamic;
pub mod info;
pub mod ocsp_http;
pub mod stapling;
pub mod vars;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rustls::SignatureScheme;
use rustls::sign::CertifiedKey;

use crate::config::model::{HttpConf, Server};
use crate::config::ssl_model::{Builtin, StapleSource, TicketPlan, TlsPlan};
use crate::tls::ocsp::staple::Staple;
use crate::tls::sessions::{SessionCache, Store};
use crate::tls::tickets::{Keys, ProcessKeys, Tickets};

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
}

impl ServerTls {
    /// The fetch of the certificate a client offering `schemes` gets.
    pub fn fetch_for(&self, schemes: &[SignatureScheme]) -> Option<&Arc<Fetch>> {
        let i = crate::tls::server::choose(&self.keys, schemes);
        self.fetches.get(i)?.as_ref()
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
    Ok(ServerTls {
        config: config(provider, plan, shared, staples)?,
        keys: plan.pairs.iter().map(|p| p.key.clone()).collect(),
        fetches,
        plan: plan.clone(),
        index,
        loaded: (!plan.dynamic_certs.is_empty()).then(|| Arc::new(dynamic::Loaded::default())),
        tls12_ids: plan.session_cache.builtin != Builtin::Off,
    })
}

fn config(
    provider: &rustls::crypto::CryptoProvider,
    plan: &TlsPlan,
    shared: &TlsShared,
    staples: Vec<Option<Arc<Staple>>>,
) -> Result<Arc<rustls::ServerConfig>, String> {
    use crate::config::ssl_model::Protocols;
    let mut versions = Vec::new();
    if plan.protocols.has(Protocols::TLSV1_3) {
        versions.push(&rustls::version::TLS13);
    }
    if plan.protocols.has(Protocols::TLSV1_2) {
        versions.push(&rustls::version::TLS12);
    }
    let sessions: Option<Arc<dyn rustls::server::StoresServerSessions>> =
        match (&plan.session_cache.builtin, &plan.session_cache.shared) {
            (Builtin::Unset | Builtin::Off | Builtin::None, _) => None,
            (_, Some(z)) => Some(Arc::new(Store::new(
                shared.cache(&z.name, z.size),
                plan.session_timeout,
            ))),
            (Builtin::Sessions(n), None) => Some(Arc::new(Store::new(
                SessionCache::new(*n),
                plan.session_timeout,
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
        )) as Arc<dyn rustls::server::StoresServerSessions>),
        _ => sessions,
    };
    let tickets: Option<Arc<dyn rustls::server::ProducesTickets>> = match &plan.tickets {
        _ if plan.early_data => None,
        TicketPlan::Off => None,
        TicketPlan::Files(keys) => Some(Arc::new(Tickets::new(
            Keys::Files(keys.clone()),
            plan.session_timeout,
        ))),
        TicketPlan::Process => shared
            .process_keys()
            .map(|k| Arc::new(Tickets::new(Keys::Process(k), plan.session_timeout)) as _),
    };
    crate::tls::server::build(
        provider,
        crate::tls::server::Settings {
            pairs: plan.pairs.clone(),
            staples,
            versions,
            tls12_suites: plan.tls12_suites.clone(),
            tls13_suites: plan.tls13_suites.clone(),
            groups: plan.groups.clone(),
            prefer_server_ciphers: plan.prefer_server_ciphers,
            buffer_size: usize::try_from(plan.buffer_size).unwrap_or(usize::MAX),
            sessions,
            tickets,
            alpn: vec![b"http/1.1".to_vec()],
            early_data: plan.early_data,
            per_handshake: !plan.dynamic_certs.is_empty(),
            client_verifier: plan.client_cas.as_ref().map(|cas| {
                Arc::new(crate::tls::client_verify::AskClient { cas: cas.clone() }) as _
            }),
        },
    )
}
