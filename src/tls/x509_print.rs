//! A certificate's fields as OpenSSL prints them, for nginx's
//! `$ssl_client_*` variables: names as `X509_NAME_print_ex(…,
//! XN_FLAG_RFC2253)` (`$ssl_client_s_dn`) and `X509_NAME_oneline`
//! (`$ssl_client_s_dn_legacy`), the serial as `i2a_ASN1_INTEGER`, times as
//! `ASN1_TIME_print`, the certificate as `PEM_write_bio_X509`; and whether
//! OpenSSL's `ssl_client` purpose takes it. The fields are
//! [`CertFields`]'s; what cannot be read is `None`, and the variables are
//! then empty.

use super::der::{self, Reader};
use super::x509::CertFields;

/// `id-ce-keyUsage` (2.5.29.15).
const OID_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x0f];
/// `id-ce-extKeyUsage` (2.5.29.37).
const OID_EXT_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x25];
/// `id-kp-clientAuth` (1.3.6.1.5.5.7.3.2).
const OID_CLIENT_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02];
/// `anyExtendedKeyUsage` (2.5.29.37.0).
const OID_ANY_EKU: &[u8] = &[0x55, 0x1d, 0x25, 0x00];

/// Whether OpenSSL's `ssl_client` purpose accepts the certificate as a
/// client's own (`check_purpose_ssl_client`): an extended key usage, if
/// any, allows client authentication, and a key usage, if any, digital
/// signatures or key agreement. `None`: unreadable.
pub fn client_purpose(cert: &CertFields<'_>) -> Option<bool> {
    if let Some(ku) = cert.extension(OID_KEY_USAGE) {
        let bits = der::single(ku, der::BIT_STRING)?;
        // digitalSignature (bit 0) or keyAgreement (bit 4).
        if bits.content.get(1).is_none_or(|&b| b & 0x88 == 0) {
            return Some(false);
        }
    }
    if let Some(eku) = cert.extension(OID_EXT_KEY_USAGE) {
        let mut purposes = Reader::new(der::single(eku, der::SEQUENCE)?.content);
        let mut allowed = false;
        while let Some(p) = purposes.read(der::OID) {
            allowed |= p.content == OID_CLIENT_AUTH || p.content == OID_ANY_EKU;
        }
        if !allowed {
            return Some(false);
        }
    }
    Some(true)
}

/// One attribute of a name: the RDN it belongs to, its type and its value
/// (tag, content, whole DER).
struct Entry<'a> {
    set: usize,
    oid: &'a [u8],
    tag: u8,
    value: &'a [u8],
    whole: &'a [u8],
}

/// The attributes of a DER `Name`, in order, flattened as OpenSSL keeps
/// them (each with the index of its RDN).
fn entries(name: &[u8]) -> Option<Vec<Entry<'_>>> {
    let mut rdns = Reader::new(der::single(name, der::SEQUENCE)?.content);
    let mut out = Vec::new();
    let mut set = 0;
    while !rdns.is_empty() {
        let mut attrs = Reader::new(rdns.read(SET)?.content);
        while !attrs.is_empty() {
            let mut atv = Reader::new(attrs.read(der::SEQUENCE)?.content);
            let oid = atv.read(der::OID)?.content;
            let value = atv.any()?;
            out.push(Entry {
                set,
                oid,
                tag: value.tag,
                value: value.content,
                whole: value.raw,
            });
        }
        set += 1;
    }
    Some(out)
}

/// `SET`.
const SET: u8 = 0x31;

