"""Where the event loops wait: samples the state and kernel stack of every
loop thread of the server every few milliseconds (nginx: each worker
process's main thread; nowait: its `worker#N` threads), so the report can say
what share of the time a loop spent in uninterruptible sleep (D: waiting on
the disk) and in which kernel function. The same measure for both servers,
beside nowait's own `nowait_loop_poll_seconds`."""

import collections
import os
import threading
import time

INTERVAL = 0.01
FRAMES = 6


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

    def __init__(self, cgroup):
        self.cgroup = cgroup
        self.states = collections.Counter()
        self.stacks = collections.Counter()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        threads, refreshed = [], 0.0
        while not self._stop.is_set():
            now = time.time()
            if now - refreshed > 1.0:
                threads, refreshed = _loop_threads(self.cgroup.pids()), now
            for pid, tid, _ in threads:
                try:
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
        return {
            "samples": self.samples,
            "share_D": self.states.get("D", 0) / n,
            "share_R": self.states.get("R", 0) / n,
            "top_D_stacks": [(s, c) for s, c in self.stacks.most_common(3)],
        }
