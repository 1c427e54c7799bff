//! DER (ITU-T X.690) as far as certificates and OCSP need it: reading
//! tag-length-value items with one-byte tags, writing them, and the two
//! ASN.1 times as seconds since the epoch.
//!
//! Readers return `None` for anything malformed; the callers say what was
//! being read. Nothing here allocates but the writer.

/// `SEQUENCE` (constructed).
pub const SEQUENCE: u8 = 0x30;
/// `SET` (constructed).
pub const SET: u8 = 0x31;
/// `BOOLEAN`.
pub const BOOLEAN: u8 = 0x01;
/// `INTEGER`.
pub const INTEGER: u8 = 0x02;
/// `BIT STRING`.
pub const BIT_STRING: u8 = 0x03;
/// `OCTET STRING`.
pub const OCTET_STRING: u8 = 0x04;
/// `NULL`.
pub const NULL: u8 = 0x05;
/// `OBJECT IDENTIFIER`.
pub const OID: u8 = 0x06;
/// `ENUMERATED`.
pub const ENUMERATED: u8 = 0x0a;
/// `UTCTime`.
pub const UTC_TIME: u8 = 0x17;
/// `GeneralizedTime`.
pub const GENERALIZED_TIME: u8 = 0x18;

/// The tag of a constructed context-specific item `[n]` (EXPLICIT, or
/// IMPLICIT over a constructed type).
pub const fn context(n: u8) -> u8 {
    0xa0 | n
}

/// The tag of a primitive context-specific item `[n]` (IMPLICIT over a
/// primitive type).
pub const fn context_primitive(n: u8) -> u8 {
    0x80 | n
}

/// The longest length field read: four bytes (4 GiB), more than anything
/// a certificate or an OCSP response holds.
const MAX_LENGTH_BYTES: usize = 4;

/// One item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tlv<'a> {
    /// Its tag.
    pub tag: u8,
    /// Its content (after the length).
    pub content: &'a [u8],
    /// The whole item, tag and length included (what is hashed or
    /// compared as a whole: a name, a key).
    pub raw: &'a [u8],
}

/// Reads items one after another.
#[derive(Clone, Copy, Debug)]
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Reads `bytes`.
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { rest: bytes }
    }

    /// Whether everything was read.
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The next item's tag, without reading it.
    pub fn peek_tag(&self) -> Option<u8> {
        self.rest.first().copied()
    }

    /// The next item, whatever its tag.
    pub fn any(&mut self) -> Option<Tlv<'a>> {
        let tag = *self.rest.first()?;
        // Multi-byte tags (low bits all set) are not used by anything read.
        if tag & 0x1f == 0x1f {
            return None;
        }
        let (len, head) = length(self.rest.get(1..)?)?;
        let end = (1 + head).checked_add(len)?;
        let raw = self.rest.get(..end)?;
        let tlv = Tlv {
            tag,
            content: &raw[1 + head..],
            raw,
        };
        self.rest = &self.rest[end..];
        Some(tlv)
    }

    /// The next item, which must have `tag`.
    pub fn read(&mut self, tag: u8) -> Option<Tlv<'a>> {
        if self.peek_tag()? != tag {
            return None;
        }
        self.any()
    }

    /// The next item when it has `tag` (an OPTIONAL or DEFAULT field);
    /// `None`, reading nothing, when it has another.
    pub fn optional(&mut self, tag: u8) -> Option<Tlv<'a>> {
        if self.peek_tag() == Some(tag) {
            self.any()
        } else {
            None
        }
    }

    /// The content of the next item, which must have `tag`, as a reader.
    pub fn nested(&mut self, tag: u8) -> Option<Reader<'a>> {
        self.read(tag).map(|t| Reader::new(t.content))
    }
}

/// A length and how many bytes it took.
fn length(b: &[u8]) -> Option<(usize, usize)> {
    let first = *b.first()?;
    if first < 0x80 {
        return Some((first as usize, 1));
    }
    let n = (first & 0x7f) as usize;
    if n == 0 || n > MAX_LENGTH_BYTES {
        return None;
    }
    let mut len = 0usize;
    for &byte in b.get(1..1 + n)? {
        len = (len << 8) | byte as usize;
    }
    Some((len, 1 + n))
}

/// The only item of `bytes`, which must have `tag` and nothing after it.
pub fn single(bytes: &[u8], tag: u8) -> Option<Tlv<'_>> {
    let mut r = Reader::new(bytes);
    let t = r.read(tag)?;
    r.is_empty().then_some(t)
}

