//! The `nowait` binary: thin glue around [`nowait::cli`].

/// mimalloc (its 2.x line) rather than glibc's malloc: a proxied request
/// allocates and frees a few dozen blocks on one loop thread, some larger
/// than glibc's per-thread cache takes, and glibc spent a fifth of the
/// proxy's user-space instructions on them; mimalloc also keeps less
/// resident per waiting connection (`docs/architecture.md`, "what a
/// request costs"). `sys::alloc` calls it without the aligned path's
/// checks for the blocks that need none.
#[global_allocator]
static ALLOC: nowait::sys::alloc::MiMalloc = nowait::sys::alloc::MiMalloc;

fn main() {
    // Before anything else: glibc's copies on AMD CPUs are chosen when the
    // program is loaded (`process::copy_tuning`).
    nowait::process::copy_tuning::reexec();
    std::process::exit(nowait::cli::main());
}
