//! Configuration text → syntax tree, with `include` expanded in place.
//!
//! The tree knows nothing of what directives mean; it keeps every directive's
//! words, its block (if any) and its file:line. `include` is handled here,
//! as in nginx, because it may appear anywhere and inside any block:
//! relative patterns resolve against the directory of the main configuration
//! file, and glob patterns (`conf.d/*.conf`) expand in sorted order.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::ConfError;
use super::lexer::{End, Lexer, Word};
use super::source::{Loc, Origin, SourceFile};

/// How deep `include` may nest before it is taken for a loop.
pub const MAX_INCLUDE_DEPTH: usize = 32;

/// How deep blocks may nest, counted across included files. Reading and
/// applying a block recurses, so without a bound a file of `a {` repeated
/// overflows the stack and aborts; real configurations nest a handful deep
/// (http → server → location → location).
pub const MAX_BLOCK_DEPTH: usize = 64;

/// One directive: its name, its arguments, and its block if it has one.
#[derive(Clone, Debug)]
pub struct Directive {
    /// The directive's name (the first word).
    pub name: String,
    /// The remaining words.
    pub args: Vec<Word>,
    /// The directives inside `{ … }`, when the statement opened a block.
    pub block: Option<Vec<Directive>>,
    /// Where the statement ended, which is the line nginx reports.
    pub loc: Loc,
    /// Where the block's closing `}` was read (`None` for a directive
    /// without a block): nginx reports what it checks after reading a
    /// block (an empty `upstream`, the merge of an `http` block) there.
    pub end: Option<Loc>,
}

impl Directive {
    /// The argument values as strings.
    pub fn arg(&self, i: usize) -> &str {
        self.args.get(i).map(|w| w.value.as_str()).unwrap_or("")
    }
}

/// Reads configuration files into trees, remembering every file read.
pub struct Reader {
    /// Directory that relative `include` patterns resolve against.
    conf_dir: PathBuf,
    /// Every file read, in order, for `-T`.
    pub files: Vec<SourceFile>,
    /// How many blocks enclose the statement being read.
    block_depth: usize,
    /// The files to read instead of the file system's, if any.
    preloaded: Option<std::sync::Arc<std::collections::HashMap<PathBuf, Vec<u8>>>>,
}

impl Reader {
    /// A reader whose relative includes resolve against `conf_dir`.
    pub fn new(conf_dir: PathBuf) -> Reader {
        Reader::with_files(conf_dir, None)
    }

    /// A reader that takes every file from `preloaded` (path → bytes)
    /// instead of the file system: a reload's configuration as the
    /// privileged helper read it. A path not in the map is "not found".
    pub fn with_files(
        conf_dir: PathBuf,
        preloaded: Option<std::sync::Arc<std::collections::HashMap<PathBuf, Vec<u8>>>>,
    ) -> Reader {
        Reader {
            conf_dir,
            files: Vec::new(),
            block_depth: 0,
            preloaded,
        }
    }

    /// A file's bytes, from the preloaded files or the file system.
    /// The bytes of `path`, or the call that failed and why.
    fn read_bytes(&self, path: &Path) -> Result<Vec<u8>, (&'static str, std::io::Error)> {
        match &self.preloaded {
            Some(files) => files
                .get(path)
                .cloned()
                .ok_or_else(|| ("open()", std::io::Error::from_raw_os_error(libc::ENOENT))),
            None => read_as_nginx(path),
        }
    }

    /// Reads a file and every file it includes. `at` is the location of the
    /// `include` (or `None` for the main file), used in the error message.
    pub fn read_file(
        &mut self,
        path: &Path,
        at: Option<&Loc>,
    ) -> Result<Vec<Directive>, ConfError> {
        self.read_file_depth(path, at, 0)
    }

