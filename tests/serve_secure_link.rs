//! Black-box tests of the secure_link module: `$secure_link` and
//! `$secure_link_expires` in their new form (`secure_link`,
//! `secure_link_md5`: a base64url MD5 and an expiry time) and their old one
//! (`secure_link_secret`: `/prefix/HASH/link`), and how a location inherits
//! them. nginx 1.22's behaviour: run with `NOWAIT_TEST_NGINX=1` to check it.

mod common;

use common::client::get;
use common::{Conf, Server};
use md5::{Digest, Md5};

fn md5_hex(s: &str) -> String {
    Md5::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// base64url without padding.
fn md5_url(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Md5::digest(s.as_bytes()))
}

fn serve() -> Server {
    let conf = Conf::server(
        "location /new/ {
             secure_link $arg_h,$arg_e;
             secure_link_md5 \"secret$uri$arg_e\";
             return 200 \"[$secure_link] [$secure_link_expires]\";
         }
         location /old/ {
             secure_link_secret secret;
             return 200 \"[$secure_link]\";
         }
         location /inherit/ {
             secure_link_secret secret;
             location /inherit/new {
                 secure_link $arg_h;
                 secure_link_md5 secret;
                 return 200 \"[$secure_link]\";
             }
             location ~ ^/inherit/[0-9a-f]+/ {
                 return 200 \"[$secure_link]\";
             }
         }",
    )
    .render();
    Server::tested(&conf)
}

fn body(s: &Server, path: &str) -> String {
    let r = get(s.port(), path);
    assert_eq!(r.status, 200, "{path}");
    common::body(&r)
}

#[test]
fn the_new_form_checks_the_hash_and_the_expiry_time() {
    let s = serve();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let later = now + 86_400;
    let h = md5_url(&format!("secret/new/x{later}"));
    assert_eq!(
        body(&s, &format!("/new/x?h={h}&e={later}")),
        format!("[1] [{later}]")
    );
    // Padding may be there or not.
    assert_eq!(
        body(&s, &format!("/new/x?h={h}==&e={later}")),
        format!("[1] [{later}]")
    );
    let earlier = now - 86_400;
    let h = md5_url(&format!("secret/new/x{earlier}"));
    assert_eq!(
        body(&s, &format!("/new/x?h={h}&e={earlier}")),
        format!("[0] [{earlier}]"),
        "expired"
    );
    // A wrong hash: not found, the time still read.
    let wrong = md5_url("other");
    assert_eq!(
        body(&s, &format!("/new/x?h={wrong}&e={later}")),
        format!("[] [{later}]")
    );
    // A time that is not a positive number: neither.
    let h0 = md5_url("secret/new/x0");
    assert_eq!(body(&s, &format!("/new/x?h={h0}&e=0")), "[] []");
    assert_eq!(body(&s, "/new/x?h=!!&e=12"), "[] [12]", "not base64url");
    assert_eq!(
        body(&s, &format!("/new/x?h={h}AAAA&e={later}")),
        format!("[] [{later}]"),
        "too long"
    );
}

#[test]
fn the_old_form_gives_the_link_whose_hash_matches() {
    let s = serve();
    let hash = md5_hex("file.txtsecret");
    assert_eq!(body(&s, &format!("/old/{hash}/file.txt")), "[file.txt]");
    assert_eq!(
        body(&s, &format!("/old/{}/file.txt", hash.to_uppercase())),
        "[file.txt]",
        "either case"
    );
    assert_eq!(body(&s, &format!("/old/{}/file.txt", md5_hex("x"))), "[]");
    assert_eq!(body(&s, "/old/short/file.txt"), "[]");
    assert_eq!(body(&s, &format!("/old/{hash}/")), "[]", "no link");
}

#[test]
fn a_location_with_its_own_hash_settings_does_not_inherit_the_secret() {
    let s = serve();
    let h = md5_url("secret");
    assert_eq!(body(&s, &format!("/inherit/new?h={h}")), "[1]");
    // A location without its own inherits the secret: the old form.
    let hash = md5_hex("a.txtsecret");
    assert_eq!(body(&s, &format!("/inherit/{hash}/a.txt")), "[a.txt]");
}
