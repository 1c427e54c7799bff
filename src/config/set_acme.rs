//! Setters of nginx's ACME module (nginx/nginx-acme's
//! `ngx_http_acme_module`: `acme_issuer` and the directives of its block,
//! `acme_shared_zone`, `acme_certificate`), with that module's checks and
//! words. The identifiers a server's certificate takes from its
//! `server_name`, the issuers' files and what their state directories
//! already hold are settled once the whole configuration is read
//! ([`finish`]), as nginx-acme does in its postconfiguration.

use std::net::IpAddr;
use std::path::PathBuf;

use super::acme_model::{
    ACCOUNT_KEY_FILE, AccountKey, AcmeCertificate, AcmeIssuer, AcmeOrder, DEFAULT_STATE_PREFIX,
    ExternalAccountKey, Identifier, KeyKind, MIN_ZONE_SIZE, Profile, StoredPair,
};
use super::build::{Builder, Scope, set_flag, set_once};
use super::model::HttpConf;
use super::source::Loc;
use super::syntax::Directive;
use super::value;

/// An `acme_issuer` block's directives as written (`None`: not written).
#[derive(Debug, Default)]
pub struct IssuerSet {
    /// `uri`.
    pub uri: Option<String>,
    /// `account_key`: a kind, or a file's path.
    pub account_key: Option<Result<KeyKind, PathBuf>>,
    /// `challenge`.
    pub challenge: Option<()>,
    /// `common_name_in_csr`.
    pub common_name_in_csr: Option<bool>,
    /// `contact`, in order.
    pub contacts: Vec<String>,
    /// `external_account_key`.
    pub eab: Option<ExternalAccountKey>,
    /// `preferred_chain`.
    pub preferred_chain: Option<String>,
    /// `profile`.
    pub profile: Option<Profile>,
    /// `ssl_trusted_certificate`.
    pub ssl_trusted_certificate: Option<PathBuf>,
    /// `ssl_verify`.
    pub ssl_verify: Option<bool>,
    /// `state_path` (`Some(None)` for `off`).
    pub state_path: Option<Option<PathBuf>>,
    /// `accept_terms_of_service`.
    pub accept_tos: Option<bool>,
}

fn http<'a>(scope: &'a mut Scope<'_>) -> &'a mut HttpConf {
    match scope {
        Scope::Http(h) => h,
        _ => unreachable!("the table allows acme_issuer and acme_shared_zone in http only"),
    }
}

fn issuer<'a>(scope: &'a mut Scope<'_>) -> &'a mut IssuerSet {
    match scope {
        Scope::AcmeIssuer(i) => i,
        _ => unreachable!("the table allows these directives in acme_issuer only"),
    }
}

/// `acme_issuer name { … }`
pub fn acme_issuer(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let name = d.arg(0).to_string();
    if http(scope).acme.issuer(&name).is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let mut set = IssuerSet::default();
    let before = b.diags.items.len();
    b.walk(
        &mut Scope::AcmeIssuer(&mut set),
        d.block.as_deref().unwrap_or_default(),
    );
    if b.diags.items.len() > before {
        // nginx stops at the first error in the block.
        return Ok(());
    }
    // nginx-acme's `Issuer::init`, said as `acme_issuer: …` where the
    // directive is.
    let Some(uri) = set.uri.filter(|u| url_host(u).is_some()) else {
        return Err("acme_issuer: \"uri\" is missing".to_string());
    };
    let state_path = match set.state_path {
        Some(p) => p,
        None => Some(b.full_path(&format!("{DEFAULT_STATE_PREFIX}{name}"))),
    };
    let account_key = match set.account_key {
        None => AccountKey::Generate(KeyKind::default()),
        Some(Ok(kind)) => AccountKey::Generate(kind),
        Some(Err(path)) => match b.data.read(&path) {
            Ok(pem) => AccountKey::File(path, pem),
            Err(e) => {
                return Err(format!(
                    "acme_issuer: cannot load account key: BIO_new_file(\"{}\") failed ({})",
                    path.display(),
                    crate::sys::error::errno_text(&e)
                ));
            }
        },
    };
    let ssl_verify = set.ssl_verify.unwrap_or(true);
    let trusted = match set.ssl_trusted_certificate {
        Some(path) => match b.data.read(&path) {
            Ok(pem) => Some((path, pem)),
            Err(e) => {
                return Err(format!(
                    "SSL_CTX_load_verify_locations(\"{}\") failed ({})",
                    path.display(),
                    crate::sys::error::errno_text(&e)
                ));
            }
        },
        None => None,
    };
    let issuer = AcmeIssuer {
        name,
        uri,
        account_key,
        contacts: set.contacts,
        state_path,
        accept_tos: set.accept_tos.unwrap_or(false),
        ssl_verify,
        trusted,
        common_name_in_csr: set.common_name_in_csr.unwrap_or(false),
        eab: set.eab,
        preferred_chain: set.preferred_chain,
        profile: set.profile,
        loc: d.loc.clone(),
    };
    http(scope).acme.issuers.push(issuer);
    Ok(())
}

