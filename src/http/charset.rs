//! Charsets and the recoding between them, as nginx's charset filter does
//! it (`ngx_http_charset_filter_module.c`): the charsets a configuration
//! names, the tables `charset_map` blocks define, and a streaming
//! [`Recoder`] that turns a body in one charset into another, piece by
//! piece.
//!
//! Three kinds of table, as nginx has: one byte to one byte (two 8-bit
//! charsets), one byte to its UTF-8 sequence (to `utf-8`), and UTF-8 to one
//! byte (from `utf-8`), where a character the table has no byte for is
//! written as an HTML entity `&#N;` and invalid UTF-8 as `?`.
//!
//! Owns: the tables and the byte work. Must not: do I/O or know about
//! requests; `server/filter/charset.rs` decides when to recode.

use std::sync::Arc;

/// The most bytes of a UTF-8 sequence nginx maps (a code point up to
/// U+FFFF): the longest value a `charset_map` to `utf-8` may give.
pub const MAX_MAPPED_UTF8: usize = 3;

/// What [`utf8_decode`] returns for an invalid sequence (nginx's
/// `0xffffffff`).
pub const UTF8_INVALID: u32 = 0xffff_ffff;
/// What [`utf8_decode`] returns when the input ends inside a sequence
/// (nginx's `0xfffffffe`).
pub const UTF8_INCOMPLETE: u32 = 0xffff_fffe;

/// `ngx_utf8_decode`: the code point of the UTF-8 sequence at the start of
/// `p` and how many bytes it took. Invalid input takes what nginx's decoder
/// consumed (a bad lead byte: one; a bad continuation byte: up to and
/// including it). As nginx's, it checks continuation bytes only for being
/// at least 0x80, and calls an overlong form invalid.
pub fn utf8_decode(p: &[u8]) -> (u32, usize) {
    let Some(&lead) = p.first() else {
        return (UTF8_INCOMPLETE, 0);
    };
    let mut u = u32::from(lead);
    let (len, valid) = if u >= 0xf0 {
        u &= 0x07;
        (3, 0xffff)
    } else if u >= 0xe0 {
        u &= 0x0f;
        (2, 0x7ff)
    } else if u >= 0xc2 {
        u &= 0x1f;
        (1, 0x7f)
    } else {
        return (UTF8_INVALID, 1);
    };
    if p.len() - 1 < len {
        return (UTF8_INCOMPLETE, 0);
    }
    for (k, &b) in p[1..=len].iter().enumerate() {
        if b < 0x80 {
            return (UTF8_INVALID, k + 2);
        }
        u = (u << 6) | u32::from(b & 0x3f);
    }
    if u > valid {
        (u, len + 1)
    } else {
        (UTF8_INVALID, len + 1)
    }
}

/// `ngx_utf8_length`: the characters in `s`, or its length in bytes when it
/// is not valid UTF-8.
pub fn utf8_length(s: &[u8]) -> usize {
    let mut i = 0;
    let mut n = 0;
    while i < s.len() {
        if s[i] < 0x80 {
            i += 1;
        } else {
            let (u, used) = utf8_decode(&s[i..]);
            if u > 0x10ffff {
                return s.len();
            }
            i += used;
        }
        n += 1;
    }
    n
}

/// One direction of a `charset_map`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Table {
    /// Each byte becomes one byte.
    Bytes(Box<[u8; 256]>),
    /// Each byte becomes its UTF-8 sequence (the charset on the right of
    /// `charset_map` is `utf-8`).
    ToUtf8(Vec<Vec<u8>>),
    /// Each UTF-8 character up to U+FFFF becomes the byte mapped to it, by
    /// code point in pages of 256; 0 means none (an entity is written).
    FromUtf8(Vec<Option<Box<[u8; 256]>>>),
}

/// The tables of one `charset_map SRC DST { … }` block, built entry by
/// entry as `ngx_http_charset_map` does.
pub struct MapBuilder {
    /// SRC → DST.
    forward: Table,
    /// DST → SRC.
    backward: Table,
}

/// Why a `charset_map` entry was refused: nginx says `invalid value "X"`
/// about the word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// The first word (the source byte).
    Source,
    /// The second word (the destination byte or UTF-8 sequence).
    Destination,
}

