//! Control signals, received synchronously on one thread.
//!
//! The main thread blocks the control signals with [`block_control_signals`]
//! before it spawns anything, so every thread inherits the mask and no
//! asynchronous handler ever runs; one dedicated thread then loops on
//! [`ControlSignals::wait`] and turns each signal into a [`Signal`] for the
//! process layer. This is the whole of signal handling: no handler functions,
//! no async-signal-safety to reason about, no dependency.
//!
//! | signal | nginx meaning | [`Signal`] |
//! |---|---|---|
//! | `SIGHUP` | reload configuration | [`Signal::Reload`] |
//! | `SIGQUIT` | graceful shutdown | [`Signal::Quit`] |
//! | `SIGTERM`, `SIGINT` | fast shutdown | [`Signal::Stop`] |
//! | `SIGUSR1` | reopen log files | [`Signal::Reopen`] |
//! | `SIGUSR2` | upgrade binary | [`Signal::Upgrade`] (not supported: log and ignore) |
//! | `SIGPIPE` | — | ignored: a closed peer shows up as `EPIPE` instead |

use super::{cvt, cvt_errno};
use std::io;
use std::time::Duration;

/// Log name of [`block_control_signals`].
pub const PTHREAD_SIGMASK: &str = "pthread_sigmask";
/// Log name of [`ControlSignals::wait`] and [`ControlSignals::wait_timeout`].
pub const SIGTIMEDWAIT: &str = "sigtimedwait";
/// Log name of [`ignore_sigpipe`].
pub const SIGACTION: &str = "sigaction";

/// The signals the process reacts to.
const CONTROL: [libc::c_int; 6] = [
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// What a control signal asks the server to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// `SIGHUP`: re-read the configuration.
    Reload,
    /// `SIGQUIT`: stop accepting, finish in-flight requests, exit.
    Quit,
    /// `SIGTERM`/`SIGINT`: exit now.
    Stop,
    /// `SIGUSR1`: reopen log files (after rotation).
    Reopen,
    /// `SIGUSR2`: nginx's binary upgrade; nowait has none, callers log a notice.
    Upgrade,
}

impl Signal {
    /// Maps a signal number; `None` for signals that are not control signals.
    pub fn from_number(sig: i32) -> Option<Signal> {
        match sig {
            libc::SIGHUP => Some(Signal::Reload),
            libc::SIGQUIT => Some(Signal::Quit),
            libc::SIGTERM | libc::SIGINT => Some(Signal::Stop),
            libc::SIGUSR1 => Some(Signal::Reopen),
            libc::SIGUSR2 => Some(Signal::Upgrade),
            _ => None,
        }
    }

    /// The signal `-s NAME` sends for this action (`SIGTERM` for stop).
    pub fn number(self) -> i32 {
        match self {
            Signal::Reload => libc::SIGHUP,
            Signal::Quit => libc::SIGQUIT,
            Signal::Stop => libc::SIGTERM,
            Signal::Reopen => libc::SIGUSR1,
            Signal::Upgrade => libc::SIGUSR2,
        }
    }

    /// The action named on the command line: `-s stop|quit|reopen|reload`.
    pub fn from_command(name: &str) -> Option<Signal> {
        match name {
            "stop" => Some(Signal::Stop),
            "quit" => Some(Signal::Quit),
            "reopen" => Some(Signal::Reopen),
            "reload" => Some(Signal::Reload),
            _ => None,
        }
    }
}

/// The blocked control-signal set, to wait on. Plain data: `Send` and `Sync`.
#[derive(Clone, Copy)]
pub struct ControlSignals {
    set: libc::sigset_t,
}

impl std::fmt::Debug for ControlSignals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ControlSignals")
    }
}

/// Blocks the control signals in the calling thread and ignores `SIGPIPE`.
///
/// Call on the main thread before spawning any thread, so that every thread
/// inherits the mask and the signals stay pending until
/// [`ControlSignals::wait`] takes them; a thread spawned earlier would still
/// receive them asynchronously and die of the default action.
pub fn block_control_signals() -> io::Result<ControlSignals> {
    let set = control_set()?;
    // SAFETY: `set` is an initialized sigset_t; we pass no old-mask pointer.
    cvt_errno(unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) })?;
    ignore_sigpipe()?;
    Ok(ControlSignals { set })
}

fn control_set() -> io::Result<libc::sigset_t> {
    let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initializes the whole set it is given.
    cvt(unsafe { libc::sigemptyset(set.as_mut_ptr()) })?;
    // SAFETY: initialized by sigemptyset above.
    let mut set = unsafe { set.assume_init() };
    for sig in CONTROL {
        // SAFETY: `set` is initialized and `sig` a valid signal number.
        cvt(unsafe { libc::sigaddset(&mut set, sig) })?;
    }
    Ok(set)
}

