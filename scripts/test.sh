#!/usr/bin/env bash
# Runs every check nowait has, from a fresh clone: installs what the tests
# need (Debian's nginx-light for the differential tests, Chromium for the
# status page's browser test; rustfmt and clippy
# when missing), then the gates in order: formatting, lints, all tests.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "installing test dependencies"
if [[ $(id -u) -eq 0 ]]; then
    scripts/install-test-deps.sh
elif [[ ! -x /usr/sbin/nginx ]] || ! command -v chromium >/dev/null 2>&1; then
    echo "nginx-light or chromium is missing and installing them needs root: run scripts/install-test-deps.sh as root" >&2
    exit 1
fi
for component in rustfmt clippy; do
    if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
        rustup component add "$component"
    fi
done

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets -- -D warnings

step "cargo test"
# The status page's browser test must run here, not skip: Chromium is
# installed above (or by scripts/install-test-deps.sh). And no test may
# skip for want of root, FUSE, Landlock, IPv6 on loopback, a second CPU or
# the like (tests/common: `require`): here each of them fails instead.
NOWAIT_REQUIRE_CHROMIUM=1 NOWAIT_REQUIRE_ALL=1 cargo test --all-targets

step "release build: no fault injection"
# Fault injection (NOWAIT_TEST_STALL, NOWAIT_TEST_PANIC) is compiled into
# test builds only. A release binary must ignore the variables: a file
# stalled for 30 s is served within a 5 s client timeout.
cargo build --release
scripts/check-release-faults.sh target/release/nowait

