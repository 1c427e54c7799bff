//! OpenSSL 3.0's cipher-string engine (ssl/ssl_ciph.c:
//! `ssl_create_cipher_list`, `ssl_cipher_process_rulestr`,
//! `ssl_cipher_apply_rule`), step for step, so that a string selects here
//! what it selects there, quirks included.
//!
//! OpenSSL keeps every cipher in one ordered list, each active or not. The
//! list starts in OpenSSL's default preference ([`default_order`]), all
//! inactive; each word of the string then applies one rule to the ciphers
//! its aliases match: plain adds inactive ones at the end, `-` deactivates
//! and moves them to the front (so a later add brings them back first),
//! `!` removes them for good, `+` moves active ones to the end; `@STRENGTH`
//! sorts active ones by strength, `@SECLEVEL=n` sets the security level.
//! The result is the active ciphers in list order.

use super::table::CIPHERS;
use super::{Auth, Cipher, Enc, Kx, Mac, class, version};

/// OpenSSL's `algorithm_mkey` bits (ssl_local.h).
mod mkey {
    pub const RSA: u32 = 0x0001;
    pub const DHE: u32 = 0x0002;
    pub const ECDHE: u32 = 0x0004;
    pub const PSK: u32 = 0x0008;
    pub const GOST: u32 = 0x0010;
    pub const SRP: u32 = 0x0020;
    pub const RSAPSK: u32 = 0x0040;
    pub const ECDHEPSK: u32 = 0x0080;
    pub const DHEPSK: u32 = 0x0100;
    pub const GOST18: u32 = 0x0200;
    /// Every key exchange with a pre-shared key (`SSL_PSK`).
    pub const ANY_PSK: u32 = PSK | RSAPSK | ECDHEPSK | DHEPSK;
}

/// OpenSSL's `algorithm_auth` bits.
mod auth {
    pub const RSA: u32 = 0x0001;
    pub const DSS: u32 = 0x0002;
    pub const NULL: u32 = 0x0004;
    pub const ECDSA: u32 = 0x0008;
    pub const PSK: u32 = 0x0010;
    pub const GOST01: u32 = 0x0020;
    pub const SRP: u32 = 0x0040;
    pub const GOST12: u32 = 0x0080;
}

/// OpenSSL's `algorithm_enc` bits. Those of algorithms this OpenSSL offers
/// no cipher with (DES, RC4, SEED, GOST, ...) are kept for the aliases
/// that name them: they match nothing, as there.
mod enc {
    pub const DES: u32 = 0x0000_0001;
    pub const TDES: u32 = 0x0000_0002;
    pub const RC4: u32 = 0x0000_0004;
    pub const RC2: u32 = 0x0000_0008;
    pub const IDEA: u32 = 0x0000_0010;
    pub const NULL: u32 = 0x0000_0020;
    pub const AES128: u32 = 0x0000_0040;
    pub const AES256: u32 = 0x0000_0080;
    pub const CAMELLIA128: u32 = 0x0000_0100;
    pub const CAMELLIA256: u32 = 0x0000_0200;
    pub const GOST89: u32 = 0x0000_0400;
    pub const SEED: u32 = 0x0000_0800;
    pub const AES128GCM: u32 = 0x0000_1000;
    pub const AES256GCM: u32 = 0x0000_2000;
    pub const AES128CCM: u32 = 0x0000_4000;
    pub const AES256CCM: u32 = 0x0000_8000;
    pub const AES128CCM8: u32 = 0x0001_0000;
    pub const AES256CCM8: u32 = 0x0002_0000;
    pub const GOST8912: u32 = 0x0004_0000;
    pub const CHACHA20POLY1305: u32 = 0x0008_0000;
    pub const ARIA128GCM: u32 = 0x0010_0000;
    pub const ARIA256GCM: u32 = 0x0020_0000;
    pub const MAGMA: u32 = 0x0040_0000;
    pub const KUZNYECHIK: u32 = 0x0080_0000;
    pub const AESGCM: u32 = AES128GCM | AES256GCM;
    pub const AESCCM: u32 = AES128CCM | AES256CCM | AES128CCM8 | AES256CCM8;
    pub const AES: u32 = AES128 | AES256 | AESGCM | AESCCM;
    pub const CAMELLIA: u32 = CAMELLIA128 | CAMELLIA256;
    pub const ARIAGCM: u32 = ARIA128GCM | ARIA256GCM;
    pub const CBC: u32 = DES | TDES | RC2 | IDEA | AES128 | AES256 | CAMELLIA | SEED;
}