/// `ngx_hextoi`: the value of `s` in hexadecimal, `None` when empty or not
/// hexadecimal.
fn hex(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 8 {
        return None;
    }
    u32::from_str_radix(s, 16)
        .ok()
        .filter(|_| s.bytes().all(|b| b.is_ascii_hexdigit()))
}

impl MapBuilder {
    /// The identity for ASCII and `?` for every other byte, nginx's
    /// starting point; `to_utf8` when the destination charset is `utf-8`.
    pub fn new(to_utf8: bool) -> MapBuilder {
        if to_utf8 {
            let forward = (0..=255u8)
                .map(|i| if i < 0x80 { vec![i] } else { vec![b'?'] })
                .collect();
            let mut first = Box::new([0u8; 256]);
            for (i, b) in first.iter_mut().enumerate().take(0x80) {
                *b = i as u8;
            }
            let mut pages = vec![None; 256];
            pages[0] = Some(first);
            MapBuilder {
                forward: Table::ToUtf8(forward),
                backward: Table::FromUtf8(pages),
            }
        } else {
            let mut t = Box::new([b'?'; 256]);
            for (i, b) in t.iter_mut().enumerate().take(0x80) {
                *b = i as u8;
            }
            MapBuilder {
                forward: Table::Bytes(t.clone()),
                backward: Table::Bytes(t),
            }
        }
    }

    /// One entry: `src` (a hexadecimal byte) maps to `dst` (a hexadecimal
    /// byte, or the hexadecimal bytes of a UTF-8 sequence of a character up
    /// to U+FFFF when mapping to `utf-8`).
    pub fn entry(&mut self, src: &str, dst: &str) -> Result<(), MapError> {
        let src = hex(src).filter(|&v| v <= 255).ok_or(MapError::Source)? as u8;
        match (&mut self.forward, &mut self.backward) {
            (Table::ToUtf8(fwd), Table::FromUtf8(back)) => {
                if dst.len() % 2 != 0 || dst.is_empty() || dst.len() / 2 > MAX_MAPPED_UTF8 {
                    return Err(MapError::Destination);
                }
                let mut seq = Vec::with_capacity(dst.len() / 2);
                for i in (0..dst.len()).step_by(2) {
                    let byte = dst
                        .get(i..i + 2)
                        .and_then(hex)
                        .ok_or(MapError::Destination)?;
                    seq.push(byte as u8);
                }
                let (n, _) = utf8_decode(&seq);
                if n > 0xffff {
                    return Err(MapError::Destination);
                }
                let page = back[(n >> 8) as usize].get_or_insert_with(|| Box::new([0u8; 256]));
                page[(n & 0xff) as usize] = src;
                fwd[usize::from(src)] = seq;
            }
            (Table::Bytes(fwd), Table::Bytes(back)) => {
                let d = hex(dst)
                    .filter(|&v| v <= 255)
                    .ok_or(MapError::Destination)? as u8;
                fwd[usize::from(src)] = d;
                back[usize::from(d)] = src;
            }
            _ => unreachable!("a builder's two tables are of matching kinds"),
        }
        Ok(())
    }

    /// The tables: SRC → DST and DST → SRC.
    pub fn finish(self) -> (Table, Table) {
        (self.forward, self.backward)
    }
}

/// A charset a configuration names (`charset`, `source_charset`,
/// `charset_map`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Charset {
    /// The name as first written (compared case-insensitively).
    pub name: String,
    /// Whether it is `utf-8`.
    pub utf8: bool,
}

/// The tables of one `charset_map`, between two charsets of the list.
#[derive(Clone, Debug)]
pub struct Map {
    /// The left charset's index.
    pub src: usize,
    /// The right charset's index.
    pub dst: usize,
    /// Left → right.
    pub forward: Arc<Table>,
    /// Right → left.
    pub backward: Arc<Table>,
}

/// Every charset the configuration names, and the maps between them: what
/// nginx's charset module keeps in its main configuration.
#[derive(Clone, Debug, Default)]
pub struct Charsets {
    /// The charsets, in the order first named.
    pub list: Vec<Charset>,
    /// The `charset_map` tables.
    pub maps: Vec<Map>,
}

