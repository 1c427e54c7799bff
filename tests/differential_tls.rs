//! Differential test of TLS: nowait and the real nginx 1.22 (Debian's,
//! with OpenSSL 3.0) run the same configuration and certificates
//! (`tests/tls/`), and real clients — `openssl s_client`, `curl`, and a
//! rustls client that reads records off the socket — see the same things
//! from both:
//!
//! - which certificate SNI picks (server names exact, wildcard and
//!   regex, `default_server`, no SNI, an IP literal) and which of an RSA
//!   and an ECDSA pair the client's `-sigalgs` picks;
//! - the protocol, cipher and group negotiated under `ssl_protocols`,
//!   `ssl_ciphers`, `ssl_prefer_server_ciphers`, `ssl_ecdh_curve` and the
//!   client's `-cipher`, `-ciphersuites`, `-groups`; ALPN;
//! - session resumption (`-sess_out`/`-sess_in`, `-reconnect`) with
//!   tickets on and off, every session cache, ticket key files shared by
//!   two servers and two instances, across a reload, and expiry;
//! - the `$ssl_*`, `$https`, `$scheme`, `$request`, `$server_port` values
//!   in the access log;
//! - plain HTTP sent to a TLS port (497, `error_page 497`),
//!   `ssl_reject_handshake`, `listen … ssl` beside a plain `listen`,
//!   `ssl on`, `ssl_buffer_size`, how connections end, a pipelined
//!   request, a large body proxied, a 1 MiB file with `sendfile` and
//!   `aio threads`;
//! - `-t` on every TLS misconfiguration in [`misconfigurations`]: the same
//!   `[emerg]` and `[warn]` lines, nowait adding ` in FILE:LINE` where
//!   nginx names no place.
//!
//! Each probe gives named fields; a case's mismatches are reported as
//! `probe N FIELD` with both values. Differences kept on purpose are
//! listed in `differential/known-differences.txt` as `tls-CASE [probe N
//! FIELD, …]: reason` (the `-t` cases as `tls-t-NAME [emerg]: reason`):
//! reported, not failing; any other field that differs fails.
//!
//! Needs `/usr/sbin/nginx`, `openssl` and `curl` (scripts/install-test-deps.sh).
//! Run: `cargo test --test differential_tls -- --nocapture`
//! (`NOWAIT_DIFF_ONLY=name,name` runs only those cases;
//! `NOWAIT_DIFF_SELF=1` compares nginx with a second nginx;
//! `NOWAIT_DIFF_VERBOSE=1` prints nginx's fields of every probe).

mod common;
#[path = "differential/corpus.rs"]
#[allow(dead_code)]
mod corpus;
#[path = "differential/tls_cases.rs"]
mod tls_cases;
#[path = "differential/tls_probes.rs"]
mod tls_probes;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::nginx_t::{self, messages};
use common::server::{Kind, NGINX_BIN, free_port};
use common::{Server, Upstream, require, wait};
use tls_cases::{Case, Probe, cases, misconfigurations};
use tls_probes::Fields;

/// How many extra ports (`{port1}` …) a case may use.
const EXTRA_PORTS: usize = 3;
/// How long a server may take to write a request's log line.
const LOG_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a reload may take to be in effect.
const RELOAD_TIMEOUT: Duration = Duration::from_secs(20);

/// The access log format every case writes (`{prefix}/access.log`).
const LOG_FORMAT: &str = "log_format tls '$ssl_protocol|$ssl_cipher|$ssl_ciphers|$ssl_curves|\
$ssl_server_name|$ssl_session_reused|$https|$scheme|$request|$server_port|$ssl_curve|\
$ssl_alpn_protocol|$ssl_session_id|$status';";

/// One running instance of a case: its server, its ports, its session
/// file, and the generation its configuration is at.
struct Instance {
    server: Server,
    ports: Vec<u16>,
    conf: String,
    generation: u32,
    log_lines: usize,
}

/// The time every served file was last modified: one for both servers,
/// so that their `ETag` and `Last-Modified` agree however far apart in
/// time the two instances wrote them.
const FILE_MTIME: Duration = Duration::from_secs(1_700_000_000);

