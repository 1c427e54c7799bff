//! Unique temporary directories under `std::env::temp_dir()`, removed on drop.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Tells directories made by one test process apart; the pid and a clock
/// reading tell processes apart.
static NEXT: AtomicU32 = AtomicU32::new(0);

/// A directory that exists for as long as the value lives.
pub struct TempDir {
    /// Absolute path of the directory.
    path: PathBuf,
}

impl TempDir {
    /// Creates `<temp>/nowait-test-<label>-<pid>-<nanos>-<n>`, world-traversable
    /// so that server workers running as `nobody` can reach files in it.
    pub fn new(label: &str) -> TempDir {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("nowait-test-{label}-{}-{nanos}-{n}", std::process::id());
        let path = std::env::temp_dir().join(name);
        std::fs::create_dir(&path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
        set_mode(&path, 0o755);
        TempDir { path }
    }

    /// The directory's absolute path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Keep the directory when asked to, for a post-mortem of a failure.
        if std::env::var_os("NOWAIT_TEST_KEEP_TMP").is_none() {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Sets a path's permission bits, panicking with the path on failure.
pub fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {mode:o} {}: {e}", path.display()));
}
