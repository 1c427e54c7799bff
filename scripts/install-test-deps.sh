#!/usr/bin/env bash
# Installs what the black-box tests need: a real nginx 1.22 (Debian's
# nginx-light) that tests/differential.rs runs beside nowait, and Debian's
# Chromium for the status page's browser test.
#
# Idempotent: does nothing when /usr/sbin/nginx is already there. Must run as
# root (it uses apt-get). The tests start their own nginx processes on free
# loopback ports, so the system nginx service that the package starts is
# stopped and disabled again here: it would otherwise sit on port 80 and keep
# running after the tests.
set -euo pipefail

NGINX=/usr/sbin/nginx

log() { printf 'install-test-deps: %s\n' "$*"; }

if [[ $(id -u) -ne 0 ]]; then
    log "must run as root (apt-get install); try: sudo $0" >&2
    exit 1
fi

if [[ -x $NGINX ]]; then
    log "nginx already installed: $($NGINX -v 2>&1)"
else
    log "nginx missing: apt-get update"
    apt-get update
    log "installing nginx-light"
    DEBIAN_FRONTEND=noninteractive apt-get install -y nginx-light
    log "installed: $($NGINX -v 2>&1)"
fi

# Debian's Chromium, for the live status page's test in a real headless
# browser (tests/status_page.rs).
if command -v chromium >/dev/null 2>&1; then
    log "chromium already installed"
else
    log "installing chromium"
    apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 || {
        apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
    }
fi

# strace: tests/core_files.rs watches the server's posix_fadvise() calls
# (`read_ahead`), which leave no other trace outside the kernel.
if ! command -v strace >/dev/null 2>&1; then
    log "installing strace"
    apt-get install -y --no-install-recommends strace >/dev/null 2>&1 || {
        apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends strace
    }
fi

# openssl: tests/tls_names.rs asks OpenSSL 3.0 what cipher strings select
# and makes certificates for nginx (and scripts/tls-names.py freezes its
# answers for the unit tests).
if ! command -v openssl >/dev/null 2>&1; then
    log "installing openssl"
    apt-get install -y --no-install-recommends openssl >/dev/null 2>&1 || {
        apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openssl
    }
fi

# pebble: tests/acme.rs runs Let's Encrypt's test ACME server (and its
# pebble-challtestsrv as the DNS it validates names with) on loopback.
if ! command -v pebble >/dev/null 2>&1; then
    log "installing pebble"
    apt-get install -y --no-install-recommends pebble >/dev/null 2>&1 || {
        apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends pebble
    }
fi

# curl: tests/differential_tls.rs compares what a real TLS client (curl,
# besides openssl s_client) sees from nowait and from nginx.
if ! command -v curl >/dev/null 2>&1; then
    log "installing curl"
    apt-get install -y --no-install-recommends curl >/dev/null 2>&1 || {
        apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends curl
    }
fi

# The Perl modules nginx's own test suite uses in the files
# scripts/conformance.py runs (WebSocket framing for proxy_websocket.t;
# IO::Socket::SSL and Net::SSLeay for the ssl module's tests).
PERL_MODULES=(libprotocol-websocket-perl libio-socket-ssl-perl libnet-ssleay-perl)
missing=()
for p in "${PERL_MODULES[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    log "installing ${missing[*]}"
    apt-get install -y "${missing[@]}" >/dev/null 2>&1 || {
        apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
    }
fi

# libfuse2 and fusepy: the FUSE file system whose reads start failing on
# demand (tests/faults/eio_fs.py), for the read-error-mid-response test
# (device-mapper, which CI's kernel lacks, is tried besides where there).
if ! dpkg -s libfuse2 >/dev/null 2>&1; then
    log "installing libfuse2"
    apt-get install -y --no-install-recommends libfuse2 >/dev/null 2>&1 || {
        apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libfuse2
    }
fi
if ! python3 -c 'import fuse' >/dev/null 2>&1; then
    log "installing fusepy (PyPI)"
    python3 -m pip install --quiet --root-user-action=ignore fusepy
fi

# The package's postinst starts the service; stop it whether or not we
# installed it now, so that nothing holds port 80 or confuses a test.
log "stopping and disabling the system nginx service (tests start their own)"
service nginx stop >/dev/null 2>&1 || true
if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
    systemctl disable --now nginx >/dev/null 2>&1 || true
elif command -v update-rc.d >/dev/null 2>&1; then
    update-rc.d nginx disable >/dev/null 2>&1 || true
fi

# A master started by the package writes the default pid file; end exactly
# that process (and so its workers), never every nginx on the machine: test
# servers started by a concurrent `cargo test` must survive.
PIDFILE=/run/nginx.pid
if [[ -s $PIDFILE ]]; then
    pid=$(cat "$PIDFILE")
    if kill -0 "$pid" 2>/dev/null; then
        log "terminating system nginx master (pid $pid)"
        kill -TERM "$pid" || true
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        if kill -0 "$pid" 2>/dev/null; then
            log "nginx master $pid ignored SIGTERM: sending SIGKILL"
            kill -KILL "$pid" || true
        fi
    fi
    rm -f "$PIDFILE"
fi

log "done"