/// OpenSSL's short names of the attribute types certificates carry
/// (`OBJ_nid2sn`), by DER-encoded OID.
const SHORT_NAMES: &[(&[u8], &str)] = &[
    (&[0x55, 0x04, 0x03], "CN"),
    (&[0x55, 0x04, 0x04], "SN"),
    (&[0x55, 0x04, 0x05], "serialNumber"),
    (&[0x55, 0x04, 0x06], "C"),
    (&[0x55, 0x04, 0x07], "L"),
    (&[0x55, 0x04, 0x08], "ST"),
    (&[0x55, 0x04, 0x09], "street"),
    (&[0x55, 0x04, 0x0a], "O"),
    (&[0x55, 0x04, 0x0b], "OU"),
    (&[0x55, 0x04, 0x0c], "title"),
    (&[0x55, 0x04, 0x0d], "description"),
    (&[0x55, 0x04, 0x0f], "businessCategory"),
    (&[0x55, 0x04, 0x10], "postalAddress"),
    (&[0x55, 0x04, 0x11], "postalCode"),
    (&[0x55, 0x04, 0x12], "postOfficeBox"),
    (&[0x55, 0x04, 0x14], "telephoneNumber"),
    (&[0x55, 0x04, 0x29], "name"),
    (&[0x55, 0x04, 0x2a], "GN"),
    (&[0x55, 0x04, 0x2b], "initials"),
    (&[0x55, 0x04, 0x2c], "generationQualifier"),
    (&[0x55, 0x04, 0x2d], "x500UniqueIdentifier"),
    (&[0x55, 0x04, 0x2e], "dnQualifier"),
    (&[0x55, 0x04, 0x41], "pseudonym"),
    (&[0x55, 0x04, 0x48], "role"),
    (&[0x55, 0x04, 0x61], "organizationIdentifier"),
    (
        &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x01],
        "emailAddress",
    ),
    (
        &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x02],
        "unstructuredName",
    ),
    (
        &[0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x01],
        "UID",
    ),
    (
        &[0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x19],
        "DC",
    ),
    (
        &[
            0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x3c, 0x02, 0x01, 0x01,
        ],
        "jurisdictionL",
    ),
    (
        &[
            0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x3c, 0x02, 0x01, 0x02,
        ],
        "jurisdictionST",
    ),
    (
        &[
            0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x3c, 0x02, 0x01, 0x03,
        ],
        "jurisdictionC",
    ),
];

fn short_name(oid: &[u8]) -> Option<&'static str> {
    SHORT_NAMES.iter().find(|(o, _)| *o == oid).map(|(_, n)| *n)
}

/// An OID in dotted decimal (`OBJ_obj2txt(…, 1)`).
fn dotted(oid: &[u8]) -> String {
    let mut arcs: Vec<u128> = Vec::new();
    let mut acc: u128 = 0;
    for &b in oid {
        acc = (acc << 7) | u128::from(b & 0x7f);
        if b & 0x80 == 0 {
            arcs.push(acc);
            acc = 0;
        }
    }
    let mut out = String::new();
    if let Some(&first) = arcs.first() {
        let (a, b) = match first {
            0..=39 => (0, first),
            40..=79 => (1, first - 40),
            _ => (2, first - 80),
        };
        out = format!("{a}.{b}");
    }
    for arc in arcs.iter().skip(1) {
        out.push_str(&format!(".{arc}"));
    }
    out
}

/// The characters of a string value by its type's width (OpenSSL's
/// `tag2nbyte`): 1 byte, 2 (BMPString), 4 (UniversalString); UTF8String
/// is read a byte at a time, as OpenSSL does when it prints UTF-8 as
/// UTF-8. `None`: not a string type (printed as a DER dump).
fn chars(tag: u8, value: &[u8]) -> Option<Vec<u32>> {
    let width = match tag {
        0x0c | 0x12 | 0x13 | 0x14 | 0x16 | 0x17 | 0x18 | 0x1a => 1,
        0x1c => 4,
        0x1e => 2,
        _ => return None,
    };
    if value.len() % width != 0 {
        return None;
    }
    Some(
        value
            .chunks(width)
            .map(|c| c.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b)))
            .collect(),
    )
}

/// OpenSSL's `char_type` flags for ASCII (`crypto/asn1/charmap.h`): 1 is
/// an RFC 2253 special, 2 a control character, 0x20 special first, 0x40
/// special last.
fn char_flags(c: u8) -> u8 {
    match c {
        0x00..=0x1f | 0x7f => 2,
        b' ' => 0x60,
        b'#' => 0x20,
        b'"' | b'+' | b',' | b';' | b'<' | b'>' | b'\\' => 1,
        _ => 0,
    }
}

