//! The ssl module's checks once every server is merged, and each server's
//! TLS made of its settings and files, as nginx's
//! `ngx_http_ssl_merge_srv_conf` and `ngx_http_ssl_init` do them: a server
//! that speaks TLS has a certificate for every key and a key for every
//! certificate; an address with `listen … ssl` has a certificate in its
//! default server (or `ssl_reject_handshake`); each file is read now, its
//! failure said in nginx's words.
//!
//! Where rustls can do less than OpenSSL, the usable part is kept and the
//! rest said: `ssl_protocols` without TLSv1.2 or TLSv1.3, cipher suites
//! rustls does not have, `ssl_dhparam` (no finite-field DHE). A setting
//! that leaves nothing to offer is an error.

use std::collections::HashMap;
use std::sync::Arc;

use super::build::Builder;
use super::error::ConfError;
use super::inherit::SrvConf;
use super::model::{HttpConf, ListenAddr, Server};
use super::source::Loc;
use super::ssl_conf_command;
use super::ssl_model::{NamedFile, Protocols, TicketPlan, TlsPlan};
use crate::tls::{material, openssl_text};

/// The TLS 1.2 suites rustls has (IANA codes), in OpenSSL's default order.
pub const TLS12_SUITES: [u16; 6] = [0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc02b, 0xc02f];
/// The TLS 1.3 suites rustls has, in OpenSSL's default order.
pub const TLS13_SUITES: [u16; 3] = [0x1302, 0x1303, 0x1301];
/// The key-exchange groups nowait offers: X25519, secp256r1, secp384r1.
pub const GROUPS: [u16; 3] = [0x001d, 0x0017, 0x0018];

/// The pool handshakes run in (nowait's: nginx runs them on its loops).
pub const HANDSHAKE_POOL: &str = "ssl";
/// The queue of the implicit handshake pool: a burst beyond this many
/// handshakes waiting fails fast, as a full thread pool does.
pub const HANDSHAKE_QUEUE: usize = 1024;

