//! The `nowait` binary: thin glue around [`nowait::cli`].

fn main() {
    std::process::exit(nowait::cli::main());
}