/// OpenSSL's `algorithm_mac` bits.
mod mac {
    pub const MD5: u32 = 0x0001;
    pub const SHA1: u32 = 0x0002;
    pub const GOST94: u32 = 0x0004;
    pub const GOST89MAC: u32 = 0x0008;
    pub const SHA256: u32 = 0x0010;
    pub const SHA384: u32 = 0x0020;
    pub const AEAD: u32 = 0x0040;
    pub const GOST12_256: u32 = 0x0080;
    pub const GOST89MAC12: u32 = 0x0100;
}

/// The [`class`] bits compared as one mask (`SSL_STRONG_MASK`).
const STRONG_MASK: u8 = 0x1F;
/// The [`class`] bit compared apart (`SSL_DEFAULT_MASK`).
const DEFAULT_MASK: u8 = class::NOT_DEFAULT;

/// A key exchange's [`mkey`] bit.
fn kx_bit(kx: Kx) -> u32 {
    match kx {
        Kx::Rsa => mkey::RSA,
        Kx::Dhe => mkey::DHE,
        Kx::Ecdhe => mkey::ECDHE,
        Kx::Psk => mkey::PSK,
        Kx::RsaPsk => mkey::RSAPSK,
        Kx::EcdhePsk => mkey::ECDHEPSK,
        Kx::DhePsk => mkey::DHEPSK,
        Kx::Srp => mkey::SRP,
    }
}

/// An authentication's [`auth`] bit.
fn auth_bit(a: Auth) -> u32 {
    match a {
        Auth::Rsa => auth::RSA,
        Auth::Dss => auth::DSS,
        Auth::Null => auth::NULL,
        Auth::Ecdsa => auth::ECDSA,
        Auth::Psk => auth::PSK,
        Auth::Srp => auth::SRP,
    }
}

/// A bulk cipher's [`enc`] bit.
fn enc_bit(e: Enc) -> u32 {
    match e {
        Enc::Null => enc::NULL,
        Enc::Aes128 => enc::AES128,
        Enc::Aes256 => enc::AES256,
        Enc::Camellia128 => enc::CAMELLIA128,
        Enc::Camellia256 => enc::CAMELLIA256,
        Enc::Aes128Gcm => enc::AES128GCM,
        Enc::Aes256Gcm => enc::AES256GCM,
        Enc::Aes128Ccm => enc::AES128CCM,
        Enc::Aes256Ccm => enc::AES256CCM,
        Enc::Aes128Ccm8 => enc::AES128CCM8,
        Enc::Aes256Ccm8 => enc::AES256CCM8,
        Enc::Chacha20Poly1305 => enc::CHACHA20POLY1305,
        Enc::Aria128Gcm => enc::ARIA128GCM,
        Enc::Aria256Gcm => enc::ARIA256GCM,
    }
}

/// A MAC's [`mac`] bit.
fn mac_bit(m: Mac) -> u32 {
    match m {
        Mac::Md5 => mac::MD5,
        Mac::Sha1 => mac::SHA1,
        Mac::Sha256 => mac::SHA256,
        Mac::Sha384 => mac::SHA384,
        Mac::Aead => mac::AEAD,
    }
}

