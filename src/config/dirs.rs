//! The directories a configuration names for files nowait writes (temp
//! paths, cache paths), checked as nginx's `ngx_add_path` checks them: one
//! directory serves one cache, or any number of temp paths with the same
//! levels.
//!
//! This only keeps names; directories are made at start-up by
//! `process::paths`.

use std::path::{Path, PathBuf};

use super::source::Loc;

/// What a directory is for (nginx's path `data`: a cache, or none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirUse {
    /// Temporary files (`client_body_temp_path`, `proxy_temp_path`).
    Temp,
    /// A `proxy_cache_path`.
    Cache,
}

/// One directory as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dir {
    /// The absolute path.
    pub path: PathBuf,
    /// Its subdirectory levels.
    pub levels: Vec<u8>,
    /// What it is for.
    pub used_for: DirUse,
    /// Where it was written.
    pub loc: Loc,
}

/// Every directory written so far, in order.
#[derive(Debug, Default)]
pub struct Dirs {
    /// The directories.
    pub list: Vec<Dir>,
}

impl Dirs {
    /// Records a directory written at `loc`, refusing a second use of a
    /// cache's directory or the same temp directory with other levels, in
    /// nginx's words (the loader adds ` in FILE:LINE`).
    pub fn add(
        &mut self,
        path: &Path,
        levels: &[u8],
        used_for: DirUse,
        loc: &Loc,
    ) -> Result<(), String> {
        if let Some(d) = self.list.iter().find(|d| d.path == path) {
            if d.used_for == DirUse::Cache || used_for == DirUse::Cache {
                return Err(format!(
                    "the same path name \"{}\" used in {} and",
                    path.display(),
                    d.loc
                ));
            }
            if d.levels != levels {
                return Err(format!(
                    "the same path name \"{}\" in {} has the different levels than",
                    path.display(),
                    d.loc
                ));
            }
            return Ok(());
        }
        self.list.push(Dir {
            path: path.to_path_buf(),
            levels: levels.to_vec(),
            used_for,
            loc: loc.clone(),
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::source::Origin;

    #[test]
    fn one_cache_per_directory_and_one_set_of_levels() {
        let at = |line| Loc {
            origin: Origin::CommandLine,
            line,
        };
        let mut d = Dirs::default();
        let p = Path::new("/t");
        assert_eq!(d.add(p, &[1, 2], DirUse::Temp, &at(1)), Ok(()));
        assert_eq!(d.add(p, &[1, 2], DirUse::Temp, &at(2)), Ok(()));
        assert_eq!(
            d.add(p, &[1], DirUse::Temp, &at(3)),
            Err(format!(
                "the same path name \"/t\" in {} has the different levels than",
                at(1)
            ))
        );
        assert_eq!(
            d.add(p, &[1, 2], DirUse::Cache, &at(4)),
            Err(format!("the same path name \"/t\" used in {} and", at(1)))
        );
    }
}
