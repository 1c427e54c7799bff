#!/usr/bin/env bash
# Static-serving benchmark: nowait against nginx, in the same run, on this
# machine, with wrk over loopback. See bench/README.md for what each line
# measures and why the CPUs are split as they are.
#
# Environment (all optional):
#   DURATION=10s     length of each measured wrk run (3s for a quick check)
#   WARMUP=1s        unmeasured wrk run before each measurement (0 = none)
#   REPEAT=1         measurements per server and line, interleaved; the best
#                    one is reported (noise on a shared machine only slows)
#   PIN=split        split: server on CPU 0, wrk on CPU 1; none: no pinning
#   PORT=28341       loopback port both servers listen on (one at a time)
#   LINES="..."      subset of: small1k small4k ok large (default: all)
#   NOWAIT_BIN=...   a nowait binary to use instead of `cargo build --release`
#   NGINX_BIN=nginx  the nginx to compare with
#   RESULTS_DIR=bench/results   where the Markdown report goes ("" = none)
#
# Servers listen on 127.0.0.1 only, one at a time (2 cores): each run starts
# its server, checks the answer with curl, runs wrk (bounded by -d and by
# `timeout`), and stops the server before the next one starts.
set -euo pipefail

DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-1s}
REPEAT=${REPEAT:-1}
PIN=${PIN:-split}
PORT=${PORT:-28341}
LINES=${LINES:-small1k small4k ok large}
NGINX_BIN=${NGINX_BIN:-nginx}

# wrk parameters per kind of line: threads and connections.
WRK_THREADS=2
SMALL_CONNS=64
LARGE_CONNS=8
# Sizes of the files served.
LARGE_MIB=64
# How long a server may take to open its port or to exit.
START_TIMEOUT_S=10
STOP_TIMEOUT_S=10

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
RESULTS_DIR=${RESULTS_DIR-$REPO/bench/results}

SCRIPT=static.sh
# shellcheck source=bench/tools.sh
source "$HERE/tools.sh"
need_bench_tools

case $PIN in
    split)
        (($(nproc) >= 2)) || die "PIN=split needs 2 CPUs"
        SERVER_CPUS=0
        WRK_CPUS=1
        ;;
    none) ;;
    *) die "PIN must be split or none" ;;
esac

# --- data and prefixes -------------------------------------------------------