/// Declares the pool that runs handshakes' key operations when some
/// server speaks TLS or some location proxies over TLS, and the
/// configuration does not declare it itself (`thread_pool ssl threads=N
/// max_queue=M;`): one thread per CPU.
pub fn handshake_pool(main: &mut super::model::MainConf, h: &HttpConf) {
    let speaks_tls = h.servers.iter().any(|s| s.tls.is_some()) || !h.upstream_tls.is_empty();
    if !speaks_tls || main.thread_pools.iter().any(|p| p.name == HANDSHAKE_POOL) {
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    main.thread_pools.push(super::model::ThreadPoolConf {
        name: HANDSHAKE_POOL.to_string(),
        threads: cpus,
        max_queue: HANDSHAKE_QUEUE,
        loc: None,
    });
}

/// Builds each server's [`TlsPlan`] and makes nginx's checks.
pub fn finish(b: &mut Builder, h: &mut HttpConf) {
    let provider = crate::tls::provider();
    let mut failed = Vec::new();
    for (i, s) in h.servers.iter_mut().enumerate() {
        let before = b.diags.items.len();
        let acme = s.acme.as_ref().map(|o| o.id());
        match plan(b, &provider, &s.srv, s.loc.as_ref(), acme) {
            Some(plan) => s.tls = Some(Arc::new(plan)),
            None if b.diags.items.len() > before => failed.push(i),
            None => {}
        }
    }
    check_addresses(b, h, &failed);
}

/// The server's TLS, when it has any; `None` also after an error (said).
fn plan(
    b: &mut Builder,
    provider: &rustls::crypto::CryptoProvider,
    c: &SrvConf,
    server_loc: Option<&Loc>,
    acme_order: Option<String>,
) -> Option<TlsPlan> {
    let certs = &c.ssl_certificate;
    let keys = &c.ssl_certificate_key;
    let enabled = c.ssl.as_ref();
    let err_at = certs
        .last()
        .map(|c| c.loc.clone())
        .or_else(|| enabled.cloned())
        .or_else(|| server_loc.cloned())?;
    // `ngx_http_ssl_merge_srv_conf`'s checks, in its words.
    if let Some(on) = enabled {
        if certs.is_empty() && !c.ssl_reject_handshake {
            b.diags.push(ConfError::emerg(
                format!("no \"ssl_certificate\" is defined for the \"ssl\" directive in {on}"),
                None,
            ));
            return None;
        }
    }
    if certs.is_empty() && enabled.is_none() && !c.ssl_reject_handshake {
        return None;
    }
    if keys.len() < certs.len() {
        let last = certs.last().map(|c| c.name.to_string()).unwrap_or_default();
        // The messages that name the `ssl` directive's place carry no other.
        let (msg, at) = match enabled {
            Some(on) if keys.is_empty() => (
                format!("no \"ssl_certificate_key\" is defined for the \"ssl\" directive in {on}"),
                None,
            ),
            Some(on) => (
                format!(
                    "no \"ssl_certificate_key\" is defined for certificate \"{last}\" and the \"ssl\" directive in {on}"
                ),
                None,
            ),
            None => (
                format!("no \"ssl_certificate_key\" is defined for certificate \"{last}\""),
                Some(err_at),
            ),
        };
        b.diags.push(ConfError::emerg(msg, at));
        return None;
    }
    let passwords = match &c.ssl_password_file {
        Some(f) => Some(password_file(b, f)?),
        None => None,
    };
    let mut pairs = Vec::new();
    let mut names = Vec::new();
    let mut dynamic = Vec::new();
    // A name with variables makes every pair load per handshake, as
    // nginx's `ngx_http_ssl_compile_certificates` compiles them all.
    let per_handshake = certs
        .iter()
        .zip(keys)
        .any(|(c, k)| !c.name.is_static() || !k.name.is_static());
    for (cert, key) in certs.iter().zip(keys) {
        if per_handshake {
            dynamic.push((cert.clone(), key.clone()));
            continue;
        }
        let loaded = load_named_pair(
            b,
            provider,
            cert,
            key,
            passwords.as_ref().map(|p| p.as_slice()),
        );
        match loaded {
            Ok(p) => {
                expiry_warning(b, &p, &cert.loc);
                names.push(p.path.display().to_string());
                pairs.push(p);
            }
            Err(e) => {
                // nginx says it without a place (`ngx_ssl_error` at
                // merge time).
                b.diags.push(ConfError::emerg(e, None));
                return None;
            }
        }
    }
    // `ssl_certificate $acme_certificate; ssl_certificate_key
    // $acme_certificate_key;` in a server with `acme_certificate`: that
    // pair is the order's certificate. Elsewhere the variables are not
    // found, and the pair fails each handshake as nginx-acme's does.
    let acme = acme_order.filter(|_| dynamic.iter().any(|(c, k)| c.is_acme_pair(k)));
    let trusted = super::finish_stapling::trusted(b, c)?;
    let protocols = protocols(b, c)?;
    let tls12_suites = tls12_suites(b, c, protocols)?;
    let groups = groups(b, c)?;
    if let Some(f) = &c.ssl_dhparam {
        // Read and checked as nginx's `ngx_ssl_dhparam` does; the
        // table's notice says the DHE suites it enables are not offered.
        let checked = match b.data.read(&f.path) {
            Err(e) => Err(openssl_text::line(
                &format!("BIO_new_file(\"{}\") failed", f.path.display()),
                &openssl_text::fopen_failed(&f.path, &e),
            )),
            Ok(pem) => material::dhparam(&pem, &f.path),
        };
        if let Err(e) = checked {
            b.error(e, &f.loc);
            return None;
        }
    }
    let mut applied = ssl_conf_command::Applied {
        tls13_suites: TLS13_SUITES.to_vec(),
        prefer_server_ciphers: c.ssl_prefer_server_ciphers,
        tickets: None,
        certificate: None,
        key: None,
    };
    ssl_conf_command::apply(b, &c.ssl_conf_command, &mut applied, &TLS13_SUITES)?;
    // Certificates named with variables are loaded per handshake, over
    // whatever the commands load, as nginx's certificate callback does.
    if dynamic.is_empty() && (applied.certificate.is_some() || applied.key.is_some()) {
        let at = c
            .ssl_conf_command
            .last()
            .map(|(_, _, l)| l.clone())
            .unwrap_or(err_at.clone());
        let Some((cert, key)) = ssl_conf_command::pair_files(&applied) else {
            b.error(
                "\"ssl_conf_command Certificate\" and \"PrivateKey\" are honoured together only",
                &at,
            );
            return None;
        };
        // OpenSSL puts the pair in the place of the one with the same
        // kind of key.
        match load_pair(b, provider, cert, key) {
            Ok(p) => {
                let kind = p.key.key.algorithm();
                let name = p.path.display().to_string();
                match pairs.iter().position(|q| q.key.key.algorithm() == kind) {
                    Some(i) => {
                        pairs[i] = p;
                        names[i] = name;
                    }
                    None => {
                        pairs.push(p);
                        names.push(name);
                    }
                }
            }
            Err(e) => {
                b.error(e, &at);
                return None;
            }
        }
    }
    let tls13_suites = applied.tls13_suites;
    let prefer_server_ciphers = applied.prefer_server_ciphers;
    let tickets = tickets(b, c, applied.tickets.unwrap_or(c.ssl_session_tickets))?;
    let stapling = super::finish_stapling::plans(b, c, &pairs, &names, &trusted)?;
    let client_cas = client_cas(b, provider, c, &trusted)?;
    let ocsp = super::finish_ocsp::plan(b, c, &trusted)?;
    Some(TlsPlan {
        pairs,
        dynamic_certs: dynamic,
        acme,
        protocols,
        tls12_suites,
        tls13_suites,
        groups,
        prefer_server_ciphers,
        buffer_size: c.ssl_buffer_size,
        session_cache: c.ssl_session_cache.0.clone(),
        session_timeout: c.ssl_session_timeout,
        tickets,
        reject_handshake: c.ssl_reject_handshake,
        stapling,
        verify: c.ssl_verify_client,
        client_cas,
        ocsp,
        early_data: c.ssl_early_data,
        passwords,
    })
}

/// The words OpenSSL's file loaders fail with when a file cannot be
/// opened (`fopen` through a BIO), after nginx's `CALL("PATH") failed`.
pub(super) fn fopen_failed(call: &str, path: &std::path::Path, e: &std::io::Error) -> String {
    let mut queue = openssl_text::fopen_failed(path, e);
    queue.push((openssl_text::X509_SYSTEM_LIB.to_string(), None));
    openssl_text::line(&format!("{call}(\"{}\") failed", path.display()), &queue)
}

/// The certificates of a CA file (`SSL_CTX_load_verify_locations`), in
/// nginx's words when it cannot be read or holds none.
fn ca_file(
    b: &mut Builder,
    f: &NamedFile,
) -> Option<Vec<rustls::pki_types::CertificateDer<'static>>> {
    use rustls::pki_types::pem::PemObject;
    const CALL: &str = "SSL_CTX_load_verify_locations";
    let bytes = match b.data.read(&f.path) {
        Ok(bytes) => bytes,
        Err(e) => {
            b.diags
                .push(ConfError::emerg(fopen_failed(CALL, &f.path, &e), None));
            return None;
        }
    };
    let certs: Vec<_> = rustls::pki_types::CertificateDer::pem_slice_iter(&bytes)
        .filter_map(Result::ok)
        .collect();
    let crls = rustls::pki_types::CertificateRevocationListDer::pem_slice_iter(&bytes).count();
    if certs.is_empty() && crls == 0 {
        b.diags.push(ConfError::emerg(
            format!(
                "{CALL}(\"{}\") failed (SSL: error:05800088:x509 certificate routines::no certificate or crl found)",
                f.path.display()
            ),
            None,
        ));
        return None;
    }
    Some(certs)
}

