//! Configuration: nginx's language read into a validated, typed configuration.
//!
//! Two phases, as style.md asks: [`syntax`] turns text into a tree of
//! directives, each with its file and line (includes expanded); [`build`]
//! applies the tree to typed structures through the one directive table in
//! [`table`], and [`finish`] merges levels (defaults in [`inherit`]) and
//! checks cross-references. Every error found is reported, in nginx's words.
//!
//! This module reads files and nothing else: it opens no sockets and no logs.

pub mod build;
pub mod embedded;
pub mod error;
pub mod finish;
pub mod inherit;
pub mod lexer;
pub mod model;
pub mod set_core;
pub mod set_http;
pub mod set_proxy;
pub mod set_server;
pub mod source;
pub mod syntax;
pub mod table;
pub mod template;
pub mod value;

use std::path::PathBuf;

pub use error::{ConfError, Level};
pub use model::Config;

use build::{Builder, MainSet, Scope};
use source::Origin;
use syntax::Reader;

/// What to load.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// The prefix (`-p`), absolute.
    pub prefix: PathBuf,
    /// The main file (`-c`), absolute; `None` loads the embedded configuration.
    pub conf_file: Option<PathBuf>,
    /// Directives given with `-g`, parsed in the main context.
    pub globals: Option<String>,
    /// For the embedded configuration: the directory served.
    pub embedded_root: PathBuf,
    /// For the embedded configuration: the address listened on.
    pub embedded_listen: String,
}

/// A successful load: the configuration and any warnings.
#[derive(Debug)]
pub struct Loaded {
    /// The configuration.
    pub config: Config,
    /// `[warn]` messages.
    pub warnings: Vec<ConfError>,
}

/// Reads, validates and merges a configuration. On failure, returns every
/// message found (errors and warnings, in order).
pub fn load(opts: &LoadOptions) -> Result<Loaded, Vec<ConfError>> {
    let conf_dir = match &opts.conf_file {
        Some(f) => f
            .parent()
            .map(PathBuf::from)
            .unwrap_or_else(|| opts.prefix.clone()),
        None => opts.prefix.clone(),
    };
    let mut reader = Reader::new(conf_dir);
    let mut tree = Vec::new();
    if let Some(g) = &opts.globals {
        match reader.read_text(g, Origin::CommandLine, 0) {
            Ok(t) => tree.extend(t),
            Err(e) => return Err(vec![e]),
        }
    }
    let parsed = match &opts.conf_file {
        Some(f) => reader.read_file(f, None),
        None => {
            let text = embedded::text(&opts.embedded_root.to_string_lossy(), &opts.embedded_listen);
            reader.read_text(&text, Origin::Embedded, 0)
        }
    };
    match parsed {
        Ok(t) => tree.extend(t),
        Err(e) => return Err(vec![e]),
    }

    let mut b = Builder::new(opts.prefix.clone());
    let mut main_set = MainSet::default();
    b.walk(&mut Scope::Main(&mut main_set), &tree);
    let events = main_set.events.take().unwrap_or_default();
    let mut http = main_set.http.take();
    let mut main = build::finish_main(main_set, &opts.prefix);
    if opts.conf_file.is_none() {
        // The embedded configuration serves as whoever ran it and leaves no pid file.
        main.user = None;
        main.pid = None;
    }
    finish::finish(&mut b, &mut main, http.as_mut());

    if b.diags.has_errors() {
        return Err(b.diags.items);
    }
    Ok(Loaded {
        config: Config {
            main,
            events,
            http,
            not_implemented: b.not_implemented,
            prefix: opts.prefix.clone(),
            conf_file: opts.conf_file.clone(),
            files: reader.files,
        },
        warnings: b.diags.items,
    })
}

/// `errno: text` as nginx prints a system error, e.g. `2: No such file or directory`.
pub fn errno_text(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => {
            let s = e.to_string();
            let text = s.split(" (os error").next().unwrap_or(&s);
            format!("{n}: {text}")
        }
        None => e.to_string(),
    }
}

/// The `-T` dump: every file read, each under nginx's header line.
pub fn dump(config: &Config) -> String {
    let mut out = String::new();
    for f in &config.files {
        out.push_str(&format!("# configuration file {}:\n", f.path.display()));
        out.push_str(&f.text);
        if !f.text.ends_with('\n') {
            out.push('\n');
        }
        out.push('\n');
    }
    out
}
