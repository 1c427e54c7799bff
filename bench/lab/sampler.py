"""Where the event loops wait: samples the state and kernel stack of every
loop thread of the server every few milliseconds (nginx: each worker
process's main thread; nowait: its `worker#N` threads), so the report can say
what share of the time a loop spent in uninterruptible sleep (D: waiting on
the disk) and in which kernel function. The same measure for both servers,
beside nowait's own `nowait_loop_poll_seconds`.

It also samples, every half second, how much of the hot data is in the page
cache (`fincore`, util-linux): the source's hot file is "always in memory",
and whether it stays so under the cgroup's memory limit decides the hot
figures more than anything the server does. With `track` paths it also
keeps each one's residency over time, `(seconds since start, [fraction per
path])`, for the hot-data variants' plots (the hot file falling out of memory
and coming back, or not)."""

import collections
import os
import subprocess
import threading
import time

INTERVAL = 0.01
FRAMES = 6
RESIDENT_INTERVAL = 0.5


def _fincore(paths):
    """(resident bytes, size) of each of `paths`, in order."""
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--raw", "--output",
                          "RES,SIZE", *paths], capture_output=True, text=True, check=True)
    rows = []
    for line in out.stdout.split("\n"):
        if line.strip():
            r, s = line.split()
            rows.append((int(r), int(s)))
    return rows


def resident_fraction(paths):
    """The share of the bytes of `paths` that are in the page cache."""
    rows = _fincore(paths)
    res, size = sum(r for r, _ in rows), sum(s for _, s in rows)
    return res / size if size else 1.0


def resident_each(paths):
    """The share of each of `paths` in the page cache, in order."""
    return [r / s if s else 1.0 for r, s in _fincore(paths)]


def _read(p):
    with open(p) as f:
        return f.read()


def _loop_threads(pids):
    """(pid, tid, name) of the loop threads among the cgroup's processes."""
    out = []
    for pid in pids:
        try:
            comm = _read(f"/proc/{pid}/comm").strip()
            if comm == "nginx":
                if "worker process" in _read(f"/proc/{pid}/cmdline"):
                    out.append((pid, pid, f"nginx worker {pid}"))
                continue
            for tid in os.listdir(f"/proc/{pid}/task"):
                name = _read(f"/proc/{pid}/task/{tid}/comm").strip()
                if name.startswith("worker#"):
                    out.append((pid, int(tid), name))
        except OSError:
            continue
    return out


class Sampler:
    """Samples in a background thread between start() and stop()."""

    def __init__(self, cgroup, hot_paths=(), track=()):
        self.cgroup = cgroup
        self.hot_paths = list(hot_paths)
        self.track = list(track)
        self.resident = []
        # (seconds since start(), [fraction of each tracked path])
        self.timeline = []
        self.t0 = None
        self.states = collections.Counter()
        self.stacks = collections.Counter()
        self.samples = 0
        # per loop thread: (first, last) of (run_delay ns, wall time s), from
        # /proc/…/schedstat: how long it waited on a run queue for a CPU
        self.runq = {}
        # the largest growth of one thread's run_delay between two samples:
        # the kernel adds a wait when it ends, so this is (about) the
        # longest single wait of a loop thread for a CPU
        self.runq_max = 0
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        self.t0 = time.time()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        threads, refreshed, resident_at = [], 0.0, 0.0
        while not self._stop.is_set():
            now = time.time()
            if now - refreshed > 1.0:
                threads, refreshed = _loop_threads(self.cgroup.pids()), now
            if self.hot_paths and now - resident_at >= RESIDENT_INTERVAL:
                resident_at = now
                try:
                    self.resident.append(resident_fraction(self.hot_paths))
                    if self.track:
                        self.timeline.append((round(now - self.t0, 2),
                                              resident_each(self.track)))
                except (OSError, subprocess.CalledProcessError, ValueError):
                    pass
            for pid, tid, _ in threads:
                try:
                    sched = _read(f"/proc/{pid}/task/{tid}/schedstat").split()
                    mark = (int(sched[1]), time.time())
                    first, last = self.runq.get(tid, (mark, mark))
                    self.runq_max = max(self.runq_max, mark[0] - last[0])
                    self.runq[tid] = (first, mark)
                    stat = _read(f"/proc/{pid}/task/{tid}/stat")
                    st = stat.rsplit(")", 1)[1].split()[0]
                    self.states[st] += 1
                    self.samples += 1
                    if st == "D":
                        lines = _read(f"/proc/{pid}/task/{tid}/stack").splitlines()
                        frames = [ln.split(" ", 1)[-1].split("+")[0] for ln in lines[:FRAMES]]
                        self.stacks[" < ".join(frames)] += 1
                except OSError:
                    continue
            self._stop.wait(INTERVAL)

    def stop(self):
        self._stop.set()
        if self._thread:
            self._thread.join()
        n = self.samples or 1
        waited = sum(last[0] - first[0] for first, last in self.runq.values()) / 1e9
        span = sum(last[1] - first[1] for first, last in self.runq.values())
        return {
            # the share of the loop threads' time spent waiting for a CPU
            "share_runq": waited / span if span > 0 else None,
            "runq_max_s": self.runq_max / 1e9 if self.runq else None,
            "samples": self.samples,
            "share_D": self.states.get("D", 0) / n,
            "share_R": self.states.get("R", 0) / n,
            "top_D_stacks": [(s, c) for s, c in self.stacks.most_common(3)],
            # the hot data's share in the page cache: lowest and mean sample
            "hot_resident_min": min(self.resident) if self.resident else None,
            "hot_resident_mean": sum(self.resident) / len(self.resident) if self.resident else None,
            "resident_timeline": self.timeline,
        }
