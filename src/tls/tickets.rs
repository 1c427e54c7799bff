//! Session tickets (RFC 5077, and TLS 1.3's resumption tickets), sealed
//! under nginx's `ssl_session_ticket_key` files or under keys the process
//! makes itself.
//!
//! A key file holds 48 or 80 random bytes, as nginx reads them
//! (`ngx_ssl_session_ticket_keys`): a 16-byte name, then for 48 bytes a
//! 16-byte AES key and a 16-byte HMAC key, for 80 bytes a 32-byte HMAC key
//! and a 32-byte AES key. The first key seals new tickets; every key opens
//! them, found by the name at the ticket's start: rotating means putting a
//! new file first and keeping the old ones after it. nowait seals with
//! AES-GCM under the AES key (AES-128 for a 48-byte file, AES-256 for 80),
//! which authenticates without the HMAC key; the ticket is the name, a
//! 12-byte nonce, then the sealed expiry time and session, authenticated
//! with the key's name and the server's session context (its
//! certificates: a ticket opens only where the same certificates serve,
//! as OpenSSL's session id context makes it). The format is nowait's own:
//! nginx and nowait read the same key files, not each other's tickets
//! (the sessions inside differ anyway).
//!
//! Without files, the process makes a random key at start and a new one
//! every [`ROTATE`], keeping the previous one to open tickets: sessions
//! resume across workers and reloads. A ticket carries when it expires
//! (`ssl_session_timeout`) and is refused after.
//!
//! A TLS 1.2 session resumed by a ticket under the key that seals new
//! ones is not given a new ticket, as OpenSSL's ticket callback in nginx
//! renews only tickets of an older key: rustls would send one, and an
//! OpenSSL client that gets a new ticket on a resumed connection drops
//! the session it resumed from its cache, and IO::Socket::SSL's cache
//! then holds nothing to offer next time. nowait sends the empty ticket
//! RFC 5077 allows (§3.3: the server "changed its mind"), which such a
//! client ignores, keeping the ticket it has (see [`Renewal`]).

use std::cell::RefCell;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::aead::{AES_128_GCM, AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};

/// How long a key the process made seals new tickets.
pub const ROTATE: Duration = Duration::from_secs(12 * 3600);

/// The length of a key's name at a ticket's start.
const NAME_LEN: usize = 16;

/// One ticket key.
pub struct TicketKey {
    name: [u8; NAME_LEN],
    aead: LessSafeKey,
}

impl std::fmt::Debug for TicketKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TicketKey").finish_non_exhaustive()
    }
}

impl TicketKey {
    /// A key from the bytes of an `ssl_session_ticket_key` file: the error
    /// is nginx's (`"FILE" must be 48 or 80 bytes`).
    pub fn from_file(bytes: &[u8], path: &std::path::Path) -> Result<TicketKey, String> {
        let (name, aes, alg) = match bytes.len() {
            48 => (&bytes[..16], &bytes[16..32], &AES_128_GCM),
            80 => (&bytes[..16], &bytes[48..80], &AES_256_GCM),
            _ => return Err(format!("\"{}\" must be 48 or 80 bytes", path.display())),
        };
        let key = UnboundKey::new(alg, aes)
            .map_err(|_| format!("\"{}\": the ticket key could not be used", path.display()))?;
        let mut n = [0u8; NAME_LEN];
        n.copy_from_slice(name);
        Ok(TicketKey {
            name: n,
            aead: LessSafeKey::new(key),
        })
    }

    /// A random key (AES-256).
    fn random(rng: &SystemRandom) -> Option<TicketKey> {
        let mut bytes = [0u8; NAME_LEN + 32];
        rng.fill(&mut bytes).ok()?;
        let key = UnboundKey::new(&AES_256_GCM, &bytes[NAME_LEN..]).ok()?;
        let mut name = [0u8; NAME_LEN];
        name.copy_from_slice(&bytes[..NAME_LEN]);
        Some(TicketKey {
            name,
            aead: LessSafeKey::new(key),
        })
    }

    /// The additional data a ticket is sealed with: the key's name and
    /// the server's session context (a ticket opens only under a server
    /// with the same certificates, as OpenSSL's session id context).
    fn aad(&self, context: &[u8]) -> Vec<u8> {
        [&self.name[..], context].concat()
    }