impl Charsets {
    /// The index of `name` (any case), adding it if new
    /// (`ngx_http_add_charset`).
    pub fn add(&mut self, name: &str) -> usize {
        if let Some(i) = self.find(name) {
            return i;
        }
        self.list.push(Charset {
            name: name.to_string(),
            utf8: name.eq_ignore_ascii_case("utf-8"),
        });
        self.list.len() - 1
    }

    /// The index of `name`, any case (`ngx_http_get_charset`).
    pub fn find(&self, name: &str) -> Option<usize> {
        self.list
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// Whether a `charset_map` joins `a` and `b`, either way round.
    pub fn has_map(&self, a: usize, b: usize) -> bool {
        self.maps
            .iter()
            .any(|m| (m.src == a && m.dst == b) || (m.src == b && m.dst == a))
    }

    /// The table that recodes from `src` to `dst`, if a map joins them.
    pub fn table(&self, src: usize, dst: usize) -> Option<Arc<Table>> {
        self.maps.iter().find_map(|m| {
            if m.src == src && m.dst == dst {
                Some(m.forward.clone())
            } else if m.src == dst && m.dst == src {
                Some(m.backward.clone())
            } else {
                None
            }
        })
    }
}

/// Recodes a body piece by piece with one [`Table`]. A UTF-8 sequence cut
/// between two pieces is kept until the next one; one still incomplete at
/// the end is dropped, as nginx drops it.
#[derive(Clone)]
pub struct Recoder {
    table: Arc<Table>,
    /// The start of a UTF-8 sequence the last piece ended in.
    saved: Vec<u8>,
}

impl std::fmt::Debug for Recoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recoder").finish_non_exhaustive()
    }
}

impl Recoder {
    /// A recoder with `table`.
    pub fn new(table: Arc<Table>) -> Recoder {
        Recoder {
            table,
            saved: Vec::new(),
        }
    }

    /// Whether the output has as many bytes as the input (8-bit to 8-bit):
    /// the response keeps its length (and its ranges).
    pub fn keeps_length(&self) -> bool {
        matches!(*self.table, Table::Bytes(_))
    }

    /// Recodes `input`, appending to `out`.
    pub fn recode(&mut self, input: &[u8], out: &mut Vec<u8>) {
        match &*self.table {
            Table::Bytes(t) => out.extend(input.iter().map(|&b| t[usize::from(b)])),
            Table::ToUtf8(t) => {
                for &b in input {
                    out.extend_from_slice(&t[usize::from(b)]);
                }
            }
            Table::FromUtf8(pages) => {
                let joined;
                let data: &[u8] = if self.saved.is_empty() {
                    input
                } else {
                    let mut v = std::mem::take(&mut self.saved);
                    v.extend_from_slice(input);
                    joined = v;
                    &joined
                };
                let rest = from_utf8(pages, data, out);
                self.saved = rest.to_vec();
            }
        }
    }
}

