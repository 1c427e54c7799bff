//! Group lists against what OpenSSL 3.0 said of them
//! (testdata/groups.expected, frozen by scripts/tls-names.py), and the
//! names nginx prints.

use super::*;

const EXPECTED: &str = include_str!("../testdata/groups.expected");

/// rustls' groups with its default providers.
const RUSTLS: &[u16] = &[0x001d, 0x0017, 0x0018];

fn codes(s: &str) -> Vec<u16> {
    s.split(',')
        .map(|c| u16::from_str_radix(c, 16).expect("a hex code"))
        .collect()
}

fn lines(kind: &str) -> Vec<Vec<&'static str>> {
    EXPECTED
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|f| f[0] == kind)
        .collect()
}

#[test]
fn every_name_openssl_accepts_is_known_with_its_printed_name() {
    let names = lines("name");
    assert!(names.len() >= 40, "{} names", names.len());
    let mut seen = Vec::new();
    for f in &names {
        let (name, code, printed) = (f[1], codes(f[2])[0], f[3]);
        assert_eq!(by_name(name), Some(code), "{name}");
        assert_eq!(openssl_name(code), Some(printed), "{name}");
        if !seen.contains(&code) {
            seen.push(code);
        }
    }
    // No group here that OpenSSL does not know, nor an alias it refuses.
    let ours: Vec<u16> = GROUPS.iter().map(|g| g.code).collect();
    assert_eq!(seen, ours);
    let aliases: usize = GROUPS.iter().map(|g| g.aliases.len()).sum();
    assert_eq!(aliases, names.len());
    assert!(GROUPS.windows(2).all(|w| w[0].code < w[1].code));
}

#[test]
fn auto_is_openssls_default_list() {
    let auto = lines("auto");
    assert_eq!(auto.len(), 1);
    assert_eq!(codes(auto[0][1]), AUTO);
    assert_eq!(parse("auto").unwrap(), AUTO);
}

#[test]
fn every_list_reads_as_openssl_reads_it() {
    let lists = lines("list");
    assert!(lists.len() >= 20, "{} lists", lists.len());
    for f in lists {
        let spec = f[1];
        match (f[2], parse(spec)) {
            ("error", Err(e)) => {
                let GroupError::Refused { unknown, .. } = &e else {
                    panic!("{spec:?}: {e}");
                };
                // The error queue OpenSSL left, as nginx prints it.
                let queue = f.get(3).copied().unwrap_or("");
                let data = unknown
                    .as_ref()
                    .map(|n| format!("{PASSED_INVALID_ARGUMENT}:group '{n}' cannot be set"));
                assert_eq!(data.as_deref().unwrap_or(""), queue, "{spec:?}");
            }
            ("error", Ok(got)) => panic!("{spec:?}: OpenSSL refuses it, nowait reads {got:?}"),
            (want, Ok(got)) => assert_eq!(got, codes(want), "{spec:?}"),
            (want, Err(e)) => panic!("{spec:?}: OpenSSL reads {want}, nowait says {e}"),
        }
    }
}

#[test]
fn errors_read_as_nginx_writes_them() {
    // nginx 1.22.1 with OpenSSL 3.0 (`nginx -t`).
    assert_eq!(
        parse("foo").unwrap_err().to_string(),
        "SSL_CTX_set1_curves_list(\"foo\") failed (SSL: error:0A080106:SSL routines::\
         passed invalid argument:group 'foo' cannot be set)"
    );
    assert_eq!(
        parse("x25519:p-256:P-384:prime256v1")
            .unwrap_err()
            .to_string(),
        "SSL_CTX_set1_curves_list(\"x25519:p-256:P-384:prime256v1\") failed (SSL: \
         error:0A080106:SSL routines::passed invalid argument:group 'p-256' cannot be set)"
    );
    assert_eq!(
        parse("X25519:X25519").unwrap_err().to_string(),
        "SSL_CTX_set1_curves_list(\"X25519:X25519\") failed"
    );
    assert_eq!(
        parse("").unwrap_err().to_string(),
        "SSL_CTX_set1_curves_list(\"\") failed"
    );
    assert_eq!(
        parse(&"x".repeat(64)).unwrap_err(),
        GroupError::Refused {
            spec: "x".repeat(64),
            unknown: None
        }
    );
}

#[test]
fn usable_keeps_the_order_and_reports_what_it_drops() {
    let u = usable("X448:X25519:prime256v1:secp384r1", RUSTLS).unwrap();
    assert_eq!(u.codes, [0x001d, 0x0017, 0x0018]);
    assert_eq!(u.dropped, [0x001e]);
    assert!(!u.auto);
    let u = usable("auto", RUSTLS).unwrap();
    assert_eq!(u.codes, [0x001d, 0x0017, 0x0018]);
    assert!(u.auto);
    assert_eq!(
        usable("X448:ffdhe2048", RUSTLS).unwrap_err().to_string(),
        "ssl_ecdh_curve \"X448:ffdhe2048\" names no group nowait can use: X448, ffdhe2048"
    );
    assert!(matches!(
        usable("foo", RUSTLS),
        Err(GroupError::Refused { .. })
    ));
}

#[test]
fn offered_groups_print_as_ngx_ssl_get_curves() {
    // Chrome's supported_groups: GREASE, X25519MLKEM768, X25519, P-256, P-384.
    assert_eq!(
        format_offered(&[0x4a4a, 0x11ec, 0x001d, 0x0017, 0x0018]),
        "0x4a4a:0x11ec:X25519:prime256v1:secp384r1"
    );
    assert_eq!(format_offered(&[]), "");
    assert_eq!(curve_name(0x0019), "secp521r1");
    assert_eq!(curve_name(0x0022), "0x0022");
}
