//! The command line: nginx's flags (`-c -p -e -g -t -T -q -s -v -V -h`) and
//! nowait's long options for the embedded configuration. Decides what to do
//! and hands over to [`crate::config`] and [`crate::process`]; owns no
//! serving logic.

pub mod args;
pub mod signal;

use std::path::{Path, PathBuf};

use crate::config::{self, ConfError, LoadOptions};

pub use args::{Args, SignalName};

/// The prefix when `-p` is not given (nginx's `--prefix`), overridable at
/// build time with `NOWAIT_PREFIX`.
pub const DEFAULT_PREFIX: &str = match option_env!("NOWAIT_PREFIX") {
    Some(p) => p,
    None => "/usr/local/nowait/",
};

/// The configuration file when `-c` is not given: relative to the prefix,
/// or absolute. Overridable at build time with `NOWAIT_CONF_PATH` (nginx's
/// `--conf-path`), as the Debian package does (`/etc/nowait/nowait.conf`).
pub const DEFAULT_CONF: &str = match option_env!("NOWAIT_CONF_PATH") {
    Some(p) => p,
    None => "conf/nowait.conf",
};

pub use crate::log::say;

/// Prints configuration messages as `nowait: [emerg] … in FILE:LINE`.
pub fn report(diags: &[ConfError]) {
    for d in diags {
        say(&format!("[{}] {d}", d.level.as_str()));
    }
}

fn usage() -> String {
    format!(
        "Usage: {n} [-?hvVtTq] [-s signal] [-p prefix]\n\
         \x20            [-e filename] [-c filename] [-g directives]\n\
         \x20            [--root dir] [--listen address:port] [--directives]\n\n\
         Options:\n\
         \x20 -?,-h         : this help\n\
         \x20 -v            : show version and exit\n\
         \x20 -V            : show version and build facts then exit\n\
         \x20 -t            : test configuration and exit\n\
         \x20 -T            : test configuration, dump it and exit\n\
         \x20 -q            : suppress non-error messages during configuration testing\n\
         \x20 -s signal     : send signal to a running server: stop, quit, reopen, reload\n\
         \x20 -p prefix     : set prefix path (default: {prefix})\n\
         \x20 -e filename   : set error log file (default: stderr)\n\
         \x20 -c filename   : set configuration file (default: {conf})\n\
         \x20 -g directives : set global directives out of configuration file\n\
         \x20 --root dir    : with no configuration file, serve this directory (default: the current one)\n\
         \x20 --listen addr : with no configuration file, listen here (default: {listen})\n\
         \x20 --directives  : print the reference of supported directives (Markdown)\n",
        n = crate::NAME,
        prefix = DEFAULT_PREFIX,
        conf = DEFAULT_CONF,
        listen = config::embedded::DEFAULT_LISTEN,
    )
}

/// The nginx release whose configuration language and behaviour nowait
/// follows. `-V` names it on nginx's own line, so that tools that ask
/// `nginx -V` which behaviour to expect (nginx's test harness among them)
/// get the answer that is true of nowait.
pub const NGINX_COMPAT_VERSION: &str = "1.22.1";

/// The OpenSSL release whose behaviour nowait's TLS follows where nginx's
/// depends on its library (Debian 12's, which nginx 1.22.1 is built with).
pub const OPENSSL_COMPAT_VERSION: &str = "3.0";

/// The rustls release nowait is built with (kept equal to Cargo.lock's by
/// a test).
pub const RUSTLS_VERSION: &str = "0.23.46";

fn version_facts() -> String {
    format!(
        "nginx version: nginx/{compat} (the nginx whose configuration and behaviour nowait follows)\n\
         built for {arch}-linux with rustc (edition 2024), profile {profile}\n\
         {sni}features: thread pools, openat2 RESOLVE_CACHED, preadv2 RWF_NOWAIT, cachestat, sendfile, reuseport{faults}\n\
         configure arguments: --prefix={prefix} --conf-path={conf} --error-log-path={prefix}logs/error.log \
         --pid-path={prefix}logs/{name}.pid --http-log-path={prefix}logs/access.log \
         --http-client-body-temp-path={prefix}{body_temp}{build} {flags}\n",
        compat = NGINX_COMPAT_VERSION,
        arch = std::env::consts::ARCH,
        profile = if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        faults = if crate::io::fault::ENABLED {
            ", test fault injection"
        } else {
            ""
        },
        prefix = DEFAULT_PREFIX,
        conf = default_conf(Path::new(DEFAULT_PREFIX)).display(),
        name = crate::NAME,
        body_temp = config::inherit::DEFAULT_CLIENT_BODY_TEMP_PATH,
        flags = config::modules::configure_flags().join(" "),
        build = crate::BUILD.map_or(String::new(), |b| format!(" --build={b}")),
        // nginx's lines for its TLS library, once the ssl module is
        // claimed: which library, and what it does as (nowait answers as
        // nginx with OpenSSL 3.0 does: the harness's `openssl:N` features
        // read that version), and SNI (its `sni` feature).
        sni = if config::modules::ssl_implemented() {
            format!(
                "built with rustls {RUSTLS_VERSION} (aws-lc-rs), with OpenSSL {OPENSSL_COMPAT_VERSION} behaviour (cipher strings, errors, variables)\nTLS SNI support enabled\n"
            )
        } else {
            String::new()
        },
    )
}

