#!/usr/bin/env python3
"""TLS benchmark: nowait against nginx, in the same run, on this machine.

Both servers get one configuration (2 workers, the repository's test
certificates: RSA-2048 and ECDSA P-256), run one at a time on CPU 0 while
the clients run on CPU 1 (`taskset`), and take turns in pairs (ABBA), each
run a fresh start. Lines:

- **full handshakes per second**, RSA-2048 and ECDSA P-256 (TLS 1.3, no
  resumption): wrk sending `Connection: close`, so every request is a new
  connection and a full handshake; also per CPU-second of the server (its
  user + system time from /proc over the run);
- **resumed handshakes per second** (tickets, and the session cache with
  tickets off, TLS 1.2): `openssl s_time -reuse`, two processes;
- **keep-alive requests per second** over TLS for a 1 KB and a 1 MB file
  (wrk, `-c 64` and `-c 8`);
- **memory per idle TLS connection**: N connections opened, handshaken and
  left waiting for their next request; the servers' resident memory
  before and after, per connection;
- **a handshake storm**: a keep-alive client at a constant rate (oha
  `-q 200 --latency-correction`, TLS, 10 connections), its p99 alone and
  while wrk opens new RSA connections as fast as it can; for nowait also
  the loop turns' p99 during the storm (its status page). The storming wrk
  runs at nice 19 on the clients' CPU: it still takes all of that CPU the
  measuring client leaves, but the measuring client is not queued behind
  it, so the p99 shows the server's stall, not the load generator's.

Writes bench/results/tls-DATE-HOST.md (never overwriting a report of the
same day) and prints it. Needs wrk, openssl, oha (built into the lab's tool
folder by bench/lab.sh, or on PATH) and root (servers run as nobody).

    bench/tls.py                 # DURATION 10 s, 3 pairs
    bench/tls.py --quick         # 3 s, 1 pair
"""

import argparse
import datetime
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "lab"))

import conn_memory  # noqa: E402
import status  # noqa: E402

PORT = 28371
CERTS = os.path.join(REPO, "tests", "tls")
SERVER_CPU = "0"
CLIENT_CPU = "1"
KB = b"k" * 1024

CONF = """user nobody nogroup;
worker_processes 2;
worker_rlimit_nofile 20000;
pid {prefix}/x.pid;
error_log {prefix}/error.log;
events {{ worker_connections 8192; accept_mutex off; }}
http {{
    default_type application/octet-stream;
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    client_header_timeout 300s;
{nginx_only}
    ssl_protocols {protocols};
    ssl_session_cache {cache};
    ssl_session_tickets {tickets};
    server {{
        listen 127.0.0.1:{port} ssl backlog=4096;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        root {data};
{nowait_only}
    }}
}}
"""
NGINX_ONLY = "\n".join(
    f"    {kind}_temp_path {{prefix}}/{kind}_temp;"
    for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
NOWAIT_ONLY = "        location = /nowait_status { nowait_status; }"


def log(msg):
    print(f"tls.py: {msg}", file=sys.stderr, flush=True)


class Run:
    """One server started on CPU 0 with one configuration."""

    def __init__(self, kind, work, data, cert="localhost-rsa", protocols="TLSv1.2 TLSv1.3",
                 cache="off", tickets="off"):
        self.kind = kind
        self.prefix = tempfile.mkdtemp(prefix=f"{kind}-", dir=work)
        os.chmod(self.prefix, 0o755)
        conf = CONF.format(
            prefix=self.prefix, port=PORT, data=data, protocols=protocols, cache=cache,
            tickets=tickets, cert=os.path.join(CERTS, cert + ".crt"),
            key=os.path.join(CERTS, cert + ".key"),
            nginx_only=NGINX_ONLY.format(prefix=self.prefix) if kind == "nginx" else "",
            nowait_only=NOWAIT_ONLY if kind == "nowait" else "")
        path = os.path.join(self.prefix, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf)
        binary = ARGS.nowait if kind == "nowait" else "/usr/sbin/nginx"
        self.proc = subprocess.Popen(
            ["taskset", "-c", SERVER_CPU, binary, "-p", self.prefix + "/", "-c", path,
             "-g", "daemon off;"],
            stdout=open(os.path.join(self.prefix, "stdout.log"), "w"), stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while not conn_memory.port_open(PORT):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"{kind} did not start: "
                                   + open(os.path.join(self.prefix, "stdout.log")).read()
                                   + open(os.path.join(self.prefix, "error.log")).read())
            time.sleep(0.05)

    def pids(self):
        return conn_memory.server_pids(self.proc.pid)

    def cpu_ticks(self):
        total = 0
        for p in self.pids():
            try:
                with open(f"/proc/{p}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
            except OSError:
                pass
        return total

    def status(self):
        ctx = ssl._create_unverified_context()
        with socket.create_connection(("127.0.0.1", PORT)) as s:
            with ctx.wrap_socket(s, server_hostname="localhost") as t:
                t.sendall(b"GET /nowait_status HTTP/1.0\r\nHost: localhost\r\n\r\n")
                data = b""
                while True:
                    c = t.recv(65536)
                    if not c:
                        break
                    data += c
        return data.split(b"\r\n\r\n", 1)[1].decode()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        deadline = time.time() + 10
        while conn_memory.port_open(PORT) and time.time() < deadline:
            time.sleep(0.05)


def client(*cmd, timeout=120):
    return subprocess.run(["taskset", "-c", CLIENT_CPU, *cmd], capture_output=True, text=True,
                          timeout=timeout)


def wrk(path, conns, seconds, close=False):
    args = ["wrk", "-t2", f"-c{conns}", f"-d{seconds}s", "--latency"]
    if close:
        args += ["-H", "Connection: close"]
    r = client(*args, f"https://127.0.0.1:{PORT}{path}", timeout=seconds + 60)
    m = re.search(r"^\s*(\d+) requests in", r.stdout, re.M)
    rps = re.search(r"^Requests/sec:\s+([\d.]+)", r.stdout, re.M)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)",
                       r.stdout)
    if not m or not rps:
        raise RuntimeError(f"wrk: {r.stdout}{r.stderr}")
    return {"requests": int(m.group(1)), "rps": float(rps.group(1)),
            "errors": sum(int(x) for x in errors.groups()) if errors else 0}