    fn seal(
        &self,
        rng: &SystemRandom,
        context: &[u8],
        expires: u64,
        plain: &[u8],
    ) -> Option<Vec<u8>> {
        let mut nonce = [0u8; NONCE_LEN];
        rng.fill(&mut nonce).ok()?;
        let mut out = Vec::with_capacity(NAME_LEN + NONCE_LEN + 8 + plain.len() + 16);
        out.extend_from_slice(&self.name);
        out.extend_from_slice(&nonce);
        let mut body = Vec::with_capacity(8 + plain.len() + 16);
        body.extend_from_slice(&expires.to_be_bytes());
        body.extend_from_slice(plain);
        self.aead
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(self.aad(context)),
                &mut body,
            )
            .ok()?;
        out.extend_from_slice(&body);
        Some(out)
    }

    fn open(&self, ticket: &[u8], context: &[u8], now: u64) -> Option<Vec<u8>> {
        let nonce: [u8; NONCE_LEN] = ticket
            .get(NAME_LEN..NAME_LEN + NONCE_LEN)?
            .try_into()
            .ok()?;
        let mut body = ticket.get(NAME_LEN + NONCE_LEN..)?.to_vec();
        let plain = self
            .aead
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(self.aad(context)),
                &mut body,
            )
            .ok()?;
        let expires = u64::from_be_bytes(plain.get(..8)?.try_into().ok()?);
        if expires < now {
            return None;
        }
        Some(plain[8..].to_vec())
    }
}

/// Keys the process made: the current one and the one before it.
#[derive(Debug)]
pub struct ProcessKeys {
    rng: SystemRandom,
    state: Mutex<Rotation>,
}

#[derive(Debug)]
struct Rotation {
    current: Arc<TicketKey>,
    previous: Option<Arc<TicketKey>>,
    made: SystemTime,
}

impl ProcessKeys {
    /// A first random key; `None` if the system has no randomness to give.
    pub fn new() -> Option<Arc<ProcessKeys>> {
        let rng = SystemRandom::new();
        let current = Arc::new(TicketKey::random(&rng)?);
        Some(Arc::new(ProcessKeys {
            rng,
            state: Mutex::new(Rotation {
                current,
                previous: None,
                made: SystemTime::now(),
            }),
        }))
    }

    fn keys(&self) -> (Arc<TicketKey>, Option<Arc<TicketKey>>) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.made.elapsed().unwrap_or_default() >= ROTATE {
            if let Some(next) = TicketKey::random(&self.rng) {
                let old = std::mem::replace(&mut s.current, Arc::new(next));
                s.previous = Some(old);
                s.made = SystemTime::now();
            }
        }
        (s.current.clone(), s.previous.clone())
    }
}

/// Where a server's ticket keys come from.
#[derive(Debug, Clone)]
pub enum Keys {
    /// `ssl_session_ticket_key` files, in order.
    Files(Arc<Vec<TicketKey>>),
    /// The process's own.
    Process(Arc<ProcessKeys>),
}

/// A server's tickets: its keys, `ssl_session_timeout`, and its session
/// context.
#[derive(Debug)]
pub struct Tickets {
    keys: Keys,
    lifetime: u32,
    context: Vec<u8>,
    rng: SystemRandom,
}

