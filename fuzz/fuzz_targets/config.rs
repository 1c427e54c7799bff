//! The configuration lexer, syntax tree and directive table (setters,
//! merge, checks) on any text: messages, never a panic. `include` reads
//! from an empty set of files (a reload's preloaded files, none), never
//! from the file system: an input naming a terminal, `/dev/zero` or a
//! tree to walk must cost a parse, not the run (the first two blocked it
//! before the reader read files as nginx does; see `config::syntax`).
//! Host names resolve offline (`config::names::offline`: literals and
//! `localhost`): a mutated name costs a parse, not a resolver timeout.
//! Regular expressions compile once per pattern under the fuzzer
//! (`config::regex`, `cfg(fuzzing)`): the inputs share most of theirs.
#![no_main]

use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use nowait::config::build::{Builder, MainSet, Scope, finish_main};
use nowait::config::finish::finish;
use nowait::config::source::Origin;
use nowait::config::syntax::Reader;

fuzz_target!(|data: &[u8]| {
    let _ = nowait::config::names::set_lookup(nowait::config::names::offline);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let dir = PathBuf::from("/nonexistent-fuzz-conf");
    let mut reader = Reader::with_files(dir.clone(), Some(Default::default()));
    let origin = Origin::File(std::sync::Arc::from(dir.join("fuzz.conf").as_path()));
    let Ok(tree) = reader.read_text(text, origin, 0) else {
        return;
    };
    let mut b = Builder::new(dir.clone());
    let mut set = MainSet::default();
    b.walk(&mut Scope::Main(&mut set), &tree);
    let mut http = set.http.take();
    let mut main = finish_main(set, &dir, None);
    finish(&mut b, &mut main, http.as_mut());
});
