//! `src/server/` keeps its floors apart (docs/architecture.md, "The
//! server's floors"), so that HTTP/2 can sit beside HTTP/1 and a module
//! stays one file or folder:
//!
//! - the engine (`engine/`) never names a module (`modules/`);
//! - the core (`core/`) names the modules only in its one seam,
//!   `core/hooks.rs`;
//! - nothing outside the engine names the HTTP/1 connection
//!   (`engine/h1/`): a request is carried by h1 today, by h2 later;
//! - a module never reaches into another module's folder (`modules::ssi`
//!   is its face, `modules::ssi::parse` its insides);
//! - a path right under `crate::server::` names a floor (the flat paths
//!   of before the floors are gone);
//! - the upstream engine (`upstream/`) never names a plug-in (`proxy/`):
//!   a protocol comes in through its `Protocol` trait (its unit tests
//!   drive the HTTP plug-in, and may);
//! - neither the engine nor the modules name the proxy: the core's phases
//!   choose the content handler.
//!
//! A file names a module when its code (comments left out) spells its path
//! from `crate::server::`, or climbs to it with `super::`.

mod sources;

use std::fs;
use std::path::Path;

use sources::{code_of, rust_files};

/// The floors of `src/server/` a path can start with; any other name right
/// under `crate::server::` is a flat path of before the floors.
const FLOORS: &[&str] = &["core", "engine", "modules", "proxy", "upstream"];

/// The one file of the core that may name the modules.
const SEAM: &str = "core/hooks.rs";

/// A source file: its path under `src/server/` (or `../x/y.rs` for a file
/// elsewhere in `src/`) and its text.
struct File {
    path: String,
    text: String,
}

/// The module path of a file under `src/server/`: `engine/h1/conn.rs` →
/// `["server", "engine", "h1", "conn"]`.
fn module_of(path: &str) -> Vec<String> {
    let mut parts: Vec<String> = std::iter::once("server".to_string())
        .chain(path.split('/').map(str::to_string))
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

/// The identifiers of a path starting at `rest` (`a::b::{c, d::e}` gives
/// `[a, b, c]` and `[a, b, d, e]`: one level of braces).
fn paths_at(rest: &str) -> Vec<Vec<String>> {
    let mut head = Vec::new();
    let mut s = rest;
    loop {
        let end = s
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        if end == 0 {
            break;
        }
        head.push(s[..end].to_string());
        s = &s[end..];
        match s.strip_prefix("::") {
            Some(next) => s = next,
            None => return vec![head],
        }
    }
    let Some(group) = s.strip_prefix('{') else {
        return vec![head];
    };
    let inner = &group[..group.find('}').unwrap_or(group.len())];
    let mut out: Vec<Vec<String>> = inner
        .split(',')
        .filter_map(|item| {
            let item = item.trim();
            let tail = paths_at(item).pop()?;
            (!tail.is_empty()).then(|| head.iter().cloned().chain(tail).collect())
        })
        .collect();
    if out.is_empty() {
        out.push(head);
    }
    out
}

/// Every path under `server` that `code` names, as module paths from the
/// crate root: `crate::server::…` as written, `super::…` climbed from
/// `here` (the file's module path).
fn named(code: &str, here: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::server::") {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == ':') {
            continue;
        }
        for p in paths_at(&code[i + "crate::".len()..]) {
            out.push(p);
        }
    }
    let mut from = 0;
    while let Some(i) = code[from..].find("super::") {
        let at = from + i;
        let before = code[..at].chars().next_back();
        let mut rest = &code[at..];
        let mut up = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            up += 1;
            rest = r;
        }
        from = code.len() - rest.len();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') || up > here.len() {
            continue;
        }
        let base = &here[..here.len() - up];
        for p in paths_at(rest) {
            out.push(base.iter().cloned().chain(p).collect());
        }
    }
    out.retain(|p| p.first().is_some_and(|s| s == "server") && p.len() > 1);
    out
}

/// The module folders under `modules/`: their names and the names of
/// what they hold (a folder module's insides).
fn folder_modules(files: &[File]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for f in files {
        let parts: Vec<&str> = f.path.split('/').collect();
        if parts.len() >= 3 && parts[0] == "modules" {
            let inside = parts[2].trim_end_matches(".rs").to_string();
            if inside == "mod" {
                continue;
            }
            match out.iter_mut().find(|(n, _)| n == parts[1]) {
                Some((_, list)) => list.push(inside),
                None => out.push((parts[1].to_string(), vec![inside])),
            }
        }
    }
    out
}

