//! Black-box tests of disk faults the server survives (issue: faults stay
//! contained), each needing root to make the fault; without root, or
//! without the kernel feature, a test says `SKIPPED` on the terminal, and
//! fails under `NOWAIT_REQUIRE_ALL=1` (scripts/test.sh: CI runs them as
//! root):
//!
//! - a full disk under the access log (a 64 KiB tmpfs): lines are lost and
//!   counted (`nowait_log_write_errors_total`), the event loops never wait
//!   on it, and the server keeps serving;
//! - a read error (EIO) in the middle of a response: nginx's
//!   `ngx_read_file` message, `pread() "…" failed (5: Input/output error)`,
//!   the connection closed, the worker serving on. Made with a FUSE file
//!   system whose reads start failing on demand (`tests/faults/eio_fs.py`;
//!   fusepy and libfuse2, which scripts/install-test-deps.sh installs), and
//!   also, where the kernel has device-mapper, with its `error` target
//!   swapped in under a mounted file system (kernels built without it,
//!   such as CI's, say so and test the FUSE failure only).
//!
//! A client that stops reading mid-body (`send_timeout`) is tested in
//! tests/reliability.rs.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::cached::Cached;
use common::client::{Conn, get};
use common::{TempDir, is_root, require_or_skip, wait};

/// How long a test waits for an effect that follows a request.
const SETTLE: Duration = Duration::from_secs(10);

/// Runs a command; its success.
fn run(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .status()
        .is_ok_and(|s| s.success())
}

/// Unmounts on drop (lazily, so that a failed test never leaves a busy
/// mount behind).
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = run("umount", &["-l", &self.0.to_string_lossy()]);
    }
}

#[test]
fn a_full_disk_under_the_access_log_loses_counted_lines_and_serving_goes_on() {
    require_or_skip!(is_root(), "mounting a small tmpfs needs root");
    let dir = TempDir::new("full-disk");
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let mounted = run(
        "mount",
        &[
            "-t",
            "tmpfs",
            "-o",
            "size=64k",
            "tmpfs",
            &logs.to_string_lossy(),
        ],
    );
    require_or_skip!(mounted, "mount -t tmpfs failed");
    let _mount = Mount(logs.clone());
    let log = logs.join("access.log");
    let s = Cached::start_text(
        dir.path(),
        &format!(
            "user nobody nogroup;\nworker_processes 1;\nerror_log {{dir}}/error.log info;\n\
             pid {{dir}}/nowait.pid;\nevents {{ worker_connections 64; }}\n\
             http {{ access_log off;\n log_format long '$request_uri $request_uri';\n\
             server {{ listen 127.0.0.1:{{port}}; access_log {log} long;\n\
             location = /status {{ nowait_status; access_log off; }}\n\
             location / {{ return 204; }} }} }}\n",
            log = log.display()
        ),
        &[],
    );
    // ~2 KiB a line: 64 KiB hold about 30 of the 200.
    let long = format!("/{}", "x".repeat(1000));
    for i in 0..200 {
        assert_eq!(get(s.port, &long).status, 204, "request {i}");
    }
    let series = |name: &str| format!("{name}{{log=\"{}\"}}", log.display());
    let written = series("nowait_log_lines_written_total");
    let failed = series("nowait_log_write_errors_total");
    // The writer counts failed write() calls (each may carry several
    // lines), and the lines it wrote.
    assert!(
        wait::until(SETTLE, || s.metric(&failed) > 0),
        "no write failed on a full disk:\n{}",
        String::from_utf8_lossy(&get(s.port, "/status").body)
    );
    assert!(s.metric(&written) < 200);
    assert!(std::fs::metadata(&log).unwrap().len() <= 64 * 1024);
    // And said in the error log as nginx says it, once a minute at most.
    let alert = format!(
        "write() to \"{}\" failed (28: No space left on device)",
        log.display()
    );
    let error_log = dir.path().join("error.log");
    assert!(
        wait::until(SETTLE, || wait::read_text(&error_log).contains(&alert)),
        "no alert; error log:\n{}",
        wait::read_text(&error_log)
    );
    let alerts = || wait::read_text(&error_log).matches(&alert).count();
    assert_eq!(alerts(), 1, "{}", wait::read_text(&error_log));
    assert!(wait::read_text(&error_log).contains("[alert]"));
    // Serving goes on, and so does logging once there is room again.
    std::fs::write(&log, b"").unwrap();
    let before = s.metric(&written);
    assert_eq!(get(s.port, "/after").status, 204);
    assert!(wait::until(SETTLE, || s.metric(&written) > before));
    assert!(wait::until(SETTLE, || wait::read_text(&log).contains("/after")));
    assert_eq!(alerts(), 1, "one alert a minute, as nginx");
}

/// Device-mapper names are global: one per test process.
fn dm_name() -> String {
    format!("nowait-eio-{}", std::process::id())
}

/// Removes the device-mapper device and the loop device on drop.
struct Devices {
    loop_dev: String,
}

impl Drop for Devices {
    fn drop(&mut self) {
        let _ = run("dmsetup", &["remove", "--force", &dm_name()]);
        let _ = run("losetup", &["-d", &self.loop_dev]);
    }
}

/// Drops `path`'s pages from the page cache (they are clean), so that the
/// next read goes to the device.
fn evict(path: &Path) {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    // SAFETY: an open descriptor and integer arguments.
    let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(r, 0, "posix_fadvise");
}

