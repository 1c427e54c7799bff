//! Setters of nginx's ssl module (`ngx_http_ssl_commands`): each checks
//! its arguments with nginx's words and records the value at the http or
//! server level. What the files hold is read once the whole configuration
//! is, when each server's settings are merged (`finish_ssl`), as nginx
//! reads them in `ngx_http_ssl_merge_srv_conf`.

use super::build::{Builder, Scope, set_flag, set_once};
use super::inherit::SrvSet;
use super::slot;
use super::ssl_model::{
    Builtin, CertName, DEFAULT_BUILTIN_SESSIONS, NamedFile, OcspCacheZone, OcspCheck, Protocols,
    SessionCache, SharedSessionCache, VerifyClient,
};
use super::syntax::Directive;
use super::value;
use super::zones::ZoneUse;
use crate::config::inherit::PAGE_SIZE;

fn ss<'a>(scope: &'a mut Scope<'_>) -> &'a mut SrvSet {
    scope
        .srv_set()
        .expect("the table allows the ssl directives in http and server only")
}

/// A file argument resolved against the configuration file's directory
/// (nginx's `conf_prefix`, as for every file of the ssl module), with its
/// place.
fn named_file(b: &Builder, d: &Directive) -> NamedFile {
    NamedFile {
        path: b.conf_full_path(d.arg(0)),
        loc: d.loc.clone(),
    }
}

/// `ssl on | off;`: deprecated since nginx 1.15.0, and said so.
pub fn ssl(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let mut on = None;
    set_flag(&mut on, d)?;
    let set = ss(scope);
    if set.ssl.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    set.ssl = Some(on.unwrap_or(false).then(|| d.loc.clone()));
    b.warn(
        "the \"ssl\" directive is deprecated, use the \"listen ... ssl\" directive instead",
        &d.loc,
    );
    Ok(())
}

/// A certificate or key name: a literal path (resolved against the
/// configuration file's directory, as nginx's `ngx_ssl_load_certificate`
/// resolves it, when it does not start with `data:`), or a template with
/// variables, loaded per handshake.
fn cert_name(b: &mut Builder, d: &Directive) -> Result<CertName, String> {
    let text = d.arg(0);
    let name = b.template(text, &d.loc)?;
    let path = if name.is_static() && !text.starts_with("data:") {
        Some(b.conf_full_path(text))
    } else {
        None
    };
    Ok(CertName {
        name,
        path,
        loc: d.loc.clone(),
    })
}

/// `ssl_certificate file;` (may be written several times: one certificate
/// of each key type).
pub fn ssl_certificate(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let c = cert_name(b, d)?;
    ss(scope)
        .ssl_certificate
        .get_or_insert_with(Vec::new)
        .push(c);
    Ok(())
}

/// `ssl_certificate_key file;`, one for each `ssl_certificate`, in order.
pub fn ssl_certificate_key(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let c = cert_name(b, d)?;
    ss(scope)
        .ssl_certificate_key
        .get_or_insert_with(Vec::new)
        .push(c);
    Ok(())
}

/// `ssl_password_file file;`
pub fn ssl_password_file(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let f = named_file(b, d);
    set_once(&mut ss(scope).ssl_password_file, Some(f), &d.name)
}

macro_rules! file_slot {
    ($fn_name:ident, $field:ident) => {
        #[doc = concat!("`", stringify!($fn_name), " file;`")]
        pub fn $fn_name(
            b: &mut Builder,
            scope: &mut Scope<'_>,
            d: &Directive,
        ) -> Result<(), String> {
            let f = named_file(b, d);
            set_once(&mut ss(scope).$field, Some(f), &d.name)
        }
    };
}

file_slot!(ssl_dhparam, ssl_dhparam);
file_slot!(ssl_client_certificate, ssl_client_certificate);
file_slot!(ssl_trusted_certificate, ssl_trusted_certificate);
file_slot!(ssl_crl, ssl_crl);
file_slot!(ssl_stapling_file, ssl_stapling_file);

