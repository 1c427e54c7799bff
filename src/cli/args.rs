//! The command line, read as nginx reads it (`ngx_get_options`): single-dash
//! letters that may be grouped (`-tq`), option values attached or separate
//! (`-cfile`, `-c file`), plus nowait's long options for the embedded
//! configuration.

use std::path::PathBuf;

/// A `-s` signal name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalName {
    /// `stop`: fast shutdown (SIGTERM).
    Stop,
    /// `quit`: graceful shutdown (SIGQUIT).
    Quit,
    /// `reopen`: reopen log files (SIGUSR1).
    Reopen,
    /// `reload`: reload the configuration (SIGHUP).
    Reload,
}

impl SignalName {
    fn parse(s: &str) -> Option<SignalName> {
        Some(match s {
            "stop" => SignalName::Stop,
            "quit" => SignalName::Quit,
            "reopen" => SignalName::Reopen,
            "reload" => SignalName::Reload,
            _ => return None,
        })
    }
}

/// Everything the command line asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    /// `-h`, `-?`, `--help`.
    pub help: bool,
    /// `-v`, `--version`.
    pub version: bool,
    /// `-V`.
    pub version_full: bool,
    /// `-t`.
    pub test: bool,
    /// `-T`.
    pub dump: bool,
    /// `-q`.
    pub quiet: bool,
    /// `-s signal`.
    pub signal: Option<SignalName>,
    /// `-p prefix`.
    pub prefix: Option<PathBuf>,
    /// `-e file | stderr`.
    pub error_log: Option<String>,
    /// `-c file`.
    pub conf: Option<PathBuf>,
    /// `-g directives`.
    pub globals: Option<String>,
    /// `--root DIR`: the directory the embedded configuration serves.
    pub root: Option<PathBuf>,
    /// `--listen ADDR:PORT`: where the embedded configuration listens.
    pub listen: Option<String>,
    /// `--directives`: print the directive reference and exit.
    pub directives: bool,
}

/// Parses `argv` without the program name. The error is the message nginx
/// prints after `nowait: `.
pub fn parse<I: IntoIterator<Item = String>>(argv: I) -> Result<Args, String> {
    let mut a = Args::default();
    let mut it = argv.into_iter();
    while let Some(arg) = it.next() {
        if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let mut value = |opt: &str| {
                inline
                    .clone()
                    .or_else(|| it.next())
                    .ok_or_else(|| format!("option \"--{opt}\" requires a value"))
            };
            match name {
                "help" => a.help = true,
                "version" => a.version = true,
                "directives" => a.directives = true,
                "root" => a.root = Some(PathBuf::from(value("root")?)),
                "listen" => a.listen = Some(value("listen")?),
                _ => return Err(format!("invalid option: \"{arg}\"")),
            }
            continue;
        }
        let Some(letters) = arg.strip_prefix('-').filter(|l| !l.is_empty()) else {
            return Err(format!("invalid option: \"{arg}\""));
        };
        for (i, c) in letters.char_indices() {
            let rest = &letters[i + c.len_utf8()..];
            let mut take = |what: &str| -> Result<String, String> {
                if !rest.is_empty() {
                    Ok(rest.to_string())
                } else {
                    it.next()
                        .ok_or_else(|| format!("option \"-{c}\" requires {what}"))
                }
            };
            match c {
                '?' | 'h' => a.help = true,
                'v' => a.version = true,
                'V' => {
                    a.version = true;
                    a.version_full = true;
                }
                't' => a.test = true,
                'T' => {
                    a.test = true;
                    a.dump = true;
                }
                'q' => a.quiet = true,
                'p' => {
                    a.prefix = Some(PathBuf::from(take("directory name")?));
                    break;
                }
                'e' => {
                    a.error_log = Some(take("file name")?);
                    break;
                }
                'c' => {
                    a.conf = Some(PathBuf::from(take("file name")?));
                    break;
                }
                'g' => {
                    a.globals = Some(take("parameters")?);
                    break;
                }
                's' => {
                    let v = take("parameter")?;
                    a.signal = Some(
                        SignalName::parse(&v)
                            .ok_or_else(|| format!("invalid option: \"-s {v}\""))?,
                    );
                    break;
                }
                _ => return Err(format!("invalid option: \"{c}\"")),
            }
        }
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &[&str]) -> Result<Args, String> {
        parse(s.iter().map(|x| x.to_string()))
    }

    #[test]
    fn grouped_and_attached() {
        let a = p(&["-tq", "-c/etc/x.conf", "-p", "/srv/"]).unwrap();
        assert!(a.test && a.quiet && !a.dump);
        assert_eq!(a.conf, Some(PathBuf::from("/etc/x.conf")));
        assert_eq!(a.prefix, Some(PathBuf::from("/srv/")));
        let a = p(&["-T", "-g", "daemon off;", "-s", "reload"]).unwrap();
        assert!(a.test && a.dump);
        assert_eq!(a.globals.as_deref(), Some("daemon off;"));
        assert_eq!(a.signal, Some(SignalName::Reload));
    }

    #[test]
    fn errors_in_nginx_words() {
        assert_eq!(p(&["-x"]).unwrap_err(), "invalid option: \"x\"");
        assert_eq!(p(&["-c"]).unwrap_err(), "option \"-c\" requires file name");
        assert_eq!(
            p(&["-s", "kill"]).unwrap_err(),
            "invalid option: \"-s kill\""
        );
        assert_eq!(p(&["foo"]).unwrap_err(), "invalid option: \"foo\"");
    }

    #[test]
    fn long_options() {
        let a = p(&["--root", "/srv", "--listen=127.0.0.1:9000", "--directives"]).unwrap();
        assert_eq!(a.root, Some(PathBuf::from("/srv")));
        assert_eq!(a.listen.as_deref(), Some("127.0.0.1:9000"));
        assert!(a.directives);
        assert!(p(&["--bogus"]).is_err());
    }
}