impl Tickets {
    /// Tickets under `keys` that live `lifetime`, for sessions of
    /// `context` (see [`TicketKey::aad`]).
    pub fn new(keys: Keys, lifetime: Duration, context: [u8; 32]) -> Tickets {
        Tickets {
            keys,
            lifetime: u32::try_from(lifetime.as_secs()).unwrap_or(u32::MAX),
            context: context.to_vec(),
            rng: SystemRandom::new(),
        }
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl rustls::server::ProducesTickets for Tickets {
    fn enabled(&self) -> bool {
        true
    }

    fn lifetime(&self) -> u32 {
        self.lifetime
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        if Renewal::is_resumed_tls12(plain) {
            return None;
        }
        let expires = unix_now() + u64::from(self.lifetime);
        match &self.keys {
            Keys::Files(list) => list.first()?.seal(&self.rng, &self.context, expires, plain),
            Keys::Process(p) => p.keys().0.seal(&self.rng, &self.context, expires, plain),
        }
    }

    fn decrypt(&self, ticket: &[u8]) -> Option<Vec<u8>> {
        let name = ticket.get(..NAME_LEN)?;
        let now = unix_now();
        let (plain, current) = match &self.keys {
            Keys::Files(list) => {
                let i = list.iter().position(|k| k.name == name)?;
                (list[i].open(ticket, &self.context, now)?, i == 0)
            }
            Keys::Process(p) => {
                let (current, previous) = p.keys();
                if current.name == name {
                    (current.open(ticket, &self.context, now)?, true)
                } else {
                    let old = previous.filter(|k| k.name == name)?;
                    (old.open(ticket, &self.context, now)?, false)
                }
            }
        };
        Renewal::opened(&plain, current);
        Some(plain)
    }
}

/// Which tickets are not renewed: rustls opens a TLS 1.2 client's ticket
/// and seals the resumed session's new one in the same call on the same
/// thread (its ClientHello's), with the resumed session's master secret.
/// So the master secret of the last ticket a thread opened under the
/// current key tells a renewal from a new session's ticket, whose secret
/// is fresh; a resumption rustls refused makes a full handshake, with a
/// new secret. TLS 1.3 tickets are always sent, as OpenSSL sends them.
struct Renewal;

thread_local! {
    static OPENED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl Renewal {
    /// Notes the session of a ticket just opened: one opened under the
    /// current key is not renewed, one of an older key is.
    fn opened(plain: &[u8], current: bool) {
        OPENED.with(|o| {
            let mut o = o.borrow_mut();
            o.clear();
            if let Some(secret) = tls12_secret(plain).filter(|_| current) {
                o.extend_from_slice(secret);
            }
        });
    }

    /// Whether `plain` is the TLS 1.2 session this thread just resumed.
    fn is_resumed_tls12(plain: &[u8]) -> bool {
        let Some(secret) = tls12_secret(plain) else {
            return false;
        };
        OPENED.with(|o| {
            let mut o = o.borrow_mut();
            let same = !o.is_empty() && o.as_slice() == secret;
            if same {
                o.clear();
            }
            same
        })
    }
}

/// The master secret of a TLS 1.2 session as rustls encodes it in a
/// ticket (`ServerSessionValue`: the SNI flag and name, the protocol
/// version, the cipher suite, then the secret with a one-byte length), or
/// `None` for TLS 1.3 or what does not read so.
fn tls12_secret(plain: &[u8]) -> Option<&[u8]> {
    let mut at = match *plain.first()? {
        0 => 1,
        1 => 2 + usize::from(*plain.get(1)?),
        _ => return None,
    };
    if plain.get(at..at + 2)? != [3, 3] {
        return None;
    }
    at += 4;
    let len = usize::from(*plain.get(at)?);
    if len == 0 {
        return None;
    }
    plain.get(at + 1..at + 1 + len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::server::ProducesTickets;
    use std::path::Path;

    fn key(seed: u8, len: usize) -> TicketKey {
        let bytes: Vec<u8> = (0..len).map(|i| seed.wrapping_add(i as u8)).collect();
        TicketKey::from_file(&bytes, Path::new("/k")).unwrap()
    }

    /// A session as rustls encodes it: SNI, version, suite, secret, rest.
    fn session(sni: Option<&str>, version: [u8; 2], secret: &[u8]) -> Vec<u8> {
        let mut v = match sni {
            Some(n) => [vec![1, n.len() as u8], n.as_bytes().to_vec()].concat(),
            None => vec![0],
        };
        v.extend_from_slice(&version);
        v.extend_from_slice(&[0xc0, 0x2c, secret.len() as u8]);
        v.extend_from_slice(secret);
        v.extend_from_slice(&[0, 0, 0, 0]);
        v
    }

    #[test]
    fn a_resumed_tls12_session_under_the_current_key_gets_no_new_ticket() {
        let files = Keys::Files(Arc::new(vec![key(1, 48), key(2, 80)]));
        let old = Tickets::new(Keys::Files(Arc::new(vec![key(2, 80)])), ROTATE, [7; 32]);
        let t = Tickets::new(files, ROTATE, [7; 32]);
        let a = session(Some("localhost"), [3, 3], &[0xa5; 48]);
        let older = old.encrypt(&a).unwrap();
        let ticket = t.encrypt(&a).expect("a new session's ticket");
        assert_eq!(t.decrypt(&ticket).as_deref(), Some(&a[..]));
        // Sealed again for the same session: the renewal nginx does not send.
        assert_eq!(t.encrypt(&a), None);
        // Once only, and never for another session's secret.
        assert!(t.encrypt(&a).is_some());
        let fresh = session(None, [3, 3], &[0x5a; 48]);
        assert!(t.decrypt(&t.encrypt(&a).unwrap()).is_some());
        assert!(t.encrypt(&fresh).is_some());
        // A ticket of an older key is renewed under the current one.
        assert_eq!(t.decrypt(&older).as_deref(), Some(&a[..]));
        assert!(t.encrypt(&a).is_some());
        // TLS 1.3 sessions get their tickets.
        let v13 = session(None, [3, 4], &[0xa5; 48]);
        assert!(t.decrypt(&t.encrypt(&v13).unwrap()).is_some());
        assert!(t.encrypt(&v13).is_some());
    }

    #[test]
    fn a_key_file_is_48_or_80_bytes() {
        assert!(TicketKey::from_file(&[0; 48], Path::new("/k")).is_ok());
        assert!(TicketKey::from_file(&[0; 80], Path::new("/k")).is_ok());
        assert_eq!(
            TicketKey::from_file(&[0; 47], Path::new("/k")).unwrap_err(),
            "\"/k\" must be 48 or 80 bytes"
        );
    }

    #[test]
    fn the_first_key_seals_and_every_key_opens() {
        let new = Tickets::new(
            Keys::Files(Arc::new(vec![key(1, 80), key(2, 48)])),
            Duration::from_secs(300),
            [0; 32],
        );
        let old = Tickets::new(
            Keys::Files(Arc::new(vec![key(2, 48)])),
            Duration::from_secs(300),
            [0; 32],
        );
        let t = old.encrypt(b"session").unwrap();
        assert_eq!(new.decrypt(&t).as_deref(), Some(&b"session"[..]));
        let t = new.encrypt(b"later").unwrap();
        assert_eq!(new.decrypt(&t).as_deref(), Some(&b"later"[..]));
        // A key rotated out no longer opens what the new first key sealed.
        assert_eq!(old.decrypt(&t), None);
        // A ticket changed by one bit is refused.
        let mut bad = new.encrypt(b"x").unwrap();
        *bad.last_mut().unwrap() ^= 1;
        assert_eq!(new.decrypt(&bad), None);
    }

    #[test]
    fn an_expired_ticket_is_refused() {
        let k = key(3, 80);
        let rng = SystemRandom::new();
        let t = k.seal(&rng, b"ctx", 100, b"s").unwrap();
        assert_eq!(k.open(&t, b"ctx", 100).as_deref(), Some(&b"s"[..]));
        assert_eq!(k.open(&t, b"ctx", 101), None);
    }

    #[test]
    fn process_keys_open_what_they_sealed() {
        let t = Tickets::new(
            Keys::Process(ProcessKeys::new().unwrap()),
            Duration::from_secs(60),
            [0; 32],
        );
        let sealed = t.encrypt(b"abc").unwrap();
        assert_eq!(t.decrypt(&sealed).as_deref(), Some(&b"abc"[..]));
    }

    /// Regression: a ticket of one server resumed on another with the
    /// same key file and other certificates (OpenSSL refuses it: the
    /// session id context, which nginx makes of the certificates,
    /// differs).
    #[test]
    fn a_ticket_opens_only_under_its_own_context() {
        let keys = Arc::new(vec![key(4, 80)]);
        let a = Tickets::new(Keys::Files(keys.clone()), Duration::from_secs(60), [1; 32]);
        let b = Tickets::new(Keys::Files(keys), Duration::from_secs(60), [2; 32]);
        let t = a.encrypt(b"s").unwrap();
        assert_eq!(b.decrypt(&t), None);
        assert_eq!(a.decrypt(&t).as_deref(), Some(&b"s"[..]));
    }
}