/// The CRLs of `ssl_crl` (`X509_LOOKUP_load_file`), DER.
fn crl_file(b: &mut Builder, f: &NamedFile) -> Option<Vec<Vec<u8>>> {
    use rustls::pki_types::pem::PemObject;
    const CALL: &str = "X509_LOOKUP_load_file";
    let bytes = match b.data.read(&f.path) {
        Ok(bytes) => bytes,
        Err(e) => {
            b.diags
                .push(ConfError::emerg(fopen_failed(CALL, &f.path, &e), None));
            return None;
        }
    };
    let crls: Vec<Vec<u8>> =
        rustls::pki_types::CertificateRevocationListDer::pem_slice_iter(&bytes)
            .filter_map(Result::ok)
            .map(|c| c.as_ref().to_vec())
            .collect();
    let certs = rustls::pki_types::CertificateDer::pem_slice_iter(&bytes).count();
    if crls.is_empty() && certs == 0 {
        b.diags.push(ConfError::emerg(
            format!(
                "{CALL}(\"{}\") failed (SSL: error:05800088:x509 certificate routines::no certificate or crl found)",
                f.path.display()
            ),
            None,
        ));
        return None;
    }
    Some(crls)
}

/// `ssl_verify_client`, `ssl_client_certificate`,
/// `ssl_trusted_certificate`, `ssl_verify_depth` and `ssl_crl`, as
/// `ngx_http_ssl_merge_srv_conf` checks and loads them: the client CAs
/// only when client certificates are verified (and required then but for
/// `optional_no_ca`), the trusted CAs and the CRLs always. `Some(None)`:
/// no certificate is asked for.
fn client_cas(
    b: &mut Builder,
    provider: &rustls::crypto::CryptoProvider,
    c: &SrvConf,
    trusted: &[rustls::pki_types::CertificateDer<'static>],
) -> Option<Option<Arc<crate::tls::client_verify::ClientCas>>> {
    use super::ssl_model::VerifyClient;
    let mut named = Vec::new();
    if c.ssl_verify_client != VerifyClient::Off {
        match &c.ssl_client_certificate {
            Some(f) => named = ca_file(b, f)?,
            None if c.ssl_verify_client != VerifyClient::OptionalNoCa => {
                b.diags.push(ConfError::emerg(
                    "no ssl_client_certificate for ssl_verify_client",
                    None,
                ));
                return None;
            }
            None => {}
        }
    }
    // `ssl_trusted_certificate` was read with the stapling's settings.
    let unnamed = trusted;
    let crls = match &c.ssl_crl {
        Some(f) => Some(crl_file(b, f)?),
        None => None,
    };
    if c.ssl_verify_client == VerifyClient::Off {
        return Some(None);
    }
    let at = c
        .ssl_client_certificate
        .as_ref()
        .or(c.ssl_trusted_certificate.as_ref())
        .or(c.ssl_crl.as_ref())
        .map(|f| f.loc.clone());
    match crate::tls::client_verify::ClientCas::new(
        provider,
        &named,
        unnamed,
        crls.as_deref(),
        c.ssl_verify_depth,
    ) {
        Ok(cas) => Some(Some(Arc::new(cas))),
        Err(e) => {
            match at {
                Some(at) => b.error(e, &at),
                None => b.diags.push(ConfError::emerg(e, None)),
            }
            None
        }
    }
}

/// A certificate and its key read and checked; the error in nginx's words
/// (`cannot load certificate "…": …`). A `data:` name is the PEM itself.
fn load_named_pair(
    b: &mut Builder,
    provider: &rustls::crypto::CryptoProvider,
    cert: &super::ssl_model::CertName,
    key: &super::ssl_model::CertName,
    passwords: Option<&[Vec<u8>]>,
) -> Result<material::Pair, String> {
    let read = |b: &mut Builder, what: &str, n: &super::ssl_model::CertName| {
        let text = n.name.to_string();
        match (&n.path, text.strip_prefix("data:")) {
            (None, Some(pem)) => Ok((pem.as_bytes().to_vec(), std::path::PathBuf::from(&text))),
            (Some(p), _) => b.data.read(p).map(|bytes| (bytes, p.clone())).map_err(|e| {
                openssl_text::line(
                    &format!(
                        "cannot load {what} \"{}\": BIO_new_file() failed",
                        p.display()
                    ),
                    &openssl_text::fopen_failed(p, &e),
                )
            }),
            (None, None) => Err(format!("cannot load {what} \"{text}\"")),
        }
    };
    let (cert_pem, cert_path) = read(b, "certificate", cert)?;
    let (key_pem, key_path) = read(b, "certificate key", key)?;
    material::pair(
        provider, &cert_pem, &cert_path, &key_pem, &key_path, passwords,
    )
}

/// A certificate and its key read from files and checked, unencrypted
/// (the upstream side's: `proxy_ssl_certificate`).
pub(super) fn load_pair(
    b: &mut Builder,
    provider: &rustls::crypto::CryptoProvider,
    cert_path: &std::path::Path,
    key_path: &std::path::Path,
) -> Result<material::Pair, String> {
    let read = |b: &mut Builder, what: &str, p: &std::path::Path| {
        b.data.read(p).map_err(|e| {
            openssl_text::line(
                &format!(
                    "cannot load {what} \"{}\": BIO_new_file() failed",
                    p.display()
                ),
                &openssl_text::fopen_failed(p, &e),
            )
        })
    };
    let cert_pem = read(b, "certificate", cert_path)?;
    let key_pem = read(b, "certificate key", key_path)?;
    material::pair(provider, &cert_pem, cert_path, &key_pem, key_path, None)
}

/// The passphrases of `ssl_password_file`, read as nginx's
/// `ngx_ssl_read_password_file` reads them, its errors in nginx's words at
/// the directive's place.
fn password_file(b: &mut Builder, f: &NamedFile) -> Option<Arc<Vec<Vec<u8>>>> {
    let bytes = match b.data.read(&f.path) {
        Ok(bytes) => bytes,
        Err(e) => {
            b.error(
                format!(
                    "open() \"{}\" failed ({})",
                    f.path.display(),
                    crate::sys::error::errno_text(&e)
                ),
                &f.loc,
            );
            return None;
        }
    };
    match crate::tls::encrypted::passwords(&bytes) {
        Ok(p) => Some(Arc::new(p)),
        Err(crate::tls::encrypted::LineTooLong) => {
            b.error(format!("too long line in \"{}\"", f.path.display()), &f.loc);
            None
        }
    }
}

/// A warning for a certificate that has expired or is not valid yet
/// (nowait's: nginx says nothing, and clients refuse it); serving goes on.
fn expiry_warning(b: &mut Builder, p: &material::Pair, loc: &Loc) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    if let Some(t) = p.not_after.filter(|&t| t < now) {
        b.warn(
            format!(
                "certificate \"{}\" expired {} days ago: clients will refuse it",
                p.path.display(),
                (now - t) / 86400
            ),
            loc,
        );
    }
}

