//! Typed values of nginx's ACME module (`ngx_http_acme_module`, the
//! nginx/nginx-acme module, not part of nginx 1.22): the `acme_issuer`
//! blocks, `acme_shared_zone`, and the certificate a server asks for with
//! `acme_certificate`. What the files hold (an account key named by
//! `account_key`, `ssl_trusted_certificate`, the certificates already kept
//! under `state_path`) is read while the configuration loads, as every
//! file the configuration reads (`config::build::DataFiles`).

use std::hash::{Hash, Hasher};
use std::path::PathBuf;

use super::source::Loc;

/// nginx-acme's default zone: `zone=ngx_acme_shared:256k`.
pub const DEFAULT_ZONE_NAME: &str = "ngx_acme_shared";
/// The default zone's size (`ACME_ZONE_SIZE`, 256k).
pub const DEFAULT_ZONE_SIZE: u64 = 1 << 18;
/// The smallest zone nginx-acme accepts, eight pages (`zone … is too
/// small` below).
pub const MIN_ZONE_SIZE: u64 = 8 * crate::config::inherit::PAGE_SIZE;
/// A state directory's default name, `acme_<name>` under the prefix.
pub const DEFAULT_STATE_PREFIX: &str = "acme_";
/// The account key's file in the state directory.
pub const ACCOUNT_KEY_FILE: &str = "account.key";
/// The account URL's file in the state directory.
pub const ACCOUNT_URL_FILE: &str = "account.url";

/// A key nginx-acme generates (`ecdsa:256` … `rsa:4096`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// ECDSA on P-256, P-384 or P-521 (the size in bits).
    Ecdsa(u32),
    /// RSA of 2048, 3072 or 4096 bits.
    Rsa(u32),
}

impl Default for KeyKind {
    /// nginx-acme's default: ECDSA P-256.
    fn default() -> Self {
        KeyKind::Ecdsa(256)
    }
}

impl KeyKind {
    /// `ecdsa[:256|384|521]` or `rsa[:2048|3072|4096]`; `Ok(None)` when
    /// the value names neither algorithm (a file, for `account_key`); the
    /// error in nginx-acme's words (`unsupported curve`, `unsupported key
    /// size`).
    pub fn parse(value: &str) -> Result<Option<KeyKind>, &'static str> {
        let (alg, size) = match value.split_once(':') {
            Some((a, s)) => (a, Some(s)),
            None => (value, None),
        };
        match alg {
            "ecdsa" => match size {
                None | Some("256") => Ok(Some(KeyKind::Ecdsa(256))),
                Some("384") => Ok(Some(KeyKind::Ecdsa(384))),
                Some("521") => Ok(Some(KeyKind::Ecdsa(521))),
                _ => Err("unsupported curve"),
            },
            "rsa" => match size {
                None | Some("2048") => Ok(Some(KeyKind::Rsa(2048))),
                Some("3072") => Ok(Some(KeyKind::Rsa(3072))),
                Some("4096") => Ok(Some(KeyKind::Rsa(4096))),
                _ => Err("unsupported key size"),
            },
            _ => Ok(None),
        }
    }
}

/// `account_key`: generated, or read from a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccountKey {
    /// Generated (and kept under `state_path`).
    Generate(KeyKind),
    /// The file's path and its PEM, read at load.
    File(PathBuf, Vec<u8>),
}

/// `profile name [require]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// The profile asked for.
    pub name: String,
    /// `require`: renewals fail when the server does not offer it.
    pub required: bool,
}

/// `external_account_key kid file|data:key`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalAccountKey {
    /// The key identifier.
    pub kid: String,
    /// The MAC key, base64url-decoded.
    pub key: Vec<u8>,
}

/// One `acme_issuer name { … }` block, its defaults applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcmeIssuer {
    /// The block's name.
    pub name: String,
    /// `uri`: the ACME directory's URL.
    pub uri: String,
    /// `account_key` (default: a generated ECDSA P-256 key).
    pub account_key: AccountKey,
    /// `contact`, each with `mailto:` added when it has no scheme.
    pub contacts: Vec<String>,
    /// `state_path` (default `acme_<name>` under the prefix); `None` for
    /// `off`.
    pub state_path: Option<PathBuf>,
    /// `accept_terms_of_service`.
    pub accept_tos: bool,
    /// `ssl_verify` (default on).
    pub ssl_verify: bool,
    /// `ssl_trusted_certificate`'s path and PEM; `None`: the system's
    /// CA bundle.
    pub trusted: Option<(PathBuf, Vec<u8>)>,
    /// `common_name_in_csr` (default off).
    pub common_name_in_csr: bool,
    /// `external_account_key`.
    pub eab: Option<ExternalAccountKey>,
    /// `preferred_chain`: the issuer's common name of the chain's top.
    pub preferred_chain: Option<String>,
    /// `profile`.
    pub profile: Option<Profile>,
    /// Where the block starts.
    pub loc: Loc,
}

/// An identifier a certificate names (RFC 8555 §7.1.4, RFC 8738).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Identifier {
    /// A DNS name, lowercase (`*.` allowed first).
    Dns(String),
    /// An IP address in its canonical text.
    Ip(String),
}

impl Identifier {
    /// The value alone.
    pub fn value(&self) -> &str {
        match self {
            Identifier::Dns(v) | Identifier::Ip(v) => v,
        }
    }

    /// RFC 8555's type name.
    pub fn kind(&self) -> &'static str {
        match self {
            Identifier::Dns(_) => "dns",
            Identifier::Ip(_) => "ip",
        }
    }
}

