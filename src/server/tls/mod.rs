//! TLS for client connections (nginx's ssl module on the engine's side):
//! each server's rustls configuration, made once per generation from its
//! [`TlsPlan`] and the process's session caches and ticket keys; the
//! handshake ([`accept`]); what it negotiated, for the `$ssl_*` variables
//! ([`info`]).
//!
//! What this module must not do: run a handshake's key operations on a
//! loop (they run in the `ssl` pool), or read a file (the configuration
//! loader has read them).

pub mod accept;
pub mod info;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::config::model::HttpConf;
use crate::config::ssl_model::{Builtin, TicketPlan, TlsPlan};
use crate::tls::sessions::{SessionCache, Store};
use crate::tls::tickets::{Keys, ProcessKeys, Tickets};

/// What TLS state belongs to the process and outlives a reload: the
/// shared session caches by zone name, and the ticket keys the process
/// makes when no `ssl_session_ticket_key` names any.
#[derive(Debug, Default)]
pub struct TlsShared {
    caches: Mutex<HashMap<String, Arc<SessionCache>>>,
    keys: OnceLock<Option<Arc<ProcessKeys>>>,
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
}

/// The rustls configuration of every server of `http` that has TLS, by
/// server index.
pub fn configs(
    http: &HttpConf,
    shared: &TlsShared,
) -> Result<Vec<Option<Arc<rustls::ServerConfig>>>, String> {
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
    http.servers
        .iter()
        .map(|s| match &s.tls {
            Some(plan) if !plan.pairs.is_empty() => config(&provider, plan, shared).map(Some),
            _ => Ok(None),
        })
        .collect()
}

fn config(
    provider: &rustls::crypto::CryptoProvider,
    plan: &TlsPlan,
    shared: &TlsShared,
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
    let tickets: Option<Arc<dyn rustls::server::ProducesTickets>> = match &plan.tickets {
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
            versions,
            tls12_suites: plan.tls12_suites.clone(),
            tls13_suites: plan.tls13_suites.clone(),
            groups: plan.groups.clone(),
            prefer_server_ciphers: plan.prefer_server_ciphers,
            buffer_size: usize::try_from(plan.buffer_size).unwrap_or(usize::MAX),
            sessions,
            tickets,
            alpn: vec![b"http/1.1".to_vec()],
        },
    )
}
