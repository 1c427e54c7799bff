//! `nowait::tls` against the real OpenSSL 3.0 and nginx 1.22 of this
//! machine: every string of the corpus (src/tls/testdata/) through
//! `openssl ciphers` (the frozen fixture must still be what OpenSSL says,
//! and nowait must say the same), the cipher table against
//! `openssl ciphers -v`, every corpus value through `nginx -t` as
//! `ssl_ciphers` and `ssl_ecdh_curve` (accepted alike, refused in the same
//! words), and `$ssl_protocol`, `$ssl_cipher`, `$ssl_ciphers`, `$ssl_curves`
//! as nginx logs them for `openssl s_client` connections.
//!
//! Without `openssl` or nginx the tests say SKIPPED, and fail under
//! `NOWAIT_REQUIRE_ALL=1`.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::nginx_t::{self, Conf, messages};
use common::{Server, TempDir, require_or_skip};
use nowait::tls::{ciphers, groups};

/// Debian's OpenSSL command line.
const OPENSSL: &str = "/usr/bin/openssl";

/// The frozen answers the unit tests read.
const CIPHERS_EXPECTED: &str = include_str!("../src/tls/testdata/cipher_strings.expected");
const GROUPS_EXPECTED: &str = include_str!("../src/tls/testdata/groups.expected");

/// How long nginx may take to log a request that has been answered.
const LOG_TIMEOUT: Duration = Duration::from_secs(10);

/// The cipher strings of the fixture with what it says of them.
fn cipher_cases() -> Vec<(&'static str, &'static str)> {
    CIPHERS_EXPECTED
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_once('\t').expect("spec<TAB>result"))
        .collect()
}

/// The `list` lines of the groups fixture: (value, accepted).
fn group_cases() -> Vec<(&'static str, bool)> {
    GROUPS_EXPECTED
        .lines()
        .filter(|l| l.starts_with("list\t"))
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[1], f[2] != "error")
        })
        .collect()
}

/// What `openssl ciphers -V -- spec` says, in the fixture's words: the
/// codes below TLS 1.3, or the error and how many times.
fn openssl_says(spec: &str) -> String {
    let out = Command::new(OPENSSL)
        .args(["ciphers", "-V", "--", spec])
        .stdin(Stdio::null())
        .output()
        .expect("openssl runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let invalid = stderr.matches(":0A000118:").count();
        if invalid > 0 {
            return format!("error invalid-command {invalid}");
        }
        assert!(stderr.contains(":0A0000B9:"), "{spec:?}: {stderr}");
        return "error no-cipher-match".into();
    }
    stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|hex| hex.replace("0x", "").replace(',', "").to_lowercase())
        .filter(|code| !code.starts_with("13"))
        .collect::<Vec<_>>()
        .join(",")
}

/// What nowait says of `spec`, in the fixture's words.
fn nowait_says(spec: &str) -> String {
    match ciphers::evaluate(spec) {
        Ok(s) => s
            .ciphers
            .iter()
            .map(|c| format!("{:04x}", c.code))
            .collect::<Vec<_>>()
            .join(","),
        Err(ciphers::CipherError::NoCipherMatch { .. }) => "error no-cipher-match".into(),
        Err(ciphers::CipherError::InvalidCommand { count, .. }) => {
            format!("error invalid-command {count}")
        }
        Err(e) => panic!("{spec:?}: {e}"),
    }
}