/// `ssl_protocols`, less what rustls does not speak (said in a notice);
/// an error when nothing is left.
fn protocols(b: &mut Builder, c: &SrvConf) -> Option<Protocols> {
    let (asked, loc) = &c.ssl_protocols;
    let at = loc.clone().or_else(|| c.ssl.clone());
    if asked.usable().0 == 0 && at.is_none() {
        return None;
    }
    usable_protocols(b, "ssl_protocols", *asked, loc.as_ref(), at.as_ref())
}

/// The protocols of `asked` (the value of `directive`, written at `loc`)
/// nowait speaks; what it does not is said in a notice when `asked` was
/// written, and nothing left is an error (at `at`, else without a place).
pub(super) fn usable_protocols(
    b: &mut Builder,
    directive: &str,
    asked: Protocols,
    loc: Option<&Loc>,
    at: Option<&Loc>,
) -> Option<Protocols> {
    let usable = asked.usable();
    let dropped = Protocols(asked.0 & !usable.0);
    if usable.0 == 0 {
        let msg = format!(
            "\"{directive}\" leaves no protocol nowait speaks: {} (nowait speaks TLSv1.2 and TLSv1.3)",
            asked.names().join(" ")
        );
        match at {
            Some(at) => b.error(msg, at),
            None => b.diags.push(ConfError::emerg(msg, None)),
        }
        return None;
    }
    if let (Some(at), true) = (loc, dropped.0 != 0) {
        b.notice(
            format!(
                "\"{directive}\": {} not offered, nowait (rustls) speaks TLSv1.2 and TLSv1.3 only",
                dropped.names().join(" ")
            ),
            at,
        );
    }
    Some(usable)
}

