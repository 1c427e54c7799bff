#!/bin/sh
# Runs nowait's fuzz targets (fuzz/fuzz_targets/) one after another, each for
# SECONDS (default 600), on one core (one process, no -jobs): scripts/fuzz.sh [SECONDS] [TARGET...].
# Installs cargo-fuzz from crates.io when it is missing; needs the nightly
# toolchain. Each run starts from fuzz/seeds/TARGET (committed, seeded from
# the tests) and the corpus it grew before (fuzz/corpus/TARGET, not
# committed); a crash stops the run and leaves its input in
# fuzz/artifacts/TARGET. FUZZ_SANITIZER (default none: the parsers are safe
# Rust, where a bug is a panic the fuzzer catches anyway; `address` for code
# that reaches `unsafe`) is passed to cargo-fuzz's -s. The last line of each target's log (fuzz/logs/)
# gives the executions reached.
set -eu
cd "$(dirname "$0")/../fuzz"
secs=${1:-600}
[ $# -gt 0 ] && shift
targets=${*:-"request_head chunked range uri config upstream_head cache_header cipher_string fastcgi_records memcached_response"}
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
mkdir -p logs
for t in $targets; do
    mkdir -p "corpus/$t"
    echo "== $t for ${secs}s"
    cargo +nightly fuzz run -s "${FUZZ_SANITIZER:-none}" "$t" "corpus/$t" "seeds/$t" -- \
        -max_total_time="$secs" -print_final_stats=1 \
        >"logs/$t.log" 2>&1 || { echo "$t FAILED: see fuzz/logs/$t.log"; exit 1; }
    grep -E '^stat::number_of_executed_units' "logs/$t.log" || tail -n 3 "logs/$t.log"
done
