//! The process: start-up order, pid file, signals, daemonizing, privileges.

/// Runs the server with a loaded configuration; returns the exit code.
pub fn run(_config: crate::config::Config, _inv: crate::cli::Invocation) -> i32 {
    crate::cli::say("[emerg] serving is not wired yet");
    1
}
