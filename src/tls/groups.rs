//! Key-exchange groups by OpenSSL's names: what nginx's `ssl_ecdh_curve`
//! accepts (OpenSSL 3.0's `SSL_CTX_set1_curves_list`), which of those
//! nowait can use, and the names `$ssl_curves` and `$ssl_curve` print.
//!
//! Groups are IANA NamedGroup codes (RFC 8446 4.2.7: `0x001d` X25519);
//! nothing here knows rustls' types.

use std::fmt;

use super::ciphers::ssl_error_line;

/// A group OpenSSL 3.0's default provider knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    /// Its IANA NamedGroup code.
    pub code: u16,
    /// The name nginx prints for it in `$ssl_curves` (`OBJ_nid2sn` of its
    /// NID): `prime256v1` for secp256r1.
    pub name: &'static str,
    /// The names `ssl_ecdh_curve` accepts for it, as written (OpenSSL
    /// compares them case-sensitively).
    pub aliases: &'static [&'static str],
}

/// A row of [`GROUPS`].
const fn g(code: u16, name: &'static str, aliases: &'static [&'static str]) -> Group {
    Group {
        code,
        name,
        aliases,
    }
}

/// Every group OpenSSL 3.0's default provider offers TLS, by code (the
/// provider's `TLS-GROUP` list: its TLS name and its curve's name; the
/// fixture groups.expected, from scripts/tls-names.py, says the same).
const GROUPS: &[Group] = &[
    g(0x0001, "sect163k1", &["sect163k1"]),
    g(0x0002, "sect163r1", &["sect163r1"]),
    g(0x0003, "sect163r2", &["sect163r2"]),
    g(0x0004, "sect193r1", &["sect193r1"]),
    g(0x0005, "sect193r2", &["sect193r2"]),
    g(0x0006, "sect233k1", &["sect233k1"]),
    g(0x0007, "sect233r1", &["sect233r1"]),
    g(0x0008, "sect239k1", &["sect239k1"]),
    g(0x0009, "sect283k1", &["sect283k1"]),
    g(0x000a, "sect283r1", &["sect283r1"]),
    g(0x000b, "sect409k1", &["sect409k1"]),
    g(0x000c, "sect409r1", &["sect409r1"]),
    g(0x000d, "sect571k1", &["sect571k1"]),
    g(0x000e, "sect571r1", &["sect571r1"]),
    g(0x000f, "secp160k1", &["secp160k1"]),
    g(0x0010, "secp160r1", &["secp160r1"]),
    g(0x0011, "secp160r2", &["secp160r2"]),
    g(0x0012, "secp192k1", &["secp192k1"]),
    g(0x0013, "prime192v1", &["secp192r1", "prime192v1", "P-192"]),
    g(0x0014, "secp224k1", &["secp224k1"]),
    g(0x0015, "secp224r1", &["secp224r1", "P-224"]),
    g(0x0016, "secp256k1", &["secp256k1"]),
    g(0x0017, "prime256v1", &["secp256r1", "prime256v1", "P-256"]),
    g(0x0018, "secp384r1", &["secp384r1", "P-384"]),
    g(0x0019, "secp521r1", &["secp521r1", "P-521"]),
    g(0x001a, "brainpoolP256r1", &["brainpoolP256r1"]),
    g(0x001b, "brainpoolP384r1", &["brainpoolP384r1"]),
    g(0x001c, "brainpoolP512r1", &["brainpoolP512r1"]),
    g(0x001d, "X25519", &["x25519", "X25519"]),
    g(0x001e, "X448", &["x448", "X448"]),
    g(0x0100, "ffdhe2048", &["ffdhe2048"]),
    g(0x0101, "ffdhe3072", &["ffdhe3072"]),
    g(0x0102, "ffdhe4096", &["ffdhe4096"]),
    g(0x0103, "ffdhe6144", &["ffdhe6144"]),
    g(0x0104, "ffdhe8192", &["ffdhe8192"]),
];

/// `ssl_ecdh_curve auto` (nginx's default): OpenSSL 3.0's default list
/// (`supported_groups_default` less the GOST groups no provider here
/// offers), in its order.
pub const AUTO: &[u16] = &[
    0x001d, 0x0017, 0x001e, 0x0019, 0x0018, 0x0100, 0x0101, 0x0102, 0x0103, 0x0104,
];

/// The value nginx reads as OpenSSL's default list (compared as written).
pub const AUTO_NAME: &str = "auto";

/// The longest group name OpenSSL reads (`GROUP_NAME_BUFFER_LENGTH` less
/// its terminator); a longer one fails the list with no error queued.
const MAX_NAME: usize = 63;

/// OpenSSL 3.0's text for `ERR_R_PASSED_INVALID_ARGUMENT` from the SSL
/// library, as `ERR_error_string_n` writes it.
const PASSED_INVALID_ARGUMENT: &str = "error:0A080106:SSL routines::passed invalid argument";

/// The groups of an `ssl_ecdh_curve` value nowait can use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usable {
    /// The supported codes the value names, in its order.
    pub codes: Vec<u16>,
    /// The codes it names that nowait does not support, in its order: for
    /// a notice (though `auto` names groups nobody asked for by name).
    pub dropped: Vec<u16>,
    /// The value was `auto`.
    pub auto: bool,
}