def s_time_reuse(seconds, procs=2, tls12=True):
    """Resumed connections per second, `procs` openssl s_time -reuse at once."""
    args = ["openssl", "s_time", "-connect", f"127.0.0.1:{PORT}", "-reuse", "-time",
            str(seconds)]
    if tls12:
        args.append("-tls1_2")
    started = [subprocess.Popen(["taskset", "-c", CLIENT_CPU, *args], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True) for _ in range(procs)]
    total = 0.0
    for p in started:
        out, _ = p.communicate(timeout=seconds * 3 + 60)
        m = re.findall(r"(\d+) connections in ([\d.]+) real seconds", out)
        if not m:
            raise RuntimeError(f"s_time: {out}")
        n, secs = m[-1]
        total += int(n) / float(secs)
    return total


def oha_bin():
    for p in (os.path.join(HERE, "work", "tools", "bin", "oha"), shutil.which("oha") or ""):
        if p and os.access(p, os.X_OK):
            return p
    raise RuntimeError("oha not found: run bench/lab.sh once (it builds it) or put it on PATH")


def oha_rate(seconds, rate=200):
    r = client(oha_bin(), "--no-tui", "--output-format", "json", "--insecure", "-c", "10",
               "-z", f"{seconds}s", "-q", str(rate), "--latency-correction",
               f"https://127.0.0.1:{PORT}/1k", timeout=seconds + 60)
    j = json.loads(r.stdout)
    return (j.get("latencyPercentiles") or {}).get("p99")


