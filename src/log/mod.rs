//! Error and access logs, written off the event loops.
//!
//! - [`level`]: nginx's eight severities and the per-log threshold.
//! - [`writer`]: [`LogWriter`], one per destination file (or stderr): loops
//!   append formatted lines to a bounded in-memory buffer and one writer
//!   thread appends them to the file in batches. A full buffer drops the line
//!   (and counts it) rather than make a loop wait.
//! - [`files`]: [`LogFiles`], the open destinations by path, shared between
//!   `error_log` and `access_log` directives naming the same file; reopen on
//!   `SIGUSR1`, flush at exit.
//! - [`error_log`]: [`ErrorLog`], nginx's error-log line
//!   (`2026/11/22 01:47:34 [error] 12345#12346: *7 message`), and the stderr
//!   form used before the configuration is loaded (`nowait: [emerg] message`).
//! - [`dynamic`]: [`DynamicLogs`], the thread that writes access logs whose
//!   file name has variables, opening each file (or keeping it open under
//!   `open_log_file_cache`) off the loops.
//! - [`context`]: the request context that ends an error-log line, built
//!   cheaply (the proxy builds one per upstream attempt).
//! - [`clock`]: per-thread timestamps cached per second (`localtime_r` takes a
//!   process-wide lock in glibc).
//!
//! Access-log lines are formatted by the server, which knows the variables;
//! this module only carries them to disk.
//!
//! What this module must not do: block a loop. The only calls that wait
//! ([`LogWriter::flush`], [`LogWriter::reopen`], [`LogWriter::close`]) are for
//! the signal thread and the exit path.

pub mod clock;
pub mod context;
pub mod dynamic;
pub mod error_log;
pub mod files;
pub mod level;
pub mod writer;

pub use dynamic::DynamicLogs;
pub use error_log::{
    ErrorLog, open_startup_file, say, startup_message, write_startup_file, write_startup_message,
};
pub use files::LogFiles;
pub use level::Level;
pub use writer::{Batching, Destination, LogWriter, WriteAlert, WriterStats};
