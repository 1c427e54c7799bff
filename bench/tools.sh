# Shared by the benchmark scripts (sourced, not run): logging, and the
# tools and binaries a benchmark needs, installed or built when missing.
# The sourcing script sets SCRIPT (its name, for log lines) and REPO, and
# may set NGINX_BIN and NOWAIT_BIN.

log() { printf '%s: %s\n' "$SCRIPT" "$*" >&2; }
die() { log "error: $*"; exit 1; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# await_start PID PORT PREFIX NAME: waits (START_TIMEOUT_S) until PORT
# accepts; if PID ends first or time runs out, shows PREFIX's logs and dies.
await_start() {
    local i
    for ((i = 0; i < ${START_TIMEOUT_S:-30} * 20; i++)); do
        port_open "$2" && return 0
        kill -0 "$1" 2>/dev/null || break
        sleep 0.05
    done
    cat "$3/stdout.log" "$3/error.log" >&2 2>/dev/null || true
    die "$4 did not open 127.0.0.1:$2"
}

stop_pid() { # stop_pid PID [SIGNAL]: signal (TERM), wait up to STOP_TIMEOUT_S, SIGKILL if it lingers
    local pid=$1 sig=${2:-TERM} i
    kill "-$sig" "$pid" 2>/dev/null || true
    for ((i = 0; i < ${STOP_TIMEOUT_S:-10} * 20; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "process $pid ignored SIG$sig for ${STOP_TIMEOUT_S:-10}s: SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

need_tool() { # need_tool COMMAND DEBIAN-PACKAGE
    command -v "$1" >/dev/null 2>&1 && return 0
    [[ $(id -u) -eq 0 ]] || die "$1 missing (apt-get install $2, as root)"
    log "$1 missing: installing $2"
    apt-get update >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y "$2" >/dev/null
    command -v "$1" >/dev/null 2>&1 || die "$1 still missing after installing $2"
}

# wrk, curl, taskset and nginx installed; NGINX_BIN resolved; NOWAIT_BIN
# built (release) unless given.
need_bench_tools() {
    need_tool wrk wrk
    need_tool curl curl
    need_tool taskset util-linux
    if ! command -v "$NGINX_BIN" >/dev/null 2>&1; then
        [[ -x $REPO/scripts/install-test-deps.sh ]] || die "nginx missing"
        "$REPO/scripts/install-test-deps.sh" >&2
    fi
    NGINX_BIN=$(command -v "$NGINX_BIN")
    if [[ -z ${NOWAIT_BIN:-} ]]; then
        log "building nowait (cargo build --release)"
        (cd "$REPO" && cargo build --release --quiet) || die "cargo build failed"
        NOWAIT_BIN=${CARGO_TARGET_DIR:-$REPO/target}/release/nowait
    fi
    [[ -x $NOWAIT_BIN ]] || die "no nowait binary at $NOWAIT_BIN"
}
