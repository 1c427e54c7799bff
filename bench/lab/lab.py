#!/usr/bin/env python3
"""The slow-disk lab and the brief's three experiments, nginx beside nowait.

Run through bench/lab.sh (root required). Sets up an ext4 image on a
throttled loop device and a memory-limited cgroup, runs experiments A, B and
C one server at a time, writes bench/results/<date>-<host>.md (+ .json and
PNG plots), and tears everything down, also when interrupted.

Parts: disk.py (image, loop device, data sets), cgroup.py (limits),
servers.py (configurations, start/stop in the cgroup), load.py (wrk, oha),
status.py (nowait's status page), experiments.py (A, B, C), report.py.
"""

import argparse
import datetime
import json
import os
import signal
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cachedisks  # noqa: E402
import cgroup  # noqa: E402
import disk  # noqa: E402
import experiments  # noqa: E402
import load  # noqa: E402
import report  # noqa: E402
import servers  # noqa: E402

BENCH = os.path.dirname(HERE)
REPO = os.path.dirname(BENCH)
# The cgroup's name; a leftover from a killed run is removed by --cleanup.
CGROUP_PREFIX = "nowait-lab"

# Each mode's defaults; every one can be overridden by a flag.
MODES = {
    "quick": dict(a_files=150, a_file_mb=4, b_files=6000, mem="128M",
                  seconds=10, warmup=3, c_seconds=5, c_pairs=1, d_seconds=8),
    "full": dict(a_files=1000, a_file_mb=4, b_files=40000, mem="256M",
                 seconds=30, warmup=5, c_seconds=10, c_pairs=3, d_seconds=20),
}


