#!/usr/bin/env bash
# TLS benchmark: nowait against nginx in the same run (full handshakes
# RSA-2048 and ECDSA P-256 per second and per CPU-second, resumed handshakes,
# keep-alive 1 KB and 1 MB over TLS, memory per idle TLS connection, a
# keep-alive client's p99 and nowait's loop turns during a handshake storm).
# The work is bench/tls.py's; this checks the tools it needs and builds the
# release binary first. Arguments go to tls.py (--quick, --seconds N, --pairs N,
# --out DIR).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
if [ "$(id -u)" -ne 0 ]; then
    echo "bench/tls.sh: run as root (the servers run as nobody, pinned with taskset)" >&2
    exit 1
fi
for tool in wrk openssl taskset; do
    command -v "$tool" >/dev/null || { echo "bench/tls.sh: $tool missing (scripts/install-test-deps.sh installs it)" >&2; exit 1; }
done
(cd "$repo" && cargo build --release --quiet)
exec python3 "$here/tls.py" "$@"