/// What breaks the floors, one line each: the place, the path, the rule.
fn violations(files: &[File]) -> Vec<String> {
    let folders = folder_modules(files);
    let mut out = Vec::new();
    for f in files {
        let outside = f.path.starts_with("../");
        let floor = f.path.split('/').next().unwrap_or("");
        if f.path == "mod.rs" {
            continue;
        }
        let tests_file = f.path.ends_with("/tests.rs");
        let here = if outside {
            Vec::new()
        } else {
            module_of(&f.path)
        };
        let own_module = (floor == "modules").then(|| here.get(2).cloned()).flatten();
        for (n, line) in f.text.lines().enumerate() {
            for p in named(code_of(line), &here) {
                let place = match f.path.strip_prefix("../") {
                    Some(rest) => format!("src/{rest}:{}", n + 1),
                    None => format!("src/server/{}:{}", f.path, n + 1),
                };
                let shown = p.join("::");
                let top = p[1].as_str();
                if !FLOORS.contains(&top) {
                    out.push(format!(
                        "{place}: {shown}: an old flat path; name its floor"
                    ));
                    continue;
                }
                if outside {
                    continue;
                }
                if top == "modules" && floor == "engine" {
                    out.push(format!(
                        "{place}: {shown}: the engine names a module; go through {SEAM}"
                    ));
                }
                if top == "modules" && floor == "core" && f.path != SEAM {
                    out.push(format!(
                        "{place}: {shown}: the core names a module outside its seam {SEAM}"
                    ));
                }
                if top == "proxy" && floor == "upstream" && !tests_file {
                    out.push(format!(
                        "{place}: {shown}: the upstream engine names a plug-in; \
                         a protocol comes in through upstream::protocol::Protocol"
                    ));
                }
                if top == "proxy" && (floor == "engine" || floor == "modules") {
                    out.push(format!(
                        "{place}: {shown}: the {floor} names the proxy; \
                         the core's phases choose the content handler"
                    ));
                }
                let h1 = top == "engine" && p.get(2).is_some_and(|s| s == "h1");
                if h1 && floor != "engine" {
                    out.push(format!(
                        "{place}: {shown}: the HTTP/1 connection named by the {floor}; \
                         what a request needs of its connection is engine::conn_info"
                    ));
                }
                if top == "modules" && floor == "modules" {
                    let (Some(other), Some(inside)) = (p.get(2), p.get(3)) else {
                        continue;
                    };
                    if Some(other) == own_module.as_ref() {
                        continue;
                    }
                    let insides = folders.iter().find(|(n, _)| n == other);
                    if insides.is_some_and(|(_, list)| list.contains(inside)) {
                        out.push(format!(
                            "{place}: {shown}: the insides of module {other}; \
                             name what its mod.rs offers"
                        ));
                    }
                }
            }
        }
    }
    out
}

/// The files of `src/`, named from `src/server/`.
fn sources() -> Vec<File> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let server = src.join("server");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = fs::read_to_string(&p).expect("a source file is readable");
            let path = match p.strip_prefix(&server) {
                Ok(rel) => rel.display().to_string(),
                Err(_) => format!("../{}", p.strip_prefix(&src).unwrap_or(&p).display()),
            };
            File { path, text }
        })
        .collect()
}

#[test]
fn the_server_keeps_its_floors() {
    let files = sources();
    let count = |floor: &str| files.iter().filter(|f| f.path.starts_with(floor)).count();
    for floor in ["engine/h1/", "core/", "modules/"] {
        assert!(count(floor) > 2, "src/server/{floor} holds the files");
    }
    assert!(
        files.iter().any(|f| f.path == SEAM),
        "the seam {SEAM} exists"
    );
    let found = violations(&files);
    assert!(
        found.is_empty(),
        "src/server/ crosses its floors (docs/architecture.md, \"The server's floors\"):\n{}",
        found.join("\n")
    );
}