/// What a rule selects, field by field (`0`: any). A cipher matches when
/// each nonzero mask shares a bit with it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Pattern {
    /// One cipher only, when the last part of the word named it.
    code: Option<u16>,
    /// Key exchanges ([`mkey`] bits).
    mkey: u32,
    /// Authentications ([`auth`] bits).
    auth: u32,
    /// Bulk ciphers ([`enc`] bits).
    enc: u32,
    /// MACs ([`mac`] bits).
    mac: u32,
    /// A cipher's [`Cipher::min_version`] exactly (`0`: any).
    min_version: u16,
    /// [`class`] bits: the strong ones and the default one are compared
    /// apart.
    class: u8,
}

impl Pattern {
    /// Whether `c` is one of the ciphers the pattern selects.
    fn matches(&self, c: &Cipher) -> bool {
        self.code.is_none_or(|code| code == c.code)
            && (self.mkey == 0 || self.mkey & kx_bit(c.kx) != 0)
            && (self.auth == 0 || self.auth & auth_bit(c.auth) != 0)
            && (self.enc == 0 || self.enc & enc_bit(c.enc) != 0)
            && (self.mac == 0 || self.mac & mac_bit(c.mac) != 0)
            && (self.min_version == 0 || self.min_version == c.min_version)
            && (self.class & STRONG_MASK == 0 || self.class & STRONG_MASK & c.class != 0)
            && (self.class & DEFAULT_MASK == 0 || self.class & DEFAULT_MASK & c.class != 0)
    }

    /// A cipher's own fields as a pattern (a cipher name in a string).
    fn of(c: &Cipher) -> Pattern {
        Pattern {
            code: Some(c.code),
            mkey: kx_bit(c.kx),
            auth: auth_bit(c.auth),
            enc: enc_bit(c.enc),
            mac: mac_bit(c.mac),
            min_version: 0,
            class: c.class,
        }
    }

    /// `self` narrowed by the next `+`-joined part (`ssl_cipher_process_rulestr`):
    /// each field that both give is intersected, and an empty intersection
    /// makes the whole word match nothing (`None`). A cipher name's version
    /// is not part of the pattern; an alias' must equal any before it.
    fn narrow(mut self, part: &Pattern) -> Option<Pattern> {
        fn field(mine: &mut u32, theirs: u32) -> Option<()> {
            if theirs != 0 {
                *mine = if *mine != 0 { *mine & theirs } else { theirs };
                if *mine == 0 {
                    return None;
                }
            }
            Some(())
        }
        field(&mut self.mkey, part.mkey)?;
        field(&mut self.auth, part.auth)?;
        field(&mut self.enc, part.enc)?;
        field(&mut self.mac, part.mac)?;
        let strong = part.class & STRONG_MASK;
        if strong != 0 {
            if self.class & STRONG_MASK != 0 {
                self.class &= strong | !STRONG_MASK;
                if self.class & STRONG_MASK == 0 {
                    return None;
                }
            } else {
                // OpenSSL assigns here, dropping a NOT_DEFAULT bit an
                // earlier part set: COMPLEMENTOFDEFAULT+HIGH is all of HIGH.
                self.class = strong;
            }
        }
        let default = part.class & DEFAULT_MASK;
        if default != 0 {
            if self.class & DEFAULT_MASK != 0 {
                self.class &= default | !DEFAULT_MASK;
                if self.class & DEFAULT_MASK == 0 {
                    return None;
                }
            } else {
                self.class |= default;
            }
        }
        // Each part starts with no cipher of its own: only a cipher name
        // that comes last keeps its code.
        self.code = part.code;
        if part.code.is_none() && part.min_version != 0 {
            if self.min_version != 0 && self.min_version != part.min_version {
                return None;
            }
            self.min_version = part.min_version;
        }
        Some(self)
    }
}

/// An alias of OpenSSL 3.0's `cipher_aliases[]`.
struct Alias {
    /// The word, compared case-sensitively.
    name: &'static str,
    /// What it selects.
    pattern: Pattern,
}

