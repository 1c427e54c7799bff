//! The Debian package's files, checked without installing anything (the
//! install itself is `scripts/test-package.sh`, which needs root): the
//! packaged configuration passes `nowait -t` with the unit's own `-g`
//! directives, the unit, the configuration and logrotate agree on the pid
//! file and the logs, and the manual page lists every directive and option.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(rel))
        .unwrap_or_else(|e| panic!("{rel} is readable: {e}"))
}

/// The value of `KEY=` in the unit file.
fn unit_value(key: &str) -> String {
    let unit = read("packaging/debian/nowait.service");
    let prefix = format!("{key}=");
    unit.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("the unit has {key}="))
        .to_string()
}

/// The single-quoted `-g` argument of a unit command line.
fn globals_of(command: &str) -> String {
    let after = command
        .split_once("-g '")
        .unwrap_or_else(|| panic!("\"{command}\" has -g '...'"))
        .1;
    after
        .split_once('\'')
        .expect("the -g argument is closed")
        .0
        .to_string()
}

/// A fresh directory under the target directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("packaging-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    for sub in ["conf.d", "log", "lib", "www"] {
        std::fs::create_dir_all(dir.join(sub)).expect("scratch directory");
    }
    dir
}

/// The packaged configuration with its system paths moved under `dir`.
fn relocated_conf(dir: &Path) -> PathBuf {
    let d = dir.display();
    let conf = read("packaging/nowait.conf")
        .replace("/etc/nowait/", &format!("{d}/"))
        .replace("/var/log/nowait/", &format!("{d}/log/"))
        .replace("/var/lib/nowait/", &format!("{d}/lib/"))
        .replace("/run/nowait.pid", &format!("{d}/nowait.pid"))
        .replace("/var/www/html", &format!("{d}/www"));
    std::fs::copy(
        Path::new(ROOT).join("conf/mime.types"),
        dir.join("mime.types"),
    )
    .expect("mime.types copied");
    let path = dir.join("nowait.conf");
    std::fs::write(&path, conf).expect("configuration written");
    path
}

/// The unit's ExecStartPre (`nowait -t -q -g '…'`) accepts the packaged
/// configuration: a renamed directive or a `-g` directive nowait lacks
/// (nginx's `master_process`) would fail the service's start.
#[test]
fn packaged_configuration_passes_the_units_test_command() {
    let pre = unit_value("ExecStartPre");
    assert!(pre.starts_with("/usr/sbin/nowait -t -q "), "{pre}");
    let dir = scratch("test");
    let conf = relocated_conf(&dir);
    let out = Command::new(env!("CARGO_BIN_EXE_nowait"))
        .args(["-t", "-q", "-p"])
        .arg(&dir)
        .arg("-c")
        .arg(&conf)
        .args(["-g", &globals_of(&pre)])
        .stdin(Stdio::null())
        .output()
        .expect("the nowait binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "nowait -t failed: {stderr}");
    assert!(!stderr.contains("[emerg]"), "{stderr}");
}

/// Every command of the unit passes the same `-g` directives, so that the
/// test, the start and the reload read the same configuration.
#[test]
fn unit_commands_agree_on_globals() {
    let start = globals_of(&unit_value("ExecStart"));
    assert_eq!(start, "daemon on;");
    assert_eq!(globals_of(&unit_value("ExecStartPre")), start);
    assert_eq!(globals_of(&unit_value("ExecReload")), start);
    assert!(unit_value("ExecReload").ends_with(" -s reload"));
}

/// systemd, the configuration, the stop command and logrotate all name the
/// same pid file, and logrotate rotates the directory the logs are in.
#[test]
fn pid_file_and_logs_agree() {
    let pid = unit_value("PIDFile");
    assert_eq!(unit_value("Type"), "forking");
    let conf = read("packaging/nowait.conf");
    assert!(
        conf.contains(&format!("\npid {pid};\n")),
        "nowait.conf names {pid}"
    );
    assert!(unit_value("ExecStop").contains(&format!("--pidfile {pid}")));
    let logrotate = read("packaging/logrotate");
    assert!(logrotate.contains(&format!("kill -USR1 \"$(cat {pid})\"")));
    assert!(logrotate.starts_with("/var/log/nowait/*.log {"));
    for log in [
        "error_log /var/log/nowait/error.log;",
        "access_log /var/log/nowait/access.log;",
    ] {
        assert!(conf.contains(log), "nowait.conf has {log}");
    }
    assert!(conf.contains("include /etc/nowait/mime.types;"));
    assert!(conf.contains("include /etc/nowait/conf.d/*.conf;"));
    assert!(conf.contains("listen 80 default_server;"));
    assert!(conf.contains("\nuser www-data;\n"));
}

/// The manual page generator writes every directive of the table and every
/// option of `-h`, in roff that starts with a title line.
#[test]
fn manual_page_lists_every_directive_and_option() {
    let dir = scratch("man");
    let page = dir.join("nowait.8");
    let status = Command::new("python3")
        .arg(Path::new(ROOT).join("scripts/manpage.py"))
        .arg(env!("CARGO_BIN_EXE_nowait"))
        .arg(&page)
        .env("SOURCE_DATE_EPOCH", "0")
        .status()
        .expect("python3 runs scripts/manpage.py");
    assert!(status.success());
    let roff = std::fs::read_to_string(&page).expect("the page was written");
    assert!(
        roff.contains(".TH NOWAIT 8 \"1970-01-01\""),
        "{}",
        &roff[..200]
    );
    for d in nowait::config::table::DIRECTIVES {
        assert!(
            roff.contains(&format!(".TP\n\\fB{}\\fR\nSyntax: ", d.name)),
            "{} is missing",
            d.name
        );
    }
    for flag in ["\\-t", "\\-s signal", "\\-g directives", "\\-\\-directives"] {
        assert!(
            roff.contains(&format!("\\fB{flag}\\fR")),
            "{flag} is missing"
        );
    }
}