#[test]
fn openssl_selects_what_the_fixture_and_nowait_select() {
    require_or_skip!(Path::new(OPENSSL).exists(), "{OPENSSL} is not installed");
    let mut wrong = Vec::new();
    for (spec, frozen) in cipher_cases() {
        let live = openssl_says(spec);
        if live != frozen {
            wrong.push(format!(
                "{spec:?}: the fixture is stale (scripts/tls-names.py):\n  frozen {frozen}\n  live   {live}"
            ));
        }
        let ours = nowait_says(spec);
        if ours != live {
            wrong.push(format!("{spec:?}:\n  openssl {live}\n  nowait  {ours}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_cipher_table_is_openssls() {
    require_or_skip!(Path::new(OPENSSL).exists(), "{OPENSSL} is not installed");
    let out = Command::new(OPENSSL)
        .args(["ciphers", "-V", "-v", "-stdname", "ALL:COMPLEMENTOFALL"])
        .output()
        .expect("openssl runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut seen = 0;
    for line in text.lines() {
        // 0xC0,0x2F - STDNAME - NAME VERSION Kx= Au= Enc= Mac=
        let f: Vec<&str> = line.split_whitespace().collect();
        let code = u16::from_str_radix(&f[0].replace("0x", "").replace(',', ""), 16).unwrap();
        if code >> 8 == 0x13 {
            assert_eq!(ciphers::openssl_name(code), Some(f[4]), "{line}");
            continue;
        }
        seen += 1;
        let c = ciphers::cipher(code).unwrap_or_else(|| panic!("missing: {line}"));
        assert_eq!((c.iana_name, c.name), (f[2], f[4]), "{line}");
        let version = match f[5] {
            "SSLv3" => ciphers::version::SSL3,
            "TLSv1" => ciphers::version::TLS1,
            "TLSv1.2" => ciphers::version::TLS1_2,
            v => panic!("{v}: {line}"),
        };
        assert_eq!(c.min_version, version, "{line}");
        let enc = f[8].trim_start_matches("Enc=");
        let bits = enc
            .split_once('(')
            .map_or(0, |(_, b)| b.trim_end_matches(')').parse().unwrap());
        assert_eq!(c.bits, bits, "{line}");
        let described = [
            format!("{:?}", c.kx),
            format!("{:?}", c.auth),
            format!("{:?}", c.enc),
            format!("{:?}", c.mac),
        ];
        assert_eq!(described, [f[6], f[7], f[8], f[9]].map(ours), "{line}");
    }
    assert!(seen > 100, "{seen} ciphers listed");
    let all = ciphers::evaluate("ALL:COMPLEMENTOFALL").unwrap();
    assert_eq!(all.ciphers.len(), seen);
}

/// OpenSSL's words for a cipher's algorithms (`Kx=`, `Au=`, `Enc=`, `Mac=`)
/// and the names of nowait's enums for them.
const WORDS: &[(&str, &str)] = &[
    ("Kx=RSA", "Rsa"),
    ("Kx=DH", "Dhe"),
    ("Kx=ECDH", "Ecdhe"),
    ("Kx=PSK", "Psk"),
    ("Kx=RSAPSK", "RsaPsk"),
    ("Kx=ECDHEPSK", "EcdhePsk"),
    ("Kx=DHEPSK", "DhePsk"),
    ("Kx=SRP", "Srp"),
    ("Au=RSA", "Rsa"),
    ("Au=DSS", "Dss"),
    ("Au=None", "Null"),
    ("Au=ECDSA", "Ecdsa"),
    ("Au=PSK", "Psk"),
    ("Au=SRP", "Srp"),
    ("Enc=None", "Null"),
    ("Enc=AES(128)", "Aes128"),
    ("Enc=AES(256)", "Aes256"),
    ("Enc=Camellia(128)", "Camellia128"),
    ("Enc=Camellia(256)", "Camellia256"),
    ("Enc=AESGCM(128)", "Aes128Gcm"),
    ("Enc=AESGCM(256)", "Aes256Gcm"),
    ("Enc=AESCCM(128)", "Aes128Ccm"),
    ("Enc=AESCCM(256)", "Aes256Ccm"),
    ("Enc=AESCCM8(128)", "Aes128Ccm8"),
    ("Enc=AESCCM8(256)", "Aes256Ccm8"),
    ("Enc=CHACHA20/POLY1305(256)", "Chacha20Poly1305"),
    ("Enc=ARIAGCM(128)", "Aria128Gcm"),
    ("Enc=ARIAGCM(256)", "Aria256Gcm"),
    ("Mac=MD5", "Md5"),
    ("Mac=SHA1", "Sha1"),
    ("Mac=SHA256", "Sha256"),
    ("Mac=SHA384", "Sha384"),
    ("Mac=AEAD", "Aead"),
];

/// nowait's name for one of OpenSSL's words.
fn ours(word: &str) -> &'static str {
    WORDS
        .iter()
        .find(|(w, _)| *w == word)
        .map(|(_, o)| *o)
        .unwrap_or_else(|| panic!("no nowait name for {word}"))
}

/// `s` as a quoted nginx configuration argument.
fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// A self-signed ECDSA certificate and its key in a fresh directory: on
/// P-521, whose 256-bit strength `@SECLEVEL=5` allows (nginx refuses a
/// weaker key there: `ee key too small`).
fn certificate() -> TempDir {
    let dir = TempDir::new("tls-names");
    let status = Command::new(OPENSSL)
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-521",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-days",
            "2",
        ])
        .arg("-keyout")
        .arg(dir.path().join("key.pem"))
        .arg("-out")
        .arg(dir.path().join("cert.pem"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("openssl runs");
    assert!(status.success(), "openssl req made no certificate");
    dir
}

/// The TLS lines of a server block with the certificate in `cert`.
fn tls_server(cert: &Path) -> String {
    format!(
        "ssl_certificate {0}/cert.pem; ssl_certificate_key {0}/key.pem;",
        cert.display()
    )
}

#[test]
fn nginx_accepts_and_refuses_what_nowait_does_in_its_words() {
    require_or_skip!(Path::new(OPENSSL).exists(), "{OPENSSL} is not installed");
    require_or_skip!(
        Path::new(nginx_t::NGINX).exists(),
        "{} is not installed",
        nginx_t::NGINX
    );
    let cert = certificate();
    let tls = tls_server(cert.path());
    let mut wrong = Vec::new();
    let mut check = |directive: &str, value: &str, ours: Result<(), String>| {
        let body = format!(
            "server {{ listen 127.0.0.1:18443 ssl; {tls} {directive} {}; }}",
            quoted(value)
        );
        let conf = Conf::new("tls", &nginx_t::http(&body));
        let (code, stderr) = conf.nginx();
        let theirs = match code {
            Some(0) => Ok(()),
            _ => Err(messages(&stderr, "emerg")
                .first()
                .cloned()
                .unwrap_or(stderr)),
        };
        if theirs != ours {
            wrong.push(format!(
                "{directive} {value:?}:\n  nginx  {theirs:?}\n  nowait {ours:?}"
            ));
        }
    };
    for (spec, _) in cipher_cases() {
        check(
            "ssl_ciphers",
            spec,
            ciphers::evaluate(spec).map(drop).map_err(|e| e.to_string()),
        );
    }
    for (spec, _) in group_cases() {
        // nginx hands `auto` to nobody; nowait reads it as OpenSSL's list.
        check(
            "ssl_ecdh_curve",
            spec,
            groups::parse(spec).map(drop).map_err(|e| e.to_string()),
        );
    }
    check("ssl_ecdh_curve", "auto", Ok(()));
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// One line of the test's access log: `$ssl_protocol|$ssl_cipher|
/// $ssl_curves|$ssl_ciphers`, after a connection of `openssl s_client
/// ARGS` to `server`.
fn logged_after(server: &Server, args: &[&str]) -> String {
    let log = server.prefix().join("tls.log");
    let before = std::fs::read_to_string(&log).unwrap_or_default();
    let mut child = Command::new("timeout")
        .arg("20")
        .arg(OPENSSL)
        .args(["s_client", "-quiet", "-connect"])
        .arg(format!("127.0.0.1:{}", server.port()))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("openssl s_client runs");
    use std::io::Write;
    let mut stdin = child.stdin.take().expect("a pipe");
    stdin
        .write_all(b"GET / HTTP/1.0\r\n\r\n")
        .expect("the request is written");
    drop(stdin);
    let out = child.wait_with_output().expect("s_client ends");
    assert!(
        out.status.success(),
        "openssl s_client {args:?}: {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let deadline = Instant::now() + LOG_TIMEOUT;
    loop {
        let now = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(line) = now[before.len().min(now.len())..].lines().next() {
            return line.to_owned();
        }
        assert!(Instant::now() < deadline, "nginx logged nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn nginx_prints_what_the_client_offered_as_nowait_formats_it() {
    require_or_skip!(Path::new(OPENSSL).exists(), "{OPENSSL} is not installed");
    require_or_skip!(
        Path::new(nginx_t::NGINX).exists(),
        "{} is not installed",
        nginx_t::NGINX
    );
    let cert = certificate();
    let conf = format!(
        "pid {{prefix}}/nginx.pid;\nevents {{}}\nhttp {{\n\
         log_format t '$ssl_protocol|$ssl_cipher|$ssl_curves|$ssl_ciphers';\n\
         access_log {{prefix}}/tls.log t;\n\
         server {{ listen 127.0.0.1:{{port}} ssl; {}\n\
         ssl_protocols TLSv1.2 TLSv1.3; ssl_ciphers 'ALL:COMPLEMENTOFALL:@SECLEVEL=0';\n\
         location / {{ return 204; }} }}\n}}\n",
        tls_server(cert.path())
    );
    let server = Server::nginx(&conf);
    // The client's list: its TLS 1.3 suites, the cipher string (PSK and SRP
    // left out: a client without their callbacks offers none), the SCSV.
    let cipher_spec = "ALL:COMPLEMENTOFALL:!PSK:!SRP:@SECLEVEL=0";
    let tls13 = [0x1302, 0x1303, 0x1301];
    let mut offered: Vec<u16> = tls13.to_vec();
    offered.extend(
        ciphers::evaluate(cipher_spec)
            .unwrap()
            .ciphers
            .iter()
            .map(|c| c.code),
    );
    offered.push(0x00FF);
    // Every group OpenSSL knows, in an order of no list's.
    let every_group = "X25519:P-256:X448:P-521:P-384:ffdhe2048:ffdhe3072:ffdhe4096:\
                       ffdhe6144:ffdhe8192:brainpoolP256r1:brainpoolP384r1:brainpoolP512r1:\
                       secp256k1:secp224r1:secp224k1:secp192r1:secp192k1:secp160r2:secp160r1:\
                       secp160k1:sect571r1:sect571k1:sect409r1:sect409k1:sect283r1:sect283k1:\
                       sect239k1:sect233r1:sect233k1:sect193r2:sect193r1:sect163r2:sect163r1:\
                       sect163k1";
    let line = logged_after(&server, &["-groups", every_group, "-cipher", cipher_spec]);
    let want = format!(
        "{}|{}|{}|{}",
        ciphers::protocol_name(0x0304),
        ciphers::openssl_name(0x1302).unwrap(),
        groups::format_offered(&groups::parse(every_group).unwrap()),
        ciphers::format_offered(&offered)
    );
    assert_eq!(line, want);

    let line = logged_after(
        &server,
        &[
            "-tls1_2",
            "-groups",
            "P-521:X25519",
            "-cipher",
            "ECDHE-ECDSA-AES128-GCM-SHA256",
        ],
    );
    let want = format!(
        "{}|{}|{}|{}",
        ciphers::protocol_name(0x0303),
        ciphers::openssl_name(0xC02B).unwrap(),
        groups::format_offered(&[0x0019, 0x001d]),
        ciphers::format_offered(&[0xC02B, 0x00FF])
    );
    assert_eq!(line, want);
}
