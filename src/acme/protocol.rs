//! The ACME protocol (RFC 8555) as nginx-acme speaks it: the directory,
//! nonces, the account (created, or found by its key), and an order from
//! `newOrder` to the downloaded chain — authorizations answered by
//! HTTP-01 (§8.3) through the tokens the server answers itself, the
//! order finalized with a CSR, its state polled with nginx-acme's
//! backoff. Blocking: it runs on an issuer's own thread.
//!
//! Failures carry nginx-acme's words (`urn:ietf:params:acme:error:…:
//! detail`, `unexpected authorization status Invalid`, …) and whether
//! trying again can help.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::https::{Client, Response};
use super::jws::{self, Signer};
use super::keys::{Key, b64url};
use super::store::Challenges;
use crate::config::acme_model::{AcmeIssuer, AcmeOrder};

/// How long an authorization is polled for (nginx-acme's
/// `authorization_timeout`).
pub const AUTHORIZATION_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a finalized order is polled for (`finalize_timeout`).
pub const FINALIZE_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest wait between polls that nowait makes itself.
pub const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// The longest `Retry-After` honoured within an order; a rate limit
/// asking for more ends the attempt.
pub const MAX_SERVER_RETRY: Duration = Duration::from_secs(60);
/// Tries after a failed connection, a second apart.
pub const NETWORK_RETRIES: usize = 3;
/// The ACME error namespace.
const ERROR_NS: &str = "urn:ietf:params:acme:error:";

/// Why a step failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// Try again later (nginx-acme's `warn` and retry schedule).
    Again(String),
    /// Trying again cannot help until the configuration changes
    /// (nginx-acme's `error` and `set_invalid`).
    Invalid(String),
    /// The server asked to wait this long.
    RateLimited(String, Duration),
}

impl Failure {
    /// The message.
    pub fn text(&self) -> &str {
        match self {
            Failure::Again(t) | Failure::Invalid(t) | Failure::RateLimited(t, _) => t,
        }
    }

    fn map(self, f: impl FnOnce(String) -> String) -> Failure {
        match self {
            Failure::Again(t) => Failure::Again(f(t)),
            Failure::Invalid(t) => Failure::Invalid(f(t)),
            Failure::RateLimited(t, d) => Failure::RateLimited(f(t), d),
        }
    }
}

/// An RFC 7807 problem document, as nginx-acme prints it.
#[derive(Debug, Clone)]
pub struct Problem {
    /// Its `type` without the namespace (`badNonce`), or the whole type.
    pub kind: String,
    /// `type: detail`.
    pub text: String,
}

impl Problem {
    fn of(v: &Value) -> Option<Problem> {
        let kind = v.get("type")?.as_str()?;
        let detail = v.get("detail").and_then(Value::as_str).unwrap_or("");
        let mut text = format!("{kind}: {detail}");
        let short = kind.strip_prefix(ERROR_NS).unwrap_or(kind).to_string();
        if short == "userActionRequired" {
            if let Some(i) = v.get("instance").and_then(Value::as_str) {
                text.push_str(&format!("({i})"));
            }
        }
        Some(Problem { kind: short, text })
    }

    /// nginx-acme's `is_bad_order`.
    fn is_bad_order(&self) -> bool {
        matches!(
            self.kind.as_str(),
            "badCSR"
                | "caa"
                | "invalidProfile"
                | "malformed"
                | "rejectedIdentifier"
                | "unsupportedIdentifier"
        )
    }

    /// nginx-acme's `is_bad_account`.
    fn is_bad_account(&self) -> bool {
        matches!(
            self.kind.as_str(),
            "accountDoesNotExist"
                | "badPublicKey"
                | "badSignatureAlgorithm"
                | "externalAccountRequired"
                | "invalidContact"
                | "malformed"
                | "unsupportedContact"
                | "userActionRequired"
        )
    }
}

/// What a request came back with, before it is judged.
enum Outcome {
    Ok(Response),
    Problem(Problem),
    Failed(Failure),
}

/// What `newAccount` found.
pub enum Account {
    /// Made now (201).
    Created(String),
    /// Already there for this key.
    Found(String),
}

/// A certificate an order produced.
pub struct Issued {
    /// The chain, PEM, as the server sent it.
    pub chain: Vec<u8>,
    /// Its key, PKCS#8 PEM.
    pub key: Vec<u8>,
}

