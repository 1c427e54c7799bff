//! `worker_priority` and `worker_cpu_affinity` on the workers' threads.
//!
//! nginx sets both in each worker process at its start
//! (`ngx_worker_process_init`): the nice value first, while the worker is
//! still root and may raise its priority, then `setuid()`, then the CPU
//! affinity. Each nowait worker is a thread, and on Linux both settings
//! belong to a thread, so [`worker_init`] does the same on each worker's
//! thread, in the same order around the thread's own privilege drop. A
//! reload's workers are new threads: they take the new configuration's
//! values.
//!
//! Started as root with a `user`, nowait gives up root for the whole process
//! before any thread exists (`privsep`): a worker's thread then asks the
//! privileged helper for a priority above the process's (a negative
//! `worker_priority`), which the helper grants only as the configuration
//! says and only to a thread of the serving process.
//!
//! Pool threads are not bound to CPUs: they serve every worker, and a task
//! is best run on whichever CPU is idle, not on the CPU of a loop it would
//! take time from. Their priority follows the workers' (see
//! `io::pool::POOL_NICE`).

use std::io;
use std::sync::Arc;

use crate::config::model::MainConf;
use crate::io::pool::ThreadInit;
use crate::log::{ErrorLog, Level};
use crate::sys::error::errno_text;
use crate::sys::process::gettid;
use crate::sys::sched::{
    SCHED_GETAFFINITY, SCHED_SETAFFINITY, SETPRIORITY, set_thread_cpus, set_thread_priority,
    thread_cpus,
};

/// The start-of-thread hook of worker `index` (from 0): its priority, then
/// `init` (the privilege drop), then its CPUs. Failures are logged at
/// `alert` and the worker runs on, as nginx's does.
pub fn worker_init(main: &MainConf, index: usize, log: &ErrorLog, init: &ThreadInit) -> ThreadInit {
    let priority = main.worker_priority;
    let affinity = main.worker_cpu_affinity.clone();
    let (log, init) = (log.clone(), init.clone());
    Arc::new(move || {
        if let Some(p) = priority {
            if let Err(e) = set_priority(p) {
                log.log(
                    Level::Alert,
                    None,
                    format_args!("{SETPRIORITY}({p}) failed ({})", errno_text(&e)),
                );
            }
        }
        init();
        let Some(affinity) = &affinity else {
            return;
        };
        // A new thread has its creator's CPUs: the main thread's, never
        // bound, so the process's.
        let available = match thread_cpus() {
            Ok(c) => c,
            Err(e) => {
                log.log(
                    Level::Alert,
                    None,
                    format_args!("{SCHED_GETAFFINITY}() failed ({})", errno_text(&e)),
                );
                return;
            }
        };
        let Some(cpus) = affinity.for_worker(index, &available) else {
            return;
        };
        for cpu in &cpus {
            log.log(
                Level::Notice,
                None,
                format_args!("{SCHED_SETAFFINITY}(): using cpu #{cpu}"),
            );
        }
        if let Err(e) = set_thread_cpus(&cpus) {
            log.log(
                Level::Alert,
                None,
                format_args!("{SCHED_SETAFFINITY}() failed ({})", errno_text(&e)),
            );
        }
    })
}

/// Gives the calling thread the nice value `nice`: itself, or, for a
/// priority the process may no longer take, through the privileged helper
/// when there is one. When the helper cannot either (it lacks
/// `CAP_SYS_NICE` too), the thread's own error is the one returned: the
/// error nginx's worker gets for the same call.
fn set_priority(nice: i32) -> io::Result<()> {
    match set_thread_priority(nice) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) => {
            match crate::sys::privsep::set_priority(gettid(), nice) {
                Some(Ok(())) => Ok(()),
                _ => Err(e),
            }
        }
        r => r,
    }
}
