//! Black-box tests of `worker_priority` and `worker_cpu_affinity`: the
//! worker threads' nice values and CPUs as `/proc` shows them, at start and
//! after a reload, the pool threads' priority below the workers', and
//! `-t`'s messages for bad values against nginx 1.22's.
//!
//! The machine may have only 2 CPUs: the masks use the first two CPUs the
//! test process may run on, and the tests that bind need two (they say so
//! and pass without binding on a machine with one).

mod common;

use std::time::Duration;

use common::nginx_t::{self, messages};
use common::{Conf, Server};

/// What `/proc` says of one of the server's threads.
#[derive(Debug)]
struct Task {
    /// Its name (`worker#1.1`, `p#1`).
    name: String,
    /// Its nice value (field 19 of `stat`).
    nice: i32,
    /// The CPUs it may run on (`Cpus_allowed_list` of `status`).
    cpus: Vec<usize>,
}

/// `0-2,5` → [0, 1, 2, 5].
fn cpu_list(s: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<usize>().unwrap()..=b.parse().unwrap()),
            None => out.push(part.parse().unwrap()),
        }
    }
    out
}

/// The `Cpus_allowed_list` of a `status` file's text.
fn allowed_cpus(status: &str) -> Vec<usize> {
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("a Cpus_allowed_list line");
    cpu_list(line)
}

