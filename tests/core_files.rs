//! Black-box tests of the directives that decide which file answers:
//! `try_files` (files, directories, `=code`, URI and named fallbacks, under
//! `alias`), `internal`, `disable_symlinks` (`on`, `if_not_owner`, `from=`),
//! `open_file_cache` (errors kept, descriptors kept), and where a request's
//! errors are logged (`error_log` per location, `log_not_found`). nginx
//! 1.22's behaviour: run with `NOWAIT_TEST_NGINX=1` to check it.

mod common;

use std::os::unix::fs::symlink;

use common::client::get;
use common::wait::until;
use common::{Conf, Fixture, Server};

fn serve_http(f: &Fixture, server: &str) -> Server {
    Server::tested(
        &Conf::server(&format!("root {{root}};\n{server}"))
            .root(f.root())
            .render(),
    )
}

#[test]
fn try_files_tries_files_then_falls_back() {
    let f = Fixture::build();
    let s = serve_http(
        &f,
        "location / { try_files $uri /index.html; }
         location /code/ { try_files $uri =418; }
         location /dirs/ { try_files /dir/ =404; }
         location /notdir/ { try_files /x/ =404; }
         location /named/ { try_files $uri @fallback; }
         location @fallback { return 200 \"named $uri\"; }
         location /args/ { try_files $uri /fb?from=$uri; }
         location = /fb { return 200 \"fb $arg_from\"; }
         location /al/ { alias {root}/dir/; try_files $uri =404; }
         location ~ ^/re(/.*)$ { alias {root}/dir; try_files $1 =404; }",
    );
    let p = s.port();
    assert_eq!(common::body(&get(p, "/x")), "the x target\n");
    // The fallback is an internal redirect.
    assert!(common::body(&get(p, "/missing")).contains("hello from the root"));
    assert_eq!(get(p, "/code/missing").status, 418);
    // `/dir/` tests a directory: found, the URI becomes `/dir`, a 301.
    assert_eq!(get(p, "/dirs/").status, 301);
    // `/x/` is a file, not a directory.
    assert_eq!(get(p, "/notdir/").status, 404);
    assert_eq!(
        common::body(&get(p, "/named/missing")),
        "named /named/missing"
    );
    assert_eq!(common::body(&get(p, "/args/missing")), "fb /args/missing");
    // Under an alias, `$uri` loses the location's name.
    assert_eq!(common::body(&get(p, "/al/file.txt")), "dir file\n");
    assert_eq!(get(p, "/al/nothing").status, 404);
}

/// A named location written twice is taken, as nginx takes it (its
/// duplicate check looks at the static tree only), and the first one
/// written answers.
#[test]
fn a_named_location_written_twice_answers_with_the_first() {
    let f = Fixture::build();
    let s = serve_http(
        &f,
        "location / { try_files /nothing-here @fallback; }
         location @fallback { return 200 \"first\"; }
         location @fallback { return 200 \"second\"; }",
    );
    assert_eq!(common::body(&get(s.port(), "/missing")), "first");
}

#[test]
fn internal_locations_serve_internal_redirects_only() {
    let f = Fixture::build();
    let s = serve_http(
        &f,
        "location /int/ { internal; alias {root}/dir/; }
         location /go { try_files /nothing /int/file.txt; }",
    );
    assert_eq!(get(s.port(), "/int/file.txt").status, 404);
    assert_eq!(common::body(&get(s.port(), "/go")), "dir file\n");
}

/// A file owned by someone else than the tests (root's), for
/// `if_not_owner`; `None` when there is none or we are that owner.
fn foreign_file() -> Option<&'static str> {
    let me = unsafe_free_uid();
    ["/etc/protocols", "/etc/resolv.conf", "/etc/hostname"]
        .into_iter()
        .find(|p| {
            std::fs::symlink_metadata(p).is_ok_and(|m| {
                use std::os::unix::fs::MetadataExt;
                m.file_type().is_file() && m.uid() != me
            })
        })
}

/// The tests' uid, read from the file system rather than a system call.
fn unsafe_free_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    let probe = std::env::temp_dir().join(format!("nowait-uid-{}", std::process::id()));
    std::fs::write(&probe, b"").unwrap();
    let uid = std::fs::metadata(&probe).unwrap().uid();
    std::fs::remove_file(&probe).unwrap();
    uid
}

#[test]
fn disable_symlinks_refuses_links() {
    let f = Fixture::build();
    std::fs::create_dir(f.root().join("on")).unwrap();
    std::fs::write(f.root().join("on/real.txt"), "real\n").unwrap();
    symlink("real.txt", f.root().join("on/link")).unwrap();
    std::fs::create_dir(f.root().join("owner")).unwrap();
    std::fs::write(f.root().join("owner/real.txt"), "real\n").unwrap();
    symlink("real.txt", f.root().join("owner/mine")).unwrap();
    let foreign = foreign_file();
    if let Some(other) = foreign {
        symlink(other, f.root().join("owner/theirs")).unwrap();
    }
    let s = serve_http(
        &f,
        "location /on/ { disable_symlinks on; }
         location /owner/ { disable_symlinks if_not_owner; }
         location /from/ { disable_symlinks on from=$document_root; alias {root}/; }
         location /iff/ { disable_symlinks on; alias {root}/on/;
                          if (-f $request_filename) { return 204; } }",
    );
    let p = s.port();
    assert_eq!(get(p, "/on/real.txt").status, 200);
    assert_eq!(get(p, "/on/link").status, 403);
    assert_eq!(get(p, "/owner/mine").status, 200);
    if foreign.is_some() {
        assert_eq!(get(p, "/owner/theirs").status, 403);
    }
    // After `from=` (the document root), links are checked.
    assert_eq!(get(p, "/from/link.txt").status, 403);
    assert_eq!(get(p, "/from/x").status, 200);
    // `-f` sees the rule too: the link is no file, the static handler refuses it.
    assert_eq!(get(p, "/iff/real.txt").status, 204);
    assert_eq!(get(p, "/iff/link").status, 403);
}

#[test]
fn open_file_cache_keeps_errors_and_descriptors() {
    let f = Fixture::build();
    std::fs::write(f.root().join("kept.txt"), "kept\n").unwrap();
    let s = serve_http(
        &f,
        "open_file_cache max=16 inactive=60s;
         open_file_cache_valid 60s;
         open_file_cache_errors on;",
    );
    let p = s.port();
    assert_eq!(get(p, "/late.txt").status, 404);
    std::fs::write(f.root().join("late.txt"), "late\n").unwrap();
    // The error is remembered for `open_file_cache_valid`.
    assert_eq!(get(p, "/late.txt").status, 404);
    assert_eq!(common::body(&get(p, "/kept.txt")), "kept\n");
    std::fs::remove_file(f.root().join("kept.txt")).unwrap();
    // The descriptor is kept: the removed file still answers.
    assert_eq!(common::body(&get(p, "/kept.txt")), "kept\n");
}

#[test]
fn errors_go_to_the_location_error_log() {
    let f = Fixture::build();
    let logs = common::TempDir::new("errlogs");
    let dir = logs.path().display().to_string();
    std::fs::set_permissions(
        logs.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let s = serve_http(
        &f,
        &format!(
            "location /a/ {{ error_log {dir}/a.log; }}
             location /b/ {{ error_log {dir}/b.log; log_not_found off; }}
             location /c/ {{ error_log {dir}/c.log crit; }}"
        ),
    );
    let p = s.port();
    assert_eq!(get(p, "/a/missing").status, 404);
    assert_eq!(get(p, "/b/missing").status, 404);
    assert_eq!(get(p, "/c/missing").status, 404);
    let a = logs.path().join("a.log");
    assert!(
        until(std::time::Duration::from_secs(5), || {
            std::fs::read_to_string(&a).is_ok_and(|t| t.contains("/a/missing"))
        }),
        "a.log"
    );
    let text = std::fs::read_to_string(&a).unwrap();
    assert!(
        text.contains("[error]") && text.contains("No such file"),
        "{text}"
    );
    drop(s);
    let b = std::fs::read_to_string(logs.path().join("b.log")).unwrap_or_default();
    assert!(!b.contains("[error]"), "{b}");
    let c = std::fs::read_to_string(logs.path().join("c.log")).unwrap_or_default();
    assert!(!c.contains("[error]"), "{c}");
}

/// The calls to `call` that `strace` saw the server make while `f` ran.
fn traced(s: &Server, call: &str, f: impl FnOnce()) -> String {
    let out = s.prefix().join("strace.out");
    let _ = std::fs::remove_file(&out);
    let pid = s.pid().expect("the server's pid").to_string();
    let mut strace = std::process::Command::new("strace")
        .args(["-f", "-qq", "-e", &format!("trace={call},accept4"), "-o"])
        .arg(&out)
        .args(["-p", &pid])
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("strace runs (scripts/install-test-deps.sh installs it)");
    // Attached once it sees the worker accept a connection.
    let attached = until(std::time::Duration::from_secs(10), || {
        let _ = get(s.port(), "/attach");
        std::fs::read_to_string(&out).is_ok_and(|t| t.contains("accept4"))
    });
    assert!(attached, "strace did not attach to the server");
    f();
    let _ = std::process::Command::new("kill")
        .args(["-INT", &strace.id().to_string()])
        .status();
    let _ = strace.wait();
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    text.lines()
        .filter(|l| l.contains(call))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `read_ahead` as nginx on Linux: a file larger than 128 KiB is advised
/// `POSIX_FADV_SEQUENTIAL` when sent; a smaller one, or `read_ahead 0`,
/// is not.
#[test]
fn read_ahead_advises_sequential_reads_of_large_files() {
    let f = Fixture::build();
    std::fs::write(f.root().join("large.bin"), common::pattern(256 * 1024)).unwrap();
    std::fs::write(f.root().join("small.bin"), common::pattern(64 * 1024)).unwrap();
    let s = serve_http(
        &f,
        "location / { read_ahead 512k; }
         location /off/ { alias {root}/; read_ahead 0; }",
    );
    let p = s.port();
    let calls = traced(&s, "fadvise64", || {
        assert_eq!(get(p, "/small.bin").status, 200);
        assert_eq!(get(p, "/off/large.bin").status, 200);
    });
    assert!(!calls.contains("POSIX_FADV_SEQUENTIAL"), "{calls}");
    let calls = traced(&s, "fadvise64", || {
        assert_eq!(get(p, "/large.bin").status, 200);
    });
    assert!(calls.contains("POSIX_FADV_SEQUENTIAL"), "{calls}");
}