/// An alias of algorithm masks.
const fn alias(name: &'static str, mkey: u32, auth: u32, enc: u32, mac: u32) -> Alias {
    Alias {
        name,
        pattern: Pattern {
            code: None,
            mkey,
            auth,
            enc,
            mac,
            min_version: 0,
            class: 0,
        },
    }
}

/// An alias of one lowest protocol version.
const fn by_version(name: &'static str, min_version: u16) -> Alias {
    let mut a = alias(name, 0, 0, 0, 0);
    a.pattern.min_version = min_version;
    a
}

/// An alias of strength classes (and bulk ciphers, for FIPS).
const fn by_class(name: &'static str, enc: u32, class: u8) -> Alias {
    let mut a = alias(name, 0, 0, enc, 0);
    a.pattern.class = class;
    a
}

/// OpenSSL 3.0's aliases, in its order (a cipher's own name is looked up
/// first). Those of algorithms this OpenSSL lacks stay: they select
/// nothing, as OpenSSL's do when it leaves them out.
const ALIASES: &[Alias] = &[
    // "ALL" leaves out eNULL, which must be asked for.
    alias("ALL", 0, 0, !enc::NULL, 0),
    alias("COMPLEMENTOFALL", 0, 0, enc::NULL, 0),
    // Does not include ciphers outside ALL.
    by_class("COMPLEMENTOFDEFAULT", 0, class::NOT_DEFAULT),
    alias("kRSA", mkey::RSA, 0, 0, 0),
    alias("kEDH", mkey::DHE, 0, 0, 0),
    alias("kDHE", mkey::DHE, 0, 0, 0),
    alias("DH", mkey::DHE, 0, 0, 0),
    alias("kEECDH", mkey::ECDHE, 0, 0, 0),
    alias("kECDHE", mkey::ECDHE, 0, 0, 0),
    alias("ECDH", mkey::ECDHE, 0, 0, 0),
    alias("kPSK", mkey::PSK, 0, 0, 0),
    alias("kRSAPSK", mkey::RSAPSK, 0, 0, 0),
    alias("kECDHEPSK", mkey::ECDHEPSK, 0, 0, 0),
    alias("kDHEPSK", mkey::DHEPSK, 0, 0, 0),
    alias("kSRP", mkey::SRP, 0, 0, 0),
    alias("kGOST", mkey::GOST, 0, 0, 0),
    alias("kGOST18", mkey::GOST18, 0, 0, 0),
    alias("aRSA", 0, auth::RSA, 0, 0),
    alias("aDSS", 0, auth::DSS, 0, 0),
    alias("DSS", 0, auth::DSS, 0, 0),
    alias("aNULL", 0, auth::NULL, 0, 0),
    alias("aECDSA", 0, auth::ECDSA, 0, 0),
    alias("ECDSA", 0, auth::ECDSA, 0, 0),
    alias("aPSK", 0, auth::PSK, 0, 0),
    alias("aGOST01", 0, auth::GOST01, 0, 0),
    alias("aGOST12", 0, auth::GOST12, 0, 0),
    alias("aGOST", 0, auth::GOST01 | auth::GOST12, 0, 0),
    alias("aSRP", 0, auth::SRP, 0, 0),
    alias("EDH", mkey::DHE, !auth::NULL, 0, 0),
    alias("DHE", mkey::DHE, !auth::NULL, 0, 0),
    alias("EECDH", mkey::ECDHE, !auth::NULL, 0, 0),
    alias("ECDHE", mkey::ECDHE, !auth::NULL, 0, 0),
    alias("NULL", 0, 0, enc::NULL, 0),
    alias("RSA", mkey::RSA, auth::RSA, 0, 0),
    alias("ADH", mkey::DHE, auth::NULL, 0, 0),
    alias("AECDH", mkey::ECDHE, auth::NULL, 0, 0),
    alias("PSK", mkey::ANY_PSK, 0, 0, 0),
    alias("SRP", mkey::SRP, 0, 0, 0),
    alias("3DES", 0, 0, enc::TDES, 0),
    alias("RC4", 0, 0, enc::RC4, 0),
    alias("RC2", 0, 0, enc::RC2, 0),
    alias("IDEA", 0, 0, enc::IDEA, 0),
    alias("SEED", 0, 0, enc::SEED, 0),
    alias("eNULL", 0, 0, enc::NULL, 0),
    alias(
        "GOST",
        0,
        0,
        enc::GOST89 | enc::GOST8912 | enc::MAGMA | enc::KUZNYECHIK,
        0,
    ),
    alias(
        "AES128",
        0,
        0,
        enc::AES128 | enc::AES128GCM | enc::AES128CCM | enc::AES128CCM8,
        0,
    ),
    alias(
        "AES256",
        0,
        0,
        enc::AES256 | enc::AES256GCM | enc::AES256CCM | enc::AES256CCM8,
        0,
    ),
    alias("AES", 0, 0, enc::AES, 0),
    alias("AESGCM", 0, 0, enc::AESGCM, 0),
    alias("AESCCM", 0, 0, enc::AESCCM, 0),
    alias("AESCCM8", 0, 0, enc::AES128CCM8 | enc::AES256CCM8, 0),
    alias("CAMELLIA128", 0, 0, enc::CAMELLIA128, 0),
    alias("CAMELLIA256", 0, 0, enc::CAMELLIA256, 0),
    alias("CAMELLIA", 0, 0, enc::CAMELLIA, 0),
    alias("CHACHA20", 0, 0, enc::CHACHA20POLY1305, 0),
    alias("GOST2012-GOST8912-GOST8912", 0, 0, enc::GOST8912, 0),
    alias("ARIA", 0, 0, enc::ARIAGCM, 0),
    alias("ARIAGCM", 0, 0, enc::ARIAGCM, 0),
    alias("ARIA128", 0, 0, enc::ARIA128GCM, 0),
    alias("ARIA256", 0, 0, enc::ARIA256GCM, 0),
    alias("CBC", 0, 0, enc::CBC, 0),
    alias("MD5", 0, 0, 0, mac::MD5),
    alias("SHA1", 0, 0, 0, mac::SHA1),
    alias("SHA", 0, 0, 0, mac::SHA1),
    alias("GOST94", 0, 0, 0, mac::GOST94),
    alias("GOST89MAC", 0, 0, 0, mac::GOST89MAC | mac::GOST89MAC12),
    alias("SHA256", 0, 0, 0, mac::SHA256),
    alias("SHA384", 0, 0, 0, mac::SHA384),
    alias("GOST12", 0, 0, 0, mac::GOST12_256),
    by_version("SSLv3", version::SSL3),
    by_version("TLSv1", version::TLS1),
    by_version("TLSv1.0", version::TLS1),
    by_version("TLSv1.2", version::TLS1_2),
    by_class("LOW", 0, class::LOW),
    by_class("MEDIUM", 0, class::MEDIUM),
    by_class("HIGH", 0, class::HIGH),
    // FIPS 140-2 approved ciphers.
    by_class("FIPS", !enc::NULL, class::FIPS),
    // The old names of two 3DES ciphers this OpenSSL does not have.
    Alias {
        name: "EDH-DSS-DES-CBC3-SHA",
        pattern: Pattern {
            code: None,
            mkey: mkey::DHE,
            auth: auth::DSS,
            enc: enc::TDES,
            mac: mac::SHA1,
            min_version: 0,
            class: class::HIGH | class::FIPS,
        },
    },
    Alias {
        name: "EDH-RSA-DES-CBC3-SHA",
        pattern: Pattern {
            code: None,
            mkey: mkey::DHE,
            auth: auth::RSA,
            enc: enc::TDES,
            mac: mac::SHA1,
            min_version: 0,
            class: class::HIGH | class::FIPS,
        },
    },
];