/// The host of an absolute `http://` or `https://` URL, when it has one.
pub fn url_host(u: &str) -> Option<&str> {
    let rest = u
        .strip_prefix("https://")
        .or_else(|| u.strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => host.split(':').next()?,
    };
    (!host.is_empty()).then_some(host)
}

/// `uri url;`
pub fn uri(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    // nginx-acme takes the last one written.
    issuer(scope).uri = Some(d.arg(0).to_string());
    Ok(())
}

/// `account_key alg[:size] | file;`
pub fn account_key(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let v = d.arg(0);
    let parsed = match KeyKind::parse(v) {
        Ok(Some(k)) => Ok(k),
        Ok(None) => Err(b.full_path(v)),
        Err(e) => return Err(format!("{}: {e}", d.name)),
    };
    set_once(&mut issuer(scope).account_key, parsed, &d.name)
}

/// `challenge http-01 | tls-alpn-01;`: HTTP-01 only in nowait.
pub fn challenge(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let set = issuer(scope);
    if set.challenge.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    match d.arg(0) {
        "http" | "http-01" => {
            set.challenge = Some(());
            Ok(())
        }
        "tls-alpn" | "tls-alpn-01" => Err(format!(
            "challenge \"{}\" is not supported by nowait: only http-01 is",
            d.arg(0)
        )),
        other => Err(format!("unsupported challenge: {other}")),
    }
}

/// `common_name_in_csr on | off;`
pub fn common_name_in_csr(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_flag(&mut issuer(scope).common_name_in_csr, d)
}

/// `contact URL;` (may be repeated; `mailto:` is added to a value without
/// a scheme).
pub fn contact(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let v = d.arg(0);
    if v.is_empty() {
        return Err(format!("\"{}\" directive invalid value", d.name));
    }
    let value = if has_scheme(v) {
        v.to_string()
    } else {
        format!("mailto:{v}")
    };
    issuer(scope).contacts.push(value);
    Ok(())
}

/// RFC 3986's `scheme ":"` at the start of `v`.
fn has_scheme(v: &str) -> bool {
    let mut bytes = v.bytes();
    if !bytes.next().is_some_and(|c| c.is_ascii_alphabetic()) {
        return false;
    }
    for c in bytes {
        if c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.') {
            continue;
        }
        return c == b':';
    }
    false
}

/// `external_account_key kid file | data:key;`
pub fn external_account_key(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    if issuer(scope).eab.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let (kid, v) = (d.arg(0), d.arg(1));
    if kid.is_empty() || v.is_empty() {
        return Err(format!("\"{}\" directive invalid value", d.name));
    }
    let encoded = match v.strip_prefix("data:") {
        Some(k) => k.as_bytes().to_vec(),
        None => {
            let path = b.full_path(v);
            b.data.read(&path).map_err(|e| {
                format!(
                    "{}: open() \"{}\" failed ({})",
                    d.name,
                    path.display(),
                    crate::sys::error::errno_text(&e)
                )
            })?
        }
    };
    let text = String::from_utf8_lossy(&encoded);
    let key = base64url_decode(text.trim())
        .ok_or_else(|| format!("\"{}\" directive invalid base64url encoded value", d.name))?;
    issuer(scope).eab = Some(ExternalAccountKey {
        kid: kid.to_string(),
        key,
    });
    Ok(())
}

/// base64url with or without padding, as nginx's `ngx_decode_base64url`.
fn base64url_decode(s: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    let engine = GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    engine.decode(s).ok()
}

/// `preferred_chain name;`
pub fn preferred_chain(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_once(
        &mut issuer(scope).preferred_chain,
        d.arg(0).to_string(),
        &d.name,
    )
}

