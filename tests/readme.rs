//! The README's directive reference is the directive table's, word for word.
//! Regenerate it with `nowait --directives` between the two markers.

const BEGIN: &str = "<!-- directives:begin -->\n";
const END: &str = "<!-- directives:end -->";

#[test]
fn readme_reference_matches_directive_table() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md is readable");
    let start = readme.find(BEGIN).expect("README has the begin marker") + BEGIN.len();
    let end = readme.find(END).expect("README has the end marker");
    let in_readme = &readme[start..end];
    let from_table = nowait::config::table::reference_markdown();
    assert_eq!(
        in_readme, from_table,
        "README.md's directive reference is stale: replace it with the output of `nowait --directives`"
    );
}

#[test]
fn readme_names_the_test_command_ci_runs() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let ci = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/run")).unwrap();
    assert!(
        readme.contains("\nscripts/test.sh\n"),
        "README gives scripts/test.sh as the test command"
    );
    assert!(
        ci.contains("scripts/test.sh"),
        ".ci/run calls the README's test command"
    );
}
