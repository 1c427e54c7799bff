#!/usr/bin/env bash
# Reverse-proxy benchmark: nowait against nginx as the proxy, in the same
# run, on this machine, with wrk over loopback, in front of one origin that
# both talk to: nginx itself, answering `return 200` with a small body and a
# 1 MiB file. See bench/README.md for what each line measures.
#
# Environment (all optional):
#   DURATION=10s     length of each measured wrk run (3s for a quick check)
#   WARMUP=1s        unmeasured wrk run before each measurement (0 = none)
#   REPEAT=1         measurements per proxy and line, interleaved; the best
#                    one is reported (noise on a shared machine only slows)
#   PIN=split        split: proxy on CPU 0, origin and wrk on CPU 1;
#                    none: no pinning
#   PORT=28351       loopback port the proxy listens on (one at a time)
#   ORIGIN_PORT=28352  loopback port of the origin
#   LINES="..."      subset of: small large (default: both)
#   NOWAIT_BIN=...   a nowait binary to use instead of `cargo build --release`
#   NGINX_BIN=nginx  the nginx to compare with (and the origin)
#   RESULTS_DIR=bench/results   where the Markdown report goes ("" = none)
#
# Everything listens on 127.0.0.1 only. The origin runs for the whole
# script; the proxies run one at a time: each is started, checked with
# curl, measured with wrk (bounded by -d and by `timeout`), and stopped
# before the next one starts.
set -euo pipefail

DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-1s}
REPEAT=${REPEAT:-1}
PIN=${PIN:-split}
PORT=${PORT:-28351}
ORIGIN_PORT=${ORIGIN_PORT:-28352}
LINES=${LINES:-small large}
NGINX_BIN=${NGINX_BIN:-nginx}

# wrk parameters per kind of line: threads and connections.
WRK_THREADS=2
SMALL_CONNS=64
LARGE_CONNS=8
# What the origin serves: a small `return 200` body and a file.
SMALL_BYTES=1024
LARGE_BYTES=$((1 << 20))
# Idle connections each proxy worker keeps to the origin.
KEEPALIVE=32
# How long a server may take to open its port or to exit.
START_TIMEOUT_S=10
STOP_TIMEOUT_S=10

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
RESULTS_DIR=${RESULTS_DIR-$REPO/bench/results}

SCRIPT=proxy.sh
# shellcheck source=bench/tools.sh
source "$HERE/tools.sh"
need_bench_tools

case $PIN in
    split)
        (($(nproc) >= 2)) || die "PIN=split needs 2 CPUs"
        PROXY_CPUS=0
        OTHER_CPUS=1
        ;;
    none) ;;
    *) die "PIN must be split or none" ;;
esac

# --- data and prefixes -------------------------------------------------------

