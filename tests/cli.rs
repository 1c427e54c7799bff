//! Black-box tests of the command line: the real binary, run with nginx's
//! flags, its exit code and its messages on stderr/stdout compared with
//! nginx's. Serving is not tested here.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nowait::cli::{SignalName, signal};
use nowait::config::table::DIRECTIVES;

/// The four configurations of the brief, in `examples/`.
const EXAMPLES: [&str; 4] = [
    "benchmark.conf",
    "aio-threads.conf",
    "named-pools.conf",
    "cache-three-disks.conf",
];

/// What one run of the binary produced.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn nowait(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_nowait"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the nowait binary runs");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

fn example(name: &str) -> String {
    examples_dir().join(name).to_string_lossy().into_owned()
}

/// A fresh, empty directory for one test, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("nowait-cli-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }

    fn write(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn every_example_tests_successfully() {
    let prefix = TempDir::new("examples");
    for name in EXAMPLES {
        let file = example(name);
        let r = nowait(&["-t", "-p", prefix.path(), "-c", &file]);
        assert_eq!(r.code, Some(0), "{name}: {}", r.stderr);
        assert_eq!(
            r.stderr,
            format!(
                "nowait: the configuration file {file} syntax is ok\n\
                 nowait: configuration file {file} test is successful\n"
            ),
            "{name}"
        );
        assert_eq!(r.stdout, "", "{name}");
    }
}

#[test]
fn dump_prints_every_file_read() {
    let prefix = TempDir::new("dump");
    let mime = examples_dir().join("mime.types");
    let mime_text = std::fs::read_to_string(&mime).unwrap();
    for name in EXAMPLES {
        let file = example(name);
        let text = std::fs::read_to_string(&file).unwrap();
        let r = nowait(&["-T", "-p", prefix.path(), "-c", &file]);
        assert_eq!(r.code, Some(0), "{name}: {}", r.stderr);
        assert!(
            r.stderr.contains("test is successful"),
            "{name}: {}",
            r.stderr
        );
        let main = format!("# configuration file {file}:\n{text}");
        assert!(r.stdout.starts_with(&main), "{name}:\n{}", r.stdout);
        let includes_mime = text.contains("include mime.types;");
        let mime_section = format!("# configuration file {}:\n{mime_text}", mime.display());
        assert_eq!(r.stdout.contains(&mime_section), includes_mime, "{name}");
    }
}

#[test]
fn quiet_test_prints_nothing_on_success() {
    let prefix = TempDir::new("quiet");
    let r = nowait(&[
        "-q",
        "-t",
        "-p",
        prefix.path(),
        "-c",
        &example("benchmark.conf"),
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stderr, "");
    assert_eq!(r.stdout, "");
    // Grouped, as nginx reads them.
    let r = nowait(&["-qt", "-p", prefix.path(), "-c", &example("benchmark.conf")]);
    assert_eq!((r.code, r.stderr.as_str()), (Some(0), ""));
}

/// `nginx -t` looks the `user` up while it parses: a user that does not
/// exist fails the test, as it would fail the start.
#[test]
fn test_fails_for_a_user_that_does_not_exist() {
    let dir = TempDir::new("no-user");
    let conf = dir.write(
        "nowait.conf",
        "user no-such-user-nowait;\nevents {}\nhttp { server { listen 127.0.0.1:1; } }\n",
    );
    let r = nowait(&["-t", "-p", dir.path(), "-c", &conf]);
    // Only root looks `user` up: others get nginx's warning that the
    // directive is ignored.
    if nowait::sys::process::geteuid() == 0 {
        let want = format!(
            "nowait: [emerg] getpwnam(\"no-such-user-nowait\") failed in {conf}:1\n\
             nowait: configuration file {conf} test failed\n"
        );
        assert_eq!((r.code, r.stderr.as_str()), (Some(1), want.as_str()));
    } else {
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert!(r.stderr.contains("makes sense only if"), "{}", r.stderr);
    }
}

/// A directive that is accepted and has no effect says so under `-t`, with
/// its reason and place, once per use, and the test still succeeds.
#[test]
fn test_says_which_directives_have_no_effect() {
    let dir = TempDir::new("no-effect");
    let conf = dir.write(
        "nowait.conf",
        "events {}\nhttp {\n    types_hash_max_size 2048;\n    server {\n        listen 127.0.0.1:1;\n        request_pool_size 8k;\n        location / { read_ahead 1m; }\n    }\n}\n",
    );
    let r = nowait(&["-t", "-p", dir.path(), "-c", &conf]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let notices: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains("[notice]"))
        .collect();
    assert_eq!(notices.len(), 2, "{}", r.stderr);
    assert!(
        notices[0].starts_with("nowait: [notice] \"types_hash_max_size\" is accepted and has no effect in nowait (it sizes one of nginx's hash tables")
            && notices[0].ends_with(&format!(" in {conf}:3")),
        "{}",
        notices[0]
    );
    assert!(
        notices[1].contains("\"request_pool_size\" is accepted and has no effect")
            && notices[1].ends_with(&format!(" in {conf}:6")),
        "{}",
        notices[1]
    );
    // `read_ahead` has an effect (tests/core_files.rs).
    assert!(!r.stderr.contains("read_ahead"), "{}", r.stderr);
}

#[test]
fn quiet_test_still_reports_errors() {
    let dir = TempDir::new("quiet-errors");
    let conf = dir.write("nowait.conf", "events {}\nbogus;\n");
    let r = nowait(&["-q", "-t", "-p", dir.path(), "-c", &conf]);
    assert_eq!(r.code, Some(1));
    assert_eq!(
        r.stderr,
        format!(
            "nowait: [emerg] unknown directive \"bogus\" in {conf}:2\n\
             nowait: configuration file {conf} test failed\n"
        )
    );
}

#[test]
fn version_and_build_facts() {
    let v = format!("nowait version: nowait/{}\n", env!("CARGO_PKG_VERSION"));
    let r = nowait(&["-v"]);
    assert_eq!(
        (r.code, r.stderr.as_str(), r.stdout.as_str()),
        (Some(0), v.as_str(), "")
    );
    let r = nowait(&["-V"]);
    assert_eq!(r.code, Some(0));
    assert!(r.stderr.starts_with(&v), "{}", r.stderr);
    for fact in [
        "\nnginx version: nginx/1.22.1 ",
        "built for ",
        "features: ",
        "\nconfigure arguments: --prefix=",
        " --conf-path=",
        " --http-client-body-temp-path=",
        " --with-threads",
        " --without-http_fastcgi_module",
    ] {
        assert!(r.stderr.contains(fact), "{fact}: {}", r.stderr);
    }
}

/// nginx's test harness decides what a binary has from `-V`: some features
/// by the absence of `--without-…`, others by a bare word anywhere in the
/// text (`stream`, `http_ssl`, `sub`, `dav` …). nowait must not claim any
/// of those by accident, or the harness runs tests of modules it lacks.
#[test]
fn version_claims_no_module_nowait_lacks() {
    let r = nowait(&["-V"]);
    // `upstream` contains `stream`: see `config::modules`.
    let text = r.stderr.replace("upstream", "");
    for word in [
        "stream",
        "--with-mail",
        "http_v2",
        "http_v3",
        "perl",
        "xslt",
        "dav",
        "flv",
        "mp4",
        "image_filter",
        "geoip",
        "slice",
        "--with-debug",
    ] {
        assert!(!text.contains(word), "{word} in {}", r.stderr);
    }
    // The body filters nowait has are claimed, and no other flag holds
    // their words (the harness matches `sub` and `addition` bare).
    for claimed in [
        "--with-http_ssl_module",
        // With the ssl module, the harness's `sni` and `openssl:N` features.
        "\nTLS SNI support enabled\n",
        "with OpenSSL 3.0 ",
        "--with-http_addition_module",
        "--with-http_sub_module",
        "--with-http_secure_link_module",
        "--with-http_random_index_module",
    ] {
        assert!(text.contains(claimed), "{claimed}: {}", r.stderr);
    }
    assert!(!text.contains("--without-http_ssi_module"), "{}", r.stderr);
    let rest = text
        .replace("--with-http_addition_module", "")
        .replace("--with-http_sub_module", "");
    for word in ["addition", "sub"] {
        assert!(!rest.contains(word), "{word} in {}", r.stderr);
    }
}

/// The static-serving modules are claimed once all their directives are:
/// built by default ones by the absence of `--without-…`, optional ones
/// by `--with-…`.
#[test]
fn version_claims_the_static_modules() {
    let r = nowait(&["-V"]);
    for module in ["autoindex", "gzip", "charset"] {
        assert!(
            !r.stderr
                .contains(&format!("--without-http_{module}_module")),
            "{module}: {}",
            r.stderr
        );
    }
    for module in ["gzip_static", "gunzip"] {
        assert!(
            r.stderr.contains(&format!("--with-http_{module}_module")),
            "{module}: {}",
            r.stderr
        );
    }
}

/// nginx opens the `-e` log before reading the configuration: a
/// configuration that fails leaves its reason there too (nginx's test
/// harness reads it).
#[test]
fn configuration_errors_also_go_to_the_e_log() {
    let dir = TempDir::new("elog");
    let conf = dir.write("nowait.conf", "events {}\nbogus;\n");
    let r = nowait(&["-p", dir.path(), "-c", &conf, "-e", "early.log"]);
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("[emerg] unknown directive"),
        "{}",
        r.stderr
    );
    let log = std::fs::read_to_string(Path::new(dir.path()).join("early.log")).unwrap();
    let line = log.lines().next().unwrap_or_default();
    // `2026/11/23 14:36:48 [emerg] 7116#7116: unknown directive …`
    assert!(
        line.contains(" [emerg] ")
            && line.contains(&format!("unknown directive \"bogus\" in {conf}:2")),
        "{log}"
    );
    assert_eq!(line.as_bytes()[4], b'/', "{log}");
}

#[test]
fn help_lists_every_flag() {
    for flag in ["-h", "-?", "--help"] {
        let r = nowait(&[flag]);
        assert_eq!(r.code, Some(0), "{flag}");
        assert!(r.stderr.contains("Usage: nowait "), "{flag}: {}", r.stderr);
        for opt in [
            "-?,-h",
            "-v ",
            "-V ",
            "-t ",
            "-T ",
            "-q ",
            "-s signal",
            "-p prefix",
            "-e filename",
            "-c filename",
            "-g directives",
            "--root",
            "--listen",
            "--directives",
        ] {
            assert!(r.stderr.contains(opt), "{flag}: no {opt} in {}", r.stderr);
        }
    }
}

#[test]
fn bad_options_in_nginx_words() {
    for (args, msg) in [
        (&["-x"][..], "nowait: invalid option: \"x\"\n"),
        (&["-tx"][..], "nowait: invalid option: \"x\"\n"),
        (&["-c"][..], "nowait: option \"-c\" requires file name\n"),
        (
            &["-p"][..],
            "nowait: option \"-p\" requires directory name\n",
        ),
        (&["-g"][..], "nowait: option \"-g\" requires parameters\n"),
        (&["-s"][..], "nowait: option \"-s\" requires parameter\n"),
        (&["-s", "kill"][..], "nowait: invalid option: \"-s kill\"\n"),
        (&["file"][..], "nowait: invalid option: \"file\"\n"),
    ] {
        let r = nowait(args);
        assert_eq!((r.code, r.stderr.as_str()), (Some(1), msg), "{args:?}");
    }
}

#[test]
fn globals_from_the_command_line() {
    let prefix = TempDir::new("globals");
    let file = example("named-pools.conf");
    let r = nowait(&[
        "-t",
        "-p",
        prefix.path(),
        "-c",
        &file,
        "-g",
        "worker_processes 2;",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);

    let r = nowait(&["-t", "-p", prefix.path(), "-c", &file, "-g", "bogus;"]);
    assert_eq!(r.code, Some(1));
    assert_eq!(
        r.stderr,
        format!(
            "nowait: [emerg] unknown directive \"bogus\" in command line\n\
             nowait: configuration file {file} test failed\n"
        )
    );
}

#[test]
fn global_duplicated_by_the_file_is_reported_in_the_file() {
    // As in nginx, -g is read first, so the file's directive is the duplicate.
    let dir = TempDir::new("globals-dup");
    let conf = dir.write("nowait.conf", "events {}\ndaemon on;\n");
    let r = nowait(&["-t", "-p", dir.path(), "-c", &conf, "-g", "daemon off;"]);
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains(&format!(
            "nowait: [emerg] \"daemon\" directive is duplicate in {conf}:2\n"
        )),
        "{}",
        r.stderr
    );
}

#[test]
fn signal_reload_sends_sighup_to_the_pid_in_the_pid_file() {
    let dir = TempDir::new("signal");
    let pid_file = dir.0.join("nowait.pid");
    let conf = dir.write(
        "nowait.conf",
        &format!("pid {};\nevents {{}}\n", pid_file.display()),
    );
    let mut sleep = Command::new("sleep");
    sleep.arg("30");
    // SAFETY: only an async-signal-safe call between fork and exec. A test
    // run under `nohup` hands SIGHUP ignored to its children: give `sleep`
    // the default action, so that the signal ends it.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut sleep, || {
            libc::signal(libc::SIGHUP, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = sleep.spawn().expect("sleep runs");
    std::fs::write(&pid_file, format!("{}\n", child.id())).unwrap();
    let r = nowait(&["-s", "reload", "-p", dir.path(), "-c", &conf]);
    if r.code != Some(0) {
        let _ = child.kill();
    }
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(signal::number(SignalName::Reload)));
    assert_eq!(status.signal(), Some(1), "SIGHUP");
}

#[test]
fn signal_with_a_missing_or_bad_pid_file() {
    let dir = TempDir::new("signal-bad");
    let pid_file = dir.0.join("run/nowait.pid");
    let conf = dir.write("nowait.conf", "pid run/nowait.pid;\nevents {}\n");
    let r = nowait(&["-s", "stop", "-p", dir.path(), "-c", &conf]);
    assert_eq!(r.code, Some(1));
    assert_eq!(
        r.stderr,
        format!(
            "nowait: [error] open() \"{}\" failed (2: No such file or directory)\n",
            pid_file.display()
        )
    );

    std::fs::create_dir_all(pid_file.parent().unwrap()).unwrap();
    for garbage in ["garbage", "-5", "0", ""] {
        std::fs::write(&pid_file, format!("{garbage}\n")).unwrap();
        let r = nowait(&["-s", "quit", "-p", dir.path(), "-c", &conf]);
        assert_eq!(r.code, Some(1), "{garbage:?}");
        assert_eq!(
            r.stderr,
            format!(
                "nowait: [error] invalid PID number \"{garbage}\" in \"{}\"\n",
                pid_file.display()
            ),
            "{garbage:?}"
        );
    }
}

#[test]
fn directives_reference_lists_the_whole_table() {
    let r = nowait(&["--directives"]);
    assert_eq!(r.code, Some(0));
    assert!(
        r.stdout.starts_with("| directive | syntax |"),
        "{}",
        r.stdout
    );
    for spec in DIRECTIVES {
        assert!(
            r.stdout.contains(&format!("| `{}` |", spec.name)),
            "{} missing",
            spec.name
        );
    }
    // One row per entry, after the header and the separator.
    assert_eq!(r.stdout.lines().count(), DIRECTIVES.len() + 2);
}

#[test]
fn proxy_store_is_implemented() {
    // `proxy_store` was the last directive parsed but refused at start-up
    // ("is not implemented yet"); no directive is refused today.
    let dir = TempDir::new("start-store");
    let conf = dir.write(
        "nowait.conf",
        "events {}\nhttp {\n server {\n  listen 127.0.0.1:1;\n  location / {\n   proxy_store on;\n  }\n }\n}\n",
    );
    let r = nowait(&["-t", "-p", dir.path(), "-c", &conf]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!r.stderr.contains("not implemented"), "{}", r.stderr);
}

#[test]
fn embedded_configuration_without_a_file() {
    let prefix = TempDir::new("embedded");
    let r = nowait(&["-t", "-p", prefix.path()]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "nowait: the configuration file (embedded) syntax is ok\n\
         nowait: configuration file (embedded) test is successful\n"
    );
    let r = nowait(&["-T", "-p", prefix.path(), "--listen", "127.0.0.1:9999"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.starts_with("# configuration file (embedded):\n"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("listen \"127.0.0.1:9999\";"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("application/octet-stream"),
        "{}",
        r.stdout
    );
}

#[test]
fn root_and_listen_refused_with_a_configuration_file() {
    let prefix = TempDir::new("root-with-file");
    let r = nowait(&[
        "-t",
        "-p",
        prefix.path(),
        "-c",
        &example("benchmark.conf"),
        "--root",
        "/",
    ]);
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr
            .contains("apply only when no configuration file is used"),
        "{}",
        r.stderr
    );
}

/// A configuration for `-t` with `main` and `worker_connections conns`.
fn limits_conf(dir: &str, main: &str, conns: u64) -> String {
    let path = Path::new(dir).join("limits.conf");
    std::fs::write(
        &path,
        format!("{main}\nevents {{ worker_connections {conns}; }}\nhttp {{ access_log off; }}\n"),
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn worker_connections_beyond_the_descriptor_limit_warn_as_nginx() {
    let prefix = TempDir::new("limits");
    let soft = std::fs::read_to_string("/proc/self/limits")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3).map(str::to_string))
        .unwrap();
    let soft: u64 = soft.parse().unwrap();
    let many = soft + 1;
    let warning =
        format!("[warn] {many} worker_connections exceed open file resource limit: {soft}");
    // Unseen under the default level, as nginx's.
    let conf = limits_conf(prefix.path(), "", many);
    let r = nowait(&["-t", "-p", prefix.path(), "-c", &conf]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!r.stderr.contains("[warn]"), "{}", r.stderr);
    let conf = limits_conf(prefix.path(), "error_log stderr warn;", many);
    let r = nowait(&["-t", "-p", prefix.path(), "-c", &conf]);
    assert!(r.stderr.contains(&warning), "{}", r.stderr);
    // worker_rlimit_nofile large enough silences it; too small names itself.
    let conf = limits_conf(
        prefix.path(),
        &format!("error_log stderr warn; worker_rlimit_nofile {};", many + 1),
        many,
    );
    let r = nowait(&["-t", "-p", prefix.path(), "-c", &conf]);
    assert!(!r.stderr.contains("[warn]"), "{}", r.stderr);
    let conf = limits_conf(
        prefix.path(),
        &format!("error_log stderr warn; worker_rlimit_nofile {};", many - 1),
        many,
    );
    let r = nowait(&["-t", "-p", prefix.path(), "-c", &conf]);
    let named = format!(
        "{many} worker_connections exceed open file resource limit: {}",
        many - 1
    );
    assert!(r.stderr.contains(&named), "{}", r.stderr);
}