/// Recodes UTF-8 `data` with `pages` into `out`; returns the incomplete
/// sequence at the end, if any.
fn from_utf8<'d>(pages: &[Option<Box<[u8; 256]>>], data: &'d [u8], out: &mut Vec<u8>) -> &'d [u8] {
    let mut i = 0;
    while i < data.len() {
        let b = data[i];
        if b < 0x80 {
            out.push(b);
            i += 1;
            continue;
        }
        let (n, used) = utf8_decode(&data[i..]);
        if n == UTF8_INCOMPLETE {
            return &data[i..];
        }
        i += used;
        if n < 0x10000 {
            let byte = pages[(n >> 8) as usize]
                .as_ref()
                .map_or(0, |p| p[(n & 0xff) as usize]);
            if byte != 0 {
                out.push(byte);
                continue;
            }
        } else if n > 0x10ffff {
            out.push(b'?');
            continue;
        }
        out.extend_from_slice(format!("&#{n};").as_bytes());
    }
    &[]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_as_nginx() {
        assert_eq!(utf8_decode("ф".as_bytes()), (0x444, 2));
        assert_eq!(utf8_decode("€".as_bytes()), (0x20ac, 3));
        assert_eq!(utf8_decode("😀".as_bytes()), (0x1f600, 4));
        assert_eq!(utf8_decode(&[0xd1]), (UTF8_INCOMPLETE, 0));
        assert_eq!(utf8_decode(&[0x80, 0x41]), (UTF8_INVALID, 1));
        assert_eq!(utf8_decode(&[0xd1, 0x41]), (UTF8_INVALID, 2));
        // Overlong: 0xe0 0x80 0x80 is U+0000 in three bytes.
        assert_eq!(utf8_decode(&[0xe0, 0x80, 0x80]), (UTF8_INVALID, 3));
        assert_eq!(utf8_length("aфb".as_bytes()), 3);
        assert_eq!(utf8_length(&[b'a', 0xff, b'b']), 3);
    }

    fn koi_map() -> (Table, Table) {
        // KOI8-R 0xC1 is "а" (U+0430, D0 B0).
        let mut b = MapBuilder::new(true);
        b.entry("C1", "D0B0").unwrap();
        b.finish()
    }

    #[test]
    fn eight_bit_tables_map_both_ways() {
        let mut b = MapBuilder::new(false);
        b.entry("58", "59").unwrap();
        let (fwd, back) = b.finish();
        let mut r = Recoder::new(Arc::new(fwd));
        assert!(r.keeps_length());
        let mut out = Vec::new();
        r.recode(b"XaX\xff", &mut out);
        assert_eq!(out, b"YaY?");
        let mut out = Vec::new();
        Recoder::new(Arc::new(back)).recode(b"YX", &mut out);
        assert_eq!(out, b"XX");
    }

    #[test]
    fn to_and_from_utf8() {
        let (fwd, back) = koi_map();
        let mut out = Vec::new();
        Recoder::new(Arc::new(fwd)).recode(b"a\xc1\xc2", &mut out);
        assert_eq!(out, "aа?".as_bytes());
        let mut r = Recoder::new(Arc::new(back));
        assert!(!r.keeps_length());
        let mut out = Vec::new();
        // "а", then "ф" (no byte: an entity), an emoji (an entity), and
        // an invalid byte.
        r.recode("аф😀".as_bytes(), &mut out);
        r.recode(b"\x80!", &mut out);
        assert_eq!(out, b"\xc1&#1092;&#128512;?!");
    }

    #[test]
    fn a_sequence_cut_between_pieces_is_joined() {
        let (_, back) = koi_map();
        let mut r = Recoder::new(Arc::new(back));
        let mut out = Vec::new();
        r.recode(b"x\xd0", &mut out);
        assert_eq!(out, b"x");
        r.recode(b"\xb0y", &mut out);
        assert_eq!(out, b"x\xc1y");
    }

    #[test]
    fn map_entries_are_checked() {
        let mut b = MapBuilder::new(false);
        assert_eq!(b.entry("100", "41"), Err(MapError::Source));
        assert_eq!(b.entry("zz", "41"), Err(MapError::Source));
        assert_eq!(b.entry("41", "1FF"), Err(MapError::Destination));
        let mut u = MapBuilder::new(true);
        // ASCII is not a valid target of a map to UTF-8; neither is an odd
        // number of digits or a character past U+FFFF.
        assert_eq!(u.entry("C1", "41"), Err(MapError::Destination));
        assert_eq!(u.entry("C1", "D0B"), Err(MapError::Destination));
        assert_eq!(u.entry("C1", "F09F9880"), Err(MapError::Destination));
    }

    #[test]
    fn charsets_are_found_in_any_case() {
        let mut c = Charsets::default();
        assert_eq!(c.add("UTF-8"), 0);
        assert_eq!(c.add("utf-8"), 0);
        assert_eq!(c.add("koi8-r"), 1);
        assert!(c.list[0].utf8);
        let (fwd, back) = koi_map();
        c.maps.push(Map {
            src: 1,
            dst: 0,
            forward: Arc::new(fwd),
            backward: Arc::new(back),
        });
        assert!(c.has_map(0, 1));
        assert!(matches!(*c.table(0, 1).unwrap(), Table::FromUtf8(_)));
        assert!(matches!(*c.table(1, 0).unwrap(), Table::ToUtf8(_)));
        assert!(c.table(0, 0).is_none());
    }
}