/// Every thread of process `pid` (one that exits meanwhile is skipped).
fn tasks(pid: u32) -> Vec<Task> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/task")).expect("the task list") {
        let dir = e.expect("a task").path();
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
        let (Some(comm), Some(stat), Some(status)) = (read("comm"), read("stat"), read("status"))
        else {
            continue;
        };
        // Fields after the command's ')': state is field 3, nice field 19.
        let rest = &stat[stat.rfind(')').expect("stat has a ')'") + 2..];
        let nice = rest.split(' ').nth(16).expect("field 19").parse().unwrap();
        out.push(Task {
            name: comm.trim().to_string(),
            nice,
            cpus: allowed_cpus(&status),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The threads of `s` whose name starts with `prefix`, once there are
/// `count` of them and `done` holds for the list (a thread has its name
/// before it has set its priority and CPUs), or after 5 s.
fn wait_tasks(s: &Server, prefix: &str, count: usize, done: impl Fn(&[Task]) -> bool) -> Vec<Task> {
    let pid = s.pid().expect("running");
    let of = || -> Vec<Task> {
        tasks(pid)
            .into_iter()
            .filter(|t| t.name.starts_with(prefix))
            .collect()
    };
    common::wait::until(Duration::from_secs(5), || {
        let got = of();
        got.len() == count && done(&got)
    });
    let got = of();
    assert_eq!(got.len(), count, "{prefix}*: {:?}", tasks(pid));
    got
}

/// Every thread of a list has the nice value `n`.
fn nice(n: i32) -> impl Fn(&[Task]) -> bool {
    move |t| t.iter().all(|t| t.nice == n)
}

/// Each thread of a list has one CPU.
fn bound(t: &[Task]) -> bool {
    t.iter().all(|t| t.cpus.len() == 1)
}

/// The first two CPUs `test` may run on, or `None` when there is only one
/// (`test` is then skipped, or fails under `NOWAIT_REQUIRE_ALL=1`).
fn two_cpus(test: &str) -> Option<(usize, usize)> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let cpus = allowed_cpus(&status);
    let two = common::require(
        cpus.len() >= 2,
        test,
        "one CPU only: the workers cannot be told apart by their CPUs",
    );
    two.then(|| (cpus[0], cpus[1]))
}

/// A binary mask of `cpu` alone (`100` for CPU 2).
fn mask(cpu: usize) -> String {
    format!("1{}", "0".repeat(cpu))
}

fn conf(main: &str) -> String {
    Conf::server("return 200 ok;")
        .main(main)
        .render()
        .replace("error_log stderr;", "error_log stderr notice;")
}

#[test]
fn workers_take_their_priority_and_masks() {
    let Some((a, b)) = two_cpus(common::test_name!()) else {
        return;
    };
    let s = Server::nowait(&conf(&format!(
        "worker_processes 2;\nworker_priority 5;\nworker_cpu_affinity {} {};\nthread_pool p threads=1;",
        mask(a),
        mask(b)
    )));
    let workers = wait_tasks(&s, "worker#", 2, |t| bound(t) && nice(5)(t));
    assert_eq!(workers[0].name, "worker#1.1");
    assert_eq!(workers[0].cpus, [a], "{workers:?}");
    assert_eq!(workers[1].cpus, [b], "{workers:?}");
    assert!(workers.iter().all(|w| w.nice == 5), "{workers:?}");
    // The pool runs 10 steps below the workers, on any CPU.
    let pool = wait_tasks(&s, "p#", 1, nice(15));
    assert_eq!(pool[0].nice, 15, "{pool:?}");
    let main = tasks(s.pid().unwrap())
        .into_iter()
        .find(|t| t.name == "nowait")
        .expect("the main thread");
    assert_eq!(main.nice, 0, "the main thread keeps the process's value");
    assert!(pool[0].cpus.len() >= 2 && main.cpus.len() >= 2);
    let log = s.stderr();
    for cpu in [a, b] {
        let msg = format!("sched_setaffinity(): using cpu #{cpu}");
        assert!(
            log.lines()
                .any(|l| l.contains("[notice] ") && l.ends_with(&msg)),
            "{msg}: {log}"
        );
    }
}

#[test]
fn auto_gives_each_worker_a_cpu_of_its_own() {
    let Some((a, b)) = two_cpus(common::test_name!()) else {
        return;
    };
    let s = Server::nowait(&conf("worker_processes 2;\nworker_cpu_affinity auto;"));
    let workers = wait_tasks(&s, "worker#", 2, bound);
    assert_eq!(workers[0].cpus, [a], "{workers:?}");
    assert_eq!(workers[1].cpus, [b], "{workers:?}");
    // Restricted by a mask: both on its one CPU.
    let s = Server::nowait(&conf(&format!(
        "worker_processes 2;\nworker_cpu_affinity auto {};",
        mask(b)
    )));
    let workers = wait_tasks(&s, "worker#", 2, bound);
    assert!(workers.iter().all(|w| w.cpus == [b]), "{workers:?}");
}

#[test]
fn more_workers_than_masks_reuse_the_last() {
    let Some((a, b)) = two_cpus(common::test_name!()) else {
        return;
    };
    let s = Server::nowait(&conf(&format!(
        "worker_processes 3;\nworker_cpu_affinity {} {};",
        mask(a),
        mask(b)
    )));
    let workers = wait_tasks(&s, "worker#", 3, bound);
    let cpus: Vec<_> = workers.iter().map(|w| w.cpus.clone()).collect();
    assert_eq!(cpus, [vec![a], vec![b], vec![b]], "{workers:?}");
    // nginx's warning, at start.
    assert!(
        s.stderr().contains("[warn] the number of \"worker_processes\" is not equal to the number of \"worker_cpu_affinity\" masks, using last mask for remaining worker processes"),
        "{}",
        s.stderr()
    );
}

#[test]
fn a_reload_starts_workers_with_the_new_values() {
    let Some((a, b)) = two_cpus(common::test_name!()) else {
        return;
    };
    let before = format!(
        "worker_processes 2;\nworker_priority 3;\nworker_cpu_affinity {} {};\nthread_pool p threads=1;",
        mask(a),
        mask(b)
    );
    let s = Server::nowait(&conf(&before));
    let workers = wait_tasks(&s, "worker#", 2, |t| bound(t) && nice(3)(t));
    assert!(workers.iter().all(|w| w.nice == 3), "{workers:?}");
    assert_eq!(wait_tasks(&s, "p#", 1, nice(13))[0].nice, 13);
    // Swapped masks, a lower priority.
    s.write_conf(&conf(&format!(
        "worker_processes 2;\nworker_priority 6;\nworker_cpu_affinity {} {};\nthread_pool p threads=1;",
        mask(b),
        mask(a)
    )));
    s.signal("HUP");
    let workers = wait_tasks(&s, "worker#", 2, |t| {
        t.iter().all(|w| w.name.ends_with(".2")) && bound(t) && nice(6)(t)
    });
    assert!(
        workers.iter().all(|w| w.name.ends_with(".2")),
        "the old generation is gone: {workers:?}"
    );
    assert_eq!(workers[0].cpus, [b], "{workers:?}");
    assert_eq!(workers[1].cpus, [a], "{workers:?}");
    assert!(workers.iter().all(|w| w.nice == 6), "{workers:?}");
    // A new pool, below the new priority.
    assert_eq!(wait_tasks(&s, "p#", 1, nice(16))[0].nice, 16);
}

/// Whether this process may raise a priority (`CAP_SYS_NICE`, bit 23 of
/// the effective set).
fn may_raise_priority() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << 23) != 0)
}

