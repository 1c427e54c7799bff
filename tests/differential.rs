//! Differential test: nowait against the real nginx 1.22, byte for byte.
//!
//! Both servers run `differential/nginx.conf` over the same fixture document
//! root (`common/fixture.rs`). Every case of `differential/corpus.txt` is
//! sent as raw bytes to each; the responses are split and compared: status
//! line, the headers in `compare::COMPARED_HEADERS` when either sends them,
//! the body, leftover bytes, and whether the server closed the connection.
//! Server name/version in error pages, the multipart boundary and each
//! server's own port in `Location` are normalized first.
//!
//! Differences kept on purpose are listed, with the fields that differ and
//! their reason, in `differential/known-differences.txt`: those fields are
//! reported but do not fail. Every other mismatch, in a listed case too, is
//! reported (case, field, both values) and the test fails once at the end
//! with the count.
//!
//! Needs `/usr/sbin/nginx` (Debian's nginx-light): run
//! `scripts/install-test-deps.sh` as root. Tests run as root so that the
//! workers drop to `nobody` like in production.
//!
//! Run: `cargo test --test differential -- --nocapture`
//!
//! Environment:
//! - `NOWAIT_DIFF_SELF=1`: compare nginx against a second nginx instead of
//!   nowait. All cases must pass: this proves the corpus is deterministic,
//!   so that every mismatch against nowait is nowait's.
//! - `NOWAIT_DIFF_ONLY=name,name`: run only these cases.
//! - `NOWAIT_DIFF_VERBOSE=1`: print nginx's outcome of every case; `=2`:
//!   with the response heads.
//! - `NOWAIT_TEST_KEEP_TMP=1`: keep the temp dirs (configs, stderr logs).

mod common;
#[path = "differential/compare.rs"]
mod compare;
#[path = "differential/corpus.rs"]
mod corpus;
#[path = "differential/run.rs"]
mod run;

use run::Suite;

const SUITE: Suite = Suite {
    conf: "nginx.conf",
    corpus: "corpus.txt",
    known: "known-differences.txt",
    min_cases: 150,
};

/// The corpus and the known-differences list are well-formed and agree.
#[test]
fn corpus_is_well_formed() {
    run::corpus_is_well_formed(&SUITE);
}

/// The differential run itself; see the file header.
#[test]
fn nowait_matches_nginx() {
    run::nowait_matches_nginx(&SUITE);
}