/// One byte of an RFC 2253 value, escaped as `do_esc_char` escapes it
/// under `ASN1_STRFLGS_RFC2253`; `edge` is 0x20 for the first character,
/// 0x40 for the last.
fn esc_2253(b: u8, edge: u8, out: &mut String) {
    if b > 0x7f {
        out.push_str(&format!("\\{b:02X}"));
        return;
    }
    let f = char_flags(b) & (1 | 2 | edge);
    if f & (1 | 0x20 | 0x40) != 0 {
        out.push('\\');
        out.push(char::from(b));
    } else if f & 2 != 0 {
        out.push_str(&format!("\\{b:02X}"));
    } else {
        out.push(char::from(b));
    }
}

/// A value as `do_print_ex` prints it under `ASN1_STRFLGS_RFC2253`.
fn value_2253(e: &Entry<'_>, known: bool, out: &mut String) {
    let chars = if known { chars(e.tag, e.value) } else { None };
    let Some(chars) = chars else {
        out.push('#');
        for b in e.whole {
            out.push_str(&format!("{b:02X}"));
        }
        return;
    };
    let n = chars.len();
    for (i, &c) in chars.iter().enumerate() {
        // The last character's flag replaces the first's (`do_buf`).
        let edge = if i + 1 == n {
            0x40
        } else if i == 0 {
            0x20
        } else {
            0
        };
        if e.tag == 0x0c {
            esc_2253(c as u8, edge, out);
            continue;
        }
        let mut utf8 = [0u8; 4];
        let encoded = char::from_u32(c)
            .unwrap_or('\u{fffd}')
            .encode_utf8(&mut utf8);
        for &b in encoded.as_bytes() {
            esc_2253(b, edge, out);
        }
    }
}

/// A name as `X509_NAME_print_ex(…, XN_FLAG_RFC2253)` prints it: the
/// RDNs last first, `,` between them, `+` within one, short names, values
/// escaped as RFC 2253 says, an attribute of unknown type by its OID with
/// its value dumped (`#` and the DER in hex).
pub fn rfc2253(name: &[u8]) -> Option<String> {
    let entries = entries(name)?;
    let mut out = String::new();
    let mut prev = None;
    for e in entries.iter().rev() {
        if let Some(p) = prev {
            out.push(if p == e.set { '+' } else { ',' });
        }
        let sn = short_name(e.oid);
        match sn {
            Some(n) => out.push_str(n),
            None => out.push_str(&dotted(e.oid)),
        }
        out.push('=');
        value_2253(e, sn.is_some(), &mut out);
        prev = Some(e.set);
    }
    Some(out)
}

/// A name as `X509_NAME_oneline` prints it: `/C=XX/O=…`, `+` within an
/// RDN, bytes outside printable ASCII as `\xHH`, `/` and `+` escaped.
pub fn oneline(name: &[u8]) -> Option<String> {
    let entries = entries(name)?;
    let mut out = String::new();
    let mut prev = None;
    for e in &entries {
        out.push(if prev == Some(e.set) { '+' } else { '/' });
        match short_name(e.oid) {
            Some(n) => out.push_str(n),
            None => out.push_str(&dotted(e.oid)),
        }
        out.push('=');
        // A GeneralString of four-byte characters whose first three bytes
        // are zero is printed a character a byte (`gs_doit`).
        let narrow = e.tag == 0x1b
            && e.value.len() % 4 == 0
            && e.value.chunks(4).all(|c| c[..3].iter().all(|&b| b == 0));
        for (j, &b) in e.value.iter().enumerate() {
            if narrow && j % 4 != 3 {
                continue;
            }
            if !(b' '..=b'~').contains(&b) {
                out.push_str(&format!("\\x{b:02X}"));
            } else {
                if b == b'/' || b == b'+' {
                    out.push('\\');
                }
                out.push(char::from(b));
            }
        }
        prev = Some(e.set);
    }
    Some(out)
}

