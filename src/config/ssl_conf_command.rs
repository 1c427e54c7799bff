//! `ssl_conf_command name value;` as OpenSSL 3.0's `SSL_CONF_cmd` reads
//! it when nginx hands it over (a server's commands, in order, once its
//! settings are merged): the command names OpenSSL knows (matched without
//! regard to case), with OpenSSL's errors for a name or value it does not
//! know. What rustls can do is applied over the directives' settings —
//! TLS 1.3 suites, `Options ServerPreference` and `SessionTicket`, a
//! `Certificate` with its `PrivateKey` — and a command OpenSSL knows that
//! nowait cannot honour is refused in nowait's words.

use std::path::{Path, PathBuf};

use super::build::Builder;
use super::source::Loc;
use crate::tls::openssl_text;

/// The commands OpenSSL 3.0 takes from a configuration file for a server
/// (`ssl_conf_cmds` with `SSL_CONF_FLAG_FILE | SERVER | CERTIFICATE`).
const COMMANDS: [&str; 30] = [
    "SignatureAlgorithms",
    "ClientSignatureAlgorithms",
    "Curves",
    "Groups",
    "ECDHParameters",
    "CipherString",
    "Ciphersuites",
    "Protocol",
    "MinProtocol",
    "MaxProtocol",
    "Options",
    "VerifyMode",
    "Certificate",
    "PrivateKey",
    "ServerInfoFile",
    "ChainCAPath",
    "ChainCAFile",
    "ChainCAStore",
    "VerifyCAPath",
    "VerifyCAFile",
    "VerifyCAStore",
    "RequestCAFile",
    "ClientCAFile",
    "RequestCAPath",
    "ClientCAPath",
    "RequestCAStore",
    "ClientCAStore",
    "DHParameters",
    "RecordPadding",
    "NumTickets",
];

/// The option names `Options` takes (OpenSSL 3.0's `ssl_option_list`).
const OPTIONS: [&str; 20] = [
    "SessionTicket",
    "EmptyFragments",
    "Bugs",
    "Compression",
    "ServerPreference",
    "NoResumptionOnRenegotiation",
    "DHSingle",
    "ECDHSingle",
    "UnsafeLegacyRenegotiation",
    "UnsafeLegacyServerConnect",
    "EncryptThenMac",
    "NoRenegotiation",
    "AllowNoDHEKEX",
    "PrioritizeChaCha",
    "MiddleboxCompat",
    "AntiReplay",
    "ExtendedMasterSecret",
    "CANames",
    "KTLS",
    "IgnoreUnexpectedEOF",
];

/// The TLS 1.3 suites OpenSSL 3.0 knows by name, with their IANA codes.
const TLS13_NAMES: [(&str, u16); 5] = [
    ("TLS_AES_128_GCM_SHA256", 0x1301),
    ("TLS_AES_256_GCM_SHA384", 0x1302),
    ("TLS_CHACHA20_POLY1305_SHA256", 0x1303),
    ("TLS_AES_128_CCM_SHA256", 0x1304),
    ("TLS_AES_128_CCM_8_SHA256", 0x1305),
];

/// OpenSSL's `SSL_R_BAD_VALUE`.
const BAD_VALUE: &str = "error:0A000180:SSL routines::bad value";
/// OpenSSL's `SSL_R_UNKNOWN_CMD_NAME`.
const UNKNOWN_CMD_NAME: &str = "error:0A000182:SSL routines::unknown cmd name";
/// OpenSSL's `SSL_R_NO_CIPHER_MATCH`.
const NO_CIPHER_MATCH: &str = "error:0A0000B9:SSL routines::no cipher match";

/// What a server's commands leave, over its directives' settings.
#[derive(Debug)]
pub struct Applied {
    /// The TLS 1.3 suites, in order.
    pub tls13_suites: Vec<u16>,
    /// `ServerPreference`.
    pub prefer_server_ciphers: bool,
    /// `SessionTicket` (`Some(false)` for `-SessionTicket`), when said.
    pub tickets: Option<bool>,
    /// `Certificate` and `PrivateKey`: files to load in place of the
    /// server's pair of the same key type.
    pub certificate: Option<PathBuf>,
    /// See [`Applied::certificate`].
    pub key: Option<PathBuf>,
}

