#!/usr/bin/env bash
# Tests the Debian package on this machine, as an administrator would use it:
# install with dpkg, start, serve on port 80, reload, rotate the logs, stop,
# remove, purge. It needs root and changes the system (it installs and then
# purges the package nowait, and installs logrotate when missing), so
# scripts/test.sh does not run it.
#
#   sudo scripts/test-package.sh [PACKAGE.deb]    # default: builds one with scripts/package.sh
#
# With systemd running as PID 1 the unit is driven with systemctl. Without it
# (a container), the commands are read from the installed unit file and run
# as systemd would run them: ExecStartPre, ExecStart (Type=forking: the
# process id comes from PIDFile), ExecReload with $MAINPID, ExecStop.
# Port 80 must be free; the test stops nothing but what it started.
# KEEP=1 leaves the package installed when a check fails, to look at it.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=80
UNIT=nowait.service
PIDFILE=/run/nowait.pid
WAIT_TRIES=50 # × 0.1 s: how long a start, a reload or a log write may take
STOP_TRIES=150 # × 0.1 s: ExecStop's 5 s, then systemd's TimeoutStopSec=5 s, and slack

passed=0
installed=0
mainpid=

say() { printf 'test-package.sh: %s\n' "$*" >&2; }
fail() {
    say "FAIL: $*"
    printf '%d passed, 1 failed\n' "$passed"
    exit 1
}
ok() {
    passed=$((passed + 1))
    printf 'ok %d - %s\n' "$passed" "$*"
}
# check DESCRIPTION COMMAND...: one assertion.
check() {
    local what=$1
    shift
    if "$@"; then ok "$what"; else fail "$what"; fi
}
# poll COMMAND...: true once COMMAND is, within WAIT_TRIES.
poll() {
    local i
    for ((i = 0; i < WAIT_TRIES; i++)); do
        if "$@"; then return 0; fi
        sleep 0.1
    done
    return 1
}

