//! Requests to an ACME server as JWS in flattened JSON (RFC 8555 §6.2,
//! RFC 7515 §7.2.2): the protected header names the algorithm, the
//! nonce, the URL, and the account (`kid`) or, before there is one, the
//! key itself (`jwk`); an empty payload is a POST-as-GET.
//! `external_account_key` binds an account with an HMAC-signed JWS over
//! the account's key (§7.3.4).

use super::keys::{Key, b64url};

/// Who signs a request: the account's URL once it has one.
pub enum Signer<'a> {
    /// `jwk`: before the account exists (newAccount).
    Jwk,
    /// `kid`: the account's URL.
    Kid(&'a str),
}

/// A JSON string literal of `s`.
pub fn json_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// The request body: `{"protected":…,"payload":…,"signature":…}`.
pub fn sign(
    key: &Key,
    signer: Signer<'_>,
    nonce: &str,
    url: &str,
    payload: &[u8],
) -> Result<String, String> {
    let who = match signer {
        Signer::Jwk => format!(r#""jwk":{}"#, key.jwk()),
        Signer::Kid(kid) => format!(r#""kid":{}"#, json_str(kid)),
    };
    let protected = format!(
        r#"{{"alg":"{}",{who},"nonce":{},"url":{}}}"#,
        key.jws_alg(),
        json_str(nonce),
        json_str(url)
    );
    let (p64, b64) = (b64url(protected.as_bytes()), b64url(payload));
    let sig = key.sign_jws(format!("{p64}.{b64}").as_bytes())?;
    Ok(format!(
        r#"{{"protected":"{p64}","payload":"{b64}","signature":"{}"}}"#,
        b64url(&sig)
    ))
}

/// The external account binding (RFC 8555 §7.3.4): the account key's JWK
/// signed with HS256 under the key identifier `kid`.
pub fn external_binding(key: &Key, kid: &str, mac: &[u8], url: &str) -> String {
    let protected = format!(
        r#"{{"alg":"HS256","kid":{},"url":{}}}"#,
        json_str(kid),
        json_str(url)
    );
    let (p64, b64) = (b64url(protected.as_bytes()), b64url(key.jwk().as_bytes()));
    let k = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, mac);
    let tag = aws_lc_rs::hmac::sign(&k, format!("{p64}.{b64}").as_bytes());
    format!(
        r#"{{"protected":"{p64}","payload":"{b64}","signature":"{}"}}"#,
        b64url(tag.as_ref())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::acme_model::KeyKind;

    #[test]
    fn a_request_carries_its_nonce_and_url_and_verifies() {
        let key = Key::generate(KeyKind::Ecdsa(256)).unwrap();
        let body = sign(
            &key,
            Signer::Kid("https://a/acct/1"),
            "n0",
            "https://a/x",
            b"{}",
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        use base64::Engine;
        let dec = |s: &serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(s.as_str().unwrap())
                .unwrap()
        };
        let prot: serde_json::Value = serde_json::from_slice(&dec(&v["protected"])).unwrap();
        assert_eq!(prot["alg"], "ES256");
        assert_eq!(prot["nonce"], "n0");
        assert_eq!(prot["url"], "https://a/x");
        assert_eq!(prot["kid"], "https://a/acct/1");
        assert_eq!(dec(&v["payload"]), b"{}");
        let jwk: serde_json::Value = serde_json::from_str(&key.jwk()).unwrap();
        let x = dec(&jwk["x"]);
        let y = dec(&jwk["y"]);
        let point = [&[4u8][..], &x, &y].concat();
        let signed = format!(
            "{}.{}",
            v["protected"].as_str().unwrap(),
            v["payload"].as_str().unwrap()
        );
        aws_lc_rs::signature::UnparsedPublicKey::new(
            &aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED,
            point,
        )
        .verify(signed.as_bytes(), &dec(&v["signature"]))
        .unwrap();
    }
}
