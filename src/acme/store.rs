//! What the ACME client shares with the serving threads, in memory (what
//! nginx-acme keeps in its shared zone): each order's current certificate,
//! parsed once, that a handshake takes without reading a disk; and the
//! HTTP-01 tokens being validated, that requests for
//! `/.well-known/acme-challenge/TOKEN` are answered from. The process
//! owns it, so it outlives reloads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use rustls::sign::CertifiedKey;

/// An order's certificate, ready to serve.
#[derive(Debug)]
pub struct Current {
    /// The chain, PEM.
    pub chain: Vec<u8>,
    /// Its key, PEM.
    pub key: Vec<u8>,
    /// Parsed for rustls.
    pub certified: Arc<CertifiedKey>,
    /// `notBefore`, seconds since the epoch.
    pub not_before: i64,
    /// `notAfter`, seconds since the epoch.
    pub not_after: i64,
}

impl Current {
    /// The pair `chain` and `key` make, checked as a configured pair is;
    /// the error in nginx's words.
    pub fn parse(chain: Vec<u8>, key: Vec<u8>, name: &str) -> Result<Current, String> {
        let path = std::path::PathBuf::from(name);
        let pair =
            crate::tls::material::pair(&crate::tls::provider(), &chain, &path, &key, &path, None)?;
        let leaf = pair
            .key
            .cert
            .first()
            .and_then(|c| crate::tls::x509::CertFields::parse(c.as_ref()))
            .ok_or_else(|| format!("cannot load certificate \"{name}\": no certificates"))?;
        let (not_before, not_after) = (leaf.not_before, leaf.not_after);
        Ok(Current {
            chain,
            key,
            certified: pair.key,
            not_before,
            not_after,
        })
    }
}

/// The HTTP-01 tokens being validated: token → key authorization.
#[derive(Debug, Default)]
pub struct Challenges {
    tokens: Mutex<HashMap<String, String>>,
}

/// A token answered until this is dropped.
pub struct Registration<'a> {
    challenges: &'a Challenges,
    token: String,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        lock(&self.challenges.tokens).remove(&self.token);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Challenges {
    /// Answers `token` with `key_authorization` while the registration
    /// lives.
    pub fn register(&self, token: &str, key_authorization: String) -> Registration<'_> {
        lock(&self.tokens).insert(token.to_string(), key_authorization);
        Registration {
            challenges: self,
            token: token.to_string(),
        }
    }

    /// The key authorization for `token`, when it is being validated.
    pub fn answer(&self, token: &str) -> Option<String> {
        lock(&self.tokens).get(token).cloned()
    }
}

/// Every order's current certificate and the tokens.
#[derive(Debug, Default)]
pub struct Store {
    certificates: RwLock<HashMap<String, Arc<Current>>>,
    /// The HTTP-01 tokens.
    pub challenges: Challenges,
}

impl Store {
    /// The certificate order `id` holds now.
    pub fn current(&self, id: &str) -> Option<Arc<Current>> {
        self.certificates
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    /// Serves `c` for order `id` from now on.
    pub fn publish(&self, id: &str, c: Arc<Current>) {
        self.certificates
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_string(), c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_answered_while_registered() {
        let c = Challenges::default();
        {
            let _r = c.register("tok", "tok.thumb".into());
            assert_eq!(c.answer("tok").as_deref(), Some("tok.thumb"));
        }
        assert_eq!(c.answer("tok"), None);
    }
}
