//! Where a piece of configuration came from: a file and line, or the command
//! line (`-g`). Every syntax node and every error carries one.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The origin of a directive: nginx reports errors as `in FILE:LINE`, or
/// `in command line` for directives given with `-g`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A configuration file, by its absolute path.
    File(Arc<Path>),
    /// The `-g` option.
    CommandLine,
    /// The configuration compiled into the binary (used with no config file).
    Embedded,
}

/// A position in the configuration: origin plus 1-based line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loc {
    /// The file (or command line) the text came from.
    pub origin: Origin,
    /// The 1-based line number; meaningless for the command line.
    pub line: u32,
}

impl Loc {
    /// A location in a file.
    pub fn file(path: &Arc<Path>, line: u32) -> Loc {
        Loc {
            origin: Origin::File(path.clone()),
            line,
        }
    }
}

impl fmt::Display for Loc {
    /// nginx's form: `/etc/nowait/nowait.conf:12` or `command line`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.origin {
            Origin::File(path) => write!(f, "{}:{}", path.display(), self.line),
            Origin::CommandLine => f.write_str("command line"),
            Origin::Embedded => write!(f, "embedded configuration:{}", self.line),
        }
    }
}

/// One configuration file as read, kept for `-T`.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// The absolute path it was read from.
    pub path: PathBuf,
    /// Its text, exactly as read.
    pub text: String,
}
