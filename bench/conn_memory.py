#!/usr/bin/env python3
"""Memory per connection: nowait against nginx, in the same run, same config.

For each server in turn (never both at once), with one configuration both
read (2 workers, a small static file): start it, warm it with a few
requests, read its resident memory (VmRSS of /proc/PID/status; for nginx the
master's plus every worker's), then

1. open N connections that send nothing (accepted, waiting for a first
   byte) and read the memory again;
2. open N more, send one keep-alive request on each, read its whole
   response, keep the connection open, and read the memory again.

The growth per connection of each step is what the server holds for an idle
connection and for an idle keep-alive connection. Connections come from
loopback source addresses 127.0.0.2, 127.0.0.3, … (CONNS_PER_SOURCE each) so
that the client never runs out of source ports. The script raises its own
RLIMIT_NOFILE (and the servers', which inherit it; the configuration also
says `worker_rlimit_nofile`). Prints a Markdown table; writes nothing.

    bench/conn_memory.py                  # 10,000 connections (5,000 + 5,000)
    bench/conn_memory.py --large          # and 100,000 (50,000 + 50,000)
    bench/conn_memory.py --connections 2000 --servers nowait
"""

import argparse
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

# Loopback port both servers listen on (one at a time).
DEFAULT_PORT = 28361
# Connections opened from each source address (well below the ~28,000
# ephemeral ports of one address).
CONNS_PER_SOURCE = 20000
# How long a server may take to open its port, to exit, or to accept all
# the connections of a step; how long the memory must hold still before it
# is read.
START_TIMEOUT_S = 10
STOP_TIMEOUT_S = 10
SETTLE_TIMEOUT_S = 60
SETTLE_QUIET_S = 1.0
# Size of the static file served.
FILE_BYTES = 128
# Requests before the first reading, so that what is made lazily once is
# in the baseline.
WARM_REQUESTS = 200
# Descriptors beyond the connections (logs, listeners, epoll, pools).
FD_SLACK = 1024

TEMPLATE = """user nobody nogroup;
worker_processes 2;
worker_rlimit_nofile {nofile};
pid {prefix}/x.pid;
error_log {prefix}/error.log;
events {{
    worker_connections {worker_connections};
    accept_mutex off;
}}
http {{
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 300s;
    client_header_timeout 300s;
    keepalive_requests 100000;
{nginx_only}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root {data};
        location / {{ }}
    }}
}}
"""
NGINX_ONLY = "\n".join(
    f"    {kind}_temp_path {{prefix}}/{kind}_temp;"
    for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
)


def log(msg):
    print(f"conn_memory: {msg}", file=sys.stderr, flush=True)


def die(msg):
    log(f"error: {msg}")
    sys.exit(1)


def raise_nofile(want):
    """Raises this process's descriptor limit (soft and, as root, hard)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
            return
        except (ValueError, OSError) as e:
            die(f"RLIMIT_NOFILE: need {want}, hard limit {hard} ({e}): "
                "raise it (ulimit -Hn, or as root with CAP_SYS_RESOURCE)")
    if soft == resource.RLIM_INFINITY or soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def children(pid):
    """The pids whose parent is `pid`."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The command may hold spaces and parentheses: fields follow the last ')'.
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid:
            out.append(int(d))
    return out


def server_pids(pid):
    """The server's processes: nowait's one, nginx's master and workers."""
    return [pid] + children(pid)


def rss_kib(pids):
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def fds(pids):
    total = 0
    for p in pids:
        try:
            total += len(os.listdir(f"/proc/{p}/fd"))
        except OSError:
            pass
    return total


