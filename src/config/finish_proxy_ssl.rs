//! The TLS of each location that proxies over TLS, made when the levels
//! are merged, as nginx's `ngx_http_proxy_merge_loc_conf` calls
//! `ngx_http_proxy_set_ssl` for a location whose `proxy_pass` is
//! `https://` or has variables (which may make it `https://` per
//! request): the protocols and cipher suites offered, the client
//! certificate and its key read, and with `proxy_ssl_verify on` the
//! trusted certificates and revocation lists read; each failure in
//! nginx's words, without a place, as nginx logs them at merge time.
//!
//! An `if` block inside such a location proxies with the location's TLS
//! (nginx's `conf->upstream.ssl = prev->upstream.ssl`): the plan made here
//! goes with the `proxy_pass` it inherits.

use std::collections::HashSet;
use std::sync::Arc;

use md5::{Digest, Md5};

use super::build::Builder;
use super::error::ConfError;
use super::finish_ssl::{GROUPS, TLS13_SUITES, usable_protocols, usable_tls12_suites};
use super::inherit::LocConf;
use super::model::{Location, ProxyTarget};
use super::ssl_model::UpstreamTlsPlan;
use crate::tls::material;
use crate::tls::verify::Verifier;

/// The plans made so far, and the problems already said (a problem every
/// location of a server inherits is said once).
#[derive(Default)]
pub struct Plans {
    /// In the order made (a plan's `id` is its place).
    pub list: Vec<Arc<UpstreamTlsPlan>>,
    /// Messages reported so far.
    reported: HashSet<String>,
}

impl Plans {
    /// Makes the TLS of `l` when its own `proxy_pass` needs one.
    pub fn location(&mut self, b: &mut Builder, l: &mut Location) {
        let Some(pass) = &l.proxy_pass else {
            return;
        };
        let needs = match &pass.target {
            ProxyTarget::Static(url) => url.tls,
            ProxyTarget::Dynamic => true,
        };
        if !needs || pass.tls.is_some() {
            return;
        }
        let id = self.list.len();
        if let Some(plan) = self.plan(b, &l.conf, id) {
            let plan = Arc::new(plan);
            self.list.push(plan.clone());
            if let Some(pass) = &mut l.proxy_pass {
                pass.tls = Some(plan);
            }
        }
    }

    /// An error with no place, said once.
    fn emerg(&mut self, b: &mut Builder, msg: String) {
        if self.reported.insert(msg.clone()) {
            b.diags.push(ConfError::emerg(msg, None));
        }
    }

