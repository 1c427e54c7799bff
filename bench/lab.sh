#!/bin/sh
# The slow-disk lab and experiments A, B, C, nginx beside nowait.
#   sudo bench/lab.sh --quick        # well under 10 minutes
#   sudo bench/lab.sh --full         # the brief's sizes (~25 minutes)
#   sudo bench/lab.sh --cleanup      # remove what a killed run left behind
# Other flags: bench/lab.sh --help. Method and outputs: bench/LAB.md.
set -eu
export PYTHONDONTWRITEBYTECODE=1
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
work="$here/work"

if [ "$(id -u)" != 0 ]; then
    echo "lab: needs root (loop devices, mounts, cgroups); run: sudo $0 $*" >&2
    exit 2
fi

# Whatever happens to the Python process (even SIGKILL), nothing stays behind.
cleanup() { python3 "$here/lab/lab.py" --cleanup --workdir "$work" || true; }
trap cleanup EXIT

case " $* " in
    *" --cleanup "*|*" --help "*|*" -h "*) exec python3 "$here/lab/lab.py" "$@" ;;
esac

# Progress: each phase of this script with its number and the time it
# began and took (the experiments print their own steps as "[lab …]").
phase_no=0
phase_at=$(date +%s)
phase() {
    now=$(date +%s)
    [ "$phase_no" -gt 0 ] && echo "[lab.sh $(date +%H:%M:%S)] phase $phase_no done in $((now - phase_at)) s"
    phase_no=$((phase_no + 1))
    phase_at=$now
    echo "[lab.sh $(date +%H:%M:%S)] phase $phase_no/4: $*"
}

phase "tools (wrk, nginx-light, oha)"
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
[ -x /usr/sbin/nginx ] || { apt-get update -qq && apt-get install -y -qq nginx-light; }
if [ ! -x "$work/tools/bin/oha" ]; then
    cargo install oha --locked --root "$work/tools"
fi
phase "release build"
: "${CARGO_TARGET_DIR:=$repo/target}"
export CARGO_TARGET_DIR
(cd "$repo" && cargo build --release --quiet)

phase "lab and experiments"
# Python in the background so a SIGTERM to this script reaches it at once
# (a shell runs its traps only after a foreground child ends).
python3 "$here/lab/lab.py" --workdir "$work" "$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' INT TERM HUP
rc=0
while kill -0 "$child" 2>/dev/null; do
    wait "$child" && rc=0 || rc=$?
done
phase "teardown (exit $rc)"
exit "$rc"