/// Why an `ssl_ecdh_curve` value cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupError {
    /// OpenSSL refuses the list: an unknown name (then `unknown` is it, as
    /// OpenSSL's error says it), or, with no error said, an empty element,
    /// a group named twice or a name too long.
    Refused {
        /// The value as written.
        spec: String,
        /// The first name OpenSSL does not know.
        unknown: Option<String>,
    },
    /// OpenSSL accepts the list, but it names no group nowait supports.
    NoneUsable {
        /// The value as written.
        spec: String,
        /// The groups it names.
        groups: Vec<u16>,
    },
}

impl fmt::Display for GroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupError::Refused { spec, unknown } => {
                let message = format!("SSL_CTX_set1_curves_list(\"{spec}\") failed");
                let data = unknown
                    .as_ref()
                    .map(|name| format!("group '{name}' cannot be set"));
                let queue: Vec<(&str, Option<&str>)> = data
                    .iter()
                    .map(|d| (PASSED_INVALID_ARGUMENT, Some(d.as_str())))
                    .collect();
                f.write_str(&ssl_error_line(&message, &queue))
            }
            GroupError::NoneUsable { spec, groups } => write!(
                f,
                "ssl_ecdh_curve \"{spec}\" names no group nowait can use: {}",
                format_offered(groups).replace(':', ", ")
            ),
        }
    }
}

impl std::error::Error for GroupError {}

/// The group OpenSSL knows with `code`.
pub fn group(code: u16) -> Option<&'static Group> {
    GROUPS
        .binary_search_by_key(&code, |g| g.code)
        .ok()
        .map(|i| &GROUPS[i])
}

/// The code of a name `ssl_ecdh_curve` accepts (`tls1_group_name2id`).
pub fn by_name(name: &str) -> Option<u16> {
    GROUPS
        .iter()
        .find(|g| g.aliases.contains(&name))
        .map(|g| g.code)
}

/// `isspace` in the C locale, as `CONF_parse_list` trims elements.
fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// The codes an `ssl_ecdh_curve` value names, in order: [`AUTO`] for
/// `auto`, else as OpenSSL 3.0's `SSL_CTX_set1_curves_list` reads it (names
/// separated by `:`, spaces around each ignored), or its refusal.
pub fn parse(spec: &str) -> Result<Vec<u16>, GroupError> {
    if spec == AUTO_NAME {
        return Ok(AUTO.to_vec());
    }
    let refused = |unknown: Option<&str>| GroupError::Refused {
        spec: spec.to_owned(),
        unknown: unknown.map(str::to_owned),
    };
    let mut codes = Vec::new();
    for element in spec.split(':') {
        let name = element.trim_matches(is_c_space);
        if name.is_empty() || name.len() > MAX_NAME {
            return Err(refused(None));
        }
        let Some(code) = by_name(name) else {
            return Err(refused(Some(name)));
        };
        if codes.contains(&code) {
            return Err(refused(None));
        }
        codes.push(code);
    }
    Ok(codes)
}

/// The groups among `supported` (codes) an `ssl_ecdh_curve` value names,
/// in its order, with those it names that are not supported; OpenSSL's
/// refusal where it refuses, [`GroupError::NoneUsable`] where it leaves no
/// supported group.
pub fn usable(spec: &str, supported: &[u16]) -> Result<Usable, GroupError> {
    let named = parse(spec)?;
    let (codes, dropped): (Vec<u16>, Vec<u16>) =
        named.iter().partition(|code| supported.contains(code));
    if codes.is_empty() {
        return Err(GroupError::NoneUsable {
            spec: spec.to_owned(),
            groups: named,
        });
    }
    Ok(Usable {
        codes,
        dropped,
        auto: spec == AUTO_NAME,
    })
}

/// The name nginx prints for group `code` (`$ssl_curve`, each of
/// `$ssl_curves`): OpenSSL's object name (`prime256v1`, `X25519`); `None`
/// for a code OpenSSL does not know (GREASE, X25519MLKEM768, GOST).
pub fn openssl_name(code: u16) -> Option<&'static str> {
    group(code).map(|g| g.name)
}

/// `$ssl_curve`: [`openssl_name`], or `0x` and four lower-case hex digits
/// as nginx's `ngx_ssl_get_curve` prints an unknown group.
pub fn curve_name(code: u16) -> String {
    openssl_name(code).map_or_else(|| format!("0x{code:04x}"), str::to_owned)
}

/// `$ssl_curves`: the groups a client offered, as nginx 1.22's
/// `ngx_ssl_get_curves` prints them, each as [`curve_name`] does, joined
/// by `:`. Empty for none.
pub fn format_offered(codes: &[u16]) -> String {
    codes
        .iter()
        .map(|&code| curve_name(code))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests;
