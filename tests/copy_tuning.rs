//! The process starts again with glibc's `rep movsb` tunable where
//! `process::copy_tuning` says it should (AMD with fast string moves, no
//! choice of the operator's), and keeps its environment otherwise; the
//! server it becomes is the one that serves.

mod common;

use common::{Conf, Fixture, Server};
use nowait::process::copy_tuning::{parse_cpuinfo, tunables_for};

/// `GLIBC_TUNABLES` in the environment of process `pid`.
fn tunables_of(pid: u32) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).expect("the server's environment");
    env.split(|b| *b == 0)
        .filter_map(|kv| std::str::from_utf8(kv).ok())
        .find_map(|kv| kv.strip_prefix("GLIBC_TUNABLES="))
        .map(str::to_string)
}

#[test]
fn the_server_runs_with_the_tunable_this_machine_calls_for() {
    let f = Fixture::build();
    let conf = Conf::http("server { listen 127.0.0.1:{port}; root {root}; }")
        .root(f.root())
        .render();
    let server = Server::nowait(&conf);
    assert_eq!(
        common::client::get(server.port(), "/dir/file.txt").status,
        200
    );
    let cpu = parse_cpuinfo(&std::fs::read_to_string("/proc/cpuinfo").unwrap())
        .expect("a vendor in /proc/cpuinfo");
    let ours = std::env::var("GLIBC_TUNABLES").ok();
    let pid = server.pid().expect("the server's pid");
    let seen = tunables_of(pid);
    match tunables_for(&cpu, ours.as_deref()) {
        Some(want) => assert_eq!(seen.as_deref(), Some(want.as_str()), "{cpu:?}"),
        None => assert_eq!(seen, ours, "{cpu:?}: the environment was changed"),
    }
    // Started again, it is still the process the harness started (exec
    // keeps the pid) and the one its pid file names.
    let pid_file = std::fs::read_dir(server.prefix())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "pid"))
        .expect("a pid file");
    let named = std::fs::read_to_string(&pid_file).unwrap();
    assert_eq!(named.trim(), pid.to_string(), "{}", pid_file.display());
    // And it keeps its name (the kernel names a process after the file
    // it executes: started again through /proc/self/exe, it was `exe`).
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
    assert_eq!(comm.trim(), "nowait");
}
