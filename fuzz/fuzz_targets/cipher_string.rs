//! OpenSSL cipher strings (`ssl_ciphers`) and group lists
//! (`ssl_ecdh_curve`): never a panic; a selection is non-empty, without
//! repeats, of ciphers the table has; `;` and `,` separate alike; the usable
//! subset keeps the selection's order; an error line fits nginx's buffer.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nowait::tls::{ciphers, groups};

/// rustls' TLS 1.2 suites.
const SUPPORTED: &[u16] = &[0xC02C, 0xC02B, 0xCCA9, 0xC030, 0xC02F, 0xCCA8];

/// nginx's buffer for an SSL error line.
const LINE_MAX: usize = 1024;

fuzz_target!(|data: &[u8]| {
    let Ok(spec) = std::str::from_utf8(data) else {
        return;
    };
    let result = ciphers::evaluate(spec);
    // `;` and `,` are both separators, and nothing else treats either apart.
    let same = ciphers::evaluate(&spec.replace(';', ","));
    match (&result, &same) {
        (Ok(a), Ok(b)) => assert_eq!(a.ciphers, b.ciphers, "{spec:?}"),
        (Err(_), Err(_)) => {}
        _ => panic!("{spec:?}: `;` and `,` read apart"),
    }
    match &result {
        Ok(selection) => {
            assert!(!selection.ciphers.is_empty(), "{spec:?}");
            let mut codes: Vec<u16> = selection.ciphers.iter().map(|c| c.code).collect();
            for code in &codes {
                assert!(ciphers::cipher(*code).is_some(), "{spec:?}: {code:#06x}");
            }
            let order = codes.clone();
            codes.sort_unstable();
            codes.dedup();
            assert_eq!(codes.len(), order.len(), "{spec:?}: a cipher twice");
            match ciphers::usable(spec, SUPPORTED) {
                Ok(u) => {
                    let kept: Vec<u16> = order
                        .iter()
                        .copied()
                        .filter(|c| u.codes.contains(c))
                        .collect();
                    assert_eq!(kept, u.codes, "{spec:?}: the order changed");
                    assert!(u.codes.iter().all(|c| SUPPORTED.contains(c)));
                    assert_eq!(u.codes.len() + u.unusable.len(), order.len());
                    let _ = u.describe_unusable();
                }
                Err(e) => {
                    assert!(matches!(e, ciphers::CipherError::NoneUsable { .. }));
                    let _ = e.to_string();
                }
            }
        }
        Err(e) => assert!(e.to_string().len() <= LINE_MAX, "{spec:?}"),
    }
    match groups::parse(spec) {
        Ok(codes) => {
            assert!(!codes.is_empty(), "{spec:?}");
            for code in &codes {
                assert!(groups::openssl_name(*code).is_some(), "{spec:?}");
            }
            let _ = groups::format_offered(&codes);
        }
        Err(e) => assert!(e.to_string().len() <= LINE_MAX, "{spec:?}"),
    }
});
