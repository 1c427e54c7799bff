//! `-s stop|quit|reopen|reload`: signal the running server through the pid
//! file its configuration names, with nginx's messages.

use crate::config::Config;
use crate::sys::error::errno_text;
use crate::sys::process::kill;

use super::{SignalName, say};

/// The signal number nginx sends for each `-s` name.
pub fn number(s: SignalName) -> i32 {
    match s {
        SignalName::Stop => libc::SIGTERM,
        SignalName::Quit => libc::SIGQUIT,
        SignalName::Reopen => libc::SIGUSR1,
        SignalName::Reload => libc::SIGHUP,
    }
}

/// Reads the pid file and sends the signal; returns the exit code.
pub fn send(config: &Config, s: SignalName) -> i32 {
    let Some(pid_path) = &config.main.pid else {
        say("[error] the configuration writes no pid file");
        return 1;
    };
    let text = match std::fs::read_to_string(pid_path) {
        Ok(t) => t,
        Err(e) => {
            say(&format!(
                "[error] open() \"{}\" failed ({})",
                pid_path.display(),
                errno_text(&e)
            ));
            return 1;
        }
    };
    let trimmed = text.trim_end_matches(['\n', '\r', ' ']);
    let pid = match trimmed.parse::<i32>() {
        Ok(p) if p > 0 => p,
        _ => {
            say(&format!(
                "[error] invalid PID number \"{trimmed}\" in \"{}\"",
                pid_path.display()
            ));
            return 1;
        }
    };
    let sig = number(s);
    match kill(pid, sig) {
        Ok(()) => 0,
        Err(e) => {
            say(&format!(
                "[alert] kill({pid}, {sig}) failed ({})",
                errno_text(&e)
            ));
            1
        }
    }
}
