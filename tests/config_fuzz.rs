//! The configuration loader never panics: a deterministic fuzz of the whole
//! pipeline (lexer → syntax tree with includes → directive table → merge and
//! checks) through `nowait::config::load`, in process.
//!
//! No fuzzing crate: a xorshift generator with fixed seeds produces
//! (a) random bytes and random token soup, (b) structured random
//! configurations built from the directive table, (c) random mutations of the
//! example configurations, and (d) every truncation of each example. Each
//! input must load to `Ok` or to `Err` with at least one `[emerg]` (or, for
//! a file that cannot be read, nginx's `[crit]`); a panic is a failure. A few thousand cases, so the test takes seconds.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use nowait::config::lexer::{End, Lexer};
use nowait::config::source::{Loc, Origin};
use nowait::config::table::DIRECTIVES;
use nowait::config::{Level, LoadOptions, load};

/// xorshift64*: small, fast, and the same sequence on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The bytes that matter to the lexer.
const SPECIAL: &[u8] = b"{};\"'\\$#";

/// Arguments likely to reach the setters' edge cases.
const ARGS: &[&str] = &[
    "on",
    "off",
    "auto",
    "0",
    "1",
    "16",
    "-1",
    "99999999999999999999",
    "512k",
    "256m",
    "1024G",
    "5x",
    "75s",
    "500ms",
    "1h 30m",
    "threads",
    "threads=",
    "threads=pool_$disk",
    "threads=one",
    "threads=0",
    "threads=16",
    "max_queue=0",
    "max_queue=x",
    "one",
    "default",
    "pool_1",
    "/",
    "/x",
    "=",
    "= /x",
    "~",
    "~*",
    "^~",
    "@named",
    "~ ^/(a|b",
    "storage",
    "/storage/",
    "$uri",
    "${uri}",
    "${",
    "$",
    "$foo",
    "$disk",
    "$request_uri",
    "cache_$disk",
    "http://backend",
    "https://x",
    "127.0.0.1:8081",
    "8000",
    "127.0.0.1:8080",
    "[::1]:8080",
    "*:80",
    "[::1",
    "127.0.0.1:99999",
    "default_server",
    "reuseport",
    "backlog=",
    "backlog=10",
    "rcvbuf=1k",
    "levels=1:2",
    "levels=3",
    "keys_zone=cache_1:256m",
    "keys_zone=:1",
    "keys_zone=x:1",
    "max_size=1024G",
    "use_temp_path=off",
    "use_temp_path=x",
    "inactive=10m",
    "http://127.0.0.1:1/x/",
    "http://unix:/tmp/s:/u",
    "http://[::1",
    "https://127.0.0.1",
    "unix:/tmp/s",
    "weight=0",
    "max_fails=1",
    "backup",
    "two",
    "least_conn",
    "consistent",
    "~*^/(?<x>.*)$",
    "~(",
    "default",
    "http_502",
    "1.1",
    "33.3%",
    "*",
    "100.01%",
    "text/html",
    "html",
    "combined",
    "escape=json",
    "stderr",
    "notice",
    "logs/x.log",
    "404",
    "=200",
    "=",
    "always",
    "302",
    "",
    "\u{e9}",
    "a;b",
    "a{b",
    "\\",
    "\"",
];

/// `listen` addresses of every shape but host names.
const LISTEN_ADDRS: &[&str] = &[
    "8000",
    "0",
    "65536",
    "127.0.0.1:8080",
    "127.0.0.1:0",
    "[::1]:8080",
    "[::1]",
    "[::1]x",
    "[zz]:80",
    "*:80",
    "*:x",
    "unix:/tmp/x",
    "127.0.0.1",
];

/// Names that are not directives, and context-bearing ones.
const EXTRA_NAMES: &[&str] = &["bogus", "include", "*", "33.3%", "text/html", "server"];

/// The example configurations and the mime.types they include.
fn examples() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    [
        "benchmark.conf",
        "aio-threads.conf",
        "named-pools.conf",
        "cache-three-disks.conf",
    ]
    .iter()
    .map(|n| (n.to_string(), std::fs::read(dir.join(n)).unwrap()))
    .collect()
}

