//! Certificates whose names have variables (`ssl_certificate
//! /etc/ssl/$ssl_server_name.crt;`), loaded per handshake as nginx's
//! `ngx_http_ssl_certificate` loads them: the names are evaluated once the
//! ClientHello's server name is known (on the loop: string work), the
//! files are read and the pair checked in the `ssl` pool (never on the
//! loop), and what was loaded is kept by name and file identity (size,
//! modification time, inode), so that a storm of handshakes naming the
//! same files reads them once and a replaced file is read again.
//!
//! A name that does not load fails the handshake, logged as nginx logs it
//! (`[error] cannot load certificate "…": …`).
//!
//! nginx-acme's pair, `ssl_certificate $acme_certificate;
//! ssl_certificate_key $acme_certificate_key;`, is one of these names too,
//! but held: its value is the certificate the server's ACME order holds,
//! parsed once when it was issued, and handed to the handshake as it is
//! (nginx-acme hands nginx its PEM as `data:…`, parsed again by each
//! handshake).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rustls::sign::CertifiedKey;

use crate::config::ssl_model::CertName;

/// Pairs kept at most per server; when full the cache starts again (a
/// configuration naming more distinct files than this reads some twice).
pub const MAX_CACHED: usize = 1024;

/// Where a certificate or key comes from once its name is evaluated.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// A file, its path resolved against the configuration file's
    /// directory (nginx's `conf_prefix`).
    File(PathBuf),
    /// A `data:` value: the PEM itself.
    Data(Vec<u8>),
}

impl Source {
    /// What an evaluated name means: `data:…` is the PEM, else a path
    /// (relative to `prefix`).
    pub fn of(value: &[u8], prefix: &Path) -> Source {
        match value.strip_prefix(b"data:") {
            Some(pem) => Source::Data(pem.to_vec()),
            None => {
                let p = PathBuf::from(String::from_utf8_lossy(value).into_owned());
                Source::File(if p.is_absolute() { p } else { prefix.join(p) })
            }
        }
    }

    /// The name as nginx prints it in its errors.
    fn shown(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Data(d) => format!("data:{}", String::from_utf8_lossy(d)),
        }
    }
}

/// A file's identity: what changes when it is replaced or rewritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Identity {
    size: u64,
    mtime: Option<SystemTime>,
    ino: u64,
}

/// One pair as loaded, with the identities of its files then.
#[derive(Debug)]
struct Cached {
    ids: (Option<Identity>, Option<Identity>),
    key: Arc<CertifiedKey>,
}

/// The pairs a server loaded per handshake.
#[derive(Debug, Default)]
pub struct Loaded {
    pairs: Mutex<HashMap<(Source, Source), Cached>>,
    /// The server whose handshakes load them, for
    /// `nowait_tls_certificate_expiry_seconds`; `None` for an upstream's
    /// client certificates, which are not served.
    served_by: Option<String>,
    /// The held pair last put in the metrics, so that each handshake does
    /// not parse it again.
    held_noted: Mutex<Option<Arc<CertifiedKey>>>,
}

/// What the metrics call a held pair's file: the variable that names it.
const HELD_LABEL: &str = "$acme_certificate";

/// One pair of a handshake.
#[derive(Clone, Debug)]
pub enum Named {
    /// Its names evaluated: files or `data:` values, loaded or taken from
    /// the cache.
    Load(Source, Source),
    /// A pair held parsed in memory (the ACME order's certificate).
    Held(Arc<CertifiedKey>),
}

/// The names of a server's pairs evaluated for one handshake.
pub type Names = Vec<Named>;

/// A held pair has no value now (the ACME order has no certificate yet):
/// the handshake fails, as nginx's certificate callback fails when a
/// name's variable does, with nothing logged but the handshake's failure.
#[derive(Debug, PartialEq, Eq)]
pub struct NoValue;

/// Evaluates each pair's names: `held` answers the pairs kept in memory
/// (`None`: not such a pair; `Some(None)`: such a pair, with no value
/// now), `expand` evaluates the others' names with the connection's
/// variables.
pub fn names(
    pairs: &[(CertName, CertName)],
    prefix: &Path,
    held: impl Fn(&CertName, &CertName) -> Option<Option<Arc<CertifiedKey>>>,
    expand: impl Fn(&CertName) -> Vec<u8>,
) -> Result<Names, NoValue> {
    pairs
        .iter()
        .map(|(c, k)| match held(c, k) {
            Some(Some(key)) => Ok(Named::Held(key)),
            Some(None) => Err(NoValue),
            None => Ok(Named::Load(
                Source::of(&expand(c), prefix),
                Source::of(&expand(k), prefix),
            )),
        })
        .collect()
}

