//! Configuration: nginx's language read into a validated, typed configuration.
//!
//! Two phases, as style.md asks: [`syntax`] turns text into a tree of
//! directives, each with its file and line (includes expanded); [`build`]
//! applies the tree to typed structures through the one directive table in
//! [`table`], and [`finish`] merges levels (defaults in [`inherit`]) and
//! checks cross-references. Every error found is reported, in nginx's words.
//!
//! This module reads files and nothing else: it opens no sockets and no logs.

pub mod access_model;
pub mod acme_model;
pub mod build;
pub mod cache_model;
pub mod core_model;
pub mod dirs;
pub mod embedded;
pub mod error;
pub mod filter_model;
pub mod finish;
pub mod finish_cache;
pub mod finish_ocsp;
pub mod finish_proxy;
pub mod finish_proxy_ssl;
pub mod finish_ssl;
pub mod finish_stapling;
pub mod inherit;
pub mod lexer;
pub mod listen_addr;
pub mod map;
pub mod model;
pub mod modules;
pub mod names;
pub mod proxy_hash;
pub mod proxy_model;
pub mod proxy_url;
pub mod referer;
pub mod regex;
pub mod script;
pub mod set_access;
pub mod set_acme;
pub mod set_autoindex;
pub mod set_cache;
pub mod set_cache_path;
pub mod set_charset;
pub mod set_core;
pub mod set_core_http;
pub mod set_gzip;
pub mod set_headers;
pub mod set_http;
pub mod set_limit;
pub mod set_log;
pub mod set_map;
pub mod set_max_headers;
pub mod set_output;
pub mod set_proxy;
pub mod set_proxy_ssl;
pub mod set_realip;
pub mod set_rewrite;
pub mod set_sched;
pub mod set_server;
pub mod set_split_clients;
pub mod set_ssi;
pub mod set_ssl;
pub mod set_sub;
pub mod set_upstream;
pub mod slot;
pub mod source;
pub mod ssl_conf_command;
pub mod ssl_model;
pub mod syntax;
pub mod table;
pub mod template;
pub mod type_list;
pub mod url;
pub mod value;
pub mod vars;
pub mod zones;

use std::path::PathBuf;

pub use error::{ConfError, Level};
pub use model::Config;

use build::{Builder, MainSet, Scope};
use source::Origin;
use syntax::Reader;

/// The name the embedded configuration goes by in messages and in `-T`.
pub const EMBEDDED_NAME: &str = "(embedded)";

/// What to load.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// The prefix (`-p`), absolute.
    pub prefix: PathBuf,
    /// The main file (`-c`), absolute; `None` loads the embedded configuration.
    pub conf_file: Option<PathBuf>,
    /// Directives given with `-g`, parsed in the main context.
    pub globals: Option<String>,
    /// `-e`: the error log used when the configuration names none.
    pub error_log: Option<String>,
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
    /// One `[notice]` per use of a directive that has no effect in nowait
    /// ([`table::Status::NoEffect`]): `-t` prints them, a start does not
    /// (Debian's own `nginx.conf` sets `types_hash_max_size`).
    pub no_effect: Vec<ConfError>,
}

/// Reads, validates and merges a configuration. On failure, returns every
/// message found (errors and warnings, in order).
/// The messages of a failed load on one line, `; `-separated (what a
/// reload reports when it keeps the previous configuration).
pub fn errors_text(errors: &[ConfError]) -> String {
    errors
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

pub fn load(opts: &LoadOptions) -> Result<Loaded, Vec<ConfError>> {
    load_with(opts, None)
}

/// [`load`] from files another process read (path → text), as a reload
/// gets them from the privileged helper: no file is opened here.
pub fn load_from_files(
    opts: &LoadOptions,
    files: Vec<(PathBuf, Vec<u8>)>,
) -> Result<Loaded, Vec<ConfError>> {
    load_with(opts, Some(std::sync::Arc::new(files.into_iter().collect())))
}

fn load_with(
    opts: &LoadOptions,
    preloaded: Option<std::sync::Arc<std::collections::HashMap<PathBuf, Vec<u8>>>>,
) -> Result<Loaded, Vec<ConfError>> {
    let conf_dir = match &opts.conf_file {
        Some(f) => f
            .parent()
            .map(PathBuf::from)
            .unwrap_or_else(|| opts.prefix.clone()),
        None => opts.prefix.clone(),
    };
    let data = build::DataFiles::new(preloaded.clone());
    let mut reader = Reader::with_files(conf_dir.clone(), preloaded);
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
            // Kept like a file so that `-T` shows what runs.
            reader.files.push(source::SourceFile {
                path: PathBuf::from(EMBEDDED_NAME),
                text: text.clone(),
            });
            reader.read_text(&text, Origin::Embedded, 0)
        }
    };
    match parsed {
        Ok(t) => tree.extend(t),
        Err(e) => return Err(vec![e]),
    }

    let mut b = Builder::new(opts.prefix.clone());
    b.conf_prefix = conf_dir;
    b.data = data;
    let mut main_set = MainSet::default();
    b.walk(&mut Scope::Main(&mut main_set), &tree);
    if main_set.events.is_none() && !tree.iter().any(|d| d.name == "events") {
        // As nginx: the block is required even when it would set nothing.
        // (A written but broken `events` has its own error already.)
        b.diags.push(ConfError::emerg(
            "no \"events\" section in configuration",
            None,
        ));
    }
    let events = main_set.events.take().unwrap_or_default();
    let mut http = main_set.http.take();
    let mut main = build::finish_main(main_set, &opts.prefix, opts.error_log.as_deref());
    if opts.conf_file.is_none() {
        // The embedded configuration serves as whoever ran it and leaves no pid file.
        main.user = None;
        main.pid = None;
    }
    finish::finish(&mut b, &mut main, http.as_mut());
    if let Some(w) = descriptor_warning(&main, &events) {
        b.diags.push(ConfError::warn(w, None));
    }
    let workers = main.worker_processes.count();
    if let Some(a) = &main.worker_cpu_affinity {
        if a.masks_against(workers).is_some() {
            b.diags
                .push(ConfError::warn(set_sched::MASK_COUNT_WARNING, None));
        }
    }

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
            data_files: std::mem::take(&mut b.data.read),
            uses_realpath_root: b.uses_realpath_root,
            uses_request_body_file: b.uses_request_body_file,
        },
        warnings: b.diags.items,
        no_effect: b.no_effect,
    })
}

