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

import cgroup  # noqa: E402
import disk  # noqa: E402
import experiments  # noqa: E402
import report  # noqa: E402
import servers  # noqa: E402

BENCH = os.path.dirname(HERE)
REPO = os.path.dirname(BENCH)
# The cgroup's name; a leftover from a killed run is removed by --cleanup.
CGROUP_PREFIX = "nowait-lab"

# Each mode's defaults; every one can be overridden by a flag.
MODES = {
    "quick": dict(a_files=150, a_file_mb=4, b_files=6000, mem="128M",
                  seconds=10, warmup=3, c_seconds=5),
    "full": dict(a_files=1000, a_file_mb=4, b_files=40000, mem="256M",
                 seconds=30, warmup=5, c_seconds=15),
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
    p.add_argument("--experiments", default="A,B,C", help="which experiments (A,B,C)")
    p.add_argument("--iops", type=int, default=200, help="read IOPS allowed on the loop device")
    p.add_argument("--bps", default="60000000", help="read bytes/s allowed (60 MB/s)")
    p.add_argument("--mem", help="the servers' memory limit (quick 128M, full 256M)")
    p.add_argument("--a-files", type=int, help="set A: number of files")
    p.add_argument("--a-file-mb", type=int, help="set A: file size in MB (4)")
    p.add_argument("--b-files", type=int, help="set B: number of files")
    p.add_argument("--seconds", type=int, help="length of each hot-load phase")
    p.add_argument("--warmup", type=int, help="random load before the hot load starts")
    p.add_argument("--c-seconds", type=int, help="length of each experiment-C run")
    p.add_argument("--rate-fraction", type=float, default=0.5,
                   help="constant-rate hot load = this x the lower unloaded ceiling")
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
    mnt = os.path.join(a_workdir, "mnt")
    if os.path.ismount(mnt):
        disk.sh("umount", mnt, check=False)
    images = os.path.join(a_workdir, "images")
    if os.path.isdir(images):
        for img in os.listdir(images):
            if img.endswith(".img"):
                out = disk.sh("losetup", "-j", os.path.join(images, img), capture=True)
                for line in out.splitlines():
                    disk.sh("losetup", "-d", line.split(":")[0], check=False)


def machine_facts(a, d, cg):
    def first(path, key):
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
    import subprocess
    nginx_v = subprocess.run(["/usr/sbin/nginx", "-v"], capture_output=True, text=True).stderr.strip()
    mani = d.manifest()
    return {
        "host": socket.gethostname(),
        "cores": os.cpu_count(),
        "cpu": first("/proc/cpuinfo", "model name"),
        "kernel": os.uname().release,
        "memory_total": first("/proc/meminfo", "MemTotal"),
        "cgroup": "v2" if cg.v2 else "v1",
        "cgroup_settings": cg.settings(),
        "loop": f"{d.loop} ({d.majmin()}), direct-io on, ext4 image {d.spec.image_mb()} MB",
        "throttle": f"{a.iops} read IOPS, {a.bps / 1e6:.0f} MB/s",
        "loop read_ahead_kb": open(f"/sys/block/{os.path.basename(d.loop)}/queue/read_ahead_kb")
        .read().strip(),
        "memory_limit": a.mem,
        "set_a": f"{mani['a_files']} files x {mani['a_file_mb']} MB = "
                 f"{mani['a_files'] * mani['a_file_mb']} MB (1 hot)",
        "set_b": f"{mani['b_files']} files, {mani['b_bytes'] / 1e6:.0f} MB, 4-60 KB (10% 60-256 KB), "
                 f"levels=1:2 tree; hot set {disk.HOT_B_FILES} files",
        "nginx": nginx_v,
        "load average at start": open("/proc/loadavg").read().split(" ")[0],
        "mode": a.mode,
        "durations": f"hot phases {a.seconds} s each, random-load warm-up {a.warmup} s, "
                     f"C runs {a.c_seconds} s",
    }


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
    if {"A", "B"} & set(a.experiments) and not os.access(os.path.join(tools, "bin", "oha"), os.X_OK):
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
    cleanup_leftovers()
    td = Teardown()
    try:
        spec = disk.DataSpec(a.a_files, a.a_file_mb, a.b_files)
        d = disk.Disk(a.workdir, spec, td, log).attach()
        cg = cgroup.Cgroup(f"{CGROUP_PREFIX}-{os.getpid()}", td, log)
        cg.limit(a.mem_bytes, d.majmin(), a.iops, a.bps)
        run_dir = os.path.join(a.workdir, "run")
        os.makedirs(run_dir, exist_ok=True)
        os.chmod(a.workdir, 0o755)
        urls = d.url_lists(run_dir)
        ctx = experiments.Context(a, d, cg, td, urls, run_dir, tools, log)
        facts = machine_facts(a, d, cg)
        log(f"lab ready: {facts['loop']}, {facts['throttle']}, memory {a.mem}")
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
    path = report.write(results, a.out, stem, a.workdir)
    log(f"report: {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