#[test]
fn a_negative_priority_needs_privilege() {
    let s = Server::nowait(&conf("worker_processes 2;\nworker_priority -4;"));
    let raised = may_raise_priority();
    let workers = wait_tasks(&s, "worker#", 2, nice(if raised { -4 } else { 0 }));
    if raised {
        // Started as root, the serving process has given up root: the
        // helper raised the workers' priority, not the rest of the process.
        assert!(workers.iter().all(|w| w.nice == -4), "{workers:?}");
        let main = tasks(s.pid().unwrap())
            .into_iter()
            .find(|t| t.name == "nowait")
            .unwrap();
        assert_eq!(main.nice, 0);
    } else {
        // As nginx: an alert, and the workers serve on.
        common::wait::until(Duration::from_secs(5), || {
            s.stderr().matches("setpriority(-4) failed").count() == 2
        });
        let log = s.stderr();
        assert_eq!(
            messages(&log, "alert"),
            ["setpriority(-4) failed (13: Permission denied)"; 2],
            "{log}"
        );
        assert!(workers.iter().all(|w| w.nice == 0), "{workers:?}");
    }
    assert_eq!(common::client::get(s.port(), "/").status, 200);
}

/// A configuration file whose main context holds `main` (line 1).
fn main_file(main: &str) -> String {
    format!("{main}\nevents {{}}\n")
}

#[test]
#[rustfmt::skip]
fn bad_values_are_refused_as_nginx_refuses_them() {
    let long = format!("worker_cpu_affinity {};", "0".repeat(1025));
    let cases = [
        ("priority-word", "worker_priority high;", "\"worker_priority\" directive invalid number"),
        ("priority-signs", "worker_priority +-5;", "\"worker_priority\" directive invalid number"),
        ("priority-sign-only", "worker_priority -;", "\"worker_priority\" directive invalid number"),
        ("priority-twice", "worker_priority 5; worker_priority 3;", "\"worker_priority\" directive is duplicate"),
        ("priority-no-value", "worker_priority;", "invalid number of arguments in \"worker_priority\" directive"),
        ("mask-character", "worker_cpu_affinity 0x1y;", "invalid character \"y\" in \"worker_cpu_affinity\""),
        ("mask-digit", "worker_cpu_affinity 0102;", "invalid character \"2\" in \"worker_cpu_affinity\""),
        ("auto-not-first", "worker_cpu_affinity 01 auto;", "invalid character \"o\" in \"worker_cpu_affinity\""),
        ("auto-two-masks", "worker_cpu_affinity auto 01 10;", "invalid number of arguments in \"worker_cpu_affinity\" directive"),
        ("mask-too-long", &long, "\"worker_cpu_affinity\" supports up to 1024 CPUs only"),
        ("affinity-twice", "worker_cpu_affinity 01; worker_cpu_affinity 10;", "\"worker_cpu_affinity\" directive is duplicate"),
        ("affinity-in-http", "http { worker_cpu_affinity 01; }", "\"worker_cpu_affinity\" directive is not allowed here"),
    ];
    nginx_t::check_bad_files(
        cases.into_iter().map(|(name, main, message)| (name, main_file(main), message, Some(1))).collect(),
    );
}

#[test]
#[rustfmt::skip]
fn good_values_pass_with_nginx_warnings() {
    nginx_t::check_good_files(vec![
        ("priority", main_file("worker_priority 5;")),
        ("priority-negative", main_file("worker_priority -20;")),
        ("priority-zero-then-set", main_file("worker_priority 0; worker_priority 5;")),
        ("masks", main_file("worker_processes 2; worker_cpu_affinity 01 10;")),
        ("masks-more-than-workers", main_file("worker_cpu_affinity 01 10;")),
        ("masks-three-workers-two", main_file("worker_processes 2; worker_cpu_affinity 01 10 01;")),
        ("auto", main_file("worker_cpu_affinity auto;")),
        ("auto-mask", main_file("worker_cpu_affinity auto 11;")),
        ("mask-spaces", main_file("worker_cpu_affinity \"0 1\";")),
    ]);
}