/// The TLS 1.2 suites `ssl_ciphers` selects, of those rustls has; what it
/// selects that rustls lacks is said in a notice. nginx's TLS 1.3 suites
/// do not come from this string (OpenSSL's `Ciphersuites` sets them).
fn tls12_suites(b: &mut Builder, c: &SrvConf, protocols: Protocols) -> Option<Vec<u16>> {
    let (spec, loc) = &c.ssl_ciphers;
    let at = loc.clone().or_else(|| c.ssl.clone());
    usable_tls12_suites(b, "ssl_ciphers", spec, at.as_ref(), at.as_ref(), protocols)
}

/// The TLS 1.2 suites the cipher string `spec` of `directive` selects, of
/// those rustls has (what it selects that rustls lacks is said in a notice
/// at `at`); with TLS 1.3 on, a string that selects none offers no TLS 1.2.
/// An error is said at `error_at` (without a place when `None`, as nginx
/// says the ones it finds while merging).
pub(super) fn usable_tls12_suites(
    b: &mut Builder,
    directive: &str,
    spec: &str,
    at: Option<&Loc>,
    error_at: Option<&Loc>,
    protocols: Protocols,
) -> Option<Vec<u16>> {
    let only_tls12 = protocols.has(Protocols::TLSV1_2) && !protocols.has(Protocols::TLSV1_3);
    match crate::tls::ciphers::usable(spec, &TLS12_SUITES) {
        Ok(u) => {
            if let (Some(at), false) = (at, u.unusable.is_empty()) {
                b.notice(
                    format!("\"{directive}\": not offered: {}", u.describe_unusable()),
                    at,
                );
            }
            Some(u.codes)
        }
        // With TLS 1.3 on, a string that leaves no TLS 1.2 suite still
        // serves TLS 1.3, as OpenSSL's does.
        Err(e @ crate::tls::ciphers::CipherError::NoneUsable { .. }) if !only_tls12 => {
            if let Some(at) = at {
                b.notice(format!("{e}; TLSv1.2 is not offered"), at);
            }
            Some(Vec::new())
        }
        Err(e) => {
            match error_at {
                Some(at) => b.error(e.to_string(), at),
                None => b.diags.push(ConfError::emerg(e.to_string(), None)),
            }
            None
        }
    }
}

