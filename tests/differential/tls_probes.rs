//! The clients of `differential_tls.rs` and what each reports: every probe
//! gives named fields (`cert`, `protocol`, `alert` …) with normalized
//! values, so that nginx's and nowait's answers compare field by field.
//!
//! - `openssl s_client` (OpenSSL 3.0): the certificate sent (named after
//!   the fixture it is), the protocol, cipher and key-exchange group,
//!   ALPN, whether the session was new or resumed, the alert a failed
//!   handshake got, and the HTTP bytes that came back.
//! - `curl`: its exit code and error, TLS version, cipher, ALPN, status
//!   and body.
//! - raw TCP (plain HTTP sent to a TLS port).
//! - a rustls client that reads the records off the socket itself: the
//!   largest application-data record (`ssl_buffer_size`), and how the
//!   server ends a connection (close_notify or not).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::tls::{self, fixture, fixtures};

/// Debian's OpenSSL command line.
pub const OPENSSL: &str = "/usr/bin/openssl";
/// Debian's curl.
pub const CURL: &str = "/usr/bin/curl";
/// How long one client may run before it is killed (its fields then say
/// so).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a raw or rustls read waits for more bytes.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// One probe's outcome: (field, value) in a fixed order.
pub type Fields = Vec<(String, String)>;

/// The certificates of the fixtures, by name, as their base64 bodies: a
/// certificate `s_client` prints is named after the fixture it is.
fn fixture_certs() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(fixtures()).expect("the TLS fixtures") {
        let path = entry.expect("a fixture").path();
        if path.extension().is_some_and(|e| e == "crt") {
            let text = std::fs::read_to_string(&path).expect("read a fixture");
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            out.push((name, pem_body(&text)));
        }
    }
    out
}

/// The base64 of the first PEM block of `text`, without line breaks.
fn pem_body(text: &str) -> String {
    let start = text.find("-----BEGIN CERTIFICATE-----");
    let end = text.find("-----END CERTIFICATE-----");
    match (start, end) {
        (Some(s), Some(e)) if e > s => text[s + 27..e].split_whitespace().collect(),
        _ => String::new(),
    }
}

/// Runs `cmd` with `input` on stdin, killing it after [`CLIENT_TIMEOUT`];
/// (exit code or `killed`, stdout, stderr).
fn run(cmd: &mut Command, input: &[u8]) -> (String, String, String) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
        // Keep stdin open a moment: s_client ends its session when stdin
        // ends, and the answer must come first.
        std::thread::sleep(Duration::from_millis(300));
    });
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let ereader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    let code = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break status
                .code()
                .map_or("signal".to_string(), |c| c.to_string());
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break "killed".to_string();
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let _ = writer.join();
    let out = reader.join().unwrap_or_default();
    let err = ereader.join().unwrap_or_default();
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

/// What an `s_client` probe asks for.
#[derive(Clone, Debug)]
pub struct SClient {
    /// Which of the case's ports (0: `{port}`, 1: `{port1}` …).
    pub port: usize,
    /// Arguments after `-connect` (placeholders: `{sess}` a session file
    /// kept per server).
    pub args: Vec<String>,
    /// What is written to it (a request); empty: none, and the client
    /// ends at once.
    pub input: Vec<u8>,
}

/// Runs `openssl s_client` against `port`; `sess` is the session file.
pub fn s_client(p: &SClient, port: u16, sess: &Path) -> Fields {
    let mut cmd = Command::new(OPENSSL);
    cmd.arg("s_client")
        .arg("-connect")
        .arg(format!("127.0.0.1:{port}"))
        .arg("-CAfile")
        .arg(fixture("ca.crt"));
    // A session offered that the server never gave is said, and the
    // connection made without it.
    let offered = p.args.iter().any(|a| a == "-sess_in");
    let missing = offered && !sess.exists();
    let sess_text = sess.to_string_lossy();
    let mut args = p.args.iter().peekable();
    while let Some(a) = args.next() {
        if missing && a == "-sess_in" {
            args.next();
            continue;
        }
        cmd.arg(a.replace("{sess}", &sess_text));
    }
    if p.args.iter().any(|a| a == "-sess_out") {
        let _ = std::fs::remove_file(sess);
    }
    if !p.input.is_empty() {
        cmd.arg("-ign_eof");
    }
    let (code, out, err) = run(&mut cmd, &p.input);
    let reconnect = p.args.iter().any(|a| a == "-reconnect");
    let mut f = parse_s_client(&code, &out, &err, reconnect, !p.input.is_empty());
    if offered {
        f.push((
            "session offered".into(),
            if missing { "none saved" } else { "saved" }.into(),
        ));
    }
    f
}

