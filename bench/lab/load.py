"""The load generators and what they measure.

- `wrk` (Debian) with `urls.lua`: the random loads (a random URL per request
  from a list) and experiment C's maximum-throughput runs. Closed loop: each
  connection sends its next request when the previous answer ends, so its
  latency figures are service times and hide coordinated omission; they are
  used only for throughput (req/s, MB/s) and for C's latency mean/stdev,
  which is what the source's table reports.
- `oha` (crates.io, installed into the work directory): the hot loads. Once
  closed loop (`-c 50`, as fast as it can: the hot req/s figure), once at a
  constant rate (`-q RATE --latency-correction`): each request's latency is
  counted from when it was *due*, so a stalled server is charged for the
  requests it kept from being sent. The latency percentiles reported are
  from this second run.
"""

import json
import os
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LUA = os.path.join(HERE, "urls.lua")


# "https" under `lab.sh --tls` (set by lab.py).
SCHEME = "http"


def base_url(port):
    return f"{SCHEME}://127.0.0.1:{port}"


class Wrk:
    """A wrk run in the background."""

    def __init__(self, port, url_list, conns, threads, seconds, out_path, timeout_s=30,
                 single=None):
        """`url_list`: a file of paths, one picked per request (urls.lua);
        or `single`: one path, every request (urls.lua with a one-line list
        would do too; a path is simpler)."""
        self.out_path = out_path
        self.out = open(out_path, "w")
        if single is not None:
            url_list = out_path + ".list"
            with open(url_list, "w") as f:
                f.write(single + "\n")
        cmd = ["wrk", "-t", str(threads), "-c", str(conns), "-d", f"{seconds}s",
               "--timeout", f"{timeout_s}s", "-s", LUA, base_url(port) + "/",
               "--", url_list]
        self.started = time.time()
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=subprocess.STDOUT)

    def wait(self, extra=60):
        try:
            self.proc.wait(timeout=extra)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.out.close()
        with open(self.out_path) as f:
            text = f.read()
        for line in text.splitlines():
            if line.startswith("LABJSON "):
                r = json.loads(line[len("LABJSON "):])
                secs = r["duration_us"] / 1e6
                r["req_per_s"] = r["requests"] / secs if secs else 0.0
                r["mb_per_s"] = r["bytes"] / secs / 1e6 if secs else 0.0
                return r
        raise RuntimeError(f"wrk printed no result:\n{text[-2000:]}")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def oha_bin(tools):
    return os.path.join(tools, "bin", "oha")


def _oha_cmd(tools, port, urls, conns, seconds, out_path, rate, db=None):
    cmd = [oha_bin(tools), "--no-tui", "--output-format", "json",
           "-c", str(conns), "-z", f"{seconds}s", "-t", "30s"]
    if SCHEME == "https":
        cmd += ["--insecure"]
    if db:
        # every request's start and end, for a per-second timeline
        cmd += ["--db-url", db]
    if rate is not None:
        cmd += ["-q", str(rate), "--latency-correction"]
    if os.path.isfile(urls):
        # oha wants whole URLs, one a line, and picks one at random per request.
        full = out_path + ".urls"
        with open(urls) as src, open(full, "w") as dst:
            for line in src:
                if line.strip():
                    dst.write(base_url(port) + line.strip() + "\n")
        cmd += ["--urls-from-file", full]
    else:
        cmd += [base_url(port) + urls]
    return cmd


def oha(tools, port, urls, conns, seconds, out_path, rate=None, timeline=False, db=False):
    """One oha run (blocking). urls: one path, or a file of paths to pick
    from at random. rate: None for closed loop, or requests per second with
    latency correction. timeline: also the successful responses completed in
    each second of the run (`per_second`, from oha's request database).
    db: keep that database (OUT_PATH.db: every request's start and end) to
    look for stalls. Returns the figures as a dict."""
    db = out_path + ".db" if timeline or db else None
    if db and os.path.exists(db):
        os.remove(db)
    cmd = _oha_cmd(tools, port, urls, conns, seconds, out_path, rate, db)
    with open(out_path, "w") as out:
        r = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, text=True,
                           timeout=seconds + 90)
    figures = _oha_figures(out_path, seconds, rate, r.returncode, r.stderr)
    if timeline:
        figures["per_second"] = per_second(db, seconds)
    return figures


def per_second(db, seconds):
    """Successful responses completed in each whole second of a run, from
    oha's database (times are seconds since the run began)."""
    import sqlite3
    bins = [0] * int(seconds)
    if not os.path.exists(db):
        return bins
    con = sqlite3.connect(db)
    try:
        for (end,) in con.execute("SELECT end FROM oha WHERE status = 200"):
            i = int(end)
            if 0 <= i < len(bins):
                bins[i] += 1
    finally:
        con.close()
    return bins