/// The key-exchange groups `ssl_ecdh_curve` names, of those nowait offers.
fn groups(b: &mut Builder, c: &SrvConf) -> Option<Vec<u16>> {
    let (spec, loc) = &c.ssl_ecdh_curve;
    let at = loc.clone().or_else(|| c.ssl.clone());
    match crate::tls::groups::usable(spec, &GROUPS) {
        Ok(u) => {
            // `auto` names groups nobody asked for by name: no notice.
            if let (Some(at), false, false) = (&at, u.dropped.is_empty(), u.auto) {
                let names: Vec<String> = u
                    .dropped
                    .iter()
                    .map(|&g| crate::tls::groups::curve_name(g))
                    .collect();
                b.notice(
                    format!(
                        "\"ssl_ecdh_curve\": {} not offered (nowait offers X25519, prime256v1 and secp384r1)",
                        names.join(":")
                    ),
                    at,
                );
            }
            Some(u.codes)
        }
        Err(e) => {
            match &at {
                Some(at) => b.error(e.to_string(), at),
                None => b.diags.push(ConfError::emerg(e.to_string(), None)),
            }
            None
        }
    }
}

/// `ssl_session_tickets` (or `ssl_conf_command Options SessionTicket`:
/// `on`) and `ssl_session_ticket_key`.
fn tickets(b: &mut Builder, c: &SrvConf, on: bool) -> Option<TicketPlan> {
    if !on {
        return Some(TicketPlan::Off);
    }
    if c.ssl_session_ticket_key.is_empty() {
        return Some(TicketPlan::Process);
    }
    // nginx reads the key files while merging, and so says where the
    // `http` block ends (`ngx_conf_log_error` at the merge's position).
    let at = |f: &NamedFile, b: &Builder| b.http_end.clone().unwrap_or(f.loc.clone());
    let mut keys = Vec::new();
    for f in &c.ssl_session_ticket_key {
        let bytes = match b.data.read(&f.path) {
            Ok(bytes) => bytes,
            Err(e) => {
                let loc = at(f, b);
                b.error(
                    format!(
                        "open() \"{}\" failed ({})",
                        f.path.display(),
                        crate::sys::error::errno_text(&e)
                    ),
                    &loc,
                );
                return None;
            }
        };
        match crate::tls::tickets::TicketKey::from_file(&bytes, &f.path) {
            Ok(k) => keys.push(k),
            Err(e) => {
                let loc = at(f, b);
                b.error(e, &loc);
                return None;
            }
        }
    }
    Some(TicketPlan::Files(Arc::new(keys)))
}

