//! The top-level modules of `src/` (each folder: `cli`, `config`, `io`, …)
//! depend on each other without a cycle, so that a walk of one request goes
//! down the floors once (docs/architecture.md, "Module dependencies").
//!
//! A module depends on another when one of its files names it as
//! `crate::other` outside a comment (a `use` or a path in code, tests
//! included). The check lists every strongly connected component of that
//! graph with, for each edge inside it, the first place that makes it.

mod sources;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use sources::{code_of, rust_files};

/// `from → (to → first place)`: the dependency graph between modules.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// The top-level modules: the folders directly under `src/`.
fn modules(src: &Path) -> BTreeSet<String> {
    fs::read_dir(src)
        .expect("src/ is readable")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The modules `code` names as `crate::NAME`.
fn named(code: &str) -> impl Iterator<Item = &str> {
    code.match_indices("crate::").filter_map(move |(i, _)| {
        let before = code[..i].chars().next_back();
        // `$crate::` and `nowait_crate::`-like identifiers are not the crate root.
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            return None;
        }
        let rest = &code[i + "crate::".len()..];
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        Some(&rest[..end])
    })
}

/// The graph of `src/`.
fn graph(src: &Path) -> Graph {
    let mods = modules(src);
    let mut g = Graph::new();
    for m in &mods {
        let edges = g.entry(m.clone()).or_default();
        let mut files = Vec::new();
        rust_files(&src.join(m), &mut files);
        files.sort();
        for f in files {
            let text = fs::read_to_string(&f).expect("a source file is readable");
            for (n, line) in text.lines().enumerate() {
                for to in named(code_of(line)) {
                    if to != m && mods.contains(to) {
                        let place = f.strip_prefix(src).unwrap_or(&f).display();
                        edges
                            .entry(to.to_string())
                            .or_insert_with(|| format!("src/{place}:{}", n + 1));
                    }
                }
            }
        }
    }
    g
}

/// The strongly connected components of more than one module (Tarjan's).
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct Walk<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            for w in self.g.get(v).into_iter().flat_map(|e| e.keys()) {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if self.stack.contains(&w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut scc = Vec::new();
                while let Some(w) = self.stack.pop() {
                    scc.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if scc.len() > 1 {
                    scc.sort();
                    self.out.push(scc);
                }
            }
        }
    }
    let mut walk = Walk {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.out
}

/// A cycle as the failure names it: its modules, then each edge inside it
/// with the first place that makes it.
fn describe(g: &Graph, scc: &[String]) -> String {
    let mut s = format!("cycle: {}", scc.join(" ↔ "));
    for a in scc {
        for (b, place) in &g[a] {
            if scc.contains(b) {
                s.push_str(&format!("\n  {a} → {b} ({place})"));
            }
        }
    }
    s
}

#[test]
fn top_level_modules_have_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    assert!(g.len() > 10, "the modules of src/: {:?}", g.keys());
    let found: Vec<String> = cycles(&g).iter().map(|c| describe(&g, c)).collect();
    assert!(
        found.is_empty(),
        "top-level modules of src/ depend on each other in a circle; move the item \
         to the module that owns it:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_cycle_is_found_and_named_with_its_places() {
    let mut g = Graph::new();
    let mut edge = |a: &str, b: &str| {
        g.entry(a.into())
            .or_default()
            .insert(b.into(), format!("src/{a}/mod.rs:1"));
        g.entry(b.into()).or_default();
    };
    edge("cli", "process");
    edge("process", "server");
    edge("server", "process");
    edge("server", "sys");
    let found = cycles(&g);
    assert_eq!(
        found,
        vec![vec!["process".to_string(), "server".to_string()]]
    );
    let text = describe(&g, &found[0]);
    assert!(text.contains("process ↔ server"), "{text}");
    assert!(
        text.contains("server → process (src/server/mod.rs:1)"),
        "{text}"
    );
    assert!(!text.contains("sys"), "{text}");
}

#[test]
fn comments_and_other_crates_are_not_dependencies() {
    assert_eq!(
        code_of("use crate::io; // see crate::config"),
        "use crate::io; "
    );
    assert_eq!(
        code_of(r#"let u = "http://crate::x"; crate::log::f()"#),
        r#"let u = "http://crate::x"; crate::log::f()"#
    );
    let names: Vec<_> =
        named("use crate::io::Pool; $crate::config::x(); crate::log::f()").collect();
    assert_eq!(names, vec!["io", "log"]);
}