/// Writes `body` to `path` and gives it [`FILE_MTIME`].
fn write_fixed(path: &Path, body: &[u8]) {
    std::fs::write(path, body).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let f = std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    f.set_modified(std::time::UNIX_EPOCH + FILE_MTIME)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

impl Instance {
    fn start(kind: Kind, case: &Case, upstream: Option<u16>) -> Instance {
        let mut ports = vec![0];
        ports.extend((0..EXTRA_PORTS).map(|_| free_port()));
        let conf = render(case, &ports, upstream);
        // The root exists when the server starts: nowait's workers may
        // read only what was there (Landlock).
        let server = Server::start_with_dirs(kind, &conf.replace("{gen}", "0"), &["html"]);
        ports[0] = server.port();
        let root = server.prefix().join("html");
        for (name, body) in [
            ("index.html", b"index\n".to_vec()),
            ("big.bin", common::pattern(1 << 20)),
            ("64k.bin", common::pattern(64 << 10)),
        ] {
            write_fixed(&root.join(name), &body);
        }
        Instance {
            server,
            ports,
            conf,
            generation: 0,
            log_lines: 0,
        }
    }

    fn sess(&self) -> PathBuf {
        self.server.prefix().join("session.pem")
    }

    /// Reloads a new generation of the same configuration and waits until
    /// it answers (the generation port says its number).
    fn reload(&mut self) -> Fields {
        self.generation += 1;
        let text = self.conf.replace("{gen}", &self.generation.to_string());
        self.server.write_conf(&text);
        let (status, err) = self.server.control("reload");
        let want = format!("gen {}", self.generation);
        let port = self.ports[EXTRA_PORTS];
        let ok = status.success()
            && wait::until(RELOAD_TIMEOUT, || {
                let r = tls_probes::raw(port, b"GET / HTTP/1.0\r\n\r\n");
                r.first().is_some_and(|(_, v)| v.contains(&want))
            });
        vec![(
            "reload".into(),
            if ok {
                "done".into()
            } else {
                format!("failed: {err}")
            },
        )]
    }

    /// The access log lines written since the last look, normalized (each
    /// server's ports, session ids).
    fn log(&mut self, want: Option<usize>) -> Fields {
        let path = self.server.prefix().join("access.log");
        let lines = |p: &Path| {
            wait::read_text(p)
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        if let Some(n) = want {
            wait::until(LOG_TIMEOUT, || lines(&path).len() >= self.log_lines + n);
        } else {
            std::thread::sleep(Duration::from_millis(300));
        }
        let all = lines(&path);
        let new: Vec<String> = all.iter().skip(self.log_lines).cloned().collect();
        self.log_lines = all.len();
        new.iter()
            .enumerate()
            .map(|(i, l)| (format!("log line {}", i + 1), normalize(l, &self.ports)))
            .collect()
    }
}

/// The configuration of `case` for one instance: the case's `http`
/// contents after the log format, its extra ports, the fixtures' folder,
/// the document root, and a plain server on the last extra port that
/// says the configuration's generation.
fn render(case: &Case, ports: &[u16], upstream: Option<u16>) -> String {
    let mut http = format!(
        "{LOG_FORMAT}\naccess_log {{prefix}}/access.log tls;\n{}\n\
         server {{ listen 127.0.0.1:{{port{EXTRA_PORTS}}}; access_log off; location / {{ return 200 \"gen {{gen}}\\n\"; }} }}\n",
        case.http
    );
    for (i, p) in ports.iter().enumerate().skip(1) {
        http = http.replace(&format!("{{port{i}}}"), &p.to_string());
    }
    if let Some(up) = upstream {
        http = http.replace("{upstream}", &up.to_string());
    }
    let http = http
        .replace("{fix}", &common::tls::fixtures().to_string_lossy())
        .replace("{root}", "{prefix}/html");
    common::Conf::http(&http).main(case.main).render()
}

/// A log line or body with each instance's own values replaced: its
/// ports by `PORTn`, 64-hex-digit session ids by `ID`.
fn normalize(text: &str, ports: &[u16]) -> String {
    let mut t = text.to_string();
    for (i, p) in ports.iter().enumerate() {
        t = t.replace(&p.to_string(), &format!("PORT{i}"));
    }
    let mut out = String::new();
    let mut run = String::new();
    for c in t.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_hexdigit() && !c.is_ascii_uppercase() {
            run.push(c);
            continue;
        }
        if run.len() == 64 {
            out.push_str("ID");
        } else {
            out.push_str(&run);
        }
        run.clear();
        out.push(c);
    }
    out.pop();
    out
}

/// Runs one probe against `inst` (or its twin).
fn probe(p: &Probe, inst: &mut Instance, twin: Option<&mut Instance>) -> Fields {
    match p {
        Probe::S(s) => {
            let f = tls_probes::s_client(s, inst.ports[s.port], &inst.sess());
            f.into_iter()
                .map(|(k, v)| {
                    let v = normalize(&v, &inst.ports);
                    (k, v)
                })
                .collect()
        }
        Probe::Curl(c) => {
            let root = inst.server.prefix().join("html");
            let mut c = c.clone();
            for a in &mut c.args {
                *a = a.replace("{root}", &root.to_string_lossy());
            }
            tls_probes::curl(&c, inst.ports[c.port], inst.server.prefix())
        }
        .into_iter()
        .map(|(k, v)| (k, normalize(&v, &inst.ports)))
        .collect(),
        Probe::Raw(port, bytes) => tls_probes::raw(inst.ports[*port], bytes.as_bytes())
            .into_iter()
            .map(|(k, v)| (k, normalize(&v, &inst.ports)))
            .collect(),
        Probe::Records { port, tls13, path } => {
            tls_probes::records(inst.ports[*port], *tls13, path)
        }
        Probe::ClientClose { port, notify } => tls_probes::client_close(inst.ports[*port], *notify),
        Probe::Log(n) => inst.log(Some(*n)),
        Probe::Reload => inst.reload(),
        Probe::Sleep(secs) => {
            std::thread::sleep(Duration::from_secs(*secs));
            Vec::new()
        }
        Probe::Twin(inner) => {
            let twin = twin.expect("a case with twin probes starts twins");
            // The session file is the first instance's: what it kept is
            // offered to the twin.
            let sess = inst.sess();
            match &**inner {
                Probe::S(s) => tls_probes::s_client(s, twin.ports[s.port], &sess)
                    .into_iter()
                    .map(|(k, v)| (k, normalize(&v, &twin.ports)))
                    .collect(),
                other => probe(other, twin, None),
            }
        }
    }
}

/// Runs `case` against `kind`: every probe's fields, in order.
fn run_case(kind: Kind, case: &Case) -> Vec<Fields> {
    let upstream = case.upstream.then(Upstream::echo);
    let up_port = upstream.as_ref().map(Upstream::port);
    let mut inst = Instance::start(kind, case, up_port);
    let mut twin = case
        .probes
        .iter()
        .any(|p| matches!(p, Probe::Twin(_)))
        .then(|| Instance::start(kind, case, up_port));
    let out: Vec<Fields> = case
        .probes
        .iter()
        .map(|p| probe(p, &mut inst, twin.as_mut()))
        .collect();
    if let Some(up) = &upstream {
        // What reached the upstream: each body's length and digest.
        let bodies: Vec<String> = up
            .requests()
            .iter()
            .map(|r| {
                format!(
                    "{} bytes, digest {:016x}",
                    r.body.len(),
                    tls_probes::digest(&r.body)
                )
            })
            .collect();
        let mut out = out;
        out.push(vec![("upstream bodies".into(), bodies.join("; "))]);
        return out;
    }
    out
}

/// Whether the machine has what the test `test` needs; fails under
/// `NOWAIT_REQUIRE_ALL=1`, else says SKIPPED.
fn tools_present(test: &str) -> bool {
    for (path, what) in [
        (NGINX_BIN, "nginx"),
        (tls_probes::OPENSSL, "openssl"),
        (tls_probes::CURL, "curl"),
    ] {
        if !Path::new(path).exists() {
            return require(
                false,
                test,
                &format!("{what} ({path}) is missing: run scripts/install-test-deps.sh"),
            );
        }
    }
    true
}

fn known() -> corpus::Known {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/differential/known-differences.txt"),
    )
    .expect("read known-differences.txt");
    corpus::parse_known(&text).expect("known-differences.txt")
}