impl std::fmt::Display for Identifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Identifier::Dns(v) => write!(f, "DNS:{v}"),
            Identifier::Ip(v) => write!(f, "IP:{v}"),
        }
    }
}

/// What a server's `acme_certificate` asks for: the issuer, the
/// identifiers (its own or the server's names), the key to generate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcmeOrder {
    /// The issuer's name.
    pub issuer: String,
    /// The identifiers, in order.
    pub identifiers: Vec<Identifier>,
    /// `key=` (default ECDSA P-256).
    pub key: KeyKind,
    /// Where the directive was written.
    pub loc: Loc,
}

impl AcmeOrder {
    /// The first DNS name, else the first identifier.
    pub fn first_name(&self) -> Option<&str> {
        self.identifiers
            .iter()
            .find(|i| matches!(i, Identifier::Dns(_)))
            .or(self.identifiers.first())
            .map(Identifier::value)
    }

    /// nginx-acme's order id, `<first name>-<hash>`: the name of its files
    /// under `state_path` and of the order in messages. The hash is the
    /// one nginx-acme computes (SipHash-2-4 with zero keys over Rust's
    /// derived `Hash` of its identifiers and key), so that a state
    /// directory nginx-acme filled is read by nowait and the reverse.
    pub fn id(&self) -> String {
        // The shapes of nginx-acme's `Identifier<&str>` and `PrivateKey`:
        // the derived `Hash` writes the variant's index, then the fields.
        #[derive(Hash)]
        #[allow(dead_code)] // `Other` is there for the variant indexes
        enum NgxIdentifier<'a> {
            Dns(&'a str),
            Ip(&'a str),
            Other { kind: &'a str, value: &'a str },
        }
        #[derive(Hash)]
        enum NgxKey {
            Ecdsa(u32),
            Rsa(u32),
        }
        let ids: Vec<NgxIdentifier<'_>> = self
            .identifiers
            .iter()
            .map(|i| match i {
                Identifier::Dns(v) => NgxIdentifier::Dns(v),
                Identifier::Ip(v) => NgxIdentifier::Ip(v),
            })
            .collect();
        let key = match self.key {
            KeyKind::Ecdsa(b) => NgxKey::Ecdsa(b),
            KeyKind::Rsa(b) => NgxKey::Rsa(b),
        };
        #[allow(deprecated)] // std's SipHasher is SipHash-2-4, as siphasher's
        let mut h = std::hash::SipHasher::new();
        ids.hash(&mut h);
        key.hash(&mut h);
        format!("{}-{:x}", self.first_name().unwrap_or(""), h.finish())
    }
}

/// A certificate and key found under `state_path` at load (PEM).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredPair {
    /// The chain.
    pub cert: Vec<u8>,
    /// The key.
    pub key: Vec<u8>,
}

/// An order as the configuration resolved it: the issuer's index and what
/// the state directory held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcmeCertificate {
    /// The order.
    pub order: AcmeOrder,
    /// `order.id()`.
    pub id: String,
    /// The certificate and key kept under the issuer's `state_path`.
    pub stored: Option<StoredPair>,
}

/// The http block's ACME settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AcmeConf {
    /// `acme_issuer` blocks, in order.
    pub issuers: Vec<AcmeIssuer>,
    /// `acme_shared_zone zone=name:size` (accepted; nowait keeps
    /// certificates in the process's memory).
    pub zone: Option<(String, u64)>,
    /// Every distinct order of every server, with its issuer.
    pub certificates: Vec<AcmeCertificate>,
}

impl AcmeConf {
    /// The issuer named `name`.
    pub fn issuer(&self, name: &str) -> Option<&AcmeIssuer> {
        self.issuers.iter().find(|i| i.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(ids: &[Identifier], key: KeyKind) -> AcmeOrder {
        AcmeOrder {
            issuer: "x".into(),
            identifiers: ids.to_vec(),
            key,
            loc: Loc {
                origin: crate::config::source::Origin::CommandLine,
                line: 0,
            },
        }
    }

    #[test]
    fn key_kinds_are_read_as_nginx_acme_reads_them() {
        assert_eq!(KeyKind::parse("ecdsa"), Ok(Some(KeyKind::Ecdsa(256))));
        assert_eq!(KeyKind::parse("ecdsa:384"), Ok(Some(KeyKind::Ecdsa(384))));
        assert_eq!(KeyKind::parse("rsa"), Ok(Some(KeyKind::Rsa(2048))));
        assert_eq!(KeyKind::parse("rsa:4096"), Ok(Some(KeyKind::Rsa(4096))));
        assert_eq!(KeyKind::parse("ecdsa:1"), Err("unsupported curve"));
        assert_eq!(KeyKind::parse("rsa:1024"), Err("unsupported key size"));
        assert_eq!(KeyKind::parse("/etc/key.pem"), Ok(None));
    }

    #[test]
    fn the_order_id_names_the_first_dns_name_and_depends_on_everything() {
        let a = order(
            &[
                Identifier::Ip("127.0.0.1".into()),
                Identifier::Dns("example.test".into()),
            ],
            KeyKind::Ecdsa(256),
        );
        assert!(a.id().starts_with("example.test-"), "{}", a.id());
        let b = order(&a.identifiers, KeyKind::Rsa(2048));
        assert_ne!(a.id(), b.id());
        assert_eq!(a.id(), a.clone().id());
    }
}
