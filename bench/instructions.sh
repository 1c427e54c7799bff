#!/usr/bin/env bash
# User-space instructions per request, nowait against nginx, counted by
# callgrind: each server runs under valgrind with one worker, wrk sends
# keep-alive requests for a while, and the worker's instructions (every
# thread of it: the event loop and the pools) are divided by the requests
# wrk completed. Unlike req/s, the figure hardly depends on the machine's
# load, so a change of a few hundred instructions per request shows.
#
# Paths measured (PATHS, default all three):
#   ok     `return 200 "ok"`
#   1k     a 1 KiB static file
#   proxy  a 1 KiB file proxied from a keep-alive upstream (an nginx origin)
#
# Environment (all optional):
#   DURATION=20s     length of each wrk run under callgrind
#   PATHS="ok 1k proxy"
#   SERVERS="nowait nginx"
#   PORT=28391       loopback port of the server measured
#   ORIGIN_PORT=28390  loopback port of the origin (not under valgrind)
#   NOWAIT_BIN=...   a nowait binary to use instead of `cargo build --release`
#   NGINX_BIN=nginx  the nginx to compare with (and the origin)
#   KEEP=1           keep the work directory (callgrind.*.out files) and
#                    print its path, for callgrind_annotate
#
# Counting starts after start-up: once the server answers, its counters are
# zeroed (callgrind_control -z), so configuration parsing and the first
# connection are not spread over the requests. What the shutdown costs is
# counted; it is a few hundred thousand instructions, under 0.1 instruction
# per request at the default duration.
set -euo pipefail

DURATION=${DURATION:-20s}
PATHS=${PATHS:-ok 1k proxy}
SERVERS=${SERVERS:-nowait nginx}
PORT=${PORT:-28391}
ORIGIN_PORT=${ORIGIN_PORT:-28390}
NGINX_BIN=${NGINX_BIN:-nginx}
KEEP=${KEEP:-0}

# wrk: one thread, 20 keep-alive connections.
WRK_THREADS=1
WRK_CONNS=20
# Size of the static and proxied file.
FILE_BYTES=1024
# Idle connections the worker keeps to the origin.
KEEPALIVE=32
# How long a server may take to open its port (valgrind is slow to start)
# and to exit (callgrind writes its profile on the way out).
START_TIMEOUT_S=60
STOP_TIMEOUT_S=60

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)

SCRIPT=instructions.sh
# shellcheck source=bench/tools.sh
source "$HERE/tools.sh"
need_tool valgrind valgrind
need_bench_tools