/// A `BIT STRING`'s bits, when they are whole bytes (keys and signatures
/// are).
pub fn bit_string_bytes<'a>(t: &Tlv<'a>) -> Option<&'a [u8]> {
    match t.content.split_first() {
        Some((0, bits)) if t.tag == BIT_STRING => Some(bits),
        _ => None,
    }
}

/// An item with `tag` holding `content`.
pub fn item(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(content.len() + 6);
    out.push(tag);
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|&&b| b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

/// A time (`UTCTime` or `GeneralizedTime`) as seconds since the epoch.
/// Fractions of a second (allowed in an OCSP response's
/// `GeneralizedTime`) are dropped; a time not in UTC (`Z`) is refused.
pub fn time(t: &Tlv<'_>) -> Option<i64> {
    let text = std::str::from_utf8(t.content).ok()?;
    parse_time(t.tag, text)
}

/// `YYMMDDHHMMSSZ` (`UTCTime`) or `YYYYMMDDHHMMSS[.f]Z`
/// (`GeneralizedTime`) as seconds since the epoch.
pub fn parse_time(tag: u8, t: &str) -> Option<i64> {
    let t = t.strip_suffix('Z')?;
    let (year, rest) = match tag {
        UTC_TIME => {
            let yy: i64 = digits(t.get(..2)?)?;
            // RFC 5280 §4.1.2.5.1: 50 and above are 19YY.
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, t.get(2..)?)
        }
        GENERALIZED_TIME => {
            let whole = t.split_once('.').map_or(t, |(w, frac)| {
                if frac.bytes().all(|b| b.is_ascii_digit()) {
                    w
                } else {
                    t
                }
            });
            (digits(whole.get(..4)?)?, whole.get(4..)?)
        }
        _ => return None,
    };
    if rest.len() != 10 {
        return None;
    }
    let field = |i: usize| -> Option<i64> { digits(rest.get(i..i + 2)?) };
    let (month, day, hour, min, sec) = (field(0)?, field(2)?, field(4)?, field(6)?, field(8)?);
    if hour > 23 || min > 59 || sec > 60 {
        return None;
    }
    Some(days_from_civil(year, month, day)? * 86400 + hour * 3600 + min * 60 + sec)
}

/// Decimal digits only (no sign, no spaces).
fn digits(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> Option<i64> {
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146097 + doe - 719468)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_days_are_counted_from_the_epoch() {
        assert_eq!(days_from_civil(1970, 1, 1), Some(0));
        assert_eq!(days_from_civil(2000, 3, 1), Some(11017));
        assert_eq!(parse_time(UTC_TIME, "491231235959Z"), Some(2524607999));
        assert_eq!(
            parse_time(GENERALIZED_TIME, "20380119031408Z"),
            Some(2147483648)
        );
        assert_eq!(
            parse_time(GENERALIZED_TIME, "20380119031408.25Z"),
            Some(2147483648)
        );
        assert_eq!(parse_time(UTC_TIME, "5001010000Z"), None);
        assert_eq!(parse_time(GENERALIZED_TIME, "20380119031408+0100"), None);
    }

    #[test]
    fn items_are_written_and_read_back_with_long_lengths() {
        for len in [0usize, 1, 127, 128, 255, 256, 70000] {
            let content = vec![7u8; len];
            let bytes = item(OCTET_STRING, &content);
            let t = single(&bytes, OCTET_STRING).expect("reads back");
            assert_eq!(t.content.len(), len);
            assert_eq!(t.raw, &bytes[..]);
        }
    }

    #[test]
    fn truncated_or_overlong_items_are_refused() {
        assert!(Reader::new(&[0x30, 0x05, 1, 2]).any().is_none());
        assert!(Reader::new(&[0x30, 0x85, 1, 1, 1, 1, 1]).any().is_none());
        assert!(Reader::new(&[0x1f, 0x01, 0]).any().is_none());
        assert!(single(&[0x05, 0x00, 0x05, 0x00], NULL).is_none());
        let mut r = Reader::new(&[0x02, 0x01, 0x05]);
        assert!(r.optional(OCTET_STRING).is_none());
        assert_eq!(r.optional(INTEGER).map(|t| t.content), Some(&[5u8][..]));
        assert!(r.is_empty());
    }
}
