//! Setters of the proxy module's TLS directives (`proxy_ssl_*`, nginx's
//! `ngx_http_proxy_commands` under `NGX_HTTP_SSL`): each records its value
//! at the http, server or location level, with nginx's duplicate checks
//! (a flag, number, string or complex value set twice is a duplicate;
//! `proxy_ssl_protocols` adds to itself, `proxy_ssl_conf_command`
//! accumulates). What the files hold is read once the levels are merged,
//! for the locations that proxy over TLS ([`super::finish_proxy_ssl`]), as
//! nginx reads them in `ngx_http_proxy_set_ssl`; but for
//! `proxy_ssl_password_file`, which nginx reads where it is written.

use super::build::{Builder, Scope, set_flag, set_once};
use super::set_proxy::{ls, not_set};
use super::slot;
use super::ssl_model::{CertName, NamedFile, Passwords, Protocols};
use super::syntax::Directive;

/// `proxy_ssl_session_reuse on | off;`
pub fn proxy_ssl_session_reuse(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_flag(&mut ls(scope).proxy_ssl_session_reuse, d)
}

/// `proxy_ssl_server_name on | off;`
pub fn proxy_ssl_server_name(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_flag(&mut ls(scope).proxy_ssl_server_name, d)
}

/// `proxy_ssl_verify on | off;`
pub fn proxy_ssl_verify(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_flag(&mut ls(scope).proxy_ssl_verify, d)
}

/// `proxy_ssl_verify_depth number;`
pub fn proxy_ssl_verify_depth(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let slot = &mut ls(scope).proxy_ssl_verify_depth;
    not_set(slot, d)?;
    *slot = Some(slot::num(d, 0)?);
    Ok(())
}

/// `proxy_ssl_protocols [SSLv2] [SSLv3] [TLSv1] [TLSv1.1] [TLSv1.2]
/// [TLSv1.3];` (`ngx_conf_set_bitmask_slot`: a second one adds its
/// protocols, a protocol named again is warned about).
pub fn proxy_ssl_protocols(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let slot = &mut ls(scope).proxy_ssl_protocols;
    let before = slot.as_ref().map_or(0, |(p, _)| p.0);
    let mut seen: Vec<usize> = (0..Protocols::NAMES.len())
        .filter(|i| before & (1 << i) != 0)
        .collect();
    slot::bitmask(b, d, &Protocols::NAMES, &mut seen)?;
    let bits = seen.iter().fold(0u8, |acc, &i| acc | (1 << i));
    ls(scope).proxy_ssl_protocols = Some((Protocols(bits), Some(d.loc.clone())));
    Ok(())
}

/// `proxy_ssl_ciphers ciphers;` (an OpenSSL cipher string, checked where
/// a location proxies over TLS).
pub fn proxy_ssl_ciphers(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let v = (d.arg(0).to_string(), Some(d.loc.clone()));
    set_once(&mut ls(scope).proxy_ssl_ciphers, v, &d.name)
}

/// `proxy_ssl_name name;` (variables allowed).
pub fn proxy_ssl_name(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    not_set(&ls(scope).proxy_ssl_name, d)?;
    let t = b.template(d.arg(0), &d.loc)?;
    ls(scope).proxy_ssl_name = Some(Some(t));
    Ok(())
}

/// A file a directive names, resolved against the configuration file's
/// directory (nginx's `conf_prefix`, as for every file of the ssl module).
fn named_file(b: &Builder, d: &Directive) -> NamedFile {
    NamedFile {
        path: b.conf_full_path(d.arg(0)),
        loc: d.loc.clone(),
    }
}

/// `proxy_ssl_trusted_certificate file;`
pub fn proxy_ssl_trusted_certificate(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let f = named_file(b, d);
    set_once(
        &mut ls(scope).proxy_ssl_trusted_certificate,
        Some(f),
        &d.name,
    )
}

/// `proxy_ssl_crl file;`
pub fn proxy_ssl_crl(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let f = named_file(b, d);
    set_once(&mut ls(scope).proxy_ssl_crl, Some(f), &d.name)
}

/// A certificate or key name (`ngx_http_set_complex_value_zero_slot`): a
/// file (resolved against the configuration file's directory unless it is
/// `data:` PEM), or a name with variables.
fn cert_name(b: &mut Builder, d: &Directive) -> Result<CertName, String> {
    let text = d.arg(0);
    let name = b.template(text, &d.loc)?;
    let path = (name.is_static() && !text.starts_with("data:")).then(|| b.conf_full_path(text));
    Ok(CertName {
        name,
        path,
        loc: d.loc.clone(),
    })
}

/// `proxy_ssl_certificate file;`
pub fn proxy_ssl_certificate(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    not_set(&ls(scope).proxy_ssl_certificate, d)?;
    let c = cert_name(b, d)?;
    ls(scope).proxy_ssl_certificate = Some(Some(c));
    Ok(())
}

/// `proxy_ssl_certificate_key file;`
pub fn proxy_ssl_certificate_key(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    not_set(&ls(scope).proxy_ssl_certificate_key, d)?;
    let c = cert_name(b, d)?;
    ls(scope).proxy_ssl_certificate_key = Some(Some(c));
    Ok(())
}

/// `proxy_ssl_password_file file;`: read now, as nginx's
/// `ngx_ssl_read_password_file` (one passphrase per line).
pub fn proxy_ssl_password_file(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    not_set(&ls(scope).proxy_ssl_password_file, d)?;
    let f = named_file(b, d);
    let bytes = b.data.read(&f.path).map_err(|e| {
        format!(
            "open() \"{}\" failed ({})",
            f.path.display(),
            crate::sys::error::errno_text(&e)
        )
    })?;
    let passwords =
        passwords(&bytes).ok_or_else(|| format!("too long line in \"{}\"", f.path.display()))?;
    ls(scope).proxy_ssl_password_file = Some(Some((f, Passwords(passwords))));
    Ok(())
}

/// nginx's `NGX_SSL_PASSWORD_BUFFER_SIZE`: a passphrase line must be
/// shorter.
pub const PASSWORD_LINE_MAX: usize = 4096;

/// The passphrases of a password file, as `ngx_ssl_read_password_file`
/// reads them: its lines that are not empty, without their line ends
/// (`\n` or `\r\n`); a file without any holds one empty passphrase.
/// `None`: a line too long.
pub fn passwords(bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    for line in bytes.split(|&c| c == b'\n') {
        if line.len() >= PASSWORD_LINE_MAX {
            return None;
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if !line.is_empty() {
            out.push(line.to_vec());
        }
    }
    if out.is_empty() {
        out.push(Vec::new());
    }
    Some(out)
}

/// `proxy_ssl_conf_command name value;` (several; a level's list replaces
/// its parent's, as nginx's `ngx_conf_merge_ptr_value`).
pub fn proxy_ssl_conf_command(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let c = (d.arg(0).to_string(), d.arg(1).to_string(), d.loc.clone());
    ls(scope)
        .proxy_ssl_conf_command
        .get_or_insert_with(Vec::new)
        .push(c);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_file_is_its_lines() {
        let p = |b: &[u8]| passwords(b).unwrap();
        assert_eq!(
            p(b"a\r\n\nb\nc"),
            vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
        );
        assert_eq!(p(b"one\n"), vec![b"one".to_vec()]);
        assert_eq!(p(b"\n\n"), vec![Vec::<u8>::new()]);
        assert_eq!(passwords(&[b'x'; PASSWORD_LINE_MAX]), None);
    }
}
