//! Unit tests for `range`. The expectations marked "nginx" were observed
//! from nginx 1.22.1 serving a 26-byte file.

use super::*;

const LEN: u64 = 26;

fn r(start: u64, end: u64) -> ByteRange {
    ByteRange { start, end }
}

fn sat(ranges: &[(u64, u64)]) -> RangeSpec {
    RangeSpec::Satisfiable(ranges.iter().map(|&(s, e)| r(s, e)).collect())
}

#[test]
fn single_ranges() {
    assert_eq!(parse_range("bytes=0-1", LEN), sat(&[(0, 2)]));
    assert_eq!(parse_range("BYTES=0-1", LEN), sat(&[(0, 2)]));
    assert_eq!(parse_range("bytes= 1 - 2 ", LEN), sat(&[(1, 3)]));
    assert_eq!(parse_range("bytes=0-", LEN), sat(&[(0, 26)]));
    assert_eq!(parse_range("bytes=20-100", LEN), sat(&[(20, 26)]));
    assert_eq!(parse_range("bytes=-5", LEN), sat(&[(21, 26)]));
    assert_eq!(parse_range("bytes=-100", LEN), sat(&[(0, 26)]));
    assert_eq!(parse_range("bytes=25-25", LEN), sat(&[(25, 26)]));
}

#[test]
fn lists_keep_order_and_skip_unsatisfiable_members() {
    assert_eq!(parse_range("bytes=3-4,0-1", LEN), sat(&[(3, 5), (0, 2)]));
    assert_eq!(parse_range("bytes=0-0,-1", LEN), sat(&[(0, 1), (25, 26)]));
    // nginx: 1-2 alone survives.
    assert_eq!(parse_range("bytes=1-2,5-1", LEN), sat(&[(1, 3)]));
    assert_eq!(parse_range("bytes=30-40,1-2", LEN), sat(&[(1, 3)]));
}

#[test]
fn ignored_headers_mean_full() {
    for h in ["items=0-1", "bytes=", "bytes", "", "byte=0-1"] {
        assert_eq!(parse_range(h, LEN), RangeSpec::Full, "{h:?}");
    }
    // nginx: more bytes asked than the file has → whole file with 200.
    assert_eq!(parse_range("bytes=0-25,0-1", LEN), RangeSpec::Full);
    assert_eq!(parse_range("bytes=0-,0-", LEN), RangeSpec::Full);
    // A range from 0 selecting nothing (empty file) → 200.
    assert_eq!(parse_range("bytes=0-", 0), RangeSpec::Full);
    assert_eq!(parse_range("bytes=-5", 0), RangeSpec::Full);
}

#[test]
fn unsatisfiable_and_invalid_are_416_like_nginx() {
    for h in [
        "bytes=5-1",
        "bytes=-0",
        "bytes=100-",
        "bytes=26-",
        "bytes=abc",
        "bytes=1-2,",
        "bytes=1-2,,3-4",
        "bytes=1-2x",
        "bytes=--1",
        "bytes=1",
        "bytes=1-2-3",
        "bytes=99999999999999999999-",
        "bytes=0-99999999999999999999",
        "bytes=-99999999999999999999",
        "bytes=,1-2",
    ] {
        assert_eq!(parse_range(h, LEN), RangeSpec::Unsatisfiable, "{h:?}");
    }
    assert_eq!(parse_range("bytes=1-", 0), RangeSpec::Unsatisfiable);
    assert_eq!(unsatisfiable_content_range(LEN), "bytes */26");
}

#[test]
fn huge_files_do_not_overflow() {
    let max = i64::MAX as u64;
    assert_eq!(parse_range("bytes=-1", max), sat(&[(max - 1, max)]));
    assert_eq!(
        parse_range("bytes=9223372036854775806-", max),
        sat(&[(max - 1, max)])
    );
    assert_eq!(
        parse_range("bytes=0-9223372036854775807", max),
        sat(&[(0, max)])
    );
    // Beyond off_t, treated as i64::MAX.
    assert_eq!(parse_range("bytes=0-0", u64::MAX), sat(&[(0, 1)]));
}

