#!/usr/bin/env bash
# Builds the Debian package into target/debian/: the binary with the
# package's paths (prefix /usr/share/nowait/, configuration
# /etc/nowait/nowait.conf), the manual page generated from it, then
# `cargo deb` with the layout in Cargo.toml's [package.metadata.deb].
# cargo-deb is installed from crates.io into target/tools/ when missing
# (about a minute, once). Prints the path of the .deb on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

# nginx's Debian paths, nowait's names.
export NOWAIT_PREFIX=/usr/share/nowait/
export NOWAIT_CONF_PATH=/etc/nowait/nowait.conf
# The manual page's date is the last commit's (reproducible builds).
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

step() { printf '\n== %s\n' "$*" >&2; }

CARGO_DEB_VERSION=3.8.0
tools=target/tools
if cargo deb --version >/dev/null 2>&1; then
    cargo_deb=(cargo deb)
else
    if [[ ! -x $tools/bin/cargo-deb ]]; then
        step "installing cargo-deb $CARGO_DEB_VERSION into $tools/"
        cargo install cargo-deb --version "$CARGO_DEB_VERSION" --locked --root "$tools" >&2
    fi
    cargo_deb=("$tools/bin/cargo-deb" deb)
fi

step "cargo build --profile deb (prefix $NOWAIT_PREFIX, configuration $NOWAIT_CONF_PATH)"
cargo build --profile deb --bin nowait >&2
binary=target/deb/nowait
conf=$("$binary" -V 2>&1 | grep -o -- '--conf-path=[^ ]*' || true)
if [[ $conf != "--conf-path=$NOWAIT_CONF_PATH" ]]; then
    echo "package.sh: $binary reports \"$conf\", not --conf-path=$NOWAIT_CONF_PATH" >&2
    exit 1
fi

step "manual page nowait(8)"
mkdir -p target/man
scripts/manpage.py "$binary" target/man/nowait.8
gzip -9n -f target/man/nowait.8

step "cargo deb"
mkdir -p target/debian
deb=$("${cargo_deb[@]}" --profile deb --no-build --output target/debian/)
echo "$deb"
