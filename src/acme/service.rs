//! The ACME client's threads: one per `acme_issuer`, owned by the process
//! (not by a configuration generation), so that an order under way goes
//! on through a reload and what it issues is served by the generation
//! that is current then. Each thread does what nginx-acme's worker task
//! does for its issuer: finds the orders that are due, makes or finds
//! the account, runs the orders, writes what they issue under
//! `state_path`, publishes it to the [`Store`], and sleeps until the
//! next one is due (at least 30 s, at most a day) or a reload hands it a
//! new configuration.
//!
//! Blocking I/O happens here and only here: HTTPS to the ACME server,
//! signatures, key generation, the state directory's files.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::https::Client;
use super::keys::Key;
use super::protocol::{Account, Failure, Session};
use super::schedule;
use super::state::StateDir;
use super::store::{Current, Store};
use crate::config::acme_model::{
    ACCOUNT_KEY_FILE, ACCOUNT_URL_FILE, AccountKey, AcmeCertificate, AcmeConf, AcmeIssuer,
};
use crate::log::{ErrorLog, Level};

/// What a thread works from: its issuer, the orders naming it, the log.
#[derive(Clone, Debug)]
struct Job {
    issuer: AcmeIssuer,
    certificates: Vec<AcmeCertificate>,
    log: ErrorLog,
}

/// What a thread is handed and told.
#[derive(Debug, Default)]
struct Mailbox {
    job: Option<Job>,
    /// A newer job than the thread has taken.
    changed: bool,
    /// The issuer was dropped by a reload: the thread ends.
    stop: bool,
}

#[derive(Debug, Default)]
struct Handle {
    mailbox: Mutex<Mailbox>,
    wake: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The process's ACME client: the store and the issuers' threads.
#[derive(Debug, Default)]
pub struct Service {
    /// The certificates and tokens the serving threads read.
    pub store: Arc<Store>,
    threads: Mutex<HashMap<String, Arc<Handle>>>,
}

impl Service {
    /// Hands each issuer of `conf` to its thread (started for a new
    /// issuer name), ends the threads of issuers no longer configured,
    /// and serves the certificates found under the state paths for
    /// orders that have none in memory yet. Called at start-up and on
    /// each reload; returns at once.
    pub fn configure(&self, conf: &AcmeConf, log: &ErrorLog) {
        for c in &conf.certificates {
            if self.store.current(&c.id).is_some() {
                continue;
            }
            if let Some(s) = &c.stored {
                if let Ok(cur) = Current::parse(s.cert.clone(), s.key.clone(), &c.id) {
                    self.store.publish(&c.id, Arc::new(cur));
                }
            }
        }
        let mut threads = lock(&self.threads);
        for (name, h) in threads.iter() {
            if conf.issuer(name).is_none() {
                lock(&h.mailbox).stop = true;
                h.wake.notify_all();
            }
        }
        threads.retain(|name, _| conf.issuer(name).is_some());
        for issuer in &conf.issuers {
            let job = Job {
                issuer: issuer.clone(),
                certificates: conf
                    .certificates
                    .iter()
                    .filter(|c| c.order.issuer == issuer.name)
                    .cloned()
                    .collect(),
                log: log.clone(),
            };
            if job.certificates.is_empty() {
                // nginx-acme: an issuer without orders does nothing.
                if let Some(h) = threads.remove(&issuer.name) {
                    lock(&h.mailbox).stop = true;
                    h.wake.notify_all();
                }
                continue;
            }
            if let Some(h) = threads.get(&issuer.name) {
                let mut m = lock(&h.mailbox);
                m.job = Some(job);
                m.changed = true;
                h.wake.notify_all();
                continue;
            }
            let h = Arc::new(Handle::default());
            lock(&h.mailbox).job = Some(job);
            lock(&h.mailbox).changed = true;
            let (handle, store) = (h.clone(), self.store.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("acme {}", issuer.name))
                .spawn(move || run(&handle, &store));
            match spawned {
                Ok(_) => {
                    threads.insert(issuer.name.clone(), h);
                }
                Err(e) => log.log(
                    Level::Alert,
                    None,
                    format_args!(
                        "cannot start the thread of acme issuer \"{}\" ({e})",
                        issuer.name
                    ),
                ),
            }
        }
    }