/// Reports one case's mismatches; whether it fails.
fn report(known: &corpus::Known, key: &str, diffs: &[(String, String, String)]) -> bool {
    if diffs.is_empty() {
        println!("ok    {key}");
        return false;
    }
    let fields: Vec<&str> = diffs.iter().map(|(f, _, _)| f.as_str()).collect();
    let not_named = known.not_named(key, &fields);
    let failed = !not_named.is_empty();
    match known.cases.get(key) {
        Some(k) if !failed => println!("known {key} ({})", k.reason),
        Some(k) => println!(
            "FAIL  {key}: listed for {} only, differs in {} too",
            k.fields.join(", "),
            not_named.join(", ")
        ),
        None => println!("FAIL  {key}"),
    }
    for (field, a, b) in diffs {
        println!("      {field}:\n        nginx:  {a:?}\n        nowait: {b:?}");
    }
    failed
}

/// The names of the cases `NOWAIT_DIFF_ONLY` asks for, if it does.
fn only() -> Option<Vec<String>> {
    std::env::var("NOWAIT_DIFF_ONLY")
        .ok()
        .map(|s| s.split(',').map(str::to_string).collect())
}

/// The known-differences list names only cases that exist.
#[test]
fn known_differences_name_tls_cases() {
    let known = known();
    let mut names: Vec<String> = cases().iter().map(|c| format!("tls-{}", c.name)).collect();
    names.extend(
        misconfigurations()
            .iter()
            .map(|(n, _)| format!("tls-t-{n}")),
    );
    let stale: Vec<&String> = known
        .cases
        .keys()
        .filter(|k| k.starts_with("tls-") && !names.contains(k))
        .collect();
    assert!(
        stale.is_empty(),
        "known-differences.txt names unknown TLS cases: {stale:?}"
    );
    let mut seen = std::collections::BTreeSet::new();
    for c in cases() {
        assert!(seen.insert(c.name), "case {} is there twice", c.name);
    }
}