/// Blocks every asynchronous signal in the calling thread, leaving only the
/// synchronous faults (`SIGILL`, `SIGFPE`, `SIGSEGV`, `SIGBUS`) deliverable:
/// pool and log threads call it first so a signal is never delivered to them
/// (nginx's pool threads do the same).
pub fn block_all_in_thread() -> io::Result<()> {
    let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigfillset initializes the whole set it is given.
    cvt(unsafe { libc::sigfillset(set.as_mut_ptr()) })?;
    // SAFETY: initialized by sigfillset above.
    let mut set = unsafe { set.assume_init() };
    for sig in [libc::SIGILL, libc::SIGFPE, libc::SIGSEGV, libc::SIGBUS] {
        // SAFETY: `set` is initialized and `sig` a valid signal number.
        cvt(unsafe { libc::sigdelset(&mut set, sig) })?;
    }
    // SAFETY: `set` is initialized; we pass no old-mask pointer.
    cvt_errno(unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) })
}

/// `sigaction(SIGPIPE, SIG_IGN)`: writes to a closed socket return `EPIPE`
/// instead of killing the process. (Rust's runtime already does this for
/// binaries; kept explicit so the library does not rely on it.)
pub fn ignore_sigpipe() -> io::Result<()> {
    // SAFETY: SIG_IGN installs no handler function, so there is no handler
    // code whose async-signal-safety matters; the previous disposition is
    // discarded.
    let prev = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    if prev == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl ControlSignals {
    /// Waits for the next control signal (`sigwaitinfo`), retrying on `EINTR`.
    pub fn wait(&self) -> io::Result<Signal> {
        loop {
            if let Some(sig) = self.wait_inner(None)? {
                return Ok(sig);
            }
        }
    }

    /// Waits at most `timeout` (`sigtimedwait`); `Ok(None)` when it passed
    /// (or a non-control signal interrupted the wait),
    /// so the signal thread can also notice a shutdown decided elsewhere.
    pub fn wait_timeout(&self, timeout: Duration) -> io::Result<Option<Signal>> {
        self.wait_inner(Some(timeout))
    }

    fn wait_inner(&self, timeout: Option<Duration>) -> io::Result<Option<Signal>> {
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: libc::time_t::try_from(t.as_secs()).unwrap_or(libc::time_t::MAX),
            tv_nsec: t.subsec_nanos() as libc::c_long,
        });
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `self.set` is an initialized sigset_t; `ts_ptr` is null (wait
        // forever) or points at `ts`, alive for the call; no siginfo wanted.
        let ret = unsafe { libc::sigtimedwait(&self.set, std::ptr::null_mut(), ts_ptr) };
        if ret < 0 {
            let err = io::Error::last_os_error();
            return match err.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
                _ => Err(err),
            };
        }
        // Only control signals are in the set, so this always maps.
        Ok(Signal::from_number(ret))
    }
}

/// Sends `sig` to the calling thread only (`raise`, a `tgkill` to ourselves).
/// Used to wake the signal thread's own wait, and by tests.
pub fn raise(sig: i32) -> io::Result<()> {
    // SAFETY: plain integer argument; with the signal blocked it just pends.
    cvt(unsafe { libc::raise(sig) })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs on its own thread: the mask is per thread, and the signals are
    /// thread-directed (`raise`), so the rest of the test process is untouched.
    #[test]
    fn blocked_signals_are_received_in_order() {
        std::thread::spawn(|| {
            let sigs = block_control_signals().unwrap();
            assert_eq!(sigs.wait_timeout(Duration::from_millis(1)).unwrap(), None);
            raise(libc::SIGUSR1).unwrap();
            assert_eq!(sigs.wait().unwrap(), Signal::Reopen);
            raise(libc::SIGHUP).unwrap();
            assert_eq!(
                sigs.wait_timeout(Duration::from_secs(5)).unwrap(),
                Some(Signal::Reload)
            );
            raise(libc::SIGINT).unwrap();
            assert_eq!(sigs.wait().unwrap(), Signal::Stop);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn block_all_leaves_a_thread_deaf_to_control_signals() {
        std::thread::spawn(|| {
            block_all_in_thread().unwrap();
            let sigs = block_control_signals().unwrap();
            // Blocked signals still pend for sigtimedwait.
            raise(libc::SIGQUIT).unwrap();
            assert_eq!(sigs.wait().unwrap(), Signal::Quit);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn command_names_round_trip() {
        for (name, sig, num) in [
            ("stop", Signal::Stop, libc::SIGTERM),
            ("quit", Signal::Quit, libc::SIGQUIT),
            ("reopen", Signal::Reopen, libc::SIGUSR1),
            ("reload", Signal::Reload, libc::SIGHUP),
        ] {
            assert_eq!(Signal::from_command(name), Some(sig));
            assert_eq!(sig.number(), num);
            assert_eq!(Signal::from_number(num), Some(sig));
        }
        assert_eq!(Signal::from_command("restart"), None);
        assert_eq!(Signal::from_number(libc::SIGCHLD), None);
    }
}
