//! Encrypted certificate keys and `ssl_password_file`, against Debian's
//! nginx: every form OpenSSL writes (PKCS#8 PBES2, traditional PEM with
//! AES-128, AES-256 and DES-EDE3) opened with the file's passphrases in
//! order, and the errors for a missing file, no file, a wrong or an empty
//! passphrase, in nginx's words; then a key opened so serves TLS.
//!
//! Without nginx the differential tests say SKIPPED, and fail under
//! `NOWAIT_REQUIRE_ALL=1`.

mod common;

use std::path::Path;

use common::nginx_t::{self, check_bad, check_good};
use common::tls::{self, fixture};
use common::{Conf, Server, require_or_skip};

/// A server with the localhost certificate of `kind` (`ec`, `rsa`) and
/// `key`, holding `extra`.
fn server(kind: &str, key: &str, extra: &str) -> String {
    format!(
        "server {{ listen 127.0.0.1:18443 ssl; ssl_certificate {}; ssl_certificate_key {}; {extra} }}",
        fixture(&format!("localhost-{kind}.crt")),
        fixture(key)
    )
}

#[test]
fn encrypted_keys_open_with_the_password_file_as_in_nginx() {
    require_or_skip!(
        Path::new(nginx_t::NGINX).exists(),
        "{} is not installed",
        nginx_t::NGINX
    );
    let pw = format!("ssl_password_file {};", fixture("passwords.txt"));
    check_good(vec![
        ("pkcs8", server("ec", "enc-pkcs8.key", &pw)),
        ("aes128", server("ec", "enc-aes128.key", &pw)),
        ("aes256", server("ec", "enc-aes256.key", &pw)),
        ("des3", server("ec", "enc-des3.key", &pw)),
        ("rsa aes256", server("rsa", "enc-rsa-aes256.key", &pw)),
        (
            "plain key, passwords unused",
            server("ec", "localhost-ec.key", &pw),
        ),
        (
            "at the http level",
            format!("{pw} {}", server("ec", "enc-pkcs8.key", "")),
        ),
    ]);
}

#[test]
fn keys_that_do_not_open_are_said_in_nginx_words() {
    require_or_skip!(
        Path::new(nginx_t::NGINX).exists(),
        "{} is not installed",
        nginx_t::NGINX
    );
    let dir = common::TempDir::new("tls-password");
    let wrong = dir.path().join("wrong.txt");
    std::fs::write(&wrong, "not it\r\n\nnor this\n").unwrap();
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "").unwrap();
    let with = |f: &Path| format!("ssl_password_file {};", f.display());
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let msg = |key: &str, why: &str| {
        leak(format!(
            "cannot load certificate key \"{}\": PEM_read_bio_PrivateKey() failed (SSL: {why})",
            fixture(key)
        ))
    };
    let no_password = "error:1400006B:UI routines::processing error:while reading strings error:0480006D:PEM routines::problems getting password error:07880109:common libcrypto routines::interrupted or cancelled";
    let traditional_none = format!(
        "{no_password} error:07880109:common libcrypto routines::interrupted or cancelled error:04800068:PEM routines::bad password read"
    );
    let pkcs8_none = format!(
        "{no_password} error:07880109:common libcrypto routines::interrupted or cancelled error:1C80009F:Provider routines::unable to get passphrase {no_password} error:04800068:PEM routines::bad password read"
    );
    let pkcs8_bad = |why: &str| {
        let one = format!(
            "error:1C800064:Provider routines::bad decrypt error:11800074:PKCS12 routines::pkcs12 cipherfinal error:{why}"
        );
        format!("{one} {one}")
    };
    let traditional_bad =
        "error:1C800064:Provider routines::bad decrypt error:04800065:PEM routines::bad decrypt";
    check_bad(vec![
        (
            "no password file, traditional",
            server("ec", "enc-aes128.key", ""),
            msg("enc-aes128.key", &traditional_none),
            None,
        ),
        (
            "no password file, PKCS#8",
            server("ec", "enc-pkcs8.key", ""),
            msg("enc-pkcs8.key", &pkcs8_none),
            None,
        ),
        (
            "wrong passwords, traditional",
            server("ec", "enc-des3.key", &with(&wrong)),
            msg("enc-des3.key", traditional_bad),
            None,
        ),
        (
            "wrong passwords, PKCS#8",
            server("ec", "enc-pkcs8.key", &with(&wrong)),
            msg("enc-pkcs8.key", &pkcs8_bad("maybe wrong password")),
            None,
        ),
        (
            "an empty password file, PKCS#8",
            server("ec", "enc-pkcs8.key", &with(&empty)),
            msg("enc-pkcs8.key", &pkcs8_bad("empty password")),
            None,
        ),
        (
            "a missing password file",
            server("ec", "enc-pkcs8.key", "ssl_password_file /nonexistent/pw;"),
            "open() \"/nonexistent/pw\" failed (2: No such file or directory)",
            Some(3),
        ),
        (
            "a duplicate password file",
            server(
                "ec",
                "localhost-ec.key",
                &format!("{} {}", with(&empty), with(&empty)),
            ),
            "\"ssl_password_file\" directive is duplicate",
            Some(3),
        ),
    ]);
}

#[test]
fn a_server_with_an_encrypted_key_serves_tls() {
    let conf = Conf::http(&format!(
        "server {{ listen 127.0.0.1:{{port}} ssl; server_name localhost;
            ssl_certificate {}; ssl_certificate_key {}; ssl_password_file {};
            location / {{ return 200 \"$ssl_protocol\"; }} }}",
        fixture("localhost-ec.crt"),
        fixture("enc-pkcs8.key"),
        fixture("passwords.txt"),
    ))
    .render();
    let s = Server::nowait(&conf);
    let r = tls::get(s.port(), "localhost", "/");
    assert_eq!(r.status, 200);
    assert_eq!(common::body(&r), "TLSv1.2");
}
