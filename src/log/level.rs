//! nginx's log severities, most severe first, and thresholds.

use std::fmt;

/// A log severity. Ordered from most to least severe, so a message at `m` is
/// written to a log with threshold `t` when `m <= t` (nginx's numeric test).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// The server cannot run (bad configuration at startup).
    Emerg,
    /// Action needed now (a failure that should not happen).
    Alert,
    /// Critical conditions.
    Crit,
    /// Request-level failures: open() failed, queue overflow.
    Error,
    /// Something unusual that was handled.
    Warn,
    /// Normal but significant: signals received, reopen.
    Notice,
    /// Informational: client closed connection and the like.
    Info,
    /// Debugging detail.
    Debug,
}

impl Level {
    /// The default threshold of `error_log FILE;` without a level.
    pub const DEFAULT: Level = Level::Error;

    /// Every level, most severe first.
    pub const ALL: [Level; 8] = [
        Level::Emerg,
        Level::Alert,
        Level::Crit,
        Level::Error,
        Level::Warn,
        Level::Notice,
        Level::Info,
        Level::Debug,
    ];

    /// The name used in configuration and in log lines (`error`, `warn`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Emerg => "emerg",
            Level::Alert => "alert",
            Level::Crit => "crit",
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Notice => "notice",
            Level::Info => "info",
            Level::Debug => "debug",
        }
    }

    /// Parses a level name as written in `error_log FILE LEVEL;`.
    pub fn from_name(name: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|l| l.as_str() == name)
    }

    /// Whether a message at `self` passes a log whose threshold is `threshold`.
    pub fn passes(self, threshold: Level) -> bool {
        self <= threshold
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_order_like_nginx() {
        for l in Level::ALL {
            assert_eq!(Level::from_name(l.as_str()), Some(l));
        }
        assert_eq!(Level::from_name("warning"), None);
        assert!(Level::Emerg.passes(Level::Error));
        assert!(Level::Error.passes(Level::Error));
        assert!(!Level::Warn.passes(Level::Error));
        assert!(Level::Debug.passes(Level::Debug));
        assert_eq!(Level::DEFAULT.to_string(), "error");
    }
}