/// The string OpenSSL 3.0 expands a leading `DEFAULT` to
/// (`OSSL_default_cipher_list`).
const DEFAULT_RULES: &[u8] = b"ALL:!COMPLEMENTOFDEFAULT:!eNULL";

/// Suite B's prefixes (RFC 6460) and the strings OpenSSL puts in the whole
/// string's place (`check_suiteb_cipher_list`), longest prefix first.
const SUITE_B: &[(&[u8], &[u8])] = &[
    (b"SUITEB128ONLY", b"ECDHE-ECDSA-AES128-GCM-SHA256"),
    (b"SUITEB128C2", b"ECDHE-ECDSA-AES256-GCM-SHA384"),
    (
        b"SUITEB128",
        b"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384",
    ),
    (b"SUITEB192", b"ECDHE-ECDSA-AES256-GCM-SHA384"),
];

/// The highest `@SECLEVEL`.
const MAX_SECURITY_LEVEL: u8 = 5;

/// What [`evaluate`] found.
pub(super) struct Outcome {
    /// The active ciphers, in order.
    pub ciphers: Vec<&'static Cipher>,
    /// How many `SSL_R_INVALID_COMMAND` errors OpenSSL queued (0: none,
    /// the string is accepted unless `ciphers` is empty).
    pub invalid: usize,
    /// The last `@SECLEVEL=n`.
    pub security_level: Option<u8>,
    /// Whether a Suite B prefix replaced the string.
    pub suite_b: bool,
}

