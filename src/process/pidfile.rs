//! The pid file: written once the sockets listen, removed at exit, as nginx.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::sys::error::errno_text;

/// A written pid file, removed when dropped.
#[derive(Debug)]
pub struct PidFile {
    path: PathBuf,
}

impl PidFile {
    /// Writes `pid` and a newline to `path`, replacing any old file.
    pub fn write(path: &Path, pid: u32) -> Result<PidFile, String> {
        let err = |e: std::io::Error| {
            format!("open() \"{}\" failed ({})", path.display(), errno_text(&e))
        };
        let mut f = std::fs::File::create(path).map_err(err)?;
        f.write_all(format!("{pid}\n").as_bytes()).map_err(|e| {
            format!(
                "write() to \"{}\" failed ({})",
                path.display(),
                errno_text(&e)
            )
        })?;
        Ok(PidFile {
            path: path.to_path_buf(),
        })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        // Without root the serving process may not remove a file in a
        // root-owned folder: the privileged helper does, before this
        // process exits (a script that waits for the process then finds
        // the file gone, as with nginx).
        if crate::sys::privsep::remove_pid_file().is_none() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