/// Makes `p` absolute against `base`, without `.` components: `-p .` names
/// the current directory, and messages and `-T` headers print
/// `/srv/examples/x.conf`, not `/srv/./examples/x.conf`. (`..` is kept: with
/// symbolic links it cannot be dropped without asking the file system.)
fn absolute(base: &Path, p: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    };
    joined.components().collect()
}

/// The configuration file when `-c` is not given: [`DEFAULT_CONF`] under
/// `prefix`, or [`DEFAULT_CONF`] itself when the build made it absolute.
fn default_conf(prefix: &Path) -> PathBuf {
    conf_under(prefix, DEFAULT_CONF)
}

fn conf_under(prefix: &Path, conf: &str) -> PathBuf {
    // `join` keeps an absolute `conf` as it is, as nginx's `--conf-path`.
    prefix.join(conf)
}

/// What the command line resolved to: where things are and what to load.
pub struct Invocation {
    /// The parsed flags.
    pub args: Args,
    /// What to load.
    pub load: LoadOptions,
}

fn invocation(args: Args) -> Result<Invocation, String> {
    let cwd = std::env::current_dir().map_err(|e| {
        format!(
            "[alert] getcwd() failed ({})",
            crate::sys::error::errno_text(&e)
        )
    })?;
    let mut prefix = absolute(
        &cwd,
        args.prefix.as_deref().unwrap_or(Path::new(DEFAULT_PREFIX)),
    );
    if !prefix.as_os_str().to_string_lossy().ends_with('/') {
        prefix.as_mut_os_string().push("/");
    }
    let conf_file = match &args.conf {
        Some(c) => Some(absolute(&prefix, c)),
        None => {
            let default = default_conf(&prefix);
            default.exists().then_some(default)
        }
    };
    if conf_file.is_some() && (args.root.is_some() || args.listen.is_some()) {
        return Err(
            "[emerg] \"--root\" and \"--listen\" apply only when no configuration file is used"
                .into(),
        );
    }
    let embedded_root = absolute(&cwd, args.root.as_deref().unwrap_or(Path::new(".")));
    let embedded_root = embedded_root.canonicalize().unwrap_or(embedded_root);
    Ok(Invocation {
        load: LoadOptions {
            prefix,
            conf_file,
            globals: args.globals.clone(),
            error_log: args.error_log.clone(),
            embedded_root,
            embedded_listen: args
                .listen
                .clone()
                .unwrap_or_else(|| config::embedded::DEFAULT_LISTEN.to_string()),
        },
        args,
    })
}

fn conf_name(load: &LoadOptions) -> String {
    match &load.conf_file {
        Some(p) => p.display().to_string(),
        None => config::EMBEDDED_NAME.to_string(),
    }
}

/// Runs the command line and returns the process exit code.
pub fn main() -> i32 {
    let args = match args::parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            say(&e);
            return 1;
        }
    };
    if args.version || args.help {
        eprintln!(
            "{} version: {}/{}",
            crate::NAME,
            crate::NAME,
            crate::VERSION
        );
        if args.version_full {
            eprint!("{}", version_facts());
        }
        if args.help {
            eprint!("{}", usage());
        }
        return 0;
    }
    if args.directives {
        print!("{}", config::table::reference_markdown());
        return 0;
    }
    let inv = match invocation(args) {
        Ok(i) => i,
        Err(e) => {
            say(&e);
            return 1;
        }
    };
    if let Some(e) = inv.load.error_log.as_deref().filter(|e| *e != "stderr") {
        if let Err(msg) = crate::log::open_startup_file(&inv.load.prefix.join(e)) {
            say(&format!("[alert] {msg}"));
        }
    }
    if inv.args.signal.is_some() && inv.load.conf_file.is_none() {
        say(&format!(
            "[error] no configuration file at \"{}\": \"-s\" needs one to find the pid file",
            default_conf(&inv.load.prefix).display()
        ));
        return 1;
    }
    let loaded = config::load(&inv.load);
    if inv.args.test {
        return test(&inv, loaded);
    }
    let loaded = match loaded {
        Ok(l) => l,
        Err(diags) => {
            report(&diags);
            return 1;
        }
    };
    report(&loaded.warnings);
    if let Some(sig) = inv.args.signal {
        return signal::send(&loaded.config, sig);
    }
    if inv.load.conf_file.is_none() {
        say(&format!(
            "[notice] no configuration file at \"{}\": serving \"{}\" on http://{}/ with the embedded configuration",
            default_conf(&inv.load.prefix).display(),
            inv.load.embedded_root.display(),
            inv.load.embedded_listen
        ));
    }
    // Directives parsed for the caching-proxy release cannot run yet.
    let refused = crate::process::refusals(&loaded.config);
    if !refused.is_empty() {
        for m in &refused {
            say(&format!("[emerg] {m}"));
        }
        return 1;
    }
    crate::process::run(loaded.config, inv.load)
}