/// One cipher of OpenSSL's ordered list.
#[derive(Clone, Copy)]
struct Slot {
    /// The cipher.
    cipher: &'static Cipher,
    /// Whether the list selects it now.
    active: bool,
}

/// What a rule does to the ciphers it matches (`CIPHER_ADD` ...).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    /// Activate inactive ones, moving them to the end.
    Add,
    /// Move active ones to the end.
    Order,
    /// Deactivate active ones, moving them to the front.
    Delete,
    /// Remove from the list for good.
    Kill,
    /// Move active ones to the front (OpenSSL's default order only).
    Bump,
}

/// What a rule selects: a pattern, or one strength (`@STRENGTH`'s steps).
#[derive(Clone, Copy)]
enum Select {
    /// The ciphers a pattern matches.
    Pattern(Pattern),
    /// The ciphers of one strength in bits.
    Bits(u16),
}

impl Select {
    /// Whether `c` is selected.
    fn matches(&self, c: &Cipher) -> bool {
        match self {
            Select::Pattern(p) => p.matches(c),
            Select::Bits(bits) => c.bits == *bits,
        }
    }
}

/// OpenSSL's cipher list as it evolves (`co_list` between `head` and
/// `tail`).
struct List {
    /// Every cipher not killed, in order.
    slots: Vec<Slot>,
}

impl List {
    /// `ssl_cipher_apply_rule`. OpenSSL walks the list once (backwards for
    /// the moves to the front), moving each matching cipher as it meets it;
    /// a cipher moved to the end is not met again. The same, in one pass:
    /// the moved ones gathered apart in the order they are moved.
    fn apply(&mut self, op: Op, select: Select) {
        let mut stay = Vec::with_capacity(self.slots.len());
        let mut moved = Vec::new();
        for slot in &self.slots {
            let hit = select.matches(slot.cipher);
            match op {
                Op::Add if hit && !slot.active => moved.push(Slot {
                    active: true,
                    ..*slot
                }),
                Op::Order | Op::Bump if hit && slot.active => moved.push(*slot),
                Op::Delete if hit && slot.active => moved.push(Slot {
                    active: false,
                    ..*slot
                }),
                Op::Kill if hit => {}
                _ => stay.push(*slot),
            }
        }
        self.slots = match op {
            // Walked backwards, each moved to the front: they end in their
            // original order, before the rest.
            Op::Delete | Op::Bump => moved.into_iter().chain(stay).collect(),
            _ => stay.into_iter().chain(moved).collect(),
        };
    }

