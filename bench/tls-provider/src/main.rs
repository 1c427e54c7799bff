//! Server-side CPU per TLS handshake, full and resumed, TLS 1.2 and 1.3,
//! RSA-2048 and ECDSA P-256, with one crypto provider (a cargo feature):
//! a client and a server in the same thread exchange records in memory,
//! and only the server's calls are timed, in thread CPU time (another
//! process's load does not count).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, ServerConfig, ServerConnection};

#[cfg(feature = "aws")]
fn provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}
#[cfg(all(feature = "ring", not(feature = "aws")))]
fn provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::ring::default_provider()
}

/// This thread's CPU time.
fn cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/tls")
        .join(name)
}

/// Moves what the client has to send to the server, which processes it
/// (timed), and back.
fn round(c: &mut ClientConnection, s: &mut ServerConnection, spent: &mut Duration) {
    let mut buf = Vec::new();
    while c.wants_write() {
        c.write_tls(&mut buf).unwrap();
    }
    let t = cpu();
    let mut rd = &buf[..];
    while !rd.is_empty() {
        s.read_tls(&mut rd).unwrap();
    }
    s.process_new_packets().unwrap();
    let mut out = Vec::new();
    while s.wants_write() {
        s.write_tls(&mut out).unwrap();
    }
    *spent += cpu() - t;
    let mut rd = &out[..];
    while !rd.is_empty() {
        c.read_tls(&mut rd).unwrap();
    }
    c.process_new_packets().unwrap();
}

fn run(name: &str, cert: &str, key: &str, tls12: bool, resume: bool, n: u32) {
    let certs: Vec<CertificateDer> = CertificateDer::pem_file_iter(fixture(cert))
        .unwrap()
        .map(|c| c.unwrap())
        .collect();
    let key = PrivateKeyDer::from_pem_file(fixture(key)).unwrap();
    let p = Arc::new(provider());
    let versions: &[&rustls::SupportedProtocolVersion] = if tls12 {
        &[&rustls::version::TLS12]
    } else {
        &[&rustls::version::TLS13]
    };
    let mut sc = ServerConfig::builder_with_provider(p.clone())
        .with_protocol_versions(versions)
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    if !resume {
        sc.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        sc.send_tls13_tickets = 0;
    }
    let sc = Arc::new(sc);
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(fixture("ca.crt")).unwrap())
        .unwrap();
    let mut cc = ClientConfig::builder_with_provider(p)
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    if !resume {
        cc.resumption = rustls::client::Resumption::disabled();
    }
    let cc = Arc::new(cc);
    let mut spent = Duration::ZERO;
    for _ in 0..n {
        let name = ServerName::try_from("localhost").unwrap();
        let mut c = ClientConnection::new(cc.clone(), name).unwrap();
        let t = cpu();
        let mut s = ServerConnection::new(sc.clone()).unwrap();
        spent += cpu() - t;
        while c.is_handshaking() || s.is_handshaking() {
            round(&mut c, &mut s, &mut spent);
        }
        // One byte each way, so that tickets are sent and taken.
        c.writer().write_all(b"x").unwrap();
        round(&mut c, &mut s, &mut spent);
        let _ = s.reader().read(&mut [0u8; 1]);
    }
    let per = spent / n;
    println!(
        "{name}: {:.0} µs of server CPU per handshake, {:.0} handshakes per CPU-second",
        per.as_secs_f64() * 1e6,
        1.0 / per.as_secs_f64()
    );
}

fn main() {
    let n = std::env::var("N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    for resume in [false, true] {
        for tls12 in [false, true] {
            let v = if tls12 { "TLS 1.2" } else { "TLS 1.3" };
            let r = if resume { "resumed" } else { "full" };
            run(
                &format!("RSA-2048 {v} {r}"),
                "localhost-rsa.crt",
                "localhost-rsa.key",
                tls12,
                resume,
                n,
            );
            run(
                &format!("ECDSA P-256 {v} {r}"),
                "localhost-ec.crt",
                "localhost-ec.key",
                tls12,
                resume,
                n,
            );
        }
    }
}
