//! The cipher-string engine against what OpenSSL 3.0 said of a corpus of
//! real strings (testdata/cipher_strings.expected, frozen by
//! scripts/tls-names.py; tests/tls_names.rs compares with a live OpenSSL),
//! and the names nginx prints.

use super::*;

/// The frozen answers: (string, expected) per line.
const EXPECTED: &str = include_str!("../testdata/cipher_strings.expected");

/// rustls' TLS 1.2 suites.
const RUSTLS_TLS12: &[u16] = &[0xC02C, 0xC02B, 0xCCA9, 0xC030, 0xC02F, 0xCCA8];

/// What OpenSSL said of one string.
#[derive(PartialEq, Eq)]
enum Said {
    Codes(Vec<u16>),
    NoCipherMatch,
    InvalidCommand(usize),
}

/// Codes in hex, as OpenSSL and the fixture write them.
impl std::fmt::Debug for Said {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Said::Codes(codes) => {
                let hex: Vec<String> = codes.iter().map(|c| format!("{c:04x}")).collect();
                write!(f, "{}", hex.join(","))
            }
            Said::NoCipherMatch => f.write_str("no cipher match"),
            Said::InvalidCommand(n) => write!(f, "invalid command x{n}"),
        }
    }
}

fn parse_said(s: &str) -> Said {
    if s == "error no-cipher-match" {
        return Said::NoCipherMatch;
    }
    if let Some(n) = s.strip_prefix("error invalid-command ") {
        return Said::InvalidCommand(n.parse().expect("a count"));
    }
    Said::Codes(
        s.split(',')
            .map(|c| u16::from_str_radix(c, 16).expect("a hex code"))
            .collect(),
    )
}

/// The fixture's cases.
fn cases() -> Vec<(&'static str, Said)> {
    EXPECTED
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (spec, said) = l.split_once('\t').expect("spec<TAB>result");
            (spec, parse_said(said))
        })
        .collect()
}

fn said(spec: &str) -> Said {
    match evaluate(spec) {
        Ok(s) => Said::Codes(s.ciphers.iter().map(|c| c.code).collect()),
        Err(CipherError::NoCipherMatch { .. }) => Said::NoCipherMatch,
        Err(CipherError::InvalidCommand { count, .. }) => Said::InvalidCommand(count),
        Err(e) => panic!("{spec:?}: {e}"),
    }
}