cleanup() {
    local rc=$?
    if [[ -n $mainpid ]] && kill -0 "$mainpid" 2>/dev/null; then
        say "stopping the nowait this test started (pid $mainpid)"
        kill -TERM "$mainpid" 2>/dev/null || true
    fi
    if ((rc != 0 && installed)) && [[ ${KEEP:-0} != 1 ]]; then
        say "purging the package this test installed (KEEP=1 keeps it)"
        dpkg --purge nowait >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT

# --- preconditions ---------------------------------------------------------

[[ $(id -u) -eq 0 ]] || fail "needs root: it installs and purges the package nowait"
status=$(dpkg-query -W -f='${db:Status-Status}' nowait 2>/dev/null || true)
if [[ -n $status && $status != not-installed ]]; then
    fail "the package nowait is already on this machine (status \"$status\"): purge it first (dpkg --purge nowait)"
fi
port_taken() {
    if command -v ss >/dev/null; then
        [[ -n $(ss -Hltn "sport = :$PORT") ]]
    else
        (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null
    fi
}
if port_taken; then
    fail "port $PORT is taken on this machine (the package's default site listens there): free it and run again"
fi
if ! command -v logrotate >/dev/null; then
    say "installing logrotate (the package recommends it)"
    apt-get install -y -qq logrotate >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y -qq logrotate >/dev/null; }
fi
systemd=0
if [[ $(ps -p 1 -o comm=) == systemd && -d /run/systemd/system ]]; then
    systemd=1
fi

deb=${1:-}
if [[ -z $deb ]]; then
    deb=$(scripts/package.sh | tail -n 1)
fi
[[ -f $deb ]] || fail "no package at \"$deb\""
say "package $deb; systemd as PID 1: $([[ $systemd == 1 ]] && echo yes || echo no)"

# --- install ---------------------------------------------------------------

installed=1
check "dpkg -i installs the package" dpkg -i "$deb"

for f in /usr/sbin/nowait /etc/nowait/nowait.conf /etc/nowait/mime.types /etc/logrotate.d/nowait \
    /etc/nowait/fastcgi_params /etc/nowait/fastcgi.conf /etc/nowait/uwsgi_params /etc/nowait/scgi_params \
    /etc/nowait/snippets/fastcgi-php.conf \
    /usr/share/man/man8/nowait.8.gz /usr/share/nowait/html/index.html \
    /var/www/html/index.nowait-debian.html /var/log/nowait/access.log /var/log/nowait/error.log; do
    check "installed: $f" test -f "$f"
done
check "installed: /etc/nowait/conf.d/" test -d /etc/nowait/conf.d
unit=
for u in /usr/lib/systemd/system/$UNIT /lib/systemd/system/$UNIT; do
    [[ -f $u ]] && unit=$u && break
done
check "installed: the unit $UNIT" test -n "$unit"
check "the unit is enabled (multi-user.target wants it)" \
    test -L /etc/systemd/system/multi-user.target.wants/$UNIT
check "the logs are www-data:adm 0640, as nginx's" \
    test "$(stat -c '%U:%G %a' /var/log/nowait/access.log)" = "www-data:adm 640"
check "nowait -V names /etc/nowait/nowait.conf as its configuration" \
    grep -q -- '--conf-path=/etc/nowait/nowait.conf' <<<"$(/usr/sbin/nowait -V 2>&1)"
check "nowait -t finds and accepts the installed configuration" \
    grep -q 'configuration file /etc/nowait/nowait.conf test is successful' \
    <<<"$(/usr/sbin/nowait -t 2>&1)"
if command -v man >/dev/null; then
    check "man nowait shows the directive reference" \
        grep -q 'worker_processes' <<<"$(MANWIDTH=80 man nowait 2>/dev/null)"
fi

# --- drive the unit ----------------------------------------------------------

# unit_command KEY: the command of KEY= in the unit file, without a leading
# "-" (systemd's "failure is ignored" mark).
unit_command() {
    local line
    line=$(sed -n "s/^$1=//p" "$unit")
    [[ -n $line ]] || fail "the unit has no $1="
    printf '%s' "${line#-}"
}
# run_unit KEY: runs KEY='s command as systemd does, with $MAINPID set.
run_unit() {
    local cmd
    cmd=$(unit_command "$1")
    say "$1: $cmd"
    MAINPID=$mainpid sh -c "$cmd"
}
check "the unit is Type=forking with PIDFile=$PIDFILE" \
    grep -qx "PIDFile=$PIDFILE" "$unit"
check "the unit tests the configuration before starting (nowait -t)" \
    grep -q -- '-t -q' <<<"$(unit_command ExecStartPre)"
read_pid() { [[ -s $PIDFILE ]] && mainpid=$(<"$PIDFILE") && kill -0 "$mainpid" 2>/dev/null; }

if ((systemd)); then
    check "systemctl start $UNIT" systemctl start "$UNIT"
else
    check "ExecStartPre succeeds" run_unit ExecStartPre
    check "ExecStart succeeds (the parent exits 0 once the server is up)" run_unit ExecStart
fi
check "the server writes $PIDFILE and runs" poll read_pid
say "main pid $mainpid"

http() { curl --noproxy '*' -sS -m 5 "$@"; }
answers() { [[ $(http -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/") == 200 ]]; }
check "the default site answers 200 on port $PORT" poll answers
check "the index page is nowait's" \
    grep -q 'Welcome to nowait!' <<<"$(http "http://127.0.0.1:$PORT/index.nowait-debian.html")"
check "the Server header is nowait's" \
    grep -qi '^server: nowait' <<<"$(http -o /dev/null -D - "http://127.0.0.1:$PORT/")"
# The serving threads run as www-data (`user www-data;`), the main one as root.
thread_uids() { awk '/^Uid:/ {print $2}' /proc/"$mainpid"/task/*/status | sort -u; }
check "serving threads dropped to www-data" \
    grep -qx "$(id -u www-data)" <<<"$(thread_uids)"
check "the main thread kept root (for reloads)" \
    test "$(awk '/^Uid:/ {print $2}' /proc/"$mainpid"/status)" = 0

# --- reload ------------------------------------------------------------------

cat >/etc/nowait/conf.d/test-reload.conf <<'EOF'
server {
    listen 80;
    server_name reload.test;
    return 200 "reloaded\n";
}
EOF
reloaded() { [[ $(http -H 'Host: reload.test' "http://127.0.0.1:$PORT/") == reloaded ]]; }
not_reloaded() { ! reloaded; }
check "before the reload, conf.d/'s new server is not served" not_reloaded
if ((systemd)); then
    check "systemctl reload $UNIT" systemctl reload "$UNIT"
else
    check "ExecReload succeeds" run_unit ExecReload
fi
check "after the reload, the configuration in conf.d/ serves" poll reloaded
check "the reload kept the same main process" test "$(<"$PIDFILE")" = "$mainpid"
check "the default site still answers after the reload" answers

# --- log rotation --------------------------------------------------------------

logged() { grep -q "$1" /var/log/nowait/access.log 2>/dev/null; }
http -o /dev/null "http://127.0.0.1:$PORT/before-rotate" || fail "no answer to /before-rotate"
check "the access log records requests" poll logged /before-rotate
state=$(mktemp)
check "logrotate -f with the package's configuration" \
    logrotate -f -s "$state" /etc/logrotate.d/nowait
rm -f "$state"
check "the old log moved to access.log.1" grep -q /before-rotate /var/log/nowait/access.log.1
check "logrotate made a new access.log, www-data:adm 0640" \
    test "$(stat -c '%U:%G %a' /var/log/nowait/access.log)" = "www-data:adm 640"
http -o /dev/null "http://127.0.0.1:$PORT/after-rotate" || fail "no answer to /after-rotate"
check "after USR1 the server writes to the new access.log" poll logged /after-rotate
not_in_rotated() { ! grep -q /after-rotate /var/log/nowait/access.log.1; }
check "and no longer to the rotated one" not_in_rotated

# --- stop ----------------------------------------------------------------------

if ((systemd)); then
    check "systemctl stop $UNIT" systemctl stop "$UNIT"
else
    check "ExecStop succeeds" run_unit ExecStop
fi
stopped() { ! kill -0 "$mainpid" 2>/dev/null; }
WAIT_TRIES=$STOP_TRIES check "the server exits" poll stopped
mainpid=
check "the pid file is removed" test ! -e "$PIDFILE"
port_free() { ! port_taken; }
check "port $PORT is free again" port_free

# --- remove, then purge ----------------------------------------------------------

check "dpkg -r removes the package" dpkg -r nowait
check "removed: /usr/sbin/nowait" test ! -e /usr/sbin/nowait
check "remove keeps the configuration (conffiles)" test -f /etc/nowait/nowait.conf
check "dpkg --purge purges it" dpkg --purge nowait
installed=0
for f in /etc/nowait /usr/sbin/nowait /var/log/nowait /var/lib/nowait /etc/logrotate.d/nowait \
    /usr/share/nowait /usr/share/man/man8/nowait.8.gz /usr/share/doc/nowait "$unit" \
    /var/www/html/index.nowait-debian.html /etc/systemd/system/$UNIT \
    /etc/systemd/system/multi-user.target.wants/$UNIT; do
    check "purged: $f" test ! -e "$f" -a ! -L "$f"
done
unknown() { [[ $(dpkg-query -W -f='${db:Status-Status}' nowait 2>/dev/null) =~ ^(not-installed)?$ ]]; }
check "dpkg no longer knows the package" unknown

printf '%d passed, 0 failed\n' "$passed"
