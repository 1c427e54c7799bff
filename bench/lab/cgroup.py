"""The servers' cgroup: a memory limit below the data set and read throttling
on the loop device, so the page cache cannot hold the data and a cache miss
costs what a hard disk costs.

cgroup v1 (`memory` + `blkio` hierarchies) is what the lab machines have;
v2 (`memory.max`, `io.max`) is used when the unified hierarchy is mounted
at /sys/fs/cgroup with those controllers available.

What this module must not do: leave a cgroup behind. `Teardown` removes it;
processes still in it are ours (servers and their children) and are killed
by pid first.
"""

import os
import signal
import time

ROOT = "/sys/fs/cgroup"


def _write(path, value):
    with open(path, "w") as f:
        f.write(str(value) + "\n")


def _read(path):
    with open(path) as f:
        return f.read()


class Cgroup:
    """One cgroup, in v1's two hierarchies or in v2's one."""

    def __init__(self, name, teardown, log):
        self.name = name
        self.log = log
        self.v2 = os.path.exists(os.path.join(ROOT, "cgroup.controllers"))
        if self.v2:
            self.dirs = [os.path.join(ROOT, name)]
        else:
            self.dirs = [os.path.join(ROOT, "memory", name),
                         os.path.join(ROOT, "blkio", name)]
        for d in self.dirs:
            os.mkdir(d)
            teardown.push(f"remove cgroup {d}", lambda d=d: self._remove(d))
        if self.v2:
            ctl = _read(os.path.join(ROOT, "cgroup.subtree_control")).split()
            for c in ("memory", "io"):
                if c not in ctl:
                    _write(os.path.join(ROOT, "cgroup.subtree_control"), "+" + c)

    def limit(self, mem_bytes, majmin, iops, bps):
        """Sets the memory limit and the read throttle on device `majmin`."""
        if self.v2:
            d = self.dirs[0]
            _write(os.path.join(d, "memory.max"), mem_bytes)
            _write(os.path.join(d, "io.max"), f"{majmin} riops={iops} rbps={bps}")
        else:
            mem, blk = self.dirs
            _write(os.path.join(mem, "memory.limit_in_bytes"), mem_bytes)
            _write(os.path.join(blk, "blkio.throttle.read_iops_device"), f"{majmin} {iops}")
            _write(os.path.join(blk, "blkio.throttle.read_bps_device"), f"{majmin} {bps}")

    def throttle(self, majmin, riops, rbps, wiops, wbps):
        """Sets read and write limits on device `majmin` (0: none)."""
        if self.v2:
            def v(x):
                return x if x else "max"
            _write(os.path.join(self.dirs[0], "io.max"),
                   f"{majmin} riops={v(riops)} rbps={v(rbps)} wiops={v(wiops)} wbps={v(wbps)}")
            return
        blk = self.dirs[1]
        for f, x in (("read_iops_device", riops), ("read_bps_device", rbps),
                     ("write_iops_device", wiops), ("write_bps_device", wbps)):
            _write(os.path.join(blk, "blkio.throttle." + f), f"{majmin} {x}")

    def set_memory(self, mem_bytes):
        """Sets the memory limit alone."""
        name = "memory.max" if self.v2 else "memory.limit_in_bytes"
        _write(os.path.join(self.dirs[0], name), mem_bytes)

    def settings(self):
        """What the kernel says the limits are (for the report)."""
        if self.v2:
            d = self.dirs[0]
            return {"memory.max": _read(os.path.join(d, "memory.max")).strip(),
                    "io.max": _read(os.path.join(d, "io.max")).strip()}
        mem, blk = self.dirs
        return {
            "memory.limit_in_bytes": _read(os.path.join(mem, "memory.limit_in_bytes")).strip(),
            "blkio.throttle.read_iops_device":
                _read(os.path.join(blk, "blkio.throttle.read_iops_device")).strip(),
            "blkio.throttle.read_bps_device":
                _read(os.path.join(blk, "blkio.throttle.read_bps_device")).strip(),
        }

    def procs_files(self):
        """The files a process writes its pid to, to enter the cgroup."""
        return [os.path.join(d, "cgroup.procs") for d in self.dirs]

    def pids(self):
        out = set()
        for d in self.dirs:
            f = os.path.join(d, "cgroup.procs")
            if os.path.exists(f):
                out |= {int(x) for x in _read(f).split()}
        return out

    def memory_stats(self):
        """Peak usage and failcnt of the memory limit (v1), for the report."""
        if self.v2:
            d = self.dirs[0]
            p = os.path.join(d, "memory.peak")
            return {"peak": int(_read(p)) if os.path.exists(p) else None}
        mem = self.dirs[0]
        return {"peak": int(_read(os.path.join(mem, "memory.max_usage_in_bytes"))),
                "failcnt": int(_read(os.path.join(mem, "memory.failcnt")))}

    def memory_stat(self):
        """The cgroup's anonymous memory, page cache, dirty and writeback
        bytes now (v1 `memory.stat`; v2's names differ)."""
        path = os.path.join(self.dirs[0], "memory.stat")
        if not os.path.exists(path):
            return {}
        names = {"rss": "anon", "cache": "file", "dirty": "dirty", "writeback": "writeback",
                 "anon": "anon", "file": "file", "file_dirty": "dirty",
                 "file_writeback": "writeback"}
        out = {}
        for line in _read(path).splitlines():
            k, _, v = line.partition(" ")
            if k in names:
                out[names[k]] = int(v)
        return out

    def reset_peak(self):
        if not self.v2:
            _write(os.path.join(self.dirs[0], "memory.max_usage_in_bytes"), 0)

    def kill_all(self):
        """Kills what is left in the cgroup (only our servers can be there)."""
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for p in pids:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)

    def _remove(self, d):
        if not os.path.isdir(d):
            return
        self.kill_all()
        for _ in range(50):
            try:
                os.rmdir(d)
                return
            except OSError:
                time.sleep(0.1)
        self.log(f"could not remove cgroup {d}")