    fn read_file_depth(
        &mut self,
        path: &Path,
        at: Option<&Loc>,
        depth: usize,
    ) -> Result<Vec<Directive>, ConfError> {
        let text = self.read_bytes(path).map_err(|(call, e)| {
            let message = format!(
                "{call} \"{}\" failed ({})",
                path.display(),
                crate::sys::error::errno_text(&e)
            );
            match call {
                // nginx's `ngx_read_file`: `[crit]`, no location (a
                // directory an `include` names or matches: EISDIR).
                "pread()" => ConfError::crit(message),
                _ => ConfError::emerg(message, at.cloned()),
            }
        })?;
        let text = String::from_utf8_lossy(&text).into_owned();
        self.files.push(SourceFile {
            path: path.to_path_buf(),
            text: text.clone(),
        });
        let origin = Origin::File(Arc::from(path));
        self.read_text(&text, origin, depth)
    }

    /// Parses configuration text from any origin (a file, `-g`, or the
    /// embedded default).
    pub fn read_text(
        &mut self,
        text: &str,
        origin: Origin,
        depth: usize,
    ) -> Result<Vec<Directive>, ConfError> {
        let mut lexer = Lexer::new(text, Loc { origin, line: 1 });
        let (body, _) = self.read_block(&mut lexer, depth, false)?;
        Ok(body)
    }

    fn read_block(
        &mut self,
        lexer: &mut Lexer<'_>,
        depth: usize,
        inside: bool,
    ) -> Result<(Vec<Directive>, Loc), ConfError> {
        let mut out = Vec::new();
        loop {
            let st = lexer.next_statement()?;
            let mut loc = lexer.loc();
            loc.line = st.end_line;
            match st.end {
                End::Eof if inside => {
                    return Err(ConfError::emerg(
                        "unexpected end of file, expecting \"}\"",
                        Some(loc),
                    ));
                }
                End::Eof => return Ok((out, loc)),
                End::BlockEnd if inside => return Ok((out, loc)),
                End::BlockEnd => return Err(ConfError::emerg("unexpected \"}\"", Some(loc))),
                End::Semicolon | End::BlockStart => {}
            }
            if st.end == End::BlockStart && loc.origin == Origin::CommandLine {
                return Err(ConfError::emerg(
                    "block directives are not supported in -g option",
                    Some(loc),
                ));
            }
            let mut words = st.words.into_iter();
            let Some(name) = words.next() else {
                continue;
            };
            let args: Vec<Word> = words.collect();
            if name.value == "include" && st.end == End::Semicolon {
                if args.len() != 1 {
                    return Err(ConfError::emerg(
                        "invalid number of arguments in \"include\" directive",
                        Some(loc),
                    ));
                }
                out.extend(self.include(&args[0].value, &loc, depth)?);
                continue;
            }
            let (block, end) = if st.end == End::BlockStart {
                // nginx finds this as the `{` is read, before the block it
                // would open (`ngx_conf_handler`): `rewrite ^/\d{3}$ …`
                // unquoted is this error, not an unbalanced file.
                let mut specs = super::table::lookup(&name.value).peekable();
                if specs.peek().is_some() && !specs.any(|s| s.block) {
                    return Err(ConfError::emerg(
                        format!("directive \"{}\" is not terminated by \";\"", name.value),
                        Some(loc),
                    ));
                }
                if self.block_depth >= MAX_BLOCK_DEPTH {
                    return Err(ConfError::emerg(
                        format!("too deep nesting of blocks (more than {MAX_BLOCK_DEPTH} levels)"),
                        Some(loc),
                    ));
                }
                self.block_depth += 1;
                let body = self.read_block(lexer, depth, true);
                self.block_depth -= 1;
                let (body, end) = body?;
                (Some(body), Some(end))
            } else {
                (None, None)
            };
            out.push(Directive {
                name: name.value,
                args,
                block,
                loc,
                end,
            });
        }
    }

