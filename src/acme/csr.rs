//! The certificate request a finalized order sends (RFC 8555 §7.4, a
//! PKCS#10 CSR, RFC 2986): the identifiers in a subjectAltName extension
//! request, the subject empty unless `common_name_in_csr` is on, signed
//! with the new certificate's key — what nginx-acme's
//! `make_certificate_request` makes with OpenSSL, written here in DER.

use std::net::IpAddr;

use super::keys::Key;
use crate::config::acme_model::Identifier;
use crate::tls::der::item;

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
const OCTET_STRING: u8 = 0x04;
const UTF8_STRING: u8 = 0x0c;
const INTEGER: u8 = 0x02;
const BIT_STRING: u8 = 0x03;
/// `[0]` constructed: the request's attributes.
const ATTRIBUTES: u8 = 0xa0;
/// GeneralName `dNSName` `[2]` and `iPAddress` `[7]`, primitive.
const DNS_NAME: u8 = 0x82;
const IP_ADDRESS: u8 = 0x87;

/// id-at-commonName (2.5.4.3).
const OID_COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
/// pkcs-9-at-extensionRequest (1.2.840.113549.1.9.14).
const OID_EXTENSION_REQUEST: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x0e];
/// id-ce-subjectAltName (2.5.29.17).
const OID_SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];

/// The DER of a CSR for `identifiers`, signed by `key`; with
/// `common_name`, the subject's CN is `common_name`.
pub fn request(
    identifiers: &[Identifier],
    common_name: Option<&str>,
    key: &Key,
) -> Result<Vec<u8>, String> {
    let subject = match common_name {
        Some(cn) => {
            let atv = item(
                SEQUENCE,
                &[item(OID, OID_COMMON_NAME), item(UTF8_STRING, cn.as_bytes())].concat(),
            );
            item(SEQUENCE, &item(SET, &atv))
        }
        None => item(SEQUENCE, &[]),
    };
    let mut names = Vec::new();
    for id in identifiers {
        match id {
            Identifier::Dns(n) => names.extend(item(DNS_NAME, n.as_bytes())),
            Identifier::Ip(a) => {
                let bytes = match a.parse::<IpAddr>() {
                    Ok(IpAddr::V4(v4)) => v4.octets().to_vec(),
                    Ok(IpAddr::V6(v6)) => v6.octets().to_vec(),
                    Err(_) => return Err(format!("invalid IP address \"{a}\"")),
                };
                names.extend(item(IP_ADDRESS, &bytes));
            }
        }
    }
    let san = item(
        SEQUENCE,
        &[
            item(OID, OID_SUBJECT_ALT_NAME),
            item(OCTET_STRING, &item(SEQUENCE, &names)),
        ]
        .concat(),
    );
    let extensions = item(SEQUENCE, &san);
    let attribute = item(
        SEQUENCE,
        &[item(OID, OID_EXTENSION_REQUEST), item(SET, &extensions)].concat(),
    );
    let info = item(
        SEQUENCE,
        &[
            item(INTEGER, &[0]),
            subject,
            key.spki()?,
            item(ATTRIBUTES, &attribute),
        ]
        .concat(),
    );
    let (alg, sig) = key.sign_x509(&info)?;
    let mut bits = vec![0u8];
    bits.extend(sig);
    Ok(item(
        SEQUENCE,
        &[info, alg, item(BIT_STRING, &bits)].concat(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::acme_model::KeyKind;
    use crate::tls::der::Reader;

    #[test]
    fn a_request_names_its_identifiers_and_verifies() {
        let key = Key::generate(KeyKind::Ecdsa(256)).unwrap();
        let ids = [
            Identifier::Dns("example.test".into()),
            Identifier::Ip("127.0.0.1".into()),
        ];
        let der = request(&ids, Some("example.test"), &key).unwrap();
        let mut top = Reader::new(&der).nested(SEQUENCE).unwrap();
        let info = top.read(SEQUENCE).unwrap();
        let _alg = top.read(SEQUENCE).unwrap();
        let sig = top.read(BIT_STRING).unwrap();
        let spki = key.spki().unwrap();
        let mut r = Reader::new(&spki).nested(SEQUENCE).unwrap();
        let _ = r.read(SEQUENCE).unwrap();
        let point = crate::tls::der::bit_string_bytes(&r.read(BIT_STRING).unwrap()).unwrap();
        let pk = aws_lc_rs::signature::UnparsedPublicKey::new(
            &aws_lc_rs::signature::ECDSA_P256_SHA256_ASN1,
            point,
        );
        pk.verify(info.raw, &sig.content[1..]).unwrap();
        let text = String::from_utf8_lossy(&der);
        assert!(text.contains("example.test"));
        assert!(der.windows(4).any(|w| w == [127, 0, 0, 1]));
    }
}
