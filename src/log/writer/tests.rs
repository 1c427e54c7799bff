//! Tests of [`super::LogWriter`]: contents, drops under a stalled
//! destination, reopen after rotation, flush and close.

use super::*;
use crate::sys::file::{pipe, set_nonblocking};
use std::io::Read;
use std::os::fd::AsRawFd;

fn temp(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("nowait-writer-{}-{tag}.log", std::process::id()))
}

#[test]
fn lines_reach_the_file_in_order() {
    let path = temp("order");
    let _ = std::fs::remove_file(&path);
    let w = LogWriter::open(Destination::File(path.clone()), DEFAULT_BUFFER_BYTES).unwrap();
    for i in 0..1000 {
        assert!(w.write_line(format!("line {i}").as_bytes()));
    }
    w.flush();
    let text = std::fs::read_to_string(&path).unwrap();
    let expected: String = (0..1000).map(|i| format!("line {i}\n")).collect();
    assert_eq!(text, expected);
    assert_eq!(
        w.stats(),
        WriterStats {
            written: 1000,
            dropped: 0,
            write_errors: 0
        }
    );
    let mode = std::fs::metadata(&path)
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()))
        .unwrap();
    assert_eq!(mode & 0o777, LOG_FILE_MODE & !current_umask());
    std::fs::remove_file(&path).unwrap();
}

/// The umask the file mode is filtered through (read from /proc, not set:
/// setting it would race with other tests creating files).
fn current_umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line["Umask:".len()..].trim(), 8).unwrap()
}

/// The destination is a full pipe, so the writer thread blocks in its first
/// `write()`: at most that one batch leaves the buffer, and the rest must be
/// dropped (not waited for) once `capacity` bytes are buffered.
#[test]
fn a_stalled_destination_drops_lines_instead_of_blocking() {
    let (r, w) = pipe().unwrap();
    set_nonblocking(&w, true).unwrap();
    let mut w = File::from(w);
    let junk = [b'.'; 4096];
    let mut prefilled = 0;
    loop {
        match w.write(&junk) {
            Ok(n) => prefilled += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("prefill: {e}"),
        }
    }
    // A new, blocking open of the same pipe, as a log path.
    let path = PathBuf::from(format!("/proc/self/fd/{}", w.as_raw_fd()));
    let capacity = 100;
    let lw = LogWriter::open(Destination::File(path), capacity).unwrap();
    let line = b"0123456789"; // 11 bytes with the newline
    let accepted = (0..100).filter(|_| lw.write_line(line)).count();
    // At most one batch taken by the thread plus one full buffer.
    assert!(accepted <= 2 * (capacity / 11), "accepted {accepted}");
    assert_eq!(lw.stats().dropped, (100 - accepted) as u64);
    assert!(lw.stats().dropped >= 100 - 2 * (capacity as u64 / 11));

    // Drain the pipe: the writer unblocks and writes every accepted line.
    let mut reader = File::from(r);
    let mut got = vec![0u8; prefilled + accepted * 11];
    reader.read_exact(&mut got).unwrap();
    lw.flush();
    assert_eq!(
        &got[prefilled..],
        line.iter()
            .chain(b"\n")
            .copied()
            .cycle()
            .take(accepted * 11)
            .collect::<Vec<_>>()
    );
    assert_eq!(lw.stats().written, accepted as u64);
}

#[test]
fn reopen_follows_a_rotated_file() {
    let path = temp("rotate");
    let rotated = temp("rotate.1");
    let _ = std::fs::remove_file(&path);
    let w = LogWriter::open(Destination::File(path.clone()), DEFAULT_BUFFER_BYTES).unwrap();
    w.write_line(b"before");
    w.flush();
    std::fs::rename(&path, &rotated).unwrap();
    w.write_line(b"still old");
    w.reopen().unwrap();
    w.write_line(b"after");
    w.flush();
    assert_eq!(
        std::fs::read_to_string(&rotated).unwrap(),
        "before\nstill old\n"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "after\n");
    std::fs::remove_file(&rotated).unwrap();

    // A reopen that fails keeps the old file and says why.
    let dir = std::env::temp_dir().join(format!("nowait-writer-{}-dir", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let in_dir = dir.join("x.log");
    let w2 = LogWriter::open(Destination::File(in_dir.clone()), DEFAULT_BUFFER_BYTES).unwrap();
    std::fs::remove_file(&in_dir).unwrap();
    std::fs::remove_dir(&dir).unwrap();
    let err = w2.reopen().unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "open() \"{}\" failed (2: No such file or directory)",
            in_dir.display()
        )
    );
    assert!(w2.write_line(b"to the unlinked file"));
    w2.flush();
    assert_eq!(w2.stats().written, 1);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn stderr_destination_writes_and_reopens_as_a_no_op() {
    let w = LogWriter::open(Destination::parse("stderr"), DEFAULT_BUFFER_BYTES).unwrap();
    assert_eq!(w.destination(), &Destination::Stderr);
    assert!(w.write_line(b"nowait: test line on stderr (expected)"));
    assert!(w.flush_timeout(Duration::from_secs(10)));
    w.reopen().unwrap();
    assert_eq!(w.stats().written, 1);
}

#[test]
fn close_drains_then_refuses() {
    let path = temp("close");
    let _ = std::fs::remove_file(&path);
    let w = LogWriter::open(Destination::File(path.clone()), DEFAULT_BUFFER_BYTES).unwrap();
    for _ in 0..10 {
        w.write_line(b"x");
    }
    w.close();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "x\n".repeat(10));
    assert!(!w.write_line(b"late"));
    assert_eq!(w.stats().dropped, 1);
    w.flush(); // returns at once: nothing pending, thread gone
    w.reopen().unwrap();
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn writer_thread_is_named_log_hash_n() {
    let path = temp("name");
    let w = LogWriter::open(Destination::File(path.clone()), DEFAULT_BUFFER_BYTES).unwrap();
    let name = w
        .thread
        .lock()
        .unwrap()
        .as_ref()
        .unwrap()
        .thread()
        .name()
        .map(str::to_owned)
        .unwrap();
    assert!(name.starts_with("log#"), "{name}");
    w.close();
    std::fs::remove_file(&path).unwrap();
}