    /// `ssl_cipher_strength_sort`: the active ciphers moved to the end by
    /// strength, strongest first, each strength keeping its order.
    fn strength_sort(&mut self) {
        let mut strengths: Vec<u16> = self
            .slots
            .iter()
            .filter(|s| s.active)
            .map(|s| s.cipher.bits)
            .collect();
        strengths.sort_unstable_by(|a, b| b.cmp(a));
        strengths.dedup();
        for bits in strengths {
            self.apply(Op::Order, Select::Bits(bits));
        }
    }

    /// The active ciphers, in order: the result.
    fn active(&self) -> Vec<&'static Cipher> {
        self.slots
            .iter()
            .filter(|s| s.active)
            .map(|s| s.cipher)
            .collect()
    }
}

/// A rule of OpenSSL's default order.
fn pattern(mkey: u32, auth: u32, enc: u32, mac: u32, min_version: u16) -> Select {
    Select::Pattern(Pattern {
        mkey,
        auth,
        enc,
        mac,
        min_version,
        ..Pattern::default()
    })
}

/// OpenSSL 3.0's preference order before any string: the list
/// `ssl_create_cipher_list` builds, every cipher inactive. The ciphers come
/// by code, highest first (`ssl3_get_cipher` walks the sorted table from
/// its end).
fn default_order() -> List {
    let mut list = List {
        slots: CIPHERS
            .iter()
            .rev()
            .map(|cipher| Slot {
                cipher,
                active: false,
            })
            .collect(),
    };
    use Op::*;
    // Everything else being equal, ephemeral ECDH first, ECDSA before RSA.
    list.apply(Add, pattern(mkey::ECDHE, auth::ECDSA, 0, 0, 0));
    list.apply(Add, pattern(mkey::ECDHE, 0, 0, 0, 0));
    list.apply(Delete, pattern(mkey::ECDHE, 0, 0, 0, 0));
    // Within a strength, GCM before ChaCha20, then the rest of AES.
    list.apply(Add, pattern(0, 0, enc::AESGCM, 0, 0));
    list.apply(Add, pattern(0, 0, enc::CHACHA20POLY1305, 0, 0));
    list.apply(Add, pattern(0, 0, enc::AES ^ enc::AESGCM, 0, 0));
    // Everything else, for sorting.
    list.apply(Add, pattern(0, 0, 0, 0, 0));
    // MD5, anonymous, RSA key exchange, plain PSK and RC4 last.
    list.apply(Order, pattern(0, 0, 0, mac::MD5, 0));
    list.apply(Order, pattern(0, auth::NULL, 0, 0, 0));
    list.apply(Order, pattern(mkey::RSA, 0, 0, 0, 0));
    list.apply(Order, pattern(mkey::PSK, 0, 0, 0, 0));
    list.apply(Order, pattern(0, 0, enc::RC4, 0, 0));
    list.strength_sort();
    // TLS 1.2 ciphers first within a strength, then, whatever the
    // strength: (EC)DHE with AEAD > (EC)DHE > other AEAD > the rest (each
    // bump to the front, so in reverse).
    list.apply(Bump, pattern(0, 0, 0, 0, version::TLS1_2));
    list.apply(Bump, pattern(0, 0, 0, mac::AEAD, 0));
    list.apply(Bump, pattern(mkey::DHE | mkey::ECDHE, 0, 0, 0, 0));
    list.apply(Bump, pattern(mkey::DHE | mkey::ECDHE, 0, 0, mac::AEAD, 0));
    // All inactive again, the order kept.
    list.apply(Delete, pattern(0, 0, 0, 0, 0));
    list
}

/// A separator between words (`ITEM_SEP`).
fn is_separator(b: u8) -> bool {
    matches!(b, b':' | b' ' | b';' | b',')
}