def settle(pid, want_fds):
    """Waits until the server holds `want_fds` descriptors (every connection
    accepted) and its memory stopped moving; returns its RSS in KiB."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while fds(server_pids(pid)) < want_fds:
        if time.monotonic() > deadline:
            die(f"server holds {fds(server_pids(pid))} descriptors, expected {want_fds}")
        time.sleep(0.1)
    last = rss_kib(server_pids(pid))
    while time.monotonic() < deadline:
        time.sleep(SETTLE_QUIET_S)
        now = rss_kib(server_pids(pid))
        if now == last:
            return now
        last = now
    return last


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def request(port, path):
    return f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode()


def read_response(sock, expect_len):
    """Reads one response with a body of `expect_len` bytes; returns it."""
    got = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            raise OSError("connection closed before the response ended")
        got += chunk
        end = got.find(b"\r\n\r\n")
        if end >= 0 and len(got) >= end + 4 + expect_len:
            return got


class Sources:
    """Source addresses 127.0.0.2, 127.0.0.3 … with CONNS_PER_SOURCE each."""

    def __init__(self):
        self.n = 0

    def next(self):
        i = self.n // CONNS_PER_SOURCE
        self.n += 1
        return f"127.0.{(i + 2) // 256}.{(i + 2) % 256}"


def connect(port, sources):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sources.next(), 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    return s


class Server:
    def __init__(self, name, binary, prefix):
        self.name, self.binary, self.prefix = name, binary, prefix
        self.proc = None

    def start(self, port):
        if port_open(port):
            die(f"port {port} is already in use")
        out = open(os.path.join(self.prefix, "stdout.log"), "wb")
        self.proc = subprocess.Popen(
            [self.binary, "-p", self.prefix, "-c", f"{self.prefix}/nginx.conf",
             "-g", "daemon off;"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if port_open(port):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        for f in ("stdout.log", "error.log"):
            try:
                sys.stderr.write(open(os.path.join(self.prefix, f)).read())
            except OSError:
                pass
        die(f"{self.name} did not open 127.0.0.1:{port}")

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log(f"{self.name} ignored SIGTERM for {STOP_TIMEOUT_S}s: SIGKILL")
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def measure(server, port, n):
    """Returns (baseline KiB, after N idle KiB, after N keep-alive KiB)."""
    server.start(port)
    pid = server.proc.pid
    sources = Sources()
    conns = []
    try:
        for _ in range(WARM_REQUESTS):
            with connect(port, sources) as s:
                s.sendall(request(port, "/small.html"))
                read_response(s, FILE_BYTES)
        time.sleep(0.5)
        base_fds = fds(server_pids(pid))
        base = settle(pid, base_fds)
        log(f"{server.name}: baseline {base} KiB, {base_fds} descriptors")
        t0 = time.monotonic()
        for _ in range(n):
            conns.append(connect(port, sources))
        idle = settle(pid, base_fds + n)
        log(f"{server.name}: {n} idle connections: {idle} KiB "
            f"({time.monotonic() - t0:.1f}s)")
        t0 = time.monotonic()
        req = request(port, "/small.html")
        for _ in range(n):
            s = connect(port, sources)
            conns.append(s)
            s.sendall(req)
            resp = read_response(s, FILE_BYTES)
            if not resp.startswith(b"HTTP/1.1 200"):
                die(f"{server.name}: {resp[:60]!r}")
        keep = settle(pid, base_fds + 2 * n)
        log(f"{server.name}: {n} idle keep-alive connections: {keep} KiB "
            f"({time.monotonic() - t0:.1f}s)")
        return base, idle, keep
    finally:
        for s in conns:
            s.close()
        server.stop()


def write_prefix(work, name, data, port, nofile, worker_connections):
    prefix = os.path.join(work, name)
    os.makedirs(prefix)
    conf = TEMPLATE.format(
        nofile=nofile, worker_connections=worker_connections, port=port,
        data=data, prefix=prefix,
        nginx_only=NGINX_ONLY.format(prefix=prefix) if name == "nginx" else "")
    with open(os.path.join(prefix, "nginx.conf"), "w") as f:
        f.write(conf)
    return prefix


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(here)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--connections", type=int, default=10000,
                    help="connections per run, half idle, half keep-alive (10000)")
    ap.add_argument("--large", action="store_true", help="also run with 100,000")
    ap.add_argument("--servers", default="nowait,nginx", help="nowait,nginx")
    ap.add_argument("--port", type=int, default=DEFAULT_PORT)
    ap.add_argument("--nowait-bin", default=os.environ.get("NOWAIT_BIN"),
                    help="instead of `cargo build --release`")
    ap.add_argument("--nginx-bin", default="/usr/sbin/nginx")
    args = ap.parse_args()
    if os.geteuid() != 0:
        die("run as root (both servers' workers run as nobody)")
    sizes = [args.connections] + ([100000] if args.large else [])
    servers = args.servers.split(",")
    nowait = args.nowait_bin
    if "nowait" in servers and not nowait:
        log("building nowait (cargo build --release)")
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=repo, check=True)
        target = os.environ.get("CARGO_TARGET_DIR", os.path.join(repo, "target"))
        nowait = os.path.join(target, "release", "nowait")
    binaries = {"nowait": nowait, "nginx": args.nginx_bin}

    work = tempfile.mkdtemp(prefix="nowait-connmem.")
    os.chmod(work, 0o755)
    try:
        data = os.path.join(work, "data")
        os.makedirs(data)
        with open(os.path.join(data, "small.html"), "wb") as f:
            f.write(b"a" * FILE_BYTES)
        os.chmod(data, 0o755)
        os.chmod(os.path.join(data, "small.html"), 0o644)
        rows = []
        for total in sizes:
            n = total // 2
            # Each worker may get every connection; the client holds them all.
            nofile = total + FD_SLACK
            raise_nofile(nofile)
            results = {}
            for name in servers:
                prefix = write_prefix(work, f"{name}-{total}", data, args.port,
                                      nofile, total + WARM_REQUESTS + 16)
                base, idle, keep = measure(Server(name, binaries[name], prefix),
                                           args.port, n)
                results[name] = ((idle - base) * 1024 / n, (keep - idle) * 1024 / n,
                                 (keep - base) / 1024)
            rows.append((total, n, results))
        print_table(rows, servers, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def print_table(rows, servers, args):
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    print("# Memory per connection: nowait vs nginx\n")
    cols = " | ".join(f"{s} idle B | {s} keep-alive B | {s} total MiB" for s in servers)
    ratio = " | nowait/nginx idle | nowait/nginx keep-alive" if len(servers) == 2 else ""
    print(f"| connections (idle + keep-alive) | {cols}{ratio} |")
    print("|---" * (1 + 3 * len(servers) + (2 if ratio else 0)) + "|")
    for total, n, res in rows:
        cells = " | ".join(f"{res[s][0]:.0f} | {res[s][1]:.0f} | {res[s][2]:.1f}"
                           for s in servers)
        extra = ""
        if ratio:
            def r(i):
                a, b = res["nowait"][i], res["nginx"][i]
                return f"{a / b:.2f}" if b > 0 else "n/a"
            extra = f" | **{r(0)}** | **{r(1)}**"
        print(f"| {total:,} ({n:,} + {n:,}) | {cells}{extra} |")
    print()
    print("Bytes of resident memory (VmRSS; nginx: master + workers) the server grew "
          "by per connection that sent nothing (idle) and per connection that was "
          f"served one keep-alive request of a {FILE_BYTES}-byte file and waits for "
          "the next (keep-alive); total: growth for all of them.")
    print(f"\nnowait commit {commit or 'unknown'}; "
          f"{subprocess.run([args.nginx_bin, '-v'], capture_output=True, text=True).stderr.strip()}; "
          f"load average {open('/proc/loadavg').read().split()[0]}; "
          f"command: `bench/conn_memory.py {' '.join(sys.argv[1:])}`")


if __name__ == "__main__":
    main()
