//! An `OCSPResponse` (RFC 6960 §4.2.1) read from its DER: what
//! `d2i_OCSP_RESPONSE` decodes (the status and the response bytes), and
//! the basic response inside (`OCSP_response_get1_basic`): who signed it,
//! the single responses with their status and times, the signature and
//! the certificates sent with it.

use super::CertId;
use crate::tls::der::{self, Reader};

/// `id-pkix-ocsp-basic` (1.3.6.1.5.5.7.48.1.1).
const OID_BASIC: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01, 0x01];

/// `responseStatus` of a response that answers (`successful`).
pub const SUCCESSFUL: u8 = 0;

/// Why a response could not be decoded, in OpenSSL's ASN.1 words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Nothing to read (OpenSSL queues no reason for an empty input).
    Empty,
    /// Not an `OCSPResponse` at all.
    WrongTag,
    /// It ends before its length says.
    TooLong,
    /// Something inside is not what the type says.
    Nested,
}

impl DecodeError {
    /// OpenSSL's reason, when it gives one.
    pub fn reason(self) -> Option<&'static str> {
        match self {
            DecodeError::Empty => None,
            DecodeError::WrongTag => Some("wrong tag"),
            DecodeError::TooLong => Some("too long"),
            DecodeError::Nested => Some("nested asn1 error"),
        }
    }
}

/// A decoded response.
#[derive(Clone, Debug)]
pub struct Response<'a> {
    /// `responseStatus` (0 `successful` … 6 `unauthorized`).
    pub status: u8,
    /// `responseBytes`: the response type and its bytes, when present.
    bytes: Option<(&'a [u8], &'a [u8])>,
}

/// `OCSP_response_status_str`: the name of a `responseStatus`.
pub fn status_name(status: u8) -> &'static str {
    match status {
        0 => "successful",
        1 => "malformedrequest",
        2 => "internalerror",
        3 => "trylater",
        5 => "sigrequired",
        6 => "unauthorized",
        _ => "(UNKNOWN)",
    }
}

/// Decodes `bytes` as an `OCSPResponse` (its status and response bytes;
/// the basic response inside is decoded by [`Response::basic`]).
pub fn parse(bytes: &[u8]) -> Result<Response<'_>, DecodeError> {
    match bytes.first() {
        None => return Err(DecodeError::Empty),
        Some(&der::SEQUENCE) => {}
        Some(_) => return Err(DecodeError::WrongTag),
    }
    let outer = der::single(bytes, der::SEQUENCE).ok_or(DecodeError::TooLong)?;
    let mut r = Reader::new(outer.content);
    let status = r.read(der::ENUMERATED).ok_or(DecodeError::Nested)?;
    let status = match status.content {
        [s] => *s,
        _ => return Err(DecodeError::Nested),
    };
    let bytes = match r.optional(der::context(0)) {
        Some(b) => {
            let rb = der::single(b.content, der::SEQUENCE).ok_or(DecodeError::Nested)?;
            let mut rb = Reader::new(rb.content);
            let kind = rb.read(der::OID).ok_or(DecodeError::Nested)?.content;
            let octets = rb
                .read(der::OCTET_STRING)
                .ok_or(DecodeError::Nested)?
                .content;
            Some((kind, octets))
        }
        None => None,
    };
    if !r.is_empty() {
        return Err(DecodeError::Nested);
    }
    Ok(Response { status, bytes })
}

/// Who signed a basic response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResponderId<'a> {
    /// `byName`: the signer's subject (the whole Name item).
    ByName(&'a [u8]),
    /// `byKey`: SHA-1 of the signer's public key.
    ByKey(&'a [u8]),
}

/// `certStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CertStatus {
    /// `good`.
    Good,
    /// `revoked`.
    Revoked,
    /// `unknown`.
    Unknown,
}

impl CertStatus {
    /// `OCSP_cert_status_str`.
    pub fn name(self) -> &'static str {
        match self {
            CertStatus::Good => "good",
            CertStatus::Revoked => "revoked",
            CertStatus::Unknown => "unknown",
        }
    }
}

/// One `SingleResponse`.
#[derive(Clone, Debug)]
pub struct Single<'a> {
    /// The CertID's hash algorithm (its OID's content).
    hash_alg: &'a [u8],
    /// The CertID's issuer name hash.
    pub name_hash: &'a [u8],
    /// The CertID's issuer key hash.
    pub key_hash: &'a [u8],
    /// The CertID's serial number.
    serial: &'a [u8],
    /// The certificate's status.
    pub status: CertStatus,
    /// `thisUpdate`, seconds since the epoch.
    pub this_update: i64,
    /// `nextUpdate`, when given.
    pub next_update: Option<i64>,
}

impl Single<'_> {
    /// Whether it answers for `id` (`OCSP_id_cmp`: the hash algorithm,
    /// both hashes and the serial).
    pub fn is(&self, id: &CertId) -> bool {
        self.hash_alg == super::OID_SHA1 && self.same_issuer_as(id) && self.serial == id.serial
    }

    /// Whether its issuer is `id`'s (`OCSP_id_issuer_cmp`).
    pub fn same_issuer_as(&self, id: &CertId) -> bool {
        self.hash_alg == super::OID_SHA1
            && self.name_hash == id.name_hash
            && self.key_hash == id.key_hash
    }

    /// Whether two single responses name the same issuer the same way.
    pub fn same_issuer(&self, other: &Single<'_>) -> bool {
        self.hash_alg == other.hash_alg
            && self.name_hash == other.name_hash
            && self.key_hash == other.key_hash
    }

    /// The CertID's hash algorithm is SHA-1 (the only one matched).
    pub fn sha1(&self) -> bool {
        self.hash_alg == super::OID_SHA1
    }
}