/// The messages that refuse to start a configuration using directives that
/// are parsed but not served yet ([`table::Status::NotYet`]), one per use in
/// the order written, e.g. `"proxy_pass" is not implemented yet in
/// /etc/nowait/nowait.conf:40`; the caller prints each as `[emerg]`. Empty
/// when the configuration can run. `-t` does not call this: testing such a
/// configuration succeeds.
pub fn refuse_not_implemented(config: &Config) -> Vec<String> {
    config
        .not_implemented
        .iter()
        .map(|(name, loc)| format!("\"{name}\" is not implemented yet in {loc}"))
        .collect()
}

/// The `-T` dump: every file read, each under nginx's header line, once
/// however often it was included (nginx's `ngx_conf_add_dump` keeps the
/// first reading of a name).
pub fn dump(config: &Config) -> String {
    let mut out = String::new();
    let mut seen = std::collections::HashSet::new();
    for f in &config.files {
        if !seen.insert(&f.path) {
            continue;
        }
        out.push_str(&format!("# configuration file {}:\n", f.path.display()));
        out.push_str(&f.text);
        if !f.text.ends_with('\n') {
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

/// Loads `text` as a configuration file in a fresh directory (which is
/// removed again): for unit tests of the loader's parts.
#[cfg(test)]
pub(crate) fn load_text(text: &str) -> Result<Loaded, Vec<ConfError>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "nowait-config-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("nowait.conf");
    std::fs::write(&file, text).unwrap();
    let r = load(&LoadOptions {
        error_log: None,
        prefix: dir.clone(),
        conf_file: Some(file),
        globals: None,
        embedded_root: dir.clone(),
        embedded_listen: embedded::DEFAULT_LISTEN.into(),
    });
    std::fs::remove_dir_all(&dir).unwrap();
    r
}

/// nginx's warning when `worker_connections` exceeds the descriptor limit a
/// worker will have (`ngx_event_module_init`): the soft `RLIMIT_NOFILE`, or
/// `worker_rlimit_nofile` when that is set and also too small. Given only
/// when an error log takes warnings.
fn descriptor_warning(main: &model::MainConf, events: &model::EventsConf) -> Option<String> {
    // A warning: unseen under the default `error_log … error`, as nginx's.
    if !main
        .error_logs
        .iter()
        .any(|l| l.level >= model::LogLevel::Warn)
    {
        return None;
    }
    let conns = events.worker_connections as u64;
    let soft = crate::sys::process::nofile_limit().ok()?;
    let limit = match main.worker_rlimit_nofile {
        Some(n) if conns > soft && conns > n => n,
        None if conns > soft => soft,
        _ => return None,
    };
    Some(format!(
        "{conns} worker_connections exceed open file resource limit: {limit}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_store_is_no_longer_refused() {
        // `proxy_store` was the last directive parsed but not implemented;
        // a row marked `NotYet` again is refused as the function says.
        let text = "events {}\nhttp {\n proxy_store_access user:rw;\n server {\n  location / {\n   proxy_store on;\n  }\n }\n}\n";
        let l = load_text(text).unwrap();
        assert!(refuse_not_implemented(&l.config).is_empty());
    }

    #[test]
    fn refuse_not_implemented_accepts_a_static_server() {
        let l = load_text("events {}\nhttp { server { location / { aio threads; } } }\n").unwrap();
        assert!(refuse_not_implemented(&l.config).is_empty());
    }

    /// Regression: `-T` printed nothing for the embedded configuration.
    #[test]
    fn embedded_configuration_is_dumped() {
        let dir = std::env::temp_dir();
        let l = load(&LoadOptions {
            error_log: None,
            prefix: dir.clone(),
            conf_file: None,
            globals: None,
            embedded_root: dir,
            embedded_listen: embedded::DEFAULT_LISTEN.into(),
        })
        .unwrap();
        let d = dump(&l.config);
        assert!(
            d.starts_with("# configuration file (embedded):\n# nowait's embedded"),
            "{d}"
        );
        assert!(d.contains("listen \"127.0.0.1:8080\";"), "{d}");
    }
}
