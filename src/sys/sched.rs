//! The calling thread's scheduling: its nice value (`getpriority`,
//! `setpriority`) and the CPUs it may run on (`sched_getaffinity`,
//! `sched_setaffinity`).
//!
//! On Linux both are properties of one thread: `PRIO_PROCESS` with a thread
//! id names that thread only, and affinity pid 0 is the calling thread. So
//! each serving thread sets its own, at its start (`worker_priority`,
//! `worker_cpu_affinity`, the pools' lower priority), and the main thread
//! keeps the process's.

use std::io;

use super::cvt;
use super::process::gettid;

/// Log name of [`set_thread_priority`].
pub const SETPRIORITY: &str = "setpriority";
/// Log name of [`set_thread_cpus`].
pub const SCHED_SETAFFINITY: &str = "sched_setaffinity";
/// Log name of [`thread_cpus`].
pub const SCHED_GETAFFINITY: &str = "sched_getaffinity";

/// The highest priority a nice value can ask for.
pub const NICE_MIN: i32 = -20;
/// The lowest priority a nice value can ask for.
pub const NICE_MAX: i32 = 19;
/// How many CPUs a `cpu_set_t` names (glibc's `CPU_SETSIZE`).
pub const CPU_SETSIZE: usize = libc::CPU_SETSIZE as usize;

/// The calling thread's nice value (`getpriority(PRIO_PROCESS, gettid())`).
pub fn thread_priority() -> io::Result<i32> {
    let tid = gettid();
    // getpriority returns the nice value itself, which may be -1: errno
    // tells an error apart.
    // SAFETY: errno is this thread's; plain integer arguments.
    let current = unsafe {
        *libc::__errno_location() = 0;
        libc::getpriority(libc::PRIO_PROCESS, tid)
    };
    let err = io::Error::last_os_error();
    if current == -1 && err.raw_os_error().unwrap_or(0) != 0 {
        return Err(err);
    }
    Ok(current)
}

/// Sets the calling thread's nice value (`setpriority(PRIO_PROCESS,
/// gettid(), nice)`), clamped to [`NICE_MIN`]..=[`NICE_MAX`] as the kernel
/// clamps it. Raising it needs no privilege; lowering it below what
/// `RLIMIT_NICE` allows needs `CAP_SYS_NICE` (`EACCES` otherwise).
pub fn set_thread_priority(nice: i32) -> io::Result<()> {
    set_task_priority(gettid(), nice)
}

/// Sets the nice value of thread `tid` of this or another process, clamped
/// as [`set_thread_priority`]: the privileged helper's part of a serving
/// thread's `worker_priority`. Another user's thread needs `CAP_SYS_NICE`.
pub fn set_task_priority(tid: u32, nice: i32) -> io::Result<()> {
    let nice = nice.clamp(NICE_MIN, NICE_MAX);
    // SAFETY: plain integer arguments.
    cvt(unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, nice) })?;
    Ok(())
}

/// Raises the calling thread's nice value by `step` (capped at
/// [`NICE_MAX`], the lowest priority). Lowering a priority needs no
/// privilege; it cannot be undone without `CAP_SYS_NICE`, and is not meant
/// to be. Returns the new nice value.
pub fn lower_thread_priority(step: i32) -> io::Result<i32> {
    let wanted = thread_priority()?.saturating_add(step).min(NICE_MAX);
    set_thread_priority(wanted)?;
    Ok(wanted)
}

/// The CPUs the calling thread may run on (`sched_getaffinity(0)`), in
/// increasing order. A new thread inherits its creator's set, so on a
/// thread that never changed its own this is the process's: the CPUs of its
/// cpuset, or every online one.
pub fn thread_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: an all-zero cpu_set_t is a valid, empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is writable storage of the size passed; pid 0 is the
    // calling thread.
    cvt(unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) })?;
    let mut cpus = Vec::new();
    for i in 0..CPU_SETSIZE {
        // SAFETY: `i` < CPU_SETSIZE, so the bit read is inside `set`.
        if unsafe { libc::CPU_ISSET(i, &set) } {
            cpus.push(i);
        }
    }
    Ok(cpus)
}

/// Binds the calling thread to `cpus` (`sched_setaffinity(0)`). A CPU past
/// [`CPU_SETSIZE`] is `EINVAL`; so is a set with no CPU the process may use
/// (the kernel's answer to an empty or offline set).
pub fn set_thread_cpus(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: an all-zero cpu_set_t is a valid, empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= CPU_SETSIZE {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: `cpu` < CPU_SETSIZE, so the bit is inside `set`.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed, only read;
    // pid 0 is the calling thread.
    cvt(unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Field 19 of /proc/self/task/TID/stat (the nice value), after the
    /// command's ')'.
    fn nice_of(tid: u32) -> i32 {
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        rest.split(' ').nth(16).unwrap().parse().unwrap()
    }

    #[test]
    fn lowering_a_thread_priority_leaves_other_threads_alone() {
        let main = gettid();
        let before = nice_of(main);
        let (tid, got) = std::thread::spawn(|| {
            let got = lower_thread_priority(3).unwrap();
            let again = lower_thread_priority(100).unwrap();
            assert_eq!(again, NICE_MAX, "capped at the lowest priority");
            assert_eq!(thread_priority().unwrap(), NICE_MAX);
            (gettid(), got)
        })
        .join()
        .unwrap();
        assert_eq!(got, (before + 3).min(NICE_MAX));
        assert_ne!(tid, main);
        assert_eq!(nice_of(main), before, "the calling thread only");
    }

    #[test]
    fn a_priority_out_of_range_is_clamped() {
        std::thread::spawn(|| {
            set_thread_priority(100).unwrap();
            assert_eq!(nice_of(gettid()), NICE_MAX);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn binding_a_thread_leaves_the_others_free() {
        let all = thread_cpus().unwrap();
        assert!(!all.is_empty());
        let last = *all.last().unwrap();
        let bound = std::thread::spawn(move || {
            set_thread_cpus(&[last]).unwrap();
            thread_cpus().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(bound, [last]);
        assert_eq!(thread_cpus().unwrap(), all, "the calling thread only");
    }

    #[test]
    fn impossible_sets_are_refused() {
        std::thread::spawn(|| {
            let e = set_thread_cpus(&[]).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
            let e = set_thread_cpus(&[CPU_SETSIZE]).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
        })
        .join()
        .unwrap();
    }
}