    /// The certificate order `id` holds now.
    pub fn current(&self, id: &str) -> Option<Arc<Current>> {
        self.store.current(id)
    }

    /// The key authorization for an HTTP-01 `token` being validated.
    pub fn challenge(&self, token: &str) -> Option<String> {
        self.store.challenges.answer(token)
    }
}

/// Where an order stands (nginx-acme's `CertificateState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// No certificate yet: ask at `next` (after `fails` failures).
    Request { next: i64, fails: u32 },
    /// Certificate served: renew at `next`.
    Renewal { next: i64, fails: u32 },
    /// A configuration error: nothing until the next reload.
    Invalid,
}

impl State {
    fn due(&self, now: i64) -> bool {
        match self {
            State::Request { next, .. } | State::Renewal { next, .. } => now >= *next,
            State::Invalid => false,
        }
    }

    fn next(&self) -> Option<i64> {
        match self {
            State::Request { next, .. } | State::Renewal { next, .. } => Some(*next),
            State::Invalid => None,
        }
    }

    /// The state after a failure, and when to try again.
    fn failed(self) -> State {
        match self {
            State::Request { fails, .. } => State::Request {
                next: schedule::retry_time(fails),
                fails: fails + 1,
            },
            State::Renewal { fails, .. } => State::Renewal {
                next: schedule::retry_time(fails),
                fails: fails + 1,
            },
            State::Invalid => State::Invalid,
        }
    }
}

/// The state an order starts a configuration with: a served certificate
/// keeps its schedule; anything else is tried now (nginx-acme forgets a
/// failure on reload: a configuration change may have fixed it).
fn initial(store: &Store, id: &str, before: Option<&State>) -> State {
    match (store.current(id), before) {
        (Some(_), Some(s @ State::Renewal { .. })) => *s,
        (Some(c), _) => State::Renewal {
            next: schedule::renewal_time(c.not_before, c.not_after),
            fails: 0,
        },
        (None, _) => State::Request { next: 0, fails: 0 },
    }
}

/// One issuer's thread.
fn run(h: &Handle, store: &Store) {
    let mut job: Option<Job> = None;
    let mut states: HashMap<String, State> = HashMap::new();
    let mut key: Option<(AccountKey, Arc<Key>)> = None;
    let mut account: Option<String> = None;
    let mut issuer_state = State::Request { next: 0, fails: 0 };
    loop {
        {
            let mut m = lock(&h.mailbox);
            if m.stop {
                return;
            }
            if m.changed {
                m.changed = false;
                if let Some(j) = m.job.clone() {
                    let old = std::mem::take(&mut states);
                    for c in &j.certificates {
                        states.insert(c.id.clone(), initial(store, &c.id, old.get(&c.id)));
                    }
                    if job.as_ref().is_none_or(|o| o.issuer != j.issuer) {
                        account = None;
                        issuer_state = State::Request { next: 0, fails: 0 };
                    }
                    job = Some(j);
                }
            }
        }
        let Some(j) = job.clone() else {
            return;
        };
        let next = update(
            &j,
            store,
            &mut states,
            &mut key,
            &mut account,
            &mut issuer_state,
        );
        let wait = Duration::from_secs((next - schedule::now()).max(0) as u64)
            .clamp(schedule::MIN_INTERVAL, schedule::MAX_INTERVAL);
        j.log.log(
            Level::Debug,
            None,
            format_args!("acme: next update in {wait:?}"),
        );
        let m = lock(&h.mailbox);
        let _ = h
            .wake
            .wait_timeout_while(m, wait, |m| !m.changed && !m.stop);
    }
}

