//! Reading the crate's own sources, for the tests that check its shape
//! (`module_graph.rs`, `server_layers.rs`): which files there are, and
//! which part of a line is code.

use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).expect("a source folder is readable") {
        let path = e.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// `line` without a `//` comment (one outside a string literal: an even
/// number of quotes before it).
pub fn code_of(line: &str) -> &str {
    let mut from = 0;
    while let Some(i) = line[from..].find("//") {
        let at = from + i;
        if line[..at].matches('"').count() % 2 == 0 {
            return &line[..at];
        }
        from = at + 2;
    }
    line
}