/// A `BasicOCSPResponse`.
#[derive(Clone, Debug)]
pub struct Basic<'a> {
    /// `tbsResponseData`, as signed.
    pub tbs: &'a [u8],
    /// `responderID`.
    pub responder: ResponderId<'a>,
    /// `responses`.
    pub responses: Vec<Single<'a>>,
    /// `signatureAlgorithm`'s content.
    pub sig_alg: &'a [u8],
    /// `signature`'s bytes.
    pub signature: &'a [u8],
    /// `certs`: the certificates sent with it, each its DER.
    pub certs: Vec<&'a [u8]>,
}

impl<'a> Response<'a> {
    /// The basic response inside; `Err` with OpenSSL's reason when there
    /// is none or it cannot be decoded.
    pub fn basic(&self) -> Result<Basic<'a>, &'static str> {
        let (kind, octets) = self.bytes.ok_or("no response data")?;
        if kind != OID_BASIC {
            return Err("not basic response");
        }
        basic(octets).ok_or("nested asn1 error")
    }
}

fn basic(octets: &[u8]) -> Option<Basic<'_>> {
    let outer = der::single(octets, der::SEQUENCE)?;
    let mut r = Reader::new(outer.content);
    let tbs = r.read(der::SEQUENCE)?;
    let sig_alg = r.read(der::SEQUENCE)?.content;
    let signature = der::bit_string_bytes(&r.read(der::BIT_STRING)?)?;
    let mut certs = Vec::new();
    if let Some(list) = r.optional(der::context(0)) {
        let mut list = Reader::new(der::single(list.content, der::SEQUENCE)?.content);
        while !list.is_empty() {
            certs.push(list.read(der::SEQUENCE)?.raw);
        }
    }
    let mut t = Reader::new(tbs.content);
    t.optional(der::context(0));
    let responder = match t.any()? {
        id if id.tag == der::context(1) => {
            ResponderId::ByName(der::single(id.content, der::SEQUENCE)?.raw)
        }
        id if id.tag == der::context(2) => {
            ResponderId::ByKey(der::single(id.content, der::OCTET_STRING)?.content)
        }
        _ => return None,
    };
    t.read(der::GENERALIZED_TIME)?;
    let mut list = t.nested(der::SEQUENCE)?;
    let mut responses = Vec::new();
    while !list.is_empty() {
        responses.push(single(list.read(der::SEQUENCE)?.content)?);
    }
    Some(Basic {
        tbs: tbs.raw,
        responder,
        responses,
        sig_alg,
        signature,
        certs,
    })
}

fn single(content: &[u8]) -> Option<Single<'_>> {
    let mut s = Reader::new(content);
    let mut id = s.nested(der::SEQUENCE)?;
    let hash_alg = id.nested(der::SEQUENCE)?.read(der::OID)?.content;
    let name_hash = id.read(der::OCTET_STRING)?.content;
    let key_hash = id.read(der::OCTET_STRING)?.content;
    let serial = id.read(der::INTEGER)?.content;
    let status = match s.any()?.tag {
        t if t == der::context_primitive(0) => CertStatus::Good,
        t if t == der::context(1) => CertStatus::Revoked,
        t if t == der::context_primitive(2) => CertStatus::Unknown,
        _ => return None,
    };
    let this_update = der::time(&s.read(der::GENERALIZED_TIME)?)?;
    let next_update = match s.optional(der::context(0)) {
        Some(n) => Some(der::time(&der::single(n.content, der::GENERALIZED_TIME)?)?),
        None => None,
    };
    Some(Single {
        hash_alg,
        name_hash,
        key_hash,
        serial,
        status,
        this_update,
        next_update,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Vec<u8> {
        std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls/ocsp-leaf.der"),
        )
        .expect("the response fixture")
    }

    #[test]
    fn a_responder_answer_is_read_to_its_fields() {
        let bytes = fixture();
        let r = parse(&bytes).unwrap();
        assert_eq!(r.status, SUCCESSFUL);
        let b = r.basic().unwrap();
        assert!(matches!(b.responder, ResponderId::ByName(_)));
        assert_eq!(b.responses.len(), 1);
        assert_eq!(b.responses[0].status, CertStatus::Good);
        assert!(b.responses[0].sha1());
        assert_eq!(b.responses[0].next_update, None);
        assert_eq!(b.certs.len(), 1, "openssl ocsp sends its signer");
    }

    #[test]
    fn what_is_not_a_response_says_why_as_openssl() {
        assert_eq!(parse(b"").unwrap_err(), DecodeError::Empty);
        assert_eq!(parse(b"-----BEGIN").unwrap_err(), DecodeError::WrongTag);
        let bytes = fixture();
        assert_eq!(
            parse(&bytes[..bytes.len() - 1]).unwrap_err(),
            DecodeError::TooLong
        );
        // A certificate is a SEQUENCE, but not of an ENUMERATED.
        let pem = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls/ocsp-leaf.req"),
        )
        .unwrap();
        assert_eq!(parse(&pem).unwrap_err(), DecodeError::Nested);
    }

    #[test]
    fn an_unsuccessful_answer_has_no_basic_response() {
        // `malformedRequest`, as `openssl ocsp` answers garbage.
        let r = parse(&[0x30, 0x03, 0x0a, 0x01, 0x01]).unwrap();
        assert_eq!(r.status, 1);
        assert_eq!(status_name(r.status), "malformedrequest");
        assert_eq!(r.basic().unwrap_err(), "no response data");
    }
}