    /// `ngx_http_proxy_set_ssl` for a location's merged settings `c`.
    fn plan(&mut self, b: &mut Builder, c: &LocConf, id: usize) -> Option<UpstreamTlsPlan> {
        let provider = crate::tls::provider();
        let mut digest = Md5::new();
        let (asked, loc) = &c.proxy_ssl_protocols;
        let protocols =
            usable_protocols(b, "proxy_ssl_protocols", *asked, loc.as_ref(), loc.as_ref())?;
        let (spec, cipher_loc) = &c.proxy_ssl_ciphers;
        // nginx's `SSL_CTX_set_cipher_list` error has no place.
        let tls12_suites = usable_tls12_suites(
            b,
            "proxy_ssl_ciphers",
            spec,
            cipher_loc.as_ref(),
            None,
            protocols,
        )?;
        // Read as OpenSSL reads a client's commands. A client has no
        // preference of its own to impose: `Options ServerPreference`
        // reaches nothing here, as OpenSSL's does not on a client.
        let mut applied = super::ssl_conf_command::Applied {
            tls13_suites: TLS13_SUITES.to_vec(),
            prefer_server_ciphers: false,
            tickets: None,
            certificate: None,
            key: None,
        };
        super::ssl_conf_command::apply(b, &c.proxy_ssl_conf_command, &mut applied, &TLS13_SUITES)?;
        if let Some((_, _, at)) = c.proxy_ssl_conf_command.last() {
            if applied.certificate.is_some() || applied.key.is_some() {
                b.error(
                    "\"proxy_ssl_conf_command Certificate\" and \"PrivateKey\" cannot be honoured: use proxy_ssl_certificate and proxy_ssl_certificate_key",
                    at,
                );
                return None;
            }
            if applied.tickets.is_some() {
                b.notice(
                    "\"proxy_ssl_conf_command Options SessionTicket\" has no effect in nowait (use proxy_ssl_session_reuse)",
                    at,
                );
            }
        }
        let tls13_suites = applied.tls13_suites;
        digest.update([protocols.0]);
        for code in tls12_suites.iter().chain(&tls13_suites) {
            digest.update(code.to_be_bytes());
        }
        let dynamic_certificate = match (&c.proxy_ssl_certificate, &c.proxy_ssl_certificate_key) {
            (Some(cert), Some(key)) if !cert.name.is_static() || !key.name.is_static() => {
                // nginx's `ngx_ssl_preserve_passwords`: the file's
                // passphrases are kept for the keys loaded per request.
                digest.update(cert.name.to_string().as_bytes());
                digest.update([0]);
                digest.update(key.name.to_string().as_bytes());
                Some((cert.clone(), key.clone()))
            }
            _ => None,
        };
        let certificate = match dynamic_certificate {
            Some(_) => None,
            None => self.certificate(b, c, &provider)?,
        };
        if let Some(pair) = &certificate {
            for cert in &pair.key.cert {
                digest.update(cert.as_ref());
            }
        }
        let verifier = if c.proxy_ssl_verify {
            Some(Arc::new(self.verifier(b, c, &provider, &mut digest)?))
        } else {
            None
        };
        digest.update([
            u8::from(c.proxy_ssl_verify),
            u8::from(c.proxy_ssl_server_name),
            u8::from(c.proxy_ssl_session_reuse),
        ]);
        Some(UpstreamTlsPlan {
            id,
            protocols,
            tls12_suites,
            tls13_suites,
            groups: GROUPS.to_vec(),
            certificate,
            dynamic_certificate,
            passwords: c
                .proxy_ssl_password_file
                .as_ref()
                .map(|(_, p)| Arc::new(p.0.clone())),
            verifier,
            server_name: c.proxy_ssl_server_name,
            name: c.proxy_ssl_name.clone(),
            session_reuse: c.proxy_ssl_session_reuse,
            fingerprint: digest.finalize().into(),
        })
    }

    /// `proxy_ssl_certificate` and its key, read: `Some(None)` when none
    /// is set, `None` after an error (said).
    fn certificate(
        &mut self,
        b: &mut Builder,
        c: &LocConf,
        provider: &rustls::crypto::CryptoProvider,
    ) -> Option<Option<material::Pair>> {
        let Some(cert) = &c.proxy_ssl_certificate else {
            return Some(None);
        };
        let Some(key) = &c.proxy_ssl_certificate_key else {
            self.emerg(
                b,
                format!(
                    "no \"proxy_ssl_certificate_key\" is defined for certificate \"{}\"",
                    cert.name
                ),
            );
            return None;
        };
        let pem = |b: &mut Builder, what: &str, n: &super::ssl_model::CertName| match &n.path {
            Some(p) => b.data.read(p).map(|bytes| (bytes, p.clone())).map_err(|e| {
                use crate::tls::openssl_text;
                openssl_text::line(
                    &format!(
                        "cannot load {what} \"{}\": BIO_new_file() failed",
                        p.display()
                    ),
                    &openssl_text::fopen_failed(p, &e),
                )
            }),
            // `data:` and the PEM itself.
            None => {
                let text = n.name.to_string();
                let body = text.strip_prefix("data:").unwrap_or(&text);
                Ok((body.as_bytes().to_vec(), std::path::PathBuf::from(&text)))
            }
        };
        let loaded = pem(b, "certificate", cert).and_then(|(cert_pem, cert_path)| {
            let (key_pem, key_path) = pem(b, "certificate key", key)?;
            // An encrypted key opens with the first passphrase of
            // `proxy_ssl_password_file` that fits, as
            // `ngx_ssl_certificate` tries them.
            let passwords = c
                .proxy_ssl_password_file
                .as_ref()
                .map(|(_, p)| p.0.as_slice());
            material::pair(
                provider, &cert_pem, &cert_path, &key_pem, &key_path, passwords,
            )
        });
        match loaded {
            Ok(pair) => Some(Some(pair)),
            Err(e) => {
                self.emerg(b, e);
                None
            }
        }
    }