/// The live cases; see the file header.
#[test]
fn tls_matches_nginx() {
    if !tools_present("tls_matches_nginx") {
        return;
    }
    let known = known();
    let only = only();
    let self_check = std::env::var_os("NOWAIT_DIFF_SELF").is_some_and(|v| v == "1");
    let tested = if self_check {
        Kind::Nginx
    } else {
        Kind::Nowait
    };
    let all: Vec<Case> = cases()
        .into_iter()
        .filter(|c| only.as_ref().is_none_or(|o| o.iter().any(|n| n == c.name)))
        .collect();
    let mut failed = 0;
    for case in &all {
        let (a, b) = std::thread::scope(|s| {
            let b = s.spawn(|| run_case(tested, case));
            (
                run_case(Kind::Nginx, case),
                b.join().expect("the tested run"),
            )
        });
        if std::env::var_os("NOWAIT_DIFF_VERBOSE").is_some_and(|v| v == "1") {
            for (i, f) in a.iter().enumerate() {
                println!("      nginx probe {}: {f:?}", i + 1);
            }
        }
        let mut diffs = Vec::new();
        for (i, (fa, fb)) in a.iter().zip(&b).enumerate() {
            let ma: BTreeMap<&str, &str> =
                fa.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let mb: BTreeMap<&str, &str> =
                fb.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let keys: std::collections::BTreeSet<&str> =
                ma.keys().chain(mb.keys()).copied().collect();
            for k in keys {
                let (va, vb) = (
                    ma.get(k).copied().unwrap_or("(none)"),
                    mb.get(k).copied().unwrap_or("(none)"),
                );
                if va != vb {
                    diffs.push((
                        format!("probe {} {k}", i + 1),
                        va.to_string(),
                        vb.to_string(),
                    ));
                }
            }
        }
        if report(&known, &format!("tls-{}", case.name), &diffs) {
            failed += 1;
        }
    }
    println!("differential_tls: {} cases, {failed} failed", all.len());
    assert_eq!(
        failed, 0,
        "{failed} TLS cases differ from nginx (see the report above)"
    );
}

/// `-t` on each misconfiguration: nginx's and nowait's `[emerg]` and
/// `[warn]` lines and exit codes, nowait allowed ` in FILE:LINE` where
/// nginx says no place.
#[test]
fn tls_misconfigurations_are_said_as_nginx_says_them() {
    if !tools_present("tls_misconfigurations_are_said_as_nginx_says_them") {
        return;
    }
    let known = known();
    let only = only();
    let mut failed = 0;
    for (name, body) in misconfigurations() {
        if only.as_ref().is_some_and(|o| !o.iter().any(|n| n == name)) {
            continue;
        }
        let body = body.replace("{fix}", &common::tls::fixtures().to_string_lossy());
        let conf = nginx_t::Conf::new(name, &nginx_t::http(&body));
        for (file, bytes) in tls_cases::MISCONF_FILES {
            std::fs::write(conf.dir.join(file), bytes()).expect("a file for -t");
        }
        let text = std::fs::read_to_string(conf.file())
            .expect("the conf")
            .replace("{dir}", &conf.dir.to_string_lossy());
        std::fs::write(conf.file(), text).expect("the conf");
        let (ncode, nerr) = conf.nginx();
        let (wcode, werr) = conf.nowait();
        let place = format!(" in {}:", conf.file());
        let mut diffs = Vec::new();
        if ncode != wcode {
            diffs.push((
                "exit code".to_string(),
                format!("{ncode:?}"),
                format!("{wcode:?}"),
            ));
        }
        for level in ["emerg", "warn"] {
            let n = messages(&nerr, level);
            let w: Vec<String> = messages(&werr, level)
                .into_iter()
                .zip(n.iter().map(Some).chain(std::iter::repeat(None)))
                .map(|(w, n)| match n {
                    // nowait names the place nginx does not.
                    Some(n) if !n.contains(&place) => match w.rfind(&place) {
                        Some(i) => w[..i].to_string(),
                        None => w,
                    },
                    _ => w,
                })
                .collect();
            // nginx stops at its first error; nowait says every one.
            let w = if level == "emerg" {
                w.into_iter().take(n.len().max(1)).collect()
            } else {
                w
            };
            if n != w {
                diffs.push((level.to_string(), n.join(" | "), w.join(" | ")));
            }
        }
        if report(&known, &format!("tls-t-{name}"), &diffs) {
            failed += 1;
        }
    }
    assert_eq!(
        failed, 0,
        "{failed} -t cases differ from nginx (see the report above)"
    );
}