/// A character of a name (the loop in `ssl_cipher_process_rulestr`).
fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'=')
}

/// A word's pattern: a cipher's name first, then an alias.
fn lookup(word: &[u8]) -> Option<Pattern> {
    CIPHERS
        .iter()
        .find(|c| c.name.as_bytes() == word)
        .map(Pattern::of)
        .or_else(|| {
            ALIASES
                .iter()
                .find(|a| a.name.as_bytes() == word)
                .map(|a| a.pattern)
        })
}

/// `ssl_cipher_process_rulestr`: applies `rules` to `list`; returns how
/// many invalid commands it met. OpenSSL goes on after a bad `@` command
/// but stops at a character that is no name, separator or operator.
fn process(rules: &[u8], list: &mut List, level: &mut Option<u8>) -> usize {
    let mut invalid = 0;
    let mut l = 0;
    while l < rules.len() {
        let ch = rules[l];
        let op = match ch {
            b'-' => Some(Op::Delete),
            b'+' => Some(Op::Order),
            b'!' => Some(Op::Kill),
            b'@' => None,
            _ => Some(Op::Add),
        };
        if !matches!(op, Some(Op::Add)) {
            l += 1;
        }
        if is_separator(ch) {
            l += 1;
            continue;
        }
        // The word's pattern so far: each `+`-joined part narrows it.
        let mut found = Some(Pattern::default());
        let word_start = l;
        let mut word_len;
        loop {
            let start = l;
            while l < rules.len() && is_name_char(rules[l]) {
                l += 1;
            }
            word_len = l - start;
            if word_len == 0 {
                // Nothing OpenSSL can read: an error, and the end.
                return invalid + 1;
            }
            if op.is_none() {
                break;
            }
            let multi = rules.get(l) == Some(&b'+');
            if multi {
                l += 1;
            }
            found = lookup(&rules[start..start + word_len])
                .and_then(|part| found.and_then(|f| f.narrow(&part)));
            if found.is_none() || !multi {
                break;
            }
        }
        match op {
            None => {
                let word = &rules[word_start..word_start + word_len];
                if word == b"STRENGTH" {
                    list.strength_sort();
                } else if word.len() == 10 && word.starts_with(b"SECLEVEL=") {
                    match word[9].checked_sub(b'0') {
                        Some(n) if n <= MAX_SECURITY_LEVEL => *level = Some(n),
                        _ => invalid += 1,
                    }
                } else {
                    invalid += 1;
                }
                // No `+` after a command: the rest of the word is dropped.
                while l < rules.len() && !is_separator(rules[l]) {
                    l += 1;
                }
            }
            Some(op) => match found {
                Some(p) => list.apply(op, Select::Pattern(p)),
                // An unknown word (or one that can match nothing) is
                // skipped to the next separator.
                None => {
                    while l < rules.len() && !is_separator(rules[l]) {
                        l += 1;
                    }
                }
            },
        }
    }
    invalid
}

/// `ssl_create_cipher_list` with `rules`, as `SSL_CTX_set_cipher_list`
/// calls it.
pub(super) fn evaluate(rules: &[u8]) -> Outcome {
    let mut list = default_order();
    let mut level = None;
    let (rules, suite_b) = match SUITE_B.iter().find(|(p, _)| rules.starts_with(p)) {
        Some((_, replaced)) => (*replaced, true),
        None => (rules, false),
    };
    let mut invalid = 0;
    let mut rest = rules;
    // Only a leading DEFAULT is OpenSSL's default; elsewhere it is an
    // unknown word.
    if let Some(after) = rules.strip_prefix(b"DEFAULT") {
        invalid += process(DEFAULT_RULES, &mut list, &mut level);
        rest = after.strip_prefix(b":").unwrap_or(after);
    }
    if invalid == 0 {
        invalid += process(rest, &mut list, &mut level);
    }
    Outcome {
        ciphers: list.active(),
        invalid,
        security_level: level,
        suite_b,
    }
}