/// A structured random configuration: directives from the table with
/// random arguments, nested blocks, in random contexts.
fn structured(rng: &mut Rng, depth: usize, out: &mut String) {
    let n = rng.below(6);
    for _ in 0..n {
        let name = if rng.below(8) == 0 {
            *rng.pick(EXTRA_NAMES)
        } else {
            rng.pick(DIRECTIVES).name
        };
        out.push_str(name);
        if name == "listen" {
            // Only addresses that need no resolver (see `needs_resolver`).
            out.push(' ');
            let addr = LISTEN_ADDRS[rng.below(LISTEN_ADDRS.len())];
            out.push_str(addr);
        }
        for _ in 0..rng.below(4) {
            out.push(' ');
            let a = rng.pick(ARGS);
            if a.is_empty() || a.contains([' ', ';', '{']) || rng.below(6) == 0 {
                out.push('"');
                out.push_str(&a.replace('\\', "\\\\").replace('"', "\\\""));
                out.push('"');
            } else {
                out.push_str(a);
            }
        }
        if depth < 4 && rng.below(3) == 0 {
            out.push_str(" {\n");
            structured(rng, depth + 1, out);
            out.push_str("}\n");
        } else {
            out.push_str(";\n");
        }
    }
}

/// One random mutation step: flip a byte, insert a special byte, or delete.
fn mutate(rng: &mut Rng, text: &mut Vec<u8>) {
    let steps = 1 + rng.below(4);
    for _ in 0..steps {
        let at = rng.below(text.len() + 1);
        match rng.below(4) {
            0 if at < text.len() => text[at] = rng.next() as u8,
            1 | 2 => text.insert(at, *rng.pick(SPECIAL)),
            _ if at < text.len() => {
                let len = 1 + rng.below(8).min(text.len() - at - 1);
                text.drain(at..at + len);
            }
            _ => text.push(*rng.pick(SPECIAL)),
        }
    }
}

/// Whether `text` has a `listen` whose address would be looked up as a host
/// name. Such inputs are skipped: the test must not depend on the network
/// (a resolver that is unreachable can take seconds per lookup).
fn needs_resolver(text: &[u8]) -> bool {
    let text = String::from_utf8_lossy(text);
    let origin = Origin::File(std::sync::Arc::from(Path::new("/fuzz.conf")));
    let mut lx = Lexer::new(&text, Loc { origin, line: 1 });
    let plain = |s: &str| {
        s.bytes().all(|b| b.is_ascii_digit())
            || s.parse::<std::net::IpAddr>().is_ok()
            || s.starts_with('[')
            || s.starts_with("unix:")
            || s.rsplit_once(':').is_some_and(|(h, _)| {
                h == "*" || h.parse::<std::net::IpAddr>().is_ok() || h.starts_with('[')
            })
    };
    loop {
        match lx.next_statement() {
            Ok(st) if st.end == End::Eof => return false,
            Ok(st) => {
                if st.words.first().is_some_and(|w| w.value == "listen")
                    && st.words.get(1).is_some_and(|w| !plain(&w.value))
                {
                    return true;
                }
            }
            // The rest cannot be parsed, so no listen in it is applied.
            Err(_) => return false,
        }
    }
}

/// Loads `text` as the configuration file (and `globals` as `-g`), catching
/// any panic. Returns a description of what went wrong, or `None`.
fn check(dir: &Path, text: &[u8], globals: Option<String>) -> Option<String> {
    let file = dir.join("nowait.conf");
    std::fs::write(&file, text).unwrap();
    let opts = LoadOptions {
        error_log: None,
        prefix: dir.to_path_buf(),
        conf_file: Some(file),
        globals,
        embedded_root: dir.to_path_buf(),
        embedded_listen: "127.0.0.1:8080".into(),
    };
    match catch_unwind(AssertUnwindSafe(|| load(&opts))) {
        Err(_) => Some("panicked".into()),
        Ok(Ok(_)) => None,
        // A file that cannot be read fails with nginx's `[crit]` (e.g.
        // `pread() "/" failed (21: Is a directory)`), not an `[emerg]`.
        Ok(Err(diags))
            if diags
                .iter()
                .any(|d| matches!(d.level, Level::Emerg | Level::Crit)) =>
        {
            None
        }
        Ok(Err(diags)) => Some(format!("failed without an [emerg] or [crit]: {diags:?}")),
    }
}

struct Fuzz {
    dir: PathBuf,
    cases: usize,
    skipped: usize,
    failures: Vec<String>,
}