/// The fields of an `s_client` run's output (`out`) and errors (`err`);
/// the response too when a request was `asked`.
pub fn parse_s_client(code: &str, out: &str, err: &str, reconnect: bool, asked: bool) -> Fields {
    let mut f: Fields = Vec::new();
    let mut put = |k: &str, v: String| f.push((k.to_string(), v));
    put(
        "exit",
        if code == "killed" {
            code.into()
        } else {
            "done".into()
        },
    );
    put("connected", out.contains("CONNECTED(").to_string());
    let cert = if out.contains("no peer certificate available") {
        "none".to_string()
    } else {
        match out.find("Server certificate") {
            Some(i) => {
                let body = pem_body(&out[i..]);
                fixture_certs()
                    .into_iter()
                    .find(|(_, b)| *b == body)
                    .map_or_else(|| "unknown".to_string(), |(n, _)| n)
            }
            None => "none".to_string(),
        }
    };
    put("cert", cert);
    let sessions: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("New, ") || l.starts_with("Reused, "))
        .collect();
    match sessions.first() {
        Some(l) => {
            // "New, TLSv1.3, Cipher is TLS_AES_256_GCM_SHA384"
            let mut parts = l.splitn(3, ", ");
            put("session", parts.next().unwrap_or("").to_string());
            put("protocol", parts.next().unwrap_or("").to_string());
            put(
                "cipher",
                parts
                    .next()
                    .unwrap_or("")
                    .trim_start_matches("Cipher is ")
                    .to_string(),
            );
        }
        None => put("session", "none".into()),
    }
    if reconnect {
        let reused = sessions
            .iter()
            .filter(|l| l.starts_with("Reused, "))
            .count();
        put("reconnects reused", reused.to_string());
    }
    let line_after = |key: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|v| v.trim().to_string())
    };
    put("group", line_after("Server Temp Key:").unwrap_or_default());
    let alpn = line_after("ALPN protocol:").unwrap_or_else(|| {
        if out.contains("No ALPN negotiated") {
            "none".into()
        } else {
            String::new()
        }
    });
    put("alpn", alpn);
    put("alert", alert(&format!("{out}{err}")));
    if asked {
        put("response", response(out).unwrap_or_else(|| "none".into()));
    }
    f
}

/// The alert a failed handshake got, as `s_client` reports it: `alert
/// N`, or `eof` for a close without one.
fn alert(out: &str) -> String {
    if let Some(i) = out.find("SSL alert number ") {
        let n: String = out[i + 17..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        return format!("alert {n}");
    }
    if out.contains("unexpected eof while reading") {
        return "eof".into();
    }
    if out.contains("wrong version number") {
        return "wrong version number".into();
    }
    String::new()
}

/// The HTTP bytes `s_client` printed after the handshake (its summary
/// ends at the first `---` after the `New, …` or `Reused, …` line),
/// without the session blocks TLS 1.3 tickets print among them,
/// normalized.
fn response(out: &str) -> Option<String> {
    let start = out.find("\nNew, ").or_else(|| out.find("\nReused, "))?;
    let rest = &out[start..];
    let end = rest.find("\n---\n")? + 5;
    let mut text = String::new();
    let mut skipping = false;
    for line in rest[end..].lines() {
        if line.starts_with("Post-Handshake New Session Ticket arrived:") {
            skipping = true;
            continue;
        }
        if skipping {
            if line == "---" {
                skipping = false;
            }
            continue;
        }
        if line == "---" || line == "read R BLOCK" || line == "closed" || line == "DONE" {
            continue;
        }
        text.push_str(line);
        text.push('\n');
    }
    Some(normalize_http(&text))
}

/// HTTP text with what differs between two servers by nature replaced:
/// `Date` and `Server` fields, the product in error pages. Header lines
/// are sorted within each head (nginx and nowait order some differently,
/// which no client reads).
pub fn normalize_http(text: &str) -> String {
    let text = text
        .replace("nginx/1.22.1", "SERVER")
        .replace(&format!("nowait/{}", env!("CARGO_PKG_VERSION")), "SERVER");
    let mut out = String::new();
    let mut head: Vec<String> = Vec::new();
    let mut in_head = false;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\r', '\n']);
        if bare.starts_with("HTTP/1.") {
            in_head = true;
            out.push_str(line);
            continue;
        }
        if in_head {
            if bare.is_empty() {
                head.sort();
                for h in head.drain(..) {
                    out.push_str(&h);
                }
                out.push_str(line);
                in_head = false;
                continue;
            }
            let lower = bare.to_ascii_lowercase();
            if lower.starts_with("date:") {
                head.push("Date: DATE\n".into());
            } else if lower.starts_with("server:") {
                head.push("Server: SERVER\n".into());
            } else {
                head.push(format!("{bare}\n"));
            }
            continue;
        }
        out.push_str(line);
    }
    for h in head {
        out.push_str(&h);
    }
    out
}