WORK=$(mktemp -d -t nowait-bench-instr.XXXXXX)
SERVER_PID=
ORIGIN_PID=
cleanup() {
    [[ -n $SERVER_PID ]] && stop_pid "$SERVER_PID" TERM
    [[ -n $ORIGIN_PID ]] && stop_pid "$ORIGIN_PID" TERM
    if [[ $KEEP == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Workers run as nobody: what they read must be world-readable.
chmod 755 "$WORK"
DATA=$WORK/data
mkdir -p "$DATA"
head -c $FILE_BYTES /dev/zero | tr '\0' 'a' >"$DATA/1k.txt"
chmod 755 "$DATA"
chmod 644 "$DATA"/*

NGINX_TEMP='    client_body_temp_path PREFIX/client_body_temp;
    proxy_temp_path PREFIX/proxy_temp;
    fastcgi_temp_path PREFIX/fastcgi_temp;
    uwsgi_temp_path PREFIX/uwsgi_temp;
    scgi_temp_path PREFIX/scgi_temp;'

ORIGIN_TEMPLATE="user nobody nogroup;
worker_processes 1;
pid PREFIX/x.pid;
error_log PREFIX/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    keepalive_requests 1000000;
$NGINX_TEMP
    server {
        listen 127.0.0.1:$ORIGIN_PORT;
        root $DATA;
    }
}"

# The one configuration both servers get; NGINX_ONLY holds lines that
# nowait does not need (nginx's other modules' temp paths), NOWAIT_ONLY
# nowait's `loop_turn_budget off`: under valgrind a request takes ~50 times
# as long, so a 250 µs turn holds one or two where a native one holds ~40,
# and the budget's deferrals, rare outside valgrind, would be counted in
# every request. The servers
# keep the user who runs the script: callgrind creates its profile when
# the process starts and writes it when the process ends, and nowait's
# workers are threads of that process, which could not write it as nobody.
TEMPLATE="user $(id -un) $(id -gn);
worker_processes 1;
pid PREFIX/x.pid;
error_log PREFIX/error.log;
events { worker_connections 1024; NOWAIT_ONLY }
http {
    access_log off;
    keepalive_requests 1000000;
NGINX_ONLY
    upstream o {
        server 127.0.0.1:$ORIGIN_PORT;
        keepalive $KEEPALIVE;
    }
    server {
        listen 127.0.0.1:$PORT;
        root $DATA;
        aio threads;
        location = /ok { return 200 \"ok\"; }
        location /p/ {
            proxy_pass http://o/;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
        }
    }
}"

make_prefix() { # make_prefix NAME TEMPLATE NGINX_EXTRA [NOWAIT_EXTRA]: writes PREFIX/nginx.conf, prints PREFIX
    local prefix=$WORK/$1
    mkdir -p "$prefix/cg"
    local conf=${2//NGINX_ONLY/$3}
    conf=${conf//NOWAIT_ONLY/${4:-}}
    conf=${conf//PREFIX/$prefix}
    printf '%s\n' "$conf" >"$prefix/nginx.conf"
    echo "$prefix"
}

url_path() {
    case $1 in
        ok) echo /ok ;;
        1k) echo /1k.txt ;;
        proxy) echo /p/1k.txt ;;
        *) die "unknown path $1 (ok, 1k or proxy)" ;;
    esac
}
url_size() { if [[ $1 == ok ]]; then echo 2; else echo $FILE_BYTES; fi; }


# start PREFIX PORT COMMAND...: starts a server, leaves its pid in STARTED
# once it listens.
STARTED=
start() {
    local prefix=$1 port=$2
    shift 2
    port_open "$port" && die "port $port is already in use"
    (exec "$@" -p "$prefix" -c "$prefix/nginx.conf" -g 'daemon off;') >"$prefix/stdout.log" 2>&1 &
    STARTED=$!
    await_start "$STARTED" "$port" "$prefix" "$prefix"
}

# The pid and its descendants (nginx's worker is a child of its master).
tree_pids() {
    local pids=$1 all=$1 next p
    while [[ -n $pids ]]; do
        next=""
        for p in $pids; do next+=" $(ps -o pid= --ppid "$p" 2>/dev/null | tr '\n' ' ')"; done
        next=$(echo $next)
        [[ -n $next ]] && all+=" $next"
        pids=$next
    done
    echo "$all"
}

seconds() { # 10s / 1m -> seconds
    local d=$1
    case $d in
        *s) echo "${d%s}" ;;
        *m) echo $((${d%m} * 60)) ;;
        *) echo "$d" ;;
    esac
}

# measure SERVER PATH: leaves "requests instructions per_request" in FIG.
FIG=
measure() {
    local server=$1 path bin extra='' own='' prefix got n total f t
    path=$(url_path "$2")
    if [[ $server == nginx ]]; then
        bin=$NGINX_BIN
        extra=$NGINX_TEMP
    else
        bin=$NOWAIT_BIN
        own='loop_turn_budget off;'
    fi
    prefix=$(make_prefix "$server-$2" "$TEMPLATE" "$extra" "$own")
    start "$prefix" "$PORT" valgrind --tool=callgrind \
        "--callgrind-out-file=$prefix/cg/callgrind.%p.out" "$bin"
    SERVER_PID=$STARTED
    got=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' "http://127.0.0.1:$PORT$path") ||
        got="curl failed"
    if [[ $got != "200 $(url_size "$2")" ]]; then
        cat "$prefix/error.log" >&2 2>/dev/null || true
        die "$server $path: expected 200 $(url_size "$2"), got $got"
    fi
    # shellcheck disable=SC2046 # a list of pids
    callgrind_control -z $(tree_pids "$SERVER_PID") >/dev/null 2>&1 ||
        die "callgrind_control -z failed"
    timeout $(($(seconds "$DURATION") + 60)) \
        wrk -t$WRK_THREADS -c$WRK_CONNS -d"$DURATION" "http://127.0.0.1:$PORT$path" \
        >"$prefix/wrk.txt" 2>&1 || die "wrk failed: $(cat "$prefix/wrk.txt")"
    grep -q 'Non-2xx\|Socket errors' "$prefix/wrk.txt" &&
        die "$server $path: wrk saw errors: $(cat "$prefix/wrk.txt")"
    n=$(awk '/requests in/ { print $1 }' "$prefix/wrk.txt")
    # SIGQUIT: a graceful stop, so that every process writes its profile.
    stop_pid "$SERVER_PID" QUIT
    SERVER_PID=
    # The worker's profile is the biggest one (nginx's master idles).
    total=0
    for f in "$prefix"/cg/callgrind.*.out; do
        t=$(awk '/^summary:/ { print $2 }' "$f")
        ((${t:-0} > total)) && total=$t
    done
    ((total > 0)) || die "$server $path: no callgrind profile"
    FIG="$n $total $((total / n))"
}

NOWAIT_COMMIT=$(git -C "$REPO" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [[ -n $(git -C "$REPO" status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null) ]]; then
    NOWAIT_COMMIT="$NOWAIT_COMMIT (with uncommitted changes in src/)"
fi
log "nowait $NOWAIT_COMMIT, $("$NGINX_BIN" -v 2>&1 | sed 's/^nginx version: //'), $(valgrind --version)"

ORIGIN_PREFIX=$(make_prefix origin "$ORIGIN_TEMPLATE" "")
start "$ORIGIN_PREFIX" "$ORIGIN_PORT" "$NGINX_BIN"
ORIGIN_PID=$STARTED

declare -A per=()
for path in $PATHS; do
    for server in $SERVERS; do
        log "$server $(url_path "$path"): wrk -t$WRK_THREADS -c$WRK_CONNS -d$DURATION under callgrind"
        measure "$server" "$path"
        read -r n total each <<<"$FIG"
        log "  -> $n requests, $total instructions, $each per request"
        per[$server-$path]=$each
    done
done

printf '\n| path |'
for server in $SERVERS; do printf ' %s |' "$server"; done
[[ $SERVERS == "nowait nginx" ]] && printf ' nowait/nginx |'
printf '\n|---|%s' "$(for _ in $SERVERS; do printf -- '---|'; done)"
[[ $SERVERS == "nowait nginx" ]] && printf -- '---|'
printf '\n'
for path in $PATHS; do
    printf '| %s |' "$(url_path "$path")"
    for server in $SERVERS; do printf ' %s |' "${per[$server-$path]}"; done
    if [[ $SERVERS == "nowait nginx" ]]; then
        awk -v a="${per[nowait-$path]}" -v b="${per[nginx-$path]}" 'BEGIN { printf " %.2f |", a / b }'
    fi
    printf '\n'
done
echo
echo "User-space instructions per request (callgrind, one worker, wrk -t$WRK_THREADS -c$WRK_CONNS -d$DURATION, keep-alive)."