#[test]
fn max_ranges() {
    assert_eq!(
        parse_range_limited("bytes=0-1,3-4", LEN, Some(1)),
        RangeSpec::Full
    );
    assert_eq!(
        parse_range_limited("bytes=0-1,3-4", LEN, Some(2)),
        sat(&[(0, 2), (3, 5)])
    );
    assert_eq!(
        parse_range_limited("bytes=0-1", LEN, Some(0)),
        RangeSpec::Full
    );
}

#[test]
fn content_range_values() {
    assert_eq!(r(0, 2).content_range(LEN), "bytes 0-1/26");
    assert_eq!(r(0, 2).len(), 2);
}

#[test]
fn if_range() {
    let etag = Some("\"6b024ab0-1a\"");
    let lm = Some(1_795_312_304); // Sun, 22 Nov 2026 01:51:44 GMT
    assert!(if_range_matches("\"6b024ab0-1a\"", etag, lm));
    assert!(!if_range_matches("W/\"6b024ab0-1a\"", etag, lm));
    assert!(!if_range_matches("\"other\"", etag, lm));
    assert!(!if_range_matches("\"6b024ab0-1a\"", None, lm));
    assert!(if_range_matches("Sun, 22 Nov 2026 01:51:44 GMT", etag, lm));
    assert!(!if_range_matches("Sun, 22 Nov 2026 01:51:45 GMT", etag, lm));
    assert!(!if_range_matches(
        "Sun, 22 Nov 2026 01:51:44 GMT",
        etag,
        None
    ));
    assert!(!if_range_matches("garbage", etag, lm));
}

#[test]
fn multipart_matches_nginx_bytes() {
    let m = Multipart::new(&[r(0, 2), r(3, 5)], Some("text/plain"), LEN, 1);
    assert_eq!(
        m.content_type(),
        "multipart/byteranges; boundary=00000000000000000001"
    );
    let file = b"abcdefghijklmnopqrstuvwxyz";
    let mut body = Vec::new();
    for (head, range) in m.parts() {
        body.extend_from_slice(head);
        body.extend_from_slice(&file[range.start as usize..range.end as usize]);
    }
    body.extend_from_slice(m.trailer());
    let want = "\r\n--00000000000000000001\r\nContent-Type: text/plain\r\nContent-Range: bytes 0-1/26\r\n\r\nab\
                \r\n--00000000000000000001\r\nContent-Type: text/plain\r\nContent-Range: bytes 3-4/26\r\n\r\nde\
                \r\n--00000000000000000001--\r\n";
    assert_eq!(String::from_utf8(body.clone()).unwrap(), want);
    assert_eq!(m.content_length(), body.len() as u64);
    assert_eq!(m.content_length(), 198); // nginx's Content-Length for this request
}

#[test]
fn multipart_without_type() {
    let m = Multipart::new(&[r(0, 1), r(2, 3)], None, 3, 42);
    let (head, _) = m.parts().next().unwrap();
    assert_eq!(
        head,
        b"\r\n--00000000000000000042\r\nContent-Range: bytes 0-0/3\r\n\r\n"
    );
    assert_eq!(m.trailer(), b"\r\n--00000000000000000042--\r\n");
}

/// xorshift64*: a small deterministic generator for the laws below.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// The laws of a 206, for generated headers over small and huge files:
/// every range is non-empty and inside the file, and together they ask
/// for no more bytes than the file has (else nginx sends 200).
#[test]
fn satisfiable_ranges_lie_inside_the_file_and_never_exceed_it() {
    const PIECES: &[&str] = &[
        "0",
        "1",
        "5",
        "25",
        "26",
        "-",
        ",",
        " ",
        "99",
        "18446744073709551615",
    ];
    let mut s = 0x9e37_79b9_7f4a_7c15;
    let mut seen = 0;
    for _ in 0..20_000 {
        let mut h = String::from("bytes=");
        for _ in 0..(next(&mut s) % 9) {
            h.push_str(PIECES[(next(&mut s) % PIECES.len() as u64) as usize]);
        }
        for len in [0, 1, LEN, u64::MAX / 2] {
            if let RangeSpec::Satisfiable(ranges) = parse_range(&h, len) {
                seen += 1;
                let mut total = 0u64;
                for x in &ranges {
                    assert!(x.start < x.end && x.end <= len, "{h:?} {len}: {x:?}");
                    total += x.len();
                }
                assert!(total <= len, "{h:?} {len}: {ranges:?}");
            }
        }
    }
    assert!(seen > 1000, "the generator reaches 206 answers ({seen})");
}
