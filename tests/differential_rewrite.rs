//! Differential test of the rewrite module, `map` and `split_clients`:
//! nowait against the real nginx 1.22 on `differential/rewrite.conf` with
//! the requests of `differential/rewrite-corpus.txt`, compared as
//! `differential.rs` compares (status line, headers, body, connection).
//! The configuration answers mostly with `return 200` texts made of
//! variables, so a body shows what a script did: flags, arguments, captures,
//! `set`, every `if` operator and file test, `if` locations, map keys,
//! wildcards and expressions, `volatile`, the split of keys, escaping of
//! redirects, and the redirect cycle.
//!
//! Run: `cargo test --test differential_rewrite -- --nocapture`; the
//! environment variables of `differential.rs` apply.

mod common;
#[path = "differential/compare.rs"]
mod compare;
#[path = "differential/corpus.rs"]
mod corpus;
#[path = "differential/run.rs"]
mod run;

use run::Suite;

const SUITE: Suite = Suite {
    conf: "rewrite.conf",
    corpus: "rewrite-corpus.txt",
    known: "rewrite-known-differences.txt",
    min_cases: 100,
};

/// The corpus and the known-differences list are well-formed and agree.
#[test]
fn corpus_is_well_formed() {
    run::corpus_is_well_formed(&SUITE);
}

/// The differential run itself.
#[test]
fn nowait_matches_nginx() {
    run::nowait_matches_nginx(&SUITE);
}