    fn include(
        &mut self,
        pattern: &str,
        loc: &Loc,
        depth: usize,
    ) -> Result<Vec<Directive>, ConfError> {
        if depth >= MAX_INCLUDE_DEPTH {
            return Err(ConfError::emerg(
                format!(
                    "too deep \"include\" of \"{pattern}\" (more than {MAX_INCLUDE_DEPTH} levels)"
                ),
                Some(loc.clone()),
            ));
        }
        let full = if Path::new(pattern).is_absolute() {
            PathBuf::from(pattern)
        } else {
            self.conf_dir.join(pattern)
        };
        let mut out = Vec::new();
        if !has_glob(pattern) {
            return self.read_file_depth(&full, Some(loc), depth + 1);
        }
        let full_str = posix_pattern(&full.to_string_lossy());
        let mut list: Vec<PathBuf> = match &self.preloaded {
            // The files another process read and expanded: match the
            // pattern against their names, not against this process's view.
            Some(files) => {
                let pat = glob::Pattern::new(&full_str).map_err(|e| {
                    ConfError::emerg(
                        format!("glob() \"{full_str}\" failed ({e})"),
                        Some(loc.clone()),
                    )
                })?;
                files
                    .keys()
                    .filter(|p| pat.matches_path_with(p, GLOB_OPTIONS))
                    .cloned()
                    .collect()
            }
            None => glob::glob_with(&full_str, GLOB_OPTIONS)
                .map_err(|e| {
                    ConfError::emerg(
                        format!("glob() \"{full_str}\" failed ({e})"),
                        Some(loc.clone()),
                    )
                })?
                // A directory matched is read as nginx reads it, and
                // fails (glob(3) without `GLOB_ONLYDIR` lists it too).
                .filter_map(Result::ok)
                .collect(),
        };
        list.sort();
        for p in list {
            out.extend(self.read_file_depth(&p, Some(loc), depth + 1)?);
        }
        Ok(out)
    }
}

/// Reads a configuration file as nginx does (`ngx_conf_parse`): the size
/// `fstat()` gives, no more. A device or a pipe (size 0) reads as empty
/// rather than blocking on a terminal or filling memory from `/dev/zero`,
/// and a file growing under the read cannot make the read endless.
/// A directory opens, and its read fails with EISDIR, as in nginx.
fn read_as_nginx(path: &Path) -> Result<Vec<u8>, (&'static str, std::io::Error)> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| ("open()", e))?;
    let size = file.metadata().map_err(|e| ("fstat()", e))?.len();
    let mut text = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(size)
        .read_to_end(&mut text)
        .map_err(|e| ("pread()", e))?;
    Ok(text)
}

/// glob(3) as nginx calls it (no flags): `*` and `?` never match a `/`
/// nor a leading `.`; case matters.
const GLOB_OPTIONS: glob::MatchOptions = glob::MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: true,
};

/// `pattern` with every run of `*` made one: in glob(3) `**` is `*` (one
/// name, not a walk down the tree as the `glob` crate reads it), so
/// `include /etc/nginx/**/x.conf` matches one level as in nginx and
/// `include /*/**/x;` never walks the whole file system.
fn posix_pattern(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    for c in pattern.chars() {
        if c == '*' && out.ends_with('*') {
            continue;
        }
        out.push(c);
    }
    out
}

fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_with_blocks_and_lines() {
        let mut r = Reader::new(PathBuf::from("/"));
        let t = r
            .read_text(
                "events {}\nhttp {\n server {\n  listen 80;\n }\n}\n",
                Origin::Embedded,
                0,
            )
            .unwrap();
        assert_eq!(t.len(), 2);
        let http = &t[1];
        let server = &http.block.as_ref().unwrap()[0];
        let listen = &server.block.as_ref().unwrap()[0];
        assert_eq!(listen.name, "listen");
        assert_eq!(listen.arg(0), "80");
        assert_eq!(listen.loc.line, 4);
    }

    #[test]
    fn unbalanced_braces() {
        let mut r = Reader::new(PathBuf::from("/"));
        let e = r.read_text("http {\n", Origin::Embedded, 0).unwrap_err();
        assert_eq!(e.message, "unexpected end of file, expecting \"}\"");
        let e = r.read_text("}\n", Origin::CommandLine, 0).unwrap_err();
        assert_eq!(e.message, "unexpected \"}\"");
    }

    #[test]
    fn include_glob_sorted_and_missing() {
        let dir = std::env::temp_dir().join(format!("nowait-syntax-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("conf.d")).unwrap();
        std::fs::write(dir.join("conf.d/b.conf"), "b 2;\n").unwrap();
        std::fs::write(dir.join("conf.d/a.conf"), "a 1;\n").unwrap();
        let mut r = Reader::new(dir.clone());
        let t = r
            .read_text("include conf.d/*.conf;\n", Origin::CommandLine, 0)
            .unwrap();
        let names: Vec<_> = t.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(
            t[0].loc.to_string(),
            format!("{}:1", dir.join("conf.d/a.conf").display())
        );
        let e = r
            .read_text("include nope.conf;\n", Origin::CommandLine, 0)
            .unwrap_err();
        assert!(e.to_string().starts_with("open() \""), "{e}");
        assert!(
            e.to_string()
                .ends_with("failed (2: No such file or directory) in command line"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Regression (found by the config fuzz target, which spent 15 minutes
    /// on `include //*/**/ecf;`): `**` is glob(3)'s `*`, one level, never a
    /// walk of the tree; `*` skips names with a leading dot.
    #[test]
    fn include_double_star_is_one_level() {
        assert_eq!(posix_pattern("/a/**/b***c"), "/a/*/b*c");
        let dir = std::env::temp_dir().join(format!("nowait-glob-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("one/two")).unwrap();
        std::fs::create_dir_all(dir.join(".hidden")).unwrap();
        std::fs::write(dir.join("one/x.conf"), "one 1;\n").unwrap();
        std::fs::write(dir.join("one/two/x.conf"), "two 2;\n").unwrap();
        std::fs::write(dir.join(".hidden/x.conf"), "hidden 3;\n").unwrap();
        let mut r = Reader::new(dir.clone());
        let t = r
            .read_text("include **/x.conf;\n", Origin::CommandLine, 0)
            .unwrap();
        let names: Vec<_> = t.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["one"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Regression: a directory an `include` glob matched was skipped; nginx
    /// reads it as a file and fails with `[crit] pread() "…" failed (21: Is
    /// a directory)`, as it does for a directory named outright.
    #[test]
    fn include_of_a_directory_fails_as_in_nginx() {
        let dir = std::env::temp_dir().join(format!("nowait-incdir-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("conf.d/sub")).unwrap();
        std::fs::write(dir.join("conf.d/a.conf"), "a 1;\n").unwrap();
        let mut r = Reader::new(dir.clone());
        for text in ["include conf.d/*;\n", "include conf.d/sub;\n"] {
            let e = r.read_text(text, Origin::CommandLine, 0).unwrap_err();
            assert_eq!(e.level, super::super::error::Level::Crit, "{text}");
            assert_eq!(
                e.to_string(),
                format!(
                    "pread() \"{}\" failed (21: Is a directory)",
                    dir.join("conf.d/sub").display()
                )
            );
        }
        // Only files matched: as before.
        let t = r
            .read_text("include conf.d/*.conf;\n", Origin::CommandLine, 0)
            .unwrap();
        assert_eq!(t.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Regression (found by the config fuzz target, which blocked reading
    /// `/dev/tty15`): a file is read to the size `fstat()` gives, as nginx
    /// reads it, so a device is empty instead of endless.
    #[test]
    fn include_of_a_device_reads_as_empty() {
        let mut r = Reader::new(PathBuf::from("/"));
        let t = r
            .read_text(
                "include /dev/zero;\nworker_processes 1;\n",
                Origin::CommandLine,
                0,
            )
            .unwrap();
        let names: Vec<_> = t.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["worker_processes"]);
    }

    /// Regression: `-g "http { }"` was accepted; nginx refuses blocks in -g.
    #[test]
    fn no_blocks_on_the_command_line() {
        let mut r = Reader::new(PathBuf::from("/"));
        let e = r
            .read_text("events { }", Origin::CommandLine, 0)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "block directives are not supported in -g option in command line"
        );
    }

    /// Regression: 100 000 nested `a {` overflowed the stack and aborted.
    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let mut r = Reader::new(PathBuf::from("/"));
        let text = "a {\n".repeat(100_000);
        let e = r.read_text(&text, Origin::Embedded, 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "too deep nesting of blocks (more than 64 levels) in embedded configuration:65"
        );
        let ok = format!("{}{}", "a {\n".repeat(64), "}\n".repeat(64));
        assert_eq!(r.read_text(&ok, Origin::Embedded, 0).unwrap().len(), 1);
    }
}
