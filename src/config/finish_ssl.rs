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
use super::ssl_model::{Protocols, TicketPlan, TlsPlan};
use crate::tls::material;

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
        match plan(b, &provider, &s.srv, s.loc.as_ref()) {
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
    let mut pairs = Vec::new();
    let mut names = Vec::new();
    let mut dynamic = Vec::new();
    for (cert, key) in certs.iter().zip(keys) {
        match (&cert.path, &key.path) {
            (Some(cp), Some(kp)) => match load_pair(b, provider, cp, kp) {
                Ok(p) => {
                    expiry_warning(b, &p, &cert.loc);
                    pairs.push(p);
                    names.push(cp.display().to_string());
                }
                Err(e) => {
                    b.error(e, &cert.loc);
                    return None;
                }
            },
            _ => dynamic.push((cert.clone(), key.clone())),
        }
    }
    if !dynamic.is_empty() {
        b.error(
            "variables in \"ssl_certificate\" and \"ssl_certificate_key\" directives are not supported yet",
            &dynamic[0].0.loc,
        );
        return None;
    }
    let trusted = super::finish_stapling::trusted(b, c)?;
    let protocols = protocols(b, c)?;
    let tls12_suites = tls12_suites(b, c, protocols)?;
    let groups = groups(b, c)?;
    if let Some(f) = &c.ssl_dhparam {
        if let Err(e) = b.data.read(&f.path) {
            b.error(
                format!(
                    "BIO_new_file(\"{}\") failed ({})",
                    f.path.display(),
                    crate::config::errno_text(&e)
                ),
                &f.loc,
            );
            return None;
        }
        b.warn(
            "\"ssl_dhparam\" is ignored: rustls has no finite-field Diffie-Hellman, so no DHE cipher suite is offered",
            &f.loc,
        );
    }
    let mut tls13_suites = TLS13_SUITES.to_vec();
    let mut prefer_server_ciphers = c.ssl_prefer_server_ciphers;
    for (name, value, loc) in &c.ssl_conf_command {
        conf_command(
            b,
            name,
            value,
            loc,
            &mut tls13_suites,
            &mut prefer_server_ciphers,
        )?;
    }
    let tickets = tickets(b, c)?;
    let stapling = super::finish_stapling::plans(b, c, &pairs, &names, &trusted)?;
    Some(TlsPlan {
        pairs,
        dynamic_certs: dynamic,
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
    })
}

/// A certificate and its key read and checked; the error in nginx's words
/// (`cannot load certificate "…": …`).
pub(super) fn load_pair(
    b: &mut Builder,
    provider: &rustls::crypto::CryptoProvider,
    cert_path: &std::path::Path,
    key_path: &std::path::Path,
) -> Result<material::Pair, String> {
    let read = |b: &mut Builder, what: &str, p: &std::path::Path| {
        b.data.read(p).map_err(|e| {
            format!(
                "cannot load {what} \"{}\": BIO_new_file() failed ({})",
                p.display(),
                crate::config::errno_text(&e)
            )
        })
    };
    let cert_pem = read(b, "certificate", cert_path)?;
    let key_pem = read(b, "certificate key", key_path)?;
    let pair = material::pair(provider, &cert_pem, cert_path, &key_pem, key_path)?;
    Ok(pair)
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

/// One `ssl_conf_command`: what rustls can honour is applied, the rest is
/// refused (nginx passes every command to OpenSSL, which refuses what it
/// does not know).
pub(super) fn conf_command(
    b: &mut Builder,
    name: &str,
    value: &str,
    loc: &Loc,
    tls13_suites: &mut Vec<u16>,
    prefer_server_ciphers: &mut bool,
) -> Option<()> {
    match name {
        "Ciphersuites" => {
            let mut out = Vec::new();
            for n in value.split(':').filter(|n| !n.is_empty()) {
                match tls13_code(n) {
                    Some(code) if !out.contains(&code) => out.push(code),
                    Some(_) => {}
                    None => {
                        b.error(
                            format!("SSL_CONF_cmd(\"{name}\", \"{value}\") failed (SSL: no cipher match)"),
                            loc,
                        );
                        return None;
                    }
                }
            }
            *tls13_suites = out;
        }
        "Options" => {
            for opt in value.split(',').map(str::trim).filter(|o| !o.is_empty()) {
                match opt {
                    "ServerPreference" => *prefer_server_ciphers = true,
                    "-ServerPreference" => *prefer_server_ciphers = false,
                    // The seam for kernel TLS: this kernel has no `tls`
                    // module, and nowait sends through rustls.
                    "KTLS" | "-KTLS" => b.notice(
                        "\"ssl_conf_command Options KTLS\": kernel TLS is not used, records are encrypted by rustls",
                        loc,
                    ),
                    "-SessionTicket" | "SessionTicket" | "NoRenegotiation" | "-NoRenegotiation" => {
                        b.notice(
                            format!("\"ssl_conf_command Options {opt}\" has no effect in nowait (use ssl_session_tickets; rustls never renegotiates)"),
                            loc,
                        )
                    }
                    _ => {
                        b.error(
                            format!("SSL_CONF_cmd(\"{name}\", \"{value}\") failed: nowait cannot honour \"{opt}\""),
                            loc,
                        );
                        return None;
                    }
                }
            }
        }
        _ => {
            b.error(
                format!(
                    "SSL_CONF_cmd(\"{name}\", \"{value}\") failed: nowait cannot honour \"{name}\""
                ),
                loc,
            );
            return None;
        }
    }
    Some(())
}

/// The IANA code of a TLS 1.3 suite named as OpenSSL's `Ciphersuites`
/// names it.
fn tls13_code(name: &str) -> Option<u16> {
    TLS13_SUITES
        .iter()
        .copied()
        .find(|&c| crate::tls::ciphers::openssl_name(c) == Some(name))
}

/// `ssl_session_tickets` and `ssl_session_ticket_key`.
fn tickets(b: &mut Builder, c: &SrvConf) -> Option<TicketPlan> {
    if !c.ssl_session_tickets {
        return Some(TicketPlan::Off);
    }
    if c.ssl_session_ticket_key.is_empty() {
        return Some(TicketPlan::Process);
    }
    let mut keys = Vec::new();
    for f in &c.ssl_session_ticket_key {
        let bytes = match b.data.read(&f.path) {
            Ok(bytes) => bytes,
            Err(e) => {
                b.error(
                    format!(
                        "open() \"{}\" failed ({})",
                        f.path.display(),
                        crate::config::errno_text(&e)
                    ),
                    &f.loc,
                );
                return None;
            }
        };
        match crate::tls::tickets::TicketKey::from_file(&bytes, &f.path) {
            Ok(k) => keys.push(k),
            Err(e) => {
                b.error(e, &f.loc);
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