WORK=$(mktemp -d -t nowait-bench.XXXXXX)
SERVER_PID=
cleanup() {
    if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Workers run as nobody: everything they read must be world-readable.
chmod 755 "$WORK"
DATA=$WORK/data
mkdir -p "$DATA"
head -c 1024 /dev/zero | tr '\0' 'a' >"$DATA/small.html"
head -c 4096 /dev/zero | tr '\0' 'b' >"$DATA/small4k.html"
head -c $((LARGE_MIB << 20)) /dev/urandom >"$DATA/large.bin"
chmod 755 "$DATA"
chmod 644 "$DATA"/*
# Both servers then read from the page cache.
cat "$DATA"/* >/dev/null

# The one configuration both servers get. REUSEPORT is "" or " reuseport";
# NGINX_ONLY holds lines that nowait does not accept (nginx's temp paths).
TEMPLATE='user nobody nogroup;
worker_processes 2;
pid PREFIX/x.pid;
error_log PREFIX/error.log;
events {
    worker_connections 4096;
    accept_mutex off;
}
http {
    include mime.types;
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
NGINX_ONLY
    server {
        listen 127.0.0.1:PORTREUSEPORT;
        root DATA;
        location / { }
        location = /ok { return 200 "OK"; }
    }
}'
NGINX_EXTRA='    client_body_temp_path PREFIX/client_body_temp;
    proxy_temp_path PREFIX/proxy_temp;
    fastcgi_temp_path PREFIX/fastcgi_temp;
    uwsgi_temp_path PREFIX/uwsgi_temp;
    scgi_temp_path PREFIX/scgi_temp;'

# make_prefix SERVER REUSEPORT(0|1): writes PREFIX/nginx.conf, prints PREFIX.
make_prefix() {
    local prefix=$WORK/$1-rp$2 rp='' extra=''
    mkdir -p "$prefix"
    cp "$REPO/conf/mime.types" "$prefix/mime.types"
    [[ $2 == 1 ]] && rp=' reuseport'
    [[ $1 == nginx ]] && extra=$NGINX_EXTRA
    local conf=${TEMPLATE//NGINX_ONLY/$extra}
    conf=${conf//REUSEPORT/$rp}
    conf=${conf//PREFIX/$prefix}
    conf=${conf//DATA/$DATA}
    conf=${conf//PORT/$PORT}
    printf '%s\n' "$conf" >"$prefix/nginx.conf"
    echo "$prefix"
}

# --- servers -----------------------------------------------------------------


pinned() { # pinned CPUS COMMAND...: exec COMMAND on CPUS (as is with PIN=none)
    local cpus=$1
    shift
    if [[ -n $cpus ]]; then exec taskset -c "$cpus" "$@"; else exec "$@"; fi
}

start_server() { # start_server SERVER PREFIX
    local bin=$NOWAIT_BIN
    [[ $1 == nginx ]] && bin=$NGINX_BIN
    port_open "$PORT" && die "port $PORT is already in use"
    # A subshell that execs, so that $! is the server's (master's) pid.
    (pinned "${SERVER_CPUS:-}" "$bin" -p "$2" -c "$2/nginx.conf" -g 'daemon off;') \
        >"$2/stdout.log" 2>&1 &
    SERVER_PID=$!
    await_start "$SERVER_PID" "$PORT" "$2" "$1"
}

stop_server() {
    [[ -n $SERVER_PID ]] || return 0
    stop_pid "$SERVER_PID"
    SERVER_PID=
    local i
    for ((i = 0; i < STOP_TIMEOUT_S * 20; i++)); do
        port_open "$PORT" || return 0
        sleep 0.05
    done
    die "port $PORT still open after the server exited"
}

# --- lines -------------------------------------------------------------------

line_path() {
    case $1 in
        small1k) echo /small.html ;;
        small4k) echo /small4k.html ;;
        ok) echo /ok ;;
        large) echo /large.bin ;;
        *) die "unknown line $1" ;;
    esac
}
line_size() {
    case $1 in
        small1k) echo 1024 ;;
        small4k) echo 4096 ;;
        ok) echo 2 ;;
        large) echo $((LARGE_MIB << 20)) ;;
    esac
}
line_conns() { if [[ $1 == large ]]; then echo $LARGE_CONNS; else echo $SMALL_CONNS; fi; }
line_title() {
    case $1 in
        small1k) echo "1 KiB file, req/s" ;;
        small4k) echo "4 KiB file, req/s" ;;
        ok) echo '`return 200 "OK"`, req/s' ;;
        large) echo "${LARGE_MIB} MiB file, MB/s" ;;
    esac
}
wrk_args() { # wrk_args LINE DURATION
    echo "-t$WRK_THREADS -c$(line_conns "$1") -d$2 --latency http://127.0.0.1:$PORT$(line_path "$1")"
}

seconds() { # 10s / 1m / 500ms -> seconds, rounded up
    local d=$1
    case $d in
        *ms) echo 1 ;;
        *s) echo "${d%s}" ;;
        *m) echo $((${d%m} * 60)) ;;
        *h) echo $((${d%h} * 3600)) ;;
        *) echo "$d" ;;
    esac
}

# Busy jiffies and all jiffies of each CPU: "cpu0 busy total cpu1 busy total".
cpu_ticks() {
    awk '/^cpu[0-9]+ / { idle = $5 + $6; t = 0; for (i = 2; i <= 9; i++) t += $i
                         printf "%s %d %d ", $1, t - idle, t }' /proc/stat
}
# cpu_busy BEFORE AFTER CPU: percent busy of CPU between the two snapshots.
cpu_busy() {
    awk -v a="$1" -v b="$2" -v c="cpu$3" 'BEGIN {
        na = split(a, x, " "); split(b, y, " ")
        for (i = 1; i <= na; i += 3) if (x[i] == c) {
            dt = y[i + 2] - x[i + 2]
            printf "%.0f", (dt > 0 ? 100 * (y[i + 1] - x[i + 1]) / dt : 0)
        }
    }'
}

run_wrk() { # run_wrk LINE DURATION OUTFILE
    local limit=$(($(seconds "$2") + 30))
    # shellcheck disable=SC2046
    (pinned "${WRK_CPUS:-}" timeout "$limit" wrk $(wrk_args "$1" "$2")) >"$3" 2>&1 ||
        die "wrk failed: $(cat "$3")"
}

# Parses wrk's report: prints "rps mbps p50_ms p99_ms errors".
parse_wrk() {
    awk '
    function ms(v) {
        if (v ~ /us$/) return substr(v, 1, length(v) - 2) / 1000
        if (v ~ /ms$/) return substr(v, 1, length(v) - 2) + 0
        if (v ~ /m$/) return substr(v, 1, length(v) - 1) * 60000
        if (v ~ /s$/) return substr(v, 1, length(v) - 1) * 1000
        return v + 0
    }
    function mb(v) {
        if (v ~ /GB$/) return substr(v, 1, length(v) - 2) * 1024
        if (v ~ /MB$/) return substr(v, 1, length(v) - 2) + 0
        if (v ~ /KB$/) return substr(v, 1, length(v) - 2) / 1024
        if (v ~ /B$/) return substr(v, 1, length(v) - 1) / 1048576
        return v + 0
    }
    /^Requests\/sec:/ { rps = $2 }
    /^Transfer\/sec:/ { mbps = mb($2) }
    /^ +50% / { p50 = ms($2) }
    /^ +99% / { p99 = ms($2) }
    /Non-2xx or 3xx responses:/ { err += $NF }
    /Socket errors:/ { gsub(",", ""); err += $4 + $6 + $8 + $10 }
    END { printf "%s %.1f %.3f %.3f %d\n", rps, mbps, p50, p99, err }
    ' "$1"
}

# measure SERVER LINE REUSEPORT: leaves the parsed figures in $FIG. Runs in
# the main shell (not in $(...)) so that the EXIT trap sees SERVER_PID.
FIG=
measure() {
    local server=$1 line=$2 rp=$3 prefix got
    prefix=$(make_prefix "$server" "$rp")
    start_server "$server" "$prefix"
    got=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' \
        "http://127.0.0.1:$PORT$(line_path "$line")") || got="curl failed"
    if [[ $got != "200 $(line_size "$line")" ]]; then
        cat "$prefix/error.log" >&2 2>/dev/null || true
        die "$server $(line_path "$line"): expected 200 $(line_size "$line"), got $got"
    fi
    if [[ $WARMUP != 0 ]]; then
        run_wrk "$line" "$WARMUP" "$prefix/warmup.txt"
    fi
    local before after
    before=$(cpu_ticks)
    run_wrk "$line" "$DURATION" "$prefix/wrk-$line.txt"
    after=$(cpu_ticks)
    stop_server
    # rps MB/s p50 p99 errors cpu0% cpu1%
    FIG="$(parse_wrk "$prefix/wrk-$line.txt") $(cpu_busy "$before" "$after" 0) $(cpu_busy "$before" "$after" 1)"
}

# best LINE OLD NEW: whichever of two figure sets has the higher throughput.
best() {
    [[ -z $2 ]] && { echo "$3"; return; }
    local col=1
    [[ $1 == large ]] && col=2
    awk -v a="$2" -v b="$3" -v c=$col 'BEGIN {
        split(a, x, " "); split(b, y, " "); print (y[c] + 0 > x[c] + 0 ? b : a) }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
fmt_int() { awk -v a="$1" 'BEGIN { printf "%.0f", a }'; }

# --- run ---------------------------------------------------------------------

NOWAIT_COMMIT=$(git -C "$REPO" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [[ -n $(git -C "$REPO" status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null) ]]; then
    NOWAIT_COMMIT="$NOWAIT_COMMIT (with uncommitted changes in src/)"
fi
NGINX_VERSION=$("$NGINX_BIN" -v 2>&1 | sed 's/^nginx version: //')
NGINX_PKG=$(dpkg-query -W -f='${Package} ${Version}' nginx-light 2>/dev/null || echo "")
WRK_VERSION=$( (wrk -v 2>&1 || true) | head -1 | awk '{print $1, $2}')
CPU_MODEL=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
HOST=$(hostname -s 2>/dev/null || hostname)
STAMP=$(date -u +%Y-%m-%dT%H:%M:%SZ)
DAY=$(date -u +%Y-%m-%d)
COMMAND="DURATION=$DURATION WARMUP=$WARMUP REPEAT=$REPEAT PIN=$PIN LINES=\"$LINES\" bench/static.sh"

log "nowait $NOWAIT_COMMIT, $NGINX_VERSION, $WRK_VERSION, PIN=$PIN, DURATION=$DURATION"

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
ROWS=()
for line in $LINES; do
    line_path "$line" >/dev/null
    for rp in 0 1; do
        rp_word=off
        [[ $rp == 1 ]] && rp_word=on
        # Alternate which server goes first, so that neither always runs
        # right after the other's load (page cache, CPU frequency, TIME_WAIT).
        order="nowait nginx"
        [[ $rp == 1 ]] && order="nginx nowait"
        declare -A fig=()
        for ((rep = 1; rep <= REPEAT; rep++)); do
            for server in $order; do
                log "$line reuseport=$rp_word: $server #$rep (wrk $(wrk_args "$line" "$DURATION"))"
                measure "$server" "$line" "$rp"
                log "  -> rps MB/s p50ms p99ms errors cpu0% cpu1%: $FIG"
                fig[$server]=$(best "$line" "${fig[$server]:-}" "$FIG")
            done
        done
        read -r n_rps n_mb n_p50 n_p99 n_err n_c0 n_c1 <<<"${fig[nowait]}"
        read -r g_rps g_mb g_p50 g_p99 g_err g_c0 g_c1 <<<"${fig[nginx]}"
        if [[ $line == large ]]; then
            n_val=$n_mb g_val=$g_mb
        else
            n_val=$(fmt_int "$n_rps") g_val=$(fmt_int "$g_rps")
        fi
        errs=""
        ((n_err + g_err > 0)) && errs=" (errors: nowait $n_err, nginx $g_err)"
        ROWS+=("| $(line_title "$line")$errs | $rp_word | $n_val | $g_val | **$(ratio "$n_val" "$g_val")** | $n_p50 / $n_p99 | $g_p50 / $g_p99 | $n_c0 / $n_c1 | $g_c0 / $g_c1 |")
        unset fig
    done
done

NGINX_NOTE="    # nginx's copy only: client_body_, proxy_, fastcgi_, uwsgi_, scgi_temp_path PREFIX/..._temp;"
TEMPLATE_SHOWN=${TEMPLATE//NGINX_ONLY/$NGINX_NOTE}
TEMPLATE_SHOWN=${TEMPLATE_SHOWN//REUSEPORT/[ reuseport]}
REPORT=$(
    cat <<EOF
# Static serving: nowait vs nginx

Run at $STAMP by \`bench/static.sh\`.

| line | reuseport | nowait | nginx | nowait/nginx | nowait p50 / p99 ms | nginx p50 / p99 ms | CPU0 / CPU1 busy % (nowait run) | CPU0 / CPU1 busy % (nginx run) |
|---|---|---|---|---|---|---|---|---|
$(printf '%s\n' "${ROWS[@]}")

MB/s is wrk's Transfer/sec (2^20 bytes per MB, response heads included).
$(if [[ $REPEAT -gt 1 ]]; then echo "Each figure is the best of $REPEAT runs (by throughput), the servers' runs interleaved."; fi)
CPU busy % is the whole CPU during the measured run, from /proc/stat: $(if [[ $PIN == split ]]; then echo "CPU0 is the server's, CPU1 wrk's; a CPU1 near 100 % means wrk, not the server, set the pace"; else echo "with PIN=none both CPUs are shared by server and wrk"; fi). It includes anything else running on the machine.

## Machine
- CPUs: $(nproc) ($CPU_MODEL)
- kernel: $(uname -sr)
- nginx: $NGINX_VERSION${NGINX_PKG:+ (Debian $NGINX_PKG)}
- nowait: commit $NOWAIT_COMMIT, release build
- wrk: $WRK_VERSION
- load average (1, 5, 15 min) at the start: $LOAD_BEFORE; at the end: $(cut -d' ' -f1-3 /proc/loadavg)
  (this run's own load is about 2: a figure taken at a higher load shared the CPUs)

## How
- command: \`$COMMAND\`
- wrk: \`wrk -t$WRK_THREADS -c$SMALL_CONNS -d$DURATION --latency\` for the small files and
  \`/ok\`, \`wrk -t$WRK_THREADS -c$LARGE_CONNS -d$DURATION --latency\` for the ${LARGE_MIB} MiB file;
  keep-alive; a ${WARMUP} unmeasured run before each measurement.
- CPUs: $(if [[ $PIN == split ]]; then echo "server (all its workers) on CPU $SERVER_CPUS, wrk on CPU $WRK_CPUS (\`taskset\`)"; else echo "no pinning: server and wrk share both CPUs"; fi).
- one server at a time, restarted for every measurement; the files are in the page cache.
- configuration (the same for both; PREFIX, DATA and PORT filled in):

\`\`\`nginx
$TEMPLATE_SHOWN
\`\`\`
EOF
)

printf '%s\n' "$REPORT"
if [[ -n $RESULTS_DIR ]]; then
    mkdir -p "$RESULTS_DIR"
    out=$RESULTS_DIR/static-$DAY-$HOST.md
    printf '%s\n' "$REPORT" >"$out"
    log "wrote ${out#"$REPO"/}"
fi
