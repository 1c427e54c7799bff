//! Header field names compared without regard to ASCII case, eight bytes
//! at a time.
//!
//! Owns: [`eq_ignore_case`], for the hot paths that look for a few known
//! names among every field of a head (an upstream's framing fields, the
//! fields a proxy withholds). `<[u8]>::eq_ignore_ascii_case` lowers each
//! byte of both sides on its own, about eight instructions a byte; names
//! are 4 to 20 bytes long and the ones compared in full are the ones that
//! match.
//! Must not: know any name.

/// A one in every byte of a word.
const ONES: u64 = u64::from_le_bytes([1; 8]);
/// The top bit of every byte.
const TOPS: u64 = ONES << 7;

/// Whether `a` and `b` are equal but for ASCII case, as
/// `a.eq_ignore_ascii_case(b)` (any bytes: only `A`–`Z` and `a`–`z` are
/// folded). Inlined: most names compared have another length.
#[inline]
pub fn eq_ignore_case(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && same_length_eq(a, b)
}

/// [`eq_ignore_case`] for `a` and `b` of the same length.
fn same_length_eq(a: &[u8], b: &[u8]) -> bool {
    let len = a.len();
    if len < 4 {
        return a.eq_ignore_ascii_case(b);
    }
    if len < 8 {
        // Two four-byte halves, overlapping when under eight bytes.
        let w = |s: &[u8]| u64::from(half(s)) | u64::from(half(&s[len - 4..])) << 32;
        return fold(w(a)) == fold(w(b));
    }
    let mut at = 0;
    while at + 8 <= len {
        if fold(word(&a[at..])) != fold(word(&b[at..])) {
            return false;
        }
        at += 8;
    }
    // The tail: the last eight bytes, overlapping what was compared.
    at == len || fold(word(&a[len - 8..])) == fold(word(&b[len - 8..]))
}

/// The first eight bytes of `b` (the callers pass at least eight) as a
/// word, in one load.
#[inline(always)]
fn word(b: &[u8]) -> u64 {
    b.first_chunk().map_or(0, |c| u64::from_le_bytes(*c))
}

/// The first four bytes of `b` (the callers pass at least four).
#[inline(always)]
fn half(b: &[u8]) -> u32 {
    b.first_chunk().map_or(0, |c| u32::from_le_bytes(*c))
}

/// `w` with every byte `A`–`Z` made lowercase, the others unchanged.
#[inline(always)]
fn fold(w: u64) -> u64 {
    // Bytes below 0x80; their low seven bits compared with 'A' and 'Z' by
    // an addition that sets the top bit, with no carry into the next byte
    // (at most 0x7f + 0x3f).
    let ascii = !w & TOPS;
    let low = w & !TOPS;
    let at_least_a = (low + ONES * u64::from(0x80 - b'A')) & TOPS;
    let above_z = (low + ONES * u64::from(0x80 - b'Z' - 1)) & TOPS;
    let upper = ascii & at_least_a & !above_z;
    // The top bit moved to 0x20, the case bit.
    w | (upper >> 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_the_standard_comparison_for_every_byte_pair() {
        for x in 0..=255u8 {
            for y in 0..=255u8 {
                let (a, b) = ([b'x', x, b'-', b'q'], [b'x', y, b'-', b'q']);
                assert_eq!(
                    eq_ignore_case(&a, &b),
                    a.eq_ignore_ascii_case(&b),
                    "{x} {y}"
                );
            }
        }
    }

    #[test]
    fn every_length_and_position() {
        let name = b"X-Accel-Limit-Rate-And-More";
        for len in 0..name.len() {
            let a = &name[..len];
            let upper = a.to_ascii_uppercase();
            assert!(eq_ignore_case(a, &upper), "{len}");
            assert!(!eq_ignore_case(a, &name[..len + 1]), "{len}");
            for at in 0..len {
                let mut other = upper.clone();
                other[at] ^= 0x01;
                assert!(!eq_ignore_case(a, &other), "{len} {at}");
                // A case bit on a byte that is not a letter is a difference.
                let mut other = a.to_vec();
                if !other[at].is_ascii_alphabetic() {
                    other[at] ^= 0x20;
                    assert!(!eq_ignore_case(a, &other), "{len} {at}");
                }
            }
        }
    }
}