    /// What judges the upstream's certificate with `proxy_ssl_verify on`:
    /// `proxy_ssl_trusted_certificate` (which nginx requires then) and
    /// `proxy_ssl_crl` read, their bytes added to `digest`.
    fn verifier(
        &mut self,
        b: &mut Builder,
        c: &LocConf,
        provider: &rustls::crypto::CryptoProvider,
        digest: &mut Md5,
    ) -> Option<Verifier> {
        let Some(trusted) = &c.proxy_ssl_trusted_certificate else {
            self.emerg(
                b,
                "no proxy_ssl_trusted_certificate for proxy_ssl_verify".to_string(),
            );
            return None;
        };
        let ca = match b.data.read(&trusted.path) {
            Ok(bytes) => bytes,
            Err(e) => {
                let msg = super::finish_ssl::fopen_failed(
                    "SSL_CTX_load_verify_locations",
                    &trusted.path,
                    &e,
                );
                self.emerg(b, msg);
                return None;
            }
        };
        let crl = match &c.proxy_ssl_crl {
            None => None,
            Some(f) => match b.data.read(&f.path) {
                Ok(bytes) => Some((bytes, f.path.clone())),
                Err(e) => {
                    let msg = super::finish_ssl::fopen_failed("X509_LOOKUP_load_file", &f.path, &e);
                    self.emerg(b, msg);
                    return None;
                }
            },
        };
        digest.update(&ca);
        digest.update(c.proxy_ssl_verify_depth.to_be_bytes());
        if let Some((bytes, _)) = &crl {
            digest.update(bytes);
        }
        let crl_ref = crl.as_ref().map(|(bytes, p)| (&bytes[..], p.as_path()));
        match Verifier::new(
            provider,
            &ca,
            &trusted.path,
            crl_ref,
            c.proxy_ssl_verify_depth,
        ) {
            Ok(v) => Some(v),
            Err(e) => {
                self.emerg(b, e);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::load_text;
    use crate::config::model::{Config, ProxyTarget};

    fn fixture(name: &str) -> String {
        format!("{}/tests/tls/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    fn load(body: &str) -> Result<Config, Vec<String>> {
        let text = format!("events {{}}\nhttp {{\n{body}\n}}\n");
        load_text(&text).map(|l| l.config).map_err(|e| {
            e.into_iter()
                .filter(|e| e.level.stops())
                .map(|e| e.message)
                .collect()
        })
    }

    fn errors(body: &str) -> Vec<String> {
        load(body).err().unwrap_or_default()
    }

    #[test]
    fn nginx_s_merge_errors() {
        let verify =
            "server { location / { proxy_pass https://127.0.0.1:1; proxy_ssl_verify on; } }";
        assert_eq!(
            errors(verify),
            vec!["no proxy_ssl_trusted_certificate for proxy_ssl_verify"]
        );
        // A URL with variables may turn out to be https: checked too; a
        // plain one is not.
        let dynamic = "server { location / { proxy_pass http://$host; proxy_ssl_verify on; } }";
        assert_eq!(
            errors(dynamic),
            vec!["no proxy_ssl_trusted_certificate for proxy_ssl_verify"]
        );
        assert!(
            errors("server { location / { proxy_pass http://127.0.0.1:1; proxy_ssl_verify on; } }")
                .is_empty()
        );
        // Inherited by two locations: said once.
        let twice = "proxy_ssl_verify on; server { location /a { proxy_pass https://127.0.0.1:1; } location /b { proxy_pass https://127.0.0.1:2; } }";
        assert_eq!(errors(twice).len(), 1);
        let no_key = format!(
            "server {{ location / {{ proxy_pass https://127.0.0.1:1; proxy_ssl_certificate {}; }} }}",
            fixture("client.crt")
        );
        assert_eq!(
            errors(&no_key),
            vec![format!(
                "no \"proxy_ssl_certificate_key\" is defined for certificate \"{}\"",
                fixture("client.crt")
            )]
        );
        let missing = "server { location / { proxy_pass https://127.0.0.1:1; proxy_ssl_verify on; proxy_ssl_trusted_certificate /nonexistent.crt; } }";
        // OpenSSL's words, as nginx prints them.
        assert_eq!(
            errors(missing),
            vec![
                "SSL_CTX_load_verify_locations(\"/nonexistent.crt\") failed (SSL: error:80000002:system library::No such file or directory:calling fopen(/nonexistent.crt, r) error:10000080:BIO routines::no such file error:05880002:x509 certificate routines::system lib)"
            ]
        );
    }

    #[test]
    fn a_location_s_plan_and_its_if_blocks() {
        let c = load(&format!(
            "server {{ location / {{ proxy_pass https://127.0.0.1:1; proxy_ssl_certificate {}; proxy_ssl_certificate_key {};
                 proxy_ssl_verify on; proxy_ssl_trusted_certificate {}; proxy_ssl_crl {};
                 if ($arg_x) {{ }} }}
               location /p {{ proxy_pass http://127.0.0.1:1; }} }}",
            fixture("client.crt"),
            fixture("client.key"),
            fixture("ca.crt"),
            fixture("ca.crl"),
        ))
        .unwrap();
        let h = c.http.unwrap();
        assert_eq!(h.upstream_tls.len(), 1);
        let l = &h.servers[0].locations[0];
        let plan = l.proxy_pass.as_ref().unwrap().tls.as_ref().unwrap();
        assert_eq!(plan.id, 0);
        assert!(plan.certificate.is_some() && plan.verifier.is_some());
        // nginx 1.22's default protocols, of which TLSv1.2 is spoken.
        use crate::config::ssl_model::Protocols;
        assert!(plan.protocols.has(Protocols::TLSV1_2) && !plan.protocols.has(Protocols::TLSV1_3));
        let inner = l.children().find(|c| c.noname).unwrap();
        let inherited = inner.proxy_pass.as_ref().unwrap().tls.as_ref().unwrap();
        assert!(std::sync::Arc::ptr_eq(plan, inherited));
        let plain = &h.servers[0].locations[1];
        assert!(plain.proxy_pass.as_ref().unwrap().tls.is_none());
        assert!(matches!(
            plain.proxy_pass.as_ref().unwrap().target,
            ProxyTarget::Static(_)
        ));
    }

    #[test]
    fn an_encrypted_key_opens_with_the_password_file() {
        let conf = |key: &str, passwords: &str| {
            format!(
                "server {{ location / {{ proxy_pass https://127.0.0.1:1; proxy_ssl_certificate {}; proxy_ssl_certificate_key {}; proxy_ssl_password_file {}; }} }}",
                fixture("client.crt"),
                fixture(key),
                passwords,
            )
        };
        let good = fixture("password.txt");
        assert_eq!(errors(&conf("client-enc.key", &good)), Vec::<String>::new());
        // No passphrase of the file fits: OpenSSL's words, as nginx's.
        let dir = std::env::temp_dir().join(format!("nowait-proxy-pw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let wrong = dir.join("wrong.txt");
        std::fs::write(&wrong, "wrong\n").unwrap();
        let e = errors(&conf("client-enc.key", wrong.to_str().unwrap()));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(e.len(), 1);
        assert!(e[0].contains("PEM_read_bio_PrivateKey() failed"), "{e:?}");
        // An unencrypted key with a password file loads.
        assert!(errors(&conf("client.key", &good)).is_empty());
    }

    #[test]
    fn protocols_nothing_usable_is_an_error_and_the_rest_a_notice() {
        let e = errors(
            "server { location / { proxy_pass https://127.0.0.1:1; proxy_ssl_protocols SSLv3 TLSv1; } }",
        );
        assert_eq!(e.len(), 1);
        assert!(
            e[0].starts_with("\"proxy_ssl_protocols\" leaves no protocol nowait speaks"),
            "{e:?}"
        );
        assert!(errors("server { location / { proxy_pass https://127.0.0.1:1; proxy_ssl_protocols TLSv1.2; proxy_ssl_protocols TLSv1.3; } }").is_empty());
    }
}
