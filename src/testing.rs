//! What a test does when the machine lacks something it needs (root, a
//! kernel feature, IPv6 on loopback, a second CPU, a program): with
//! `NOWAIT_REQUIRE_ALL=1` (scripts/test.sh sets it, so CI does) the test
//! fails and says what is missing; otherwise it says
//! `SKIPPED: <test>: <reason>` on the terminal, where a person sees it, and
//! returns. A test never passes by returning early without one of the two.
//!
//! For tests only: compiled into the crate's unit tests and, through the
//! `test-faults` feature the black-box tests build the crate with, into
//! theirs (`tests/common` hands it on). Nothing here runs in a server.

use std::io::Write;

/// The environment variable that makes a test that cannot run fail.
pub const REQUIRE_ALL: &str = "NOWAIT_REQUIRE_ALL";

/// Whether `test` may go on: `true` when it `has` what it needs. When it
/// has not: a panic with `reason` under `NOWAIT_REQUIRE_ALL=1`, else the
/// skip said on the terminal and `false` (the test then returns).
pub fn require(has: bool, test: &str, reason: &str) -> bool {
    let strict = std::env::var_os(REQUIRE_ALL).is_some_and(|v| v == "1");
    match skip_line(has, strict, test, reason) {
        Some(line) => {
            say(&line);
            false
        }
        None => true,
    }
}

/// [`require`], told whether `NOWAIT_REQUIRE_ALL=1` is set: `None` when
/// the test may go on, the line that says it is skipped otherwise.
fn skip_line(has: bool, strict: bool, test: &str, reason: &str) -> Option<String> {
    if has {
        return None;
    }
    if strict {
        panic!("{test} cannot run: {reason} ({REQUIRE_ALL}=1 makes that a failure)");
    }
    Some(format!("SKIPPED: {test}: {reason}"))
}

/// Writes `line` to the process's standard error as it is: the test
/// harness captures what `eprintln!` prints (and shows it only for a
/// failed test), not what is written to the handle.
pub fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The path of the function this is used in (`module::test_name`), for
/// [`require`].
#[macro_export]
macro_rules! test_name {
    () => {{
        fn here() {}
        let name = ::std::any::type_name_of_val(&here);
        name.strip_suffix("::here").unwrap_or(name)
    }};
}

/// `require_or_skip!(has, "why {}", x)`: [`require`] for the test it is
/// used in, which returns when it may not go on.
#[macro_export]
macro_rules! require_or_skip {
    ($has:expr, $($reason:tt)+) => {
        if !$crate::testing::require($has, $crate::test_name!(), &format!($($reason)+)) {
            return;
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_names_itself() {
        assert_eq!(
            crate::test_name!(),
            "nowait::testing::tests::a_test_names_itself"
        );
    }

    #[test]
    fn what_is_there_lets_the_test_go_on() {
        assert_eq!(skip_line(true, true, "t", "never said"), None);
        assert_eq!(skip_line(true, false, "t", "never said"), None);
    }

    #[test]
    fn what_is_missing_skips_the_test_and_says_so() {
        assert_eq!(
            skip_line(false, false, "t", "what is missing").as_deref(),
            Some("SKIPPED: t: what is missing")
        );
    }

    #[test]
    #[should_panic(expected = "t cannot run: what is missing (NOWAIT_REQUIRE_ALL=1")]
    fn what_is_missing_fails_the_test_when_all_is_required() {
        skip_line(false, true, "t", "what is missing");
    }
}
