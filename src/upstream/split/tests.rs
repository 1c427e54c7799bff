//! Unit tests of `split_clients`' arithmetic; expected values from nginx's
//! `ngx_murmur_hash2` and its part bounds, run on the same inputs.

use super::*;

#[test]
fn murmur_hash2_matches_nginx() {
    let vectors: [(&[u8], u32); 10] = [
        (b"", 0x0000_0000),
        (b"a", 0x9268_5f5e),
        (b"ab", 0x1aa1_4063),
        (b"abc", 0x1357_7c9b),
        (b"abcd", 0x2687_3021),
        (b"abcde", 0x5f09_a8de),
        (b"hello world", 0x44a8_1419),
        (b"key1", 0xd27b_86fb),
        (b"\xff\xfe\xfd\xfc\x80", 0x3749_7108),
        (b"The quick brown fox jumps over the lazy dog", 0x2127_29d0),
    ];
    for (data, expected) in vectors {
        assert_eq!(murmur_hash2(data), expected, "{data:?}");
    }
}

#[test]
fn bounds_are_cumulative_shares_of_the_hash_space() {
    let split = SplitClients::new(&[3330, 3330, 0]).expect("valid");
    assert_eq!(split.bounds, vec![1_430_224_109, 2_860_448_218, 0]);
}

#[test]
fn choices_match_nginx() {
    let expected = [1, 2, 0, 2, 2, 2, 0, 1, 2, 1, 2, 1, 1, 2, 0, 0, 0, 1, 0, 2];
    for (i, want) in expected.into_iter().enumerate() {
        let key = format!("key{i}");
        assert_eq!(
            split_index(&[3330, 3330, 0], key.as_bytes()),
            Some(want),
            "{key}"
        );
    }
}

#[test]
fn without_a_star_the_rest_gets_nothing() {
    // key0 hashes past 33.3% (part 1 above): with only the first part it is
    // in no part.
    assert_eq!(split_index(&[3330], b"key0"), None);
    assert_eq!(split_index(&[3330], b"key2"), Some(0));
    // 100% ends at 0xffffffff itself, which no part holds (as in nginx).
    assert_eq!(split_index(&[10000], b"key0"), Some(0));
}

#[test]
fn over_100_percent_is_refused() {
    assert_eq!(SplitClients::new(&[5000, 5001]), Err(SplitError::Over100));
    assert_eq!(SplitClients::new(&[5000, 0, 1]), Err(SplitError::Over100));
    assert_eq!(
        SplitError::Over100.to_string(),
        "percent total is greater than 100%"
    );
    assert!(SplitClients::new(&[5000, 5000]).is_ok());
    assert_eq!(split_index(&[9000, 2000, 0], b"x"), None);
}

#[test]
fn percent_text_as_nginx_reads_it() {
    assert_eq!(parse_percent("33.3%"), Some(3330));
    assert_eq!(parse_percent("0.5%"), Some(50));
    assert_eq!(parse_percent("50%"), Some(5000));
    assert_eq!(parse_percent("12.34%"), Some(1234));
    assert_eq!(parse_percent(".5%"), Some(50));
    assert_eq!(parse_percent("5.%"), Some(500));
    for bad in [
        "33.333%", "0%", "0.00%", "%", "50", "1.2.3%", "-5%", "a%", "5 %",
    ] {
        assert_eq!(parse_percent(bad), None, "{bad}");
    }
}
