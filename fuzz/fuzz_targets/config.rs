//! The configuration lexer, syntax tree and directive table (setters,
//! merge, checks) on any text: messages, never a panic. `include` is
//! resolved against an empty folder, so only absolute paths reach files.
//! Host names resolve offline (`config::names::offline`: literals and
//! `localhost`): a mutated name costs a parse, not a resolver timeout.
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
    let mut reader = Reader::new(dir.clone());
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