macro_rules! flag_slot {
    ($fn_name:ident, $field:ident) => {
        #[doc = concat!("`", stringify!($fn_name), " on | off;`")]
        pub fn $fn_name(
            _: &mut Builder,
            scope: &mut Scope<'_>,
            d: &Directive,
        ) -> Result<(), String> {
            set_flag(&mut ss(scope).$field, d)
        }
    };
}

flag_slot!(ssl_prefer_server_ciphers, ssl_prefer_server_ciphers);
flag_slot!(ssl_session_tickets, ssl_session_tickets);
flag_slot!(ssl_early_data, ssl_early_data);
flag_slot!(ssl_reject_handshake, ssl_reject_handshake);
flag_slot!(ssl_stapling, ssl_stapling);
flag_slot!(ssl_stapling_verify, ssl_stapling_verify);

/// `ssl_ecdh_curve curve[:curve…];` (checked when the server is merged).
pub fn ssl_ecdh_curve(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let v = (d.arg(0).to_string(), Some(d.loc.clone()));
    set_once(&mut ss(scope).ssl_ecdh_curve, v, &d.name)
}

/// `ssl_ciphers ciphers;` (an OpenSSL cipher string, checked when the
/// server is merged).
pub fn ssl_ciphers(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let v = (d.arg(0).to_string(), Some(d.loc.clone()));
    set_once(&mut ss(scope).ssl_ciphers, v, &d.name)
}

/// `ssl_protocols [SSLv2] [SSLv3] [TLSv1] [TLSv1.1] [TLSv1.2] [TLSv1.3];`
/// (`ngx_conf_set_bitmask_slot`): written twice at one level, the second
/// adds its protocols to the first's (a protocol named again is warned
/// of as a "duplicate value"), as nginx's bitmask slot ORs them.
pub fn ssl_protocols(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let mut seen: Vec<usize> = match &ss(scope).ssl_protocols {
        Some((p, _)) => (0..Protocols::NAMES.len())
            .filter(|&i| p.has(1 << i))
            .collect(),
        None => Vec::new(),
    };
    slot::bitmask(b, d, &Protocols::NAMES, &mut seen)?;
    let bits = seen.iter().fold(0u8, |acc, &i| acc | (1 << i));
    ss(scope).ssl_protocols = Some((Protocols(bits), Some(d.loc.clone())));
    Ok(())
}

/// `ssl_buffer_size size;`
pub fn ssl_buffer_size(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let v = slot::size(d, 0)?;
    set_once(&mut ss(scope).ssl_buffer_size, v, &d.name)
}

/// `ssl_verify_client on | off | optional | optional_no_ca;`
pub fn ssl_verify_client(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let v = slot::enumerated(
        d,
        &[
            ("off", VerifyClient::Off),
            ("on", VerifyClient::On),
            ("optional", VerifyClient::Optional),
            ("optional_no_ca", VerifyClient::OptionalNoCa),
        ],
    )?;
    set_once(&mut ss(scope).ssl_verify_client, v, &d.name)
}

/// `ssl_verify_depth number;`
pub fn ssl_verify_depth(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let v = slot::num(d, 0)?;
    set_once(&mut ss(scope).ssl_verify_depth, v, &d.name)
}