/// `profile name [require];`
pub fn profile(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let required = match d.args.get(1).map(|w| w.value.as_str()) {
        None => false,
        Some("require") => true,
        Some(_) => return Err(format!("\"{}\" directive invalid value", d.name)),
    };
    let p = Profile {
        name: d.arg(0).to_string(),
        required,
    };
    set_once(&mut issuer(scope).profile, p, &d.name)
}

/// `ssl_trusted_certificate file;` (in `acme_issuer`: the ACME server's
/// trusted CAs).
pub fn ssl_trusted_certificate(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let p = b.full_path(d.arg(0));
    // `ngx_conf_set_str_slot`: a repeat is a duplicate.
    set_once(&mut issuer(scope).ssl_trusted_certificate, p, &d.name)
}

/// `ssl_verify on | off;`
pub fn ssl_verify(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    set_flag(&mut issuer(scope).ssl_verify, d)
}

/// `state_path path | off;`
pub fn state_path(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let v = d.arg(0);
    let p = (v != "off").then(|| b.full_path(v));
    set_once(&mut issuer(scope).state_path, p, &d.name)
}

/// `accept_terms_of_service;`
pub fn accept_terms_of_service(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_once(&mut issuer(scope).accept_tos, true, &d.name)
}

/// `acme_shared_zone zone=name:size;`
pub fn acme_shared_zone(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let h = http(scope);
    if h.acme.zone.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let v = d.arg(0);
    let Some(value) = v.strip_prefix("zone=") else {
        return Err(format!("\"{}\" must have \"zone\" parameter", d.name));
    };
    let invalid = || format!("{}: invalid zone size \"{value}\"", d.name);
    let (name, size) = value.split_once(':').ok_or_else(invalid)?;
    let size = value::size(size).ok_or_else(invalid)?;
    if size < MIN_ZONE_SIZE {
        return Err(format!("{}: zone {name} is too small", d.name));
    }
    h.acme.zone = Some((name.to_string(), size));
    Ok(())
}

/// `acme_certificate issuer [identifier ...] [key=alg[:size]];`
pub fn acme_certificate(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let Scope::Server(s) = scope else {
        unreachable!("the table allows acme_certificate in server only")
    };
    if s.acme.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let issuer = d.arg(0);
    if issuer.is_empty() {
        return Err(format!("\"{}\" directive \"issuer\" is missing", d.name));
    }
    let mut order = AcmeOrder {
        issuer: issuer.to_string(),
        identifiers: Vec::new(),
        key: KeyKind::default(),
        loc: d.loc.clone(),
    };
    for w in &d.args[1..] {
        let v = w.value.as_str();
        if let Some(k) = v.strip_prefix("key=") {
            order.key = match KeyKind::parse(k) {
                Ok(Some(kind)) => kind,
                Ok(None) => return Err(format!("\"{}\" directive invalid \"key\" value", d.name)),
                Err(e) => return Err(format!("{}: {e}", d.name)),
            };
            continue;
        }
        if v.is_empty() {
            return Err(format!("\"{}\" directive invalid value", d.name));
        }
        add_identifier(&mut order.identifiers, v).map_err(|e| format!("{}: {e}", d.name))?;
    }
    s.acme = Some(order);
    Ok(())
}

/// nginx-acme's `try_add_identifier`: an IP address (in its canonical
/// text), else a DNS name lowercased; `.example.test` is
/// `www.example.test` and `example.test`.
pub fn add_identifier(out: &mut Vec<Identifier>, value: &str) -> Result<(), String> {
    if let Ok(addr) = value.parse::<IpAddr>() {
        out.push(Identifier::Ip(addr.to_string()));
        return Ok(());
    }
    validate_dns_identifier(value).map_err(|e| format!("invalid server name: {e}"))?;
    let lower = value.to_ascii_lowercase();
    match lower.strip_prefix('.') {
        Some(host) => {
            out.push(Identifier::Dns(format!("www.{host}")));
            out.push(Identifier::Dns(host.to_string()));
        }
        None => out.push(Identifier::Dns(lower)),
    }
    Ok(())
}