/// Whether the kernel has device-mapper (`dmsetup version` reaches its
/// driver).
fn device_mapper() -> bool {
    Command::new("dmsetup")
        .arg("version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether a FUSE file system can be served here: the device, and fusepy.
fn fuse() -> bool {
    Path::new("/dev/fuse").exists() && run("python3", &["-c", "import fuse"])
}

#[test]
fn a_read_error_mid_response_is_logged_as_nginx_and_closes_only_that_connection() {
    require_or_skip!(
        is_root(),
        "mounting a file system whose reads fail needs root"
    );
    require_or_skip!(
        fuse(),
        "no /dev/fuse, or no fusepy for python3 (scripts/install-test-deps.sh installs it)"
    );
    from_a_failing_file_system();
    if device_mapper() {
        from_a_failing_disk();
    } else {
        common::say(&format!(
            "{}: this kernel has no device-mapper: the read error came from the FUSE \
             file system only, not from a failing block device",
            common::test_name!()
        ));
    }
}

/// The read error from device-mapper's `error` target, swapped in under a
/// mounted ext2 file system on a loop device.
fn from_a_failing_disk() {
    let dir = TempDir::new("eio");
    let image = dir.path().join("disk.img");
    const SECTORS: u64 = 64 * 1024 * 2; // 64 MiB
    std::fs::File::create(&image)
        .unwrap()
        .set_len(SECTORS * 512)
        .unwrap();
    let out = Command::new("losetup")
        .args(["-f", "--show", &image.to_string_lossy()])
        .output()
        .unwrap();
    let loop_dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(out.status.success(), "losetup: {out:?}");
    let _devices = Devices {
        loop_dev: loop_dev.clone(),
    };
    let linear = format!("0 {SECTORS} linear {loop_dev} 0");
    assert!(run("dmsetup", &["create", &dm_name(), "--table", &linear]));
    let dev = format!("/dev/mapper/{}", dm_name());
    assert!(run("mkfs.ext2", &["-q", &dev]));
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    assert!(run("mount", &[&dev, &root.to_string_lossy()]));
    let _mount = Mount(root.clone());
    let big = root.join("big.bin");
    std::fs::write(&big, vec![0x42u8; 32 << 20]).unwrap();
    common::tmp::set_mode(&big, 0o644);
    common::tmp::set_mode(&root, 0o755);
    assert!(run("sync", &[]));
    read_error_mid_response(dir.path(), &root, &big, || {
        let error = format!("0 {SECTORS} error");
        assert!(run("dmsetup", &["suspend", "--noflush", &dm_name()]));
        assert!(run("dmsetup", &["load", &dm_name(), "--table", &error]));
        assert!(run("dmsetup", &["resume", &dm_name()]));
        evict(&big);
    });
}

/// Serves `big` (32 MiB of one byte, under `root`) with the server's prefix
/// in `prefix`, reads its first MiB, calls `fail` (from then on reads of
/// the file fail with EIO and its pages are out of the cache), and checks
/// that the response stops short, nginx's `pread()` message is in the
/// error log, and the worker serves the next request.
fn read_error_mid_response(prefix: &Path, root: &Path, big: &Path, fail: impl FnOnce()) {
    let other = TempDir::new("eio-other");
    std::fs::write(other.path().join("ok.txt"), "ok\n").unwrap();
    common::tmp::set_mode(&other.path().join("ok.txt"), 0o644);
    let s = Cached::start(
        prefix,
        &format!(
            "sendfile off; output_buffers 1 64k;\n\
             server {{ listen 127.0.0.1:{{port}}; root {};\n\
             location = /ok.txt {{ root {}; }} }}",
            root.display(),
            other.path().display()
        ),
        &[],
    );
    let mut c = Conn::open(s.port);
    c.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
    c.stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0;
    while total < 1 << 20 {
        let n = c.stream.read(&mut buf).unwrap();
        assert!(n > 0, "closed after {total} bytes");
        total += n;
    }
    // The disk fails from now on; the file's pages leave the cache.
    fail();
    loop {
        match c.stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n,
            Err(e) => panic!("the connection neither ends nor closes: {e}"),
        }
    }
    assert!(total < 32 << 20, "the whole file arrived");
    let log = prefix.join("error.log");
    let want = format!(
        "pread() \"{}\" failed (5: Input/output error)",
        big.display()
    );
    assert!(
        wait::until(SETTLE, || wait::read_text(&log).contains(&want)),
        "no {want:?} in:\n{}",
        wait::read_text(&log)
    );
    assert_eq!(get(s.port, "/ok.txt").body, b"ok\n");
}

/// A FUSE file system served by `tests/faults/eio_fs.py`: unmounted and
/// its process ended on drop.
struct FuseFs {
    child: std::process::Child,
    mount: PathBuf,
}

impl Drop for FuseFs {
    fn drop(&mut self) {
        let _ = run("umount", &["-l", &self.mount.to_string_lossy()]);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The read error from a FUSE file system whose reads fail once a flag
/// file exists: the kernel hands the server's read the EIO a failing disk
/// gives.
fn from_a_failing_file_system() {
    let dir = TempDir::new("eio-fuse");
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let flag = dir.path().join("fail");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/faults/eio_fs.py");
    let child = Command::new("python3")
        .arg(&script)
        .arg(&root)
        .arg(&flag)
        .spawn()
        .expect("python3 starts");
    let _fs = FuseFs {
        child,
        mount: root.clone(),
    };
    let big = root.join("big.bin");
    assert!(
        wait::until(SETTLE, || big.metadata().is_ok_and(|m| m.len() == 32 << 20)),
        "the FUSE file system did not come up"
    );
    read_error_mid_response(dir.path(), &root, &big, || {
        std::fs::write(&flag, "").unwrap();
        evict(&big);
    });
}