impl Fuzz {
    fn new(name: &str) -> Fuzz {
        let dir = std::env::temp_dir().join(format!("nowait-fuzz-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // So that `include mime.types;` in the examples resolves.
        let mime = Path::new(env!("CARGO_MANIFEST_DIR")).join("conf/mime.types");
        std::fs::copy(mime, dir.join("mime.types")).unwrap();
        Fuzz {
            dir,
            cases: 0,
            skipped: 0,
            failures: Vec::new(),
        }
    }

    fn run(&mut self, what: &str, text: &[u8], globals: Option<String>) {
        if needs_resolver(text)
            || globals
                .as_deref()
                .is_some_and(|g| needs_resolver(g.as_bytes()))
        {
            self.skipped += 1;
            return;
        }
        self.cases += 1;
        if let Some(problem) = check(&self.dir, text, globals.clone()) {
            self.failures.push(format!(
                "{what}: {problem}\n  input: {:?}\n  -g: {globals:?}",
                String::from_utf8_lossy(text)
            ));
        }
    }

    fn finish(self, min_cases: usize) {
        let _ = std::fs::remove_dir_all(&self.dir);
        assert!(
            self.failures.is_empty(),
            "{} of {} inputs failed; the first:\n{}",
            self.failures.len(),
            self.cases,
            self.failures[0]
        );
        assert!(
            self.cases >= min_cases && self.skipped * 10 <= self.cases,
            "{} cases run, {} skipped",
            self.cases,
            self.skipped
        );
    }
}

#[test]
fn random_bytes_and_token_soup() {
    let mut f = Fuzz::new("bytes");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for i in 0..1500 {
        let len = rng.below(160);
        let text: Vec<u8> = if i % 2 == 0 {
            (0..len).map(|_| rng.next() as u8).collect()
        } else {
            // Bytes the lexer cares about, with letters and directive names.
            let mut t = Vec::new();
            while t.len() < len {
                match rng.below(5) {
                    0 => t.extend_from_slice(rng.pick(DIRECTIVES).name.as_bytes()),
                    1 => t.push(*rng.pick(SPECIAL)),
                    2 => t.push(*rng.pick(b" \t\r\n")),
                    3 => t.extend_from_slice(rng.pick(ARGS).as_bytes()),
                    _ => t.push(b'a' + rng.below(26) as u8),
                }
            }
            t
        };
        // Every fifth case also goes through -g, which has its own rules.
        let globals = (i % 5 == 0).then(|| String::from_utf8_lossy(&text[..len / 2]).into_owned());
        f.run("random", &text, globals);
    }
    f.finish(1200);
}

#[test]
fn structured_random_configurations() {
    let mut f = Fuzz::new("structured");
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    for _ in 0..1500 {
        let mut text = String::from("events {}\n");
        if rng.below(2) == 0 {
            text.push_str("http {\n");
            if rng.below(2) == 0 {
                text.push_str("server {\nlisten 127.0.0.1:8080;\n");
                structured(&mut rng, 2, &mut text);
                text.push_str("}\n");
            }
            structured(&mut rng, 1, &mut text);
            text.push_str("}\n");
        }
        structured(&mut rng, 0, &mut text);
        f.run("structured", text.as_bytes(), None);
    }
    f.finish(1200);
}

#[test]
fn mutated_examples() {
    let mut f = Fuzz::new("mutations");
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    for (name, text) in examples() {
        // The example itself loads.
        assert!(check(&f.dir, &text, None).is_none(), "{name}");
        for _ in 0..400 {
            let mut t = text.clone();
            mutate(&mut rng, &mut t);
            f.run(&name, &t, None);
        }
    }
    f.finish(1400);
}

#[test]
fn every_truncation_of_the_examples() {
    let mut f = Fuzz::new("truncations");
    for (name, text) in examples() {
        for len in 0..text.len() {
            f.run(&format!("{name}[..{len}]"), &text[..len], None);
        }
    }
    f.finish(2000);
}

#[test]
fn pathological_nesting_and_sizes() {
    let mut f = Fuzz::new("pathological");
    let deep = "a {\n".repeat(100_000);
    f.run("deep blocks", deep.as_bytes(), None);
    let deep_closed = format!(
        "events {{}}\n{}{}",
        "http {\n".repeat(1000),
        "}\n".repeat(1000)
    );
    f.run("deep http", deep_closed.as_bytes(), None);
    let long_word = format!("events {{}}\n{};\n", "x".repeat(1 << 20));
    f.run("long word", long_word.as_bytes(), None);
    let many = "events {}\n".to_string() + &"worker_processes 1;\n".repeat(20_000);
    f.run("many duplicates", many.as_bytes(), None);
    let values: String = (0..60).map(|i| format!("1% v{i};\n")).collect();
    let combos = format!(
        "events {{}}\nhttp {{\nsplit_clients $uri $a {{\n{values}}}\nserver {{ aio threads=$a$a$a$a$a$a; }}\n}}\n"
    );
    f.run("pool combinations", combos.as_bytes(), None);
    let self_include = b"events {}\ninclude nowait.conf;\n";
    f.run("self include", self_include, None);
    // A directory included by name: nginx fails with a [crit] only.
    f.run("include a directory", b"events {}\ninclude \"/\";\n", None);
    f.finish(6);
}
