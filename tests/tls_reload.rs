//! Certificates replaced by a reload (SIGHUP) while TLS connections are
//! open: the new handshakes get the new certificate, a response being sent
//! over a connection made before the reload is sent whole, and a
//! kept-alive connection made before it goes on serving requests with the
//! session it was made with.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use common::tls::{self, Options, fixture};
use common::wait::until;
use common::{Conf, Fixture, Server};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// How long a reload may take to show.
const WAIT: Duration = Duration::from_secs(10);

/// The configuration: a TLS server whose certificate and key are the files
/// `site.crt` and `site.key` of `dir`, saying its generation in a header.
fn conf(root: &std::path::Path, dir: &std::path::Path, generation: u32) -> String {
    Conf::http(&format!(
        "server {{
            listen 127.0.0.1:{{port}} ssl;
            server_name localhost;
            root {{root}};
            ssl_certificate {dir}/site.crt;
            ssl_certificate_key {dir}/site.key;
            add_header X-Gen {generation} always;
        }}",
        dir = dir.display()
    ))
    .root(root)
    .render()
}

/// Puts the fixture pair `name` (`name.crt`, `name.key`) in place as the
/// site's certificate and key.
fn install(dir: &std::path::Path, name: &str) {
    for ext in ["crt", "key"] {
        std::fs::copy(
            fixture(&format!("{name}.{ext}")),
            dir.join(format!("site.{ext}")),
        )
        .expect("copy a fixture");
    }
}

/// The leaf certificate of the fixture `name`.
fn leaf(name: &str) -> Vec<u8> {
    let pem = std::fs::read(fixture(&format!("{name}.crt"))).unwrap();
    CertificateDer::pem_slice_iter(&pem)
        .next()
        .expect("a certificate")
        .unwrap()
        .as_ref()
        .to_vec()
}

/// The leaf certificate the server sent on `s`.
fn served(s: &tls::Stream) -> Vec<u8> {
    s.conn
        .peer_certificates()
        .expect("the server's certificates")[0]
        .as_ref()
        .to_vec()
}

#[test]
fn a_reload_replaces_the_certificate_and_drops_no_connection() {
    let f = Fixture::build();
    let big = common::pattern(8 << 20);
    std::fs::write(f.root().join("big.bin"), &big).unwrap();
    let dir = tempfile_dir();
    install(&dir, "localhost-rsa");
    let server = Server::nowait(&conf(f.root(), &dir, 1));
    let config = tls::client(&Options::default());

    // A kept-alive connection, and a large response started and left
    // half read, both before the reload.
    let mut kept = tls::connect(server.port(), "localhost", &config).unwrap();
    let r = tls::get_keepalive(&mut kept, "localhost", "/dir/file.txt");
    assert_eq!(r.header("X-Gen").as_deref(), Some("1"));
    assert_eq!(served(&kept), leaf("localhost-rsa"));
    let mut slow = tls::connect(server.port(), "localhost", &config).unwrap();
    write!(
        slow,
        "GET /big.bin HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut got = vec![0u8; 64 << 10];
    slow.read_exact(&mut got)
        .expect("the start of the large response");

    install(&dir, "localhost-ec");
    server.write_conf(&conf(f.root(), &dir, 2));
    server.signal("HUP");
    assert!(
        until(WAIT, || {
            tls::get(server.port(), "localhost", "/dir/file.txt")
                .header("X-Gen")
                .as_deref()
                == Some("2")
        }),
        "the reload did not take: {}",
        server.stderr()
    );
    let fresh = tls::connect(server.port(), "localhost", &config).unwrap();
    assert_eq!(
        served(&fresh),
        leaf("localhost-ec"),
        "a new handshake got the old certificate"
    );

    // The response begun before the reload arrives whole.
    let mut rest = Vec::new();
    match slow.read_to_end(&mut rest) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {}
        Err(e) => panic!("the large response broke off after the reload: {e}"),
    }
    got.extend_from_slice(&rest);
    let (head, body) = split_head(&got);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body.len(), big.len(), "the large response was cut short");
    assert!(body == &big[..], "the large response's bytes differ");

    // The kept-alive connection goes on, with the certificate it was made
    // with; its requests are the new generation's.
    for _ in 0..3 {
        let r = tls::get_keepalive(&mut kept, "localhost", "/dir/file.txt");
        assert_eq!(r.status, 200);
        assert_eq!(r.header("X-Gen").as_deref(), Some("2"));
    }
    assert_eq!(served(&kept), leaf("localhost-rsa"));
    assert!(
        !server.stderr().contains("[alert]") && !server.stderr().contains("[crit]"),
        "{}",
        server.stderr()
    );
}

/// A folder of its own for the replaceable certificate files.
fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "nowait-tls-reload-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A response's head (as text) and body.
fn split_head(raw: &[u8]) -> (String, &[u8]) {
    let at = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("the end of the head");
    (
        String::from_utf8_lossy(&raw[..at]).into_owned(),
        &raw[at + 4..],
    )
}