/// nginx-acme's `validate_dns_identifier` (loosely nginx's
/// `ngx_http_validate_host`): printable ASCII, a leading dot or one
/// leading `*.` label, ending with a label; the error in its words.
fn validate_dns_identifier(name: &str) -> Result<(), String> {
    #[derive(PartialEq)]
    enum State {
        Start,
        Label,
        Dot,
        Wildcard,
    }
    let mut state = State::Start;
    for (i, ch) in name.bytes().enumerate() {
        state = match ch {
            0x00..=0x20 | 0x7f.. => {
                return Err(format!("invalid character {ch:x} at position {i}"));
            }
            b'*' if state == State::Start => State::Wildcard,
            b'.' if state != State::Dot => State::Dot,
            _ if state == State::Wildcard => {
                return Err(format!(
                    "unexpected character '{}' at position {i}",
                    ch as char
                ));
            }
            b'A'..=b'Z' | b'0'..=b'9' | b'a'..=b'z' | b'-' | b'_' | b'~' | b'%' => State::Label,
            b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'+' | b',' | b';' | b'=' => State::Label,
            _ => {
                return Err(format!(
                    "unexpected character '{}' at position {i}",
                    ch as char
                ));
            }
        };
    }
    if state != State::Label {
        return Err("does not end with a label".to_string());
    }
    Ok(())
}

/// nginx-acme's postconfiguration: a server's `acme_certificate` without
/// identifiers takes its `server_name` entries (a regular expression is
/// warned about and skipped, an empty name skipped), its issuer must
/// exist, and each distinct order is read from its issuer's
/// `state_path` when a certificate and key are kept there. Said at the
/// end of the http block, as nginx-acme says it.
pub fn finish(b: &mut Builder, h: &mut HttpConf) {
    let at = b.http_end.clone();
    let mut certificates: Vec<AcmeCertificate> = Vec::new();
    for s in &mut h.servers {
        let Some(order) = s.acme.as_mut() else {
            continue;
        };
        if order.identifiers.is_empty() {
            for name in &s.names {
                if name.starts_with('~') {
                    let msg = format!(
                        "\"acme_certificate\": unsupported regular expression in server_name: {name}"
                    );
                    push_warn(b, msg, at.as_ref());
                    continue;
                }
                if name.is_empty() {
                    continue;
                }
                if let Err(e) = add_identifier(&mut order.identifiers, name) {
                    push_emerg(b, format!("\"acme_certificate\": {e}"), at.as_ref());
                    return;
                }
            }
            if order.identifiers.is_empty() {
                push_emerg(
                    b,
                    "\"acme_certificate\": no identifiers found in \"server_name\"".to_string(),
                    at.as_ref(),
                );
                return;
            }
        }
        let Some(issuer) = h.acme.issuer(&order.issuer) else {
            push_emerg(
                b,
                format!("issuer \"{}\" is missing", order.issuer),
                at.as_ref(),
            );
            return;
        };
        let id = order.id();
        if certificates.iter().any(|c| c.order == *order) {
            continue;
        }
        let stored = issuer
            .state_path
            .clone()
            .and_then(|dir| stored_pair(b, &dir, &id));
        certificates.push(AcmeCertificate {
            order: order.clone(),
            id,
            stored,
        });
    }
    // The account key kept under each state path, read now as the
    // configuration's other files are.
    for issuer in &mut h.acme.issuers {
        if let (AccountKey::Generate(_), Some(dir)) = (&issuer.account_key, &issuer.state_path) {
            let _ = b.data.read(&dir.join(ACCOUNT_KEY_FILE));
        }
    }
    h.acme.certificates = certificates;
}

/// `<id>.crt` and `<id>.key` under `dir`, when both are there.
fn stored_pair(b: &mut Builder, dir: &std::path::Path, id: &str) -> Option<StoredPair> {
    let cert = b.data.read(&dir.join(format!("{id}.crt"))).ok()?;
    let key = b.data.read(&dir.join(format!("{id}.key"))).ok()?;
    Some(StoredPair { cert, key })
}

fn push_emerg(b: &mut Builder, msg: String, at: Option<&Loc>) {
    b.diags
        .push(super::error::ConfError::emerg(msg, at.cloned()));
}

