#!/usr/bin/env bash
# Checks that a nowait binary has no fault injection compiled in: `-V` does
# not list it, and with NOWAIT_TEST_STALL asking for a 30 s stall on a file
# (and NOWAIT_TEST_PANIC for a panic on another), both are served within a
# 5 s client timeout. Usage: check-release-faults.sh BINARY
set -euo pipefail
bin=$(realpath "${1:?usage: $0 BINARY}")

if "$bin" -V 2>&1 | grep -q "fault injection"; then
    echo "FAIL: $bin was built with fault injection" >&2
    exit 1
fi

dir=$(mktemp -d)
pid=
cleanup() {
    if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    rm -rf "$dir"
}
trap cleanup EXIT
mkdir "$dir/root"
echo stalled >"$dir/root/stalled.txt"
echo boom >"$dir/root/boom.txt"
chmod -R a+rX "$dir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$dir/nowait.conf" <<CONF
worker_processes 1;
error_log $dir/error.log;
pid $dir/nowait.pid;
events { worker_connections 64; }
http {
    access_log off;
    server { listen 127.0.0.1:$port; root $dir/root; }
}
CONF
NOWAIT_TEST_STALL=stalled=30000 NOWAIT_TEST_PANIC=boom \
    "$bin" -p "$dir/" -c "$dir/nowait.conf" -g "daemon off;" 2>"$dir/stderr.log" &
pid=$!
for _ in $(seq 100); do
    if python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null; then
        break
    fi
    sleep 0.1
done
for f in stalled boom; do
    got=$(python3 - "$port" "$f" <<'PY'
import socket, sys
port, name = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port), 5)
s.settimeout(5)
s.sendall(f"GET /{name}.txt HTTP/1.0\r\nHost: x\r\n\r\n".encode())
data = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
except socket.timeout:
    print("timeout")
    sys.exit(0)
print(data.split(b"\r\n", 1)[0].decode(errors="replace"), data.endswith(f"{name}\n".encode()))
PY
)
    if [[ $got != "HTTP/1.1 200 OK True" ]]; then
        echo "FAIL: /$f.txt with fault variables set: $got" >&2
        cat "$dir/stderr.log" "$dir/error.log" >&2 || true
        exit 1
    fi
done
echo "ok: $bin ignores the fault-injection variables"