def idle_memory(run, n):
    """KiB per idle TLS connection: n handshaken connections waiting."""
    conn_memory.raise_nofile(n + 1024)
    before = conn_memory.settle(run.proc.pid, 0)
    base_fds = conn_memory.fds(run.pids())
    ctx = ssl._create_unverified_context()
    held = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", PORT), source_address=(f"127.0.0.{2 + i // 20000}", 0))
        t = ctx.wrap_socket(s, server_hostname="localhost")
        t.sendall(b"GET /1k HTTP/1.1\r\nHost: localhost\r\n\r\n")
        conn_memory.read_response(t, 1024)
        held.append(t)
    after = conn_memory.settle(run.proc.pid, base_fds + n)
    for t in held:
        t.close()
    return (after - before) / n


def loop_turn_p99(text_before, text_after):
    """The p99 of nowait's loop turns between two status pages."""
    def buckets(text):
        out = {}
        for name, labels, v in status.parse(text):
            if name == "nowait_loop_turn_seconds_bucket":
                out[float("inf") if labels["le"] == "+Inf" else float(labels["le"])] = \
                    out.get(float("inf") if labels["le"] == "+Inf" else float(labels["le"]), 0) + v
        return out
    a, b = buckets(text_before), buckets(text_after)
    d = sorted((le, b.get(le, 0) - a.get(le, 0)) for le in b)
    total = d[-1][1] if d else 0
    for le, n in d:
        if total and n >= 0.99 * total:
            return le
    return None


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "—"


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seconds", type=int)
    p.add_argument("--pairs", type=int)
    p.add_argument("--idle", type=int, default=2000, help="idle TLS connections for memory")
    p.add_argument("--nowait", default=os.path.join(REPO, "target", "release", "nowait"))
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    ARGS = p.parse_args()
    secs = ARGS.seconds or (3 if ARGS.quick else 10)
    pairs = ARGS.pairs or (1 if ARGS.quick else 3)
    if os.geteuid() != 0:
        sys.exit("tls.py: needs root (the servers run as nobody)")
    work = tempfile.mkdtemp(prefix="nowait-bench-tls.")
    os.chmod(work, 0o755)
    data = os.path.join(work, "data")
    os.mkdir(data)
    with open(os.path.join(data, "1k"), "wb") as f:
        f.write(KB)
    with open(os.path.join(data, "1m"), "wb") as f:
        f.write(os.urandom(1 << 20))
    os.chmod(data, 0o755)
    for n in ("1k", "1m"):
        os.chmod(os.path.join(data, n), 0o644)

    rows = []
    runs_text = []

    def paired(name, measure, **conf):
        """Runs `measure(run)` for both servers in ABBA pairs."""
        got = {"nowait": [], "nginx": []}
        order = ["nowait", "nginx"]
        for i in range(pairs):
            for kind in (order if i % 2 == 0 else order[::-1]):
                run = Run(kind, work, data, **conf)
                try:
                    got[kind].append(measure(run))
                finally:
                    run.stop()
                log(f"{name}: {kind} #{i + 1}: {got[kind][-1]}")
        runs_text.append(f"- {name}: nowait {got['nowait']}; nginx {got['nginx']}")
        return got

    for cert, label in (("localhost-rsa", "RSA-2048"), ("localhost-ec", "ECDSA P-256")):
        def hs(run):
            t0 = run.cpu_ticks()
            w = wrk("/1k", 64, secs, close=True)
            t1 = run.cpu_ticks()
            cpu_s = (t1 - t0) / os.sysconf("SC_CLK_TCK")
            return (w["rps"], w["requests"] / cpu_s if cpu_s else None)
        g = paired(f"full handshakes, {label}", hs, cert=cert, protocols="TLSv1.3")
        n, x = median([a for a, _ in g["nowait"]]), median([a for a, _ in g["nginx"]])
        nc, xc = median([b for _, b in g["nowait"]]), median([b for _, b in g["nginx"]])
        rows.append((f"full handshakes/s, {label}, TLS 1.3", n, x, nc, xc))

    for label, conf in (("tickets", dict(tickets="on", cache="off")),
                        ("session cache", dict(tickets="off", cache="shared:SSL:10m"))):
        g = paired(f"resumed handshakes, {label}", lambda run: s_time_reuse(secs),
                   cert="localhost-ec", protocols="TLSv1.2 TLSv1.3", **conf)
        rows.append((f"resumed handshakes/s, TLS 1.2, {label} (openssl s_time -reuse ×2)",
                     median(g["nowait"]), median(g["nginx"]), None, None))

    for path, conns, label in (("/1k", 64, "1 KB file"), ("/1m", 8, "1 MB file")):
        def ka(run, path=path, conns=conns):
            t0 = run.cpu_ticks()
            w = wrk(path, conns, secs)
            t1 = run.cpu_ticks()
            cpu_s = (t1 - t0) / os.sysconf("SC_CLK_TCK")
            return (w["rps"], w["requests"] / cpu_s if cpu_s else None)
        g = paired(f"keep-alive {label}", ka, cert="localhost-ec")
        rows.append((f"keep-alive requests/s over TLS, {label} (wrk -c{conns})",
                     median([a for a, _ in g["nowait"]]), median([a for a, _ in g["nginx"]]),
                     median([b for _, b in g["nowait"]]), median([b for _, b in g["nginx"]])))

    mem = {}
    for kind in ("nowait", "nginx"):
        run = Run(kind, work, data, cert="localhost-ec", cache="shared:SSL:10m", tickets="on")
        try:
            mem[kind] = idle_memory(run, ARGS.idle)
        finally:
            run.stop()
        log(f"idle memory: {kind}: {mem[kind]:.1f} KiB per connection")

    storm = {}
    for kind in ("nowait", "nginx"):
        run = Run(kind, work, data, cert="localhost-rsa", protocols="TLSv1.3")
        try:
            quiet = oha_rate(secs)
            before = run.status() if kind == "nowait" else None
            stormer = subprocess.Popen(
                ["taskset", "-c", CLIENT_CPU, "nice", "-n", "19", "wrk", "-t1", "-c64",
                 f"-d{secs + 2}s", "-H",
                 "Connection: close", f"https://127.0.0.1:{PORT}/1k"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)
            loud = oha_rate(secs)
            stormer.wait(timeout=secs + 60)
            turn = loop_turn_p99(before, run.status()) if kind == "nowait" else None
            storm[kind] = (quiet, loud, turn)
        finally:
            run.stop()
        log(f"storm: {kind}: {storm[kind]}")

    shutil.rmtree(work, ignore_errors=True)
    day = datetime.date.today().isoformat()
    host = socket.gethostname()
    os.makedirs(ARGS.out, exist_ok=True)
    name, i = f"tls-{day}-{host}.md", 2
    while os.path.exists(os.path.join(ARGS.out, name)):
        name, i = f"tls-{day}-{host}-{i}.md", i + 1
    nginx_v = subprocess.run(["/usr/sbin/nginx", "-v"], capture_output=True, text=True).stderr.strip()
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short=12", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    lines = [f"# TLS: nowait vs nginx", "",
             f"Run at {datetime.datetime.utcnow().isoformat(timespec='seconds')}Z by `bench/tls.py`"
             f"{' --quick' if ARGS.quick else ''}: {secs} s runs, {pairs} ABBA pair(s) per line, "
             "each run a fresh start; the servers on CPU 0 (2 workers), the clients on CPU 1. "
             "Figures are medians of the runs.", "",
             "| line | nowait | nginx | nowait/nginx | nowait per CPU-second | nginx per CPU-second | per CPU-second nowait/nginx |",
             "|---|---|---|---|---|---|---|"]
    for label, n, x, nc, xc in rows:
        lines.append(f"| {label} | {n:.0f} | {x:.0f} | **{ratio(n, x)}** | "
                     f"{'—' if nc is None else f'{nc:.0f}'} | {'—' if xc is None else f'{xc:.0f}'} | "
                     f"{'—' if nc is None else f'**{ratio(nc, xc)}**'} |")
    lines += ["", "| memory per idle TLS connection (KiB) | nowait | nginx | nowait/nginx |", "|---|---|---|---|",
              f"| {ARGS.idle} connections, handshaken, one request each, then waiting | {mem['nowait']:.1f} | "
              f"{mem['nginx']:.1f} | **{ratio(mem['nowait'], mem['nginx'])}** |", "",
              "| handshake storm (RSA-2048, TLS 1.3) | nowait | nginx |", "|---|---|---|"]
    def ms(v):
        return "—" if v is None else f"{v * 1000:.2f} ms"
    lines += [f"| keep-alive client p99, alone (oha -q 200 -c 10) | {ms(storm['nowait'][0])} | {ms(storm['nginx'][0])} |",
              f"| keep-alive client p99 during the storm (wrk -c64 new connections, at nice 19) | {ms(storm['nowait'][1])} | {ms(storm['nginx'][1])} |",
              f"| during / alone | {ratio(storm['nowait'][1], storm['nowait'][0])} | {ratio(storm['nginx'][1], storm['nginx'][0])} |",
              f"| loop turn p99 during the storm (status page buckets) | {ms(storm['nowait'][2])} | — |",
              "", "Every run:", *runs_text, "", "## Machine",
              f"- CPUs: {os.cpu_count()}; kernel {os.uname().release}",
              f"- {nginx_v} (Debian's); nowait at commit {commit}, release build",
              f"- load average at the end: {open('/proc/loadavg').read().split()[:3]}"]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(ARGS.out, name), "w") as f:
        f.write(text)
    print(text)
    log(f"wrote {os.path.join(ARGS.out, name)}")


if __name__ == "__main__":
    main()