/// Applies each `(name, value, place)` in order to `applied`; `None`
/// after an error (said).
pub fn apply(
    b: &mut Builder,
    commands: &[(String, String, Loc)],
    applied: &mut Applied,
    tls13_supported: &[u16],
) -> Option<()> {
    for (name, value, loc) in commands {
        let failed = |why: Vec<openssl_text::Entry>| {
            openssl_text::line(
                &format!("SSL_CONF_cmd(\"{name}\", \"{value}\") failed"),
                &why,
            )
        };
        let Some(known) = COMMANDS.iter().find(|c| c.eq_ignore_ascii_case(name)) else {
            b.error(
                failed(vec![(
                    UNKNOWN_CMD_NAME.to_string(),
                    Some(format!("cmd={name}")),
                )]),
                loc,
            );
            return None;
        };
        let bad_value = || {
            failed(vec![(
                BAD_VALUE.to_string(),
                Some(format!("cmd={name}, value={value}")),
            )])
        };
        match *known {
            "Ciphersuites" => {
                // OpenSSL skips the names it does not know; none known at
                // all is "no cipher match".
                let mut known_any = value.is_empty();
                let mut out = Vec::new();
                for n in value.split(':').filter(|n| !n.is_empty()) {
                    let Some(&(_, code)) = TLS13_NAMES.iter().find(|(s, _)| *s == n) else {
                        continue;
                    };
                    known_any = true;
                    if !tls13_supported.contains(&code) {
                        b.notice(
                            format!("\"ssl_conf_command Ciphersuites\": {n} not offered (rustls has no CCM)"),
                            loc,
                        );
                    } else if !out.contains(&code) {
                        out.push(code);
                    }
                }
                if !known_any {
                    b.error(
                        failed(vec![
                            (NO_CIPHER_MATCH.to_string(), None),
                            (
                                BAD_VALUE.to_string(),
                                Some(format!("cmd={name}, value={value}")),
                            ),
                        ]),
                        loc,
                    );
                    return None;
                }
                applied.tls13_suites = out;
            }
            "Options" => {
                for opt in value.split(',').map(str::trim).filter(|o| !o.is_empty()) {
                    let (on, bare) = match opt.strip_prefix('-') {
                        Some(rest) => (false, rest),
                        None => (true, opt),
                    };
                    let Some(known) = OPTIONS.iter().find(|o| o.eq_ignore_ascii_case(bare)) else {
                        b.error(bad_value(), loc);
                        return None;
                    };
                    match *known {
                        "ServerPreference" => applied.prefer_server_ciphers = on,
                        "SessionTicket" => applied.tickets = Some(on),
                        // The seam for kernel TLS: this kernel has no `tls`
                        // module, and nowait sends through rustls.
                        "KTLS" => b.notice(
                            "\"ssl_conf_command Options KTLS\": kernel TLS is not used, records are encrypted by rustls",
                            loc,
                        ),
                        // What rustls does anyway.
                        "NoRenegotiation" | "IgnoreUnexpectedEOF" | "ExtendedMasterSecret"
                        | "EncryptThenMac" | "MiddleboxCompat" => b.notice(
                            format!("\"ssl_conf_command Options {opt}\" has no effect in nowait (rustls never renegotiates, takes a close without close_notify as the end, and sets its own extensions)"),
                            loc,
                        ),
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
            // File values resolve against the configuration's directory
            // (nginx's ngx_conf_full_name for SSL_CONF_TYPE_FILE).
            "Certificate" => applied.certificate = Some(b.conf_full_path(value)),
            "PrivateKey" => applied.key = Some(b.conf_full_path(value)),
            _ => {
                b.error(
                    format!("SSL_CONF_cmd(\"{name}\", \"{value}\") failed: nowait cannot honour \"{known}\""),
                    loc,
                );
                return None;
            }
        }
    }
    Some(())
}

/// The `Certificate` and `PrivateKey` of the commands, when both are
/// given.
pub fn pair_files(applied: &Applied) -> Option<(&Path, &Path)> {
    Some((applied.certificate.as_deref()?, applied.key.as_deref()?))
}