/// The identity of `s` now (a `data:` value has none); the error in
/// nginx's words.
fn identity(s: &Source, what: &str) -> Result<Option<Identity>, String> {
    let Source::File(p) = s else {
        return Ok(None);
    };
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(p) {
        Ok(m) => Ok(Some(Identity {
            size: m.len(),
            mtime: m.modified().ok(),
            ino: m.ino(),
        })),
        Err(e) => Err(fopen_failed(what, p, &e)),
    }
}

/// nginx's words for a certificate or key file that cannot be opened
/// (`BIO_new_file` failing in `ngx_ssl_load_certificate`).
fn fopen_failed(what: &str, p: &Path, e: &std::io::Error) -> String {
    use crate::tls::openssl_text;
    openssl_text::line(
        &format!(
            "cannot load {what} \"{}\": BIO_new_file() failed",
            p.display()
        ),
        &openssl_text::fopen_failed(p, e),
    )
}

fn read(s: &Source, what: &str) -> Result<Vec<u8>, String> {
    match s {
        Source::Data(d) => Ok(d.clone()),
        // OpenSSL's `fopen` opens a directory (a name that evaluated to
        // nothing is the configuration's directory): its PEM reader then
        // finds no PEM, and says so.
        Source::File(p) => match std::fs::read(p) {
            Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => Ok(Vec::new()),
            r => r.map_err(|e| fopen_failed(what, p, &e)),
        },
    }
}

impl Loaded {
    /// The pairs of a server named `server`, whose expiry times the
    /// metrics show as each is loaded.
    pub fn served_by(server: &str) -> Loaded {
        Loaded {
            served_by: Some(server.to_string()),
            ..Loaded::default()
        }
    }

    /// Puts a pair a handshake of this server got into the metrics.
    fn note(&self, file: &str, not_after: Option<i64>) {
        if let (Some(server), Some(t)) = (&self.served_by, not_after) {
            crate::metrics::tls::note_certificate(server, file, t);
        }
    }

    /// The pairs `names` name, from the cache when their files are the
    /// ones loaded, else read and checked now (a held pair as it is).
    /// Runs in the `ssl` pool: it reads files.
    pub fn load(
        &self,
        names: &Names,
        provider: &rustls::crypto::CryptoProvider,
        passwords: Option<&[Vec<u8>]>,
    ) -> Result<Vec<Arc<CertifiedKey>>, String> {
        let mut out = Vec::with_capacity(names.len());
        for named in names {
            let (cert, key) = match named {
                Named::Held(key) => {
                    let mut noted = self.held_noted.lock().unwrap_or_else(|e| e.into_inner());
                    if !noted.as_ref().is_some_and(|n| Arc::ptr_eq(n, key)) {
                        *noted = Some(key.clone());
                        let end = key.cert.first().and_then(crate::tls::material::not_after);
                        self.note(HELD_LABEL, end);
                    }
                    out.push(key.clone());
                    continue;
                }
                Named::Load(cert, key) => (cert, key),
            };
            let ids = (
                identity(cert, "certificate")?,
                identity(key, "certificate key")?,
            );
            let cache_key = (cert.clone(), key.clone());
            {
                let cache = self.pairs.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(c) = cache.get(&cache_key).filter(|c| c.ids == ids) {
                    out.push(c.key.clone());
                    continue;
                }
            }
            let cert_pem = read(cert, "certificate")?;
            let key_pem = read(key, "certificate key")?;
            let pair = crate::tls::material::pair(
                provider,
                &cert_pem,
                Path::new(&cert.shown()),
                &key_pem,
                Path::new(&key.shown()),
                passwords,
            )?;
            let file = match cert {
                Source::File(p) => p.display().to_string(),
                Source::Data(_) => "data:".to_string(),
            };
            self.note(&file, pair.not_after);
            let mut cache = self.pairs.lock().unwrap_or_else(|e| e.into_inner());
            if cache.len() >= MAX_CACHED {
                cache.clear();
            }
            cache.insert(
                cache_key,
                Cached {
                    ids,
                    key: pair.key.clone(),
                },
            );
            out.push(pair.key);
        }
        Ok(out)
    }