/// `ssl_session_cache off | none | [builtin[:size]] [shared:name:size];`
/// (`ngx_http_ssl_session_cache`): each argument in turn, the last of
/// `off`, `none` and `builtin` deciding the builtin cache; a shared zone is
/// declared as any other, and alone means "no builtin cache".
pub fn ssl_session_cache(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let invalid = |v: &str| format!("invalid session cache \"{v}\"");
    let mut cache = SessionCache::default();
    for w in &d.args {
        let v = w.value.as_str();
        match v {
            "off" => cache.builtin = Builtin::Off,
            "none" => cache.builtin = Builtin::None,
            "builtin" => cache.builtin = Builtin::Sessions(DEFAULT_BUILTIN_SESSIONS),
            _ if v.len() > "builtin:".len() && v.starts_with("builtin:") => {
                let n = value::number(&v["builtin:".len()..]).ok_or_else(|| invalid(v))?;
                cache.builtin = Builtin::Sessions(n);
            }
            _ if v.len() > "shared:".len() && v.starts_with("shared:") => {
                let rest = &v["shared:".len()..];
                let (name, size) = rest.split_once(':').unwrap_or((rest, ""));
                if name.is_empty() {
                    return Err(invalid(v));
                }
                let size = value::size(size).ok_or_else(|| invalid(v))?;
                if size < 8 * PAGE_SIZE {
                    return Err(format!("session cache \"{v}\" is too small"));
                }
                b.zones.add(name, size, ZoneUse::SslSession)?;
                cache.shared = Some(SharedSessionCache {
                    name: name.to_string(),
                    size,
                });
            }
            _ => return Err(invalid(v)),
        }
    }
    if cache.shared.is_some() && cache.builtin == Builtin::Unset {
        cache.builtin = Builtin::NoBuiltin;
    }
    ss(scope).ssl_session_cache = Some((cache, Some(d.loc.clone())));
    Ok(())
}

/// `ssl_session_ticket_key file;` (several: the first encrypts new
/// tickets, every one decrypts).
pub fn ssl_session_ticket_key(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let f = named_file(b, d);
    ss(scope)
        .ssl_session_ticket_key
        .get_or_insert_with(Vec::new)
        .push(f);
    Ok(())
}

/// `ssl_session_timeout time;` (`ngx_conf_set_sec_slot`).
pub fn ssl_session_timeout(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let v = value::time(d.arg(0), false).ok_or_else(|| slot::invalid_value(d))?;
    set_once(&mut ss(scope).ssl_session_timeout, v, &d.name)
}

/// `ssl_stapling_responder url;`
pub fn ssl_stapling_responder(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let v = Some(d.arg(0).to_string());
    set_once(&mut ss(scope).ssl_stapling_responder, v, &d.name)
}

/// `ssl_ocsp on | off | leaf;`
pub fn ssl_ocsp(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let v = slot::enumerated(
        d,
        &[
            ("off", OcspCheck::Off),
            ("on", OcspCheck::On),
            ("leaf", OcspCheck::Leaf),
        ],
    )?;
    set_once(&mut ss(scope).ssl_ocsp, v, &d.name)
}

/// `ssl_ocsp_responder url;` (checked when the server is merged, as
/// nginx's `ngx_ssl_ocsp` does).
pub fn ssl_ocsp_responder(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let v = Some(d.arg(0).to_string());
    set_once(&mut ss(scope).ssl_ocsp_responder, v, &d.name)
}

/// `ssl_ocsp_cache off | shared:name:size;` (`ngx_http_ssl_ocsp_cache`):
/// the zone is declared as any other.
pub fn ssl_ocsp_cache(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let v = d.arg(0);
    if v == "off" {
        return set_once(&mut ss(scope).ssl_ocsp_cache, None, &d.name);
    }
    let invalid = || format!("invalid OCSP cache \"{v}\"");
    let rest = v
        .strip_prefix("shared:")
        .filter(|r| !r.is_empty())
        .ok_or_else(invalid)?;
    let (name, size) = rest.split_once(':').unwrap_or((rest, ""));
    if name.is_empty() {
        return Err(invalid());
    }
    let size = value::size(size).ok_or_else(invalid)?;
    if size < 8 * PAGE_SIZE {
        return Err(format!("OCSP cache \"{v}\" is too small"));
    }
    if ss(scope).ssl_ocsp_cache.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    b.zones.add(name, size, ZoneUse::SslOcsp)?;
    let zone = OcspCacheZone {
        name: name.to_string(),
        size,
    };
    set_once(&mut ss(scope).ssl_ocsp_cache, Some(zone), &d.name)
}

/// `ssl_conf_command name value;` (several; checked when the server is
/// merged: nowait honours what rustls can do and refuses the rest).
pub fn ssl_conf_command(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let c = (d.arg(0).to_string(), d.arg(1).to_string(), d.loc.clone());
    ss(scope)
        .ssl_conf_command
        .get_or_insert_with(Vec::new)
        .push(c);
    Ok(())
}
