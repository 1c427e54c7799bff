//! The `$ssl_client_*` variables, `$ssl_session_id`, `$ssl_curve`,
//! `$ssl_alpn_protocol` and `$ssl_early_data`
//! from what the handshake kept ([`TlsInfo`]), printed as nginx's
//! `ngx_ssl_get_*` print them. An empty value is "not found", as
//! `ngx_http_ssl_variable` makes it (the access log prints `-`), but
//! `$ssl_client_verify`, which says `NONE`.

use std::borrow::Cow;

use crate::config::vars::Builtin;
use crate::tls::client_verify::Verdict;
use crate::tls::x509::CertFields;
use crate::tls::x509_print as x509;

use super::info::TlsInfo;

/// Seconds in a day, for `$ssl_client_v_remain`.
const DAY: i64 = 86400;

/// The value of `var` for a connection whose handshake kept `tls`;
/// `early` says whether the request came in TLS 1.3 early data. `None`
/// for a variable this module does not own.
pub fn value(var: Builtin, tls: &TlsInfo, early: bool) -> Option<Option<Cow<'static, [u8]>>> {
    let found = |s: String| -> Option<Cow<'static, [u8]>> {
        (!s.is_empty()).then(|| Cow::Owned(s.into_bytes()))
    };
    let cert = tls.client.as_ref();
    let fields = || cert.and_then(|c| CertFields::parse(c.der()));
    let v = match var {
        Builtin::SslSessionId => found(tls.session_id.iter().map(|b| format!("{b:02x}")).collect()),
        Builtin::SslCurve => found(
            tls.group
                .map(crate::tls::groups::curve_name)
                .unwrap_or_default(),
        ),
        Builtin::SslAlpnProtocol => {
            found(String::from_utf8_lossy(tls.alpn.as_deref().unwrap_or_default()).into_owned())
        }
        Builtin::SslEarlyData => early.then_some(Cow::Borrowed(&b"1"[..])),
        Builtin::SslClientVerify => Some(Cow::Owned(
            match cert {
                None => "NONE".to_string(),
                Some(c) => match (c.verdict, c.ocsp_failure()) {
                    (Verdict::Success, None) => "SUCCESS".to_string(),
                    (Verdict::Success, Some(why)) => format!("FAILED:{why}"),
                    (v, _) => format!("FAILED:{}", v.reason()),
                },
            }
            .into_bytes(),
        )),
        Builtin::SslClientSDn => found(
            fields()
                .and_then(|f| x509::rfc2253(f.subject))
                .unwrap_or_default(),
        ),
        Builtin::SslClientIDn => found(
            fields()
                .and_then(|f| x509::rfc2253(f.issuer))
                .unwrap_or_default(),
        ),
        Builtin::SslClientSDnLegacy => found(
            fields()
                .and_then(|f| x509::oneline(f.subject))
                .unwrap_or_default(),
        ),
        Builtin::SslClientIDnLegacy => found(
            fields()
                .and_then(|f| x509::oneline(f.issuer))
                .unwrap_or_default(),
        ),
        Builtin::SslClientSerial => found(
            fields()
                .map(|f| x509::serial_hex(f.serial))
                .unwrap_or_default(),
        ),
        Builtin::SslClientFingerprint => {
            found(cert.map(|c| x509::fingerprint(c.der())).unwrap_or_default())
        }
        Builtin::SslClientRawCert => found(cert.map(|c| x509::pem(c.der())).unwrap_or_default()),
        Builtin::SslClientCert => found(
            cert.map(|c| tabbed(&x509::pem(c.der())))
                .unwrap_or_default(),
        ),
        Builtin::SslClientEscapedCert => {
            let pem = cert.map(|c| x509::pem(c.der())).unwrap_or_default();
            let mut out = Vec::new();
            crate::http::escape::escape_uri_component(pem.as_bytes(), &mut out);
            (!out.is_empty()).then_some(Cow::Owned(out))
        }
        Builtin::SslClientVStart => found(
            fields()
                .map(|f| x509::time_print(f.not_before))
                .unwrap_or_default(),
        ),
        Builtin::SslClientVEnd => found(
            fields()
                .map(|f| x509::time_print(f.not_after))
                .unwrap_or_default(),
        ),
        Builtin::SslClientVRemain => {
            let end = fields().map(|f| f.not_after);
            found(end.map(remain).unwrap_or_default())
        }
        _ => return None,
    };
    Some(v)
}

/// `$ssl_client_cert`: the PEM without its last line break, a tab after
/// every other (`ngx_ssl_get_certificate`).
fn tabbed(pem: &str) -> String {
    let body = pem.strip_suffix('\n').unwrap_or(pem);
    body.replace('\n', "\n\t")
}

/// Whole days from now to `end`, `0` within a day of it or past it
/// (`ngx_ssl_get_client_v_remain`).
fn remain(end: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    if end < now + DAY {
        return "0".to_string();
    }
    ((end - now) / DAY).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deprecated_form_indents_continuation_lines() {
        assert_eq!(tabbed("a\nb\nc\n"), "a\n\tb\n\tc");
    }

    #[test]
    fn a_certificate_within_a_day_of_its_end_has_none_left() {
        assert_eq!(remain(0), "0");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        assert_eq!(remain(now + DAY / 2), "0");
        assert_eq!(remain(now + 3 * DAY + 10), "3");
    }
}