/// The files of a made-up server, each rule broken once, plus what is
/// allowed.
fn made_up() -> Vec<File> {
    let file = |path: &str, text: &str| File {
        path: path.to_string(),
        text: text.to_string(),
    };
    vec![
        file("mod.rs", "pub(crate) use self::core::request;"),
        file(
            "engine/h1/conn.rs",
            "use crate::server::core::hooks::access_log;\n\
             use crate::server::modules::access_log::Written;",
        ),
        file(
            "engine/tls/accept.rs",
            "use super::super::super::modules::ssi;",
        ),
        file(
            "core/hooks.rs",
            "pub use crate::server::modules::access::zones::Limits;",
        ),
        file(
            "core/request.rs",
            "// crate::server::modules::access in a comment\n\
             conn: &crate::server::engine::h1::conn::ConnInfo,\n\
             use crate::server::engine::conn_info::ConnInfo;",
        ),
        file(
            "core/vars.rs",
            "crate::server::modules::{ssi::DEFAULT_TIMEFMT, access};",
        ),
        file(
            "modules/ssi/mod.rs",
            "pub mod parse;\nuse super::sub_filter::join;",
        ),
        file(
            "modules/ssi/parse.rs",
            "use super::super::filter::gzip::gzip_ok;",
        ),
        file(
            "modules/filter/mod.rs",
            "pub mod gzip;\npub use gzip::gzip_ok;",
        ),
        file(
            "modules/filter/gzip.rs",
            "use crate::server::modules::filter::content_length;",
        ),
        file(
            "modules/sub_filter.rs",
            "use crate::server::modules::ssi::parse::Node;",
        ),
        file(
            "proxy/mod.rs",
            "use super::request::Req; crate::server::modules::ssi::parse::x",
        ),
        file(
            "proxy/http.rs",
            "use crate::server::engine::h1::conn::Conn; crate::server::upstream::Upstream",
        ),
        file(
            "upstream/respond.rs",
            "use crate::server::proxy::http::Http;",
        ),
        file(
            "upstream/protocol/tests.rs",
            "use crate::server::proxy::http::Http;",
        ),
        file("engine/worker.rs", "use crate::server::proxy::handle;"),
        file("../process/mod.rs", "use crate::server::site::Site;"),
    ]
}

#[test]
fn each_crossing_is_found_and_named_with_its_place() {
    let found = violations(&made_up());
    let expect = [
        "src/server/engine/h1/conn.rs:2: server::modules::access_log::Written: the engine names a module",
        "src/server/engine/tls/accept.rs:1: server::modules::ssi: the engine names a module",
        "src/server/core/request.rs:2: server::engine::h1::conn::ConnInfo: the HTTP/1 connection named by the core",
        "src/server/core/vars.rs:1: server::modules::ssi::DEFAULT_TIMEFMT: the core names a module outside its seam",
        "src/server/core/vars.rs:1: server::modules::access: the core names a module outside its seam",
        "src/server/modules/ssi/parse.rs:1: server::modules::filter::gzip::gzip_ok: the insides of module filter",
        "src/server/modules/sub_filter.rs:1: server::modules::ssi::parse::Node: the insides of module ssi",
        "src/process/mod.rs:1: server::site::Site: an old flat path",
        "src/server/proxy/mod.rs:1: server::request::Req: an old flat path",
        "src/server/proxy/http.rs:1: server::engine::h1::conn::Conn: the HTTP/1 connection named by the proxy",
        "src/server/upstream/respond.rs:1: server::proxy::http::Http: the upstream engine names a plug-in",
        "src/server/engine/worker.rs:1: server::proxy::handle: the engine names the proxy",
    ];
    for e in expect {
        assert!(
            found.iter().any(|f| f.starts_with(e)),
            "not found: {e}\nfound:\n{}",
            found.join("\n")
        );
    }
    assert_eq!(found.len(), expect.len(), "found:\n{}", found.join("\n"));
}

#[test]
fn paths_are_read_as_written_and_as_climbed() {
    let here = module_of("modules/ssi/parse.rs");
    assert_eq!(here, ["server", "modules", "ssi", "parse"]);
    assert_eq!(
        module_of("modules/ssi/mod.rs"),
        ["server", "modules", "ssi"]
    );
    assert_eq!(
        named("use super::super::filter::{gzip::gzip_ok, X};", &here),
        vec![
            vec!["server", "modules", "filter", "gzip", "gzip_ok"],
            vec!["server", "modules", "filter", "X"],
        ]
    );
    assert!(named("use rustls::server::ServerConfig; $crate::server::x", &here).is_empty());
    assert_eq!(code_of("a; // crate::server::modules"), "a; ");
}