/// nginx-acme's log context: `acme issuer: "x", order: "id"`.
fn context(issuer: &str, order: &str) -> String {
    format!("acme issuer: \"{issuer}\", order: \"{order}\"")
}

/// The account key: the configured file, the one kept under
/// `state_path`, or a new one (written there).
fn account_key(issuer: &AcmeIssuer) -> Result<Key, String> {
    match &issuer.account_key {
        AccountKey::File(path, pem) => {
            Key::from_pem(pem, path).map_err(|e| format!("cannot load account key: {e}"))
        }
        AccountKey::Generate(kind) => {
            let dir = issuer.state_path.clone().map(StateDir::new);
            if let Some(d) = &dir {
                if let Some(pem) = d.read(ACCOUNT_KEY_FILE) {
                    if let Ok(k) = Key::from_pem(&pem, &d.path(ACCOUNT_KEY_FILE)) {
                        return Ok(k);
                    }
                }
            }
            let k =
                Key::generate(*kind).map_err(|e| format!("cannot generate account key: {e}"))?;
            if let (Some(d), Ok(pem)) = (&dir, k.pem()) {
                // As nginx-acme: a key that cannot be kept still serves.
                let _ = d.write(ACCOUNT_KEY_FILE, &pem);
            }
            Ok(k)
        }
    }
}

