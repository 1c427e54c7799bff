//! OpenSSL's cipher strings and names, without OpenSSL: what nginx's
//! `ssl_ciphers` selects (OpenSSL 3.0's `SSL_CTX_set_cipher_list`, rules in
//! [`rules`], the cipher table in [`table`]), which of those nowait can use,
//! and the names nginx prints in `$ssl_cipher`, `$ssl_ciphers` and
//! `$ssl_protocol`.
//!
//! Ciphers are IANA codes (`0xC02F`) and OpenSSL's names
//! (`ECDHE-RSA-AES128-GCM-SHA256`); nothing here knows rustls' types. As in
//! OpenSSL, a cipher string governs TLS 1.2 and below only: TLS 1.3 suites
//! are chosen apart (OpenSSL's `Ciphersuites`), so [`evaluate`] never lists
//! them, while [`openssl_name`] names them.

mod rules;
mod table;

use std::fmt;

use table::{CIPHERS, OTHER_NAMES};

/// A key exchange, as OpenSSL's `Kx=` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kx {
    /// RSA key transport (`kRSA`).
    Rsa,
    /// Finite-field ephemeral Diffie-Hellman (`kDHE`, `kEDH`).
    Dhe,
    /// Elliptic-curve ephemeral Diffie-Hellman (`kECDHE`, `kEECDH`).
    Ecdhe,
    /// A pre-shared key alone (`kPSK`).
    Psk,
    /// A pre-shared key with RSA key transport (`kRSAPSK`).
    RsaPsk,
    /// A pre-shared key with ECDHE (`kECDHEPSK`).
    EcdhePsk,
    /// A pre-shared key with finite-field DHE (`kDHEPSK`).
    DhePsk,
    /// Secure Remote Password (`kSRP`).
    Srp,
}

/// A server authentication, as OpenSSL's `Au=` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// An RSA certificate (`aRSA`).
    Rsa,
    /// A DSA certificate (`aDSS`).
    Dss,
    /// None: anonymous (`aNULL`).
    Null,
    /// An ECDSA certificate (`aECDSA`).
    Ecdsa,
    /// The pre-shared key (`aPSK`).
    Psk,
    /// The SRP verifier (`aSRP`).
    Srp,
}

/// A bulk cipher, as OpenSSL's `Enc=` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enc {
    /// No encryption (`eNULL`).
    Null,
    /// AES-128 in CBC mode.
    Aes128,
    /// AES-256 in CBC mode.
    Aes256,
    /// Camellia-128 in CBC mode.
    Camellia128,
    /// Camellia-256 in CBC mode.
    Camellia256,
    /// AES-128-GCM.
    Aes128Gcm,
    /// AES-256-GCM.
    Aes256Gcm,
    /// AES-128-CCM.
    Aes128Ccm,
    /// AES-256-CCM.
    Aes256Ccm,
    /// AES-128-CCM with an 8-byte tag.
    Aes128Ccm8,
    /// AES-256-CCM with an 8-byte tag.
    Aes256Ccm8,
    /// ChaCha20-Poly1305.
    Chacha20Poly1305,
    /// ARIA-128-GCM.
    Aria128Gcm,
    /// ARIA-256-GCM.
    Aria256Gcm,
}

/// A record MAC, as OpenSSL's `Mac=` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mac {
    /// HMAC-MD5.
    Md5,
    /// HMAC-SHA1.
    Sha1,
    /// HMAC-SHA256.
    Sha256,
    /// HMAC-SHA384.
    Sha384,
    /// None apart: the cipher is an AEAD.
    Aead,
}

/// Protocol versions as the wire writes them (RFC 8446 B.1 and before).
pub mod version {
    /// SSL 3.0.
    pub const SSL3: u16 = 0x0300;
    /// TLS 1.0.
    pub const TLS1: u16 = 0x0301;
    /// TLS 1.1.
    pub const TLS1_1: u16 = 0x0302;
    /// TLS 1.2.
    pub const TLS1_2: u16 = 0x0303;
    /// TLS 1.3.
    pub const TLS1_3: u16 = 0x0304;
    /// DTLS 1.0 as OpenSSL's pre-standard builds spoke it.
    pub const DTLS1_BAD: u16 = 0x0100;
    /// DTLS 1.0.
    pub const DTLS1: u16 = 0xFEFF;
    /// DTLS 1.2.
    pub const DTLS1_2: u16 = 0xFEFD;
}