/// What a `curl` probe asks for.
#[derive(Clone, Debug)]
pub struct Curl {
    /// Which of the case's ports.
    pub port: usize,
    /// The host name in the URL (resolved to 127.0.0.1), or an address.
    pub host: String,
    /// The path.
    pub path: String,
    /// More arguments (`--http2`, `--tlsv1.3`, `--data-binary @FILE`).
    pub args: Vec<String>,
    /// Whether the body is compared (else only its length).
    pub body: bool,
}

/// Runs `curl` against `port`; the body goes to a file in `dir`, and is
/// reported as itself when short, else as its length and digest.
pub fn curl(p: &Curl, port: u16, dir: &Path) -> Fields {
    let url = format!("https://{}:{port}{}", p.host, p.path);
    let body_file = dir.join("curl-body");
    let _ = std::fs::remove_file(&body_file);
    let mut cmd = Command::new(CURL);
    cmd.args(["-sS", "-v", "--cacert"])
        .arg(fixture("ca.crt"))
        .arg("--resolve")
        .arg(format!("{}:{port}:127.0.0.1", p.host))
        .arg("-o")
        .arg(&body_file)
        .args(["-w", "@@%{http_code} %{http_version}@@"])
        .args(&p.args)
        .arg(&url);
    let (code, stdout, err) = run(&mut cmd, b"");
    let out = format!("{stdout}{err}");
    let mut f: Fields = vec![("exit".into(), code)];
    let line = |prefix: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    f.push(("tls".into(), line("* SSL connection using ")));
    f.push(("alpn".into(), line("* ALPN: server accepted ")));
    // curl's error line names OpenSSL's reason (`tlsv1 alert …`).
    f.push(("error".into(), line("curl: ")));
    let status = out.split("@@").nth(1).unwrap_or("").to_string();
    f.push(("status".into(), status));
    let body = std::fs::read(&body_file).unwrap_or_default();
    let body = if !p.body {
        format!("{} bytes", body.len())
    } else if body.len() <= 512 {
        String::from_utf8_lossy(&body).into_owned()
    } else {
        format!("{} bytes, digest {:016x}", body.len(), digest(&body))
    };
    f.push(("body".into(), body));
    f
}

/// A digest of `b` (FNV-1a: enough to tell two bodies apart).
pub fn digest(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Sends `bytes` over plain TCP to `port`; what came back (normalized)
/// and whether the server closed.
pub fn raw(port: u16, bytes: &[u8]) -> Fields {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(READ_TIMEOUT)).expect("timeout");
    s.write_all(bytes).expect("write");
    let mut got = Vec::new();
    let mut buf = [0u8; 16384];
    let closed = loop {
        match s.read(&mut buf) {
            Ok(0) => break "closed",
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break "reset",
            Err(_) => break "open",
        }
    };
    vec![
        (
            "response".into(),
            normalize_http(&String::from_utf8_lossy(&got).replace("\r\n", "\n")),
        ),
        ("connection".into(), closed.into()),
    ]
}

/// A TCP stream that counts the TLS records it reads (their headers are
/// parsed as the bytes pass).
struct Counting {
    sock: TcpStream,
    /// Bytes of the current record still to come.
    left: usize,
    /// The header being read.
    header: Vec<u8>,
    /// The length of each application-data record seen.
    app: Vec<usize>,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.sock.read(buf)?;
        let mut i = 0;
        while i < n {
            if self.left > 0 {
                let take = self.left.min(n - i);
                self.left -= take;
                i += take;
                continue;
            }
            self.header.push(buf[i]);
            i += 1;
            if self.header.len() == 5 {
                let len = usize::from(u16::from_be_bytes([self.header[3], self.header[4]]));
                if self.header[0] == 0x17 {
                    self.app.push(len);
                }
                self.left = len;
                self.header.clear();
            }
        }
        Ok(n)
    }
}

