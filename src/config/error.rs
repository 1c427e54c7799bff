//! Configuration errors and warnings, formatted in nginx's words.

use std::fmt;

use super::source::Loc;

/// The severity of a configuration message, as nginx names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Something worth knowing that is not wrong (`[notice]`): a directive
    /// that is accepted and has no effect in nowait, which `-t` reports.
    Notice,
    /// A suspicious but usable configuration (`[warn]`).
    Warn,
    /// A file that cannot be read once opened (`[crit]`: nginx's
    /// `ngx_read_file`); the configuration cannot be used.
    Crit,
    /// A configuration that cannot be used (`[emerg]`).
    Emerg,
    /// Said at `[emerg]` though the configuration is used all the same: a
    /// parameter nginx ignores on this platform with an `[emerg]` line
    /// (`accept filters … are not supported on this platform, ignored`).
    EmergIgnored,
}

impl Level {
    /// nginx's bracketed name.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Notice => "notice",
            Level::Warn => "warn",
            Level::Crit => "crit",
            Level::Emerg | Level::EmergIgnored => "emerg",
        }
    }

    /// Whether a message of this level stops the configuration from
    /// being used (all but `[warn]`).
    pub fn stops(self) -> bool {
        !matches!(self, Level::Notice | Level::Warn | Level::EmergIgnored)
    }
}

/// One message about the configuration: what is wrong and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfError {
    /// `[emerg]` stops the server from starting; `[warn]` does not.
    pub level: Level,
    /// The message without location, e.g. `unknown directive "x"`.
    pub message: String,
    /// Where it was found; `None` for problems outside any file.
    pub loc: Option<Loc>,
}

impl ConfError {
    /// An error that stops start-up.
    pub fn emerg(message: impl Into<String>, loc: Option<Loc>) -> ConfError {
        ConfError {
            level: Level::Emerg,
            message: message.into(),
            loc,
        }
    }

    /// A read that failed after the open, as nginx reports it (`[crit]`,
    /// without a location).
    pub fn crit(message: impl Into<String>) -> ConfError {
        ConfError {
            level: Level::Crit,
            message: message.into(),
            loc: None,
        }
    }

    /// A notice (see [`Level::Notice`]).
    pub fn notice(message: impl Into<String>, loc: Option<Loc>) -> ConfError {
        ConfError {
            level: Level::Notice,
            message: message.into(),
            loc,
        }
    }

    /// A warning.
    pub fn warn(message: impl Into<String>, loc: Option<Loc>) -> ConfError {
        ConfError {
            level: Level::Warn,
            message: message.into(),
            loc,
        }
    }
}

impl fmt::Display for ConfError {
    /// `unknown directive "x" in /etc/nowait/nowait.conf:3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(loc) = &self.loc {
            write!(f, " in {loc}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfError {}

/// Every message a load produced, errors and warnings alike, in order.
#[derive(Debug, Default)]
pub struct Diagnostics {
    /// The messages in the order they were found.
    pub items: Vec<ConfError>,
}

impl Diagnostics {
    /// Records a message.
    pub fn push(&mut self, e: ConfError) {
        self.items.push(e);
    }

    /// Whether any message is an error.
    pub fn has_errors(&self) -> bool {
        self.items.iter().any(|e| e.level.stops())
    }
}
