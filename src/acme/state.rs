//! An issuer's `state_path`: the account key (`account.key`), its URL
//! (`account.url`), and each order's certificate and key
//! (`<order id>.crt`, `<order id>.key`), as nginx-acme lays them out. A
//! file is written whole or not at all: to a temporary name in the same
//! directory, synced, then renamed over the old one. Only an issuer's
//! thread calls this.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A state directory.
#[derive(Clone, Debug)]
pub struct StateDir {
    dir: PathBuf,
}

impl StateDir {
    /// The directory `dir` (made on first write when missing).
    pub fn new(dir: PathBuf) -> StateDir {
        StateDir { dir }
    }

    /// The path of `name` in it.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The bytes of `name`, when it is there.
    pub fn read(&self, name: &str) -> Option<Vec<u8>> {
        std::fs::read(self.path(name)).ok()
    }

    /// Writes `bytes` as `name` atomically, readable by its owner only
    /// (keys are secret); the error names the call, the path and errno,
    /// as nginx does.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<(), String> {
        let fail = |call: &str, p: &Path, e: std::io::Error| {
            format!(
                "{call}() \"{}\" failed ({})",
                p.display(),
                crate::sys::error::errno_text(&e)
            )
        };
        if !self.dir.is_dir() {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .recursive(true)
                .create(&self.dir)
                .map_err(|e| fail("mkdir", &self.dir, e))?;
        }
        let target = self.path(name);
        let temp = self.path(&format!(".{name}.{}.tmp", std::process::id()));
        let result = (|| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&temp)
                .map_err(|e| fail("open", &temp, e))?;
            f.write_all(bytes).map_err(|e| fail("write", &temp, e))?;
            f.sync_all().map_err(|e| fail("fsync", &temp, e))?;
            std::fs::rename(&temp, &target).map_err(|e| fail("rename", &target, e))
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_replaced_whole() {
        let dir = std::env::temp_dir().join(format!("nowait-acme-state-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = StateDir::new(dir.join("issuer"));
        s.write("a.crt", b"one").unwrap();
        s.write("a.crt", b"two").unwrap();
        assert_eq!(s.read("a.crt").as_deref(), Some(&b"two"[..]));
        let names: Vec<_> = std::fs::read_dir(dir.join("issuer"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["a.crt"], "a temporary file was left");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(s.path("a.crt"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