fn push_warn(b: &mut Builder, msg: String, at: Option<&Loc>) {
    b.diags
        .push(super::error::ConfError::warn(msg, at.cloned()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load_text;

    const ISSUER: &str = "acme_issuer le { uri https://acme.test/dir; state_path off; }";

    fn load(body: &str) -> Result<HttpConf, Vec<String>> {
        let text = format!("events {{}}\nhttp {{\n{body}\n}}\n");
        load_text(&text)
            .map(|l| l.config.http.unwrap())
            .map_err(|e| e.into_iter().map(|e| e.message).collect())
    }

    #[test]
    fn a_server_orders_its_names_from_its_issuer() {
        let h = load(&format!(
            "{ISSUER}\nserver {{ server_name .example.test ~^x 127.0.0.1 \"\"; acme_certificate le key=rsa:3072; }}"
        ))
        .unwrap();
        let i = &h.acme.issuers[0];
        assert_eq!(i.account_key, AccountKey::Generate(KeyKind::Ecdsa(256)));
        assert!(i.ssl_verify && !i.accept_tos && i.state_path.is_none());
        let c = &h.acme.certificates[0];
        assert_eq!(c.order.key, KeyKind::Rsa(3072));
        assert_eq!(
            c.order.identifiers,
            [
                Identifier::Dns("www.example.test".into()),
                Identifier::Dns("example.test".into()),
                Identifier::Ip("127.0.0.1".into()),
            ]
        );
        assert!(c.id.starts_with("www.example.test-"), "{}", c.id);
    }

    #[test]
    fn mistakes_are_said_in_nginx_acme_words() {
        let e = load("server { server_name a.test; acme_certificate none; }").unwrap_err();
        assert_eq!(e, ["issuer \"none\" is missing"]);
        let e = load("acme_issuer le { state_path off; }").unwrap_err();
        assert_eq!(e, ["acme_issuer: \"uri\" is missing"]);
        let e = load(&format!("{ISSUER}\nserver {{ acme_certificate le; }}")).unwrap_err();
        assert_eq!(
            e,
            ["\"acme_certificate\": no identifiers found in \"server_name\""]
        );
        let e = load(&format!(
            "{ISSUER}\nserver {{ server_name a; acme_certificate le key=ecdsa:1; }}"
        ))
        .unwrap_err();
        assert_eq!(e, ["acme_certificate: unsupported curve"]);
        let e = load("acme_shared_zone zone=z:1k;").unwrap_err();
        assert_eq!(e, ["acme_shared_zone: zone z is too small"]);
        let e = load("acme_issuer le { uri https://a/; challenge dns-01; }").unwrap_err();
        assert_eq!(e, ["unsupported challenge: dns-01"]);
    }

    #[test]
    fn dns_identifiers_are_checked_as_nginx_acme_checks_them() {
        for (name, expect) in [
            ("example", Ok(())),
            ("_example", Ok(())),
            ("Example", Ok(())),
            ("Example.", Err("does not end with a label")),
            ("E\x10ample", Err("invalid character 10 at position 1")),
            (
                "www.example..test",
                Err("unexpected character '.' at position 12"),
            ),
            ("*.example.test", Ok(())),
            (
                "*ww.example.test",
                Err("unexpected character 'w' at position 1"),
            ),
            (
                "ww*.example.test",
                Err("unexpected character '*' at position 2"),
            ),
            ("", Err("does not end with a label")),
            ("*.", Err("does not end with a label")),
        ] {
            assert_eq!(
                validate_dns_identifier(name),
                expect.map_err(str::to_string),
                "{name:?}"
            );
        }
    }

    #[test]
    fn a_leading_dot_is_the_name_and_its_www() {
        let mut ids = Vec::new();
        add_identifier(&mut ids, ".Example.test").unwrap();
        add_identifier(&mut ids, "::ffff:127.0.0.1").unwrap();
        assert_eq!(
            ids,
            vec![
                Identifier::Dns("www.example.test".into()),
                Identifier::Dns("example.test".into()),
                Identifier::Ip("::ffff:127.0.0.1".into()),
            ]
        );
    }

    #[test]
    fn a_url_has_a_host() {
        assert_eq!(url_host("https://acme.test:14000/dir"), Some("acme.test"));
        assert_eq!(url_host("https://[::1]:14000/dir"), Some("::1"));
        assert_eq!(url_host("acme.test/dir"), None);
        assert_eq!(url_host("https:///dir"), None);
    }

    #[test]
    fn contacts_get_mailto_unless_they_have_a_scheme() {
        assert!(has_scheme("mailto:a@b"));
        assert!(has_scheme("tel:+1"));
        assert!(!has_scheme("admin@example.test"));
    }
}