/// One pass over the issuer's orders; when to look again.
fn update(
    j: &Job,
    store: &Store,
    states: &mut HashMap<String, State>,
    key: &mut Option<(AccountKey, Arc<Key>)>,
    account: &mut Option<String>,
    issuer_state: &mut State,
) -> i64 {
    let now = schedule::now();
    let name = &j.issuer.name;
    let mut next = now + schedule::MAX_INTERVAL.as_secs() as i64;
    if *issuer_state == State::Invalid {
        return next;
    }
    j.log.log(
        Level::Debug,
        None,
        format_args!("acme: updating certificates, acme issuer \"{name}\""),
    );
    let due: Vec<&AcmeCertificate> = j
        .certificates
        .iter()
        .filter(|c| {
            let s = states.get(&c.id).copied().unwrap_or(State::Invalid);
            if !s.due(now) {
                if let Some(t) = s.next() {
                    next = next.min(t);
                    j.log.log(
                        Level::Debug,
                        None,
                        format_args!(
                            "acme: certificate is not due for renewal, {}",
                            context(name, &c.id)
                        ),
                    );
                }
                return false;
            }
            true
        })
        .collect();
    if due.is_empty() {
        return next;
    }
    if !issuer_state.due(now) {
        return issuer_state.next().unwrap_or(next).min(next);
    }
    let k = match key {
        Some((spec, k)) if *spec == j.issuer.account_key => k.clone(),
        _ => match account_key(&j.issuer) {
            Ok(k) => {
                let k = Arc::new(k);
                *key = Some((j.issuer.account_key.clone(), k.clone()));
                k
            }
            Err(e) => {
                j.log.log(
                    Level::Error,
                    None,
                    format_args!("{e} while creating account, acme issuer \"{name}\""),
                );
                *issuer_state = State::Invalid;
                return next;
            }
        },
    };
    let http = match Client::new(
        j.issuer.trusted.as_ref().map(|(_, p)| p.as_slice()),
        j.issuer.ssl_verify,
    ) {
        Ok(c) => c,
        Err(e) => {
            j.log.log(
                Level::Error,
                None,
                format_args!("{e} while creating account, acme issuer \"{name}\""),
            );
            *issuer_state = State::Invalid;
            return next;
        }
    };
    let log = j.log.clone();
    let notice = move |msg: &str| log.log(Level::Notice, None, format_args!("{msg}"));
    let mut session = Session::new(&j.issuer, &http, &k, &notice);
    let dir = j.issuer.state_path.clone().map(StateDir::new);
    for c in due {
        let lctx = context(name, &c.id);
        if !session.has_account() {
            match session.new_account() {
                Ok(Account::Created(url)) => {
                    j.log.log(
                        Level::Info,
                        None,
                        format_args!("account \"{url}\" created, {lctx}"),
                    );
                    if let Some(d) = &dir {
                        let _ = d.write(ACCOUNT_URL_FILE, url.as_bytes());
                    }
                    *account = Some(url);
                }
                Ok(Account::Found(url)) => {
                    j.log.log(
                        Level::Debug,
                        None,
                        format_args!("account \"{url}\" found, {lctx}"),
                    );
                    *account = Some(url);
                }
                Err(Failure::Invalid(e)) => {
                    j.log.log(
                        Level::Error,
                        None,
                        format_args!("{e} while creating account, acme issuer \"{name}\""),
                    );
                    *issuer_state = State::Invalid;
                    return next;
                }
                Err(Failure::RateLimited(e, d)) => {
                    j.log.log(
                        Level::Warn,
                        None,
                        format_args!("{e} while creating account, acme issuer \"{name}\""),
                    );
                    return now + d.as_secs() as i64;
                }
                Err(Failure::Again(e)) => {
                    j.log.log(
                        Level::Warn,
                        None,
                        format_args!("{e} while creating account, acme issuer \"{name}\""),
                    );
                    *issuer_state = issuer_state.failed();
                    return issuer_state.next().unwrap_or(next).min(next);
                }
            }
            *issuer_state = State::Request { next: 0, fails: 0 };
        }
        let state = states.get(&c.id).copied().unwrap_or(State::Invalid);
        match session.new_certificate(&c.order, &store.challenges) {
            Ok(issued) => {
                let cur = match Current::parse(issued.chain, issued.key, &c.id) {
                    Ok(cur) => cur,
                    Err(e) => {
                        j.log.log(
                            Level::Warn,
                            None,
                            format_args!("{e} while updating certificate, {lctx}"),
                        );
                        let s = state.failed();
                        next = next.min(s.next().unwrap_or(next));
                        states.insert(c.id.clone(), s);
                        continue;
                    }
                };
                if let Some(d) = &dir {
                    if d.write(&format!("{}.crt", c.id), &cur.chain).is_err() {
                        j.log.log(
                            Level::Warn,
                            None,
                            format_args!("writing certificate to state directory failed, {lctx}"),
                        );
                    } else if d.write(&format!("{}.key", c.id), &cur.key).is_err() {
                        j.log.log(
                            Level::Warn,
                            None,
                            format_args!("writing private key to state directory failed, {lctx}"),
                        );
                    }
                }
                let at = schedule::renewal_time(cur.not_before, cur.not_after);
                store.publish(&c.id, Arc::new(cur));
                j.log.log(
                    Level::Info,
                    None,
                    format_args!(
                        "certificate issued, renewal scheduled at {}, {lctx}",
                        schedule::format(at)
                    ),
                );
                states.insert(c.id.clone(), State::Renewal { next: at, fails: 0 });
                next = next.min(at);
            }
            Err(Failure::RateLimited(e, d)) => {
                j.log.log(
                    Level::Warn,
                    None,
                    format_args!("{e} while updating certificate, {lctx}"),
                );
                return schedule::now() + d.as_secs() as i64;
            }
            Err(Failure::Invalid(e)) => {
                j.log.log(
                    Level::Error,
                    None,
                    format_args!("{e} while updating certificate, {lctx}"),
                );
                states.insert(c.id.clone(), State::Invalid);
            }
            Err(Failure::Again(e)) => {
                j.log.log(
                    Level::Warn,
                    None,
                    format_args!("{e} while updating certificate, {lctx}"),
                );
                let s = state.failed();
                next = next.min(s.next().unwrap_or(next));
                states.insert(c.id.clone(), s);
            }
        }
    }
    next
}