fn test(inv: &Invocation, loaded: Result<config::Loaded, Vec<ConfError>>) -> i32 {
    let name = conf_name(&inv.load);
    match loaded {
        Ok(l) => {
            report(&l.warnings);
            report(&l.no_effect);
            // nginx finds these while parsing: before "syntax is ok".
            match crate::process::test_files(&l.config) {
                Ok(warnings) => {
                    for w in warnings {
                        say(&format!("[warn] {w}"));
                    }
                }
                Err(errors) => {
                    for e in errors {
                        say(&format!("[emerg] {e}"));
                    }
                    say(&format!("configuration file {name} test failed"));
                    return 1;
                }
            }
            if !inv.args.quiet {
                say(&format!("the configuration file {name} syntax is ok"));
                say(&format!("configuration file {name} test is successful"));
            }
            if inv.args.dump {
                print!("{}", config::dump(&l.config));
            }
            0
        }
        Err(diags) => {
            report(&diags);
            say(&format!("configuration file {name} test failed"));
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A relative default configuration is under the prefix; an absolute
    /// one (`NOWAIT_CONF_PATH=/etc/nowait/nowait.conf`, the package's) is
    /// not moved under it.
    #[test]
    fn default_conf_is_under_the_prefix_unless_absolute() {
        let prefix = Path::new("/usr/share/nowait/");
        assert_eq!(
            conf_under(prefix, "conf/nowait.conf"),
            PathBuf::from("/usr/share/nowait/conf/nowait.conf")
        );
        assert_eq!(
            conf_under(prefix, "/etc/nowait/nowait.conf"),
            PathBuf::from("/etc/nowait/nowait.conf")
        );
    }

    /// `-V`'s rustls version is the one built in.
    #[test]
    fn the_rustls_version_named_is_cargo_locks() {
        let lock = include_str!("../../Cargo.lock");
        let at = lock
            .find("name = \"rustls\"\nversion = \"")
            .expect("rustls in Cargo.lock");
        let rest = &lock[at + "name = \"rustls\"\nversion = \"".len()..];
        assert_eq!(&rest[..rest.find('"').unwrap()], RUSTLS_VERSION);
    }

    /// nginx's test harness reads `with OpenSSL N` for its `openssl:N`
    /// features, and `TLS SNI support enabled` for `sni`.
    #[test]
    fn the_tls_lines_say_what_the_harness_reads() {
        let v = version_facts();
        if config::modules::ssl_implemented() {
            assert!(
                v.contains(&format!("with OpenSSL {OPENSSL_COMPAT_VERSION} ")),
                "{v}"
            );
            assert!(v.contains("\nTLS SNI support enabled\n"), "{v}");
        } else {
            assert!(!v.contains("OpenSSL") && !v.contains("SNI"), "{v}");
        }
    }

    /// Regression: `-p . -c examples/x.conf` printed `/cwd/./examples/x.conf`.
    #[test]
    fn absolute_drops_dot_components() {
        let cwd = Path::new("/srv/nowait");
        assert_eq!(
            absolute(cwd, Path::new("./examples/x.conf")),
            PathBuf::from("/srv/nowait/examples/x.conf")
        );
        assert_eq!(absolute(cwd, Path::new(".")), PathBuf::from("/srv/nowait"));
        assert_eq!(absolute(cwd, Path::new("/a/./b")), PathBuf::from("/a/b"));
        assert_eq!(
            absolute(cwd, Path::new("../x")),
            PathBuf::from("/srv/nowait/../x")
        );
    }
}
