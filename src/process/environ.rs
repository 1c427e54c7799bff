//! `env`: the environment the serving process keeps, as nginx's workers
//! get theirs (`ngx_set_environment`): `TZ` and the variables `env` names,
//! as inherited or with the value given; every other inherited variable is
//! removed. It is set once, at start, while one thread runs; a reload that
//! changes `env` is told that the change waits for the next start (nginx's
//! new workers get it at once: nowait's threads live on, and the
//! environment cannot change under them).
//!
//! `RUST_BACKTRACE` is kept too when inherited: the Rust runtime reads it
//! when a thread panics, to say where. Test builds (the `test-faults`
//! feature) also keep the `NOWAIT_TEST_*` variables their hooks read.

use std::ffi::OsString;
use std::sync::OnceLock;

use crate::config::model::{EnvVar, MainConf};

/// The `env` list the environment was made from at start.
static APPLIED: OnceLock<Vec<EnvVar>> = OnceLock::new();

/// The prefix of the variables test builds keep.
const TEST_HOOKS: &str = "NOWAIT_TEST_";

/// What the Rust runtime reads when a thread panics.
const RUST_BACKTRACE: &str = "RUST_BACKTRACE";

/// Makes the process's environment what `main`'s `env` list says. Called
/// once, at start, before any other thread runs.
pub fn apply(main: &MainConf) -> Result<(), String> {
    let vars = wanted(&main.env, std::env::vars_os(), crate::io::fault::ENABLED);
    crate::sys::env::replace(&vars).map_err(|e| e.to_string())?;
    let _ = APPLIED.set(main.env.clone());
    Ok(())
}

/// What a reload to `main` should be told about its `env` list: `Some`
/// warning when it differs from the one applied at start.
pub fn reload_note(main: &MainConf) -> Option<String> {
    let applied = APPLIED.get()?;
    (applied != &main.env).then(|| {
        "the \"env\" directives changed: the environment is set at start, the change takes effect when nowait is restarted".to_owned()
    })
}

/// The environment `env` asks for, given the `inherited` one: nginx's
/// order (the directives', then `TZ` unless one of them names it), the
/// first of two variables with one name winning (as `getenv` finds the
/// first), a named variable not inherited left out.
fn wanted(
    env: &[EnvVar],
    inherited: impl Iterator<Item = (OsString, OsString)>,
    keep_test_hooks: bool,
) -> Vec<(OsString, OsString)> {
    let inherited: Vec<(OsString, OsString)> = inherited.collect();
    let find = |name: &str| {
        inherited
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let tz = EnvVar {
        name: "TZ".to_owned(),
        value: None,
    };
    let implicit_tz = (!env.iter().any(|v| v.name == "TZ")).then_some(&tz);
    let mut out: Vec<(OsString, OsString)> = Vec::new();
    for var in env.iter().chain(implicit_tz) {
        if out.iter().any(|(n, _)| n == var.name.as_str()) {
            continue;
        }
        let value = match &var.value {
            Some(v) => Some(OsString::from(v)),
            None => find(&var.name),
        };
        if let Some(v) = value {
            out.push((OsString::from(&var.name), v));
        }
    }
    for (n, v) in &inherited {
        let kept = n == RUST_BACKTRACE
            || (keep_test_hooks && n.to_str().is_some_and(|n| n.starts_with(TEST_HOOKS)));
        if kept && !out.iter().any(|(o, _)| o == n) {
            out.push((n.clone(), v.clone()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(name: &str, value: Option<&str>) -> EnvVar {
        EnvVar {
            name: name.to_owned(),
            value: value.map(str::to_owned),
        }
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(n, v)| (OsString::from(n), OsString::from(v)))
            .collect()
    }

    #[test]
    fn keeps_tz_and_what_env_names_and_nothing_else() {
        let inherited = env(&[
            ("HOME", "/root"),
            ("TZ", "UTC"),
            ("PATH", "/bin"),
            ("LANG", "C"),
        ]);
        let got = wanted(
            &[
                var("PATH", None),
                var("APP", Some("1")),
                var("MISSING", None),
            ],
            inherited.into_iter(),
            false,
        );
        assert_eq!(got, env(&[("PATH", "/bin"), ("APP", "1"), ("TZ", "UTC")]));
    }

    #[test]
    fn without_env_only_tz_is_kept() {
        let got = wanted(
            &[],
            env(&[("HOME", "/root"), ("TZ", "UTC")]).into_iter(),
            false,
        );
        assert_eq!(got, env(&[("TZ", "UTC")]));
        let got = wanted(&[], env(&[("HOME", "/root")]).into_iter(), false);
        assert!(got.is_empty(), "{got:?}");
    }

    #[test]
    fn a_value_given_replaces_the_inherited_one_and_the_first_wins() {
        let inherited = env(&[("TZ", "UTC"), ("A", "inherited")]);
        let got = wanted(
            &[
                var("TZ", Some("XYZ-5")),
                var("A", None),
                var("A", Some("2")),
                var("TZ", None),
            ],
            inherited.into_iter(),
            false,
        );
        assert_eq!(got, env(&[("TZ", "XYZ-5"), ("A", "inherited")]));
    }

    #[test]
    fn the_panic_backtrace_setting_is_kept() {
        let inherited = env(&[("RUST_BACKTRACE", "1"), ("OTHER", "y")]);
        let got = wanted(&[], inherited.into_iter(), false);
        assert_eq!(got, env(&[("RUST_BACKTRACE", "1")]));
    }

    #[test]
    fn test_builds_keep_their_hooks() {
        let inherited = env(&[("NOWAIT_TEST_STALL", "x=1"), ("OTHER", "y")]);
        let got = wanted(&[], inherited.clone().into_iter(), true);
        assert_eq!(got, env(&[("NOWAIT_TEST_STALL", "x=1")]));
        assert!(wanted(&[], inherited.into_iter(), false).is_empty());
    }
}