    /// How many pairs are kept.
    pub fn len(&self) -> usize {
        self.pairs.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_files_under_the_prefix_or_data() {
        let prefix = Path::new("/etc/nowait");
        assert_eq!(
            Source::of(b"certs/a.crt", prefix),
            Source::File(PathBuf::from("/etc/nowait/certs/a.crt"))
        );
        assert_eq!(
            Source::of(b"/x.crt", prefix),
            Source::File(PathBuf::from("/x.crt"))
        );
        assert_eq!(
            Source::of(b"data:PEM", prefix),
            Source::Data(b"PEM".to_vec())
        );
    }

    #[test]
    fn a_pair_is_read_once_until_its_file_changes() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls");
        let dir = std::env::temp_dir().join(format!("nowait-dynamic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (cert, key) = (dir.join("a.crt"), dir.join("a.key"));
        std::fs::copy(fixtures.join("localhost-rsa.crt"), &cert).unwrap();
        std::fs::copy(fixtures.join("localhost-rsa.key"), &key).unwrap();
        let names = vec![Named::Load(
            Source::File(cert.clone()),
            Source::File(key.clone()),
        )];
        let l = Loaded::default();
        let provider = crate::tls::provider();
        let first = l.load(&names, &provider, None).unwrap();
        let again = l.load(&names, &provider, None).unwrap();
        assert!(
            Arc::ptr_eq(&first[0], &again[0]),
            "read again though unchanged"
        );
        std::fs::copy(fixtures.join("localhost-ec.crt"), &cert).unwrap();
        std::fs::copy(fixtures.join("localhost-ec.key"), &key).unwrap();
        let changed = l.load(&names, &provider, None).unwrap();
        assert!(
            !Arc::ptr_eq(&first[0], &changed[0]),
            "a changed file was not read"
        );
        assert_eq!(l.len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_held_pair_is_handed_as_it_is() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls");
        let read = |f: &str| std::fs::read(fixtures.join(f)).unwrap();
        let provider = crate::tls::provider();
        let pair = crate::tls::material::pair(
            &provider,
            &read("localhost-ec.crt"),
            Path::new("a.crt"),
            &read("localhost-ec.key"),
            Path::new("a.key"),
            None,
        )
        .unwrap();
        let l = Loaded::default();
        let got = l
            .load(&vec![Named::Held(pair.key.clone())], &provider, None)
            .unwrap();
        assert!(Arc::ptr_eq(&got[0], &pair.key), "a held pair was copied");
        assert!(l.is_empty(), "a held pair went into the cache");
    }

    #[test]
    fn a_held_pair_without_a_value_fails_the_names() {
        let name = |text: &str| CertName {
            name: crate::config::template::Template::literal(text),
            path: None,
            loc: crate::config::source::Loc::file(&Arc::from(Path::new("t.conf")), 1),
        };
        let pairs = vec![(name("a.crt"), name("a.key")), (name("held"), name("held"))];
        let held = |c: &CertName, _: &CertName| (c.name.to_string() == "held").then_some(None);
        let expand = |n: &CertName| n.name.to_string().into_bytes();
        let got = names(&pairs, Path::new("/p"), held, expand);
        assert_eq!(got.unwrap_err(), NoValue);
        let got = names(&pairs[..1], Path::new("/p"), held, expand).unwrap();
        assert!(matches!(
            got.as_slice(),
            [Named::Load(Source::File(c), Source::File(k))]
                if c == Path::new("/p/a.crt") && k == Path::new("/p/a.key")
        ));
    }

    #[test]
    fn a_directory_is_said_as_openssl_reads_it() {
        let dir = std::env::temp_dir();
        let names = vec![Named::Load(
            Source::File(dir.clone()),
            Source::File(dir.clone()),
        )];
        let e = Loaded::default()
            .load(&names, &crate::tls::provider(), None)
            .unwrap_err();
        // nginx: `PEM_read_bio_X509_AUX() failed (SSL: error:0480006C:PEM
        // routines::no start line:Expecting: TRUSTED CERTIFICATE)`; the
        // words after `SSL:` are the PEM reader's (tls/material.rs).
        let want = format!(
            "cannot load certificate \"{}\": PEM_read_bio_X509_AUX() failed (SSL: ",
            dir.display()
        );
        assert!(e.starts_with(&want), "{e}");
        assert!(e.contains("no start line"), "{e}");
    }

    #[test]
    fn a_missing_file_is_said_in_nginx_words() {
        let l = Loaded::default();
        let names = vec![Named::Load(
            Source::File(PathBuf::from("/nonexistent/a.crt")),
            Source::File(PathBuf::from("/nonexistent/a.key")),
        )];
        let e = l.load(&names, &crate::tls::provider(), None).unwrap_err();
        assert_eq!(
            e,
            "cannot load certificate \"/nonexistent/a.crt\": BIO_new_file() failed (SSL: error:80000002:system library::No such file or directory:calling fopen(/nonexistent/a.crt, r) error:10000080:BIO routines::no such file)"
        );
        assert!(l.is_empty());
    }
}