impl Write for Counting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.sock.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.sock.flush()
    }
}

/// The client configuration for the record probes: TLS 1.3 or 1.2 only.
fn rustls_client(tls13: bool) -> Arc<rustls::ClientConfig> {
    let versions = if tls13 {
        vec![&rustls::version::TLS13]
    } else {
        vec![&rustls::version::TLS12]
    };
    tls::client(&tls::Options {
        versions,
        ..tls::Options::default()
    })
}

/// GETs `path` (HTTP/1.0: the server closes) over TLS and reports the
/// most frequent length of the application-data records the server sent
/// after the handshake (ciphertext: the same AEAD overhead for both
/// servers), the body length, and how the connection ended.
pub fn records(port: u16, tls13: bool, path: &str) -> Fields {
    let sock = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    sock.set_read_timeout(Some(READ_TIMEOUT)).expect("timeout");
    let mut io = Counting {
        sock,
        left: 0,
        header: Vec::new(),
        app: Vec::new(),
    };
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("a name");
    let mut conn = rustls::ClientConnection::new(rustls_client(tls13), name).expect("a client");
    while conn.is_handshaking() {
        if conn.complete_io(&mut io).is_err() {
            return vec![("handshake".into(), "failed".into())];
        }
    }
    let handshake_records = io.app.len();
    let mut s = rustls::Stream::new(&mut conn, &mut io);
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").expect("write");
    let mut got = Vec::new();
    let end = match s.read_to_end(&mut got) {
        Ok(_) => "close_notify",
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => "eof",
        Err(e) => return vec![("read".into(), e.to_string())],
    };
    // TLS 1.3's handshake also travels in application-data records: only
    // those after it count.
    // The body's records outnumber the tickets' that may come among
    // them: the most frequent length is the records' size.
    let after = &io.app[handshake_records.min(io.app.len())..];
    let mut counts = std::collections::BTreeMap::new();
    for &len in after {
        *counts.entry(len).or_insert(0usize) += 1;
    }
    let common = counts
        .iter()
        .max_by_key(|&(len, n)| (*n, *len))
        .map_or(0, |(len, _)| *len);
    let body = got
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(0, |i| got.len() - i - 4);
    vec![
        ("most frequent record".into(), common.to_string()),
        ("body bytes".into(), body.to_string()),
        ("end".into(), end.into()),
    ]
}

/// How a keep-alive connection ends when the client ends it: after one
/// request, the client sends close_notify (`notify`) or only shuts its
/// side of the socket down; then what the server sends before its FIN.
pub fn client_close(port: u16, notify: bool) -> Fields {
    let sock = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    sock.set_read_timeout(Some(READ_TIMEOUT)).expect("timeout");
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("a name");
    let mut conn = rustls::ClientConnection::new(rustls_client(true), name).expect("a client");
    let mut sock2 = sock.try_clone().expect("clone");
    let mut s = rustls::Stream::new(&mut conn, &mut sock2);
    write!(s, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n").expect("write");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return vec![("response".into(), "none".into())],
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    if notify {
        conn.send_close_notify();
        while conn.wants_write() {
            if conn.write_tls(&mut sock2).is_err() {
                break;
            }
        }
    } else {
        let _ = sock.shutdown(Shutdown::Write);
    }
    // Read what the server sends until its FIN: close_notify first, or
    // not.
    let mut notified = false;
    let end = loop {
        match conn.read_tls(&mut sock2) {
            Ok(0) => {
                break if notified {
                    "close_notify, then FIN"
                } else {
                    "FIN"
                };
            }
            Ok(_) => match conn.process_new_packets() {
                Ok(st) if st.peer_has_closed() => notified = true,
                Ok(_) => {}
                Err(_) => break "bad record",
            },
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                break if notified {
                    "close_notify, then reset"
                } else {
                    "reset"
                };
            }
            Err(_) => {
                break if notified {
                    "close_notify, open"
                } else {
                    "open"
                };
            }
        }
    };
    vec![("server's end".into(), end.to_string())]
}
