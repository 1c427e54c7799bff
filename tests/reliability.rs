//! Black-box tests of what nowait survives and what it reports about it:
//!
//! - fault injection exists in test builds only (`-V` says so here; the
//!   release binary's refusal is checked by `scripts/test.sh`).

mod common;

#[test]
fn test_builds_have_fault_injection() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nowait"))
        .arg("-V")
        .output()
        .expect("run nowait -V");
    let text = String::from_utf8_lossy(&out.stderr);
    let features = text
        .lines()
        .find(|l| l.starts_with("features:"))
        .unwrap_or_else(|| panic!("no features line in:\n{text}"));
    assert!(
        features.ends_with(", test fault injection"),
        "the binary the tests run was built without the test-faults feature: {features}"
    );
}
