#!/usr/bin/env bash
# Experiment C, per request: nowait against nginx side by side, `return 200`
# and a 1 KB file, 2 workers, accept_mutex on / off / reuseport, wrk -t2
# -c100 over 127.0.0.1. Servers run one at a time, alternating per round.
#   ROUNDS=3 DURATION=10s PIN=none|split  (split: server on CPU 0, wrk on CPU 1)
#   NOWAIT_BIN=target/release/nowait NGINX_BIN=/usr/sbin/nginx PORT=28371
#   MODES="on off reuseport" PATHS="/ok /1k.txt" (a subset of the table)
set -euo pipefail
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
PIN=${PIN:-none}
PORT=${PORT:-28371}
NGINX_BIN=${NGINX_BIN:-/usr/sbin/nginx}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)

SCRIPT=experiment_c.sh
# shellcheck source=bench/tools.sh
source "$HERE/tools.sh"
need_bench_tools

dir=$(mktemp -d)
chmod 755 "$dir" # the workers run as nobody when started as root
server_pid=""
# A failed step must not leave a server holding the port (or the caller's pipe).
cleanup() {
    if [[ -n $server_pid ]]; then kill -QUIT "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$dir"
}
trap cleanup EXIT
mkdir -p "$dir/www" "$dir/logs"
head -c 1024 /dev/zero | tr '\0' 'a' > "$dir/www/1k.txt"
conf() { # mode
    local events="" listen="127.0.0.1:$PORT"
    case $1 in
        on) events="accept_mutex on;" ;;
        off) events="accept_mutex off;" ;;
        reuseport) listen="$listen reuseport" ;;
    esac
    cat > "$dir/nginx.conf" <<CONF
worker_processes 2;
error_log $dir/logs/error.log;
pid $dir/logs/nginx.pid;
events { worker_connections 1024; $events }
http {
    access_log off;
    server {
        listen $listen;
        root $dir/www;
        location = /ok { return 200 "ok"; }
    }
}
CONF
}
pin_server() { if [ "$PIN" = split ]; then echo "taskset -c 0"; fi; }
pin_wrk() { if [ "$PIN" = split ]; then echo "taskset -c 1"; fi; }
run() { # server mode path
    conf "$2"
    local pid
    if [ "$1" = nginx ]; then
        $(pin_server) "$NGINX_BIN" -p "$dir" -c "$dir/nginx.conf" -g "daemon off;" 2>/dev/null &
    else
        $(pin_server) "$NOWAIT_BIN" -p "$dir" -c "$dir/nginx.conf" -g "daemon off;" 2>/dev/null &
    fi
    pid=$!
    server_pid=$pid
    local up=""
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT$3" >/dev/null && { up=1; break; }; sleep 0.1; done
    [[ -n $up ]] || die "$1 did not answer http://127.0.0.1:$PORT$3 within 10 s"
    local out
    out=$(timeout 60 $(pin_wrk) wrk -t2 -c100 -d"$DURATION" "http://127.0.0.1:$PORT$3") || die "wrk failed against $1"
    kill -QUIT $pid; wait $pid 2>/dev/null || true
    server_pid=""
    local rps lat
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    lat=$(echo "$out" | awk '/Latency/ {print $2" ± "$3}')
    echo "| $2 | $3 | $1 | $rps | $lat |"
}
echo "| mode | path | server | req/s | latency avg ± stdev |"
echo "|---|---|---|---|---|"
for round in $(seq "$ROUNDS"); do
    for mode in ${MODES:-on off reuseport}; do
        for path in ${PATHS:-/ok /1k.txt}; do
            if [ $((round % 2)) = 1 ]; then order="nowait nginx"; else order="nginx nowait"; fi
            for server in $order; do run "$server" "$mode" "$path"; done
        done
    done
done