/// `ngx_http_ssl_init`'s check of each address with `listen … ssl`: its
/// default server has a certificate, or refuses handshakes, and then every
/// server of the address has one or refuses.
/// A server in `failed` was already reported (its certificate could not be
/// loaded): it is not reported again as having none.
fn check_addresses(b: &mut Builder, h: &HttpConf, failed: &[usize]) {
    let mut by_addr: Vec<(&ListenAddr, Vec<&Server>, bool, Option<&Server>)> = Vec::new();
    for s in &h.servers {
        for l in &s.listens {
            let entry = match by_addr.iter_mut().position(|e| e.0 == &l.addr) {
                Some(i) => &mut by_addr[i],
                None => {
                    by_addr.push((&l.addr, Vec::new(), false, None));
                    by_addr.last_mut().expect("just pushed")
                }
            };
            entry.2 |= l.ssl;
            if !entry.1.iter().any(|o| std::ptr::eq(*o, s)) {
                entry.1.push(s);
            }
            if l.default_server {
                entry.3 = Some(s);
            }
        }
    }
    let mut said: HashMap<*const Server, ()> = HashMap::new();
    for (_, servers, ssl, default) in by_addr {
        if !ssl {
            continue;
        }
        let Some(default) = default.or_else(|| servers.first().copied()) else {
            continue;
        };
        let has_certs = |s: &Server| {
            s.tls
                .as_ref()
                .is_some_and(|t| !t.pairs.is_empty() || !t.dynamic_certs.is_empty())
        };
        let rejects = |s: &Server| s.srv.ssl_reject_handshake;
        let missing = |b: &mut Builder, s: &Server, said: &mut HashMap<*const Server, ()>| {
            let reported = failed.iter().any(|&i| std::ptr::eq(&h.servers[i], s));
            if reported || said.insert(s as *const Server, ()).is_some() {
                return;
            }
            let at = s.loc.clone().unwrap_or(Loc {
                origin: super::source::Origin::Embedded,
                line: 0,
            });
            b.diags.push(ConfError::emerg(
                format!(
                    "no \"ssl_certificate\" is defined for the \"listen ... ssl\" directive in {at}"
                ),
                None,
            ));
        };
        if has_certs(default) {
            continue;
        }
        if !rejects(default) {
            missing(b, default, &mut said);
            continue;
        }
        for s in servers {
            if !has_certs(s) && !rejects(s) {
                missing(b, s, &mut said);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a CA or CRL file that could not be opened for another
    /// reason than its absence was said with ENOENT's code
    /// (`error:80000002`); OpenSSL's system error carries the errno.
    #[test]
    fn a_file_that_cannot_be_opened_is_said_with_its_errno() {
        // As nginx 1.22 with OpenSSL 3.0 says `ssl_crl /etc/passwd/x;`.
        let e = std::io::Error::from_raw_os_error(libc::ENOTDIR);
        assert_eq!(
            fopen_failed(
                "X509_LOOKUP_load_file",
                std::path::Path::new("/etc/passwd/x"),
                &e
            ),
            "X509_LOOKUP_load_file(\"/etc/passwd/x\") failed (SSL: error:80000014:system library::Not a directory:calling fopen(/etc/passwd/x, r) error:10080002:BIO routines::system lib error:05880002:x509 certificate routines::system lib)"
        );
    }
}