#[test]
fn every_corpus_string_selects_what_openssl_selects() {
    let cases = cases();
    assert!(cases.len() >= 40, "a corpus of {} strings", cases.len());
    let mut wrong = Vec::new();
    for (spec, expected) in &cases {
        let got = said(spec);
        if &got != expected {
            wrong.push(format!(
                "{spec:?}:\n  openssl {expected:?}\n  nowait  {got:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn all_and_complementofall_is_the_default_order_of_every_cipher() {
    let s = evaluate("ALL:COMPLEMENTOFALL").unwrap();
    assert_eq!(s.ciphers.len(), CIPHERS.len());
    // OpenSSL's preference: ECDHE-ECDSA AES-256-GCM first, NULL-MD5 near
    // the end (anonymous and NULL ciphers last).
    assert_eq!(s.ciphers[0].name, "ECDHE-ECDSA-AES256-GCM-SHA384");
    assert_eq!(s.ciphers[1].name, "ECDHE-RSA-AES256-GCM-SHA384");
}

#[test]
fn nginx_default_keeps_rustls_suites_in_openssl_order() {
    let u = usable("HIGH:!aNULL:!MD5", RUSTLS_TLS12).unwrap();
    assert_eq!(u.codes, [0xC02C, 0xC030, 0xCCA9, 0xCCA8, 0xC02B, 0xC02F]);
    assert!(
        u.unusable
            .iter()
            .any(|c| c.name == "DHE-RSA-AES256-GCM-SHA384")
    );
    assert!(u.reasons.contains(&"finite-field DHE"));
    assert_eq!(u.security_level, None);
}

#[test]
fn mozilla_intermediate_keeps_its_order() {
    let spec = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:\
                ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:\
                ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:\
                DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384";
    let u = usable(spec, RUSTLS_TLS12).unwrap();
    assert_eq!(u.codes, [0xC02B, 0xC02F, 0xC02C, 0xC030, 0xCCA9, 0xCCA8]);
    assert_eq!(
        u.describe_unusable(),
        "DHE-RSA-AES128-GCM-SHA256, DHE-RSA-AES256-GCM-SHA384 (rustls has no finite-field DHE)"
    );
}

#[test]
fn a_string_of_nothing_rustls_has_says_what_it_selects_and_why() {
    let e = usable("AES128-SHA:DHE-RSA-AES256-SHA", RUSTLS_TLS12).unwrap_err();
    assert_eq!(
        e.to_string(),
        "ssl_ciphers \"AES128-SHA:DHE-RSA-AES256-SHA\" selects no cipher nowait can use: \
         AES128-SHA, DHE-RSA-AES256-SHA (rustls has no finite-field DHE, CBC or RSA key exchange)"
    );
    let e = usable("HIGH:!ECDHE", RUSTLS_TLS12).unwrap_err();
    let text = e.to_string();
    assert!(text.contains(" more (rustls has no "), "{text}");
}

#[test]
fn a_suite_rustls_has_but_the_provider_lacks_is_said_so() {
    let u = usable("ECDHE+AESGCM:ECDHE-RSA-AES128-SHA", &[0xC02F, 0xC030]).unwrap();
    assert_eq!(u.codes, [0xC030, 0xC02F]);
    assert!(u.reasons.contains(&NOT_OFFERED));
    assert!(
        u.describe_unusable()
            .ends_with("(rustls has no CBC; not in nowait's crypto provider)"),
        "{}",
        u.describe_unusable()
    );
}

#[test]
fn security_level_drops_weaker_ciphers() {
    let u = usable("ECDHE+AESGCM:@SECLEVEL=5", RUSTLS_TLS12).unwrap();
    assert_eq!(u.security_level, Some(5));
    assert_eq!(u.codes, [0xC02C, 0xC030]);
    assert!(u.reasons.contains(&WEAKER_THAN_LEVEL));
    assert!(security_level_allows(3, 0x1301));
    assert!(!security_level_allows(4, 0x1301));
    assert!(security_level_allows(5, 0x1303));
    assert!(!security_level_allows(0, 0x0a0a));
}

#[test]
fn suite_b_replaces_the_string() {
    let s = evaluate("SUITEB128:HIGH").unwrap();
    assert!(s.suite_b);
    let names: Vec<_> = s.ciphers.iter().map(|c| c.name).collect();
    assert_eq!(
        names,
        [
            "ECDHE-ECDSA-AES128-GCM-SHA256",
            "ECDHE-ECDSA-AES256-GCM-SHA384"
        ]
    );
}

#[test]
fn errors_read_as_nginx_writes_them() {
    // nginx 1.22.1 with OpenSSL 3.0 (`nginx -t`).
    assert_eq!(
        evaluate("FOO").unwrap_err().to_string(),
        "SSL_CTX_set_cipher_list(\"FOO\") failed (SSL: error:0A0000B9:SSL routines::no cipher match)"
    );
    assert_eq!(
        evaluate("HIGH:-:+").unwrap_err().to_string(),
        "SSL_CTX_set_cipher_list(\"HIGH:-:+\") failed (SSL: error:0A000118:SSL routines::invalid command)"
    );
    assert_eq!(
        evaluate("@FOO:@BAR:+").unwrap_err().to_string(),
        "SSL_CTX_set_cipher_list(\"@FOO:@BAR:+\") failed (SSL: \
         error:0A000118:SSL routines::invalid command \
         error:0A000118:SSL routines::invalid command \
         error:0A000118:SSL routines::invalid command)"
    );
    assert_eq!(
        evaluate("").unwrap_err().to_string(),
        "SSL_CTX_set_cipher_list(\"\") failed (SSL: error:0A0000B9:SSL routines::no cipher match)"
    );
}

#[test]
fn a_long_error_is_cut_as_nginx_cuts_it() {
    let spec = "FOO:".repeat(300);
    let line = evaluate(&spec).unwrap_err().to_string();
    // 1023 bytes of the message, then what fits of the rest: a `)`.
    assert_eq!(line.len(), 1024);
    assert!(line.starts_with("SSL_CTX_set_cipher_list(\"FOO:FOO:"));
    assert!(line.ends_with("FOO:FO)"), "{}", &line[1000..]);
    let spec = "FOO:".repeat(240);
    let line = evaluate(&spec).unwrap_err().to_string();
    assert_eq!(line.len(), 1024);
    assert!(line.ends_with(" (SSL: error:0A0000B9:SSL rou)"), "{line}");
}

#[test]
fn names_are_openssls() {
    assert_eq!(openssl_name(0xC02F), Some("ECDHE-RSA-AES128-GCM-SHA256"));
    assert_eq!(openssl_name(0xCCA9), Some("ECDHE-ECDSA-CHACHA20-POLY1305"));
    assert_eq!(openssl_name(0x1301), Some("TLS_AES_128_GCM_SHA256"));
    assert_eq!(openssl_name(0x1302), Some("TLS_AES_256_GCM_SHA384"));
    assert_eq!(openssl_name(0x1303), Some("TLS_CHACHA20_POLY1305_SHA256"));
    assert_eq!(
        openssl_name(0x00FF),
        Some("TLS_EMPTY_RENEGOTIATION_INFO_SCSV")
    );
    assert_eq!(openssl_name(0x5600), Some("TLS_FALLBACK_SCSV"));
    assert_eq!(openssl_name(0x0096), Some("SEED-SHA"));
    // 3DES and RC4 are not compiled into OpenSSL 3.0 by default.
    assert_eq!(openssl_name(0x000A), None);
    assert_eq!(openssl_name(0x0005), None);
    assert_eq!(openssl_name(0x0A0A), None);
}

#[test]
fn offered_ciphers_print_as_ngx_ssl_get_ciphers() {
    // A browser's ClientHello: GREASE first, the SCSV last.
    let offered = [
        0x2A2A, 0x1301, 0x1302, 0x1303, 0xC02B, 0xC02F, 0x009C, 0x000A, 0x00FF,
    ];
    assert_eq!(
        format_offered(&offered),
        "0x2a2a:TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:\
         ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:AES128-GCM-SHA256:0x000a:\
         TLS_EMPTY_RENEGOTIATION_INFO_SCSV"
    );
    assert_eq!(format_offered(&[]), "");
}

#[test]
fn protocol_names_are_openssls() {
    assert_eq!(protocol_name(0x0304), "TLSv1.3");
    assert_eq!(protocol_name(0x0303), "TLSv1.2");
    assert_eq!(protocol_name(0x0302), "TLSv1.1");
    assert_eq!(protocol_name(0x0301), "TLSv1");
    assert_eq!(protocol_name(0x0300), "SSLv3");
    assert_eq!(protocol_name(0xFEFD), "DTLSv1.2");
    assert_eq!(protocol_name(0x0305), "unknown");
}

#[test]
fn the_table_is_sorted_and_has_rustls_suites() {
    assert!(CIPHERS.windows(2).all(|w| w[0].code < w[1].code));
    assert!(OTHER_NAMES.windows(2).all(|w| w[0].0 < w[1].0));
    for code in RUSTLS_TLS12 {
        let c = cipher(*code).expect("in the table");
        assert_eq!(c.kx, Kx::Ecdhe, "{}", c.name);
        assert!(lacks(c) == [NOT_OFFERED], "{}", c.name);
        assert_eq!(c.min_version, version::TLS1_2);
        assert!(c.class & class::HIGH != 0);
    }
    let names: std::collections::HashSet<_> = CIPHERS.iter().map(|c| c.name).collect();
    assert_eq!(names.len(), CIPHERS.len());
}

#[test]
fn words_need_no_separator_before_an_operator() {
    // Dovecot's default ends `!LOW@STRENGTH`: LOW, then @STRENGTH.
    let a = evaluate("ECDHE!ECDSA@STRENGTH").unwrap();
    let b = evaluate("ECDHE:!ECDSA:@STRENGTH").unwrap();
    assert_eq!(a, b);
}

#[test]
fn any_bytes_evaluate_without_panic() {
    for spec in [
        "+",
        "-",
        "!",
        "@",
        "@SECLEVEL=",
        "ALL+",
        "ALL++HIGH",
        "\u{e9}",
        "A\0B",
    ] {
        let _ = evaluate(spec);
    }
}