WORK=$(mktemp -d -t nowait-bench-proxy.XXXXXX)
PROXY_PID=
ORIGIN_PID=
cleanup() {
    [[ -n $PROXY_PID ]] && stop_pid "$PROXY_PID"
    [[ -n $ORIGIN_PID ]] && stop_pid "$ORIGIN_PID"
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Workers run as nobody: everything they read must be world-readable.
chmod 755 "$WORK"
DATA=$WORK/data
mkdir -p "$DATA"
head -c $LARGE_BYTES /dev/urandom >"$DATA/large.bin"
chmod 755 "$DATA"
chmod 644 "$DATA"/*
cat "$DATA"/* >/dev/null
SMALL_BODY=$(head -c $SMALL_BYTES /dev/zero | tr '\0' 's')

NGINX_TEMP='    client_body_temp_path PREFIX/client_body_temp;
    proxy_temp_path PREFIX/proxy_temp;
    fastcgi_temp_path PREFIX/fastcgi_temp;
    uwsgi_temp_path PREFIX/uwsgi_temp;
    scgi_temp_path PREFIX/scgi_temp;'

# The origin: nginx, one worker, keep-alive without limit.
ORIGIN_TEMPLATE="user nobody nogroup;
worker_processes 1;
pid PREFIX/x.pid;
error_log PREFIX/error.log;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    sendfile on;
$NGINX_TEMP
    server {
        listen 127.0.0.1:$ORIGIN_PORT;
        root $DATA;
        location = /small { return 200 \"$SMALL_BODY\"; }
        location = /large.bin { }
    }
}"

# The one proxy configuration both proxies get; NGINX_ONLY holds lines
# that nowait does not need (nginx's other modules' temp paths).
TEMPLATE="user nobody nogroup;
worker_processes 2;
pid PREFIX/x.pid;
error_log PREFIX/error.log;
events {
    worker_connections 4096;
    accept_mutex off;
}
http {
    access_log off;
    keepalive_requests 100000;
NGINX_ONLY
    upstream origin {
        server 127.0.0.1:$ORIGIN_PORT;
        keepalive $KEEPALIVE;
    }
    server {
        listen 127.0.0.1:$PORT;
        location / {
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
        }
    }
}"

# make_prefix NAME TEMPLATE EXTRA: writes PREFIX/nginx.conf, prints PREFIX.
make_prefix() {
    local prefix=$WORK/$1
    mkdir -p "$prefix"
    local conf=${2//NGINX_ONLY/$3}
    conf=${conf//PREFIX/$prefix}
    printf '%s\n' "$conf" >"$prefix/nginx.conf"
    echo "$prefix"
}

# --- servers -----------------------------------------------------------------


pinned() { # pinned CPUS COMMAND...: exec COMMAND on CPUS (as is with PIN=none)
    local cpus=$1
    shift
    if [[ -n $cpus ]]; then exec taskset -c "$cpus" "$@"; else exec "$@"; fi
}

# start BIN PREFIX PORT CPUS: starts a server, prints its pid once it listens.
STARTED=
start() {
    port_open "$3" && die "port $3 is already in use"
    (pinned "$4" "$1" -p "$2" -c "$2/nginx.conf" -g 'daemon off;') >"$2/stdout.log" 2>&1 &
    STARTED=$!
    await_start "$STARTED" "$3" "$2" "$1"
}

stop_proxy() {
    [[ -n $PROXY_PID ]] || return 0
    stop_pid "$PROXY_PID"
    PROXY_PID=
    local i
    for ((i = 0; i < STOP_TIMEOUT_S * 20; i++)); do
        port_open "$PORT" || return 0
        sleep 0.05
    done
    die "port $PORT still open after the proxy exited"
}

# --- lines -------------------------------------------------------------------

line_path() {
    case $1 in
        small) echo /small ;;
        large) echo /large.bin ;;
        *) die "unknown line $1" ;;
    esac
}
line_size() { if [[ $1 == large ]]; then echo $LARGE_BYTES; else echo $SMALL_BYTES; fi; }
line_conns() { if [[ $1 == large ]]; then echo $LARGE_CONNS; else echo $SMALL_CONNS; fi; }
line_title() {
    case $1 in
        small) echo "\`return 200\` of $SMALL_BYTES B, req/s" ;;
        large) echo "1 MiB file, req/s" ;;
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
        *) echo "$d" ;;
    esac
}

cpu_ticks() {
    awk '/^cpu[0-9]+ / { idle = $5 + $6; t = 0; for (i = 2; i <= 9; i++) t += $i
                         printf "%s %d %d ", $1, t - idle, t }' /proc/stat
}
cpu_busy() {
    awk -v a="$1" -v b="$2" -v c="cpu$3" 'BEGIN {
        na = split(a, x, " "); split(b, y, " ")
        for (i = 1; i <= na; i += 3) if (x[i] == c) {
            dt = y[i + 2] - x[i + 2]
            printf "%.0f", (dt > 0 ? 100 * (y[i + 1] - x[i + 1]) / dt : 0)
        }
    }'
}

# CPU time (user + system, clock ticks) of a process and its descendants:
# the proxy's whole tree (nginx's master and workers; nowait and its
# privileged helper).
CLK_TCK=$(getconf CLK_TCK)
tree_pids() { # tree_pids PID: PID and every descendant
    local pids=$1 all=$1 next p
    while [[ -n $pids ]]; do
        next=""
        for p in $pids; do next+=" $(ps -o pid= --ppid "$p" 2>/dev/null | tr '\n' ' ')"; done
        next=$(echo $next)
        all+=" $next"
        pids=$next
    done
    echo $all
}
# tree_field PID FIELDS: the sum of /proc/PID/stat's FIELDS ("$14 + $15"
# for user + system ticks, "$15" for system alone) over the tree.
tree_field() {
    local p
    for p in $(tree_pids "$1"); do awk "{ print $2 }" "/proc/$p/stat" 2>/dev/null; done |
        awk '{ s += $1 } END { print s + 0 }'
}
tree_ticks() { tree_field "$1" '$14 + $15'; }
# The same tree's system ticks alone (stime): the kernel's share of what
# the proxy spends.
tree_sys_ticks() { tree_field "$1" '$15'; }
# TCP segments sent by the whole machine so far (/proc/net/snmp OutSegs):
# the proxy's, the origin's and wrk's, per request the same count for both
# proxies when their TCP traffic is the same.
tcp_out_segs() {
    awk '$1 == "Tcp:" { if (!n) { for (i = 1; i <= NF; i++) if ($i == "OutSegs") col = i; n = 1 } else print $col }' /proc/net/snmp
}
# per_request BEFORE AFTER WRK_OUTPUT: (AFTER - BEFORE) per completed request.
per_request() {
    local n
    n=$(awk '/requests in/ { print $1 }' "$3")
    awk -v a="$1" -v b="$2" -v n="$n" 'BEGIN { if (n > 0) printf "%.2f", (b - a) / n; else print "n/a" }'
}
# share PART_BEFORE PART_AFTER WHOLE_BEFORE WHOLE_AFTER: the part's percent.
share() {
    awk -v a="$1" -v b="$2" -v c="$3" -v d="$4" 'BEGIN { if (d > c) printf "%.0f", (b - a) * 100 / (d - c); else print "n/a" }'
}

# cpu_per_request TICKS_BEFORE TICKS_AFTER WRK_OUTPUT: microseconds of the
# proxy's CPU per completed request.
cpu_per_request() {
    local n
    n=$(awk '/requests in/ { print $1 }' "$3")
    awk -v a="$1" -v b="$2" -v n="$n" -v hz="$CLK_TCK" \
        'BEGIN { if (n > 0) printf "%.2f", (b - a) * 1e6 / hz / n; else print "n/a" }'
}

run_wrk() { # run_wrk LINE DURATION OUTFILE
    local limit=$(($(seconds "$2") + 30))
    # shellcheck disable=SC2046
    (pinned "${OTHER_CPUS:-}" timeout "$limit" wrk $(wrk_args "$1" "$2")) >"$3" 2>&1 ||
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

# measure PROXY LINE: leaves the parsed figures in $FIG.
FIG=
measure() {
    local proxy=$1 line=$2 prefix extra='' bin=$NOWAIT_BIN got
    if [[ $proxy == nginx ]]; then
        extra=$NGINX_TEMP
        bin=$NGINX_BIN
    fi
    prefix=$(make_prefix "$proxy-$line" "$TEMPLATE" "$extra")
    start "$bin" "$prefix" "$PORT" "${PROXY_CPUS:-}"
    PROXY_PID=$STARTED
    got=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' \
        "http://127.0.0.1:$PORT$(line_path "$line")") || got="curl failed"
    if [[ $got != "200 $(line_size "$line")" ]]; then
        cat "$prefix/error.log" >&2 2>/dev/null || true
        die "$proxy $(line_path "$line"): expected 200 $(line_size "$line"), got $got"
    fi
    if [[ $WARMUP != 0 ]]; then
        run_wrk "$line" "$WARMUP" "$prefix/warmup.txt"
    fi
    local before after own_before own_after sys_before sys_after segs_before segs_after
    before=$(cpu_ticks)
    own_before=$(tree_ticks "$PROXY_PID")
    sys_before=$(tree_sys_ticks "$PROXY_PID")
    segs_before=$(tcp_out_segs)
    run_wrk "$line" "$DURATION" "$prefix/wrk-$line.txt"
    segs_after=$(tcp_out_segs)
    sys_after=$(tree_sys_ticks "$PROXY_PID")
    own_after=$(tree_ticks "$PROXY_PID")
    after=$(cpu_ticks)
    stop_proxy
    # Fields: rps MB/s p50 p99 errors cpu0% cpu1% kernel-share% segments/request cpu-us/request
    FIG="$(parse_wrk "$prefix/wrk-$line.txt") $(cpu_busy "$before" "$after" 0) $(cpu_busy "$before" "$after" 1) $(share "$sys_before" "$sys_after" "$own_before" "$own_after") $(per_request "$segs_before" "$segs_after" "$prefix/wrk-$line.txt") $(cpu_per_request "$own_before" "$own_after" "$prefix/wrk-$line.txt")"
}

best() { # best OLD NEW: whichever has the higher req/s
    [[ -z $1 ]] && { echo "$2"; return; }
    awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); print (y[1] + 0 > x[1] + 0 ? b : a) }'
}
median() { # median NUMBERS...: the middle one (the mean of the two middle ones)
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# paired_median A-LIST B-LIST: the median of the ratios A[i]/B[i] of runs
# made back to back (space-separated lists of the same length).
paired_median() {
    # shellcheck disable=SC2046 # the ratios are space-separated numbers
    median $(awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, " "); split(b, y, " "); for (i = 1; i <= n; i++) if (y[i] > 0) print x[i] / y[i] }')
}
reverse_pair() { [[ $1 == "nowait nginx" ]] && echo "nginx nowait" || echo "nowait nginx"; }
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
COMMAND="DURATION=$DURATION WARMUP=$WARMUP REPEAT=$REPEAT PIN=$PIN LINES=\"$LINES\" bench/proxy.sh"

log "nowait $NOWAIT_COMMIT, $NGINX_VERSION, $WRK_VERSION, PIN=$PIN, DURATION=$DURATION"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

ORIGIN_PREFIX=$(make_prefix origin "$ORIGIN_TEMPLATE" "")
start "$NGINX_BIN" "$ORIGIN_PREFIX" "$ORIGIN_PORT" "${OTHER_CPUS:-}"
ORIGIN_PID=$STARTED

ROWS=()
RUNS=()
order="nowait nginx"
for line in $LINES; do
    line_path "$line" >/dev/null
    declare -A fig=() runs=() cpus=() kern=() segs=()
    for ((rep = 1; rep <= REPEAT; rep++)); do
        # Each pair of runs in the other order than the last (ABBA): a
        # machine whose speed drifts favours neither proxy within a pair.
        pair=$order
        ((rep % 2 == 0)) && pair=$(reverse_pair "$order")
        for proxy in $pair; do
            log "$line: $proxy #$rep (wrk $(wrk_args "$line" "$DURATION"))"
            measure "$proxy" "$line"
            log "  -> rps MB/s p50ms p99ms errors cpu0% cpu1% kernel% segs/req proxy-cpu-us/req: $FIG"
            fig[$proxy]=$(best "${fig[$proxy]:-}" "$FIG")
            runs[$proxy]+="$(fmt_int "${FIG%% *}") "
            cpus[$proxy]+="${FIG##* } "
            kern[$proxy]+="$(awk '{ print $8 }' <<<"$FIG") "
            segs[$proxy]+="$(awk '{ print $9 }' <<<"$FIG") "
        done
    done
    # Alternate which proxy goes first from one line to the next.
    order=$(reverse_pair "$order")
    read -r n_rps n_mb n_p50 n_p99 n_err n_c0 n_c1 _ <<<"${fig[nowait]}"
    read -r g_rps g_mb g_p50 g_p99 g_err g_c0 g_c1 _ <<<"${fig[nginx]}"
    # shellcheck disable=SC2086 # the runs are space-separated numbers
    n_cpu=$(median ${cpus[nowait]}) g_cpu=$(median ${cpus[nginx]})
    # shellcheck disable=SC2086 # the runs are space-separated numbers
    n_kern=$(median ${kern[nowait]}) g_kern=$(median ${kern[nginx]})
    # shellcheck disable=SC2086 # the runs are space-separated numbers
    n_segs=$(median ${segs[nowait]}) g_segs=$(median ${segs[nginx]})
    errs=""
    ((n_err + g_err > 0)) && errs=" (errors: nowait $n_err, nginx $g_err)"
    # shellcheck disable=SC2086 # the runs are space-separated numbers
    n_med=$(median ${runs[nowait]}) g_med=$(median ${runs[nginx]})
    paired=$(awk -v r="$(paired_median "${runs[nowait]}" "${runs[nginx]}")" 'BEGIN { printf "%.2f", r }')
    ROWS+=("| $(line_title "$line")$errs | $(fmt_int "$n_rps") | $(fmt_int "$g_rps") | **$(ratio "$n_rps" "$g_rps")** | $(ratio "$n_med" "$g_med") | **$paired** | $n_p99 | $g_p99 | **$(ratio "$n_p99" "$g_p99")** | $n_cpu / $g_cpu | **$(ratio "$g_cpu" "$n_cpu")** | $n_kern% / $g_kern% | $n_segs / $g_segs | $n_mb / $g_mb | $n_c0 / $n_c1 | $g_c0 / $g_c1 |")
    RUNS+=("- $(line_title "$line"): nowait ${runs[nowait]% }; nginx ${runs[nginx]% } req/s; proxy CPU µs per request: nowait ${cpus[nowait]% }; nginx ${cpus[nginx]% }")
    unset fig runs cpus kern segs
done

NGINX_NOTE="    # nginx's copy only: client_body_, proxy_, fastcgi_, uwsgi_, scgi_temp_path PREFIX/..._temp;"
TEMPLATE_SHOWN=${TEMPLATE//NGINX_ONLY/$NGINX_NOTE}
SMALL_NOTE="s…s ($SMALL_BYTES bytes)"
ORIGIN_SHOWN=${ORIGIN_TEMPLATE//$SMALL_BODY/$SMALL_NOTE}
ORIGIN_SHOWN=${ORIGIN_SHOWN//$WORK/WORK} # no path of the machine in the report
REPORT=$(
    cat <<EOF
# Reverse proxy: nowait vs nginx

Run at $STAMP by \`bench/proxy.sh\`.

| line | nowait req/s | nginx req/s | req/s nowait/nginx | median req/s nowait/nginx | paired req/s nowait/nginx (median) | nowait p99 ms | nginx p99 ms | p99 nowait/nginx | proxy CPU µs/request nowait / nginx (median) | requests per CPU-second nowait/nginx | proxy's kernel share of its CPU nowait / nginx (median) | TCP segments sent per request, whole machine, nowait / nginx run (median) | MB/s nowait / nginx | CPU0 / CPU1 busy % (nowait run) | CPU0 / CPU1 busy % (nginx run) |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
$(printf '%s\n' "${ROWS[@]}")

A req/s ratio above 1, a p99 ratio below 1 and a requests-per-CPU-second ratio above 1 favour nowait.
The kernel share is the proxy's system time over its user and system time in the measured run (its process tree, /proc/PID/stat). TCP segments per request are the machine's TcpOutSegs (/proc/net/snmp) over the run divided by the requests wrk completed: the proxy's, the origin's and wrk's segments together, the same for both proxies when their TCP traffic is.
The proxy's CPU per request is its own user and system time (its whole process tree, from /proc/PID/stat) over the measured run, divided by the requests wrk completed: how much work each proxy does per request whichever side of the machine saturates first. With PIN=split the origin and wrk share one CPU, and when that CPU is full (CPU1 near 100%) req/s is theirs, not the proxy's.
$(if [[ $REPEAT -gt 1 ]]; then echo "Each figure is the best of $REPEAT runs (by req/s), the proxies' runs interleaved in pairs, each pair in the other order than the last; the median column compares the middle runs, the paired column is the median of each pair's ratio (on a machine whose speed drifts from minute to minute, the steadiest of the three). Every run's req/s, in order of the pairs:"; printf '%s\n' "${RUNS[@]}"; fi)
CPU busy % is the whole CPU during the measured run, from /proc/stat: $(if [[ $PIN == split ]]; then echo "CPU0 is the proxy's, CPU1 is shared by the origin and wrk"; else echo "with PIN=none everything shares both CPUs"; fi). It includes anything else running on the machine.

## Machine
- CPUs: $(nproc) ($CPU_MODEL)
- kernel: $(uname -sr)
- nginx: $NGINX_VERSION${NGINX_PKG:+ (Debian $NGINX_PKG)}, as the origin and as the reference proxy
- nowait: commit $NOWAIT_COMMIT, release build
- wrk: $WRK_VERSION
- load average (1, 5, 15 min) at the start: $LOAD_BEFORE; at the end: $(cut -d' ' -f1-3 /proc/loadavg)

## How
- command: \`$COMMAND\`
- wrk: \`wrk -t$WRK_THREADS -c$SMALL_CONNS -d$DURATION --latency\` for the small body,
  \`wrk -t$WRK_THREADS -c$LARGE_CONNS -d$DURATION --latency\` for the 1 MiB file; keep-alive;
  $(if [[ $WARMUP != 0 ]]; then echo "a $WARMUP unmeasured run before each measurement"; else echo "no warm-up run"; fi).
- CPUs: $(if [[ $PIN == split ]]; then echo "the proxy (all its workers) on CPU $PROXY_CPUS; the origin and wrk on CPU $OTHER_CPUS (\`taskset\`)"; else echo "no pinning"; fi).
- the origin runs throughout; one proxy at a time, restarted for every measurement.
- the proxies' configuration (the same for both; PREFIX filled in):

\`\`\`nginx
$TEMPLATE_SHOWN
\`\`\`

- the origin's:

\`\`\`nginx
$ORIGIN_SHOWN
\`\`\`
EOF
)

printf '%s\n' "$REPORT"
if [[ -n $RESULTS_DIR ]]; then
    mkdir -p "$RESULTS_DIR"
    # A report of the same day is never overwritten: -2, -3, ... follow.
    out=$RESULTS_DIR/proxy-$DAY-$HOST.md
    n=2
    while [[ -e $out ]]; do
        out=$RESULTS_DIR/proxy-$DAY-$HOST-$n.md
        n=$((n + 1))
    done
    printf '%s\n' "$REPORT" >"$out"
    log "wrote ${out#"$REPO"/}"
fi