/// OpenSSL's strength classes of a cipher (its `algo_strength` bits, the
/// same values, for the rules that compare them as masks).
pub mod class {
    /// No encryption: of no class.
    pub const NONE: u8 = 0x01;
    /// `LOW`.
    pub const LOW: u8 = 0x02;
    /// `MEDIUM`.
    pub const MEDIUM: u8 = 0x04;
    /// `HIGH`.
    pub const HIGH: u8 = 0x08;
    /// `FIPS`: approved under FIPS 140-2.
    pub const FIPS: u8 = 0x10;
    /// Not in `DEFAULT` (`COMPLEMENTOFDEFAULT`).
    pub const NOT_DEFAULT: u8 = 0x20;
}

/// One cipher OpenSSL offers below TLS 1.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cipher {
    /// Its IANA code (the two bytes of the ClientHello).
    pub code: u16,
    /// OpenSSL's name: what cipher strings say and `$ssl_cipher` prints.
    pub name: &'static str,
    /// The IANA registry's name (`TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`).
    pub iana_name: &'static str,
    /// Its key exchange.
    pub kx: Kx,
    /// Its server authentication.
    pub auth: Auth,
    /// Its bulk cipher.
    pub enc: Enc,
    /// Its MAC.
    pub mac: Mac,
    /// The lowest protocol version it exists in ([`version`]): what the
    /// `SSLv3`, `TLSv1` and `TLSv1.2` aliases select on.
    pub min_version: u16,
    /// Its strength in bits, as `@STRENGTH` sorts and security levels
    /// compare.
    pub bits: u16,
    /// Its [`class`] bits.
    pub class: u8,
}

/// What a cipher string selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The ciphers, in preference order: what OpenSSL's list holds below
    /// TLS 1.3.
    pub ciphers: Vec<&'static Cipher>,
    /// The security level `@SECLEVEL=n` set, the last one written; `None`
    /// leaves the library's default (Debian's openssl.cnf says 2). OpenSSL
    /// applies it to the certificates too: nginx refuses a key weaker than
    /// the level (`SSL_CTX_use_certificate(...) failed (SSL: ... ee key too
    /// small)`).
    pub security_level: Option<u8>,
    /// The string began with `SUITEB128`, `SUITEB128ONLY`, `SUITEB128C2` or
    /// `SUITEB192`: OpenSSL then replaces it by Suite B's ciphers (RFC 6460)
    /// and also restricts curves and signature algorithms, which nowait
    /// does not.
    pub suite_b: bool,
}

/// The subset of a cipher string nowait can serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usable {
    /// The codes among the supported ones the string selects, in the
    /// string's order.
    pub codes: Vec<u16>,
    /// The ciphers it selects that nowait cannot use, in the string's
    /// order: for a notice.
    pub unusable: Vec<&'static Cipher>,
    /// Why nowait cannot use them ([`lacks`]), each reason once.
    pub reasons: Vec<&'static str>,
    /// [`Selection::security_level`].
    pub security_level: Option<u8>,
    /// [`Selection::suite_b`].
    pub suite_b: bool,
}

impl Usable {
    /// The unusable ciphers and why, for a notice: `A, B and 3 more
    /// (rustls has no finite-field DHE or CBC)`.
    pub fn describe_unusable(&self) -> String {
        describe(&self.unusable, &self.reasons)
    }
}

/// Why a cipher string cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CipherError {
    /// OpenSSL selects nothing (`SSL_R_NO_CIPHER_MATCH`).
    NoCipherMatch {
        /// The string as written.
        spec: String,
    },
    /// OpenSSL refuses the string's syntax (`SSL_R_INVALID_COMMAND`): a
    /// character outside names and separators, an unknown `@` command, a
    /// `@SECLEVEL` outside 0 to 5.
    InvalidCommand {
        /// The string as written.
        spec: String,
        /// How many errors OpenSSL queued (nginx prints each).
        count: usize,
    },
    /// OpenSSL accepts the string, but nowait can use none of what it
    /// selects.
    NoneUsable {
        /// The string as written.
        spec: String,
        /// What it selects.
        selected: Vec<&'static Cipher>,
        /// Why nowait cannot use them ([`lacks`]).
        reasons: Vec<&'static str>,
    },
}

impl fmt::Display for CipherError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CipherError::NoCipherMatch { spec } => f.write_str(&ssl_error_line(
                &format!("SSL_CTX_set_cipher_list(\"{spec}\") failed"),
                &[(NO_CIPHER_MATCH, None)],
            )),
            CipherError::InvalidCommand { spec, count } => f.write_str(&ssl_error_line(
                &format!("SSL_CTX_set_cipher_list(\"{spec}\") failed"),
                &vec![(INVALID_COMMAND, None); *count],
            )),
            CipherError::NoneUsable {
                spec,
                selected,
                reasons,
            } => write!(
                f,
                "ssl_ciphers \"{spec}\" selects no cipher nowait can use: {}",
                describe(selected, reasons)
            ),
        }
    }
}