def log(msg):
    print(f"[lab {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Teardown:
    """Undo actions, run last-in first-out, each at most once."""

    def __init__(self):
        self.items = []

    def push(self, what, fn):
        self.items.append((what, fn))
        return len(self.items) - 1

    def run_one(self, key):
        what, fn = self.items[key]
        if fn is not None:
            self.items[key] = (what, None)
            fn()

    def run(self):
        while self.items:
            what, fn = self.items.pop()
            if fn is None:
                continue
            try:
                fn()
            except Exception as e:  # keep undoing the rest
                log(f"teardown: {what}: {e}")


def size(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip().upper()
    if s[-1] in units:
        return int(float(s[:-1]) * units[s[-1]])
    return int(s)


def args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    m = p.add_mutually_exclusive_group()
    m.add_argument("--quick", action="store_const", dest="mode", const="quick")
    m.add_argument("--full", action="store_const", dest="mode", const="full")
    p.add_argument("--report-from", metavar="JSON",
                   help="only write the report (and plots) again from a run's .json")
    p.add_argument("--cleanup", action="store_true",
                   help="only remove what an interrupted run left behind")
    p.add_argument("--experiments", default="A,B,C,D", help="which experiments (A,B,C,D; AV: A's hot-data variants alone)")
    p.add_argument("--iops", type=int, default=200, help="read IOPS allowed on the loop device")
    p.add_argument("--bps", default="60000000", help="read bytes/s allowed (60 MB/s)")
    p.add_argument("--mem", help="the servers' memory limit (quick 128M, full 256M)")
    p.add_argument("--a-files", type=int, help="set A: number of files")
    p.add_argument("--a-file-mb", type=int, help="set A: file size in MB (4)")
    p.add_argument("--b-files", type=int, help="set B: number of files")
    p.add_argument("--seconds", type=int, help="length of each hot-load phase")
    p.add_argument("--warmup", type=int, help="random load before the hot load starts")
    p.add_argument("--c-seconds", type=int, help="length of each experiment-C run")
    p.add_argument("--c-pairs", type=int,
                   help="experiment C: runs of each server per mode, taken in turns (ABBA)")
    p.add_argument("--rate", type=int,
                   help="A and B: the constant rate (req/s) instead of calibrating one from the ceilings")
    p.add_argument("--runs", metavar="SERVER/CONFIG,...",
                   help="A and B: only the runs whose 'server/configuration' contains one of these "
                        "(e.g. 'nowait/fast path on'); the loaded runs unless 'unloaded' is named")
    p.add_argument("--timeline", action="store_true",
                   help="A and B: keep oha's database of the constant-rate phase "
                        "(oha-rate.json.db in the run's folder: every request's start and end)")
    p.add_argument("--tls", action="store_true",
                   help="serve A, AV, B and C over HTTPS (listen ... ssl, an RSA-2048 certificate, "
                        "TLS 1.2 and 1.3, a shared session cache)")
    p.add_argument("--hot-load", choices=("oha", "wrk"), default="oha",
                   help="what drives the hot load of A's variants: oha (-c 50) or wrk (-t2 -c50)")
    p.add_argument("--rate-fraction", type=float, default=0.5,
                   help="constant-rate hot load = this x the lower unloaded ceiling")
    d = p.add_argument_group("experiment D (the three-disk cache)")
    d.add_argument("--d-seconds", type=int, help="length of each D phase (quick 8, full 20)")
    d.add_argument("--d-hot", type=int, default=300, help="hot URLs (cached during the warm-up)")
    d.add_argument("--d-hot-rate", type=int, default=500,
                   help="constant rate of D's hot latency phases, req/s")
    d.add_argument("--d-miss-rate", type=int, default=600,
                   help="miss load, req/s (each a new URL; mean body 66 KB)")
    d.add_argument("--d-mem", default="512M", help="the servers' memory limit during D")
    d.add_argument("--d-riops", type=int, default=100, help="each cache disk's read IOPS")
    d.add_argument("--d-rbps", default="20M", help="each cache disk's read bytes/s")
    d.add_argument("--d-wiops", type=int, default=100, help="each cache disk's write IOPS")
    d.add_argument("--d-wbps", default="10M", help="each cache disk's write bytes/s")
    d.add_argument("--d-dirty", default="16M",
                   help="dirty bytes a cache disk may hold before writers wait")
    d.add_argument("--d-servers", default="nginx,nowait",
                   help="which servers D runs, in this order")
    d.add_argument("--d-crawl-iops", type=int, default=5, help="disk2's IOPS when it crawls")
    d.add_argument("--d-crawl-bps", default="256K", help="disk2's bytes/s when it crawls")
    p.add_argument("--port", type=int, default=28480, help="port on 127.0.0.1 for the servers")
    p.add_argument("--nowait", help="nowait binary (default: target dir's release build)")
    p.add_argument("--workdir", default=os.path.join(BENCH, "work"))
    p.add_argument("--out", default=os.path.join(BENCH, "results"))
    a = p.parse_args()
    a.mode = a.mode or "quick"
    for k, v in MODES[a.mode].items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    a.mem_bytes = size(a.mem)
    a.bps = size(a.bps)
    a.d_mem_bytes = size(a.d_mem)
    a.d_servers = [x.strip() for x in a.d_servers.split(",") if x.strip()]
    for k in ("d_rbps", "d_wbps", "d_dirty", "d_crawl_bps"):
        setattr(a, k, size(getattr(a, k)))
    a.experiments = [x.strip().upper() for x in a.experiments.split(",") if x.strip()]
    return a


def cleanup_leftovers():
    """Removes what a killed run may have left: our cgroups (killing their
    processes, which can only be our servers), the mount, the loop devices of
    our images."""
    td = Teardown()
    for base in (cgroup.ROOT, os.path.join(cgroup.ROOT, "memory"),
                 os.path.join(cgroup.ROOT, "blkio")):
        if not os.path.isdir(base):
            continue
        for name in os.listdir(base):
            if name.startswith(CGROUP_PREFIX):
                g = object.__new__(cgroup.Cgroup)
                g.dirs, g.log, g.v2 = [os.path.join(base, name)], log, False
                td.push(name, lambda g=g: (g.kill_all(), g._remove(g.dirs[0])))
    td.run()
    # Every mount under the work directory (the data disk, D's cache disks),
    # deepest first.
    work = os.path.realpath(a_workdir) + "/"
    with open("/proc/mounts") as f:
        mounts = [line.split()[1] for line in f]
    for m in sorted((m for m in mounts if m.startswith(work)), key=len, reverse=True):
        disk.sh("umount", m, check=False)
    images = os.path.join(a_workdir, "images")
    if os.path.isdir(images):
        for img in os.listdir(images):
            if img.endswith(".img"):
                out = disk.sh("losetup", "-j", os.path.join(images, img), capture=True)
                for line in out.splitlines():
                    dev = line.split(":")[0]
                    cachedisks.lift_root_limits(dev)
                    disk.sh("losetup", "-d", dev, check=False)


def machine_facts(a, d, cg):
    def first(path, key):
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
    import subprocess
    nginx_v = subprocess.run(["/usr/sbin/nginx", "-v"], capture_output=True, text=True).stderr.strip()
    out = {
        "host": socket.gethostname(),
        "cores": os.cpu_count(),
        "cpu": first("/proc/cpuinfo", "model name"),
        "kernel": os.uname().release,
        "memory_total": first("/proc/meminfo", "MemTotal"),
        "cgroup": "v2" if cg.v2 else "v1",
        "cgroup_settings": cg.settings(),
        "nginx": nginx_v,
        "load average at start": open("/proc/loadavg").read().split(" ")[0],
        "mode": a.mode,
        "transport": ("HTTPS (listen ... ssl; RSA-2048 certificate; TLS 1.2 and 1.3; "
                      "ssl_session_cache shared:SSL:10m)") if a.tls else "cleartext HTTP",
        "durations": f"hot phases {a.seconds} s each, random-load warm-up {a.warmup} s, "
                     f"C runs {a.c_seconds} s ({a.c_pairs} pair(s) per mode), D phases {a.d_seconds} s",
    }
    if d is not None:
        mani = d.manifest()
        out.update({
            "loop": f"{d.loop} ({d.majmin()}), direct-io on, ext4 image {d.spec.image_mb()} MB",
            "throttle": f"{a.iops} read IOPS, {a.bps / 1e6:.0f} MB/s",
            "loop read_ahead_kb": open(f"/sys/block/{os.path.basename(d.loop)}/queue/read_ahead_kb")
            .read().strip(),
            "memory_limit": a.mem,
            "set_a": f"{mani['a_files']} files x {mani['a_file_mb']} MB = "
                     f"{mani['a_files'] * mani['a_file_mb']} MB (1 hot)",
            "set_b": f"{mani['b_files']} files, {mani['b_bytes'] / 1e6:.0f} MB, 4-60 KB "
                     f"(10% 60-256 KB), levels=1:2 tree; hot set {disk.HOT_B_FILES} files",
        })
    return out


a_workdir = os.path.join(BENCH, "work")


def main():
    global a_workdir
    a = args()
    a_workdir = a.workdir
    if a.report_from:
        with open(a.report_from) as f:
            res = json.load(f)
        out = os.path.dirname(os.path.abspath(a.report_from))
        stem = os.path.basename(a.report_from)[:-len(".json")]
        log(f"report: {os.path.relpath(report.write(res, out, stem, a.workdir))}")
        return 0
    if os.geteuid() != 0:
        print("lab: needs root (loop devices, mounts, cgroups); run it with sudo", file=sys.stderr)
        return 2
    if a.cleanup:
        cleanup_leftovers()
        return 0
    a.nowait = a.nowait or os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")),
                                        "release", "nowait")
    if not os.access(a.nowait, os.X_OK):
        print(f"lab: no nowait binary at {a.nowait}; build it with cargo build --release",
              file=sys.stderr)
        return 2
    tools = os.path.join(a.workdir, "tools")
    if {"A", "AV", "B", "D"} & set(a.experiments) and not os.access(os.path.join(tools, "bin", "oha"), os.X_OK):
        print("lab: oha missing; bench/lab.sh installs it", file=sys.stderr)
        return 2

    def on_signal(signum, _frame):
        # One signal is enough: the teardown must not be interrupted by the next.
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, lambda *_: None)
        raise KeyboardInterrupt(f"signal {signum}")
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)

    servers.PORT = a.port
    if a.tls:
        certs = os.path.join(os.path.dirname(BENCH), "tests", "tls")
        servers.TLS = (os.path.join(certs, "localhost-rsa.crt"), os.path.join(certs, "localhost-rsa.key"))
        load.SCHEME = "https"
    cleanup_leftovers()
    td = Teardown()
    try:
        run_dir = os.path.join(a.workdir, "run")
        os.makedirs(run_dir, exist_ok=True)
        os.chmod(a.workdir, 0o755)
        cg = cgroup.Cgroup(f"{CGROUP_PREFIX}-{os.getpid()}", td, log)
        d, urls = None, {}
        if {"A", "AV", "B"} & set(a.experiments):
            spec = disk.DataSpec(a.a_files, a.a_file_mb, a.b_files)
            d = disk.Disk(a.workdir, spec, td, log).attach()
            cg.limit(a.mem_bytes, d.majmin(), a.iops, a.bps)
            urls = d.url_lists(run_dir)
        else:
            cg.set_memory(a.mem_bytes)
        ctx = experiments.Context(a, d, cg, td, urls, run_dir, tools, log)
        facts = machine_facts(a, d, cg)
        log("lab ready" + (f": {facts['loop']}, {facts['throttle']}, memory {a.mem}" if d else ""))
        results = {"facts": facts, "started": datetime.datetime.now().isoformat(timespec="seconds")}
        for x in a.experiments:
            results[x] = getattr(experiments, "run_" + x)(ctx)
        results["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    except KeyboardInterrupt as e:
        log(f"interrupted ({e}); tearing down")
        td.run()
        return 130
    finally:
        td.run()
    os.makedirs(a.out, exist_ok=True)
    stem = datetime.date.today().isoformat() + "-" + socket.gethostname()
    if a.mode != "full":
        stem += "-" + a.mode
    if a.tls:
        stem += "-tls"
    # A report of the same day is never overwritten: -2, -3, ... follow.
    base, n = stem, 2
    while os.path.exists(os.path.join(a.out, stem + ".json")):
        stem, n = f"{base}-{n}", n + 1
    path = report.write(results, a.out, stem, a.workdir)
    log(f"report: {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
