//! The document root the black-box tests serve. Every file has a fixed
//! mtime, so `ETag` and `Last-Modified` are the same for every server and
//! every run.
//!
//! ```text
//! index.html          small HTML            empty           0 bytes
//! big.bin             1 MiB, deterministic  noext           no extension
//! style.css app.js image.png photo.JPG test.php .hidden    by type
//! with space.txt  100%.txt  a%20b.txt  ünïcödé.txt          odd names
//! dir/index.html dir/file.txt dir/sub/file.txt              dir with index
//! noindex/file.txt                                          dir without index
//! static/a.txt  ep/ (empty)  404.html  x                    for locations
//! secret.txt (0600)  private/ (0700, index.html inside)     403 for `nobody`
//! fifo (named pipe)  link.txt -> index.html  linkdir -> dir
//! ```
//!
//! Workers of both servers run as `nobody` when started as root: the 0600
//! and 0700 entries then answer 403.

use std::fs::{File, FileTimes};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::tmp::{TempDir, set_mode};

/// The mtime of every entry: 2023-11-14T22:13:20Z.
pub const MTIME_SECS: u64 = 1_700_000_000;
/// Size of `big.bin`.
pub const BIG_LEN: usize = 1024 * 1024;
/// Content of `index.html`.
pub const INDEX_HTML: &str = "<!DOCTYPE html>\n<title>index</title>\n<p>hello from the root</p>\n";

/// A built document root, removed on drop.
pub struct Fixture {
    /// The directory holding the tree.
    dir: TempDir,
}

impl Fixture {
    /// Builds the tree described in the module header.
    pub fn build() -> Fixture {
        let dir = TempDir::new("root");
        let root = dir.path();
        for d in ["dir", "dir/sub", "noindex", "static", "ep", "private"] {
            std::fs::create_dir(root.join(d))
                .unwrap_or_else(|e| panic!("mkdir {}: {e}", root.join(d).display()));
            set_mode(&root.join(d), 0o755);
        }
        let files: &[(&str, &[u8])] = &[
            ("index.html", INDEX_HTML.as_bytes()),
            ("empty", b""),
            ("noext", b"no extension\n"),
            ("style.css", b"body { color: black; }\n"),
            ("app.js", b"console.log(\"hi\");\n"),
            ("image.png", b"\x89PNG\r\n\x1a\nnot really a png\n"),
            ("photo.JPG", b"not really a jpeg\n"),
            ("test.php", b"<?php echo 1; ?>\n"),
            (".hidden", b"dotfile\n"),
            ("with space.txt", b"with space\n"),
            ("100%.txt", b"one hundred percent\n"),
            ("a%20b.txt", b"literal percent-two-zero\n"),
            ("ünïcödé.txt", "ünïcödé\n".as_bytes()),
            ("dir/index.html", b"<p>dir index</p>\n"),
            ("dir/file.txt", b"dir file\n"),
            ("dir/sub/file.txt", b"sub file\n"),
            ("noindex/file.txt", b"noindex file\n"),
            ("static/a.txt", b"static a\n"),
            ("404.html", b"<p>custom not found</p>\n"),
            ("x", b"the x target\n"),
            ("secret.txt", b"root only\n"),
            ("private/index.html", b"<p>private</p>\n"),
            ("big.bin", &big_content()),
        ];
        for (name, content) in files {
            let path = root.join(name);
            std::fs::write(&path, content)
                .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
            set_mode(&path, 0o644);
        }
        set_mode(&root.join("secret.txt"), 0o600);
        run(Command::new("mkfifo").arg(root.join("fifo")));
        symlink("index.html", &root.join("link.txt"));
        symlink("dir", &root.join("linkdir"));
        // Directories last: creating entries changes a directory's mtime.
        for (name, _) in files {
            set_mtime(&root.join(name));
        }
        for d in ["dir/sub", "dir", "noindex", "static", "ep", "private", "."] {
            set_mtime(&root.join(d));
        }
        set_mode(&root.join("private"), 0o700);
        Fixture { dir }
    }

    /// The document root's absolute path.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }
}

/// `big.bin`'s bytes: a linear congruential sequence, so that any range
/// of it differs from any other range of the same length.
pub fn big_content() -> Vec<u8> {
    let mut x: u32 = 0x2545_f491;
    (0..BIG_LEN)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (x >> 24) as u8
        })
        .collect()
}

fn set_mtime(path: &Path) {
    let t = UNIX_EPOCH + Duration::from_secs(MTIME_SECS);
    let f = File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    f.set_times(FileTimes::new().set_modified(t).set_accessed(t))
        .unwrap_or_else(|e| panic!("futimens {}: {e}", path.display()));
    debug_assert!(t < SystemTime::now());
}

fn symlink(target: &str, link: &Path) {
    std::os::unix::fs::symlink(target, link)
        .unwrap_or_else(|e| panic!("symlink {}: {e}", link.display()));
}

fn run(cmd: &mut Command) {
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    assert!(status.success(), "{cmd:?} failed: {status}");
}