/// The directory's URLs and what nginx-acme reads of its `meta`.
#[derive(Debug, Default, Clone)]
struct Directory {
    new_nonce: String,
    new_account: String,
    new_order: String,
    external_account_required: bool,
    profiles: Vec<String>,
}

/// One issuer's session with its ACME server.
pub struct Session<'a> {
    issuer: &'a AcmeIssuer,
    http: &'a Client,
    key: &'a Key,
    directory: Option<Directory>,
    nonces: Vec<String>,
    account: Option<String>,
    profile: Option<String>,
    /// Where informational lines go (`profile … not supported`).
    notice: &'a dyn Fn(&str),
}

impl<'a> Session<'a> {
    /// A session for `issuer` signing with `key`.
    pub fn new(
        issuer: &'a AcmeIssuer,
        http: &'a Client,
        key: &'a Key,
        notice: &'a dyn Fn(&str),
    ) -> Session<'a> {
        Session {
            issuer,
            http,
            key,
            directory: None,
            nonces: Vec::new(),
            account: None,
            profile: None,
            notice,
        }
    }

    /// Whether the account is known.
    pub fn has_account(&self) -> bool {
        self.account.is_some()
    }

    fn directory(&mut self) -> Result<Directory, Failure> {
        if let Some(d) = &self.directory {
            return Ok(d.clone());
        }
        let fail = |e: String| Failure::Again(format!("directory update failed ({e})"));
        let r = self
            .get(&self.issuer.uri.clone())
            .map_err(|f| f.map(|t| format!("directory update failed ({t})")))?;
        let v: Value = serde_json::from_slice(&r.body)
            .map_err(|e| fail(format!("cannot deserialize response ({e})")))?;
        let url = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let (Some(new_nonce), Some(new_account), Some(new_order)) =
            (url("newNonce"), url("newAccount"), url("newOrder"))
        else {
            return Err(fail(
                "cannot deserialize response (missing field)".to_string(),
            ));
        };
        let meta = v.get("meta");
        let d = Directory {
            new_nonce,
            new_account,
            new_order,
            external_account_required: meta
                .and_then(|m| m.get("externalAccountRequired"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
            profiles: meta
                .and_then(|m| m.get("profiles"))
                .and_then(Value::as_object)
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default(),
        };
        self.directory = Some(d.clone());
        Ok(d)
    }

    /// A GET, following redirects as nginx-acme does (at most 10).
    fn get(&self, url: &str) -> Result<Response, Failure> {
        let mut u = url.to_string();
        for _ in 0..10 {
            let r = self
                .http
                .request("GET", &u, None, b"")
                .map_err(Failure::Again)?;
            if (300..400).contains(&r.status) {
                let loc = r.header("location").ok_or_else(|| {
                    Failure::Again("redirect failed: missing redirect URI".to_string())
                })?;
                u = resolve(&u, loc);
                continue;
            }
            if (200..300).contains(&r.status) {
                return Ok(r);
            }
            if let Some(p) = serde_json::from_slice::<Value>(&r.body)
                .ok()
                .as_ref()
                .and_then(Problem::of)
            {
                return Err(Failure::Again(p.text));
            }
            return Err(Failure::Again(format!(
                "unexpected status code {} in response",
                status_text(r.status)
            )));
        }
        Err(Failure::Again(
            "redirect failed: too many redirects".to_string(),
        ))
    }

    fn nonce(&mut self) -> Result<String, Failure> {
        if let Some(n) = self.nonces.pop() {
            return Ok(n);
        }
        let d = self.directory()?;
        let r = self
            .http
            .request("HEAD", &d.new_nonce, None, b"")
            .map_err(Failure::Again)?;
        r.header("replay-nonce")
            .map(str::to_string)
            .ok_or_else(|| Failure::Again("cannot obtain replay nonce".to_string()))
    }

    /// A signed POST (`payload` empty: POST-as-GET), with nginx-acme's
    /// retries: a connection error three times, a bad nonce with the
    /// nonce the error brought, a short rate limit after its wait.
    fn post(&mut self, url: &str, payload: &[u8]) -> Outcome {
        let mut nonce = match self.nonce() {
            Ok(n) => n,
            Err(f) => return Outcome::Failed(f),
        };
        let mut network_tries = 0;
        let mut tries = Backoff::new(MAX_BACKOFF, Duration::from_secs(10));
        loop {
            let signer = match &self.account {
                Some(kid) => Signer::Kid(kid),
                None => Signer::Jwk,
            };
            let body = match jws::sign(self.key, signer, &nonce, url, payload) {
                Ok(b) => b,
                Err(e) => {
                    return Outcome::Failed(Failure::Again(format!(
                        "cannot sign request body ({e})"
                    )));
                }
            };
            let r =
                match self
                    .http
                    .request("POST", url, Some("application/jose+json"), body.as_bytes())
                {
                    Ok(r) => r,
                    Err(e) => {
                        network_tries += 1;
                        if network_tries <= NETWORK_RETRIES {
                            std::thread::sleep(Duration::from_secs(1));
                            continue;
                        }
                        return Outcome::Failed(Failure::Again(e));
                    }
                };
            let next = r.header("replay-nonce").map(str::to_string);
            if (200..300).contains(&r.status) {
                if let Some(n) = next {
                    self.nonces.push(n);
                }
                return Outcome::Ok(r);
            }
            let Some(n) = next else {
                return Outcome::Failed(Failure::Again("cannot obtain replay nonce".to_string()));
            };
            nonce = n;
            let problem = serde_json::from_slice::<Value>(&r.body)
                .ok()
                .as_ref()
                .and_then(Problem::of);
            let Some(problem) = problem else {
                return Outcome::Failed(Failure::Again(format!(
                    "unexpected status code {} in response",
                    status_text(r.status)
                )));
            };
            let retry_after = r.header("retry-after").and_then(parse_retry_after);
            let retriable = match problem.kind.as_str() {
                "rateLimited" => {
                    if let Some(d) = retry_after.filter(|d| *d > MAX_SERVER_RETRY) {
                        return Outcome::Failed(Failure::RateLimited(
                            format!("rate limit exceeded, next attempt in {d:?}"),
                            d,
                        ));
                    }
                    true
                }
                "badNonce" => true,
                _ => false,
            };
            if retriable {
                if let Some(wait) = tries.next() {
                    std::thread::sleep(retry_after.unwrap_or(wait).min(MAX_SERVER_RETRY));
                    continue;
                }
            }
            self.nonces.push(nonce);
            return Outcome::Problem(problem);
        }
    }

    fn post_json(&mut self, url: &str, payload: &[u8]) -> Result<(Response, Value), Failure> {
        match self.post(url, payload) {
            Outcome::Ok(r) => {
                let v = serde_json::from_slice(&r.body)
                    .map_err(|e| Failure::Again(format!("cannot deserialize response ({e})")))?;
                Ok((r, v))
            }
            Outcome::Problem(p) if p.is_bad_order() => Err(Failure::Invalid(p.text)),
            Outcome::Problem(p) => Err(Failure::Again(p.text)),
            Outcome::Failed(f) => Err(f),
        }
    }

    /// `newAccount`: the account of this key, made if need be.
    pub fn new_account(&mut self) -> Result<Account, Failure> {
        let d = self.directory()?;
        if d.external_account_required && self.issuer.eab.is_none() {
            return Err(Failure::Invalid(
                "external account key required".to_string(),
            ));
        }
        self.profile = match &self.issuer.profile {
            Some(p) if p.required => Some(p.name.clone()),
            Some(p) if d.profiles.contains(&p.name) => Some(p.name.clone()),
            Some(p) => {
                (self.notice)(&format!(
                    "acme profile \"{}\" is not supported by the server",
                    p.name
                ));
                None
            }
            None => None,
        };
        let mut payload = serde_json::Map::new();
        if !self.issuer.contacts.is_empty() {
            payload.insert("contact".into(), json!(self.issuer.contacts));
        }
        if self.issuer.accept_tos {
            payload.insert("termsOfServiceAgreed".into(), json!(true));
        }
        if let Some(eab) = &self.issuer.eab {
            let b = jws::external_binding(self.key, &eab.kid, &eab.key, &d.new_account);
            let v: Value = serde_json::from_str(&b).unwrap_or(Value::Null);
            payload.insert("externalAccountBinding".into(), v);
        }
        let body = Value::Object(payload).to_string();
        let (r, v) = match self.post(&d.new_account, body.as_bytes()) {
            Outcome::Ok(r) => {
                let v: Value = serde_json::from_slice(&r.body).map_err(|e| {
                    Failure::Again(format!(
                        "account request failed (cannot deserialize response ({e}))"
                    ))
                })?;
                (r, v)
            }
            Outcome::Problem(p) if p.is_bad_account() => return Err(Failure::Invalid(p.text)),
            Outcome::Problem(p) => return Err(Failure::Again(p.text)),
            Outcome::Failed(f) => return Err(f.map(|t| format!("account request failed ({t})"))),
        };
        let status = v.get("status").and_then(Value::as_str).unwrap_or("");
        if status != "valid" {
            return Err(Failure::Invalid(format!(
                "unexpected account status {}",
                capitalized(status)
            )));
        }
        let kid = r
            .header("location")
            .map(str::to_string)
            .ok_or_else(|| Failure::Again("no account URL in response".to_string()))?;
        self.account = Some(kid.clone());
        Ok(if r.status == 201 {
            Account::Created(kid)
        } else {
            Account::Found(kid)
        })
    }

    /// An order for `order`, through to its chain: the HTTP-01 tokens are
    /// put in `challenges` while their authorization is checked.
    pub fn new_certificate(
        &mut self,
        order: &AcmeOrder,
        challenges: &Challenges,
    ) -> Result<Issued, Failure> {
        let d = self.directory()?;
        let ids: Vec<Value> = order
            .identifiers
            .iter()
            .map(|i| json!({"type": i.kind(), "value": i.value()}))
            .collect();
        let mut req = json!({ "identifiers": ids });
        if let Some(p) = &self.profile {
            req["profile"] = json!(p);
        }
        let (r, v) = self.post_json(&d.new_order, req.to_string().as_bytes())?;
        let order_url = r
            .header("location")
            .map(str::to_string)
            .ok_or_else(|| Failure::Again("invalid or missing order URL".to_string()))?;
        let auths: Vec<String> = v
            .get("authorizations")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let mut pending = Vec::new();
        for url in auths {
            let (_, a) = self.post_json(&url, b"")?;
            match a.get("status").and_then(Value::as_str).unwrap_or("") {
                "pending" => {
                    let http01 = a
                        .get("challenges")
                        .and_then(Value::as_array)
                        .and_then(|cs| {
                            cs.iter()
                                .find(|c| c.get("type").and_then(Value::as_str) == Some("http-01"))
                                .cloned()
                        })
                        .ok_or_else(|| Failure::Again("no supported challenges".to_string()))?;
                    pending.push((url, http01));
                }
                "valid" => {}
                s => {
                    return Err(Failure::Again(format!(
                        "unexpected authorization status {}",
                        capitalized(s)
                    )));
                }
            }
        }
        let pkey = Key::generate(order.key).map_err(Failure::Again)?;
        for (url, challenge) in pending {
            self.authorize(&url, &challenge, challenges)?;
        }
        let (_, mut v) = self.post_json(&order_url, b"")?;
        let status = v
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if status != "ready" {
            if let Some(p) = v.get("error").and_then(Problem::of) {
                return Err(if p.is_bad_order() {
                    Failure::Invalid(p.text)
                } else {
                    Failure::Again(p.text)
                });
            }
            return Err(Failure::Again(format!(
                "unexpected order status {}",
                capitalized(&status)
            )));
        }
        let cn = self
            .issuer
            .common_name_in_csr
            .then(|| order.first_name())
            .flatten();
        let csr = super::csr::request(&order.identifiers, cn, &pkey)
            .map_err(|e| Failure::Again(format!("csr generation failed ({e})")))?;
        let finalize = v
            .get("finalize")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let body = format!(r#"{{"csr":"{}"}}"#, b64url(&csr));
        match self.post(&finalize, body.as_bytes()) {
            Outcome::Ok(r) => {
                v = serde_json::from_slice(&r.body).unwrap_or(json!({"status": "processing"}));
            }
            Outcome::Problem(p) if p.is_bad_order() => return Err(Failure::Invalid(p.text)),
            _ => v = json!({"status": "processing"}),
        }
        let mut tries = Backoff::new(MAX_BACKOFF, FINALIZE_TIMEOUT);
        while v.get("status").and_then(Value::as_str) == Some("processing") {
            let Some(wait) = tries.next() else { break };
            std::thread::sleep(wait);
            v = self.post_json(&order_url, b"")?.1;
        }
        let cert_url = v
            .get("certificate")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| Failure::Again("no certificate in the completed order".to_string()))?;
        let chain = self.download(&cert_url)?;
        Ok(Issued {
            chain,
            key: pkey.pem().map_err(Failure::Again)?,
        })
    }

    /// Answers one authorization's HTTP-01 challenge and waits for its
    /// verdict.
    fn authorize(
        &mut self,
        url: &str,
        challenge: &Value,
        challenges: &Challenges,
    ) -> Result<(), Failure> {
        let token = challenge
            .get("token")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let curl = challenge
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let key_authorization = format!("{token}.{}", self.key.thumbprint());
        let _registered = challenges.register(&token, key_authorization);
        let (_, c) = self.post_json(&curl, b"{}")?;
        let cs = c.get("status").and_then(Value::as_str).unwrap_or("");
        if !matches!(cs, "pending" | "processing" | "valid") {
            return Err(Failure::Again(format!(
                "unexpected challenge status {}",
                capitalized(cs)
            )));
        }
        let mut tries = Backoff::new(MAX_BACKOFF, AUTHORIZATION_TIMEOUT);
        let mut a;
        loop {
            if let Some(wait) = tries.next() {
                std::thread::sleep(wait);
            }
            a = self.post_json(url, b"")?.1;
            if a.get("status").and_then(Value::as_str) != Some("pending") || tries.done() {
                break;
            }
        }
        let status = a.get("status").and_then(Value::as_str).unwrap_or("");
        if status != "valid" {
            let err = a
                .get("challenges")
                .and_then(Value::as_array)
                .and_then(|cs| {
                    cs.iter()
                        .find(|c| c.get("type").and_then(Value::as_str) == Some("http-01"))
                })
                .and_then(|c| c.get("error"))
                .and_then(Problem::of);
            return Err(match err {
                Some(p) if p.is_bad_order() => Failure::Invalid(p.text),
                Some(p) => Failure::Again(p.text),
                None => Failure::Again(format!(
                    "unexpected authorization status {}",
                    capitalized(status)
                )),
            });
        }
        Ok(())
    }

    /// The chain at `url`, or the alternate whose top is issued by
    /// `preferred_chain` (RFC 8555 §7.4.2's `Link: rel="alternate"`).
    fn download(&mut self, url: &str) -> Result<Vec<u8>, Failure> {
        let r = match self.post(url, b"") {
            Outcome::Ok(r) => r,
            Outcome::Problem(p) => return Err(Failure::Again(p.text)),
            Outcome::Failed(f) => return Err(f),
        };
        check_chain(&r.body)?;
        let Some(want) = self.issuer.preferred_chain.clone() else {
            return Ok(r.body);
        };
        if top_issued_by(&r.body, &want) {
            return Ok(r.body);
        }
        let alternates: Vec<String> = r
            .headers_named("link")
            .flat_map(|v| v.split(','))
            .filter(|l| l.contains("rel=\"alternate\"") || l.contains("rel=alternate"))
            .filter_map(|l| {
                let (start, end) = (l.find('<')?, l.find('>')?);
                Some(resolve(url, &l[start + 1..end]))
            })
            .collect();
        for alt in alternates {
            if let Outcome::Ok(a) = self.post(&alt, b"") {
                if check_chain(&a.body).is_ok() && top_issued_by(&a.body, &want) {
                    return Ok(a.body);
                }
            }
        }
        Ok(r.body)
    }
}

/// The chain has a certificate.
fn check_chain(pem: &[u8]) -> Result<(), Failure> {
    match crate::tls::material::chain(pem, std::path::Path::new("certificate")) {
        Ok(c) if !c.is_empty() => Ok(()),
        Ok(_) => Err(Failure::Again(
            "no certificate in the completed order".to_string(),
        )),
        Err(e) => Err(Failure::Again(format!("PEM_read_bio_X509() failed: {e}"))),
    }
}

/// Whether the last certificate of `pem` is issued by a name whose
/// common name is `cn` (nginx-acme's `CertificateChainMatcher`).
fn top_issued_by(pem: &[u8], cn: &str) -> bool {
    let Ok(chain) = crate::tls::material::chain(pem, std::path::Path::new("certificate")) else {
        return false;
    };
    let Some(last) = chain.last() else {
        return false;
    };
    let Some(f) = crate::tls::x509::CertFields::parse(last.as_ref()) else {
        return false;
    };
    common_names(f.issuer).iter().any(|n| n == cn)
}

/// The common names of a Name (DER): SEQUENCE OF SET OF
/// AttributeTypeAndValue.
fn common_names(name: &[u8]) -> Vec<String> {
    use crate::tls::der::Reader;
    const OID_COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
    let mut out = Vec::new();
    let Some(mut rdns) = Reader::new(name).nested(0x30) else {
        return out;
    };
    while let Some(mut set) = rdns.nested(0x31) {
        while let Some(mut atv) = set.nested(0x30) {
            let Some(oid) = atv.read(0x06) else { break };
            if let Some(v) = atv.any() {
                if oid.content == OID_COMMON_NAME {
                    out.push(String::from_utf8_lossy(v.content).into_owned());
                }
            }
        }
    }
    out
}

/// `relative` resolved against `base` (an absolute URL, a path, or a
/// full URL).
fn resolve(base: &str, relative: &str) -> String {
    if relative.starts_with("http://") || relative.starts_with("https://") {
        return relative.to_string();
    }
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    if relative.starts_with('/') {
        format!("{}{relative}", &base[..host_end])
    } else {
        let dir_end = base
            .rfind('/')
            .filter(|&i| i >= host_end)
            .map_or(host_end, |i| i);
        format!("{}/{relative}", &base[..dir_end])
    }
}

/// `Retry-After` as seconds or an HTTP date.
fn parse_retry_after(v: &str) -> Option<Duration> {
    if let Ok(s) = v.trim().parse::<u64>() {
        return Some(Duration::from_secs(s));
    }
    let t = httpdate::parse_http_date(v.trim()).ok()?;
    Some(
        t.duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    )
}

/// A status as Rust's `Debug` of nginx-acme's enums prints it
/// (`invalid` → `Invalid`).
fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// `404 Not Found` as the `http` crate prints a status.
fn status_text(code: u16) -> String {
    match crate::http::status::Status(code).reason() {
        Some(reason) => format!("{code} {reason}"),
        None => code.to_string(),
    }
}

/// nginx-acme's backoff: 1, 1, 2, 3, 5, 8 … seconds capped at `max`,
/// until `timeout` has passed.
pub struct Backoff {
    prev: Duration,
    cur: Duration,
    max: Duration,
    stop: Instant,
}

impl Backoff {
    /// Intervals capped at `max` for `timeout`.
    pub fn new(max: Duration, timeout: Duration) -> Backoff {
        Backoff {
            prev: Duration::ZERO,
            cur: Duration::from_secs(1),
            max,
            stop: Instant::now() + timeout,
        }
    }

    /// Whether the time is up.
    pub fn done(&self) -> bool {
        Instant::now() >= self.stop
    }
}

impl Iterator for Backoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        if self.done() {
            return None;
        }
        let out = self.cur.min(self.max);
        let next = self.prev + self.cur;
        self.prev = self.cur;
        self.cur = next;
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_follows_fibonacci_to_its_cap() {
        let b = Backoff::new(Duration::from_secs(8), Duration::from_secs(3600));
        let v: Vec<u64> = b.take(8).map(|d| d.as_secs()).collect();
        assert_eq!(v, [1, 1, 2, 3, 5, 8, 8, 8]);
    }

    #[test]
    fn problems_are_printed_as_nginx_acme_prints_them() {
        let p = Problem::of(
            &json!({"type": "urn:ietf:params:acme:error:connection", "detail": "refused"}),
        )
        .unwrap();
        assert_eq!(p.text, "urn:ietf:params:acme:error:connection: refused");
        assert!(!p.is_bad_order());
        let p = Problem::of(
            &json!({"type": "urn:ietf:params:acme:error:rejectedIdentifier", "detail": "x"}),
        )
        .unwrap();
        assert!(p.is_bad_order());
    }

    #[test]
    fn urls_are_resolved() {
        assert_eq!(resolve("https://a:1/dir/x", "/y"), "https://a:1/y");
        assert_eq!(resolve("https://a:1/dir/x", "y"), "https://a:1/dir/y");
        assert_eq!(resolve("https://a:1/dir/x", "https://b/z"), "https://b/z");
        assert_eq!(capitalized("invalid"), "Invalid");
    }
}