/// The serial number as `i2a_ASN1_INTEGER` prints it: upper-case hex of
/// its magnitude, `-` before a negative one, `00` for zero.
pub fn serial_hex(content: &[u8]) -> String {
    let negative = content.first().is_some_and(|&b| b & 0x80 != 0);
    let mut magnitude = content.to_vec();
    if negative {
        // Two's complement: invert and add one.
        for b in magnitude.iter_mut() {
            *b = !*b;
        }
        for b in magnitude.iter_mut().rev() {
            let (v, carry) = b.overflowing_add(1);
            *b = v;
            if !carry {
                break;
            }
        }
    }
    let start = magnitude
        .iter()
        .position(|&b| b != 0)
        .unwrap_or(magnitude.len());
    let digits = &magnitude[start..];
    let mut out = String::from(if negative { "-" } else { "" });
    if digits.is_empty() {
        out.push_str("00");
    }
    for b in digits {
        out.push_str(&format!("{b:02X}"));
    }
    out
}

/// The month abbreviations `ASN1_TIME_print` uses.
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A time as `ASN1_TIME_print` prints it: `Jan  1 00:00:00 2015 GMT`
/// (certificates carry no fraction of a second, RFC 5280 §4.1.2.5).
pub fn time_print(secs: i64) -> String {
    let days = secs.div_euclid(86400);
    let rem = secs.rem_euclid(86400);
    let (year, month, day) = civil_from_days(days);
    let name = MONTHS[usize::try_from(month - 1).unwrap_or(0)];
    format!(
        "{name} {day:2} {:02}:{:02}:{:02} {year} GMT",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of a day since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The certificate as `PEM_write_bio_X509` writes it: base64 in lines of
/// 64 characters between the `CERTIFICATE` lines, each line ended by LF.
pub fn pem(der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

/// The SHA-1 of the DER in lower-case hex (`X509_digest` with SHA-1, as
/// `ngx_hex_dump` prints it).
pub fn fingerprint(der: &[u8]) -> String {
    use sha1::Digest;
    let digest = sha1::Sha1::digest(der);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `Name` of one RDN per (OID, tag, value) given, RDNs marked by
    /// `set`.
    fn name(attrs: &[(usize, &[u8], u8, &[u8])]) -> Vec<u8> {
        fn tlv(tag: u8, body: &[u8]) -> Vec<u8> {
            assert!(body.len() < 128);
            let mut v = vec![tag, body.len() as u8];
            v.extend_from_slice(body);
            v
        }
        let mut sets: Vec<Vec<u8>> = Vec::new();
        for &(set, oid, tag, value) in attrs {
            let mut atv = tlv(0x06, oid);
            atv.extend(tlv(tag, value));
            let atv = tlv(0x30, &atv);
            if sets.len() <= set {
                sets.push(Vec::new());
            }
            sets[set].extend(atv);
        }
        let body: Vec<u8> = sets.iter().flat_map(|s| tlv(0x31, s)).collect();
        tlv(0x30, &body)
    }

    const CN: &[u8] = &[0x55, 0x04, 0x03];
    const O: &[u8] = &[0x55, 0x04, 0x0a];
    const C: &[u8] = &[0x55, 0x04, 0x06];

    #[test]
    fn names_print_as_openssl_prints_them() {
        let n = name(&[
            (0, C, 0x13, b"XX"),
            (1, O, 0x0c, b"a, b"),
            (2, CN, 0x0c, b"x"),
        ]);
        assert_eq!(rfc2253(&n).unwrap(), "CN=x,O=a\\, b,C=XX");
        assert_eq!(oneline(&n).unwrap(), "/C=XX/O=a, b/CN=x");
    }

    #[test]
    fn rfc2253_escapes_specials_edges_controls_and_high_bytes() {
        let n = name(&[(0, CN, 0x0c, " #a\"b;c<d>e+f\\g\x01 ".as_bytes())]);
        assert_eq!(
            rfc2253(&n).unwrap(),
            "CN=\\ #a\\\"b\\;c\\<d\\>e\\+f\\\\g\\01\\ "
        );
        let n = name(&[(0, CN, 0x0c, "#Ü".as_bytes())]);
        assert_eq!(rfc2253(&n).unwrap(), "CN=\\#\\C3\\9C");
        // A lone `#` is the last character, not the first (`do_buf`).
        let n = name(&[(0, CN, 0x0c, b"#")]);
        assert_eq!(rfc2253(&n).unwrap(), "CN=#");
        // Latin-1 in a T61String is converted to UTF-8 first.
        let n = name(&[(0, CN, 0x14, b"\xe9")]);
        assert_eq!(rfc2253(&n).unwrap(), "CN=\\C3\\A9");
        assert_eq!(oneline(&n).unwrap(), "/CN=\\xE9");
    }

    #[test]
    fn multi_valued_rdns_and_unknown_types() {
        let uid: &[u8] = &[0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x01];
        let n = name(&[(0, uid, 0x0c, b"u1"), (0, CN, 0x0c, b"a/b+c")]);
        assert_eq!(rfc2253(&n).unwrap(), "CN=a/b\\+c+UID=u1");
        assert_eq!(oneline(&n).unwrap(), "/UID=u1+CN=a\\/b\\+c");
        let odd: &[u8] = &[0x2a, 0x03];
        let n = name(&[(0, odd, 0x0c, b"v")]);
        assert_eq!(rfc2253(&n).unwrap(), "1.2.3=#0C0176");
        assert_eq!(oneline(&n).unwrap(), "/1.2.3=v");
    }

    #[test]
    fn the_odd_fixture_prints_as_nginx_prints_it() {
        use rustls::pki_types::{CertificateDer, pem::PemObject};
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls/client-odd.crt");
        let der = CertificateDer::from_pem_file(&path).unwrap();
        let f = CertFields::parse(&der).unwrap();
        assert_eq!(
            rfc2253(f.subject).unwrap(),
            "emailAddress=odd@example.com,CN=odd \\\"one\\\"\\; x=y+UID=u1,OU=\\C3\\9Cn\\C3\\AFcode #1,O=nowait\\, tests,C=XX"
        );
        assert_eq!(
            oneline(f.subject).unwrap(),
            "/C=XX/O=nowait, tests/OU=\\xC3\\x9Cn\\xC3\\xAFcode #1/UID=u1+CN=odd \"one\"; x=y/emailAddress=odd@example.com"
        );
        assert_eq!(rfc2253(f.issuer).unwrap(), "CN=nowait test CA");
        assert_eq!(oneline(f.issuer).unwrap(), "/CN=nowait test CA");
        assert_eq!(client_purpose(&f), Some(true));
    }

    #[test]
    fn serials_and_times() {
        assert_eq!(serial_hex(&[0x10, 0x02]), "1002");
        assert_eq!(serial_hex(&[0x00, 0x8f, 0x01]), "8F01");
        assert_eq!(serial_hex(&[0x00]), "00");
        assert_eq!(serial_hex(&[0xff]), "-01");
        assert_eq!(time_print(1420070400), "Jan  1 00:00:00 2015 GMT");
        assert_eq!(time_print(4319737385), "Nov 20 23:03:05 2106 GMT");
        assert_eq!(time_print(951782400), "Feb 29 00:00:00 2000 GMT");
    }

    #[test]
    fn pem_lines_are_64_characters() {
        let p = pem(&[0u8; 100]);
        let lines: Vec<&str> = p.lines().collect();
        assert_eq!(lines[0], "-----BEGIN CERTIFICATE-----");
        assert_eq!(lines[1].len(), 64);
        assert_eq!(lines.last(), Some(&"-----END CERTIFICATE-----"));
        assert!(p.ends_with('\n'));
    }
}