impl std::error::Error for CipherError {}

/// OpenSSL 3.0's text for `SSL_R_NO_CIPHER_MATCH`, as
/// `ERR_error_string_n` writes it.
const NO_CIPHER_MATCH: &str = "error:0A0000B9:SSL routines::no cipher match";

/// OpenSSL 3.0's text for `SSL_R_INVALID_COMMAND`.
const INVALID_COMMAND: &str = "error:0A000118:SSL routines::invalid command";

/// How many cipher names a message lists before `and N more`.
const NAMES_SHOWN: usize = 8;

/// The size of nginx's buffer for an SSL error (`NGX_MAX_CONF_ERRSTR`):
/// longer lines are cut.
const NGX_MAX_CONF_ERRSTR: usize = 1024;

/// nginx's `ngx_ssl_error` line: `message`, then ` (SSL: E1 E2)` with each
/// entry of OpenSSL's error queue (its text, and `:data` when it carries
/// data), cut as nginx's 1024-byte buffer cuts it. The `[emerg]` prefix is
/// the logger's.
pub fn ssl_error_line(message: &str, queue: &[(&str, Option<&str>)]) -> String {
    let last = NGX_MAX_CONF_ERRSTR;
    // ngx_vslprintf(errstr, last - 1, ...)
    let mut out: Vec<u8> = message.bytes().take(last - 1).collect();
    // ngx_cpystrn(p, src, last - p): at most last - p - 1 bytes.
    let cpystrn = |out: &mut Vec<u8>, src: &str| {
        let room = (last - out.len()).saturating_sub(1);
        out.extend(src.bytes().take(room));
    };
    if !queue.is_empty() {
        cpystrn(&mut out, " (SSL:");
        for (text, data) in queue {
            if out.len() >= last - 1 {
                continue;
            }
            out.push(b' ');
            // ERR_error_string_n(n, p, last - p) writes what fits.
            cpystrn(&mut out, text);
            if let Some(data) = data.filter(|d| !d.is_empty())
                && out.len() < last
            {
                out.push(b':');
                cpystrn(&mut out, data);
            }
        }
        if out.len() < last {
            out.push(b')');
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What OpenSSL 3.0's `SSL_CTX_set_cipher_list(spec)` leaves below TLS 1.3,
/// or the error it gives.
pub fn evaluate(spec: &str) -> Result<Selection, CipherError> {
    let outcome = rules::evaluate(spec.as_bytes());
    if outcome.invalid > 0 {
        return Err(CipherError::InvalidCommand {
            spec: spec.to_owned(),
            count: outcome.invalid,
        });
    }
    if outcome.ciphers.is_empty() {
        return Err(CipherError::NoCipherMatch {
            spec: spec.to_owned(),
        });
    }
    Ok(Selection {
        ciphers: outcome.ciphers,
        security_level: outcome.security_level,
        suite_b: outcome.suite_b,
    })
}

/// The ciphers among `supported` (IANA codes) that `spec` selects, in its
/// order, with those it selects that nowait cannot use; an error where
/// OpenSSL gives one, and [`CipherError::NoneUsable`] where OpenSSL accepts
/// the string but none of it is supported. A `@SECLEVEL=n` drops the
/// ciphers weaker than its level ([`security_level_allows`]).
pub fn usable(spec: &str, supported: &[u16]) -> Result<Usable, CipherError> {
    let selection = evaluate(spec)?;
    let mut codes = Vec::new();
    let mut unusable = Vec::new();
    let mut reasons: Vec<&'static str> = Vec::new();
    for &cipher in &selection.ciphers {
        let allowed = selection
            .security_level
            .is_none_or(|level| security_level_allows(level, cipher.code));
        if allowed && supported.contains(&cipher.code) {
            codes.push(cipher.code);
            continue;
        }
        unusable.push(cipher);
        let why = if allowed {
            lacks(cipher)
        } else {
            vec![WEAKER_THAN_LEVEL]
        };
        for reason in why {
            if !reasons.contains(&reason) {
                reasons.push(reason);
            }
        }
    }
    // One order whatever the string's: the message reads the same for the
    // same ciphers.
    reasons.sort_by_key(|r| REASONS.iter().position(|x| x == r));
    if codes.is_empty() {
        return Err(CipherError::NoneUsable {
            spec: spec.to_owned(),
            selected: selection.ciphers,
            reasons,
        });
    }
    Ok(Usable {
        codes,
        unusable,
        reasons,
        security_level: selection.security_level,
        suite_b: selection.suite_b,
    })
}

/// A reason of [`lacks`]: the key exchange.
const NO_RSA_KX: &str = "RSA key exchange";
/// A reason of [`lacks`].
const NO_DHE: &str = "finite-field DHE";
/// A reason of [`lacks`].
const NO_PSK: &str = "PSK";
/// A reason of [`lacks`].
const NO_SRP: &str = "SRP";
/// A reason of [`lacks`].
const NO_DSA: &str = "DSA certificates";
/// A reason of [`lacks`].
const NO_ANON: &str = "anonymous ciphers";
/// A reason of [`lacks`].
const NO_NULL: &str = "NULL encryption";
/// A reason of [`lacks`].
const NO_CBC: &str = "CBC";
/// A reason of [`lacks`].
const NO_CCM: &str = "CCM";
/// A reason of [`lacks`].
const NO_CAMELLIA: &str = "Camellia";
/// A reason of [`lacks`].
const NO_ARIA: &str = "ARIA";
/// A cipher rustls has but the supported list leaves out: not a lack of
/// rustls' (see [`RUSTLS_LACKS`]).
const NOT_OFFERED: &str = "not in nowait's crypto provider";
/// A cipher below the string's `@SECLEVEL`: not a lack of rustls'.
const WEAKER_THAN_LEVEL: &str = "weaker than the string's @SECLEVEL";

/// The reasons that say what rustls lacks (`rustls has no ...`); the
/// others say something of the cipher.
const RUSTLS_LACKS: &[&str] = &[
    NO_DHE,
    NO_CBC,
    NO_RSA_KX,
    NO_PSK,
    NO_SRP,
    NO_DSA,
    NO_ANON,
    NO_NULL,
    NO_CCM,
    NO_CAMELLIA,
    NO_ARIA,
];

/// Every reason, in the order messages give them.
const REASONS: &[&str] = &[
    NO_DHE,
    NO_CBC,
    NO_RSA_KX,
    NO_PSK,
    NO_SRP,
    NO_DSA,
    NO_ANON,
    NO_NULL,
    NO_CCM,
    NO_CAMELLIA,
    NO_ARIA,
    NOT_OFFERED,
    WEAKER_THAN_LEVEL,
];

/// What rustls lacks to use `cipher`: its TLS 1.2 suites are ECDHE with an
/// RSA or ECDSA certificate and AES-GCM or ChaCha20-Poly1305, nothing
/// else. For a cipher of that kind, that it is missing from the supported
/// list (a crypto provider without it).
pub fn lacks(cipher: &Cipher) -> Vec<&'static str> {
    let kx = match cipher.kx {
        Kx::Ecdhe => None,
        Kx::Rsa => Some(NO_RSA_KX),
        Kx::Dhe => Some(NO_DHE),
        Kx::Psk | Kx::RsaPsk | Kx::EcdhePsk | Kx::DhePsk => Some(NO_PSK),
        Kx::Srp => Some(NO_SRP),
    };
    let auth = match cipher.auth {
        Auth::Rsa | Auth::Ecdsa | Auth::Psk | Auth::Srp => None,
        Auth::Dss => Some(NO_DSA),
        Auth::Null => Some(NO_ANON),
    };
    let enc = match cipher.enc {
        Enc::Aes128Gcm | Enc::Aes256Gcm | Enc::Chacha20Poly1305 => None,
        Enc::Null => Some(NO_NULL),
        Enc::Aes128 | Enc::Aes256 => Some(NO_CBC),
        Enc::Camellia128 | Enc::Camellia256 => Some(NO_CAMELLIA),
        Enc::Aes128Ccm | Enc::Aes256Ccm | Enc::Aes128Ccm8 | Enc::Aes256Ccm8 => Some(NO_CCM),
        Enc::Aria128Gcm | Enc::Aria256Gcm => Some(NO_ARIA),
    };
    let reasons: Vec<&'static str> = [kx, auth, enc].into_iter().flatten().collect();
    if reasons.is_empty() {
        vec![NOT_OFFERED]
    } else {
        reasons
    }
}

/// `names (rustls has no A, B or C; D)`, the names cut after
/// [`NAMES_SHOWN`].
fn describe(ciphers: &[&Cipher], reasons: &[&str]) -> String {
    let mut out = ciphers
        .iter()
        .take(NAMES_SHOWN)
        .map(|c| c.name)
        .collect::<Vec<_>>()
        .join(", ");
    if ciphers.len() > NAMES_SHOWN {
        out.push_str(&format!(" and {} more", ciphers.len() - NAMES_SHOWN));
    }
    let (lacks, others): (Vec<&str>, Vec<&str>) = reasons
        .iter()
        .copied()
        .partition(|r| RUSTLS_LACKS.contains(r));
    let mut parts = Vec::new();
    if !lacks.is_empty() {
        parts.push(format!("rustls has no {}", join_or(&lacks)));
    }
    parts.extend(others.into_iter().map(str::to_owned));
    if !parts.is_empty() {
        out.push_str(&format!(" ({})", parts.join("; ")));
    }
    out
}

/// `a`, `a or b`, `a, b or c`.
fn join_or(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// TLS 1.3 suites: (code, strength bits), as OpenSSL 3.0's table says.
const TLS13_BITS: &[(u16, u16)] = &[(0x1301, 128), (0x1302, 256), (0x1303, 256), (0x1304, 128)];

/// The least strength OpenSSL allows a cipher at security levels 0 to 5
/// (`ssl_get_security_level_bits`).
const LEVEL_BITS: [u16; 6] = [0, 80, 112, 128, 192, 256];

/// The cipher OpenSSL offers below TLS 1.3 with `code`.
pub fn cipher(code: u16) -> Option<&'static Cipher> {
    CIPHERS
        .binary_search_by_key(&code, |c| c.code)
        .ok()
        .map(|i| &CIPHERS[i])
}

/// Whether OpenSSL's security level `level` (0 to 5) lets a cipher be
/// negotiated, as far as its strength goes: the level's least bits. The
/// levels' other rules (no anonymous, no MD5, no RSA key exchange from 3 on)
/// refuse only ciphers rustls lacks anyway. `false` for a code OpenSSL does
/// not know the strength of.
pub fn security_level_allows(level: u8, code: u16) -> bool {
    let bits = cipher(code).map(|c| c.bits).or_else(|| {
        TLS13_BITS
            .iter()
            .find(|(c, _)| *c == code)
            .map(|(_, bits)| *bits)
    });
    let least = LEVEL_BITS[usize::from(level).min(LEVEL_BITS.len() - 1)];
    bits.is_some_and(|bits| bits >= least)
}

/// OpenSSL's name of cipher `code`, as `$ssl_cipher` and `$ssl_ciphers`
/// print it: `ECDHE-RSA-AES128-GCM-SHA256`, a TLS 1.3 suite by its IANA
/// name (`TLS_AES_128_GCM_SHA256`), the signalling values too
/// (`TLS_EMPTY_RENEGOTIATION_INFO_SCSV`). `None` where OpenSSL's
/// `SSL_CIPHER_find` finds nothing (GREASE values among them).
pub fn openssl_name(code: u16) -> Option<&'static str> {
    cipher(code).map(|c| c.name).or_else(|| {
        OTHER_NAMES
            .binary_search_by_key(&code, |(c, _)| *c)
            .ok()
            .map(|i| OTHER_NAMES[i].1)
    })
}

/// `$ssl_ciphers`: the ciphers a client offered, as nginx 1.22's
/// `ngx_ssl_get_ciphers` prints them: OpenSSL's names joined by `:`, a code
/// OpenSSL does not know (GREASE's `0x0a0a` among them) as `0x` and its two
/// bytes in lower-case hex. Empty for no ciphers.
pub fn format_offered(codes: &[u16]) -> String {
    let mut out = String::new();
    for (i, &code) in codes.iter().enumerate() {
        if i > 0 {
            out.push(':');
        }
        match openssl_name(code) {
            Some(name) => out.push_str(name),
            None => out.push_str(&format!("0x{code:04x}")),
        }
    }
    out
}

/// `$ssl_protocol`: OpenSSL's name of a protocol version
/// (`SSL_get_version`): `TLSv1.2`, `TLSv1.3`, TLS 1.0 as `TLSv1`;
/// `unknown` for any other value.
pub fn protocol_name(version: u16) -> &'static str {
    match version {
        version::TLS1_3 => "TLSv1.3",
        version::TLS1_2 => "TLSv1.2",
        version::TLS1_1 => "TLSv1.1",
        version::TLS1 => "TLSv1",
        version::SSL3 => "SSLv3",
        version::DTLS1_BAD => "DTLSv0.9",
        version::DTLS1 => "DTLSv1",
        version::DTLS1_2 => "DTLSv1.2",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests;