class OhaBackground:
    """An oha run in the background (experiment D's miss load)."""

    def __init__(self, tools, port, urls, conns, seconds, out_path, rate=None):
        self.args = (out_path, seconds, rate)
        self.out = open(out_path, "w")
        self.err = open(out_path + ".stderr", "w")
        cmd = _oha_cmd(tools, port, urls, conns, seconds, out_path, rate)
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=self.err)

    def wait(self, extra=60):
        try:
            self.proc.wait(timeout=extra)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.out.close()
        self.err.close()
        out_path, seconds, rate = self.args
        with open(out_path + ".stderr") as f:
            err = f.read()
        return _oha_figures(out_path, seconds, rate, self.proc.returncode, err)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _oha_figures(out_path, seconds, rate, returncode, stderr):
    with open(out_path) as f:
        text = f.read()
    try:
        j = json.loads(text)
    except json.JSONDecodeError:
        raise RuntimeError(f"oha failed ({returncode}): {stderr[-2000:]}\n{text[-2000:]}")
    codes = j.get("statusCodeDistribution") or {}
    ok = int(codes.get("200", 0))
    pct = j.get("latencyPercentiles") or {}
    s = j.get("summary") or {}
    return {
        "requests_ok": ok,
        "errors": sum(int(v) for v in (j.get("errorDistribution") or {}).values()),
        "other_status": sum(int(v) for k, v in codes.items() if k != "200"),
        "req_per_s": ok / seconds,
        "offered_rate": rate,
        "mb_per_s": (s.get("sizePerSec") or 0) / 1e6,
        # seconds; None when no request completed
        "latency_s": {k: pct.get(k) for k in ("p10", "p25", "p50", "p75", "p90",
                                              "p95", "p99", "p99.9", "p99.99")},
        "mean_s": s.get("average"),
        "max_s": s.get("slowest"),
    }


def wrk_hot(port, url, conns, threads, seconds, out_path, window=3, after=None, perf_pid=None):
    """A closed-loop hot load with wrk (`-t THREADS -c CONNS`) on one URL,
    blocking, as back-to-back runs of `window` seconds (wrk has no
    per-second figures, and a Lua response() callback would copy every
    body into Lua: a 4 MB body costs more there than in the server); each
    run's req/s stands for each second of its window (`per_second`), and
    `windows` holds them. Each run opens its own connections, as a user
    running wrk again does. The alternative to oha for the variants
    (`--hot-load wrk`). `after`, if given, is called after each run and
    what it returns is kept in `after_windows` (nowait's per-worker
    counts)."""
    bins, windows, ok, total, notes = [], [], 0, 0.0, []
    n = max(1, int(seconds) // window)
    perf_dir = os.environ.get("LAB_PERF_DIR")
    for i in range(n):
        perf = None
        if perf_dir and perf_pid:
            # A profile of the server in each window (LAB_PERF_DIR=DIR):
            # where its CPU goes in the first window and in the later ones.
            os.makedirs(perf_dir, exist_ok=True)
            # LAB_PERF_ALL=1: the whole machine (the load generators and the
            # kernel's threads share its CPUs with the server).
            target = ["-a"] if os.environ.get("LAB_PERF_ALL") else ["-p", str(perf_pid)]
            perf = subprocess.Popen(
                ["perf", "record", "-F", "499", "-g", *target, "-o",
                 os.path.join(perf_dir, f"{os.path.basename(out_path)}.{i}.data"), "--",
                 "sleep", str(window)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        r = Wrk(port, None, conns, threads, window, f"{out_path}.{i}", single=url).wait(
            extra=window + 60)
        if perf:
            perf.wait(timeout=window + 30)
        windows.append(r["req_per_s"])
        bins += [round(r["req_per_s"])] * window
        ok += r["requests"]
        total += r["duration_us"] / 1e6
        if after:
            notes.append(after())
    return {"requests_ok": ok, "req_per_s": ok / total if total else 0.0,
            "per_second": bins, "wrk_windows": windows, "after_windows": notes,
            "errors": 0, "other_status": 0,
            "offered_rate": None, "tool": f"wrk -t{threads} -c{conns}, {n} runs of {window} s"}


def wrk_run(port, url_list, conns, threads, seconds, out_path):
    """A blocking wrk run."""
    return Wrk(port, url_list, conns, threads, seconds, out_path).wait(extra=seconds + 60)
